//! Errors of the machine, with the errno a system call would return.

use super::Pid;
use crate::memcg::MemcgError;
use crate::workingset::WorkingsetError;
use thiserror::Error;

/// Errors returned by [`Machine`](super::Machine).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MachineError {
    /// No such cgroup or file (`ENOENT`).
    #[error("{0}: no such file or directory")]
    NoEntry(String),
    /// The cgroup is busy: it has processes or children, or processes
    /// cannot join it (`EBUSY`).
    #[error("{0}: device or resource busy")]
    Busy(String),
    /// A value or operation the file does not accept (`EINVAL`).
    #[error("{0}: invalid argument")]
    Invalid(String),
    /// `memory.reclaim` reclaimed less than asked (`EAGAIN`).
    #[error("resource temporarily unavailable")]
    Again,
    /// The name exists (`EEXIST`).
    #[error("{0}: file exists")]
    Exists(String),
    /// No such (live) process (`ESRCH`).
    #[error("no such process {0:?}")]
    NoProcess(Pid),
    /// The memcg model refused.
    #[error(transparent)]
    Memcg(MemcgError),
    /// The LRU model refused.
    #[error(transparent)]
    Workingset(WorkingsetError),
}

impl MachineError {
    /// The errno a system call would fail with (negative, as the
    /// selftests' `cg_write` returns it).
    pub fn errno(&self) -> i32 {
        match self {
            MachineError::NoEntry(_) => -2,
            MachineError::NoProcess(_) => -3,
            MachineError::Again => -11,
            MachineError::Busy(_) => -16,
            MachineError::Exists(_) => -17,
            MachineError::Invalid(_) => -22,
            MachineError::Memcg(MemcgError::Again) => -11,
            MachineError::Memcg(MemcgError::InvalidValue(_)) => -22,
            MachineError::Memcg(MemcgError::Oom { .. }) => -12,
            MachineError::Memcg(_) | MachineError::Workingset(_) => -5,
        }
    }
}

impl From<MemcgError> for MachineError {
    fn from(e: MemcgError) -> Self {
        match e {
            MemcgError::Again => MachineError::Again,
            e => MachineError::Memcg(e),
        }
    }
}

impl From<WorkingsetError> for MachineError {
    fn from(e: WorkingsetError) -> Self {
        match e {
            WorkingsetError::Memcg(m) => m.into(),
            e => MachineError::Workingset(e),
        }
    }
}

impl From<hierstat::Error> for MachineError {
    fn from(e: hierstat::Error) -> Self {
        MachineError::Memcg(MemcgError::Engine(e))
    }
}
