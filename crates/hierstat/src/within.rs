//! Reads with an error budget ([`HierStats::read_within`]): the caller
//! says how far from the exact value it accepts the answer to be
//! ([`Tolerance`]), and the read flushes only what could break that.
//!
//! # The algorithm
//!
//! 1. **No flush if the bound fits.** The group's bound (the contract of
//!    [`Bounded`]: it holds at every instant) is read, then each value; if
//!    every item's bound is within its budget the read returns: a few loads.
//! 2. **Enter the flush gate** of the group (what a forced flush of it
//!    takes), waiting for a conflicting flush or, with
//!    [`OnBusy::ReturnBest`], returning the bounds as they are
//!    ([`WithinFlush::Busy`]). If it waited, the flush it waited for may
//!    have done the work: step 1 again.
//! 3. **Plan** (per-group thresholds only): the budget in pages is the
//!    smallest item budget (all items of a group share its bound), and at
//!    most the threshold where the flush resets the opened groups (step 4:
//!    the read group keeps the left groups' counts, and a count above the
//!    threshold bounds nothing). Start
//!    from the group's children, each with its own bound (`None` counts as
//!    infinite); while the sum exceeds the budget, *open* the child with
//!    the largest bound: replace it by its children (it has none: it is
//!    simply flushed). The groups still in that frontier are **left**;
//!    their ancestors up to the read group are **opened**; the rest of the
//!    subtree is **carried** (a child whose bound is 0 too: nothing of it
//!    is queued). Ties are broken by group id, so a larger
//!    budget opens a prefix of what a smaller one opens: the flush work
//!    is monotone in the tolerance. A budget of 0, a global threshold, a
//!    policy without threshold accounting, or a frontier that empties,
//!    plan a whole flush instead.
//! 4. **Partial flush** (`Core::flush_subtree` with the plan): one pass
//!    per shard as any flush, but the left subtrees stay on the dirty trees
//!    untouched; the opened groups are aggregated (their own rows, and
//!    what their children pushed up), and under the folded scheme their
//!    counts and reservations are reset by their snapshots less what the
//!    left subtrees below them held (`flush.rs`, "A partial flush's opened
//!    groups"): a group read again finds a bound of about what was left,
//!    and needs no flush until that grows over its budget. Their residues
//!    are not taken under the kernel-exact scheme (there they count the
//!    left groups' updates too), nor their accounting reset; the carried
//!    groups are flushed exactly as a subtree flush flushes them
//!    (snapshot, residues, hand-over).
//! 5. **Read** the group's bound and values again: the bound is the smaller
//!    of the engine's (still valid: the partial flush only made the values
//!    fresher and reset nothing it did not carry) and the sum of the left
//!    groups' bounds as planned. If an item is still over its budget (a
//!    relative budget whose value moved, or a racing update), a whole flush
//!    of the group follows, under the same gate, and the bound is 0.
//!
//! A read never flushes more than a forced flush of the group would: the
//! same shard passes, a subset of the (group, shard) pairs.
//!
//! # Why the composed bound holds
//!
//! Let `exact` count the updates of the group's subtree that completed
//! before the read began. After the partial flush `P`, take an update `u`
//! of `exact` that the group's aggregate lacks:
//!
//! * `u` is not in an opened or carried group's own rows: `P` drained every
//!   shard's update list after `u` completed (waiting for claims in
//!   progress), and aggregated those groups' rows on every shard where
//!   they were queued. So `u` is in the subtree of a left group `L`.
//! * The planner read `L`'s bound `b_L` under the gate, before `P`. Either
//!   `u`'s pages were in `L`'s accounting then (count, reservations,
//!   in-flight: `b_L` covers them), or a flush `F` had taken them out: `F`
//!   resets accounting only at its hand-over, after its passes landed `u`
//!   in `L`'s aggregate and pushed it, in the same pass, to the `pending`
//!   of each group up from `L` to `F`'s root (or into the read group's
//!   aggregate itself, if `F` covers it). The hand-over is Release and the
//!   bound's loads Acquire, so `P`'s passes see those pushes; they end in
//!   the `pending` of a group between `L` and the read group, which stays
//!   on the dirty tree of each shard the push came from until a flush
//!   absorbs it: `P` opens every such group and absorbs it, children
//!   before parents, into the read group's aggregate. So the group lacks
//!   only updates each left group's bound covers.
//!
//! Since `b_L` bounds the *magnitude* of what `L` lacks, the sum of the
//! left bounds bounds `|signed − exact|` (plus, as for every bound, the
//! magnitude of updates racing the read). After a whole flush of the
//! group, nothing is left: the bound is 0. loom checks a partial flush
//! racing an updater and a plain bounded reader (`tests/loom.rs`,
//! "within"), and `tests/live.rs` checks every tolerance read against the
//! exact value on real threads under every preset.
//!
//! # When the budget cannot be met without waiting
//!
//! A flush of the group (or of an overlapping subtree: the background
//! flusher's root flush, another reader's) holds the gate the partial
//! flush needs. [`OnBusy::Wait`] (what [`HierStats::read_within`] does)
//! waits for it as a forced flush would, then reads again, which often
//! suffices. [`OnBusy::ReturnBest`] returns at once with the bound as it
//! is (`met: false` where it does not fit) and [`WithinFlush::Busy`].
//! Under a per-pass gate (linux-6.17) flushes never exclude each other and
//! each pass waits for the pass lock, as any flush there does.

use crate::engine::Core;
use crate::error::Error;
use crate::flush::outcome::FlushOutcome;
use crate::flush::partial::Plan;
use crate::flush::state::{Gate, Wait};
use crate::policy::{ThresholdRule, ThresholdScheme};
use crate::read::{clamp, Bounded};
use crate::schema::{ItemId, ItemKind, NodeItemId, Schema, Slot, Unit};
use crate::state::{Flags, GroupState};
use crate::sync::{Arc, Ordering};
use crate::tree::groups::Structure;
use crate::work::{Work, WorkSink};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

mod subtree;

/// How far from the exact value a read may be, in the item's unit.
///
/// A relative tolerance is a fraction of the magnitude of the value read
/// (`|signed|`, see [`Bounded::signed`]): 0.01 accepts 1% of it. A value of
/// 0 then allows no error at all, so a read of many items, some of them
/// zero (most of a `memory.stat`), usually wants
/// [`Tolerance::Either`]: 1%, or a few pages, whichever is larger.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// At most this much, in the item's unit (pages, bytes or a count).
    Absolute(u64),
    /// At most this fraction of the value's magnitude (finite, ≥ 0).
    Relative(f64),
    /// The larger of a relative and an absolute budget.
    Either {
        /// Fraction of the value's magnitude (finite, ≥ 0).
        relative: f64,
        /// Budget in the item's unit.
        absolute: u64,
    },
}

impl Tolerance {
    /// No error at all: the read flushes the group unless its bound is 0.
    pub const EXACT: Tolerance = Tolerance::Absolute(0);

    /// The budget, in the item's unit, for a value of `signed`: the
    /// largest `|signed − exact|` this tolerance accepts.
    pub fn budget(self, signed: i64) -> u64 {
        let rel = |f: f64| {
            // A float-to-int `as` saturates (and maps NaN to 0).
            (f * signed.unsigned_abs() as f64).floor() as u64
        };
        match self {
            Tolerance::Absolute(a) => a,
            Tolerance::Relative(f) => rel(f),
            Tolerance::Either { relative, absolute } => rel(relative).max(absolute),
        }
    }

    /// Checks the fractions: finite and not negative.
    ///
    /// # Errors
    /// [`Error::InvalidTolerance`].
    pub fn check(self) -> Result<(), Error> {
        match self {
            Tolerance::Absolute(_) => Ok(()),
            Tolerance::Relative(f) | Tolerance::Either { relative: f, .. } => {
                if f.is_finite() && f >= 0.0 {
                    Ok(())
                } else {
                    Err(Error::InvalidTolerance(f.to_string()))
                }
            }
        }
    }
}

/// A statistic a tolerance read covers: a state or event item, or a
/// per-node item's total or one node's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadItem {
    /// A state or event item (as [`HierStats::read`](crate::HierStats::read)).
    Item(ItemId),
    /// A per-node item on one NUMA node, or with `None` its total (as
    /// [`HierStats::read_node`](crate::HierStats::read_node)).
    Node(NodeItemId, Option<usize>),
}

impl From<ItemId> for ReadItem {
    fn from(item: ItemId) -> Self {
        ReadItem::Item(item)
    }
}

impl From<NodeItemId> for ReadItem {
    /// The item's total over nodes.
    fn from(item: NodeItemId) -> Self {
        ReadItem::Node(item, None)
    }
}

/// What a tolerance read waits for (see the module docs, "When the budget
/// cannot be met without waiting").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnBusy {
    /// Wait for a conflicting flush, as a forced flush would.
    #[default]
    Wait,
    /// Return the bounds as they are if a conflicting flush runs.
    ReturnBest,
}

/// What a tolerance read flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WithinFlush {
    /// Nothing: the bound already fit (possibly after waiting for another
    /// flush).
    None,
    /// The group's own counters and all of its subtree but `left`
    /// subtrees, whose bounds sum to at most the budget; `opened` groups
    /// (the read group and the ancestors of left ones) were aggregated and
    /// their accounting reset by what the flush carried only.
    Partial {
        /// Subtrees left unflushed.
        left: u32,
        /// Groups aggregated but kept on the dirty trees.
        opened: u32,
    },
    /// The whole subtree, as [`HierStats::flush_forced`](crate::HierStats::flush_forced).
    Full,
    /// A flush was needed, another one held the gate, and the read was
    /// asked not to wait ([`OnBusy::ReturnBest`]).
    Busy,
}

/// A tolerance read of one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Within {
    /// The value and its bound, under [`Bounded`]'s contract. With
    /// `met`, `bound` is `Some(b)` with `b ≤ budget`.
    pub read: Bounded,
    /// The tolerance's budget for the value read, in the item's unit.
    pub budget: u64,
    /// Whether the bound fits the budget: always, unless the item is
    /// saturated (no bound) or the read returned without waiting
    /// ([`WithinFlush::Busy`]).
    pub met: bool,
    /// What the read flushed (the same for every item of one read).
    pub flush: WithinFlush,
}

/// One item of a tolerance read, resolved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Req {
    slot: Slot,
    kind: ItemKind,
    unit: Unit,
    tolerance: Tolerance,
}

impl Req {
    /// Resolves `item` in `schema` and checks `tolerance`.
    ///
    /// # Errors
    /// Item errors as the plain reads', [`Error::InvalidTolerance`].
    pub(crate) fn new(schema: &Schema, item: ReadItem, tolerance: Tolerance) -> Result<Req, Error> {
        tolerance.check()?;
        let (slot, kind) = match item {
            ReadItem::Item(i) => schema.slot_and_kind(i)?,
            ReadItem::Node(i, node) => (schema.node_read_slot(i, node)?, schema.node_info(i)?.kind),
        };
        Ok(Req {
            slot,
            kind,
            unit: schema.slot_unit(slot),
            tolerance,
        })
    }

    /// The item's unit per page of bound.
    fn per_page(self) -> u64 {
        self.unit.from_pages(1)
    }
}

impl Core {
    /// A tolerance read of `reqs` in `g` (see the module docs); `out`
    /// receives one [`Within`] per request, in order.
    pub(crate) fn read_within<W: WorkSink>(
        &self,
        g: &Arc<GroupState>,
        reqs: &[Req],
        on_busy: OnBusy,
        out: &mut Vec<Within>,
        work: &mut W,
    ) -> WithinFlush {
        // 1. The bound as it is.
        if self.judge(g, reqs, None, WithinFlush::None, out) {
            return WithinFlush::None;
        }
        // 2. The gate a flush of the group takes.
        let wait = match on_busy {
            OnBusy::Wait => Wait::Block,
            OnBusy::ReturnBest => Wait::No,
        };
        let Some((gate, waited)) = self.flushes.enter(&self.params.policy, g, wait, work) else {
            for w in out.iter_mut() {
                w.flush = WithinFlush::Busy;
            }
            return WithinFlush::Busy;
        };
        if waited && self.judge(g, reqs, None, WithinFlush::None, out) {
            return WithinFlush::None;
        }
        // 3. The plan, 4. the partial flush, 5. the read.
        let budget = page_budget(reqs, out);
        // One acquisition of the structure lock for the plan and the flush
        // that follows, as a forced flush takes it once (not under a
        // per-pass gate, whose passes take it each).
        let mut held = (!matches!(gate, Gate::PerPass)).then(|| self.groups.read());
        if let Some(plan) = self.plan(g, budget, held.as_deref(), work) {
            self.flush_subtree_with(g, &gate, Some(&plan), held.take(), work);
            self.flushes.record(FlushOutcome::Flushed { root: false });
            let done = WithinFlush::Partial {
                left: plan.left() as u32,
                opened: plan.opened() as u32,
            };
            if self.judge(g, reqs, Some(plan.composed()), done, out) {
                return done;
            }
        }
        self.flush_subtree_with(g, &gate, None, held.take(), work);
        drop(gate);
        let root = g.hot.parent.is_none();
        self.flushes.record(FlushOutcome::Flushed { root });
        // A whole flush carried every update that completed before it
        // began: nothing is left but what races the read.
        self.judge(g, reqs, Some(0), WithinFlush::Full, out);
        if root {
            self.reap_if_any();
        }
        WithinFlush::Full
    }

    /// Reads every request's value and bound into `out` (the engine's
    /// bound, or `composed` pages if smaller: a partial flush's left
    /// bounds); returns whether every bound fits its budget.
    fn judge(
        &self,
        g: &GroupState,
        reqs: &[Req],
        composed: Option<u64>,
        flush: WithinFlush,
        out: &mut Vec<Within>,
    ) -> bool {
        out.clear();
        // The bound first (its loads acquire the flushes' hand-overs),
        // then the values, as `read_bounded` does.
        let engine = self.error_bound(g);
        let pages = match (engine, composed) {
            (Some(e), Some(c)) => Some(e.min(c)),
            (e, c) => e.or(c),
        };
        let mut all = true;
        for r in reqs {
            let read =
                self.read_after_bound(g, r.slot, r.kind, pages.map(|p| r.unit.from_pages(p)));
            let budget = r.tolerance.budget(read.signed);
            let met = read.bound.is_some_and(|b| b <= budget);
            all &= met;
            out.push(Within {
                read,
                budget,
                met,
                flush,
            });
        }
        all
    }

    /// The value of `slot` with a bound loaded before it.
    fn read_after_bound(
        &self,
        g: &GroupState,
        slot: Slot,
        kind: ItemKind,
        bound: Option<u64>,
    ) -> Bounded {
        // ORDERING: Acquire; as `read_bounded`'s load of the aggregate (a
        // pinned value comes with its saturation flag, read next). The
        // bound's Acquire loads came first.
        let v = g.agg[slot.get()].load(Ordering::Acquire);
        if g.flag(Flags::SATURATED) {
            return self.read_saturated(g, slot, kind, v, bound);
        }
        Bounded {
            value: clamp(kind, v),
            signed: v,
            bound,
            saturated: false,
        }
    }

    /// Plans a partial flush of `g` whose left subtrees' bounds sum to at
    /// most `budget` pages (see the module docs, step 3); `None` for a
    /// whole flush.
    ///
    /// Its cost: the structure lock (`held`, the one the flush that
    /// follows takes; or, under a per-pass gate, one acquisition of its
    /// own), under which the children of each opened group are read by
    /// reference (a few loads each for the bound); under a per-pass gate,
    /// a reference count per left group too (the plan holds it). A child whose bound is 0 has nothing a flush could carry
    /// of it: it is neither left nor opened (a partial flush carries it,
    /// as a whole flush would: at no cost, it is on no dirty tree), and the
    /// plan holds no reference to it. `tests/within.rs` checks a tolerance
    /// read's work, planning included, against a forced flush's from the
    /// same state, counter by counter; the simulator, priced
    /// (`crates/sim/tests/it/tolerance.rs`).
    fn plan<W: WorkSink>(
        &self,
        g: &Arc<GroupState>,
        budget: u64,
        held: Option<&Structure>,
        work: &mut W,
    ) -> Option<Plan> {
        if budget == 0 || self.params.policy.threshold != ThresholdRule::PerGroup {
            return None;
        }
        // Where the flush resets the opened groups by what it carries
        // (folded scheme, the flush alone on the subtree: `flush.rs`, "A
        // partial flush's opened groups"), the read group keeps the left
        // groups' counts; above the threshold a count bounds nothing (owners
        // skip folds there), and the group would read with no bound until a
        // whole flush: the next read would flush again whatever its budget.
        // So the left bounds (each at least its count) sum to at most the
        // threshold too.
        let budget = if held.is_some() && self.params.policy.scheme == ThresholdScheme::Folded {
            budget.min(self.params.threshold)
        } else {
            budget
        };
        let own;
        let st: &Structure = match held {
            Some(st) => st,
            None => {
                work.count(Work::LockAcquired, 1);
                own = self.groups.read();
                &own
            }
        };
        // ORDERING: Relaxed; written under the structure lock we hold.
        if g.removed.load(Ordering::Relaxed) {
            return None;
        }
        // The frontier: (bound, smallest id first on ties).
        let mut heap: BinaryHeap<(u64, Reverse<u32>)> = BinaryHeap::new();
        let mut sum = 0u64;
        let mut unbounded = 0usize;
        let open = |id: u32,
                    heap: &mut BinaryHeap<(u64, Reverse<u32>)>,
                    sum: &mut u64,
                    unbounded: &mut usize| {
            for c in st.child_ids(id) {
                let b = match self.error_bound(st.group(c)) {
                    // Nothing pending: carried, at no cost.
                    Some(0) => continue,
                    Some(b) => {
                        *sum = sum.saturating_add(b);
                        b
                    }
                    None => {
                        *unbounded += 1;
                        u64::MAX
                    }
                };
                heap.push((b, Reverse(c)));
            }
        };
        open(g.hot.id, &mut heap, &mut sum, &mut unbounded);
        while unbounded > 0 || sum > budget {
            let (b, Reverse(id)) = heap.pop()?;
            if b == u64::MAX {
                unbounded -= 1;
            } else {
                sum -= b;
            }
            open(id, &mut heap, &mut sum, &mut unbounded);
        }
        if heap.is_empty() {
            return None;
        }
        let left = heap.iter().map(|&(_, Reverse(id))| &**st.group(id));
        // With the structure lock held to the flush's end no id is
        // recycled; otherwise the plan holds the left groups: a reference
        // count each.
        let held = if held.is_some() {
            Vec::new()
        } else {
            work.count(Work::Atomic, heap.len() as u64);
            heap.iter()
                .map(|&(_, Reverse(id))| st.group(id).clone())
                .collect()
        };
        Some(Plan::new(g, left, held, sum))
    }
}

/// The budget a plan aims at, in pages: the smallest item budget, each
/// for the smallest magnitude its value may have (`|signed| − bound`), so
/// that a relative budget rarely needs the whole flush of step 5. Without
/// a bound the value read is the only estimate: a relative budget is then
/// a guess, checked after the partial flush (a group never flushed reads
/// 0, and its first relative read flushes it whole).
fn page_budget(reqs: &[Req], reads: &[Within]) -> u64 {
    reqs.iter()
        .zip(reads)
        .map(|(r, w)| {
            let least = match w.read.bound {
                Some(b) => w.read.signed.unsigned_abs().saturating_sub(b),
                None => w.read.signed.unsigned_abs(),
            };
            let least = i64::try_from(least).unwrap_or(i64::MAX);
            r.tolerance.budget(least) / r.per_page()
        })
        .min()
        .unwrap_or(u64::MAX)
}
