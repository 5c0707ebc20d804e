//! The one entry point that runs a scenario of any kind ([`run`]) and the
//! one that checks a run against its seed's claims ([`claims`]).

use crate::cost::CostModel;
use crate::error::SimError;
use crate::report::{Claim, RunReport};
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
    let mut facts = std::collections::BTreeMap::new();
    let policies = match sc {
        Scenario::Stats(s) => crate::scenarios::run_stats(s, opts, progress)?,
        Scenario::Numab { file, .. } => {
            crate::scenarios::numab::run(file, &file.policies, file.runs, file.seed, progress)?
        }
        Scenario::Refault { file, .. } => crate::scenarios::refault::run_with(
            &file.refault,
            &file.policies,
            &file.policy,
            file.runs,
            file.seed,
            opts,
            progress,
        )?,
        Scenario::Kernel { file, .. } => {
            let (policies, f) = crate::scenarios::kernel::run(file, progress)?;
            facts = f;
            policies
        }
    };
    let mut report = RunReport::new(sc, policies);
    report.facts = facts;
    Ok(report)
}

/// The seed's claims on `report`, a run of `sc`: each scenario's own
/// `claims` (defined next to its runner, on the metric-name constants its
/// runner writes).
pub fn claims(report: &RunReport, sc: &Scenario) -> Vec<Claim> {
    use crate::spec::Workload;
    match sc {
        Scenario::Stats(s) => match s.workload {
            Some(Workload::UpdatePath) => crate::scenarios::update_path::claims(report),
            Some(Workload::StatReaders) => crate::scenarios::stat_readers::claims(report),
            Some(Workload::StaleRead) => crate::scenarios::stale_read::claims(report),
            Some(Workload::FalseSharing) => crate::scenarios::false_sharing::claims(report),
            None => Vec::new(),
        },
        Scenario::Numab { .. } => crate::scenarios::numab::claims(report),
        Scenario::Refault { .. } => crate::scenarios::refault::claims(report),
        Scenario::Kernel { .. } => crate::scenarios::kernel::claims(report),
    }
}
