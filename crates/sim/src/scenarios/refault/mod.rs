//! The `refault-storm` scenario (seed 003): workingset refault latency and
//! decision quality under each stats flush policy, on 96 logical CPUs.
//!
//! The seed: on 5.15 `workingset_refault` flushed the memcg stats of the
//! whole tree synchronously whenever the global update threshold was
//! exceeded; on a 96-CPU systemd machine with busy services that made
//! refaults average 221955 ns against 2144 ns on 5.10, and flushing only
//! when the periodic flush is late (`linux-5.15-ratelimited`) brought it
//! back to 1663 ns, at the price of stats up to 4 s stale. This runner
//! measures both sides, per policy: the refault latency (funclatency-style
//! histogram, mean, percentiles), the flush latency, and the **decision
//! mismatch rate**: the fraction of refaults whose activation decision
//! differs from the one exact list sizes give (the workingset model keeps
//! exact lists beside the statistics).
//!
//! The scenario file is [`crate::spec::RefaultScenario`]; [`run`] runs its
//! `[refault]` table ([`crate::run()`] runs the whole file). Metric names in the report: `refault_latency_ns`,
//! `flush_latency_ns`, `decision_mismatch_rate`, plus `refaults_per_sec`,
//! `refault_flush_fraction`, `activation_rate`, `exact_activation_rate`,
//! `skipped_flushes`, `flush_waits`, `async_requests`, `evictions_per_sec`.

pub mod flush;
pub mod storm;
mod world;

pub use storm::{run_once, run_once_policy, StormOutcome};

use crate::error::SimError;
use crate::report::{Claim, Claims, PolicyResult, RunReport};
use crate::run::{Progress, RunOptions};
use crate::scenarios::{push, push_latency};
use crate::spec::PolicySpec;
use hierstat::{Policy, Preset};
use std::collections::BTreeMap;

/// Metric: refault latency (`workingset_refault`, its flush included).
pub const REFAULT_LATENCY_NS: &str = "refault_latency_ns";
/// Metric: the fraction of activation decisions that differ from exact
/// list sizes.
pub const DECISION_MISMATCH_RATE: &str = "decision_mismatch_rate";

/// The policies the storm accepts: the hierstat presets.
pub fn known_policies() -> Vec<String> {
    Preset::ALL.iter().map(|p| p.name().to_string()).collect()
}

fn parse_policies(
    scenario: &str,
    names: &[String],
    user: &[PolicySpec],
) -> Result<Vec<Policy>, SimError> {
    names
        .iter()
        .map(|n| {
            crate::spec::policy::knobs_of(user, n).ok_or_else(|| SimError::UnknownPolicy {
                name: n.clone(),
                scenario: scenario.to_string(),
                known: known_policies()
                    .into_iter()
                    .chain(user.iter().map(|u| u.name.clone()))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        })
        .collect()
}

/// Appends one run's metrics to `r`.
pub fn push_outcome(r: &mut PolicyResult, o: &StormOutcome) {
    let secs = o.duration as f64 / 1e9;
    push_latency(r, REFAULT_LATENCY_NS, &o.refault_latencies);
    push_latency(r, "flush_latency_ns", &o.flush_latencies);
    push(r, DECISION_MISMATCH_RATE, "ratio", o.mismatch_rate(), false);
    push(r, "refaults_per_sec", "1/s", o.refaults as f64 / secs, true);
    let frac = |a: u64| storm::ratio(a, o.refaults);
    push(
        r,
        "refault_flush_fraction",
        "ratio",
        frac(o.refault_flushes),
        false,
    );
    push(r, "activation_rate", "ratio", frac(o.activations), false);
    push(
        r,
        "exact_activation_rate",
        "ratio",
        frac(o.exact_activations),
        false,
    );
    push(
        r,
        "skipped_flushes",
        "count",
        o.skipped_flushes as f64,
        false,
    );
    push(r, "flush_waits", "count", o.flush_waits as f64, false);
    push(r, "async_requests", "count", o.async_requests as f64, false);
    push(
        r,
        "evictions_per_sec",
        "1/s",
        o.evictions as f64 / secs,
        false,
    );
}

/// Runs `spec` under each policy (a preset) `runs` times (run `i` with seed
/// `seed + i`, runs interleaved across policies) and returns the results by
/// policy name.
///
/// # Errors
/// [`SimError::UnknownPolicy`], [`SimError::Cancelled`] never (the
/// progress callback only observes), engine errors.
pub fn run(
    spec: &crate::spec::RefaultSpec,
    policies: &[String],
    runs: u32,
    seed: u64,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    run_with(spec, policies, &[], runs, seed, opts, progress)
}

/// [`run`] where policies may also name the scenario's `user` policies
/// (`[[policy]]` tables).
///
/// # Errors
/// As [`run`].
pub fn run_with(
    spec: &crate::spec::RefaultSpec,
    policies: &[String],
    user: &[PolicySpec],
    runs: u32,
    seed: u64,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let presets = parse_policies("refault-storm", policies, user)?;
    if presets.is_empty() {
        return Err(SimError::Config(
            "refault-storm needs at least one policy".into(),
        ));
    }
    progress(Progress::Total(u64::from(runs) * presets.len() as u64));
    let mut out: BTreeMap<String, PolicyResult> = BTreeMap::new();
    for run in 0..runs {
        for (p, name) in presets.iter().zip(policies) {
            let o = run_once_policy(spec, *p, seed + u64::from(run), &opts.costs)?;
            push_outcome(out.entry(name.clone()).or_default(), &o);
            progress(Progress::Step(format!("{name} run {}", run + 1)));
        }
    }
    Ok(out)
}

/// The seed's claims on a refault-storm run (seed 003), those whose
/// policies are missing from the run left out.
pub fn claims(report: &RunReport) -> Vec<Claim> {
    let mut claims = Claims::new(report);
    let lat = REFAULT_LATENCY_NS;
    let mm = DECISION_MISMATCH_RATE;
    let (l515, lrl, lh) = (
        report.mean_of("linux-5.15", lat),
        report.mean_of("linux-5.15-ratelimited", lat),
        report.mean_of("hierstat", lat),
    );
    if let (Some(a), Some(b)) = (l515, lrl) {
        claims.add(
            "linux-5.15 refault latency >> linux-5.15-ratelimited",
            format!("{a:.0} ns vs {b:.0} ns ({:.0}×)", a / b),
            "221955 ns vs 1663 ns (133×)",
            a >= 10.0 * b,
        );
    }
    let (m515, mrl, mh) = (
        report.mean_of("linux-5.15", mm),
        report.mean_of("linux-5.15-ratelimited", mm),
        report.mean_of("hierstat", mm),
    );
    if let (Some(a), Some(b)) = (m515, mrl) {
        claims.add(
            "linux-5.15-ratelimited decides on staler stats than linux-5.15",
            format!(
                "{:.3}% vs {:.3}% of decisions differ from exact",
                100.0 * b,
                100.0 * a
            ),
            "ratelimited: stats up to 4 s old (9b3016154c91)",
            b > a,
        );
    }
    if let (Some(h), Some(b)) = (lh, lrl) {
        claims.add(
            "hierstat refault latency <= linux-5.15-ratelimited",
            format!("{:.2}×", h / b),
            "ours must win both",
            h <= b,
        );
    }
    if let (Some(h), Some(b)) = (mh, mrl) {
        claims.add(
            "hierstat decisions closer to exact than linux-5.15-ratelimited",
            format!("{:.3}% vs {:.3}%", 100.0 * h, 100.0 * b),
            "ours must win both",
            h < b,
        );
    }
    claims.into_vec()
}

#[cfg(test)]
mod tests;
