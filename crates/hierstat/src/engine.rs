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
use crate::sync::std_only::StdAtomicBool;
use crate::sync::{Arc, Ordering};
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
    /// Whether a second handle to this state may exist: set by
    /// [`CoreRef::share`], cleared by [`CoreRef::exclusive`] when it finds
    /// its handle the only one.
    shared: StdAtomicBool,
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
            shared: StdAtomicBool::new(false),
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

/// The state as a [`HierStats`] holds it: an `Arc<Core>` that is not
/// `Clone`, so that every other handle to the state (a clone of the
/// `HierStats`, a [`Counter`](crate::Counter), a background flusher) is
/// made by [`share`](Self::share), which records that the state may be
/// shared. [`exclusive`](Self::exclusive) then tells, through `&mut`,
/// whether this handle is the only one: if it is, no other thread can
/// run any operation of the tree until the `&mut` borrow ends, and the
/// simulator's explicit-shard update may use plain loads and stores for
/// its read-modify-writes (`Core::update_shared_sole`).
///
/// Why the flag suffices: it is clear at construction (one handle) and
/// cleared only by a successful `Arc::get_mut` (one handle). Once it is
/// clear, a second handle can only be made from this one, through `&self`
/// (`share`, which sets it first); that borrow ends before the next
/// `&mut` one begins, and whatever passed the handle between threads
/// meanwhile ordered the two, so `exclusive` sees the flag set. Group
/// handles hold a group's state, not the tree's: they run nothing alone.
///
/// [`HierStats`]: crate::HierStats
#[derive(Debug)]
pub(crate) struct CoreRef(Arc<Core>);

impl CoreRef {
    /// The handle of a new state: the only one.
    pub(crate) fn new(core: Core) -> Self {
        CoreRef(Arc::new(core))
    }

    /// Another handle to the state, recorded as such (see the type's
    /// docs): the one way to clone the `Arc`.
    pub(crate) fn share(&self) -> Arc<Core> {
        // ORDERING: Relaxed, load then store: the flag is read only by
        // `exclusive` through `&mut` of a handle, which any `&self` borrow
        // that set it (this one) happens-before. Stored only when clear,
        // so that clones made often do not write a shared line.
        if !self.0.shared.load(Ordering::Relaxed) {
            // ORDERING: Relaxed; as above.
            self.0.shared.store(true, Ordering::Relaxed);
        }
        Arc::clone(&self.0)
    }

    /// Another `CoreRef` to the state (a clone of the `HierStats`), made
    /// by [`share`](Self::share).
    pub(crate) fn another(&self) -> CoreRef {
        CoreRef(self.share())
    }

    /// Whether this handle is the state's only one, so that, for the
    /// `&mut` borrow, no other thread runs any of the tree's operations.
    /// One load while no other handle was made; else `Arc::get_mut`,
    /// which (Acquire on the count) also orders every dropped handle's
    /// operations before the caller's.
    #[inline(always)]
    pub(crate) fn exclusive(&mut self) -> bool {
        // ORDERING: Relaxed; see the type's docs.
        !self.0.shared.load(Ordering::Relaxed) || self.exclusive_again()
    }

    /// [`exclusive`](Self::exclusive) once a second handle was made: the
    /// flag is cleared again when the others are gone.
    #[cold]
    #[inline(never)]
    fn exclusive_again(&mut self) -> bool {
        match Arc::get_mut(&mut self.0) {
            Some(core) => {
                *core.shared.get_mut() = false;
                true
            }
            None => false,
        }
    }
}

impl std::ops::Deref for CoreRef {
    type Target = Core;

    #[inline(always)]
    fn deref(&self) -> &Core {
        &self.0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{Config, HierStats, Preset, Schema, Unit};

    /// `CoreRef::exclusive` holds exactly while no other handle to the
    /// tree's state lives: not while a clone, a counter or a background
    /// flusher does, and again once they are dropped.
    #[test]
    fn a_handle_is_exclusive_while_it_is_the_only_one() {
        let mut b = Schema::builder();
        let x = b.state("x", Unit::Pages);
        let mut stats =
            HierStats::new(b.build().unwrap(), Config::preset(Preset::Hierstat)).unwrap();
        assert!(stats.core.exclusive());
        let other = stats.clone();
        assert!(!stats.core.exclusive());
        let again = other.clone();
        drop(other);
        assert!(!stats.core.exclusive());
        drop(again);
        assert!(stats.core.exclusive());
        let c = stats.counter(&stats.root(), x).unwrap();
        let c2 = c.clone();
        drop(c);
        assert!(!stats.core.exclusive());
        drop(c2);
        assert!(stats.core.exclusive());
        let f = stats
            .start_flusher(std::time::Duration::from_secs(3600))
            .unwrap();
        assert!(!stats.core.exclusive());
        drop(f);
        assert!(stats.core.exclusive());
        // A clone's own `exclusive` sees the original.
        let mut clone = stats.clone();
        assert!(!clone.core.exclusive());
        drop(stats);
        assert!(clone.core.exclusive());
    }
}
