//! The scenarios' runners: each turns a parsed scenario into results by
//! policy ([`crate::run()`] assembles the report).
//!
//! Runs are interleaved (run 1 of every policy, then run 2 ...) so that a
//! drift of the host during a real-mode scenario affects every policy alike.

pub mod false_sharing;
pub mod kernel;
pub mod numab;
pub mod refault;
pub mod stale_read;
pub mod stat_readers;
pub mod update_path;

use crate::backend::StatsBackend;
use crate::baselines::EagerTree;
use crate::engine::EngineBackend;
use crate::error::SimError;
use crate::report::{Log2Histogram, MetricSamples, PolicyResult};
use crate::run::{Progress, RunOptions};
use crate::spec::{StatsScenario, Workload};
use crate::workload::TreeShape;
use hierstat::{Policy, Preset};
use std::collections::BTreeMap;

/// A policy a stats scenario can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyChoice {
    /// The hierstat engine under a preset.
    Engine(Preset),
    /// The hierstat engine under a user policy (`[[policy]]`).
    User(Policy),
    /// The pre-rstat eager-atomic baseline.
    PreRstat,
}

impl PolicyChoice {
    /// Parses a policy name.
    pub fn parse(name: &str) -> Option<Self> {
        if name == EagerTree::NAME {
            return Some(PolicyChoice::PreRstat);
        }
        name.parse::<Preset>().ok().map(PolicyChoice::Engine)
    }

    /// Resolves a policy name of scenario `sc`: a built-in name, or one of
    /// its `[[policy]]` tables.
    pub fn of(sc: &StatsScenario, name: &str) -> Option<Self> {
        PolicyChoice::parse(name).or_else(|| {
            crate::spec::policy::find(&sc.policy, name)
                .and_then(|s| s.resolve().ok())
                .map(PolicyChoice::User)
        })
    }
}

/// The policy names a workload accepts.
pub fn known_policies(workload: Workload) -> Vec<String> {
    match workload {
        Workload::FalseSharing => false_sharing::LAYOUTS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        _ => Preset::ALL
            .iter()
            .map(|p| p.name().to_string())
            .chain(std::iter::once(EagerTree::NAME.to_string()))
            .collect(),
    }
}

/// A backend of either kind, dispatched without dynamic calls on hot loops.
#[derive(Debug)]
pub enum AnyBackend {
    /// hierstat under a preset.
    Engine(Box<EngineBackend>),
    /// The eager-atomic baseline.
    Eager(EagerTree),
}

impl AnyBackend {
    /// Builds `choice` over `shape`.
    pub fn build(
        choice: PolicyChoice,
        shape: &TreeShape,
        items: usize,
        shards: usize,
    ) -> Result<Self, SimError> {
        Ok(match choice {
            PolicyChoice::Engine(p) => {
                AnyBackend::Engine(Box::new(EngineBackend::new(p, shape, items, shards)?))
            }
            PolicyChoice::User(p) => AnyBackend::Engine(Box::new(EngineBackend::with_policy(
                "user", p, shape, items, shards,
            )?)),
            PolicyChoice::PreRstat => AnyBackend::Eager(EagerTree::new(shape, items)),
        })
    }
}

/// Calls `$body` with `$b` bound to the concrete backend inside `$any`.
#[macro_export]
macro_rules! with_backend {
    ($any:expr, $b:ident => $body:expr) => {
        match $any {
            $crate::scenarios::AnyBackend::Engine(e) => {
                let $b: &$crate::engine::EngineBackend = e;
                $body
            }
            $crate::scenarios::AnyBackend::Eager(e) => {
                let $b: &$crate::baselines::EagerTree = e;
                $body
            }
        }
    };
}

/// The error for a stats scenario without a table its workload needs
/// (validation rejects such files; this covers a scenario built or edited
/// in code).
pub fn missing_table(scenario: &str, table: &str) -> SimError {
    SimError::Config(format!("scenario `{scenario}` has no [{table}] table"))
}

/// The error for a policy no runner knows.
pub fn unknown_policy(sc: &StatsScenario, name: &str) -> SimError {
    SimError::UnknownPolicy {
        name: name.to_string(),
        scenario: sc.name.clone(),
        known: sc
            .workload
            .map(known_policies)
            .unwrap_or_default()
            .into_iter()
            .chain(sc.policy.iter().map(|p| p.name.clone()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Checks the scenario's policies against the workload's names and its
/// `[[policy]]` tables (not for false-sharing, which runs layouts).
pub fn check_policies(sc: &StatsScenario, workload: Workload) -> Result<(), SimError> {
    let mut known = known_policies(workload);
    if workload != Workload::FalseSharing {
        known.extend(sc.policy.iter().map(|p| p.name.clone()));
    }
    for p in &sc.policies {
        if !known.iter().any(|k| k == p) {
            return Err(SimError::UnknownPolicy {
                name: p.clone(),
                scenario: sc.name.clone(),
                known: known.join(", "),
            });
        }
    }
    Ok(())
}

/// Runs a stats scenario (the `kind = "stats"` runner): every policy
/// `runs` times, its results by policy name.
pub fn run_stats(
    sc: &StatsScenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let workload = sc
        .workload
        .ok_or_else(|| SimError::Config(format!("scenario `{}` has no workload", sc.name)))?;
    check_policies(sc, workload)?;
    match workload {
        Workload::UpdatePath => update_path::run(sc, opts, progress),
        Workload::StatReaders => stat_readers::run(sc, opts, progress),
        Workload::StaleRead => stale_read::run(sc, opts, progress),
        Workload::FalseSharing => false_sharing::run(sc, progress),
    }
}

/// Appends one run's value of a metric.
pub fn push(r: &mut PolicyResult, name: &str, unit: &str, value: f64, higher_is_better: bool) {
    let m = r
        .metrics
        .entry(name.to_string())
        .or_insert_with(|| MetricSamples {
            unit: unit.to_string(),
            higher_is_better,
            ..MetricSamples::default()
        });
    m.values.push(value);
}

/// Appends one run's latency distribution: mean as the value, p50/p99/
/// p999/max as percentiles, and the samples into the merged histogram.
pub fn push_latency(r: &mut PolicyResult, name: &str, samples: &[u64]) {
    push_distribution(r, name, "ns", samples);
    let m = r.metrics.get_mut(name).expect("pushed above");
    let h = m.histogram.get_or_insert_with(Log2Histogram::default);
    for &v in samples {
        h.record(v);
    }
}

/// Appends one run's distribution summary (mean as the value, p50/p99/
/// p999/max as percentiles) without a histogram.
pub fn push_distribution(r: &mut PolicyResult, name: &str, unit: &str, samples: &[u64]) {
    let m = r
        .metrics
        .entry(name.to_string())
        .or_insert_with(|| MetricSamples {
            unit: unit.to_string(),
            higher_is_better: false,
            ..MetricSamples::default()
        });
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let mean = if sorted.is_empty() {
        0.0
    } else {
        sorted.iter().map(|&v| v as f64).sum::<f64>() / sorted.len() as f64
    };
    m.values.push(mean);
    for (k, q) in [("p50", 0.50), ("p99", 0.99), ("p999", 0.999), ("max", 1.0)] {
        m.percentiles
            .entry(k.to_string())
            .or_default()
            .push(quantile(&sorted, q) as f64);
    }
}

pub use simcore::stats::quantile;

/// Items in the schema of a workload.
pub fn schema_items(sc: &StatsScenario) -> usize {
    let w = sc.writers.as_ref().map(|w| w.items).unwrap_or(1);
    let r = sc.readers.as_ref().and_then(|r| r.items).unwrap_or(w);
    let u = sc.update.as_ref().map(|u| u.items).unwrap_or(1);
    w.max(r).max(u).max(1) as usize
}

/// The backend as a trait object, for code off the hot path.
pub fn as_dyn(b: &AnyBackend) -> &dyn StatsBackend {
    match b {
        AnyBackend::Engine(e) => e.as_ref(),
        AnyBackend::Eager(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_parse() {
        assert_eq!(
            PolicyChoice::parse("pre-rstat"),
            Some(PolicyChoice::PreRstat)
        );
        assert_eq!(
            PolicyChoice::parse("linux-6.8"),
            Some(PolicyChoice::Engine(Preset::Linux6_8))
        );
        assert_eq!(PolicyChoice::parse("linux-9"), None);
    }
}
