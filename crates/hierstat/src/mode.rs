//! How a tree's updates reach their rows ([`Mode`]), decided once at
//! construction and reported by [`HierStats::mode`](crate::HierStats::mode).

/// How a tree's implicit updates ([`HierStats::add`](crate::HierStats::add),
/// [`Counter::add`](crate::Counter::add)) write, fixed at construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// One row per CPU that wrote a group; any thread adds to its current
    /// CPU's row with plain loads and stores inside a restartable sequence
    /// (`rseq(2)`), restarted by the kernel when preempted, migrated or
    /// signalled; the shards are the possible CPUs, threads need no seat,
    /// and there is no shared path ([`Config::per_cpu`](crate::Config::per_cpu)).
    PerCpu,
    /// Per-thread shards: a thread that holds a seat below the shard count
    /// writes its shard with plain stores (membarrier on the flushers'
    /// side), threads beyond share shards through atomic adds.
    Owner {
        /// Why the per-CPU mode was asked for and not given (`None`: it
        /// was not asked for).
        fallback: Option<Fallback>,
    },
    /// Every implicit update takes the shared (atomic) path: membarrier is
    /// unavailable or disallowed ([`Config::membarrier`](crate::Config::membarrier)).
    Shared {
        /// As for [`Mode::Owner`].
        fallback: Option<Fallback>,
    },
}

/// Why a tree asked for the per-CPU mode runs without it (its
/// [`Mode`] says which mode it runs in instead: never a slower path
/// chosen silently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fallback {
    /// Not Linux with glibc on x86-64 or aarch64.
    Platform,
    /// The C library registered no restartable-sequence area for the
    /// threads (glibc before 2.35, a kernel before 4.18, or the
    /// `glibc.pthread.rseq=0` tunable).
    NotRegistered,
    /// The kernel offers no `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` (Linux
    /// before 5.10) or refused the registration, or the configuration
    /// disallows membarrier ([`Config::membarrier`](crate::Config::membarrier)).
    NoMembarrier,
    /// Under a checker that cannot see the sections: Miri, or a process
    /// under ThreadSanitizer (loom models the sections instead).
    Checker,
    /// The possible CPUs are unknown or more than
    /// [`MAX_SHARDS`](crate::MAX_SHARDS).
    Cpus,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (name, fallback) = match self {
            Mode::PerCpu => return f.write_str("per-cpu (rseq)"),
            Mode::Owner { fallback } => ("owner/shared", fallback),
            Mode::Shared { fallback } => ("shared", fallback),
        };
        f.write_str(name)?;
        if let Some(why) = fallback {
            write!(f, " (per-cpu unavailable: {why})")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Fallback::Platform => "not Linux/glibc on x86-64 or aarch64",
            Fallback::NotRegistered => "no rseq area registered by the C library",
            Fallback::NoMembarrier => "no private expedited rseq membarrier",
            Fallback::Checker => "under Miri or ThreadSanitizer",
            Fallback::Cpus => "possible CPUs unknown or too many",
        })
    }
}
