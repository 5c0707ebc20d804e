//! The group tree: creation, removal, lookup and iteration ([`Groups`]).
//!
//! Structure changes are rare and take the structure lock for writing;
//! flushers hold it for reading (to map group ids to groups), so a
//! structure change waits for running flushes and the other way round.
//! Updates never take it.
//!
//! # Removal loses nothing
//!
//! `remove` unlinks the group, then force-flushes it: its per-shard deltas
//! move into the parent's `pending`, where the parent's next flush absorbs
//! them. The group's state stays in the group table as a *zombie* while
//! anyone still holds a handle: late updates through such a handle queue
//! the zombie like any group, and flushes of its ancestors carry them up. A
//! zombie's id and rows are recycled only once no handle is left and every
//! shard shows it idle.

use crate::config::Params;
use crate::dirty::IdMap;
use crate::error::Error;
use crate::header::MAX_GROUPS;
use crate::rows::RowStore;
use crate::state::{GroupState, TreeTag};
use crate::stats::Core;
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
    tag: TreeTag,
    root: Arc<GroupState>,
    /// Every shard's arena of rows (see `rows.rs`).
    store: Arc<RowStore>,
    shards: usize,
    /// Shards `0..ownable` may be written by their owners' plain path.
    ownable: usize,
    structure: RwLock<Structure>,
    /// Removed groups whose rows are not recycled yet: their residues count
    /// in the global error bound like live groups'. ORDERING: Relaxed; a
    /// size for bounds, updated under the structure lock.
    zombie_rows: AtomicU64,
}

/// Group table and names, behind the structure lock.
#[derive(Debug)]
pub(crate) struct Structure {
    /// State of each group id (`None` for free ids).
    groups: Vec<Option<Arc<GroupState>>>,
    /// Live children of each group id, by name.
    children: Vec<BTreeMap<String, u32>>,
    /// Removed groups whose ids are not yet recycled.
    zombies: Vec<Arc<GroupState>>,
    /// Recycled ids, taken before fresh ones.
    free_ids: Vec<u32>,
    /// Number of live groups.
    live: usize,
    /// Per parent id, the aggregates of its recycled (reaped) children, so
    /// that `verify` can still check conservation at the parent.
    reaped: IdMap<Vec<i64>>,
}

impl Structure {
    /// State of a group id that is in use.
    #[inline]
    pub(crate) fn group(&self, id: u32) -> &Arc<GroupState> {
        self.groups[id as usize]
            .as_ref()
            .expect("ids on update lists and trees are in use")
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
    fn alloc_id(&mut self) -> Option<u32> {
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
    /// shards may be written by their owners.
    pub(crate) fn new(params: &Params, ownable: usize) -> Self {
        let slots = params.schema.slots();
        let store = Arc::new(RowStore::new(params.shards, slots, params.batch));
        let tag = TreeTag::new();
        let root = Arc::new(GroupState::new(
            0,
            RowTable::new(params.shards, ownable, store.clone()),
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
    fn write(&self) -> Ranked<RwLockWriteGuard<'_, Structure>> {
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

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && name != "." && name != ".."
}

impl Core {
    /// Creates a group named `name` under `parent`.
    pub(crate) fn create(
        &self,
        parent: &Arc<GroupState>,
        name: &str,
    ) -> Result<Arc<GroupState>, Error> {
        if !valid_name(name) {
            return Err(Error::InvalidName(name.to_string()));
        }
        let slots = self.params.schema.slots();
        let mut st = self.groups.write();
        // ORDERING: Relaxed; `removed` is written under the structure lock.
        if parent.removed.load(Ordering::Relaxed) {
            return Err(Error::GroupRemoved(parent.path.clone()));
        }
        let pid = parent.hot.id as usize;
        if st.children[pid].contains_key(name) {
            return Err(Error::DuplicateName {
                parent: parent.path.clone(),
                name: name.to_string(),
            });
        }
        let id = st.alloc_id().ok_or(Error::TooManyGroups(MAX_GROUPS))?;
        parent.pending_for_children(slots);
        let rows = RowTable::new(
            self.groups.shards,
            self.groups.ownable,
            self.groups.store.clone(),
        );
        let g = Arc::new(GroupState::new(
            id,
            rows,
            Some(parent.clone()),
            slots,
            name.to_string(),
            self.groups.tag.clone(),
        ));
        let i = id as usize;
        st.groups[i] = Some(g.clone());
        st.children[i].clear();
        st.children[pid].insert(name.to_string(), id);
        st.live += 1;
        let mut a = g.hot.parent.as_deref();
        while let Some(n) = a {
            // ORDERING: Relaxed; a size used for error bounds only.
            n.subtree_size.fetch_add(1, Ordering::Relaxed);
            a = n.hot.parent.as_deref();
        }
        Ok(g)
    }

    /// Removes a group (see [`HierStats::remove`](crate::HierStats::remove)).
    pub(crate) fn remove(&self, g: Arc<GroupState>) -> Result<(), Error> {
        {
            let mut st = self.groups.write();
            let Some(parent) = g.hot.parent.as_ref() else {
                return Err(Error::RemoveRoot);
            };
            // ORDERING: Relaxed; written under the structure lock.
            if g.removed.load(Ordering::Relaxed) {
                return Err(Error::GroupRemoved(g.path.clone()));
            }
            if !st.children[g.hot.id as usize].is_empty() {
                return Err(Error::NotEmpty(g.path.clone()));
            }
            g.removed.store(true, Ordering::Relaxed);
            st.children[parent.hot.id as usize].remove(g.name());
            st.live -= 1;
            st.zombies.push(g.clone());
            // ORDERING: Relaxed; a size for bounds (see `zombie_rows`).
            self.groups.zombie_rows.fetch_add(1, Ordering::Relaxed);
            let mut a = g.hot.parent.as_deref();
            while let Some(p) = a {
                p.subtree_size.fetch_sub(1, Ordering::Relaxed);
                a = p.hot.parent.as_deref();
            }
        }
        // Push the group's deltas into its parent (blocking: a removal never
        // skips its flush, whatever the concurrency policy).
        self.flush_forced_blocking(&g, &mut ());
        drop(g);
        self.reap();
        Ok(())
    }

    /// Recycles the rows of removed groups that no handle references any
    /// more and that no shard has queued or unflushed; returns how many.
    ///
    /// A removed child holds its removed parent (through its parent link),
    /// so recycling the child can make the parent recyclable: the scan
    /// repeats until a pass recycles nothing, and a reap leaves no zombie
    /// that it could have recycled.
    pub(crate) fn reap(&self) -> usize {
        let mut st = self.groups.write();
        let mut reaped = 0;
        loop {
            let before = reaped;
            reaped += self.reap_pass(&mut st);
            if reaped == before {
                break;
            }
        }
        // ORDERING: Relaxed; see `zombie_rows`.
        self.groups
            .zombie_rows
            .store(st.zombies.len() as u64, Ordering::Relaxed);
        reaped
    }

    /// [`reap`](Self::reap) if there is anything to reap.
    pub(crate) fn reap_if_any(&self) {
        if self.groups.zombies() > 0 {
            self.reap();
        }
    }

    fn reap_pass(&self, st: &mut Structure) -> usize {
        let mut reaped = 0;
        let mut i = 0;
        while i < st.zombies.len() {
            let z = &st.zombies[i];
            // References: the zombie list and the group table.
            let idle = Arc::strong_count(z) == 2 && self.is_idle(z);
            if idle {
                let z = st.zombies.swap_remove(i);
                let id = z.hot.id;
                let slots = self.params.schema.slots();
                if let Some(p) = z.hot.parent.as_ref() {
                    let acc = st.reaped.entry(p.hot.id).or_insert_with(|| vec![0; slots]);
                    for (a, v) in acc.iter_mut().zip(z.agg.iter()) {
                        // ORDERING: Relaxed; the zombie is idle.
                        *a = a.wrapping_add(v.load(Ordering::Relaxed));
                    }
                }
                st.reaped.remove(&id);
                z.hot.rows.recycle();
                self.saturation.forget(id);
                st.groups[id as usize] = None;
                st.free_ids.push(id);
                reaped += 1;
            } else {
                i += 1;
            }
        }
        reaped
    }

    /// Whether no shard has the group queued, on its dirty tree, or with
    /// an unflushed counter. Call with the structure lock held for writing.
    fn is_idle(&self, g: &GroupState) -> bool {
        // With no handle left no updater can write the rows, and flushers
        // are excluded by the structure lock.
        let slots = self.params.schema.slots();
        g.hot.rows.rows().all(|(_, row)| {
            !row.header().queued_quiescent() && (0..slots).all(|k| row.unflushed(k) == 0)
        }) && (0..self.params.shards).all(|s| !self.dirty.tree(s).contains(g.hot.id))
            && g.pending()
                .is_none_or(|ps| ps.iter().all(|p| p.load(Ordering::Relaxed) == 0))
    }

    /// The group at `path` (see [`HierStats::lookup`](crate::HierStats::lookup)).
    pub(crate) fn lookup(&self, path: &str) -> Result<Arc<GroupState>, Error> {
        let Some(rest) = path.strip_prefix('/') else {
            return Err(Error::InvalidName(path.to_string()));
        };
        let comps: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('/').collect()
        };
        if !comps.iter().all(|c| valid_name(c)) {
            return Err(Error::InvalidName(path.to_string()));
        }
        let st = self.groups.read();
        let mut id = self.groups.root.hot.id;
        for comp in comps {
            id = *st.children[id as usize]
                .get(comp)
                .ok_or_else(|| Error::UnknownGroup(path.to_string()))?;
        }
        Ok(st.group(id).clone())
    }

    /// The live children of `g`, by name (none for a removed group).
    pub(crate) fn children(&self, g: &GroupState) -> Vec<Arc<GroupState>> {
        let st = self.groups.read();
        // ORDERING: Relaxed; written under the structure lock we hold.
        if g.removed.load(Ordering::Relaxed) {
            return Vec::new();
        }
        st.children[g.hot.id as usize]
            .values()
            .map(|&c| st.group(c).clone())
            .collect()
    }

    /// Every live group, parents before children (pre-order, children by
    /// name).
    pub(crate) fn all_groups(&self) -> Vec<Arc<GroupState>> {
        let st = self.groups.read();
        let mut out = Vec::with_capacity(st.live + 1);
        let mut stack = vec![self.groups.root.hot.id];
        while let Some(id) = stack.pop() {
            out.push(st.group(id).clone());
            stack.extend(st.children[id as usize].values().rev());
        }
        out
    }

    /// Bytes of per-shard counter memory allocated: rows, all sections.
    pub(crate) fn counter_bytes(&self) -> usize {
        self.groups.store.bytes()
    }

    /// Total bytes the tree holds (see
    /// [`HierStats::memory_bytes`](crate::HierStats::memory_bytes)).
    pub(crate) fn memory_bytes(&self) -> usize {
        let st = self.groups.read();
        let slots = self.params.schema.slots();
        let per_group = std::mem::size_of::<GroupState>() + 2 * slots * 8;
        let groups: usize = st
            .all()
            .map(|g| {
                per_group
                    + g.pending().map_or(0, |p| p.len() * 8)
                    + g.path.len()
                    + g.hot.rows.bytes()
            })
            .sum();
        let tables = st.groups.len() * (std::mem::size_of::<Option<Arc<GroupState>>>() + 48)
            + st.children.iter().map(|c| c.len() * 48).sum::<usize>();
        self.groups.store.bytes() + groups + tables
    }
}
