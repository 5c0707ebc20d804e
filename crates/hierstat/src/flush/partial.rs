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
    /// The left subtrees' roots.
    left: IdMap<()>,
    /// The left groups' states, where nothing else keeps their ids from
    /// being recycled while the flush runs (a removed group's id is
    /// recycled only once nothing references its state, see `Core::reap`,
    /// and only under the structure lock's write side): empty when the
    /// caller holds the structure lock from the plan to the flush's end,
    /// or the states themselves.
    _held: Vec<Arc<GroupState>>,
    /// The sum of the left groups' error bounds, in pages, as the planner
    /// read them before the flush.
    composed: u64,
}

impl Plan {
    /// A plan that leaves `left` (each with the bound the planner read) and
    /// opens `root` and every group between it and a left group; `held`
    /// keeps the left groups' ids (see [`Plan`]).
    ///
    /// Every left group must be a proper descendant of `root`.
    pub(crate) fn new<'a>(
        root: &GroupState,
        left: impl IntoIterator<Item = &'a GroupState>,
        held: Vec<Arc<GroupState>>,
        composed: u64,
    ) -> Plan {
        let mut opened = IdMap::default();
        opened.insert(root.hot.id, ());
        let mut left_ids = IdMap::default();
        for g in left {
            left_ids.insert(g.hot.id, ());
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
            left: left_ids,
            _held: held,
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

    /// Ids of the opened groups (the flushed root included).
    pub(crate) fn opened_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.opened.keys().copied()
    }

    /// Ids of the left subtrees' roots.
    pub(crate) fn left_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.left.keys().copied()
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
