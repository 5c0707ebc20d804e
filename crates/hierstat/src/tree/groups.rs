//! A tree's groups ([`Groups`]): its identity, its root, its rows' store,
//! and the group table behind the structure lock ([`Structure`]). What is
//! done with them (creation, removal, reaping, lookup) is in `tree.rs`.

use crate::config::Params;
use crate::dirty::IdMap;
use crate::header::MAX_GROUPS;
use crate::rows::RowStore;
use crate::state::{GroupState, TreeTag};
use crate::sync::{
    Arc, AtomicU64, Ordering, Rank, Ranked, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use crate::table::RowTable;
use std::collections::BTreeMap;

/// The tree's groups: its identity, its root, its rows' store, the
/// structure lock and the size the global bound needs.
#[derive(Debug)]
pub(crate) struct Groups {
    /// This tree's identity (see `TreeTag`).
    pub(super) tag: TreeTag,
    pub(super) root: Arc<GroupState>,
    /// Every shard's arena of rows (see `rows.rs`).
    pub(super) store: Arc<RowStore>,
    pub(super) shards: usize,
    /// Shards `0..ownable` may be written by their owners' plain path.
    pub(super) ownable: usize,
    /// Per-CPU mode: the row tables are dense over every shard (see
    /// `RowTable::new`).
    pub(super) dense: bool,
    pub(super) structure: RwLock<Structure>,
    /// Removed groups whose rows are not recycled yet: their residues count
    /// in the global error bound like live groups'. ORDERING: Relaxed; a
    /// size for bounds, updated under the structure lock.
    pub(super) zombie_rows: AtomicU64,
}

/// Group table and names, behind the structure lock.
#[derive(Debug)]
pub(crate) struct Structure {
    /// State of each group id (`None` for free ids).
    pub(super) groups: Vec<Option<Arc<GroupState>>>,
    /// Live children of each group id, by name.
    pub(super) children: Vec<BTreeMap<String, u32>>,
    /// Removed groups whose ids are not yet recycled.
    pub(super) zombies: Vec<Arc<GroupState>>,
    /// Recycled ids, taken before fresh ones.
    pub(super) free_ids: Vec<u32>,
    /// Number of live groups.
    pub(super) live: usize,
    /// Per parent id, the aggregates of its recycled (reaped) children, so
    /// that `verify` can still check conservation at the parent.
    pub(super) reaped: IdMap<Vec<i64>>,
}

impl Structure {
    /// State of a group id that is in use.
    #[inline]
    pub(crate) fn group(&self, id: u32) -> &Arc<GroupState> {
        self.groups[id as usize]
            .as_ref()
            .expect("ids on update lists and trees are in use")
    }

    /// Ids of the live children of a group id (by name).
    pub(crate) fn child_ids(&self, id: u32) -> impl Iterator<Item = u32> + '_ {
        self.children[id as usize].values().copied()
    }

    /// Parent id of a group id.
    pub(crate) fn parent_id(&self, id: u32) -> u32 {
        self.group(id).parent_id()
    }

    /// Every group in use (live or zombie).
    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<GroupState>> {
        self.groups.iter().flatten()
    }

    /// Size of the group table (ids in use and free).
    pub(crate) fn ids(&self) -> usize {
        self.groups.len()
    }

    /// The aggregates of each parent id's reaped children.
    pub(crate) fn reaped(&self) -> &IdMap<Vec<i64>> {
        &self.reaped
    }

    /// A free group id: a recycled one if any, else a fresh one.
    pub(super) fn alloc_id(&mut self) -> Option<u32> {
        match self.free_ids.pop() {
            Some(id) => Some(id),
            None if self.groups.len() < MAX_GROUPS => {
                self.groups.push(None);
                self.children.push(BTreeMap::new());
                Some((self.groups.len() - 1) as u32)
            }
            None => None,
        }
    }
}

impl Groups {
    /// A tree holding only its root, for `params`, whose first `ownable`
    /// shards may be written by their owners; `dense`: per-CPU rows (see
    /// `RowTable::new`).
    pub(crate) fn new(params: &Params, ownable: usize, dense: bool) -> Self {
        let slots = params.schema.slots();
        let store = Arc::new(RowStore::new(params.shards, slots, params.batch));
        let tag = TreeTag::new();
        let root = Arc::new(GroupState::new(
            0,
            RowTable::new(params.shards, ownable, dense, store.clone()),
            None,
            slots,
            String::new(),
            tag.clone(),
        ));
        let structure = Structure {
            groups: vec![Some(root.clone())],
            children: vec![BTreeMap::new()],
            zombies: Vec::new(),
            free_ids: Vec::new(),
            live: 0,
            reaped: IdMap::default(),
        };
        Groups {
            tag,
            root,
            store,
            shards: params.shards,
            ownable,
            dense,
            structure: RwLock::new(structure),
            zombie_rows: AtomicU64::new(0),
        }
    }

    /// The tree's identity, as the handles copy it.
    #[inline(always)]
    pub(crate) fn tag_id(&self) -> usize {
        self.tag.id()
    }

    /// The root's state.
    #[inline]
    pub(crate) fn root(&self) -> &Arc<GroupState> {
        &self.root
    }

    /// The structure lock for reading (rank `Structure`, see `sync::Rank`).
    pub(crate) fn read(&self) -> Ranked<RwLockReadGuard<'_, Structure>> {
        Ranked::take(Rank::Structure, || match self.structure.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        })
    }

    /// The structure lock for writing (rank `Structure`).
    pub(super) fn write(&self) -> Ranked<RwLockWriteGuard<'_, Structure>> {
        Ranked::take(Rank::Structure, || match self.structure.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        })
    }

    /// Number of live groups, the root excluded.
    pub(crate) fn live(&self) -> usize {
        self.read().live
    }

    /// Removed groups whose rows are not recycled yet.
    pub(crate) fn zombies(&self) -> usize {
        self.read().zombies.len()
    }

    /// Groups whose rows exist, removed ones included, for the global
    /// bound. ORDERING: Relaxed; sizes for bounds.
    pub(crate) fn rows_for_bound(&self) -> u64 {
        self.root.subtree_size.load(Ordering::Relaxed) + self.zombie_rows.load(Ordering::Relaxed)
    }
}
