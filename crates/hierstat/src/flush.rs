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
//! with the first non-zero cell it meets, see `slab.rs`) and reads the
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

use crate::count::COUNT_LIMIT;
use crate::error::Error;
use crate::group::Group;
use crate::node::Node;
use crate::policy::{Concurrency, FlushScope, HotPathFlush, ThresholdRule};
use crate::saturation::Direction;
use crate::slab::RESIDUE_MASK;
use crate::stats::{Core, HierStats};
use crate::sync::{
    lock, lock_tree, ranked, Arc, AtomicU64, Held, MutexGuard, Ordering, Rank, Ranked,
};
use crate::tree::Structure;
use crate::updated::{drain_next, RowMap, ShardTree};
use crate::work::{Work, WorkSink};

/// Which flush entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
/// ([`HierStats::hot_path_decision`]), decided without doing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    Registered(&'a Core, Arc<Node>, #[allow(dead_code)] Held),
}

impl Drop for Gate<'_> {
    fn drop(&mut self) {
        if let Gate::Registered(core, node, _) = self {
            let _leaf = ranked(Rank::Leaf);
            let mut active = lock(&core.active);
            if let Some(i) = active.iter().position(|n| Arc::ptr_eq(n, node)) {
                active.swap_remove(i);
            }
            core.active_cv.notify_all();
        }
    }
}

/// What a flush took from the threshold accounting, to give back once the
/// aggregates hold what it stood for ([`Core::hand_over`]).
#[derive(Default)]
struct Handover {
    /// Per row of the subtree the flush took something of.
    groups: RowMap<Taken>,
    /// Global threshold, root flush: the tree's count and in-flight pages
    /// at the start.
    global: Option<(u64, u64)>,
    /// Global threshold: residue pages this flush took.
    global_taken: u64,
    /// The residues a global pass read (kept between passes).
    scratch: Vec<u64>,
}

/// One group's part of a [`Handover`]. Holds the node itself: under a
/// per-pass gate the structure lock is dropped between passes, and a row
/// could be recycled meanwhile (not this one: the `Arc` keeps it a zombie).
struct Taken {
    node: Arc<Node>,
    /// Count and reservations at the snapshot, if the group was on a tree
    /// then.
    snapshot: Option<(u64, u64)>,
    /// Residue pages moved into `node.in_flight`.
    in_flight: u64,
}

impl Handover {
    /// Records the snapshot of every group of `rows` not recorded yet.
    fn snapshot(&mut self, st: &Structure, rows: &[u32]) {
        // One allocation, not one per doubling.
        self.groups.reserve(rows.len());
        for &row in rows {
            let t = self.groups.entry(row).or_insert_with(|| Taken {
                node: st.node(row).clone(),
                snapshot: None,
                in_flight: 0,
            });
            if t.snapshot.is_none() {
                // ORDERING: Relaxed; see `flush_subtree` (its fence after
                // the snapshot phase) and `hand_over`.
                t.snapshot = Some((
                    t.node.updates.snapshot(),
                    t.node.reserved.load(Ordering::Relaxed),
                ));
            }
        }
    }

    /// Records `pages` moved into the in-flight count of `row`'s group.
    fn in_flight(&mut self, st: &Structure, row: u32, pages: u64) {
        self.groups
            .entry(row)
            .or_insert_with(|| Taken {
                node: st.node(row).clone(),
                snapshot: None,
                in_flight: 0,
            })
            .in_flight += pages;
    }
}

/// Every flush entry point fails only for a group of another tree
/// ([`Error::ForeignGroup`]), and then does nothing.
impl HierStats {
    /// The policy's read-side flush of `group` (threshold-guarded).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_with(group, FlushKind::Read, &mut ())
    }

    /// Flushes `group`'s subtree regardless of thresholds; waits for a
    /// running flush even under the skip policy.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush_forced(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_with(group, FlushKind::Forced, &mut ())
    }

    /// The ratelimited flush (see [`FlushKind::Ratelimited`]).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush_ratelimited(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_with(group, FlushKind::Ratelimited, &mut ())
    }

    /// The hot-path (refault/reclaim) flush of the policy.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush_hot_path(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_with(group, FlushKind::HotPath, &mut ())
    }

    /// What [`HierStats::flush_hot_path`] would do for `group` now, without
    /// doing it: the policy's hot-path rule applied to the group's
    /// threshold, the ratelimit and whether a background flusher runs.
    ///
    /// ```
    /// use hierstat::{Config, FlushScope, HierStats, HotPathDecision, Preset, Schema, Unit};
    ///
    /// let mut b = Schema::builder();
    /// let anon = b.state("anon", Unit::Pages);
    /// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat))?;
    /// let g = stats.create(&stats.root(), "g")?;
    /// assert_eq!(stats.hot_path_decision(&g)?, HotPathDecision::NotNeeded);
    /// stats.add(&g, anon, 1 << 20)?;
    /// // Async hot path, but no background flusher: flush synchronously.
    /// assert_eq!(stats.hot_path_decision(&g)?, HotPathDecision::Flush(FlushScope::Subtree));
    /// assert_eq!(
    ///     stats.hot_path_decision_with_flusher(&g, true)?,
    ///     HotPathDecision::RequestAsync
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn hot_path_decision(&self, group: &Group) -> Result<HotPathDecision, Error> {
        let node = self.core.own(group)?;
        Ok(self
            .core
            .hot_path_decision(node, self.core.flusher_running()))
    }

    /// [`HierStats::hot_path_decision`] for a caller that runs the periodic
    /// flush itself (a simulator's flusher in virtual time) and so says
    /// whether one is running instead of the engine's own flusher thread.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn hot_path_decision_with_flusher(
        &self,
        group: &Group,
        flusher_running: bool,
    ) -> Result<HotPathDecision, Error> {
        let node = self.core.own(group)?;
        Ok(self.core.hot_path_decision(node, flusher_running))
    }

    /// Any flush entry point, reporting work.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush_with<W: WorkSink>(
        &self,
        group: &Group,
        kind: FlushKind,
        work: &mut W,
    ) -> Result<FlushOutcome, Error> {
        let node = self.core.own(group)?;
        let out = self.core.flush_entry(node, kind, work);
        let c = &self.core.flush_stats;
        // ORDERING: Relaxed; statistics.
        let field = match out {
            FlushOutcome::Flushed { root } => {
                if root {
                    c.root_flushes.fetch_add(1, Ordering::Relaxed);
                }
                &c.flushes
            }
            FlushOutcome::NotNeeded | FlushOutcome::NoFlush => &c.not_needed,
            FlushOutcome::Skipped => &c.skipped,
            FlushOutcome::Ratelimited => &c.ratelimited,
            FlushOutcome::AsyncRequested => &c.async_requests,
        };
        field.fetch_add(1, Ordering::Relaxed);
        if matches!(out, FlushOutcome::Flushed { root: true }) {
            self.reap_if_any();
        }
        Ok(out)
    }

    fn reap_if_any(&self) {
        if !self.core.read_structure().zombies.is_empty() {
            self.reap();
        }
    }

    /// Whether a threshold-guarded read flush of `group` would flush.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn needs_flush(&self, group: &Group) -> Result<bool, Error> {
        Ok(self.core.needs_flush(self.core.own(group)?))
    }

    /// Asks the background flusher to flush the root now; returns at once.
    pub fn request_async_flush(&self) {
        self.core.request_async();
    }

    /// Clock time (ns) at which the last root flush started.
    pub fn last_root_flush_ns(&self) -> u64 {
        // ORDERING: Relaxed; a timestamp.
        self.core.last_root_flush.load(Ordering::Relaxed)
    }

    /// Cumulative flush statistics.
    pub fn flush_stats(&self) -> FlushStats {
        let c = &self.core.flush_stats;
        // ORDERING: Relaxed; statistics.
        FlushStats {
            flushes: c.flushes.load(Ordering::Relaxed),
            root_flushes: c.root_flushes.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            not_needed: c.not_needed.load(Ordering::Relaxed),
            ratelimited: c.ratelimited.load(Ordering::Relaxed),
            async_requests: c.async_requests.load(Ordering::Relaxed),
            running: self.core.flushing.0.load(Ordering::Relaxed),
        }
    }
}

impl Core {
    pub(crate) fn needs_flush(&self, node: &Node) -> bool {
        // ORDERING: Relaxed (here and in `Count::pages`); flush triggers
        // publish no data.
        match self.policy.threshold {
            ThresholdRule::None => true,
            ThresholdRule::Global => self.global_updates.pages() > self.threshold,
            ThresholdRule::PerGroup => {
                let mut u = node.updates.pages();
                if self.policy.strict_bound {
                    u = u.saturating_add(node.reserved.load(Ordering::Relaxed));
                }
                u > self.threshold
            }
        }
    }

    pub(crate) fn request_async(&self) {
        // ORDERING: Release; pairs with the background flusher's Acquire
        // swap, though nothing but the flag itself is communicated.
        self.async_requested.store(true, Ordering::Release);
        let _leaf = ranked(Rank::Leaf);
        let mut g = lock(&self.wake);
        *g += 1;
        self.wake_cv.notify_all();
    }

    fn ratelimit_expired(&self) -> bool {
        // ORDERING: Relaxed; a timestamp.
        let last = self.last_root_flush.load(Ordering::Relaxed);
        self.clock.now_ns() > last.saturating_add(self.policy.period_ns.saturating_mul(2))
    }

    fn flusher_running(&self) -> bool {
        // ORDERING: Relaxed; a mode hint. A flusher stopping concurrently
        // may leave one async request unserved; the next guarded read
        // flushes it.
        self.flushers.load(Ordering::Relaxed) > 0
    }

    /// The one definition of the hot-path rule (`flush_entry`'s
    /// `FlushKind::HotPath` and [`HierStats::hot_path_decision`]); reads
    /// only, and only what the policy's rule needs.
    fn hot_path_decision(&self, node: &Node, flusher_running: bool) -> HotPathDecision {
        let flush = || {
            if self.needs_flush(node) {
                HotPathDecision::Flush(self.policy.scope)
            } else {
                HotPathDecision::NotNeeded
            }
        };
        match self.policy.hot_path {
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
        node: &Arc<Node>,
        kind: FlushKind,
        work: &mut W,
    ) -> FlushOutcome {
        match kind {
            FlushKind::Forced => {
                self.flush_forced_blocking(node, work);
                FlushOutcome::Flushed {
                    root: node.hot.parent.is_none(),
                }
            }
            FlushKind::Periodic => {
                let root = self.root.clone();
                self.flush_forced_blocking(&root, work);
                FlushOutcome::Flushed { root: true }
            }
            FlushKind::Read => self.flush_read(node, work),
            FlushKind::Ratelimited => {
                if self.ratelimit_expired() {
                    self.flush_read(node, work)
                } else {
                    FlushOutcome::Ratelimited
                }
            }
            FlushKind::HotPath => match self.hot_path_decision(node, self.flusher_running()) {
                HotPathDecision::NoFlush => FlushOutcome::NoFlush,
                HotPathDecision::NotNeeded => FlushOutcome::NotNeeded,
                HotPathDecision::Ratelimited => FlushOutcome::Ratelimited,
                HotPathDecision::Flush(_) => self.flush_read(node, work),
                HotPathDecision::RequestAsync => {
                    self.request_async();
                    FlushOutcome::AsyncRequested
                }
            },
        }
    }

    /// Threshold-guarded flush with the policy's scope and concurrency.
    fn flush_read<W: WorkSink>(&self, node: &Arc<Node>, work: &mut W) -> FlushOutcome {
        if !self.needs_flush(node) {
            return FlushOutcome::NotNeeded;
        }
        let target = match self.policy.scope {
            FlushScope::Root => self.root.clone(),
            FlushScope::Subtree => node.clone(),
        };
        let wait = match self.policy.concurrency {
            Concurrency::Skip => Wait::No,
            Concurrency::WaitOngoing { max_wait_ms } => {
                Wait::AtMost(std::time::Duration::from_millis(u64::from(max_wait_ms)))
            }
            Concurrency::Serialize | Concurrency::DisjointParallel => Wait::Block,
        };
        match self.enter(&target, wait, work) {
            // `WaitOngoing`: the flush it waited for usually did its work.
            Some((_, true)) if matches!(wait, Wait::AtMost(_)) && !self.needs_flush(node) => {
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

    /// Forced flush of `node`'s subtree, waiting for any conflicting flush.
    pub(crate) fn flush_forced_blocking<W: WorkSink>(&self, node: &Arc<Node>, work: &mut W) {
        let (gate, _) = self
            .enter(node, Wait::Block, work)
            .expect("a blocking gate entry always succeeds");
        self.flush_subtree(node, &gate, work);
    }

    /// Excludes every flush (for `verify`).
    pub(crate) fn enter_for_verify(
        &self,
        root: &Arc<Node>,
    ) -> (Gate<'_>, Option<Ranked<MutexGuard<'_, ()>>>) {
        let (gate, _) = self
            .enter(root, Wait::Block, &mut ())
            .expect("blocking entry succeeds");
        // A per-pass gate does not hold the flush lock between passes.
        let extra = matches!(gate, Gate::PerPass)
            .then(|| Ranked::take(Rank::Gate, || lock(&self.flush_lock)));
        (gate, extra)
    }

    /// Takes the exclusion a flush of `target` needs, waiting for a
    /// conflicting flush as `wait` says; `None` if it did not get it (only
    /// with [`Wait::No`] or [`Wait::AtMost`]). The flag tells whether it
    /// waited.
    fn enter<W: WorkSink>(
        &self,
        target: &Arc<Node>,
        wait: Wait,
        work: &mut W,
    ) -> Option<(Gate<'_>, bool)> {
        match self.policy.concurrency {
            Concurrency::Skip | Concurrency::Serialize | Concurrency::WaitOngoing { .. } => {
                if self.policy.concurrency == Concurrency::Serialize && self.policy.lock_per_shard {
                    return Some((Gate::PerPass, false));
                }
                let held = ranked(Rank::Gate);
                if let Ok(g) = self.flush_lock.try_lock() {
                    work.count(Work::LockAcquired, 1);
                    return Some((Gate::Whole(Ranked::with(g, held)), false));
                }
                let g = match wait {
                    Wait::No => return None,
                    Wait::Block => lock(&self.flush_lock),
                    Wait::AtMost(d) => {
                        let deadline = std::time::Instant::now() + d;
                        loop {
                            if let Ok(g) = self.flush_lock.try_lock() {
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
                let _leaf = ranked(Rank::Leaf);
                let mut active = lock(&self.active);
                let overlaps = |a: &Vec<Arc<Node>>| {
                    a.iter().any(|n| {
                        n.is_ancestor_or_self_of(target) || target.is_ancestor_or_self_of(n)
                    })
                };
                let waited = overlaps(&active);
                if waited {
                    work.count(Work::LockWaited, 1);
                    while overlaps(&active) {
                        active = match self.active_cv.wait(active) {
                            Ok(g) => g,
                            Err(p) => p.into_inner(),
                        };
                    }
                }
                work.count(Work::LockAcquired, 1);
                active.push(target.clone());
                Some((Gate::Registered(self, target.clone(), held), waited))
            }
        }
    }

    /// The flush proper; the caller holds `gate`.
    ///
    /// With a per-group threshold, a *snapshot phase* first drains every
    /// shard's update list into its updated tree and records the threshold
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
    fn flush_subtree<W: WorkSink>(&self, x: &Arc<Node>, gate: &Gate<'_>, work: &mut W) {
        let _flushing = FlushingGuard::enter(self);
        let is_root = x.hot.parent.is_none();
        if is_root {
            // ORDERING: Relaxed; a timestamp (the kernel records the start).
            self.last_root_flush
                .store(self.clock.now_ns(), Ordering::Relaxed);
        }
        let per_pass = matches!(gate, Gate::PerPass);
        let whole = (!per_pass).then(|| self.read_structure());
        let parent_row = x.parent_row();
        let mut hand = Handover::default();
        if is_root && self.policy.threshold == ThresholdRule::Global {
            // ORDERING: Relaxed; the hand-over releases (see its docs).
            hand.global = Some((
                self.global_updates.snapshot(),
                self.global_in_flight.load(Ordering::Relaxed),
            ));
        }
        let mut list = Vec::new();
        if self.policy.threshold == ThresholdRule::PerGroup {
            for s in 0..self.shards {
                let _pass = self.pass_lock(gate, work);
                let pass_st = per_pass.then(|| self.read_structure());
                let st: &Structure = whole.as_deref().or(pass_st.as_deref()).expect("one is set");
                let mut tree = lock_tree(&self.trees[s]);
                self.drain(s, st, &mut tree, false, work);
                list.clear();
                tree.collect(x.hot.row, &mut list);
                hand.snapshot(st, &list);
            }
            // Orders the snapshots before the passes' drains: an update
            // whose header RMW one of those drains reads (it found its pair
            // drained, and claimed it again) reads counts no older than the
            // snapshots (its RMW acquires: see `Core::update`), so a count
            // it found above the break level was still there at the
            // snapshot or later, which the reset sees (see `count.rs`).
            // The same fence orders this flush's count in `flushing`
            // before its drains, for owners that skip a fold (see
            // `FlushingGuard`).
            crate::sync::fence_seqcst();
        }
        // Kernel-exact: a residue counts its descendants' updates, so a pass
        // takes it before its drain (see below).
        let take_first = self.walks_ancestors;
        for s in 0..self.shards {
            let _pass = self.pass_lock(gate, work);
            let pass_st = per_pass.then(|| self.read_structure());
            let st: &Structure = whole.as_deref().or(pass_st.as_deref()).expect("one is set");
            work.count(Work::ShardScanned, 1);
            list.clear();
            {
                let mut tree = lock_tree(&self.trees[s]);
                work.count(Work::LockAcquired, 1);
                if take_first {
                    // Kernel-exact: a residue counts its descendants'
                    // updates too, so it is taken *before* the drain. Every
                    // update it counts added to it (a Release RMW) after
                    // queueing its row; the fence acquires those, so the
                    // drain below finds every such row (waiting for a claim
                    // still pushing), and the pass carries what was taken.
                    tree.collect(x.hot.row, &mut list);
                    self.take_residues(s, st, &list, &mut hand, work);
                    list.clear();
                    crate::sync::fence_acquire();
                }
                self.drain(s, st, &mut tree, true, work);
                tree.extract(x.hot.row, parent_row, &mut list);
            }
            if !take_first {
                // A residue that counts only its own row's updates: taken
                // after the drain, before the counters are read (an update
                // whose residue survives is either not flushed yet, and
                // still counted, or flushed anyway, over-counted).
                self.take_residues(s, st, &list, &mut hand, work);
            }
            if !list.is_empty() {
                self.barrier_before_reading(s, work);
            }
            for &row in &list {
                self.aggregate(st.node(row), s, work);
            }
        }
        drop(whole);
        self.hand_over(hand, work);
    }

    /// Takes the shared residues of `rows` on shard `s` (as the kernel
    /// zeroes its per-CPU `stats_updates`). What a residue held stays
    /// visible to the bound until the flush lands it (see the module docs,
    /// "What a flush hands over"): in the pair's reservation, which only the
    /// hand-over releases (folded scheme: the residue is simply zeroed), or
    /// in an in-flight count, the group's (kernel-exact) or the tree's
    /// (global threshold).
    ///
    /// An in-flight count is raised *before* the residue drops: the flush
    /// reads each residue, adds what it read to the in-flight count, then
    /// subtracts from the residue at most what it announced (pages added
    /// meanwhile stay in the residue). The subtraction is Release and every
    /// residue RMW of the updaters acquires (see `Core::update`): an update
    /// that finds a residue the flush took from, and a read after it, see
    /// the pages in flight. (loom: zeroing first fails
    /// `a_read_during_a_flush_is_bounded_kernel_exact`.)
    fn take_residues<W: WorkSink>(
        &self,
        s: usize,
        st: &Structure,
        rows: &[u32],
        hand: &mut Handover,
        work: &mut W,
    ) {
        let header = |row: u32| st.node(row).hot.rows.header(s);
        work.count(Work::Atomic, rows.len() as u64);
        if self.policy.threshold == ThresholdRule::Global || self.walks_ancestors {
            // ORDERING: Relaxed loads; the fence that follows the takes
            // (the acquire fence before a kernel-exact drain, or the pass's
            // `SeqCst` fence in `barrier_before_reading`) acquires the
            // release sequences they read, as for the RMWs below.
            let read = |row: u32| header(row).load(Ordering::Relaxed) & RESIDUE_MASK;
            if self.walks_ancestors {
                for &row in rows {
                    let r = read(row);
                    if r != 0 {
                        // ORDERING: Relaxed; sequenced before the Release
                        // take below, which publishes it.
                        st.node(row).in_flight.fetch_add(r, Ordering::Relaxed);
                        work.count(Work::Atomic, 2);
                        hand.in_flight(st, row, r);
                        take_at_most(header(row), r);
                    }
                }
            } else {
                let read_now = &mut hand.scratch;
                read_now.clear();
                read_now.extend(rows.iter().map(|&row| read(row)));
                let amounts: u64 = read_now.iter().sum();
                if amounts == 0 {
                    return;
                }
                // ORDERING: Relaxed, as the group's count above.
                self.global_in_flight.fetch_add(amounts, Ordering::Relaxed);
                work.count(Work::Atomic, 1);
                hand.global_taken += amounts;
                for (&row, &r) in rows.iter().zip(read_now.iter()) {
                    if r != 0 {
                        work.count(Work::Atomic, 1);
                        take_at_most(header(row), r);
                    }
                }
            }
        } else {
            for &row in rows {
                // ORDERING: Relaxed. The pass's fence after this RMW
                // (`barrier_before_reading`) acquires the release sequence
                // it reads (every writer's Release header RMW before it),
                // so their counter writes are visible to the pass's reads,
                // including the `load() != 0` guards, which could otherwise
                // skip a non-zero counter (loom: removing the fence fails
                // `an_update_after_the_push_on_another_slot_is_flushed`).
                header(row).fetch_and(!RESIDUE_MASK, Ordering::Relaxed);
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
        for t in hand.groups.into_values() {
            let n = &t.node;
            if let Some((u0, r0)) = t.snapshot {
                // A zero snapshot resets nothing; it still clears or sets
                // the count's flag (see `count.rs`), unless nothing would
                // change.
                let now = n.updates.for_bound();
                if u0 != 0 || now.uncounted() || now.pages() > self.break_above {
                    n.updates.reset(u0, self.break_above);
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
            self.global_updates.reset(g0, COUNT_LIMIT);
            self.global_in_flight
                .fetch_sub(i0 + hand.global_taken, Ordering::Release);
            work.count(Work::Atomic, 2);
        }
    }

    /// After the pass has dequeued its rows and before it reads any cell: a
    /// `SeqCst` fence — which acquires the shared writers' Release header
    /// RMWs that the drain's clears read, and orders the owner-flag check
    /// (see `Core::claim_owned`) — then, if an owner ever wrote this tree
    /// on shard `s`, the heavy barrier (the flusher's half of the owner
    /// path's asymmetric barrier, see `update.rs`).
    fn barrier_before_reading<W: WorkSink>(&self, s: usize, work: &mut W) {
        crate::sync::fence_seqcst();
        // ORDERING: Relaxed, after the `SeqCst` fence: see `Core::claim_owned`.
        if self.owned[s].load(Ordering::Relaxed) {
            self.barriers.heavy();
            work.count(Work::Barrier, 1);
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
                Some(Ranked::take(Rank::Gate, || lock(&self.flush_lock)))
            }
            _ => None,
        }
    }

    /// Moves shard `s`'s update list into its updated tree; with
    /// `wait_claims`, first waits for claims in progress to push (see
    /// `ListHead`), so that no update that completed before the flush began
    /// is missed because another thread's push of its row was preempted.
    fn drain<W: WorkSink>(
        &self,
        s: usize,
        st: &Structure,
        tree: &mut ShardTree,
        wait_claims: bool,
        work: &mut W,
    ) {
        if wait_claims {
            self.lists[s].wait_for_claims();
        }
        let mut cur = self.lists[s].take_all();
        work.count(Work::Atomic, 1);
        while cur != 0 {
            let row = (cur - 1) as u32;
            let n = st.node(row);
            cur = drain_next(n.hot.rows.header(s), work);
            tree.insert(row, |r| st.parent_row(r));
        }
    }

    /// Folds group `n`'s counters on shard `s` into the aggregates.
    ///
    /// Every sum is checked: a change that does not fit `i64`, or an
    /// aggregate it would take out of `i64`, saturates the item in the group
    /// and its ancestors (see `saturation.rs`), whose aggregates the flushes
    /// then pin at the limit.
    fn aggregate<W: WorkSink>(&self, n: &Node, s: usize, work: &mut W) {
        work.count(Work::GroupVisited, 1);
        let rows = &n.hot.rows;
        let slots = self.schema.slots();
        let view = rows.flush_view(s);
        let mut prev = view.prev;
        let pending = n.pending();
        let parent = n.hot.parent.as_deref();
        let parent_pending = parent.map(|p| p.pending_for_children(slots));
        // Almost always `None`: one flag load.
        let saturated = self.saturated_slots(n);
        // Every array below has one word per slot (lets the compiler drop
        // most per-index bounds checks).
        let (local, agg) = (&n.local[..slots], &n.agg[..slots]);
        work.count(Work::CounterAggregated, slots as u64);
        let mut atomics = 0;
        for (k, cell) in view.cells[..slots].iter().enumerate() {
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
            let cur = cell.load(Ordering::Relaxed) as i64;
            let before = prev.map_or(0, |p| p[k].load(Ordering::Relaxed) as i64);
            if cur != before {
                prev.get_or_insert_with(|| rows.prev_cells(s))[k]
                    .store(cur as u64, Ordering::Relaxed);
            }
            let shared = match view.shared {
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
    fn pin(&self, n: &Node, k: usize, dir: Direction) {
        self.saturate_towards(n, k, dir);
        // ORDERING: Release, as in `aggregate`.
        n.agg[k].store(dir.limit(), Ordering::Release);
    }
}

/// Counts a flush in [`Core::flushing`] from before its first drain until
/// after its threshold reset (also when it unwinds).
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
    fn enter(core: &'a Core) -> Self {
        // ORDERING: Relaxed; the `SeqCst` fence that ends the snapshot
        // phase orders it (see the type's docs).
        core.flushing.0.fetch_add(1, Ordering::Relaxed);
        FlushingGuard(&core.flushing.0)
    }
}

impl Drop for FlushingGuard<'_> {
    fn drop(&mut self) {
        // ORDERING: Release; see the type's docs.
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// Subtracts at most `r` pages from the shared residue in header `hdr`
/// (`r` was announced in flight, see `Core::take_residues`); the residue
/// may have been folded meanwhile, and it never goes below zero.
fn take_at_most(hdr: &AtomicU64, r: u64) {
    // ORDERING: Release publishes the in-flight add sequenced before it to
    // every updater whose residue RMW reads this value (they acquire).
    let _ = hdr.fetch_update(Ordering::Release, Ordering::Relaxed, |h| {
        Some(h - (h & RESIDUE_MASK).min(r))
    });
}
