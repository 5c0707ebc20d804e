//! The group tree: creation, removal, lookup and iteration (the groups
//! themselves are in `tree/groups.rs`).
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

pub(crate) mod groups;

use crate::engine::Core;
use crate::error::Error;
use crate::header::MAX_GROUPS;
use crate::state::GroupState;
use crate::sync::{Arc, Ordering};
use crate::table::RowTable;
use groups::Structure;

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
            self.groups.dense,
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
