//! The one entry point that runs a scenario of any kind: [`run`].

use crate::cost::CostModel;
use crate::error::SimError;
use crate::report::RunReport;
use crate::spec::Scenario;

/// Options of a scenario run that do not come from the file.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Per-unit costs for simulated mode.
    pub costs: CostModel,
}

/// Progress notifications for a front end (progress bars).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// The number of steps of the whole scenario.
    Total(u64),
    /// One step is done; the label says which.
    Step(String),
}

/// Runs `sc` with its runner (stats workloads on the engine, the numab
/// scanner model, the refault storm) and assembles its report: every policy
/// `runs` times, runs interleaved across policies, run `i` with seed
/// `seed + i`.
///
/// # Errors
/// Unknown policies, engine errors, model errors.
pub fn run(
    sc: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, SimError> {
    let policies = match sc {
        Scenario::Stats(s) => crate::scenarios::run_stats(s, opts, progress)?,
        Scenario::Numab { file, .. } => {
            crate::scenarios::numab::run(file, &file.policies, file.runs, file.seed, progress)?
        }
        Scenario::Refault { file, .. } => crate::refault::run(
            &file.refault,
            &file.policies,
            file.runs,
            file.seed,
            opts,
            progress,
        )?,
    };
    Ok(RunReport::new(sc, policies))
}
