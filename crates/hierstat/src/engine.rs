//! [`Core`], the state every handle of a tree shares (its [`HierStats`],
//! counters, background flushers): one part per module, each part's fields
//! private to its module. This module defines the whole and the one check
//! every entry point makes; the parts' types live in leaf modules that do
//! not know `Core`, and the modules that implement the engine's work
//! (`update.rs`, `flush.rs`, `read.rs`, `tree.rs`, `verify.rs`) add their
//! methods to `Core` from outside.
//!
//! [`HierStats`]: crate::HierStats

use crate::config::Params;
use crate::count::GlobalCount;
use crate::dirty::Dirty;
use crate::error::Error;
use crate::flush::state::{AsyncRequests, Flushes};
use crate::group::Group;
use crate::saturation::Saturation;
use crate::state::GroupState;
use crate::sync::Arc;
use crate::tree::groups::Groups;
use crate::update::writers::Writers;

/// State shared by every handle, the flushers and the background thread:
/// one part per module, each with private fields.
#[derive(Debug)]
pub(crate) struct Core {
    /// The configuration, derived once (`config.rs`).
    pub(crate) params: Params,
    /// The groups: identity, root, structure lock, names
    /// (`tree/groups.rs`; what is done with them: `tree.rs`).
    pub(crate) groups: Groups,
    /// Who writes each shard, and how owners and flushers fence each other
    /// (`update/writers.rs`; the update paths: `update.rs`).
    pub(crate) writers: Writers,
    /// Per-shard update lists and dirty trees (`dirty.rs`).
    pub(crate) dirty: Dirty,
    /// Flush exclusion, the flush count, outcome statistics
    /// (`flush/state.rs`; the flush: `flush.rs`).
    pub(crate) flushes: Flushes,
    /// Async flush requests and the background flusher's wake-ups
    /// (`flush/state.rs`, `flusher.rs`).
    pub(crate) requests: AsyncRequests,
    /// The global threshold's count (`count.rs`).
    pub(crate) global: GlobalCount,
    /// Items that left `i64`'s range (`saturation.rs`).
    pub(crate) saturation: Saturation,
}

impl Core {
    /// A tree of `params` holding only its root, written by `writers`.
    pub(crate) fn new(params: Params, writers: Writers) -> Self {
        let groups = Groups::new(&params, writers.ownable(), writers.rseq().is_some());
        let now = params.clock.now_ns();
        Core {
            dirty: Dirty::new(params.shards),
            flushes: Flushes::new(now),
            requests: AsyncRequests::new(),
            global: GlobalCount::default(),
            saturation: Saturation::new(params.schema.slots()),
            params,
            groups,
            writers,
        }
    }

    /// `group`'s state, if the group belongs to this tree: the one check
    /// every entry point makes (a compare of the handle's copy of its
    /// tree's identity).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    #[inline(always)]
    pub(crate) fn own<'g>(&self, group: &'g Group) -> Result<&'g Arc<GroupState>, Error> {
        self.check(group)?;
        Ok(&group.state)
    }

    /// Whether `group` belongs to this tree ([`own`](Self::own) without the
    /// state).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    #[inline(always)]
    pub(crate) fn check(&self, group: &Group) -> Result<(), Error> {
        if group.tree == self.groups.tag_id() {
            Ok(())
        } else {
            Err(foreign(group))
        }
    }
}

#[cold]
#[inline(never)]
fn foreign(group: &Group) -> Error {
    Error::ForeignGroup(group.path().to_string())
}
