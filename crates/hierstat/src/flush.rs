//! Flushing: moving per-shard deltas into the hierarchical aggregates.
//!
//! A flush of group `x` makes, for each shard `s` in turn, one *pass*:
//!
//! 1. lock shard `s`'s updated tree; drain `s`'s update list into it
//!    (clearing each row's claim: see `updated::drain_next`); extract the
//!    subtree of `x` as a child-before-parent list; unlock the tree;
//! 2. for each listed group `n`, for each counter slot `k`: the shard's
//!    change `d = (owner[n][s][k] − prev[n][s][k]) + swap(shared[n][s][k], 0)`,
//!    then `prev[n][s][k] = owner[n][s][k]`; `delta = take(pending[n][k]) + d`;
//!    `local[n][k] += d`; `agg[n][k] += delta`; `pending[parent][k] += delta`.
//!
//! Children come before parents within a pass, so a parent absorbs in the
//! same pass what its children pushed. After the last pass, with no
//! concurrent updates, every group in the subtree is exact and `x`'s own
//! delta waits in its parent's `pending` (the parent stays on the trees for
//! the next flush that covers it).
//!
//! An owner cell is written only by its owner thread, so the flusher never
//! writes it: it keeps the kernel's per-shard `prev` snapshot (allocated
//! with the first non-zero cell it meets, see `rows.rs`) and reads the
//! owner's line only. A shared cell takes atomic adds from any thread, so
//! the flusher swaps it to zero: none is lost between the swap and the next
//! add.
//!
//! Conservation, true for every group `n` between passes:
//! `agg[n] + pending[n] == local[n] + Σ agg[children(n)]`.
//!
//! # What a flush hands over
//!
//! A read's bound (see [`Bounded`](crate::Bounded)) counts what no
//! aggregate holds yet: threshold counts, reservations and residues. A
//! flush moves data into the aggregates and must take that accounting away
//! only once the data is there, or a read in between sees a bound that no
//! longer covers data not yet landed. So:
//!
//! * **counts and reservations** are snapshotted before the passes and
//!   reset by the snapshot after the last pass ([`Core::hand_over`]);
//! * **residues** are zeroed by the pass (as the kernel zeroes its per-CPU
//!   `stats_updates`), and what they held stays visible until the hand-over:
//!   in the group's `in_flight` (kernel-exact scheme), in the tree's
//!   (global threshold; a subtree flush leaves its pages in flight until a
//!   root flush lands them), or in the pair's reservation (folded scheme);
//! * under the kernel-exact scheme an ancestor's residue counts its
//!   descendants' updates, so a pass takes it *before* its drain: every page
//!   taken then belongs to a row the pass carries;
//! * a count above its break level (an early break, or its saturation)
//!   skips updates; a reset from there flags the count so that the bound
//!   is `None` until a reset from below (see `count.rs`).
//!
//! Every hand-over write is Release and every bound read of them Acquire,
//! and a read loads the bound before the value: whatever a flush does
//! between the two, the value read is at least as fresh as the bound
//! assumes.

use crate::dirty::{DirtyTree, IdMap};
use crate::policy::{Concurrency, FlushScope, HotPathFlush, ThresholdRule};
use crate::rows::Row;
use crate::saturation::Direction;
use crate::state::GroupState;
use crate::stats::Core;
use crate::sync::CachePadded;
use crate::sync::{
    lock, ranked, Arc, AtomicBool, AtomicU64, Condvar, Held, Mutex, MutexGuard, Ordering, Rank,
    Ranked,
};
use crate::tree::Structure;
use crate::work::{Work, WorkSink};

/// Which flush entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushKind {
    /// A reader's flush (`memory.stat`): threshold-guarded, per the policy's
    /// threshold rule, scope and concurrency.
    Read,
    /// Always flush the group's subtree (zswap's `do_flush_stats`, removal).
    Forced,
    /// Read flush only if the last root flush is older than 2 periods
    /// (`mem_cgroup_flush_stats_ratelimited`).
    Ratelimited,
    /// The refault/reclaim path: whatever the policy's hot-path rule says.
    HotPath,
    /// The periodic flush: forced root flush (`flush_memcg_stats_dwork`).
    Periodic,
}

/// What the policy's hot-path (refault/reclaim) flush does for a group
/// ([`HierStats::hot_path_decision`](crate::HierStats::hot_path_decision)),
/// decided without doing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HotPathDecision {
    /// The policy never flushes on the hot path.
    NoFlush,
    /// The group's pending updates are under the threshold.
    NotNeeded,
    /// Ratelimited: the last root flush is not older than 2 periods.
    Ratelimited,
    /// Flush synchronously (a threshold-guarded read flush): the root or
    /// the group's subtree, per the policy's scope.
    Flush(FlushScope),
    /// Ask the background flusher to flush the root now.
    RequestAsync,
}

/// What a flush call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushOutcome {
    /// A subtree was flushed; `root` tells whether it was the whole tree.
    Flushed {
        /// The flushed subtree was the root's.
        root: bool,
    },
    /// Below the threshold: nothing to do.
    NotNeeded,
    /// Another flush was running and the policy skips.
    Skipped,
    /// Ratelimited: the periodic flusher is on time.
    Ratelimited,
    /// An asynchronous flush was requested instead.
    AsyncRequested,
    /// The policy's hot path does not flush.
    NoFlush,
}

/// Cumulative flush statistics of a tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlushStats {
    /// Flushes performed.
    pub flushes: u64,
    /// Of which root flushes.
    pub root_flushes: u64,
    /// Skipped because another flush ran.
    pub skipped: u64,
    /// Not needed (under threshold).
    pub not_needed: u64,
    /// Ratelimited.
    pub ratelimited: u64,
    /// Async requests.
    pub async_requests: u64,
    /// Flushes running at the time of the call (not cumulative).
    pub running: u64,
}

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
    fn record(&self, out: FlushOutcome) {
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

/// How long a flush waits for a conflicting one (see `Core::enter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
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

/// What a flush took from the threshold accounting, to give back once the
/// aggregates hold what it stood for ([`Core::hand_over`]).
#[derive(Default)]
struct Handover {
    /// Per group id of the subtree the flush took something of.
    groups: IdMap<Taken>,
    /// Global threshold, root flush: the tree's count and in-flight pages
    /// at the start.
    global: Option<(u64, u64)>,
    /// Global threshold: residue pages this flush took.
    global_taken: u64,
    /// The residues a global pass read (kept between passes).
    scratch: Vec<u64>,
}

/// One group's part of a [`Handover`]. Holds the group's state itself:
/// under a per-pass gate the structure lock is dropped between passes, and
/// an id could be recycled meanwhile (not this one: the `Arc` keeps it a
/// zombie).
struct Taken {
    group: Arc<GroupState>,
    /// Count and reservations at the snapshot, if the group was on a tree
    /// then.
    snapshot: Option<(u64, u64)>,
    /// Residue pages moved into `group.in_flight`.
    in_flight: u64,
}

impl Handover {
    /// Records the snapshot of every group of `ids` not recorded yet.
    fn snapshot(&mut self, st: &Structure, ids: &[u32]) {
        // One allocation, not one per doubling.
        self.groups.reserve(ids.len());
        for &id in ids {
            let t = self.groups.entry(id).or_insert_with(|| Taken {
                group: st.group(id).clone(),
                snapshot: None,
                in_flight: 0,
            });
            if t.snapshot.is_none() {
                // ORDERING: Relaxed; see `flush_subtree` (its fence after
                // the snapshot phase) and `hand_over`.
                t.snapshot = Some((
                    t.group.updates.snapshot(),
                    t.group.reserved.load(Ordering::Relaxed),
                ));
            }
        }
    }

    /// Records `pages` moved into the in-flight count of group `id`.
    fn in_flight(&mut self, st: &Structure, id: u32, pages: u64) {
        self.groups
            .entry(id)
            .or_insert_with(|| Taken {
                group: st.group(id).clone(),
                snapshot: None,
                in_flight: 0,
            })
            .in_flight += pages;
    }
}

impl Core {
    /// Any flush entry point (see `HierStats`'s flush methods), counted in
    /// the statistics; a root flush then reaps what it can.
    pub(crate) fn flush<W: WorkSink>(
        &self,
        g: &Arc<GroupState>,
        kind: FlushKind,
        work: &mut W,
    ) -> FlushOutcome {
        let out = self.flush_entry(g, kind, work);
        self.flushes.record(out);
        if matches!(out, FlushOutcome::Flushed { root: true }) {
            self.reap_if_any();
        }
        out
    }

    /// Whether a threshold-guarded read flush of `g` would flush.
    pub(crate) fn needs_flush(&self, g: &GroupState) -> bool {
        let (policy, threshold) = (&self.params.policy, self.params.threshold);
        // ORDERING: Relaxed (here and in `Count::pages`); flush triggers
        // publish no data.
        match policy.threshold {
            ThresholdRule::None => true,
            ThresholdRule::Global => self.global.count().pages() > threshold,
            ThresholdRule::PerGroup => {
                let mut u = g.updates.pages();
                if policy.strict_bound {
                    u = u.saturating_add(g.reserved.load(Ordering::Relaxed));
                }
                u > threshold
            }
        }
    }

    fn ratelimit_expired(&self) -> bool {
        let last = self.flushes.last_root_flush_ns();
        let period = self.params.policy.period_ns;
        self.params.clock.now_ns() > last.saturating_add(period.saturating_mul(2))
    }

    /// The one definition of the hot-path rule (`flush_entry`'s
    /// `FlushKind::HotPath` and `HierStats::hot_path_decision`); reads
    /// only, and only what the policy's rule needs.
    pub(crate) fn hot_path_decision(
        &self,
        g: &GroupState,
        flusher_running: bool,
    ) -> HotPathDecision {
        let flush = || {
            if self.needs_flush(g) {
                HotPathDecision::Flush(self.params.policy.scope)
            } else {
                HotPathDecision::NotNeeded
            }
        };
        match self.params.policy.hot_path {
            HotPathFlush::None => HotPathDecision::NoFlush,
            HotPathFlush::Sync => flush(),
            HotPathFlush::Ratelimited => {
                if self.ratelimit_expired() {
                    flush()
                } else {
                    HotPathDecision::Ratelimited
                }
            }
            HotPathFlush::Async => match flush() {
                HotPathDecision::Flush(_) if flusher_running => HotPathDecision::RequestAsync,
                // No background flusher to ask: flush synchronously.
                d => d,
            },
        }
    }

    fn flush_entry<W: WorkSink>(
        &self,
        g: &Arc<GroupState>,
        kind: FlushKind,
        work: &mut W,
    ) -> FlushOutcome {
        match kind {
            FlushKind::Forced => {
                self.flush_forced_blocking(g, work);
                FlushOutcome::Flushed {
                    root: g.hot.parent.is_none(),
                }
            }
            FlushKind::Periodic => {
                let root = self.groups.root().clone();
                self.flush_forced_blocking(&root, work);
                FlushOutcome::Flushed { root: true }
            }
            FlushKind::Read => self.flush_read(g, work),
            FlushKind::Ratelimited => {
                if self.ratelimit_expired() {
                    self.flush_read(g, work)
                } else {
                    FlushOutcome::Ratelimited
                }
            }
            FlushKind::HotPath => {
                match self.hot_path_decision(g, self.requests.flusher_running()) {
                    HotPathDecision::NoFlush => FlushOutcome::NoFlush,
                    HotPathDecision::NotNeeded => FlushOutcome::NotNeeded,
                    HotPathDecision::Ratelimited => FlushOutcome::Ratelimited,
                    HotPathDecision::Flush(_) => self.flush_read(g, work),
                    HotPathDecision::RequestAsync => {
                        self.requests.request();
                        FlushOutcome::AsyncRequested
                    }
                }
            }
        }
    }

    /// Threshold-guarded flush with the policy's scope and concurrency.
    fn flush_read<W: WorkSink>(&self, g: &Arc<GroupState>, work: &mut W) -> FlushOutcome {
        if !self.needs_flush(g) {
            return FlushOutcome::NotNeeded;
        }
        let policy = &self.params.policy;
        let target = match policy.scope {
            FlushScope::Root => self.groups.root().clone(),
            FlushScope::Subtree => g.clone(),
        };
        let wait = match policy.concurrency {
            Concurrency::Skip => Wait::No,
            Concurrency::WaitOngoing { max_wait_ms } => {
                Wait::AtMost(std::time::Duration::from_millis(u64::from(max_wait_ms)))
            }
            Concurrency::Serialize | Concurrency::DisjointParallel => Wait::Block,
        };
        match self.enter(&target, wait, work) {
            // `WaitOngoing`: the flush it waited for usually did its work.
            Some((_, true)) if matches!(wait, Wait::AtMost(_)) && !self.needs_flush(g) => {
                FlushOutcome::NotNeeded
            }
            Some((gate, _)) => {
                self.flush_subtree(&target, &gate, work);
                FlushOutcome::Flushed {
                    root: target.hot.parent.is_none(),
                }
            }
            None => FlushOutcome::Skipped,
        }
    }

    /// Forced flush of `g`'s subtree, waiting for any conflicting flush.
    pub(crate) fn flush_forced_blocking<W: WorkSink>(&self, g: &Arc<GroupState>, work: &mut W) {
        let (gate, _) = self
            .enter(g, Wait::Block, work)
            .expect("a blocking gate entry always succeeds");
        self.flush_subtree(g, &gate, work);
    }

    /// Excludes every flush (for `verify`).
    pub(crate) fn enter_for_verify(&self) -> (Gate<'_>, Option<Ranked<MutexGuard<'_, ()>>>) {
        let root = self.groups.root().clone();
        let (gate, _) = self
            .enter(&root, Wait::Block, &mut ())
            .expect("blocking entry succeeds");
        // A per-pass gate does not hold the flush lock between passes.
        let extra = matches!(gate, Gate::PerPass)
            .then(|| Ranked::take(Rank::Gate, || lock(&self.flushes.lock)));
        (gate, extra)
    }

    /// Takes the exclusion a flush of `target` needs, waiting for a
    /// conflicting flush as `wait` says; `None` if it did not get it (only
    /// with [`Wait::No`] or [`Wait::AtMost`]). The flag tells whether it
    /// waited.
    fn enter<W: WorkSink>(
        &self,
        target: &Arc<GroupState>,
        wait: Wait,
        work: &mut W,
    ) -> Option<(Gate<'_>, bool)> {
        let policy = &self.params.policy;
        let f = &self.flushes;
        match policy.concurrency {
            Concurrency::Skip | Concurrency::Serialize | Concurrency::WaitOngoing { .. } => {
                if policy.concurrency == Concurrency::Serialize && policy.lock_per_shard {
                    return Some((Gate::PerPass, false));
                }
                let held = ranked(Rank::Gate);
                if let Ok(g) = f.lock.try_lock() {
                    work.count(Work::LockAcquired, 1);
                    return Some((Gate::Whole(Ranked::with(g, held)), false));
                }
                let g = match wait {
                    Wait::No => return None,
                    Wait::Block => lock(&f.lock),
                    Wait::AtMost(d) => {
                        let deadline = std::time::Instant::now() + d;
                        loop {
                            if let Ok(g) = f.lock.try_lock() {
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
                // Reported after the registry's lock is released: a work
                // sink may do anything, updates included (whose first
                // touch of a shard takes a lock, see `sync::Rank`).
                if waited {
                    work.count(Work::LockWaited, 1);
                }
                work.count(Work::LockAcquired, 1);
                Some((Gate::Registered(f, target.clone(), held), waited))
            }
        }
    }

    /// The flush proper; the caller holds `gate`.
    ///
    /// With a per-group threshold, a *snapshot phase* first drains every
    /// shard's update list into its dirty tree and records the threshold
    /// count and reservations of every group of the subtree on a tree. Then
    /// one *pass* per shard moves the subtree's counters into the
    /// aggregates, children before parents. Last, the flush hands back what
    /// it took from the threshold accounting (see the module docs, "What a
    /// flush hands over").
    ///
    /// Counts are reset *exactly*: by the snapshot, not to zero. Magnitude
    /// counted before the snapshot belongs to (group, shard) pairs that are
    /// on the trees or queued, hence flushed by the passes; magnitude
    /// counted after it stays. (The kernel simply zeroes the counter at each
    /// visit, which can forget concurrent updates.)
    ///
    /// Lock order (see `sync::Rank`): under a per-pass gate, each pass takes
    /// the flush lock, then the structure lock, then the shard's tree;
    /// otherwise the gate is already held and the structure lock is taken
    /// once for the whole flush.
    fn flush_subtree<W: WorkSink>(&self, x: &Arc<GroupState>, gate: &Gate<'_>, work: &mut W) {
        let _flushing = FlushingGuard::enter(&self.flushes);
        let is_root = x.hot.parent.is_none();
        if is_root {
            // ORDERING: Relaxed; a timestamp (the kernel records the start).
            self.flushes
                .last_root
                .store(self.params.clock.now_ns(), Ordering::Relaxed);
        }
        let per_pass = matches!(gate, Gate::PerPass);
        let whole = (!per_pass).then(|| self.groups.read());
        let parent_id = x.parent_id();
        let threshold = self.params.policy.threshold;
        let mut hand = Handover::default();
        if is_root && threshold == ThresholdRule::Global {
            hand.global = Some((
                self.global.count().snapshot(),
                self.global.in_flight_snapshot(),
            ));
        }
        let mut list = Vec::new();
        if threshold == ThresholdRule::PerGroup {
            for s in 0..self.params.shards {
                let _pass = self.pass_lock(gate, work);
                let pass_st = per_pass.then(|| self.groups.read());
                let st: &Structure = whole.as_deref().or(pass_st.as_deref()).expect("one is set");
                let mut tree = self.dirty.tree(s);
                self.drain(s, st, &mut tree, false, work);
                list.clear();
                tree.collect(x.hot.id, &mut list);
                hand.snapshot(st, &list);
            }
            // Orders the snapshots before the passes' drains: an update
            // whose header RMW one of those drains reads (it found its pair
            // drained, and claimed it again) reads counts no older than the
            // snapshots (its RMW acquires: see `Header::add_residue`), so a
            // count it found above the break level was still there at the
            // snapshot or later, which the reset sees (see `count.rs`).
            // The same fence orders this flush's count in `flushing`
            // before its drains, for owners that skip a fold (see
            // `FlushingGuard`).
            crate::sync::fence_seqcst();
        }
        // Kernel-exact: a residue counts its descendants' updates, so a pass
        // takes it before its drain (see below).
        let take_first = self.params.walks_ancestors;
        for s in 0..self.params.shards {
            let _pass = self.pass_lock(gate, work);
            let pass_st = per_pass.then(|| self.groups.read());
            let st: &Structure = whole.as_deref().or(pass_st.as_deref()).expect("one is set");
            work.count(Work::ShardScanned, 1);
            list.clear();
            {
                let mut tree = self.dirty.tree(s);
                work.count(Work::LockAcquired, 1);
                if take_first {
                    // Kernel-exact: a residue counts its descendants'
                    // updates too, so it is taken *before* the drain. Every
                    // update it counts added to it (a Release RMW) after
                    // queueing its row; the fence acquires those, so the
                    // drain below finds every such row (waiting for a claim
                    // still pushing), and the pass carries what was taken.
                    tree.collect(x.hot.id, &mut list);
                    let rows = rows_of(st, s, &list);
                    self.take_residues(st, &list, &rows, &mut hand, work);
                    list.clear();
                    crate::sync::fence_acquire();
                }
                self.drain(s, st, &mut tree, true, work);
                tree.extract(x.hot.id, parent_id, &mut list);
            }
            // Each listed group's row on the shard, looked up once for the
            // pass (a group on the tree for a descendant's sake may have
            // none: it was never written on the shard).
            let rows = rows_of(st, s, &list);
            if !take_first {
                // A residue that counts only its own row's updates: taken
                // after the drain, before the counters are read (an update
                // whose residue survives is either not flushed yet, and
                // still counted, or flushed anyway, over-counted).
                self.take_residues(st, &list, &rows, &mut hand, work);
            }
            if !list.is_empty() {
                self.writers.barrier_before_reading(s, work);
            }
            for (&id, &row) in list.iter().zip(&rows) {
                self.aggregate(st.group(id), row, work);
            }
        }
        drop(whole);
        self.hand_over(hand, work);
    }

    /// Takes the shared residues of the groups `ids` on shard `s` (as the
    /// kernel zeroes its per-CPU `stats_updates`). What a residue held
    /// stays visible to the bound until the flush lands it (see the module
    /// docs, "What a flush hands over"): in the pair's reservation, which
    /// only the hand-over releases (folded scheme: the residue is simply
    /// zeroed), or in an in-flight count, the group's (kernel-exact) or the
    /// tree's (global threshold).
    ///
    /// An in-flight count is raised *before* the residue drops: the flush
    /// reads each residue, adds what it read to the in-flight count, then
    /// subtracts from the residue at most what it announced (pages added
    /// meanwhile stay in the residue). The subtraction is Release and every
    /// residue RMW of the updaters acquires (see `header.rs`): an update
    /// that finds a residue the flush took from, and a read after it, see
    /// the pages in flight. (loom: zeroing first fails
    /// `a_read_during_a_flush_is_bounded_kernel_exact`.)
    fn take_residues<W: WorkSink>(
        &self,
        st: &Structure,
        ids: &[u32],
        rows: &[Option<Row<'_>>],
        hand: &mut Handover,
        work: &mut W,
    ) {
        // A group without a row on the shard has nothing to take.
        let headers = || {
            ids.iter()
                .zip(rows)
                .filter_map(|(&id, r)| Some((id, r.as_ref()?.header())))
        };
        work.count(Work::Atomic, ids.len() as u64);
        let global = self.params.policy.threshold == ThresholdRule::Global;
        if self.params.walks_ancestors {
            for (id, h) in headers() {
                // The fence that follows the takes (the acquire fence
                // before a kernel-exact drain) acquires the release
                // sequence this load read, as for the take below.
                let r = h.residue();
                if r != 0 {
                    // ORDERING: Relaxed; sequenced before the Release take
                    // below, which publishes it.
                    st.group(id).in_flight.fetch_add(r, Ordering::Relaxed);
                    work.count(Work::Atomic, 2);
                    hand.in_flight(st, id, r);
                    h.take_at_most(r);
                }
            }
        } else if global {
            let read_now = &mut hand.scratch;
            read_now.clear();
            // The pass's `SeqCst` fence in `barrier_before_reading`
            // acquires the release sequences these loads read.
            read_now.extend(rows.iter().map(|r| r.map_or(0, |r| r.header().residue())));
            let amounts: u64 = read_now.iter().sum();
            if amounts == 0 {
                return;
            }
            self.global.announce(amounts);
            work.count(Work::Atomic, 1);
            hand.global_taken += amounts;
            for (row, &r) in rows.iter().zip(read_now.iter()) {
                if let (true, Some(row)) = (r != 0, row) {
                    work.count(Work::Atomic, 1);
                    row.header().take_at_most(r);
                }
            }
        } else {
            for (_, h) in headers() {
                h.clear_residue();
            }
        }
    }

    /// Gives back what the flush took from the threshold accounting, now
    /// that the aggregates hold what it stood for: each snapshotted count
    /// and reservation is reset by its snapshot, each in-flight amount is
    /// released. ORDERING: Release for every write, after the passes'
    /// aggregate writes: a bound that reads the smaller count (Acquire)
    /// then reads the aggregate with what was carried.
    fn hand_over<W: WorkSink>(&self, hand: Handover, work: &mut W) {
        let break_above = self.params.break_above;
        for t in hand.groups.into_values() {
            let n = &t.group;
            if let Some((u0, r0)) = t.snapshot {
                // A zero snapshot resets nothing; it still clears or sets
                // the count's flag (see `count.rs`), unless nothing would
                // change.
                let now = n.updates.for_bound();
                if u0 != 0 || now.uncounted() || now.pages() > break_above {
                    n.updates.reset(u0, break_above);
                    work.count(Work::Atomic, 1);
                }
                if r0 != 0 {
                    let _ = n
                        .reserved
                        .fetch_update(Ordering::Release, Ordering::Relaxed, |v| {
                            Some(v.saturating_sub(r0))
                        });
                    work.count(Work::Atomic, 1);
                }
            }
            if t.in_flight != 0 {
                n.in_flight.fetch_sub(t.in_flight, Ordering::Release);
                work.count(Work::Atomic, 1);
            }
        }
        // A root flush lands every page in flight (subtree flushes under a
        // global threshold leave theirs in their parents' `pending`, which
        // only a root flush brings to the root).
        if let Some((g0, i0)) = hand.global {
            self.global.hand_over(g0, i0 + hand.global_taken);
            work.count(Work::Atomic, 2);
        }
    }

    /// The flush lock for one pass, when the gate takes it per pass.
    fn pass_lock<W: WorkSink>(
        &self,
        gate: &Gate<'_>,
        work: &mut W,
    ) -> Option<Ranked<MutexGuard<'_, ()>>> {
        match gate {
            Gate::PerPass => {
                work.count(Work::LockAcquired, 1);
                Some(Ranked::take(Rank::Gate, || lock(&self.flushes.lock)))
            }
            _ => None,
        }
    }

    /// Moves shard `s`'s update list into its dirty tree (see
    /// `Dirty::drain_into`).
    fn drain<W: WorkSink>(
        &self,
        s: usize,
        st: &Structure,
        tree: &mut DirtyTree,
        wait_claims: bool,
        work: &mut W,
    ) {
        self.dirty.drain_into(
            s,
            tree,
            wait_claims,
            |id| {
                // A queued row exists: its claim queued it.
                st.group(id)
                    .hot
                    .rows
                    .header(s)
                    .expect("a queued row exists")
            },
            |id| st.parent_id(id),
            work,
        );
    }

    /// Folds group `n`'s counters on one shard (its `row` there, if any)
    /// into the aggregates.
    ///
    /// Every sum is checked: a change that does not fit `i64`, or an
    /// aggregate it would take out of `i64`, saturates the item in the group
    /// and its ancestors (see `saturation.rs`), whose aggregates the flushes
    /// then pin at the limit.
    fn aggregate<W: WorkSink>(&self, n: &GroupState, row: Option<Row<'_>>, work: &mut W) {
        work.count(Work::GroupVisited, 1);
        let slots = self.params.schema.slots();
        // A group on the shard's dirty tree for a descendant's sake may
        // have no row there (it was never written on the shard): its cells
        // are zero, and only its children's deltas move.
        let view = row.map(|r| r.flush_view());
        let cells = view.map(|v| v.cells);
        let shared_cells = view.and_then(|v| v.shared);
        let mut prev = view.and_then(|v| v.prev);
        let pending = n.pending();
        let parent = n.hot.parent.as_deref();
        let parent_pending = parent.map(|p| p.pending_for_children(slots));
        // Almost always `None`: one flag load.
        let saturated = self.saturation.slots_of(n);
        // Every array below has one word per slot (lets the compiler drop
        // most per-index bounds checks).
        let (local, agg) = (&n.local[..slots], &n.agg[..slots]);
        work.count(Work::CounterAggregated, slots as u64);
        let mut atomics = 0;
        for k in 0..slots {
            // The owner cell: `delta = cur − prev` against the flushers'
            // own snapshot; the owner's line is only read. Both are the
            // shard's running sums, kept within `i64` by the update path.
            // ORDERING: Relaxed for every access below. The owner cell's
            // latest value is visible after the pass's barrier (see
            // `barrier_before_reading`), the shared cell's after the pass's
            // `SeqCst` fence (same place); a write that lands later is
            // either carried now or queues its row again. `prev`, `agg` and
            // `local` are written by flushers of this group only, one at a
            // time (overlapping flushes exclude each other), and handed
            // over through their locks; `pending` is a plain sum whose
            // RMWs are totally ordered per location.
            let cur = cells.map_or(0, |c| c[k].load(Ordering::Relaxed) as i64);
            let before = prev.map_or(0, |p| p[k].load(Ordering::Relaxed) as i64);
            if cur != before {
                let row = row.expect("a non-zero owner cell has a row");
                prev.get_or_insert_with(|| row.prev_cells())[k]
                    .store(cur as u64, Ordering::Relaxed);
            }
            let shared = match shared_cells {
                Some(sh) if sh[k].load(Ordering::Relaxed) != 0 => {
                    atomics += 1;
                    sh[k].swap(0, Ordering::Relaxed) as i64
                }
                _ => 0,
            };
            let from_children = match pending.map(|ps| &ps[k]) {
                Some(p) if p.load(Ordering::Relaxed) != 0 => {
                    atomics += 1;
                    p.swap(0, Ordering::Relaxed)
                }
                _ => 0,
            };
            if let Some(dir) = saturated.as_ref().and_then(|sat| sat.get(k)) {
                // Pinned, whether or not this pass carries anything (an
                // ancestor is marked before any change reaches it).
                // ORDERING: Release; pairs with the bound's Acquire load of
                // the aggregate, before its look at the saturation flag.
                agg[k].store(dir.limit(), Ordering::Release);
                continue;
            }
            // This shard's own change, and with the children's: exact in
            // `i64` unless a sum overflows, then decided in `i128`.
            let (own, o1) = cur.overflowing_sub(before);
            let (own, o2) = own.overflowing_add(shared);
            let (delta, o3) = own.overflowing_add(from_children);
            let (own, delta) = if o1 | o2 | o3 {
                let own = i128::from(cur) - i128::from(before) + i128::from(shared);
                let delta = own + i128::from(from_children);
                match (i64::try_from(own), i64::try_from(delta)) {
                    (Ok(own), Ok(delta)) => (own, delta),
                    _ => {
                        self.pin(n, k, Direction::of(delta));
                        continue;
                    }
                }
            } else {
                (own, delta)
            };
            if own == 0 && delta == 0 {
                continue;
            }
            if own != 0 {
                match local[k].load(Ordering::Relaxed).checked_add(own) {
                    Some(v) => local[k].store(v, Ordering::Relaxed),
                    None => {
                        self.pin(n, k, Direction::of(i128::from(own)));
                        continue;
                    }
                }
            }
            if delta != 0 {
                match agg[k].load(Ordering::Relaxed).checked_add(delta) {
                    Some(v) => agg[k].store(v, Ordering::Relaxed),
                    None => {
                        self.pin(n, k, Direction::of(i128::from(delta)));
                        continue;
                    }
                }
                if let (Some(pp), Some(p)) = (parent_pending, parent) {
                    let old = pp[k].fetch_add(delta, Ordering::Relaxed);
                    atomics += 1;
                    if old.checked_add(delta).is_none() {
                        self.saturate_towards(p, k, Direction::of(i128::from(delta)));
                    }
                }
            }
        }
        work.count(Work::Atomic, atomics);
    }

    /// Saturates slot `k` of `n` (and its ancestors) and pins its aggregate.
    #[cold]
    #[inline(never)]
    fn pin(&self, n: &GroupState, k: usize, dir: Direction) {
        self.saturate_towards(n, k, dir);
        // ORDERING: Release, as in `aggregate`.
        n.agg[k].store(dir.limit(), Ordering::Release);
    }
}

/// The row on shard `s` of each group of `ids`, if it has one.
fn rows_of<'a>(st: &'a Structure, s: usize, ids: &[u32]) -> Vec<Option<Row<'a>>> {
    ids.iter().map(|&id| st.group(id).hot.rows.row(s)).collect()
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
struct FlushingGuard<'a>(&'a AtomicU64);

impl<'a> FlushingGuard<'a> {
    fn enter(f: &'a Flushes) -> Self {
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
