//! The crate's errors: [`ScenarioError`] for a bad file, [`SimError`] for
//! everything a run can meet.

use thiserror::Error;

/// A problem in a scenario (or cost, policy, sweep) file: which file,
/// where, which field, and what.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{file}{}: {}{message}", line.map(|l| format!(":{l}")).unwrap_or_default(), if field.is_empty() { String::new() } else { format!("field `{field}`: ") })]
pub struct ScenarioError {
    /// The file name (or `<builtin NAME>` for embedded scenarios).
    pub file: String,
    /// 1-based line of the problem, when known.
    pub line: Option<usize>,
    /// Dotted path of the offending field (`readers.period_ms`), or empty.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// Errors of the simulator.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    /// A scenario (or cost) file is malformed or inconsistent.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The engine refused an operation (a bug in the workload or the engine).
    #[error("engine: {0}")]
    Engine(#[from] hierstat::Error),
    /// The memcg model refused an operation.
    #[error("memcg model: {0}")]
    Memcg(#[from] models::memcg::MemcgError),
    /// The workingset model refused an operation.
    #[error("workingset model: {0}")]
    Workingset(#[from] models::workingset::WorkingsetError),
    /// The NUMA-balancing model refused its input.
    #[error("NUMA-balancing model: {0}")]
    Numab(#[from] numab::NumabError),
    /// A policy name that no runner knows.
    #[error("unknown policy `{name}` for scenario `{scenario}` (known: {known})")]
    UnknownPolicy {
        /// The policy asked for.
        name: String,
        /// The scenario.
        scenario: String,
        /// The names that are accepted.
        known: String,
    },
    /// A runner thread could not be started (a thread or address-space
    /// limit).
    #[error("{0}; lower `threads` or `writers.cpus`")]
    Thread(#[from] simcore::thread::SpawnError),
    /// The failure of a scenario kind registered from another crate (kernel
    /// mode: a cgroup or process operation).
    #[error("{kind}")]
    Kind {
        /// The kind's name.
        kind: &'static str,
        /// What failed.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The run was cancelled ([`crate::RunOptions::cancel`], or the
    /// process's SIGINT/SIGTERM handler); a kernel run has cleaned up.
    #[error("interrupted")]
    Cancelled,
}
