//! The crate's error type.

use thiserror::Error;

/// A problem in a scenario file: which file, where, which field, and what.
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

impl ScenarioError {
    /// A semantic problem with `field` of the scenario `text` read from
    /// `file`: the line is that of the field's key (or of its table header,
    /// see [`crate::spec::locate`]).
    pub fn at(file: &str, text: &str, field: &str, message: String) -> ScenarioError {
        ScenarioError {
            file: file.to_string(),
            line: crate::spec::locate(text, field),
            field: field.to_string(),
            message: crate::spec::elide(&crate::spec::escape(&message), crate::spec::MESSAGE_MAX),
        }
    }
}

/// Errors of the simulator.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    /// A scenario file is malformed or inconsistent.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A cost-model file is malformed.
    #[error("cost model: {0}")]
    Cost(String),
    /// The engine refused an operation (a bug in the workload or the engine).
    #[error("engine: {0}")]
    Engine(String),
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
    /// A configuration that the runner cannot execute.
    #[error("{0}")]
    Config(String),
    /// Kernel mode (`hostkernel`): the host cannot run it
    /// ([`hostkernel::Error::is_host_unsupported`]), the run was
    /// interrupted, or a cgroup or process operation failed.
    #[error(transparent)]
    Kernel(#[from] hostkernel::Error),
    /// A runner thread could not be started (a thread or address-space
    /// limit).
    #[error("{0}; lower `threads` or `writers.cpus`")]
    Thread(#[from] simcore::thread::SpawnError),
    /// The run was cancelled through its progress callback.
    #[error("cancelled")]
    Cancelled,
}
