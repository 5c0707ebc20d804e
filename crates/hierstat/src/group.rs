//! The handle users hold for a group, and the copies it carries.
//!
//! A [`Group`] is its node plus copies of what the hot paths need first:
//! the tree's identity (the foreign-handle check), where the group's rows
//! are (the update's row address) and its aggregate array (the read). With
//! them an update or a read reaches its word from the handle with no load
//! through the node: each dependent load cut from the path shortens what
//! every call waits for before its one store or load can issue.
//!
//! The copies are raw pointers into memory the node keeps alive, so this
//! module, with `slab.rs`, holds the crate's `unsafe` code: the accessors
//! below dereference them, and their SAFETY comments rest on two facts,
//! that [`Group::new`] is the only constructor and that nothing reassigns a
//! handle's fields after it.

use crate::node::Node;
use crate::schema::Slot;
use crate::slab::{OwnerRow, RowCursor};
use crate::sync::{Arc, AtomicI64};
use std::ptr::NonNull;

/// A handle to a group of a [`HierStats`](crate::HierStats) tree. Cheap to
/// clone; stays valid (and keeps counting) after the group is removed: late
/// updates still reach the ancestors.
#[derive(Clone)]
pub struct Group {
    pub(crate) node: Arc<Node>,
    /// `node.hot.tree.id()`: the node's tag keeps the tree's identity from
    /// being reused while this handle lives.
    pub(crate) tree: usize,
    /// `node.hot.rows.cursor()`.
    rows: RowCursor,
    /// `node.agg`'s first word; the array never moves or shrinks (a node's
    /// fields are never reassigned: it lives in an `Arc`).
    agg: NonNull<AtomicI64>,
}

// SAFETY: the pointers only ever become shared references to atomics, which
// are `Sync`, in memory `node` keeps alive; so a `Group` may be sent and
// shared as its `Arc<Node>` may.
unsafe impl Send for Group {}
// SAFETY: as for `Send` above.
unsafe impl Sync for Group {}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("path", &self.path()).finish()
    }
}

impl Group {
    /// The handle of `node`.
    pub(crate) fn new(node: Arc<Node>) -> Group {
        Group {
            tree: node.hot.tree.id(),
            rows: node.hot.rows.cursor(),
            agg: NonNull::from(&*node.agg).cast(),
            node,
        }
    }

    /// The group's row on `slot`'s shard if `slot` is an owner slot of the
    /// tree, else `None` (see `RowCursor::owner_row`).
    #[inline(always)]
    pub(crate) fn owner_row(&self, slot: usize) -> Option<OwnerRow<'_>> {
        // SAFETY: `new` set `rows` to the cursor of `node.hot.rows`, and
        // nothing reassigns it; `self.node` keeps that `RowRef` (and its
        // bucket) alive for `&self`'s lifetime.
        unsafe { self.rows.owner_row(slot) }
    }

    /// The group's hierarchical aggregate of `slot` (`node.agg[slot]`).
    #[inline(always)]
    pub(crate) fn agg(&self, slot: Slot) -> &AtomicI64 {
        // SAFETY: `agg` is `node.agg`'s first word (set by `new`, never
        // reassigned), an array of `schema.slots()` words kept alive and in
        // place by `self.node`; a `Slot` of the tree's schema is below that.
        unsafe { self.agg.add(slot.get()).as_ref() }
    }

    /// The group's name (empty for the root).
    pub fn name(&self) -> &str {
        self.node.name()
    }

    /// The group's path (`/` for the root, `/a/b` below it).
    pub fn path(&self) -> &str {
        &self.node.path
    }

    /// Depth: 0 for the root.
    pub fn depth(&self) -> usize {
        self.node.hot.depth as usize
    }

    /// Whether the group has been removed.
    pub fn is_removed(&self) -> bool {
        // ORDERING: Relaxed; an informational flag.
        self.node.removed.load(crate::sync::Ordering::Relaxed)
    }

    /// The parent group (`None` for the root).
    pub fn parent(&self) -> Option<Group> {
        self.node.hot.parent.clone().map(Group::new)
    }

    /// Whether both handles name the same group.
    pub fn same(&self, other: &Group) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }
}
