//! `stale-read`: a large event (usage spike) lands in a leaf; shortly after,
//! the leaf and then its parent are read while other readers keep flushing.
//!
//! Seed 000 patch 5/5 (`7d7ef0a4686a`): with "skip if a flush is ongoing",
//! readers got stats up to 2 s old (an OOM killer acting on pre-spike
//! values, a proactive reclaimer seeing no progress) and child > parent
//! inconsistencies; 6.8 stopped skipping.

use super::stat_readers::{record_sim, sim_setup};
use super::{push, push_latency, schema_items, AnyBackend, PolicyChoice};
use crate::error::SimError;
use crate::report::{Claim, Claims, Mode, PolicyResult, RunReport};
use crate::run::{Progress, RunOptions};
use crate::runner::{real_spikes, sim};
use crate::scenarios::{missing_table, unknown_policy};
use crate::spec::StatsScenario;
use crate::with_backend;
use crate::workload::TreeShape;
use std::collections::BTreeMap;

/// Metric: the fraction of spike reads that missed the spike.
pub const MISSED_EVENT_RATE: &str = "missed_event_rate";
/// Metric: spike reads that missed the spike.
pub const MISSED_EVENTS: &str = "missed_events";
/// Metric: reads where a child showed more than its parent.
pub const CHILD_GT_PARENT: &str = "child_gt_parent";

/// Runs the stale-read workload (simulated mode).
pub fn run(
    sc: &StatsScenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    if sc.mode == Mode::Real {
        return run_real(sc, progress);
    }
    let shape = TreeShape::from_spec(
        sc.tree
            .as_ref()
            .ok_or_else(|| missing_table(&sc.name, "tree"))?,
    );
    let items = schema_items(sc);
    let cpus = sc.cpus.unwrap_or(1) as usize;
    let mut out: BTreeMap<String, PolicyResult> = BTreeMap::new();
    progress(Progress::Total(
        u64::from(sc.runs) * sc.policies.len() as u64,
    ));
    for run in 0..sc.runs {
        let seed = sc.seed.wrapping_add(u64::from(run));
        for p in &sc.policies {
            let choice = PolicyChoice::of(sc, p).ok_or_else(|| unknown_policy(sc, p))?;
            let b = AnyBackend::build(choice, &shape, items, cpus)?;
            let setup = sim_setup(sc, opts, items, seed)?;
            let o: sim::SimOutcome = with_backend!(&b, be => sim::run(be, &shape, &setup));
            let r = out.entry(p.clone()).or_default();
            record_sim(r, &o);
            let rate = if o.spike_reads == 0 {
                0.0
            } else {
                o.missed_spikes as f64 / o.spike_reads as f64
            };
            push(r, MISSED_EVENT_RATE, "ratio", rate, false);
            push(r, MISSED_EVENTS, "count", o.missed_spikes as f64, false);
            push(r, "spike_reads", "count", o.spike_reads as f64, true);
            push(r, CHILD_GT_PARENT, "count", o.child_gt_parent as f64, false);
            progress(Progress::Step(format!("{p} run {}", run + 1)));
        }
    }
    Ok(out)
}

/// Real mode: writer threads, flusher threads and a spike checker (see
/// [`real_spikes`]); readers' `count` is the number of flusher threads and
/// their `period_ms` the pause between their reads (below 0.01 ms: none).
fn run_real(
    sc: &StatsScenario,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let shape = TreeShape::from_spec(
        sc.tree
            .as_ref()
            .ok_or_else(|| missing_table(&sc.name, "tree"))?,
    );
    let items = schema_items(sc);
    let threads = sc.threads.unwrap_or(2) as usize;
    let w = sc
        .writers
        .clone()
        .ok_or_else(|| missing_table(&sc.name, "writers"))?;
    let (flushers, period) = match &sc.readers {
        Some(r) => (r.count.clamp(1, 64) as usize, r.period_ms),
        None => (1, 0.0),
    };
    let mut out: BTreeMap<String, PolicyResult> = BTreeMap::new();
    progress(Progress::Total(
        u64::from(sc.runs) * sc.policies.len() as u64,
    ));
    for run in 0..sc.runs {
        for p in &sc.policies {
            let choice = PolicyChoice::of(sc, p).ok_or_else(|| unknown_policy(sc, p))?;
            let b = AnyBackend::build(choice, &shape, items, threads)?;
            let setup = real_spikes::SpikesSetup {
                writers: w.cpus.map(|c| c as usize).unwrap_or(1),
                writer_spec: w.clone(),
                flushers,
                flusher_period: if period < 0.01 {
                    std::time::Duration::ZERO
                } else {
                    std::time::Duration::from_secs_f64(period / 1000.0)
                },
                spikes: sc
                    .spikes
                    .clone()
                    .ok_or_else(|| missing_table(&sc.name, "spikes"))?,
                duration: std::time::Duration::from_millis(sc.duration_ms),
                seed: sc.seed.wrapping_add(u64::from(run)),
            };
            let o = with_backend!(&b, be => real_spikes::run_spikes(be, &shape, &setup))?;
            let r = out.entry(p.clone()).or_default();
            let rate = if o.spike_reads == 0 {
                0.0
            } else {
                o.missed as f64 / o.spike_reads as f64
            };
            push_latency(r, "read_latency_ns", &o.latencies);
            push(r, MISSED_EVENT_RATE, "ratio", rate, false);
            push(r, MISSED_EVENTS, "count", o.missed as f64, false);
            push(r, "spike_reads", "count", o.spike_reads as f64, true);
            push(r, CHILD_GT_PARENT, "count", o.child_gt_parent as f64, false);
            push(r, "flusher_reads", "count", o.flusher_reads as f64, true);
            progress(Progress::Step(format!("{p} run {}", run + 1)));
        }
    }
    Ok(out)
}

/// The seed's claims on a stale-read run (those whose policies are missing
/// from the run are left out).
pub fn claims(report: &RunReport) -> Vec<Claim> {
    let mut claims = Claims::new(report);
    let r515 = report.mean_of("linux-5.15", MISSED_EVENT_RATE);
    let r68 = report.mean_of("linux-6.8", MISSED_EVENT_RATE);
    if let Some(a) = r515 {
        claims.add(
            "linux-5.15 (skip if a flush runs) misses events",
            format!("{:.2}% of spike reads", 100.0 * a),
            "stale reads up to 2 s (7d7ef0a4686a)",
            a > 0.0,
        );
    }
    if let (Some(a), Some(b)) = (r515, r68) {
        claims.add(
            "linux-6.8 misses at most a tenth as often",
            format!("{:.2}% vs {:.2}%", 100.0 * b, 100.0 * a),
            "6.8 stopped skipping",
            a > 0.0 && b <= a / 10.0,
        );
    }
    if let Some(h) = report.sum_of("hierstat", MISSED_EVENTS) {
        claims.add(
            "hierstat misses no event",
            format!("{h:.0} missed"),
            "—",
            h == 0.0,
        );
    }
    if let Some(c) = report.sum_of("hierstat", CHILD_GT_PARENT) {
        claims.add(
            "hierstat never shows child > parent",
            format!("{c:.0}"),
            "—",
            c == 0.0,
        );
    }
    if let Some(c) = report.sum_of("linux-5.15", CHILD_GT_PARENT) {
        claims.add(
            "linux-5.15 child > parent (reference)",
            format!("{c:.0}"),
            "observed with skipping",
            true,
        );
    }
    claims.into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::report;

    #[test]
    fn claims_pass_and_fail_on_the_figures() {
        let good = report(
            "stale-read",
            &[
                ("linux-5.15", MISSED_EVENT_RATE, 0.02),
                ("linux-6.8", MISSED_EVENT_RATE, 0.001),
                ("hierstat", MISSED_EVENTS, 0.0),
                ("hierstat", CHILD_GT_PARENT, 0.0),
            ],
        );
        let c = claims(&good);
        assert_eq!(c.len(), 4);
        assert!(c.iter().all(|c| c.pass), "{c:?}");
        let bad = report(
            "stale-read",
            &[
                ("linux-5.15", MISSED_EVENT_RATE, 0.02),
                ("linux-6.8", MISSED_EVENT_RATE, 0.01),
                ("hierstat", MISSED_EVENTS, 3.0),
            ],
        );
        let c = claims(&bad);
        assert_eq!(c.iter().filter(|c| !c.pass).count(), 2, "{c:?}");
    }
}
