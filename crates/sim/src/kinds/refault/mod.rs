//! The `refault` kind: the refault storm (source 003): workingset refault latency and
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
//! The scenario file is [`RefaultScenario`]; [`run_with`] runs its `[refault]`
//! table. Metric names in the report: `refault_latency_ns`,
//! `flush_latency_ns`, `decision_mismatch_rate`, plus `refaults_per_sec`,
//! `refault_flush_fraction`, `activation_rate`, `exact_activation_rate`,
//! `skipped_flushes`, `flush_waits`, `async_requests`, `evictions_per_sec`.
//!
//! A policy's `read_tolerance` (issue 37: `forced`, `clean`, `1%` ...)
//! sets how its refaults read the eviction lruvec's sizes ([`storm`]'s
//! docs); in a run where some policy reads other than `guarded` (the
//! built-in `tolerance-refault`), every policy also reports the `stats`
//! kind's per-read metrics, each refault a read: `reads`, `read_error_pages`,
//! `read_bound_pages` (over `reads_bounded`, the reads with a bound),
//! `read_flush_ns`, `reads_flushed`,
//! `partial_flushes`, `unmet_reads`, `stale_reads` (out of bound),
//! `read_counters_aggregated`; and the tolerance claims of issue 37.

pub mod estimate;
pub mod flush;
pub mod spec;
pub mod storm;
mod world;

pub use spec::{BackgroundSpec, LatencySpec, RefaultScenario, RefaultSpec, WorkloadSpec};
pub use storm::{run_once, run_once_policy, run_once_read, StormOutcome};

use crate::cost::CostModel;
use crate::error::SimError;
use crate::kinds::stats::stat_readers::{
    tolerance_claims, READ_COUNTERS, READ_ERROR_PAGES, READ_FLUSH_NS, STALE_READS, UNMET_READS,
};
use hierstat::Preset;
use lab::interleave::interleaved;
use lab::progress::Steps;
use lab::report::{Claim, Claims, InSize, PolicyResult, RunReport};
use lab::ScenarioError;
use lab::{Context, Estimate, Header, Kind, RunError, RunOutput, Source, Spec};
use std::collections::BTreeMap;

/// The `refault` kind.
pub static KIND: Kind = Kind {
    name: "refault",
    ranges: spec::RANGES,
    builtins: BUILTIN,
    work_classes: &[&estimate::REFAULT],
    parse,
};

/// The built-in refault scenarios.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "refault-storm",
        include_str!("../../../../../scenarios/refault-storm.toml"),
    ),
    (
        "tolerance-refault",
        include_str!("../../../../../scenarios/tolerance-refault.toml"),
    ),
];

fn parse(src: &Source<'_>) -> Result<(Header, Box<dyn Spec>), ScenarioError> {
    let sc = RefaultScenario::parse(src)?;
    Ok((sc.header(src)?, Box::new(sc.refault)))
}

impl Spec for RefaultSpec {
    fn known_policies(&self) -> Vec<String> {
        known_policies()
    }

    fn parallelism(&self, _header: &Header) -> u32 {
        self.cpus
    }

    fn estimate(&self, header: &Header, ctx: &Context) -> Estimate {
        estimate::estimate(self, header, &CostModel::of(ctx))
    }

    fn run(&self, header: &Header, steps: &mut Steps<'_>) -> Result<RunOutput, RunError> {
        Ok(run_with(self, header, steps)?.into())
    }

    fn claims(&self, report: &RunReport) -> Vec<Claim> {
        claims(report)
    }

    fn source(&self, header: &Header) -> String {
        let file = RefaultScenario {
            refault: self.clone(),
            ..RefaultScenario::default_with(header)
        };
        toml::to_string(&file).unwrap_or_default()
    }

    /// One run; the sizes set in its own table stay.
    fn shrink_for_smoke_test(&mut self, header: &mut Header) {
        header.runs = 1;
    }

    fn sweep_axes(&self) -> Option<(&'static str, &'static str)> {
        Some((REFAULT_LATENCY_NS, DECISION_MISMATCH_RATE))
    }

    fn set_sweep_durations(&mut self, duration_ms: Option<u64>, warmup_ms: Option<u64>) {
        if let Some(d) = duration_ms {
            self.duration_ms = d;
        }
        if let Some(w) = warmup_ms {
            self.warmup_ms = w;
        }
    }
}

/// Metric: refault latency (`workingset_refault`, its flush included).
pub const REFAULT_LATENCY_NS: &str = "refault_latency_ns";
/// Metric: the fraction of activation decisions that differ from exact
/// list sizes.
pub const DECISION_MISMATCH_RATE: &str = "decision_mismatch_rate";

/// The policies the storm accepts: the hierstat presets.
pub fn known_policies() -> Vec<String> {
    Preset::ALL.iter().map(|p| p.name().to_string()).collect()
}

/// The error for a policy the storm cannot run.
fn unknown_policy(header: &Header, name: &str) -> lab::RunError {
    lab::RunError::UnknownPolicy {
        name: name.to_string(),
        scenario: header.name.clone(),
        known: known_policies()
            .into_iter()
            .chain(header.user_policies.iter().map(|u| u.name().to_string()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Appends one run's metrics to `r`.
pub fn push_outcome(r: &mut PolicyResult, o: &StormOutcome) {
    let secs = o.duration as f64 / 1e9;
    r.push_latency(REFAULT_LATENCY_NS, &o.refault_latencies);
    r.push_latency("flush_latency_ns", &o.flush_latencies);
    r.push(DECISION_MISMATCH_RATE, "ratio", o.mismatch_rate(), false);
    r.push("refaults_per_sec", "1/s", o.refaults as f64 / secs, true);
    let frac = |a: u64| storm::ratio(a, o.refaults);
    r.push(
        "refault_flush_fraction",
        "ratio",
        frac(o.refault_flushes),
        false,
    );
    r.push("activation_rate", "ratio", frac(o.activations), false);
    r.push(
        "exact_activation_rate",
        "ratio",
        frac(o.exact_activations),
        false,
    );
    r.push("skipped_flushes", "count", o.skipped_flushes as f64, false);
    r.push("flush_waits", "count", o.flush_waits as f64, false);
    r.push("async_requests", "count", o.async_requests as f64, false);
    r.push("evictions_per_sec", "1/s", o.evictions as f64 / secs, false);
}

/// Whether some policy of `header` reads other than `guarded`: then every
/// policy reports the per-read metrics ([`push_reads`]).
pub fn reads_measured(header: &Header) -> bool {
    header
        .user_policies
        .iter()
        .any(|p| p.reader.is_some_and(|m| !m.is_guarded()))
}

/// Appends one run's per-read metrics to `r` (each refault with an
/// eviction group a read; see the module docs).
pub fn push_reads(r: &mut PolicyResult, o: &StormOutcome) {
    r.push_distribution(READ_ERROR_PAGES, "pages", &o.read_errors);
    r.push_distribution("read_bound_pages", "pages", &o.read_bounds);
    // The reads `read_bound_pages` covers (none: its figures are 0).
    r.push("reads_bounded", "count", o.read_bounds.len() as f64, false);
    r.push_distribution(READ_FLUSH_NS, "ns", &o.read_flush_ns);
    let reads = o.read_flush_ns.len().max(1) as f64;
    r.push("reads", "count", o.read_flush_ns.len() as f64, false);
    r.push("reads_flushed", "count", o.refault_flushes as f64, false);
    r.push("partial_flushes", "count", o.partial_flushes as f64, false);
    r.push(UNMET_READS, "count", o.unmet_reads as f64, false);
    r.push(STALE_READS, "count", o.stale_reads as f64, false);
    r.push(
        READ_COUNTERS,
        "count/read",
        o.read_counters as f64 / reads,
        false,
    );
}

/// Runs `spec` under each policy of `header` (a preset or one of its
/// `[[policy]]` tables), interleaved ([`interleaved`]), and returns the
/// results by policy name.
///
/// # Errors
/// [`lab::RunError::UnknownPolicy`], engine errors, cancellation.
pub fn run_with(
    spec: &RefaultSpec,
    header: &Header,
    steps: &mut Steps<'_>,
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let extended = reads_measured(header);
    interleaved(header, steps, 1, |run, r, steps| {
        // The storm runs on the engine: its known policies are the presets
        // and the user policies, never the pre-rstat baseline.
        let choice = header.flush_policy(run.policy)?;
        let Some(knobs) = choice.knobs() else {
            return Err(SimError::from(unknown_policy(header, run.policy)));
        };
        let read = choice.reader.unwrap_or_default();
        let costs = CostModel::of(steps.context());
        let o = run_once_read(spec, knobs, read, run.seed, &costs)?;
        push_outcome(r, &o);
        if extended {
            push_reads(r, &o);
        }
        Ok(steps.step(run.label())?)
    })
}

/// Source 003's claims on a refault-storm run, those whose
/// policies are missing from the run left out.
///
/// `tolerance-refault` (issue 37, not a source) is judged on issue 37's
/// target alone, as the `stats` kind's tolerance scenarios are: its
/// presets' rows are refault-storm's, whose claims judge them there.
pub fn claims(report: &RunReport) -> Vec<Claim> {
    let mut claims = Claims::new(report);
    let lat = REFAULT_LATENCY_NS;
    if report.scenario.starts_with("tolerance-") {
        tolerance_claims(report, &mut claims, "refault", lat);
        return claims.into_vec();
    }
    let mm = DECISION_MISMATCH_RATE;
    let (l515, lrl, lh) = (
        report.mean_of("linux-5.15", lat),
        report.mean_of("linux-5.15-ratelimited", lat),
        report.mean_of("hierstat", lat),
    );
    if let (Some(a), Some(b)) = (l515, lrl) {
        let share = report.mean_of("linux-5.15", "refault_flush_fraction");
        let flush = report.mean_of("linux-5.15", "flush_latency_ns");
        let size = InSize {
            published: 221_955.0 / 1663.0,
            measured: a / b,
            unit: "×",
        };
        claims.add_in_size(
            "linux-5.15 refault latency over linux-5.15-ratelimited's, within 2x of the source's ratio",
            size,
            &format!(
                "{a:.0} ns vs {b:.0} ns; 5.15: {:.1}% of refaults flush, {:.2} ms a flush",
                100.0 * share.unwrap_or(f64::NAN),
                flush.unwrap_or(f64::NAN) / 1e6
            ),
            "221955 ns vs 1663 ns (133×)",
            &format!(
                "5.15's average is its flushing refaults' share times a root flush of the tree; \
                 the source's tree and update rate are not published (96 and 128-CPU hosts): \
                 ours, 120 services on 96 CPUs, flushes the share and at the cost printed here; \
                 {}",
                if size.above() {
                    "a product under half as large (fewer groups, fewer updates per flush) would \
                     reach the source's ratio"
                } else {
                    "a 2x larger product (more groups, more updates per flush) would reach the \
                     source's ratio"
                }
            ),
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
        // Neither flushes synchronously in the refault path (ratelimited:
        // only if the periodic flush is 2 periods late; hierstat: over its
        // threshold it asks its background flusher), so the mechanism gives
        // the same latency; the band is the trajectory's noise (0.99x-1.01x
        // over seeds and memcg-model revisions, docs/memcg.md).
        claims.add(
            "hierstat refault latency within 5% of linux-5.15-ratelimited's (neither flushes in the refault path)",
            format!("{:.2}×", h / b),
            "ours must win both: as fast, decisions closer to exact",
            (h / b - 1.0).abs() <= 0.05,
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
