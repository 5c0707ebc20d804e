//! Errors of the memcg model.

use super::MemcgId;
use thiserror::Error;

/// Errors returned by [`MemcgTree`](super::MemcgTree).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MemcgError {
    /// The statistics engine refused an operation.
    #[error("stats engine: {0}")]
    Engine(#[from] hierstat::Error),
    /// No live group has this id.
    #[error("no memory cgroup with id {0}")]
    UnknownMemcg(MemcgId),
    /// All 65535 memcg ids are in use.
    #[error("out of memory cgroup ids")]
    TooManyGroups,
    /// The root cannot be removed.
    #[error("the root memory cgroup cannot be removed")]
    RemoveRoot,
    /// A group with children cannot be removed.
    #[error("memory cgroup {0} still has children")]
    NotEmpty(MemcgId),
    /// A CPU index out of range.
    #[error("cpu {cpu} out of range (the model has {cpus} CPUs)")]
    CpuOutOfRange {
        /// Requested CPU.
        cpu: usize,
        /// Number of CPUs.
        cpus: usize,
    },
    /// A charge failed: `over` is at `memory.max`, reclaim freed too little,
    /// and an `oom` event was counted on it.
    #[error("OOM: charging {nr} pages to memcg {memcg} failed: memcg {over} is at memory.max and reclaim freed nothing")]
    Oom {
        /// The group being charged.
        memcg: MemcgId,
        /// The ancestor (or itself) whose limit was hit.
        over: MemcgId,
        /// Pages asked for.
        nr: u64,
    },
    /// An uncharge larger than the group's usage (a caller bug).
    #[error("uncharging {nr} pages from memcg {memcg} exceeds its usage of {usage} pages")]
    Underflow {
        /// The group.
        memcg: MemcgId,
        /// Pages asked for.
        nr: u64,
        /// Pages charged.
        usage: u64,
    },
}
