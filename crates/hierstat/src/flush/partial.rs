//! What a partial flush leaves alone: a tolerance read's [`Plan`] (made in
//! `within.rs`, carried out by `Core::flush_subtree`).

use crate::dirty::{IdMap, Part};
use crate::state::GroupState;
use crate::sync::Arc;

/// The subtrees a partial flush of a group leaves, and the groups it opens
/// (see `dirty/partial.rs` for the three parts).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// The flushed group and every ancestor of a left group below it.
    opened: IdMap<()>,
    /// The left subtrees' roots. Held: a removed group's id is recycled
    /// only once nothing references its state (see `Core::reap`), so no
    /// other group takes a left group's id while the flush runs.
    left: IdMap<Arc<GroupState>>,
    /// The sum of the left groups' error bounds, in pages, as the planner
    /// read them before the flush.
    composed: u64,
}

impl Plan {
    /// A plan that leaves `left` (each with the bound the planner read) and
    /// opens `root` and every group between it and a left group.
    ///
    /// Every left group must be a proper descendant of `root`.
    pub(crate) fn new(root: &GroupState, left: IdMap<Arc<GroupState>>, composed: u64) -> Plan {
        let mut opened = IdMap::default();
        opened.insert(root.hot.id, ());
        for g in left.values() {
            let mut a = g.hot.parent.as_deref();
            while let Some(n) = a {
                if opened.insert(n.hot.id, ()).is_some() {
                    break;
                }
                debug_assert!(n.hot.depth > root.hot.depth, "left group outside the root");
                a = n.hot.parent.as_deref();
            }
        }
        Plan {
            opened,
            left,
            composed,
        }
    }

    /// What the flush does with group `id` of its subtree (not below a
    /// carried group).
    #[inline]
    pub(crate) fn part(&self, id: u32) -> Part {
        if self.left.contains_key(&id) {
            Part::Left
        } else if self.opened.contains_key(&id) {
            Part::Opened
        } else {
            Part::Carried
        }
    }

    /// The sum of the left groups' bounds, in pages.
    pub(crate) fn composed(&self) -> u64 {
        self.composed
    }

    /// Number of left subtrees.
    pub(crate) fn left(&self) -> usize {
        self.left.len()
    }

    /// Number of opened groups (the flushed root included).
    pub(crate) fn opened(&self) -> usize {
        self.opened.len()
    }
}
