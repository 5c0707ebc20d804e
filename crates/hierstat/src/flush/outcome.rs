//! What a flush call did, which entry point it was, and a tree's flush
//! statistics: the flush API's public types.

use crate::policy::FlushScope;

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
