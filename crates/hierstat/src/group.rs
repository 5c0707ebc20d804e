//! The handle users hold for a group, and the copies it carries.
//!
//! A [`Group`] is its shared state plus copies of what the hot paths need
//! first: the tree's identity (the foreign-handle check), where the group's
//! row table is (the update's row address is one load from it) and its
//! aggregate array (the read).
//! With them an update or a read reaches its word from the handle with no
//! load through the group's state: each dependent load cut from the path
//! shortens what every call waits for before its one store or load can
//! issue.
//!
//! The copies are raw pointers into memory the state keeps alive, so this
//! module, with `rows.rs` and `table.rs`, holds the crate's `unsafe` code: the accessors
//! below dereference them, and their SAFETY comments rest on two facts,
//! that [`Group::new`] is the only constructor and that nothing reassigns a
//! handle's fields after it.

use crate::rows::OwnerRow;
use crate::schema::Slot;
use crate::state::GroupState;
use crate::sync::{Arc, AtomicI64, Ordering};
use crate::table::{load_entry, CpuTable, Entry};
use std::ptr::NonNull;

/// A handle to a group of a [`HierStats`](crate::HierStats) tree. Cheap to
/// clone; stays valid (and keeps counting) after the group is removed: late
/// updates still reach the ancestors.
#[derive(Clone)]
pub struct Group {
    pub(crate) state: Arc<GroupState>,
    /// `state.hot.tree.id()`: the state's tag keeps the tree's identity
    /// from being reused while this handle lives.
    pub(crate) tree: usize,
    /// The near part of `state.hot.rows` (see `table.rs`): its first
    /// entry; the array never moves or shrinks.
    near: NonNull<Entry>,
    /// Entries of `near` an owner may use (see `RowTable::near`).
    owned_near: u32,
    /// In the per-CPU mode, the entries of `near` (one per CPU); 0
    /// otherwise (see `RowTable::near`).
    cpus: u32,
    /// `state.agg`'s first word; the array never moves or shrinks (a
    /// state's fields are never reassigned: it lives in an `Arc`).
    agg: NonNull<AtomicI64>,
}

// SAFETY: the pointers only ever become shared references to atomics, which
// are `Sync`, in memory `state` keeps alive; so a `Group` may be sent and
// shared as its `Arc<GroupState>` may.
unsafe impl Send for Group {}
// SAFETY: as for `Send` above.
unsafe impl Sync for Group {}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("path", &self.path()).finish()
    }
}

impl Group {
    /// The handle of the group whose state is `state`.
    pub(crate) fn new(state: Arc<GroupState>) -> Group {
        let (near, owned_near, cpus) = state.hot.rows.near();
        Group {
            tree: state.hot.tree.id(),
            near,
            owned_near,
            cpus,
            agg: NonNull::from(&*state.agg).cast(),
            state,
        }
    }

    /// The group's row on shard `seat` if the thread in seat `seat` owns
    /// that shard, it is a near one and the row exists (see `table.rs`),
    /// else `None`: one compare and one load from the row table.
    #[inline(always)]
    pub(crate) fn owner_row(&self, seat: usize) -> Option<OwnerRow<'_>> {
        if seat >= self.owned_near as usize {
            return None;
        }
        // SAFETY: `near` is the first entry of `state.hot.rows`'s near part
        // (set by `new`, never reassigned), an array of at least
        // `owned_near` entries kept alive and in place by `self.state`.
        let entry = unsafe { self.near.add(seat).as_ref() };
        // SAFETY: an entry of the group's table, whose store `self.state`
        // keeps alive for `&self`.
        let row = unsafe { load_entry(entry) }?;
        // SAFETY: as above.
        Some(unsafe { OwnerRow::new(row) })
    }

    /// In the per-CPU mode, the group's row table (one entry per CPU) and
    /// its length, for the update's section (see `rseq.rs`); `None`
    /// otherwise: one compare.
    #[inline(always)]
    pub(crate) fn per_cpu_table(&self) -> Option<CpuTable<'_>> {
        if self.cpus == 0 {
            return None;
        }
        // SAFETY: `near` is the first of the table's `cpus` near entries
        // (set by `new`, never reassigned), kept alive and in place by
        // `self.state`.
        Some(unsafe { CpuTable::new(self.near, self.cpus as usize) })
    }

    /// The group's hierarchical aggregate of `slot` (`state.agg[slot]`),
    /// as of the last flush.
    #[inline(always)]
    pub(crate) fn agg_relaxed(&self, slot: Slot) -> i64 {
        // SAFETY: `agg` is `state.agg`'s first word (set by `new`, never
        // reassigned), an array of `schema.slots()` words kept alive and in
        // place by `self.state`; a `Slot` of the tree's schema is below that.
        let word = unsafe { self.agg.add(slot.get()).as_ref() };
        // ORDERING: Relaxed; a statistic, consistent per counter only.
        word.load(Ordering::Relaxed)
    }

    /// The group's name (empty for the root).
    pub fn name(&self) -> &str {
        self.state.name()
    }

    /// The group's path (`/` for the root, `/a/b` below it).
    pub fn path(&self) -> &str {
        &self.state.path
    }

    /// Depth: 0 for the root.
    pub fn depth(&self) -> usize {
        self.state.hot.depth as usize
    }

    /// Whether the group has been removed.
    pub fn is_removed(&self) -> bool {
        // ORDERING: Relaxed; an informational flag.
        self.state.removed.load(crate::sync::Ordering::Relaxed)
    }

    /// The parent group (`None` for the root).
    pub fn parent(&self) -> Option<Group> {
        self.state.hot.parent.clone().map(Group::new)
    }

    /// Whether both handles name the same group.
    pub fn same(&self, other: &Group) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}
