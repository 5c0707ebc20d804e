//! `stat-readers`: many groups with writers, `memory.stat` readers every
//! 100 ms; read latency percentiles, reads over 1 ms, stale reads.
//!
//! Source 000 patch 5/5 (Wei Xu's test): 250k readers in 50k cgroups on 384
//! CPUs, 99.9% of reads ≤ 50 µs and none over 100 ms with subtree flushes
//! and per-memcg thresholds.

use super::{Readers, StatsScenario};
use crate::cost::CostModel;
use crate::error::SimError;
use crate::runner::{real, sim};
use crate::select::AnyBackend;
use crate::with_backend;
use crate::workload::{FlusherSpec, ReadersSpec, SpikeSpec, TreeShape, WritersSpec};
use lab::interleave::interleaved;
use lab::progress::Steps;
use lab::report::{format_us, Claim, Claims, RunReport};
use lab::report::{Mode, PolicyResult};
use lab::Header;
use simcore::time::{MILLIS, SECONDS};
use std::collections::BTreeMap;
use std::time::Duration;

/// Metric: read latency (a `memory.stat` read, flush included).
pub const READ_LATENCY_NS: &str = "read_latency_ns";
/// Metric: reads that returned a value older than the error bound allows.
pub const STALE_READS: &str = "stale_reads";

/// Latency above which a read counts in `reads_over_1ms`.
pub const SLOW_READ_NS: u64 = MILLIS;

/// Runs the stat-readers workload.
///
/// # Errors
/// Engine errors, a thread that cannot start, cancellation.
pub fn run(
    h: &Header,
    sc: &StatsScenario,
    w: &Readers,
    steps: &mut Steps<'_>,
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let shape = TreeShape::from_spec(&w.tree);
    let items = sc.schema_items();
    let extended = reads_measured(h, &w.readers);
    interleaved(h, steps, 1, |run, r, steps| {
        let choice = h.flush_policy(run.policy)?;
        let seed = run.seed;
        // The policy's `read_tolerance`, else the scenario's.
        let readers = ReadersSpec {
            tolerance: choice.reader.unwrap_or(w.readers.tolerance),
            ..w.readers.clone()
        };
        match h.mode {
            Mode::Sim => {
                let cpus = sc.cpus.unwrap_or(1) as usize;
                let mut b = AnyBackend::build(choice, &shape, items, cpus)?;
                let setup = sim_setup(
                    sc,
                    steps,
                    items,
                    seed,
                    &w.writers,
                    Some(&readers),
                    w.flusher.as_ref(),
                    None,
                );
                let o = with_backend!(&mut b, mut be => sim::run(be, &shape, &setup));
                record_sim(r, &o);
                if extended {
                    record_reads(r, &o);
                }
            }
            Mode::Real | Mode::Kernel => {
                let threads = sc.threads() as usize;
                let b = AnyBackend::build(choice, &shape, items, threads)?;
                let writers = w
                    .writers
                    .cpus
                    .map(|c| c as usize)
                    .unwrap_or(threads.saturating_sub(1).max(1));
                let setup = real::ReadersSetup {
                    writers,
                    writer_spec: w.writers.clone(),
                    readers,
                    items,
                    duration: Duration::from_millis(sc.duration_ms),
                    seed,
                };
                let o = with_backend!(&b, be => real::run_readers(be, &shape, &setup))?;
                r.push_latency(READ_LATENCY_NS, &o.latencies);
                let slow = o.latencies.iter().filter(|&&l| l > SLOW_READ_NS).count();
                r.push("reads", "count", o.latencies.len() as f64, true);
                r.push("reads_over_1ms", "count", slow as f64, false);
                r.push(STALE_READS, "count", o.stale_reads as f64, false);
                r.push(
                    "update_ops_per_sec",
                    "ops/s",
                    o.updates as f64 / o.elapsed.as_secs_f64().max(1e-9),
                    true,
                );
            }
        }
        Ok(steps.step(run.label())?)
    })
}

/// The simulated setup of a readers scenario (also used by stale-read).
#[allow(clippy::too_many_arguments)]
pub(crate) fn sim_setup(
    sc: &StatsScenario,
    steps: &Steps<'_>,
    items: usize,
    seed: u64,
    writers: &WritersSpec,
    readers: Option<&ReadersSpec>,
    flusher: Option<&FlusherSpec>,
    spikes: Option<&SpikeSpec>,
) -> sim::SimSetup {
    sim::SimSetup {
        cpus: sc.cpus.unwrap_or(1) as usize,
        duration: sc.duration_ms * MILLIS,
        seed,
        costs: CostModel::of(steps.context()).into_owned(),
        items,
        writers: writers.clone(),
        readers: readers.cloned(),
        flush_period: flusher.map(|f| f.period_ms * MILLIS),
        spikes: spikes.cloned(),
    }
}

/// Whether a run records the readers' error and flush work
/// ([`record_reads`]): when the scenario's readers or one of its policies
/// read other than `guarded` (a scenario that does not keeps its report as
/// it was).
pub fn reads_measured(h: &Header, readers: &ReadersSpec) -> bool {
    !readers.tolerance.is_guarded()
        || h.user_policies
            .iter()
            .any(|p| p.reader.is_some_and(|m| !m.is_guarded()))
}

/// Metric: per read, the largest distance of an item from its exact value.
pub const READ_ERROR_PAGES: &str = "read_error_pages";
/// Metric: tolerance reads with an item whose bound missed its budget.
pub const UNMET_READS: &str = "unmet_reads";
/// Metric: per read, its flush's duration (0 if it did not flush): the
/// read's cost beyond the syscalls and formatting every read pays.
pub const READ_FLUSH_NS: &str = "read_flush_ns";
/// Metric: counters a read's flush aggregated, per read.
pub const READ_COUNTERS: &str = "read_counters_aggregated";

/// Records how far the reads were from exact and what their flushes did,
/// per read (see [`reads_measured`]).
pub fn record_reads(r: &mut PolicyResult, o: &sim::SimOutcome) {
    r.push_distribution(READ_ERROR_PAGES, "pages", &o.read_errors);
    r.push_distribution("read_bound_pages", "pages", &o.read_bounds);
    r.push_distribution(READ_FLUSH_NS, "ns", &o.read_flush_ns);
    let reads = o.read_latencies.len().max(1) as f64;
    r.push("reads_flushed", "count", o.reads_flushed as f64, false);
    r.push("partial_flushes", "count", o.partial_flushes as f64, false);
    r.push(UNMET_READS, "count", o.unmet_reads as f64, false);
    let w = &o.read_flush_work;
    r.push(
        READ_COUNTERS,
        "count/read",
        w.counters_aggregated as f64 / reads,
        false,
    );
    r.push(
        "read_shards_scanned",
        "count/read",
        w.shards_scanned as f64 / reads,
        false,
    );
    r.push(
        "read_groups_visited",
        "count/read",
        w.groups_visited as f64 / reads,
        false,
    );
}

/// Records the read metrics of a simulated run.
pub fn record_sim(r: &mut PolicyResult, o: &sim::SimOutcome) {
    r.push_latency(READ_LATENCY_NS, &o.read_latencies);
    let slow = o
        .read_latencies
        .iter()
        .filter(|&&l| l > SLOW_READ_NS)
        .count();
    let over_100ms = o
        .read_latencies
        .iter()
        .filter(|&&l| l > 100 * MILLIS)
        .count();
    r.push("reads", "count", o.read_latencies.len() as f64, true);
    r.push("reads_over_1ms", "count", slow as f64, false);
    r.push("reads_over_100ms", "count", over_100ms as f64, false);
    r.push(STALE_READS, "count", o.stale_reads as f64, false);
    r.push("flushes", "count", o.flushes as f64, false);
    r.push("skipped_flushes", "count", o.skipped_flushes as f64, false);
    r.push("lock_wait_ns", "ns", o.lock_wait as f64, false);
    r.push_distribution("flush_ns", "ns", &o.flush_durations);
    let per_flush = |v: u64| v as f64 / o.flushes.max(1) as f64;
    r.push(
        "flush_shards_scanned",
        "count/flush",
        per_flush(o.flush_work.shards_scanned),
        false,
    );
    r.push(
        "flush_groups_visited",
        "count/flush",
        per_flush(o.flush_work.groups_visited),
        false,
    );
    r.push(
        "flush_counters_aggregated",
        "count/flush",
        per_flush(o.flush_work.counters_aggregated),
        false,
    );
    r.push(
        "update_ops_per_sec",
        "ops/s",
        o.updates as f64 / (o.duration as f64 / SECONDS as f64),
        true,
    );
}

/// The source thread's claims on a stat-readers run (those whose policies are
/// missing from the run are left out).
///
/// The tolerance scenarios (`tolerance-*`: issue 37, not a source thread)
/// are judged on issue 37's target alone: their readers are not the
/// source's.
pub fn claims(report: &RunReport) -> Vec<Claim> {
    let mut claims = Claims::new(report);
    if report.scenario.starts_with("tolerance-") {
        tolerance_claims(report, &mut claims, "read", READ_LATENCY_NS);
        return claims.into_vec();
    }
    let m = READ_LATENCY_NS;
    let real = report.mode == lab::report::Mode::Real;
    if let (Some(p999), Some(max)) = (
        report.percentile_of("hierstat", m, "p999"),
        report.percentile_of("hierstat", m, "max"),
    ) {
        claims.add(
            if real {
                "hierstat p99.9, wall clock on this host (reference)"
            } else {
                "hierstat: 99.9% of reads <= 50 µs"
            },
            format!("p99.9 {}", format_us(p999)),
            "99.9% <= 50 µs (250k readers, 50k cgroups, 384 CPUs)",
            p999 <= 50_000.0,
        );
        claims.add(
            "hierstat: no read over 100 ms",
            format!("max {}", format_us(max)),
            "none > 100 ms",
            max <= 100e6,
        );
    }
    if let Some(s) = report.sum_of("hierstat", STALE_READS) {
        claims.add(
            "hierstat: zero stale reads",
            format!("{s:.0}"),
            "—",
            s == 0.0,
        );
    }
    for p in ["linux-5.15", "linux-6.8", "linux-5.13"] {
        if let Some(p999) = report.percentile_of(p, m, "p999") {
            let stale = report.sum_of(p, STALE_READS).unwrap_or(0.0);
            let max = report.percentile_of(p, m, "max").unwrap_or(0.0);
            claims.add(
                &format!("{p} (reference)"),
                format!(
                    "p99.9 {}, max {}, {stale:.0} stale",
                    format_us(p999),
                    format_us(max)
                ),
                if p == "linux-6.8" {
                    "99.9% <= 50 µs"
                } else {
                    "—"
                },
                true,
            );
        }
    }
    tolerance_claims(report, &mut claims, "read", READ_LATENCY_NS);
    claims.into_vec()
}

/// The policy of `tolerance-readers` that forces a flush on every read.
pub const FORCED: &str = "read=forced";
/// Its policy that reads within 1%.
pub const WITHIN_1PCT: &str = "read=1%";

/// Issue 37's target on the tolerance scenarios: at 1%, the p99 read
/// costs at most a tenth of a forced subtree flush's (the read's flush: the
/// syscalls and formatting are the same for both), every read within its
/// bound; the whole read's latency beside it for reference. `what` names
/// a read in the claims (`read`; the `refault` kind's: `refault`), whose
/// whole latency is the metric `latency`. Claims of policies missing from
/// the run are left out.
pub(crate) fn tolerance_claims(report: &RunReport, claims: &mut Claims, what: &str, latency: &str) {
    let ratio = |m: &str| {
        let t = report.percentile_of(WITHIN_1PCT, m, "p99")?;
        let f = report.percentile_of(FORCED, m, "p99")?;
        Some((t / f.max(1.0), t, f))
    };
    if let Some((r, t, f)) = ratio(READ_FLUSH_NS) {
        claims.add(
            &format!("1% tolerance: p99 {what} flush cost <= 0.1x a forced subtree flush's"),
            format!("{r:.3}x ({} vs {})", format_us(t), format_us(f)),
            "issue 37 target: <= 0.1x",
            r <= 0.1,
        );
    }
    if let Some((r, t, f)) = ratio(latency) {
        claims.add(
            &format!("1% tolerance: p99 whole {what} against a forced flush's (reference)"),
            format!("{r:.3}x ({} vs {})", format_us(t), format_us(f)),
            "—",
            true,
        );
    }
    for p in report
        .policy_order
        .iter()
        .filter(|p| p.starts_with("read="))
    {
        if let Some(s) = report.sum_of(p, STALE_READS) {
            claims.add(
                &format!("{p}: every read within its bound of the exact value"),
                format!("{s:.0} out of bound"),
                "0",
                s == 0.0,
            );
        }
    }
}
