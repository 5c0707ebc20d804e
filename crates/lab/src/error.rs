//! The framework's errors: [`ScenarioError`] for a bad file, [`RunError`]
//! for everything a run can meet.

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

/// Why a scenario run failed, as every front end sees it.
///
/// The kinds' own failures (an engine or model error, a cgroup operation)
/// come as [`RunError::Kind`]; the simulator keeps its richer error type
/// and converts at the [`crate::scenario::Spec::run`] boundary.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RunError {
    /// A scenario (or cost) file is malformed or inconsistent.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
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
    /// The failure of a scenario kind: the engine or a model refused an
    /// operation, a cgroup or process operation failed.
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
