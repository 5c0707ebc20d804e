//! Workingset refault detection over per-(memcg, node) LRU lists.
//!
//! * [`shadow`]: shadow entries packed as the kernel packs them;
//! * [`lruvec`]: the four LRU lists of a (memcg, node) and its
//!   hierarchical non-resident age;
//! * [`refault`]: the workingset size rule and the refault flush policy;
//! * [`reclaim`]: the [`Reclaim`](crate::memcg::Reclaim)
//!   implementation (shrink active/inactive lists, evict to shadows).
//!
//! Memory is a set of *mappings* (a file's page cache or an anonymous
//! region backed by swap), each owned by a memcg and placed on one node; a
//! mapping is an array of slots holding a resident folio, a shadow entry,
//! a swapped-out page without shadow, or nothing. Slots are grouped in
//! 64-slot nodes like the xarray's, so the shrinker can count the nodes
//! that hold only shadows.
//!
//! [`Lru::access`] is a page access: a hit marks the page accessed (a
//! second access of an inactive file page activates it, aging the
//! non-resident clock); a miss charges the owner memcg (reclaiming through
//! this very LRU if a limit is hit) and inserts the page; a miss on a
//! shadow entry is a *refault*: the workingset test runs with the stats
//! flush chosen by a [`RefaultFlush`] and the page is activated (and
//! restored) if it is recent, with the statistics updates the kernel makes.
//! Every refault also reports the decision exact statistics would give
//! (the list sizes are kept exactly beside the statistics).

mod access;
pub mod lruvec;
mod mapping;
pub mod reclaim;
pub mod refault;
pub mod shadow;
mod shrinker;

pub use lruvec::{LruList, LruSizes, Lruvec};
pub use refault::{
    is_recent, workingset_lists, workingset_size, NoFlush, PolicyFlush, RefaultFlush, RefaultInfo,
};
pub use shadow::{Shadow, ShadowLayout, Unpacked};

use crate::memcg::{MemcgError, MemcgId, MemcgTree};
use thiserror::Error;

/// Slots per shadow node (`XA_CHUNK_SIZE`).
pub const XA_CHUNK_SHIFT: u32 = 6;
const CHUNK: u32 = 1 << XA_CHUNK_SHIFT;

/// Errors of the workingset model.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WorkingsetError {
    /// The memcg model refused (OOM, unknown group ...).
    #[error(transparent)]
    Memcg(#[from] MemcgError),
    /// No such slot.
    #[error("no slot {0}")]
    UnknownSlot(u32),
    /// A mapping on a node the model does not have.
    #[error("node {node} out of range ({nodes} nodes)")]
    NodeOutOfRange {
        /// Requested node.
        node: usize,
        /// Nodes.
        nodes: usize,
    },
}

impl From<hierstat::Error> for WorkingsetError {
    fn from(e: hierstat::Error) -> Self {
        WorkingsetError::Memcg(MemcgError::Engine(e))
    }
}

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// Nothing (never faulted, freed, or a file shadow dropped).
    Empty,
    /// A resident folio on an LRU list.
    Resident,
    /// An evicted page's shadow entry (anon: swapped out).
    Shadow(Shadow),
    /// An anonymous page in swap whose shadow was dropped.
    Swapped,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    state: SlotState,
    mapping: u32,
    stamp: u32,
    active: bool,
    referenced: bool,
    workingset: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Chunk {
    present: u8,
    shadows: u8,
}

/// A range of slots owned by one memcg on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// First slot.
    pub first: u32,
    /// Number of slots.
    pub len: u32,
    /// Owning memcg (charged for its pages).
    pub owner: MemcgId,
    /// NUMA node of its pages.
    pub node: usize,
    /// Page cache (else anonymous, swap-backed).
    pub file: bool,
    /// Pages per folio (1, or 512 for THPs).
    pub nr: u64,
    shadow_only: u64,
}

/// What an access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The page was resident; `activated` if this access promoted it.
    Hit {
        /// Promoted to the active list.
        activated: bool,
    },
    /// The page was not resident and had no shadow.
    Miss,
    /// The page refaulted (it had a shadow entry).
    Refault(RefaultInfo),
}

/// Counters of the model's activity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LruCounters {
    /// Folios evicted to shadows.
    pub evictions: u64,
    /// Refaults (misses on a shadow).
    pub refaults: u64,
    /// Refaults activated.
    pub activations: u64,
    /// Refaults whose decision differed from the exact one.
    pub mismatches: u64,
}

/// The LRU lists, slots and shadows of a machine.
#[derive(Debug)]
pub struct Lru {
    layout: ShadowLayout,
    nodes: usize,
    lruvecs: Vec<Lruvec>,
    slots: Vec<Slot>,
    mappings: Vec<Mapping>,
    chunks: Vec<Chunk>,
    scan_credit: f64,
    counters: LruCounters,
}

impl Lru {
    /// An empty model for `nodes` nodes with the given shadow layout.
    pub fn new(nodes: usize, layout: ShadowLayout) -> Self {
        Lru {
            layout,
            nodes: nodes.max(1),
            lruvecs: Vec::new(),
            slots: Vec::new(),
            mappings: Vec::new(),
            chunks: Vec::new(),
            scan_credit: 0.0,
            counters: LruCounters::default(),
        }
    }

    /// The shadow layout.
    pub fn layout(&self) -> &ShadowLayout {
        &self.layout
    }

    /// Activity counters.
    pub fn counters(&self) -> LruCounters {
        self.counters
    }

    fn lv_index(&self, id: MemcgId, node: usize) -> usize {
        id.0 as usize * self.nodes + node
    }

    pub(crate) fn lv(&mut self, id: MemcgId, node: usize) -> &mut Lruvec {
        let i = self.lv_index(id, node);
        if self.lruvecs.len() <= i {
            self.lruvecs.resize_with(i + 1, Lruvec::default);
        }
        &mut self.lruvecs[i]
    }

    /// The lruvec of (`id`, `node`), if it was ever used.
    pub fn lruvec(&self, id: MemcgId, node: usize) -> Option<&Lruvec> {
        self.lruvecs.get(self.lv_index(id, node))
    }

    /// Non-resident age of (`id`, `node`).
    pub fn nonresident_age(&self, id: MemcgId, node: usize) -> u64 {
        self.lruvec(id, node).map_or(0, |l| l.nonresident_age)
    }

    /// Sets the non-resident age of (`id`, `node`) (tests of counter wrap).
    pub fn set_nonresident_age(&mut self, id: MemcgId, node: usize, age: u64) {
        self.lv(id, node).nonresident_age = age;
    }

    /// Exact hierarchical list sizes of `id`'s subtree on `node`: the
    /// oracle the statistics approximate.
    pub fn exact_sizes(&self, tree: &MemcgTree, id: MemcgId, node: usize) -> LruSizes {
        let mut s = LruSizes::default();
        for g in tree.subtree(id) {
            if let Some(l) = self.lruvec(g, node) {
                s.add(&l.sizes());
            }
        }
        s
    }

    /// `workingset_age_nonresident`: ages (`id`, `node`) and every ancestor.
    pub(crate) fn age_nonresident(&mut self, tree: &MemcgTree, id: MemcgId, node: usize, nr: u64) {
        let chain: Vec<MemcgId> = tree.ancestors(id).collect();
        for a in chain {
            self.lv(a, node).nonresident_age += nr;
        }
    }

    /// Removes memcg `id`: its folios move to its parent's lists, its
    /// mappings to the parent, then the memcg itself is removed.
    ///
    /// # Errors
    /// As [`MemcgTree::remove`].
    pub fn remove_memcg(
        &mut self,
        tree: &mut MemcgTree,
        id: MemcgId,
    ) -> Result<(), WorkingsetError> {
        let parent = tree.parent(id)?.ok_or(MemcgError::RemoveRoot)?;
        if !tree.children(id)?.is_empty() {
            return Err(MemcgError::NotEmpty(id).into());
        }
        for m in self.mappings.iter_mut().filter(|m| m.owner == id) {
            m.owner = parent;
        }
        for node in 0..self.nodes {
            let mut lv = std::mem::take(self.lv(id, node));
            for l in LruList::ALL {
                let slots = &self.slots;
                let moved = lv.drain_live(l, |sl, st| slots[sl as usize].stamp == st);
                for sl in moved {
                    let s = self.slots[sl as usize];
                    let nr = self.mappings[s.mapping as usize].nr;
                    self.lv(parent, node).push_tail(l, sl, s.stamp, nr);
                }
            }
        }
        tree.remove(id)?;
        Ok(())
    }
}
