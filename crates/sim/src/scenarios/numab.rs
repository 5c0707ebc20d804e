//! NUMA-balancing scenarios (`kind = "numab"`): each scanner version of
//! the `numab` crate run side by side, its counters turned into metrics.

use super::push;
use crate::error::SimError;
use crate::report::{PolicyResult, Series};
use crate::run::Progress;
use numab::{self, ScannerVersion, ScenarioFile};
use std::collections::BTreeMap;

/// Metrics where a larger value is better.
const HIGHER_IS_BETTER: [&str; 3] = [
    "local_fraction",
    "hint_local_percent",
    "thp_migration_success",
];

/// Runs every policy (scanner version) of `file` `runs` times from `seed`.
pub fn run(
    file: &ScenarioFile,
    policies: &[String],
    runs: u32,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let versions = policies
        .iter()
        .map(|p| {
            p.parse::<ScannerVersion>()
                .map_err(|_| SimError::UnknownPolicy {
                    name: p.clone(),
                    scenario: file.name.clone(),
                    known: ScannerVersion::ALL
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    progress(Progress::Total(u64::from(runs) * versions.len() as u64));
    let mut out: BTreeMap<String, PolicyResult> = BTreeMap::new();
    for run in 0..runs {
        for (v, name) in versions.iter().zip(policies) {
            let res = numab::run(&file.numab, *v, seed.wrapping_add(u64::from(run)))
                .map_err(|e| SimError::Config(format!("{}: {e}", file.name)))?;
            let r = out.entry(name.clone()).or_default();
            for (metric, value, unit) in res.metrics() {
                push(r, metric, unit, value, HIGHER_IS_BETTER.contains(&metric));
            }
            if run == 0 {
                r.series.insert(
                    "scan_coverage".into(),
                    Series {
                        x_label: "VMA".into(),
                        y_label: "fraction scanned".into(),
                        points: res
                            .coverage_series()
                            .into_iter()
                            .map(|(i, f)| (i as f64, f))
                            .collect(),
                    },
                );
                r.series.insert(
                    "local_fraction".into(),
                    Series {
                        x_label: "virtual time (s)".into(),
                        y_label: "local accesses".into(),
                        points: res.local_series.clone(),
                    },
                );
            }
            progress(Progress::Step(format!("{name} run {}", run + 1)));
        }
    }
    Ok(out)
}
