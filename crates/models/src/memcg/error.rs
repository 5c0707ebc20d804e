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
    /// A charge failed: `over` is at `memory.max` and reclaim freed too
    /// little; for a charge of up to 8 pages an `oom` event was counted on
    /// `over` (the OOM killer's turn).
    #[error("OOM: charging {nr} pages to memcg {memcg} failed: memcg {over} is at memory.max and reclaim freed too little")]
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
    /// A value the file does not accept (`EINVAL`).
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// `memory.reclaim` could not reclaim what was asked (`EAGAIN`).
    #[error("memory.reclaim: reclaim stalled before the requested amount (EAGAIN)")]
    Again,
    /// No such peak descriptor.
    #[error("no open peak descriptor {0}")]
    UnknownFd(u64),
    /// No such object cache.
    #[error("no kernel object cache {0}")]
    UnknownCache(usize),
}
