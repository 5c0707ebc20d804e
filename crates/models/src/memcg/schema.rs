//! The cgroup v2 `memory.stat` item set as a hierstat schema.
//!
//! Three classes of item, as in the kernel:
//!
//! * **per-node (lruvec) state**: `anon`, `file`, the LRU lists, slab, the
//!   `workingset_*` counters, ... kept once per NUMA node plus a total
//!   (hierstat per-node items), shown in `memory.numa_stat`;
//! * **memcg state**: `kernel`, `sock`, `percpu`, `vmalloc` (no node split);
//! * **events**: `pgfault`, `pgscan_*`, `pgactivate`, ...
//!
//! Derived entries (`slab`, `pgscan`, `pgsteal`) are sums computed when the
//! file is formatted, as the kernel does. The item set and order are those
//! of a 6.12 kernel built with swap, zswap, THP, hugetlb and NUMA balancing
//! (`memory_stats[]` and `memcg_vm_event_stat[]` of `mm/memcontrol.c`),
//! without the cgroup v1 `pgpgin`/`pgpgout`.
//!
//! Every [`Stat`] has a storage [`Unit`] (pages for page-granular items,
//! bytes for slab, kernel stacks and percpu, counts for events and the
//! `workingset_*` items) and the file shows sizes in bytes and events in
//! counts.

use hierstat::{ItemId, NodeItemId, Schema, Unit};

/// Storage class of a [`Stat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Per-node (lruvec) state item.
    Node,
    /// Per-node (lruvec) monotonic event counter (`workingset_*`,
    /// `pgdemote_*`, `pgpromote_success`).
    NodeEvent,
    /// Memcg-wide state item.
    Memcg,
    /// Monotonic event counter.
    Event,
}

macro_rules! stats {
    ($( $(#[$doc:meta])* $v:ident = ($name:literal, $class:ident, $unit:ident) ),* $(,)?) => {
        /// One `memory.stat` item that is stored (derived entries are not).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Stat {
            $( $(#[$doc])* $v, )*
        }

        impl Stat {
            /// Every stored item, in `memory.stat` order.
            pub const ALL: &'static [Stat] = &[ $( Stat::$v, )* ];

            /// The item's name in `memory.stat`.
            pub fn name(self) -> &'static str {
                match self { $( Stat::$v => $name, )* }
            }

            /// Storage class.
            pub fn class(self) -> Class {
                match self { $( Stat::$v => Class::$class, )* }
            }

            /// Storage unit.
            pub fn unit(self) -> Unit {
                match self { $( Stat::$v => Unit::$unit, )* }
            }
        }
    };
}

stats! {
    /// Anonymous memory (`NR_ANON_MAPPED`), pages.
    Anon = ("anon", Node, Pages),
    /// Page cache including tmpfs (`NR_FILE_PAGES`), pages.
    File = ("file", Node, Pages),
    /// All kernel memory charged (`MEMCG_KMEM`), pages.
    Kernel = ("kernel", Memcg, Pages),
    /// Kernel stacks, bytes.
    KernelStack = ("kernel_stack", Node, Bytes),
    /// Page tables, pages.
    Pagetables = ("pagetables", Node, Pages),
    /// Secondary (KVM/IOMMU) page tables (`NR_SECONDARY_PAGETABLE`), pages.
    SecPagetables = ("sec_pagetables", Node, Pages),
    /// Per-CPU allocations, bytes.
    Percpu = ("percpu", Memcg, Bytes),
    /// Network socket buffers, pages.
    Sock = ("sock", Memcg, Pages),
    /// vmalloc'ed memory, pages.
    Vmalloc = ("vmalloc", Memcg, Pages),
    /// Shared memory (tmpfs, shm), pages.
    Shmem = ("shmem", Node, Pages),
    /// Memory of the compressed zswap pool (`MEMCG_ZSWAP_B`), bytes.
    Zswap = ("zswap", Memcg, Bytes),
    /// Pages stored in zswap, uncompressed size (`MEMCG_ZSWAPPED`), pages.
    Zswapped = ("zswapped", Memcg, Pages),
    /// Mapped page cache, pages.
    FileMapped = ("file_mapped", Node, Pages),
    /// Dirty page cache, pages.
    FileDirty = ("file_dirty", Node, Pages),
    /// Page cache under writeback, pages.
    FileWriteback = ("file_writeback", Node, Pages),
    /// Swap cache, pages.
    Swapcached = ("swapcached", Node, Pages),
    /// Anonymous transparent huge pages, pages.
    AnonThp = ("anon_thp", Node, Pages),
    /// File transparent huge pages, pages.
    FileThp = ("file_thp", Node, Pages),
    /// Shmem transparent huge pages, pages.
    ShmemThp = ("shmem_thp", Node, Pages),
    /// Inactive anonymous LRU list, pages.
    InactiveAnon = ("inactive_anon", Node, Pages),
    /// Active anonymous LRU list, pages.
    ActiveAnon = ("active_anon", Node, Pages),
    /// Inactive file LRU list, pages.
    InactiveFile = ("inactive_file", Node, Pages),
    /// Active file LRU list, pages.
    ActiveFile = ("active_file", Node, Pages),
    /// Unevictable LRU list, pages.
    Unevictable = ("unevictable", Node, Pages),
    /// Reclaimable slab, bytes.
    SlabReclaimable = ("slab_reclaimable", Node, Bytes),
    /// Unreclaimable slab, bytes.
    SlabUnreclaimable = ("slab_unreclaimable", Node, Bytes),
    /// hugetlb pages (`NR_HUGETLB`), pages; shown only with hugetlb
    /// accounting (the `memory_hugetlb_accounting` mount option).
    Hugetlb = ("hugetlb", Node, Pages),
    /// Refaults of evicted anonymous pages.
    WorkingsetRefaultAnon = ("workingset_refault_anon", NodeEvent, Count),
    /// Refaults of evicted file pages.
    WorkingsetRefaultFile = ("workingset_refault_file", NodeEvent, Count),
    /// Refaulted anonymous pages activated at once.
    WorkingsetActivateAnon = ("workingset_activate_anon", NodeEvent, Count),
    /// Refaulted file pages activated at once.
    WorkingsetActivateFile = ("workingset_activate_file", NodeEvent, Count),
    /// Restored anonymous pages (were in the workingset when evicted).
    WorkingsetRestoreAnon = ("workingset_restore_anon", NodeEvent, Count),
    /// Restored file pages.
    WorkingsetRestoreFile = ("workingset_restore_file", NodeEvent, Count),
    /// Shadow nodes reclaimed by the shrinker.
    WorkingsetNodereclaim = ("workingset_nodereclaim", NodeEvent, Count),
    /// Pages demoted to a slower tier by kswapd.
    PgdemoteKswapd = ("pgdemote_kswapd", NodeEvent, Count),
    /// Pages demoted by direct reclaim.
    PgdemoteDirect = ("pgdemote_direct", NodeEvent, Count),
    /// Pages demoted by khugepaged.
    PgdemoteKhugepaged = ("pgdemote_khugepaged", NodeEvent, Count),
    /// Pages promoted to a faster tier by NUMA balancing.
    PgpromoteSuccess = ("pgpromote_success", NodeEvent, Count),
    /// Pages scanned by kswapd.
    PgscanKswapd = ("pgscan_kswapd", Event, Count),
    /// Pages scanned by direct reclaim.
    PgscanDirect = ("pgscan_direct", Event, Count),
    /// Pages scanned by khugepaged.
    PgscanKhugepaged = ("pgscan_khugepaged", Event, Count),
    /// Pages reclaimed by kswapd.
    PgstealKswapd = ("pgsteal_kswapd", Event, Count),
    /// Pages reclaimed by direct reclaim.
    PgstealDirect = ("pgsteal_direct", Event, Count),
    /// Pages reclaimed by khugepaged.
    PgstealKhugepaged = ("pgsteal_khugepaged", Event, Count),
    /// Page faults.
    Pgfault = ("pgfault", Event, Count),
    /// Major page faults.
    Pgmajfault = ("pgmajfault", Event, Count),
    /// Pages scanned on the active list.
    Pgrefill = ("pgrefill", Event, Count),
    /// Pages moved to the active list.
    Pgactivate = ("pgactivate", Event, Count),
    /// Pages moved to the inactive list.
    Pgdeactivate = ("pgdeactivate", Event, Count),
    /// Pages marked lazy-free.
    Pglazyfree = ("pglazyfree", Event, Count),
    /// Lazy-free pages reclaimed.
    Pglazyfreed = ("pglazyfreed", Event, Count),
    /// Pages loaded from zswap.
    Zswpin = ("zswpin", Event, Count),
    /// Pages stored in zswap.
    Zswpout = ("zswpout", Event, Count),
    /// Pages written back from zswap to swap.
    Zswpwb = ("zswpwb", Event, Count),
    /// THPs allocated at fault time.
    ThpFaultAlloc = ("thp_fault_alloc", Event, Count),
    /// THPs allocated by khugepaged collapse.
    ThpCollapseAlloc = ("thp_collapse_alloc", Event, Count),
    /// THPs swapped out in one piece.
    ThpSwpout = ("thp_swpout", Event, Count),
    /// THPs split before swap-out.
    ThpSwpoutFallback = ("thp_swpout_fallback", Event, Count),
}

impl Stat {
    /// The anon/file variant of an LRU-related item: `(anon, file)[file]`.
    pub fn lru(active: bool, file: bool) -> Stat {
        match (active, file) {
            (false, false) => Stat::InactiveAnon,
            (true, false) => Stat::ActiveAnon,
            (false, true) => Stat::InactiveFile,
            (true, true) => Stat::ActiveFile,
        }
    }
}

/// Where a [`Stat`] lives in the hierstat schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// A per-node state item.
    Node(NodeItemId),
    /// A state or event item.
    Plain(ItemId),
}

/// The hierstat schema of `memory.stat` and the handle of every item.
#[derive(Debug, Clone)]
pub struct MemcgSchema {
    schema: Schema,
    slots: Vec<Slot>,
}

impl MemcgSchema {
    /// Builds the schema for `nodes` NUMA nodes (at least 1).
    ///
    /// # Errors
    /// Engine errors for an invalid node count.
    pub fn new(nodes: usize) -> Result<Self, hierstat::Error> {
        let mut b = Schema::builder();
        let slots = Stat::ALL
            .iter()
            .map(|s| match s.class() {
                Class::Node => Slot::Node(b.node_state(s.name(), s.unit())),
                Class::NodeEvent => Slot::Node(b.node_event(s.name(), s.unit())),
                Class::Memcg => Slot::Plain(b.state(s.name(), s.unit())),
                Class::Event => Slot::Plain(b.event(s.name(), s.unit())),
            })
            .collect();
        b.nodes(nodes.max(1));
        Ok(MemcgSchema {
            schema: b.build()?,
            slots,
        })
    }

    /// The hierstat schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Where `stat` is stored.
    pub fn slot(&self, stat: Stat) -> Slot {
        self.slots[stat as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stat_has_a_slot_of_its_class() {
        let s = MemcgSchema::new(2).unwrap();
        for &st in Stat::ALL {
            match (st.class(), s.slot(st)) {
                (Class::Node | Class::NodeEvent, Slot::Node(id)) => {
                    assert_eq!(s.schema().node_info(id).unwrap().name, st.name())
                }
                (Class::Memcg | Class::Event, Slot::Plain(id)) => {
                    assert_eq!(s.schema().info(id).unwrap().name, st.name())
                }
                other => panic!("{st:?}: {other:?}"),
            }
        }
        assert_eq!(s.schema().nodes(), 2);
    }
}
