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
//! * flushes that overlap (a per-pass gate, `lock_per_shard`: linux-6.17)
//!   would each subtract a snapshot of the same pages; one of them holds
//!   each group's snapshot (and the global count's), the others leave it
//!   alone (`GroupState::hold_snapshot`; loom:
//!   `overlapping_flushes_subtract_one_snapshot` and
//!   `overlapping_root_flushes_subtract_one_global_snapshot` fail without
//!   the hold);
//! * a snapshot counts folds and reservations of rows the flush has not
//!   drained yet: a group is snapshotted once any row of its subtree is on
//!   a dirty tree, and its count holds the folds of every row below it,
//!   some of them pushed a moment ago, some taken off the trees by an
//!   earlier subtree flush. Each such fold or reservation was made after
//!   its row's push (or after acquiring the claim in progress that will
//!   push it), and is Release; the snapshot is followed by a `SeqCst`
//!   fence (per group) or is Acquire (a global threshold's root flush), so
//!   the passes' drains find every row the reset takes accounting from
//!   (issue #32: Relaxed, a root flush after a subtree flush counted a
//!   claim whose push its drain missed, and `/a` read `Some(0)` with the
//!   claim's pages missing until a later flush; see `Count::add`);
//! * a count above its break level (an early break, or its saturation)
//!   skips updates; a reset from there flags the count so that the bound
//!   is `None` until a reset from below (see `count.rs`).
//!
//! # A partial flush's opened groups
//!
//! A tolerance read's partial flush (see `within.rs`) leaves some subtrees
//! alone and *opens* their ancestors up to the flushed group: it aggregates
//! them, but their counts and reservations also hold the left subtrees'
//! updates, which it does not carry. Under the folded scheme, with the
//! subtree's flushes excluding each other (not a per-pass gate), it resets
//! each opened group `n` by its snapshot `u0(n)` *less* the counts `u(L)`
//! of the left groups below it, loaded after the snapshot phase's fence
//! (the same for reservations), so that `n`'s bound afterwards is what the
//! left subtrees hold plus what came since, as the planner assumed:
//!
//! * every fold (or reservation) of an update of a left subtree `L` that
//!   `u0(n)` counts was made in `L` first (the walks go up from the updated
//!   group), so the load of `u(L)` after the fence sees it, unless a flush
//!   covering `L` reset `L` before this flush entered its gate: that flush
//!   landed the update and pushed it to the `pending` of an opened group,
//!   which this flush absorbs. An owner skips folds of a count above the
//!   threshold while no flush runs; a left count found above the threshold
//!   (or flagged) may miss such a fold, and then no opened group is reset;
//! * every other fold or reservation `u0(n)` counts belongs to a row of an
//!   opened or carried group, which the passes drain and land in `n`'s
//!   aggregate, as for a whole flush.
//!
//! So `u0(n) − Σ u(L)` (floored at 0) counts only carried pages. An opened
//! group whose own count is flagged or above the break level keeps its
//! accounting. Under the kernel-exact scheme an ancestor's count folds its
//! own per-shard residue of its descendants' updates, not theirs in order,
//! and opened groups keep their accounting (their residues are not taken
//! either). loom: `within::a_partial_flush_resets_its_opened_group_by_what_it_carried`.
//!
//! Every hand-over write is Release and every bound read of them Acquire,
//! and a read loads the bound before the value: whatever a flush does
//! between the two, the value read is at least as fresh as the bound
//! assumes.

pub(crate) mod outcome;
pub(crate) mod partial;
pub(crate) mod state;

pub use outcome::{FlushKind, FlushOutcome, FlushStats, HotPathDecision};

use crate::count::CountValue;
use crate::dirty::{DirtyTree, IdMap};
use crate::engine::Core;
use crate::policy::{Concurrency, FlushScope, HotPathFlush, ThresholdRule, ThresholdScheme};
use crate::rows::Row;
use crate::saturation::{Direction, SaturatedSlots, Scope};
use crate::state::GroupState;
use crate::sync::{Arc, MutexGuard, Ordering, Ranked, RwLockReadGuard};
use crate::tree::groups::Structure;
use crate::work::{Work, WorkSink};
use partial::Plan;
use state::{FlushingGuard, Gate, Wait};

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
    /// Flushes may overlap (a per-pass gate): each snapshot is held, so
    /// that one flush only subtracts it (see `GroupState::hold_snapshot`).
    held: bool,
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

/// A partial flush's opened group as its snapshot found it (see
/// [`Handover::reset_opened`]).
struct Opened {
    group: Arc<GroupState>,
    /// Its count at the snapshot.
    count: CountValue,
    /// Its reservations at the snapshot.
    reserved: u64,
    /// The counts and reservations of the left subtrees below it, loaded
    /// after the snapshot.
    left: (u64, u64),
}

impl Handover {
    /// Snapshots the count and reservations of every group `plan` opens
    /// (before the snapshot phase's `SeqCst` fence; see
    /// [`reset_opened`](Self::reset_opened), which takes the result after
    /// it).
    fn snapshot_opened(st: &Structure, plan: &Plan) -> IdMap<Opened> {
        plan.opened_ids()
            .map(|id| {
                let g = st.group(id);
                // ORDERING: Relaxed, as the carried groups' snapshots (see
                // `snapshot`): the fence that follows acquires the folds
                // and reservations these loads read.
                let o = Opened {
                    group: g.clone(),
                    count: g.updates.snapshot_value(),
                    reserved: g.reserved.load(Ordering::Relaxed),
                    left: (0, 0),
                };
                (g.hot.id, o)
            })
            .collect()
    }

    /// A partial flush under the folded scheme, one flush at a time on the
    /// subtree: gives each opened group a reset of its snapshot *less*
    /// what the left subtrees below it held, loaded now (after the
    /// snapshot phase's `SeqCst` fence). What remains is what the flush
    /// carries: the group's own rows and its carried subtrees', which the
    /// passes land in its aggregate (see the module docs, "A partial
    /// flush's opened groups"). Resets nothing if a left group's count
    /// may miss a fold (flagged, or above the threshold, where owners skip
    /// folds); an opened group whose own count is flagged or above the
    /// break level keeps its accounting.
    fn reset_opened(
        &mut self,
        st: &Structure,
        plan: &Plan,
        mut opened: IdMap<Opened>,
        t: u64,
        level: u64,
    ) {
        for l in plan.left_ids().map(|id| st.group(id)) {
            // ORDERING: Relaxed; after the `SeqCst` fence that follows the
            // opened groups' snapshots. A fold or reservation an opened
            // group's snapshot read was made (Release) after the same
            // update's fold or reservation in every group below it (the
            // walks go up from the updated group: `Core::add_up`,
            // `Core::reserve`); the fence acquires it, so these loads see
            // the left group's share, or a later value: more folds, never
            // less (only a flush that covers the left group resets it,
            // and the gate excludes one while this flush runs).
            let c = l.updates.snapshot_value();
            let r = l.reserved.load(Ordering::Relaxed);
            if c.uncounted() || c.pages() > t.min(level) {
                return;
            }
            let mut a = l.hot.parent.as_ref();
            while let Some(n) = a {
                let Some(o) = opened.get_mut(&n.hot.id) else {
                    break;
                };
                o.left.0 = o.left.0.saturating_add(c.pages());
                o.left.1 = o.left.1.saturating_add(r);
                a = n.hot.parent.as_ref();
            }
        }
        self.groups.reserve(opened.len());
        for (id, o) in opened {
            if o.count.uncounted() || o.count.pages() > level {
                continue;
            }
            let snapshot = (
                o.count.pages().saturating_sub(o.left.0),
                o.reserved.saturating_sub(o.left.1),
            );
            // An opened group is never carried (`Plan::part`); were it,
            // its carried snapshot would stand.
            debug_assert!(!self.groups.contains_key(&id), "opened and carried");
            self.groups.entry(id).or_insert(Taken {
                group: o.group,
                snapshot: Some(snapshot),
                in_flight: 0,
            });
        }
    }

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
            if t.snapshot.is_none() && (!self.held || t.group.hold_snapshot()) {
                // ORDERING: Relaxed; the `SeqCst` fence that ends the
                // snapshot phase (`flush_subtree`) acquires the folds and
                // reservations these loads read (both Release: see
                // `Count::add` and `Core::claim`), and `hand_over` releases.
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
        match self.flushes.enter(&self.params.policy, &target, wait, work) {
            // `WaitOngoing`: the flush it waited for usually did its work.
            Some((_, true)) if matches!(wait, Wait::AtMost(_)) && !self.needs_flush(g) => {
                FlushOutcome::NotNeeded
            }
            Some((gate, _)) => {
                self.flush_subtree(&target, &gate, None, work);
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
            .flushes
            .enter(&self.params.policy, g, Wait::Block, work)
            .expect("a blocking gate entry always succeeds");
        self.flush_subtree(g, &gate, None, work);
    }

    /// Excludes every flush (for `verify`).
    pub(crate) fn enter_for_verify(&self) -> (Gate<'_>, Option<Ranked<MutexGuard<'_, ()>>>) {
        let root = self.groups.root().clone();
        let (gate, _) = self
            .flushes
            .enter(&self.params.policy, &root, Wait::Block, &mut ())
            .expect("blocking entry succeeds");
        // A per-pass gate does not hold the flush lock between passes.
        let extra = matches!(gate, Gate::PerPass).then(|| self.flushes.lock_whole());
        (gate, extra)
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
    ///
    /// With a `plan` (a tolerance read's, see `within.rs`) the flush is
    /// *partial*: it leaves the plan's left subtrees alone, aggregates the
    /// opened groups (`x` and the ancestors of left groups) and resets
    /// their accounting by what it carried of it only (see the module docs,
    /// "A partial flush's opened groups"), and flushes everything else as
    /// this flush would (see `flush/partial.rs`). A partial flush of
    /// the root is not a root flush (it does not restart the ratelimit
    /// clock), and the planner never makes one under a global threshold.
    pub(crate) fn flush_subtree<W: WorkSink>(
        &self,
        x: &Arc<GroupState>,
        gate: &Gate<'_>,
        plan: Option<&Plan>,
        work: &mut W,
    ) {
        self.flush_subtree_with(x, gate, plan, None, work);
    }

    /// [`flush_subtree`](Self::flush_subtree) with the structure lock
    /// `held` already (a tolerance read's, which planned under it; not
    /// under a per-pass gate, whose passes take the lock each).
    pub(crate) fn flush_subtree_with<W: WorkSink>(
        &self,
        x: &Arc<GroupState>,
        gate: &Gate<'_>,
        plan: Option<&Plan>,
        held: Option<Ranked<RwLockReadGuard<'_, Structure>>>,
        work: &mut W,
    ) {
        let _flushing = FlushingGuard::enter(&self.flushes);
        let is_root = x.hot.parent.is_none() && plan.is_none();
        if is_root {
            self.flushes.root_flush_started(self.params.clock.now_ns());
        }
        let per_pass = matches!(gate, Gate::PerPass);
        debug_assert!(
            !(per_pass && held.is_some()),
            "a per-pass flush holds no lock"
        );
        let whole = (!per_pass).then(|| held.unwrap_or_else(|| self.groups.read()));
        let parent_id = x.parent_id();
        let threshold = self.params.policy.threshold;
        let mut hand = Handover {
            held: per_pass,
            ..Handover::default()
        };
        if is_root
            && threshold == ThresholdRule::Global
            && (!per_pass || self.global.hold_snapshot())
        {
            hand.global = Some((
                // ORDERING: Acquire (see `Count::add`): every fold it counts
                // comes from a row pushed before, which the passes' drains
                // find.
                self.global.count().snapshot_acquire(),
                self.global.in_flight_snapshot(),
            ));
        }
        let mut list = Vec::new();
        if threshold == ThresholdRule::PerGroup {
            for s in 0..self.params.shards {
                let _pass = self.flushes.pass_lock(gate, work);
                let pass_st = per_pass.then(|| self.groups.read());
                let st: &Structure = whole.as_deref().or(pass_st.as_deref()).expect("one is set");
                let mut tree = self.dirty.tree(s);
                self.drain(s, st, &mut tree, false, work);
                list.clear();
                // A partial flush resets the carried groups only.
                match plan {
                    None => tree.collect(x.hot.id, &mut list),
                    Some(p) => tree.collect_carried(x.hot.id, |id| p.part(id), &mut list),
                }
                if !list.is_empty() {
                    hand.snapshot(st, &list);
                }
            }
            // A partial flush resets its opened groups by what it carries
            // (folded scheme, one flush at a time on the subtree: see the
            // module docs, "A partial flush's opened groups").
            let opened_reset =
                plan.filter(|_| !per_pass && self.params.policy.scheme == ThresholdScheme::Folded);
            let whole_st = whole.as_deref();
            let opened = opened_reset
                .zip(whole_st)
                .map(|(p, st)| Handover::snapshot_opened(st, p));
            // Acquires every fold and reservation the snapshots counted
            // (Release, made after their rows' pushes: see `Count::add`),
            // so that the passes' drains find those rows. It also orders
            // the snapshots before the passes' drains: an update
            // whose header RMW one of those drains reads (it found its pair
            // drained, and claimed it again) reads counts no older than the
            // snapshots (its RMW acquires: see `Header::add_residue`), so a
            // count it found above the break level was still there at the
            // snapshot or later, which the reset sees (see `count.rs`).
            // The same fence orders this flush's count in `flushing`
            // before its drains, for owners that skip a fold (see
            // `FlushingGuard`). It also acquires, for the left groups'
            // loads that follow, every fold and reservation the opened
            // groups' snapshots counted (see `Handover::reset_opened`).
            crate::sync::fence_seqcst();
            if let (Some(p), Some(o), Some(st)) = (opened_reset, opened, whole_st) {
                hand.reset_opened(st, p, o, self.params.threshold, self.params.break_above);
            }
        }
        // Kernel-exact: a residue counts its descendants' updates, so a pass
        // takes it before its drain (see below).
        let take_first = self.params.walks_ancestors;
        let (mut opened_seen, mut kept_parents) = (IdMap::default(), IdMap::default());
        for s in 0..self.params.shards {
            let _pass = self.flushes.pass_lock(gate, work);
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
                    // A partial flush takes the carried groups' residues
                    // only: an opened group's counts its left descendants'
                    // updates, which the pass does not carry.
                    match plan {
                        None => tree.collect(x.hot.id, &mut list),
                        Some(p) => tree.collect_carried(x.hot.id, |id| p.part(id), &mut list),
                    }
                    if !list.is_empty() {
                        let rows = rows_of(st, s, &list);
                        self.take_residues(st, &list, &rows, &mut hand, work);
                        list.clear();
                    }
                    crate::sync::fence_acquire();
                }
                self.drain(s, st, &mut tree, true, work);
                match plan {
                    None => tree.extract(x.hot.id, parent_id, &mut list),
                    Some(p) => {
                        tree.extract_partial(x.hot.id, parent_id, |id| p.part(id), &mut list)
                    }
                }
            }
            // A partial flush keeps its opened groups on every tree where a
            // left group below them is queued; most such visits have nothing
            // to aggregate (see `skip_idle_opened`).
            if let (Some(p), false) = (plan, per_pass) {
                skip_idle_opened(st, s, p, &mut list, &mut opened_seen, &mut kept_parents);
            }
            // Most shards have nothing queued at most flushes: nothing more
            // to do on them.
            if list.is_empty() {
                continue;
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
            self.writers.barrier_before_reading(s, work);
            // The groups' lines are asked for `AHEAD` groups before their
            // turn: a flush whose groups are out of cache (the first flush
            // of a large tree) then waits for their misses side by side.
            const AHEAD: usize = 4;
            for &id in list.iter().take(AHEAD) {
                st.group(id).prefetch_for_flush();
            }
            for (i, (&id, &row)) in list.iter().zip(&rows).enumerate() {
                if let Some(&next) = list.get(i + AHEAD) {
                    st.group(next).prefetch_for_flush();
                }
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
            if hand.held && t.snapshot.is_some() {
                n.release_snapshot();
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
            if hand.held {
                self.global.release_snapshot();
            }
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
            if let Some(sat) = saturated.as_ref().filter(|sat| sat.get(k).is_some()) {
                // The aggregate is pinned, whether or not this pass carries
                // anything (an ancestor is marked before any change reaches
                // it); the local value still counts the group's own change.
                let own = i128::from(cur) - i128::from(before) + i128::from(shared);
                self.aggregate_pinned(n, k, sat, own);
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
                    (Err(_), _) => {
                        self.pin(n, k, Direction::of(own), Scope::Own);
                        continue;
                    }
                    // The subtree's sum left `i64`, not the group's own:
                    // the local value takes its change.
                    (Ok(_), Err(_)) => {
                        self.pin(n, k, Direction::of(delta), Scope::Subtree);
                        self.aggregate_pinned(
                            n,
                            k,
                            &self.saturation.slots_of(n).expect("just marked"),
                            own,
                        );
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
                        self.pin(n, k, Direction::of(i128::from(own)), Scope::Own);
                        continue;
                    }
                }
            }
            if delta != 0 {
                match agg[k].load(Ordering::Relaxed).checked_add(delta) {
                    Some(v) => agg[k].store(v, Ordering::Relaxed),
                    None => {
                        // The local value took `own` above.
                        self.pin(n, k, Direction::of(i128::from(delta)), Scope::Subtree);
                        continue;
                    }
                }
                if let (Some(pp), Some(p)) = (parent_pending, parent) {
                    let old = pp[k].fetch_add(delta, Ordering::Relaxed);
                    atomics += 1;
                    if old.checked_add(delta).is_none() {
                        self.saturation.saturate_towards(
                            p,
                            k,
                            Direction::of(i128::from(delta)),
                            Scope::Subtree,
                        );
                    }
                }
            }
        }
        work.count(Work::Atomic, atomics);
    }

    /// Saturates slot `k` of `n` (and its ancestors) and pins its
    /// aggregate, and with [`Scope::Own`] its local value.
    #[cold]
    #[inline(never)]
    fn pin(&self, n: &GroupState, k: usize, dir: Direction, scope: Scope) {
        self.saturation.saturate_towards(n, k, dir, scope);
        if scope == Scope::Own {
            // ORDERING: Relaxed, as every write of `local` (see
            // `aggregate`).
            n.local[k].store(dir.limit(), Ordering::Relaxed);
        }
        pin_agg(n, k, dir);
    }

    /// Slot `k` of `n`, whose aggregate is saturated (`sat`), on a pass
    /// that found the group's own change `own`: the aggregate stays
    /// pinned, and the local value takes `own` unless it saturated (or
    /// saturates now) too. A descendant's saturation must not freeze the
    /// group's own count.
    #[cold]
    #[inline(never)]
    fn aggregate_pinned(&self, n: &GroupState, k: usize, sat: &SaturatedSlots, own: i128) {
        let agg_dir = sat.get(k).expect("the aggregate is saturated");
        // ORDERING: Relaxed for `local`, as in `aggregate`.
        match sat.local(k) {
            Some(dir) => n.local[k].store(dir.limit(), Ordering::Relaxed),
            None => {
                let sum = i64::try_from(own)
                    .ok()
                    .and_then(|own| n.local[k].load(Ordering::Relaxed).checked_add(own));
                match sum {
                    Some(v) => n.local[k].store(v, Ordering::Relaxed),
                    None => {
                        let dir = Direction::of(own);
                        self.saturation.saturate_towards(n, k, dir, Scope::Own);
                        n.local[k].store(dir.limit(), Ordering::Relaxed);
                    }
                }
            }
        }
        pin_agg(n, k, agg_dir);
    }
}

/// Pins slot `k` of `n`'s aggregate at the limit of `dir` (the slot is
/// marked saturated already).
fn pin_agg(n: &GroupState, k: usize, dir: Direction) {
    // ORDERING: Release; pairs with the bound's Acquire load of the
    // aggregate, before its look at the saturation flag.
    n.agg[k].store(dir.limit(), Ordering::Release);
}

/// Drops from a partial flush's pass list (child before parent) each
/// opened group that has nothing to aggregate on shard `s`: no row there, no
/// child kept in this pass (nothing pushed into its `pending` by this pass),
/// and visited by an earlier pass of the same flush (which absorbed the
/// `pending` earlier flushes left: it is one word per slot for the group,
/// not per shard). Only with the flush alone on the subtree (not a per-pass
/// gate, where an overlapping flush may push between passes). A visit is
/// one look per counter slot (priced as that many counters aggregated): an
/// opened group stays on the tree of every shard where a left group below
/// it is queued, so without this a partial flush visited it on nearly
/// every shard, and cost more than the forced flush that would have taken
/// it off the trees.
fn skip_idle_opened(
    st: &Structure,
    s: usize,
    plan: &Plan,
    list: &mut Vec<u32>,
    seen: &mut IdMap<()>,
    kept_parents: &mut IdMap<()>,
) {
    kept_parents.clear();
    list.retain(|&id| {
        let idle = plan.part(id) == crate::dirty::Part::Opened
            && seen.contains_key(&id)
            && !kept_parents.contains_key(&id)
            && st.group(id).hot.rows.row(s).is_none();
        if idle {
            return false;
        }
        seen.insert(id, ());
        kept_parents.insert(st.parent_id(id), ());
        true
    });
}

/// The row on shard `s` of each group of `ids`, if it has one.
fn rows_of<'a>(st: &'a Structure, s: usize, ids: &[u32]) -> Vec<Option<Row<'a>>> {
    ids.iter().map(|&id| st.group(id).hot.rows.row(s)).collect()
}
