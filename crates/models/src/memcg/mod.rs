//! Memory cgroups on top of hierstat.
//!
//! * [`schema`]: the cgroup v2 `memory.stat` items (a 6.12 kernel's) as a
//!   hierstat schema with per-node (lruvec) items;
//! * [`counter`]: a page counter per group (`memory.current`, `max`,
//!   `high`, `low`, `min`, failcnt, peak);
//! * [`protection`]: effective `memory.min`/`memory.low` protection;
//! * [`stock`]: the per-CPU charge stock of BATCH pages;
//! * [`charge`]: hierarchical charging: stock, counters of every ancestor,
//!   reclaim from the subtree over its limit, OOM;
//! * [`high`]: the `memory.high` / `memory.swap.high` debt a task pays on
//!   its way back to user space (reclaim, throttling);
//! * [`reclaim`]: the reclaim driver (protection, proportional pressure,
//!   the slab shrinker);
//! * `limits` (the setters on [`MemcgTree`]): limits and protections, swap
//!   accounting, event counting, and the writes that reclaim
//!   (`memory.max`, `memory.high`, `memory.reclaim`);
//! * [`kmem`]: byte-granular kernel memory (slab, percpu) through the
//!   per-CPU object stock, and reclaimable object caches with a shrinker;
//! * [`events`]: `memory.events` (low, high, max, oom, oom_kill,
//!   oom_group_kill) and `memory.swap.events`;
//! * [`peak`]: `memory.peak` / `memory.swap.peak` and their
//!   per-descriptor resets;
//! * [`stat_file`]: `memory.stat` and `memory.numa_stat` text in the
//!   kernel's format.
//!
//! Who holds the pages is not this module's business: a charge that hits a
//! limit asks a [`Reclaim`] implementation (the LRU lists of
//! [`crate::workingset`], or [`NoReclaim`]) to free pages of the groups in
//! the subtree over its limit. Processes, the OOM killer's victims and the
//! cgroup file interface are in [`crate::machine`].
//!
//! ```
//! use models::memcg::{Charge, MemcgConfig, MemcgTree, NoReclaim};
//!
//! let mut t = MemcgTree::new(MemcgConfig::new(4, 1))?;
//! let slice = t.create(t.root(), "system.slice")?;
//! let svc = t.create(slice, "nginx.service")?;
//! t.charge(0, svc, 0, Charge::Anon, 256, &mut NoReclaim)?;
//! let stat = t.memory_stat(slice)?;
//! assert!(stat.starts_with("anon 1048576\n"));
//! assert_eq!(t.memory_current(svc)?, 256 * 4096);
//! # Ok::<(), models::memcg::MemcgError>(())
//! ```

pub mod charge;
pub mod counter;
mod error;
pub mod events;
pub mod high;
pub mod kmem;
mod limits;
pub mod peak;
pub mod protection;
pub mod reclaim;
pub mod schema;
pub mod stat_file;
pub mod stock;
mod tree;

pub use charge::{Charge, ChargeContext};
pub use counter::{PageCounter, UNLIMITED};
pub use error::MemcgError;
pub use events::{EventCounts, MemoryEvent, SwapEvent, SwapEventCounts};
pub use kmem::{CacheId, ObjKind, ObjStocks};
pub use peak::{PeakFd, PeakResource};
pub use reclaim::{NoReclaim, Reclaim, ScanControl};
pub use schema::{Class, MemcgSchema, Slot, Stat};
pub use stock::Stocks;

use hierstat::sim::Simulator as _;
use hierstat::{
    sim::{ManualClock, Shard, WorkCounters, WorkSink},
    Config, Group, HierStats, Policy, Preset,
};
use std::collections::BTreeSet;
use std::fmt;

/// A memory cgroup's 16-bit id (`mem_cgroup_id`), as stored in shadow
/// entries. Ids of removed groups are recycled, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemcgId(pub u16);

impl fmt::Display for MemcgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Configuration of a [`MemcgTree`].
#[derive(Debug, Clone)]
pub struct MemcgConfig {
    /// CPUs: engine shards and charge stocks.
    pub cpus: usize,
    /// NUMA nodes of the per-node items.
    pub nodes: usize,
    /// The stats flush policy.
    pub preset: Preset,
    /// A custom policy replacing the preset's knobs (experiments).
    pub policy: Option<Policy>,
    /// Charge batch in pages (`MEMCG_CHARGE_BATCH`); `None`: the preset's
    /// batch (32 before 6.1, 64 after).
    pub batch: Option<u64>,
    /// Swap space in pages (0: no swap).
    pub swap_pages: u64,
    /// Clock of the engine (virtual time); `None`: the host's monotonic clock.
    pub clock: Option<ManualClock>,
    /// The `memory_recursiveprot` mount option: protection a parent does
    /// not hand out explicitly is shared among its children in proportion
    /// to their unprotected usage.
    pub recursive_protection: bool,
    /// The `memory_hugetlb_accounting` mount option: `memory.stat` shows
    /// `hugetlb`.
    pub hugetlb_accounting: bool,
    /// Charge a new group's statistics memory to its parent, as the kernel
    /// charges a new memcg's per-CPU and per-node structures to the parent
    /// (`percpu` and `slab_unreclaimable` of the parent): see
    /// [`MemcgTree::group_percpu_bytes`]. Off by default, so that a bare
    /// tree accounts exactly what its caller charges; the kernel-like
    /// [`crate::machine::Machine`] turns it on.
    pub charge_group_memory: bool,
}

impl MemcgConfig {
    /// `cpus` CPUs, `nodes` nodes, the `linux-6.8` preset, no swap, no
    /// mount options, group memory not charged.
    pub fn new(cpus: usize, nodes: usize) -> Self {
        MemcgConfig {
            cpus,
            nodes,
            preset: Preset::Linux6_8,
            policy: None,
            batch: None,
            swap_pages: 0,
            clock: None,
            recursive_protection: false,
            hugetlb_accounting: false,
            charge_group_memory: false,
        }
    }

    /// Sets the flush policy.
    pub fn preset(mut self, preset: Preset) -> Self {
        self.preset = preset;
        self
    }

    /// Replaces the preset's knobs by a custom policy.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Sets the swap space in pages.
    pub fn swap_pages(mut self, pages: u64) -> Self {
        self.swap_pages = pages;
        self
    }

    /// Uses a virtual clock.
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Sets the charge batch.
    pub fn batch(mut self, pages: u64) -> Self {
        self.batch = Some(pages);
        self
    }

    /// Sets the `memory_recursiveprot` mount option.
    pub fn recursive_protection(mut self, on: bool) -> Self {
        self.recursive_protection = on;
        self
    }

    /// Sets the `memory_hugetlb_accounting` mount option.
    pub fn hugetlb_accounting(mut self, on: bool) -> Self {
        self.hugetlb_accounting = on;
        self
    }

    /// Whether a new group's statistics memory is charged to its parent.
    pub fn charge_group_memory(mut self, on: bool) -> Self {
        self.charge_group_memory = on;
        self
    }
}

/// One group.
#[derive(Debug)]
pub(crate) struct MemcgNode {
    pub(crate) group: Group,
    pub(crate) parent: Option<MemcgId>,
    pub(crate) children: Vec<MemcgId>,
    pub(crate) memory: PageCounter,
    pub(crate) swap: PageCounter,
    pub(crate) events: EventCounts,
    pub(crate) events_local: EventCounts,
    pub(crate) swap_events: SwapEventCounts,
    /// `memory.oom.group`.
    pub(crate) oom_group: bool,
    /// Sub-page kernel-memory bytes charged but unused, left by a drained
    /// object stock (`obj_cgroup::nr_charged_bytes`).
    pub(crate) nr_charged_bytes: u64,
    /// Bytes charged to the parent for this group's own structures.
    pub(crate) own_bytes: GroupBytes,
}

/// What a group's creation charged to its parent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GroupBytes {
    pub(crate) percpu: u64,
    pub(crate) slab: u64,
}

impl MemcgNode {
    fn new(group: Group, parent: Option<MemcgId>) -> Self {
        MemcgNode {
            group,
            parent,
            children: Vec::new(),
            memory: PageCounter::new(),
            swap: PageCounter::new(),
            events: EventCounts::default(),
            events_local: EventCounts::default(),
            swap_events: SwapEventCounts::default(),
            oom_group: false,
            nr_charged_bytes: 0,
            own_bytes: GroupBytes::default(),
        }
    }
}

/// A tree of memory cgroups: statistics in a hierstat tree, page counters,
/// charge stocks, swap accounting, kernel memory and `memory.events`.
#[derive(Debug)]
pub struct MemcgTree {
    stats: HierStats,
    schema: MemcgSchema,
    /// Indexed by id; `None` for free ids (index 0 is never used).
    nodes: Vec<Option<MemcgNode>>,
    free_ids: BTreeSet<u16>,
    pub(crate) stocks: Stocks,
    pub(crate) obj_stocks: ObjStocks,
    pub(crate) caches: kmem::Caches,
    pub(crate) peaks: peak::PeakFds,
    swap_total: u64,
    swap_used: u64,
    cpus: usize,
    nr_nodes: usize,
    recursive_protection: bool,
    hugetlb_accounting: bool,
    charge_group_memory: bool,
    pub(crate) work: WorkCounters,
}

/// The root's id (id 0 means "no memcg" in shadow entries).
pub const ROOT_ID: MemcgId = MemcgId(1);

impl MemcgTree {
    /// A tree holding only the root.
    ///
    /// # Errors
    /// Engine errors for a bad CPU or node count.
    pub fn new(config: MemcgConfig) -> Result<Self, MemcgError> {
        let schema = MemcgSchema::new(config.nodes)?;
        let policy = config.policy.unwrap_or_else(|| config.preset.policy());
        let mut hc = Config::with_policy(policy).shards(config.cpus);
        if let Some(c) = config.clock {
            hc = hc.clock(c);
        }
        let stats = HierStats::new(schema.schema().clone(), hc)?;
        let batch = config.batch.unwrap_or(u64::from(policy.batch));
        let root = MemcgNode::new(stats.root(), None);
        Ok(MemcgTree {
            stats,
            schema,
            nodes: vec![None, Some(root)],
            free_ids: BTreeSet::new(),
            stocks: Stocks::new(config.cpus, batch.max(1)),
            obj_stocks: ObjStocks::new(config.cpus),
            caches: kmem::Caches::default(),
            peaks: peak::PeakFds::default(),
            swap_total: config.swap_pages,
            swap_used: 0,
            cpus: config.cpus,
            nr_nodes: config.nodes.max(1),
            recursive_protection: config.recursive_protection,
            hugetlb_accounting: config.hugetlb_accounting,
            charge_group_memory: config.charge_group_memory,
            work: WorkCounters::default(),
        })
    }

    /// Whether the `memory_recursiveprot` mount option is on.
    pub fn recursive_protection(&self) -> bool {
        self.recursive_protection
    }

    /// Whether the `memory_hugetlb_accounting` mount option is on.
    pub fn hugetlb_accounting(&self) -> bool {
        self.hugetlb_accounting
    }

    /// Whether a new group's statistics memory is charged to its parent.
    pub fn charges_group_memory(&self) -> bool {
        self.charge_group_memory
    }

    /// Swap space in pages.
    pub fn swap_total(&self) -> u64 {
        self.swap_total
    }

    /// Swap pages in use.
    pub fn swap_used(&self) -> u64 {
        self.swap_used
    }

    /// The root group.
    pub fn root(&self) -> MemcgId {
        ROOT_ID
    }

    /// Number of CPUs.
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// Number of NUMA nodes.
    pub fn nr_nodes(&self) -> usize {
        self.nr_nodes
    }

    /// The charge batch in pages.
    pub fn batch(&self) -> u64 {
        self.stocks.batch()
    }

    /// The statistics engine.
    pub fn stats(&self) -> &HierStats {
        &self.stats
    }

    /// The schema.
    pub fn schema(&self) -> &MemcgSchema {
        &self.schema
    }

    pub(crate) fn node(&self, id: MemcgId) -> Result<&MemcgNode, MemcgError> {
        self.nodes
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(MemcgError::UnknownMemcg(id))
    }

    pub(crate) fn node_mut(&mut self, id: MemcgId) -> Result<&mut MemcgNode, MemcgError> {
        self.nodes
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(MemcgError::UnknownMemcg(id))
    }

    pub(crate) fn check_cpu(&self, cpu: usize) -> Result<(), MemcgError> {
        if cpu < self.cpus {
            Ok(())
        } else {
            Err(MemcgError::CpuOutOfRange {
                cpu,
                cpus: self.cpus,
            })
        }
    }

    /// Records a statistics update of `delta` (in the item's unit) on
    /// `cpu`'s shard; `node` is used by per-node items.
    ///
    /// # Errors
    /// Unknown group, CPU or node.
    pub fn mod_stat(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        stat: Stat,
        delta: i64,
    ) -> Result<(), MemcgError> {
        if delta == 0 {
            return Ok(());
        }
        self.check_cpu(cpu)?;
        let n = self.nodes.get(id.0 as usize).and_then(Option::as_ref);
        let g = &n.ok_or(MemcgError::UnknownMemcg(id))?.group;
        match self.schema.slot(stat) {
            Slot::Node(item) => {
                self.stats
                    .add_node_with(Shard(cpu), g, item, node, delta, &mut self.work)?
            }
            Slot::Plain(item) => self
                .stats
                .add_with(Shard(cpu), g, item, delta, &mut self.work)?,
        }
        Ok(())
    }

    /// Engine work done by statistics updates since the last call (for the
    /// simulator's cost model); resets it.
    pub fn take_work(&mut self) -> WorkCounters {
        std::mem::take(&mut self.work)
    }

    /// Adds engine work done on behalf of the tree (flushes made by callers).
    pub fn sink(&mut self) -> &mut impl WorkSink {
        &mut self.work
    }
}
