//! The group tree: creation, removal, lookup and iteration.
//!
//! Structure changes are rare and take the structure lock for writing;
//! flushers hold it for reading (to map rows to nodes), so a structure change
//! waits for running flushes and the other way round. Updates never take it.
//!
//! # Removal loses nothing
//!
//! `remove` unlinks the group, then force-flushes it: its per-shard deltas
//! move into the parent's `pending`, where the parent's next flush absorbs
//! them. The node itself stays in the row table as a *zombie* while anyone
//! still holds a handle: late updates through such a handle queue the zombie
//! like any group, and flushes of its ancestors carry them up. A zombie's row
//! is recycled only once no handle is left and every shard shows it idle.

use crate::error::Error;
use crate::group::Group;
use crate::node::Node;
use crate::slab::{Slab, QUEUED};
use crate::stats::HierStats;
use crate::sync::{Arc, Ordering};
use std::collections::BTreeMap;

/// Row table and names, behind the structure lock.
#[derive(Debug)]
pub(crate) struct Structure {
    /// Node of each row (`None` for free rows).
    pub(crate) nodes: Vec<Option<Arc<Node>>>,
    /// Live children of each row, by name.
    pub(crate) children: Vec<BTreeMap<String, u32>>,
    /// Removed nodes whose rows are not yet recycled.
    pub(crate) zombies: Vec<Arc<Node>>,
    /// Row allocator.
    pub(crate) slab: Slab,
    /// Number of live groups.
    pub(crate) live: usize,
    /// Per parent row, the aggregates of its recycled (reaped) children, so
    /// that `verify` can still check conservation at the parent.
    pub(crate) reaped: crate::updated::RowMap<Vec<i64>>,
}

impl Structure {
    /// Node of a row that is in use.
    #[inline]
    pub(crate) fn node(&self, row: u32) -> &Arc<Node> {
        self.nodes[row as usize]
            .as_ref()
            .expect("rows on update lists and trees are in use")
    }

    /// Parent row of a row.
    pub(crate) fn parent_row(&self, row: u32) -> u32 {
        self.node(row).parent_row()
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && name != "." && name != ".."
}

impl HierStats {
    /// The root group.
    pub fn root(&self) -> Group {
        Group::new(self.core.root.clone())
    }

    /// Creates a group named `name` under `parent`.
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::DuplicateName`],
    /// [`Error::GroupRemoved`] if the parent was removed,
    /// [`Error::TooManyGroups`], [`Error::ForeignGroup`].
    pub fn create(&self, parent: &Group, name: &str) -> Result<Group, Error> {
        let core = &self.core;
        core.own(parent)?;
        if !valid_name(name) {
            return Err(Error::InvalidName(name.to_string()));
        }
        let mut st = core.write_structure();
        // ORDERING: Relaxed; `removed` is written under the structure lock.
        if parent.node.removed.load(Ordering::Relaxed) {
            return Err(Error::GroupRemoved(parent.path().to_string()));
        }
        let prow = parent.node.hot.row as usize;
        if st.children[prow].contains_key(name) {
            return Err(Error::DuplicateName {
                parent: parent.path().to_string(),
                name: name.to_string(),
            });
        }
        let (row, rows) = st
            .slab
            .alloc()
            .ok_or(Error::TooManyGroups(crate::slab::MAX_ROWS))?;
        parent.node.pending_for_children(core.schema.slots());
        let node = Arc::new(Node::new(
            row,
            rows,
            Some(parent.node.clone()),
            core.schema.slots(),
            name.to_string(),
            core.tree.clone(),
        ));
        let r = row as usize;
        if st.nodes.len() <= r {
            st.nodes.resize_with(r + 1, || None);
            st.children.resize_with(r + 1, BTreeMap::new);
        }
        st.nodes[r] = Some(node.clone());
        st.children[r].clear();
        st.children[prow].insert(name.to_string(), row);
        st.live += 1;
        let mut a = node.hot.parent.as_deref();
        while let Some(n) = a {
            // ORDERING: Relaxed; a size used for error bounds only.
            n.subtree_size.fetch_add(1, Ordering::Relaxed);
            a = n.hot.parent.as_deref();
        }
        Ok(Group::new(node))
    }

    /// Removes a group. Its unflushed deltas are flushed into the parent
    /// first, so ancestors lose nothing and totals never go backwards.
    ///
    /// # Errors
    /// [`Error::RemoveRoot`], [`Error::NotEmpty`], [`Error::GroupRemoved`],
    /// [`Error::ForeignGroup`].
    pub fn remove(&self, group: Group) -> Result<(), Error> {
        let core = &self.core;
        core.own(&group)?;
        {
            let mut st = core.write_structure();
            let n = &group.node;
            let Some(parent) = n.hot.parent.as_ref() else {
                return Err(Error::RemoveRoot);
            };
            // ORDERING: Relaxed; written under the structure lock.
            if n.removed.load(Ordering::Relaxed) {
                return Err(Error::GroupRemoved(n.path.clone()));
            }
            if !st.children[n.hot.row as usize].is_empty() {
                return Err(Error::NotEmpty(n.path.clone()));
            }
            n.removed.store(true, Ordering::Relaxed);
            st.children[parent.hot.row as usize].remove(n.name());
            st.live -= 1;
            st.zombies.push(n.clone());
            // ORDERING: Relaxed; a size for bounds (see `Core::zombie_rows`).
            core.zombie_rows.fetch_add(1, Ordering::Relaxed);
            let mut a = n.hot.parent.as_deref();
            while let Some(p) = a {
                p.subtree_size.fetch_sub(1, Ordering::Relaxed);
                a = p.hot.parent.as_deref();
            }
        }
        // Push the group's deltas into its parent (blocking: a removal never
        // skips its flush, whatever the concurrency policy).
        core.flush_forced_blocking(&group.node, &mut ());
        drop(group);
        self.reap();
        Ok(())
    }

    /// Recycles the rows of removed groups that no handle references any
    /// more and that no shard has queued or unflushed. Runs after each
    /// removal and each root flush; returns how many rows were recycled.
    ///
    /// A removed child holds its removed parent (through its parent link),
    /// so recycling the child can make the parent recyclable: the scan
    /// repeats until a pass recycles nothing, and a reap leaves no zombie
    /// that it could have recycled.
    pub fn reap(&self) -> usize {
        let core = &self.core;
        let mut st = core.write_structure();
        let mut reaped = 0;
        loop {
            let before = reaped;
            reaped += self.reap_pass(&mut st);
            if reaped == before {
                break;
            }
        }
        // ORDERING: Relaxed; see `Core::zombie_rows`.
        core.zombie_rows
            .store(st.zombies.len() as u64, Ordering::Relaxed);
        reaped
    }

    fn reap_pass(&self, st: &mut crate::tree::Structure) -> usize {
        let core = &self.core;
        let mut reaped = 0;
        let mut i = 0;
        while i < st.zombies.len() {
            let z = &st.zombies[i];
            // References: the zombie list and the row table.
            let idle = Arc::strong_count(z) == 2 && core.row_is_idle(z);
            if idle {
                let z = st.zombies.swap_remove(i);
                let row = z.hot.row;
                let slots = core.schema.slots();
                if let Some(p) = z.hot.parent.as_ref() {
                    let acc = st.reaped.entry(p.hot.row).or_insert_with(|| vec![0; slots]);
                    for (a, v) in acc.iter_mut().zip(z.agg.iter()) {
                        // ORDERING: Relaxed; the zombie is idle.
                        *a = a.wrapping_add(v.load(Ordering::Relaxed));
                    }
                }
                st.reaped.remove(&row);
                for s in 0..core.shards {
                    // ORDERING: Relaxed; no handle exists, nobody else
                    // touches the row. Clears the shared residue the next
                    // group of this row must not inherit (`alloc` resets
                    // the owner's), and zeroes the owner cells with their
                    // snapshots (equal, the row is idle): an owner cell is
                    // the running sum of one group's updates, kept within
                    // `i64` (see `saturation.rs`).
                    let rows = &z.hot.rows;
                    rows.header(s).store(0, Ordering::Relaxed);
                    for k in 0..slots {
                        rows.counter(s, k).store(0, Ordering::Relaxed);
                        if let Some(p) = rows.prev_if_any(s, k) {
                            p.store(0, Ordering::Relaxed);
                        }
                    }
                }
                core.forget_saturation(row);
                st.nodes[row as usize] = None;
                st.slab.free(row);
                reaped += 1;
            } else {
                i += 1;
            }
        }
        reaped
    }

    /// Looks up a group by its canonical path: `/` for the root, else `/`
    /// followed by names joined with single slashes (`/a`, `/a/b`), exactly
    /// as [`Group::path`] spells it.
    ///
    /// # Errors
    /// [`Error::InvalidName`] for anything else — no leading slash, an
    /// empty component (`//a`, `/a/`, `/a//b`), `.` or `..` — and
    /// [`Error::UnknownGroup`]. Paths are not canonicalised: one group has
    /// one path.
    pub fn lookup(&self, path: &str) -> Result<Group, Error> {
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
        let st = self.core.read_structure();
        let mut row = self.core.root.hot.row;
        for comp in comps {
            row = *st.children[row as usize]
                .get(comp)
                .ok_or_else(|| Error::UnknownGroup(path.to_string()))?;
        }
        Ok(Group::new(st.node(row).clone()))
    }

    /// The live children of a group, by name (none for a removed group).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn children(&self, group: &Group) -> Result<Vec<Group>, Error> {
        self.core.own(group)?;
        let st = self.core.read_structure();
        let row = group.node.hot.row as usize;
        // ORDERING: Relaxed; written under the structure lock we hold.
        if group.node.removed.load(Ordering::Relaxed) {
            return Ok(Vec::new());
        }
        Ok(st.children[row]
            .values()
            .map(|&r| Group::new(st.node(r).clone()))
            .collect())
    }

    /// Every live group, parents before children (pre-order, children by name).
    pub fn groups(&self) -> Vec<Group> {
        let st = self.core.read_structure();
        let mut out = Vec::with_capacity(st.live + 1);
        let mut stack = vec![self.core.root.hot.row];
        while let Some(r) = stack.pop() {
            out.push(Group::new(st.node(r).clone()));
            stack.extend(st.children[r as usize].values().rev());
        }
        out
    }

    /// Number of live groups, root included.
    pub fn len(&self) -> usize {
        self.core.read_structure().live + 1
    }

    /// Always false: a tree has at least its root.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Removed groups whose rows are not recycled yet.
    pub fn zombies(&self) -> usize {
        self.core.read_structure().zombies.len()
    }

    /// Bytes of per-shard counter memory allocated (rows of all groups).
    pub fn counter_bytes(&self) -> usize {
        self.core.read_structure().slab.allocated_bytes()
    }

    /// Total bytes the tree holds: counter rows, node structs, aggregate
    /// arrays, names and tables (excluding allocator overhead).
    pub fn memory_bytes(&self) -> usize {
        let st = self.core.read_structure();
        let slots = self.core.schema.slots();
        let per_node = std::mem::size_of::<Node>() + 2 * slots * 8;
        let nodes: usize = st
            .nodes
            .iter()
            .flatten()
            .map(|n| per_node + n.pending().map_or(0, |p| p.len() * 8) + n.path.len())
            .sum();
        let tables = st.nodes.len() * (std::mem::size_of::<Option<Arc<Node>>>() + 48)
            + st.children.iter().map(|c| c.len() * 48).sum::<usize>();
        st.slab.allocated_bytes() + nodes + tables
    }
}

impl crate::stats::Core {
    /// Whether no shard has the node queued, on its tree, or with a non-zero
    /// counter. Call with the structure lock held for writing.
    pub(crate) fn row_is_idle(&self, n: &Node) -> bool {
        (0..self.shards).all(|s| {
            let rows = &n.hot.rows;
            // ORDERING: Relaxed; with no handle left no updater can write
            // the row, and flushers are excluded by the structure lock.
            let hdr = rows.header(s).load(Ordering::Relaxed);
            hdr & QUEUED == 0
                && !crate::sync::lock_tree(&self.trees[s]).contains(n.hot.row)
                && (0..self.schema.slots()).all(|k| rows.unflushed(s, k) == 0)
        }) && n
            .pending()
            .is_none_or(|ps| ps.iter().all(|p| p.load(Ordering::Relaxed) == 0))
    }
}
