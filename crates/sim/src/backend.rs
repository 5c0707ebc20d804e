//! What the runners need from a statistics implementation.
//!
//! [`StatsBackend`] is implemented by the hierstat engine under each preset
//! ([`crate::engine::EngineBackend`]) and by the baselines
//! ([`crate::baselines`]). Groups are addressed by their preorder index in
//! the workload's [`TreeShape`](crate::workload::TreeShape), items by their
//! index in the workload's schema.

use crate::cost::{CostTable, Work};
use crate::lock::LockMode;
use crate::workload::GroupIdx;

/// Which part of the tree a read-side flush covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushScope {
    /// The whole tree, whatever group is read (5.15–6.7).
    Root,
    /// The subtree of the group being read (5.13, 6.8+).
    Subtree,
}

/// The flush rules a runner must honour around the backend's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushRules {
    /// What concurrent flushers do.
    pub lock: LockMode,
    /// What a read-side flush covers.
    pub scope: FlushScope,
    /// Whether a periodic background flush runs.
    pub periodic: bool,
}

/// Why a flush is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushReason {
    /// A `memory.stat` read (threshold-guarded per the policy).
    Read,
    /// The periodic background flusher (forced, root).
    Periodic,
    /// A forced flush of the group's subtree (a [`lab::reader::ReadMode::Forced`]
    /// reader): never skipped by the threshold rule.
    Forced,
}

/// One item of a tolerance read ([`StatsBackend::read_within`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WithinValue {
    /// The value and its bound (`None`: none certified, the read did not
    /// meet its budget).
    pub read: ReadValue,
    /// The tolerance's budget for the value read, in pages.
    pub budget: u64,
    /// The aggregate before clamping at 0.
    pub signed: i64,
}

impl WithinValue {
    /// Whether the bound fits the budget.
    pub fn met(&self) -> bool {
        self.read.bound.is_some_and(|b| b <= self.budget)
    }
}

/// What a tolerance read flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFlush {
    /// Nothing: every bound fit its budget.
    None,
    /// A flush was needed and the caller did not allow one.
    Needed,
    /// Part of the group's subtree (`hierstat::WithinFlush::Partial`).
    Partial,
    /// The group's whole subtree.
    Full,
}

/// A value read together with its documented error bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadValue {
    /// The value (negative aggregates clamped to 0).
    pub value: u64,
    /// The largest documented distance from the exact value, if bounded.
    pub bound: Option<u64>,
}

/// Identifier of a cache line that several CPUs write (for the contention
/// model of the simulator).
pub type LineId = u64;

/// One update the simulated runner applies: where it lands and by how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Update {
    /// The shard (simulated CPU) that writes.
    pub shard: usize,
    /// The group updated (the policy decides what its ancestors see).
    pub group: GroupIdx,
    /// The item's index in the workload's schema.
    pub item: usize,
    /// Pages added (negative: removed).
    pub delta: i64,
}

/// A statistics implementation the runners can drive.
pub trait StatsBackend: Send + Sync {
    /// The policy name (`linux-6.8`, `pre-rstat` ...).
    fn name(&self) -> &str;

    /// Flush rules of the policy.
    fn rules(&self) -> FlushRules;

    /// Hot-path update from the current thread (real mode, no counting).
    fn add(&self, group: GroupIdx, item: usize, delta: i64);

    /// Update on an explicit shard with its work counted; the ids of shared
    /// cache lines written with an atomic RMW are pushed to `lines`. `&mut`:
    /// the simulated runner is the backend's one user for its run (the
    /// engine then updates with plain stores, see
    /// [`crate::engine::EngineBackend`]).
    fn add_counted(&mut self, update: Update, work: &mut Work, lines: &mut Vec<LineId>);

    /// [`add_counted`](Self::add_counted) priced: the picoseconds of the
    /// work it counted under `costs` (`costs.cost_ps` of that work), for
    /// a runner that needs only the update's cost.
    #[inline]
    fn add_priced(&mut self, update: Update, costs: &CostTable, lines: &mut Vec<LineId>) -> u64 {
        let mut work = Work::default();
        self.add_counted(update, &mut work, lines);
        costs.cost_ps(&work)
    }

    /// Whether a flush for `reason` on `group` would do anything under the
    /// policy's threshold rule (checked before taking the flush lock, as
    /// the kernel does).
    fn needs_flush(&self, group: GroupIdx, reason: FlushReason) -> bool;

    /// Flushes for `reason` (the scope per [`FlushRules::scope`]; periodic
    /// flushes are forced root flushes), counting the work.
    fn flush(&self, group: GroupIdx, reason: FlushReason, work: &mut Work);

    /// Hierarchical value of `item` in `group`, with its bound.
    fn read(&self, group: GroupIdx, item: usize, work: &mut Work) -> ReadValue;

    /// A tolerance read of the first `items` items of `group` into `out`
    /// (one [`WithinValue`] each, in order), as
    /// `hierstat::HierStats::read_many_within`. With `flush` false it only
    /// reads, and says [`ReadFlush::Needed`] when a bound does not fit its
    /// budget (the runner then takes the flush lock and calls again with
    /// `flush`). By default, for a backend without partial flushes: the
    /// plain reads, and with `flush` a forced flush of the group first.
    fn read_within(
        &self,
        group: GroupIdx,
        items: usize,
        tolerance: hierstat::Tolerance,
        flush: bool,
        out: &mut Vec<WithinValue>,
        work: &mut Work,
    ) -> ReadFlush {
        if flush {
            self.flush(group, FlushReason::Forced, work);
        }
        out.clear();
        let mut fits = true;
        for item in 0..items {
            let read = self.read(group, item, work);
            let signed = i64::try_from(read.value).unwrap_or(i64::MAX);
            let v = WithinValue {
                read,
                budget: tolerance.budget(signed),
                signed,
            };
            fits &= v.met();
            out.push(v);
        }
        match (flush, fits) {
            (true, _) => ReadFlush::Full,
            (false, true) => ReadFlush::None,
            (false, false) => ReadFlush::Needed,
        }
    }

    /// Sets the backend's clock to virtual time `ns` (sim mode); backends
    /// without a clock ignore it.
    fn set_time(&self, _ns: u64) {}
}
