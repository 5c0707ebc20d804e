//! What the runners need from a statistics implementation.
//!
//! [`StatsBackend`] is implemented by the hierstat engine under each preset
//! ([`crate::engine::EngineBackend`]) and by the baselines
//! ([`crate::baselines`]). Groups are addressed by their preorder index in
//! the workload's [`TreeShape`](crate::workload::TreeShape), items by their
//! index in the workload's schema.

use crate::cost::Work;
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

/// A statistics implementation the runners can drive.
pub trait StatsBackend: Send + Sync {
    /// The policy name (`linux-6.8`, `pre-rstat` ...).
    fn name(&self) -> &str;

    /// Flush rules of the policy.
    fn rules(&self) -> FlushRules;

    /// Hot-path update from the current thread (real mode, no counting).
    fn add(&self, group: GroupIdx, item: usize, delta: i64);

    /// Update on an explicit shard with its work counted; the ids of shared
    /// cache lines written with an atomic RMW are pushed to `lines`.
    fn add_counted(
        &self,
        shard: usize,
        group: GroupIdx,
        item: usize,
        delta: i64,
        work: &mut Work,
        lines: &mut Vec<LineId>,
    );

    /// Whether a flush for `reason` on `group` would do anything under the
    /// policy's threshold rule (checked before taking the flush lock, as
    /// the kernel does).
    fn needs_flush(&self, group: GroupIdx, reason: FlushReason) -> bool;

    /// Flushes for `reason` (the scope per [`FlushRules::scope`]; periodic
    /// flushes are forced root flushes), counting the work.
    fn flush(&self, group: GroupIdx, reason: FlushReason, work: &mut Work);

    /// Hierarchical value of `item` in `group`, with its bound.
    fn read(&self, group: GroupIdx, item: usize, work: &mut Work) -> ReadValue;

    /// Sets the backend's clock to virtual time `ns` (sim mode); backends
    /// without a clock ignore it.
    fn set_time(&self, _ns: u64) {}
}
