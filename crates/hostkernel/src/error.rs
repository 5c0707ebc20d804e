//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in kernel mode.
///
/// The first group ([`Error::is_host_unsupported`]) means "this host cannot
/// run kernel mode": callers such as a suite skip with the error's message as
/// the reason. The rest are failures of a run that could have worked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Kernel mode creates cgroups and moves processes: it needs root.
    #[error("kernel mode needs root (effective uid 0); running as uid {euid}")]
    NotRoot {
        /// The effective user id found.
        euid: u32,
    },
    /// Neither a cgroup v1 hierarchy with the `memory` controller nor a
    /// cgroup2 mount listing `memory` in `cgroup.controllers` was found.
    #[error("no memory cgroup controller: {detail}")]
    NoMemoryController {
        /// What was looked at and found.
        detail: String,
    },
    /// The memory controller is mounted but cannot be written.
    #[error("memory cgroup controller at {} is not writable: {reason}", path.display())]
    NotWritable {
        /// The directory that could not be written.
        path: PathBuf,
        /// Why (mount options, errno).
        reason: String,
    },
    /// cgroup v2: `memory` is available but not enabled for children of the
    /// directory kernel mode creates its groups in.
    #[error(
        "cgroup v2: the memory controller is not enabled in {}/cgroup.subtree_control \
         (enable it with `echo +memory > {}/cgroup.subtree_control`)",
        path.display(),
        path.display()
    )]
    MemoryNotDelegated {
        /// The base directory.
        path: PathBuf,
    },
    /// A file system operation on a cgroup file failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// The operation ("mkdir", "read", "write", "rmdir", …).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A kernel file did not have the expected format.
    #[error("cannot parse {what}: {detail}")]
    Parse {
        /// Which file or value.
        what: String,
        /// What was wrong.
        detail: String,
    },
    /// A worker process failed (fork, early exit, bad answer).
    #[error("worker process: {0}")]
    Worker(String),
    /// A measuring thread could not be started.
    #[error(transparent)]
    Thread(#[from] simcore::thread::SpawnError),
    /// An experiment configuration is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The run was cancelled (SIGINT/SIGTERM or a [`crate::Cancel`]); every
    /// cgroup and process it created has been removed.
    #[error("interrupted; everything the run created was removed")]
    Interrupted,
    /// Cleanup could not remove everything it created (after retries).
    #[error("cleanup left {} cgroup(s) behind: {}", leftovers.len(), leftovers.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    Cleanup {
        /// The directories still present.
        leftovers: Vec<PathBuf>,
    },
}

impl Error {
    /// True when the error says the host lacks what kernel mode needs (not
    /// root, no memory controller, not writable, not delegated), as opposed
    /// to a failed run: a suite reports "skipped: {self}".
    pub fn is_host_unsupported(&self) -> bool {
        matches!(
            self,
            Error::NotRoot { .. }
                | Error::NoMemoryController { .. }
                | Error::NotWritable { .. }
                | Error::MemoryNotDelegated { .. }
        )
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
