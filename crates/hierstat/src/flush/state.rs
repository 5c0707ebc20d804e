//! The flushes' half of a tree's state: the exclusion a flush takes
//! (the flush lock, or the registry of running flush roots), the count of
//! running flushes, outcome statistics, and the async requests served by
//! background flushers. The flush itself is in `flush.rs`.

use super::outcome::{FlushOutcome, FlushStats};
use crate::policy::{Concurrency, Policy};
use crate::state::GroupState;
use crate::sync::CachePadded;
use crate::sync::{
    lock, ranked, try_lock, Arc, AtomicBool, AtomicU64, Condvar, Held, Mutex, MutexGuard, Ordering,
    Rank, Ranked,
};
use crate::work::{Work, WorkSink};

/// Flush exclusion, the count of running flushes, and outcome statistics:
/// the flushes' half of the tree's state.
#[derive(Debug)]
pub(crate) struct Flushes {
    /// The tree-wide flush lock (Serialize / Skip / WaitOngoing).
    lock: Mutex<()>,
    /// Roots of running flushes (DisjointParallel); rank `Leaf`.
    active: Mutex<Vec<Arc<GroupState>>>,
    active_cv: Condvar,
    /// Flushes in progress (between `flush_subtree`'s first drain and its
    /// threshold reset). While there are none, an owner's fold skips the
    /// threshold counters of groups already above `T` (see
    /// `Core::add_up`). ORDERING: see [`FlushingGuard`].
    running: CachePadded<AtomicU64>,
    /// Clock time of the last root flush start. ORDERING: Relaxed; a
    /// timestamp.
    last_root: AtomicU64,
    /// Counters of flush outcomes. ORDERING: Relaxed; statistics only.
    flushes: AtomicU64,
    root_flushes: AtomicU64,
    skipped: AtomicU64,
    not_needed: AtomicU64,
    ratelimited: AtomicU64,
    async_requests: AtomicU64,
}

impl Flushes {
    /// No flush yet; the last root flush counts as started at `now`.
    pub(crate) fn new(now: u64) -> Self {
        Flushes {
            lock: Mutex::new(()),
            active: Mutex::new(Vec::new()),
            active_cv: Condvar::new(),
            running: CachePadded(AtomicU64::new(0)),
            last_root: AtomicU64::new(now),
            flushes: AtomicU64::new(0),
            root_flushes: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            not_needed: AtomicU64::new(0),
            ratelimited: AtomicU64::new(0),
            async_requests: AtomicU64::new(0),
        }
    }

    /// Whether a flush runs, for an owner's fold that would skip counters
    /// above the threshold (see `Core::add_up`).
    ///
    /// ORDERING: Acquire, after the update's cell writes and its pair's
    /// check or claim; pairs with [`FlushingGuard`] (read before the
    /// threshold counters, so that a flush that has left is seen with its
    /// reset).
    #[inline]
    pub(crate) fn running_for_skip(&self) -> bool {
        self.running.0.load(Ordering::Acquire) != 0
    }

    /// Clock time (ns) at which the last root flush started.
    pub(crate) fn last_root_flush_ns(&self) -> u64 {
        // ORDERING: Relaxed; a timestamp.
        self.last_root.load(Ordering::Relaxed)
    }

    /// Counts `out` in the statistics.
    pub(crate) fn record(&self, out: FlushOutcome) {
        // ORDERING: Relaxed; statistics.
        let field = match out {
            FlushOutcome::Flushed { root } => {
                if root {
                    self.root_flushes.fetch_add(1, Ordering::Relaxed);
                }
                &self.flushes
            }
            FlushOutcome::NotNeeded | FlushOutcome::NoFlush => &self.not_needed,
            FlushOutcome::Skipped => &self.skipped,
            FlushOutcome::Ratelimited => &self.ratelimited,
            FlushOutcome::AsyncRequested => &self.async_requests,
        };
        field.fetch_add(1, Ordering::Relaxed);
    }

    /// Cumulative flush statistics.
    pub(crate) fn stats(&self) -> FlushStats {
        // ORDERING: Relaxed; statistics.
        FlushStats {
            flushes: self.flushes.load(Ordering::Relaxed),
            root_flushes: self.root_flushes.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            not_needed: self.not_needed.load(Ordering::Relaxed),
            ratelimited: self.ratelimited.load(Ordering::Relaxed),
            async_requests: self.async_requests.load(Ordering::Relaxed),
            running: self.running.0.load(Ordering::Relaxed),
        }
    }

    /// Marks the start of a root flush at clock time `now` (ns).
    pub(crate) fn root_flush_started(&self, now: u64) {
        // ORDERING: Relaxed; a timestamp (the kernel records the start).
        self.last_root.store(now, Ordering::Relaxed);
    }

    /// The tree-wide flush lock, taken whatever the gate (for `verify`,
    /// which excludes every flush).
    pub(crate) fn lock_whole(&self) -> Ranked<MutexGuard<'_, ()>> {
        Ranked::take(Rank::Gate, || lock(&self.lock))
    }

    /// Takes the exclusion a flush of `target` needs, waiting for a
    /// conflicting flush as `wait` says; `None` if it did not get it (only
    /// with [`Wait::No`] or [`Wait::AtMost`]) under `policy`'s concurrency. The flag tells whether it
    /// waited.
    pub(crate) fn enter<W: WorkSink>(
        &self,
        policy: &Policy,
        target: &Arc<GroupState>,
        wait: Wait,
        work: &mut W,
    ) -> Option<(Gate<'_>, bool)> {
        let f = self;
        match policy.concurrency {
            Concurrency::Skip | Concurrency::Serialize | Concurrency::WaitOngoing { .. } => {
                if policy.concurrency == Concurrency::Serialize && policy.lock_per_shard {
                    return Some((Gate::PerPass, false));
                }
                let held = ranked(Rank::Gate);
                if let Some(g) = try_lock(&f.lock) {
                    work.count(Work::LockAcquired, 1);
                    return Some((Gate::Whole(Ranked::with(g, held)), false));
                }
                let g = match wait {
                    Wait::No => return None,
                    Wait::Block => lock(&f.lock),
                    Wait::AtMost(d) => {
                        let deadline = std::time::Instant::now() + d;
                        loop {
                            if let Some(g) = try_lock(&f.lock) {
                                break g;
                            }
                            if std::time::Instant::now() >= deadline {
                                work.count(Work::LockWaited, 1);
                                return None;
                            }
                            // A running flush takes microseconds to
                            // milliseconds: poll, yielding the CPU to it.
                            crate::sync::yield_now();
                        }
                    }
                };
                work.count(Work::LockWaited, 1);
                work.count(Work::LockAcquired, 1);
                Some((Gate::Whole(Ranked::with(g, held)), true))
            }
            Concurrency::DisjointParallel => {
                let held = ranked(Rank::Gate);
                let waited = {
                    let _leaf = ranked(Rank::Leaf);
                    let mut active = lock(&f.active);
                    let overlaps = |a: &Vec<Arc<GroupState>>| {
                        a.iter().any(|n| {
                            n.is_ancestor_or_self_of(target) || target.is_ancestor_or_self_of(n)
                        })
                    };
                    let waited = overlaps(&active);
                    if waited {
                        while overlaps(&active) {
                            active = match f.active_cv.wait(active) {
                                Ok(g) => g,
                                Err(p) => p.into_inner(),
                            };
                        }
                    }
                    active.push(target.clone());
                    waited
                };
                // The gate exists from the registration on, so that
                // whatever follows (a panic included) unregisters it.
                let gate = Gate::Registered(f, target.clone(), held);
                // Reported after the registry's lock is released: a work
                // sink may do anything, updates included (whose first
                // touch of a shard takes a lock, see `sync::Rank`).
                if waited {
                    work.count(Work::LockWaited, 1);
                }
                work.count(Work::LockAcquired, 1);
                Some((gate, waited))
            }
        }
    }

    /// The flush lock for one pass, when the gate takes it per pass.
    pub(crate) fn pass_lock<W: WorkSink>(
        &self,
        gate: &Gate<'_>,
        work: &mut W,
    ) -> Option<Ranked<MutexGuard<'_, ()>>> {
        match gate {
            Gate::PerPass => {
                work.count(Work::LockAcquired, 1);
                Some(Ranked::take(Rank::Gate, || lock(&self.lock)))
            }
            _ => None,
        }
    }
}

/// Async flush requests and the background flushers that serve them.
#[derive(Debug)]
pub(crate) struct AsyncRequests {
    /// An async flush was requested and not yet served.
    requested: AtomicBool,
    /// Background flushers running (started and not yet stopped). An async
    /// hot path with none to serve it flushes synchronously instead.
    /// ORDERING: Relaxed; a mode hint (see `Core::flush_entry`).
    flushers: AtomicU64,
    /// Wakes the background flusher (async requests, stop); rank `Leaf`.
    wake: Mutex<u64>,
    wake_cv: Condvar,
}

impl AsyncRequests {
    /// No request, no flusher.
    pub(crate) fn new() -> Self {
        AsyncRequests {
            requested: AtomicBool::new(false),
            flushers: AtomicU64::new(0),
            wake: Mutex::new(0),
            wake_cv: Condvar::new(),
        }
    }

    /// Asks the background flusher to flush the root now.
    pub(crate) fn request(&self) {
        // ORDERING: Release; pairs with the background flusher's Acquire
        // swap, though nothing but the flag itself is communicated.
        self.requested.store(true, Ordering::Release);
        self.wake_all();
    }

    /// Wakes every waiting background flusher.
    pub(crate) fn wake_all(&self) {
        let _leaf = ranked(Rank::Leaf);
        let mut g = lock(&self.wake);
        *g += 1;
        self.wake_cv.notify_all();
    }

    /// Whether a request is pending (the flusher's wait loop).
    #[cfg(not(loom))] // the background flusher is a real thread
    pub(crate) fn pending(&self) -> bool {
        // ORDERING: Acquire; pairs with `request`'s Release store.
        self.requested.load(Ordering::Acquire)
    }

    /// Takes a pending request.
    #[cfg(not(loom))] // the background flusher is a real thread
    pub(crate) fn take(&self) -> bool {
        // ORDERING: Acquire pairs with `request`'s Release store.
        self.requested.swap(false, Ordering::Acquire)
    }

    /// Waits at most `wait` for a wake-up, unless `done` says not to.
    #[cfg(not(loom))] // the background flusher is a real thread
    pub(crate) fn wait(&self, wait: std::time::Duration, done: impl Fn() -> bool) {
        let _leaf = ranked(Rank::Leaf);
        let g = lock(&self.wake);
        if done() {
            return;
        }
        let _ = self.wake_cv.wait_timeout(g, wait);
    }

    /// Counts a background flusher started or stopped.
    #[cfg(not(loom))] // the background flusher is a real thread
    pub(crate) fn flusher_started(&self, started: bool) {
        // ORDERING: Relaxed; a mode hint for async hot paths.
        if started {
            self.flushers.fetch_add(1, Ordering::Relaxed);
        } else {
            self.flushers.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether a background flusher runs.
    pub(crate) fn flusher_running(&self) -> bool {
        // ORDERING: Relaxed; a mode hint. A flusher stopping concurrently
        // may leave one async request unserved; the next guarded read
        // flushes it.
        self.flushers.load(Ordering::Relaxed) > 0
    }
}

/// How long a flush waits for a conflicting one (see [`Flushes::enter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not at all: skip.
    No,
    /// Until it ends.
    Block,
    /// At most this long, then skip.
    AtMost(std::time::Duration),
}

/// Exclusion held by a running flush (rank `Gate`, see `sync::Rank`).
pub(crate) enum Gate<'a> {
    /// The tree-wide flush lock, for the whole flush.
    Whole(#[allow(dead_code)] Ranked<MutexGuard<'a, ()>>),
    /// The tree-wide flush lock, taken per shard pass (`lock_per_shard`).
    PerPass,
    /// Registered as an active flush root (no overlapping flush runs).
    Registered(&'a Flushes, Arc<GroupState>, #[allow(dead_code)] Held),
}

impl Drop for Gate<'_> {
    fn drop(&mut self) {
        if let Gate::Registered(f, g, _) = self {
            let _leaf = ranked(Rank::Leaf);
            let mut active = lock(&f.active);
            if let Some(i) = active.iter().position(|n| Arc::ptr_eq(n, g)) {
                active.swap_remove(i);
            }
            f.active_cv.notify_all();
        }
    }
}

/// Counts a flush in [`Flushes`]'s running count from before its first
/// drain until after its threshold reset (also when it unwinds).
///
/// An owner that finds no flush in progress may skip the threshold
/// counter of a group already above `T` (see `Core::add_up`; folded
/// per-group thresholds only). That must not lose magnitude a running
/// flush's reset then removes: every page a skipped fold stands for must be
/// carried by any flush of the group that is running when the owner reads
/// the count, or starts later. The owner reads the count (Acquire) after
/// writing its cells and checking or claiming its pair; the flush counts
/// itself before its first drain, and issues a `SeqCst` fence after its
/// snapshot phase, before the drains of its passes (see
/// `Core::flush_subtree`). Two store-buffering pairs decide:
/// * the pair's push against the passes' list takes: the owner's claim
///   ends with a `SeqCst` fence after its push, so either the owner sees
///   the count (and counts its fold), or the pass's drain takes the pushed
///   pair (with any earlier push of it): the pair is in the flush, and the
///   reset subtracts only what the snapshots, taken before that fence, saw;
/// * the cell writes against the flush's read of them: the owner's
///   barrier point (the heavy barrier the flush issues for a shard with
///   queued rows; a `SeqCst` fence in loom) against the flush's fence
///   after its drain: either the owner sees the count, or the flush reads
///   the cells with the writes.
///
/// So a skipping owner's pages are in the flush. (loom, without the
/// flush's fence, finds a root reset with the owner's pages neither counted
/// nor carried.)
///
/// The exit's Release decrement pairs with the same Acquire load: an owner
/// that reads the count after a flush has left reads the threshold
/// counters as that flush's reset left them.
pub(crate) struct FlushingGuard<'a>(&'a AtomicU64);

impl<'a> FlushingGuard<'a> {
    pub(crate) fn enter(f: &'a Flushes) -> Self {
        // ORDERING: Relaxed; the `SeqCst` fence that ends the snapshot
        // phase orders it (see the type's docs).
        f.running.0.fetch_add(1, Ordering::Relaxed);
        FlushingGuard(&f.running.0)
    }
}

impl Drop for FlushingGuard<'_> {
    fn drop(&mut self) {
        // ORDERING: Release; see the type's docs.
        self.0.fetch_sub(1, Ordering::Release);
    }
}
