//! The simulator's error: what a simulated or real-thread run can meet,
//! converted to the framework's [`lab::RunError`] at the
//! [`lab::Spec::run`] boundary.

use lab::{RunError, ScenarioError};
use thiserror::Error;

/// Errors of the simulator.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    /// What the framework reports (a bad file, an unknown policy, a thread
    /// that could not start, a cancelled run).
    #[error(transparent)]
    Run(#[from] RunError),
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
}

impl From<ScenarioError> for SimError {
    fn from(e: ScenarioError) -> SimError {
        SimError::Run(e.into())
    }
}

impl From<simcore::thread::SpawnError> for SimError {
    fn from(e: simcore::thread::SpawnError) -> SimError {
        SimError::Run(e.into())
    }
}

impl From<SimError> for RunError {
    fn from(e: SimError) -> RunError {
        match e {
            SimError::Run(e) => e,
            e => RunError::Kind {
                kind: "simulator",
                source: Box::new(e),
            },
        }
    }
}
