//! `stale-read`: a large event (usage spike) lands in a leaf; shortly after,
//! the leaf and then its parent are read while other readers keep flushing.
//!
//! Source 000 patch 5/5 (`7d7ef0a4686a`): with "skip if a flush is ongoing",
//! readers got stats up to 2 s old (an OOM killer acting on pre-spike
//! values, a proactive reclaimer seeing no progress) and child > parent
//! inconsistencies; 6.8 stopped skipping.

use super::stat_readers::{record_sim, sim_setup};
use super::{Spikes, StatsScenario};
use crate::error::SimError;
use crate::runner::{real_spikes, sim};
use crate::select::AnyBackend;
use crate::with_backend;
use crate::workload::TreeShape;
use lab::interleave::interleaved;
use lab::progress::Steps;
use lab::report::{Claim, Claims, Mode, PolicyResult, RunReport};
use lab::Header;
use std::collections::BTreeMap;

/// Metric: the fraction of spike reads that missed the spike.
pub const MISSED_EVENT_RATE: &str = "missed_event_rate";
/// Metric: spike reads that missed the spike.
pub const MISSED_EVENTS: &str = "missed_events";
/// Metric: reads where a child showed more than its parent.
pub const CHILD_GT_PARENT: &str = "child_gt_parent";

/// Runs the stale-read workload.
///
/// # Errors
/// Engine errors, a thread that cannot start, cancellation.
pub fn run(
    h: &Header,
    sc: &StatsScenario,
    w: &Spikes,
    steps: &mut Steps<'_>,
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    if h.mode != Mode::Sim {
        return run_real(h, sc, w, steps);
    }
    let shape = TreeShape::from_spec(&w.tree);
    let items = sc.schema_items();
    let cpus = sc.cpus.unwrap_or(1) as usize;
    interleaved(h, steps, 1, |run, r, steps| {
        let choice = h.flush_policy(run.policy)?;
        let mut b = AnyBackend::build(choice, &shape, items, cpus)?;
        let setup = sim_setup(
            sc,
            steps,
            items,
            run.seed,
            &w.writers,
            w.readers.as_ref(),
            w.flusher.as_ref(),
            Some(&w.spikes),
        );
        let o: sim::SimOutcome = with_backend!(&mut b, mut be => sim::run(be, &shape, &setup));
        record_sim(r, &o);
        let rate = if o.spike_reads == 0 {
            0.0
        } else {
            o.missed_spikes as f64 / o.spike_reads as f64
        };
        r.push(MISSED_EVENT_RATE, "ratio", rate, false);
        r.push(MISSED_EVENTS, "count", o.missed_spikes as f64, false);
        r.push("spike_reads", "count", o.spike_reads as f64, true);
        r.push(CHILD_GT_PARENT, "count", o.child_gt_parent as f64, false);
        Ok(steps.step(run.label())?)
    })
}

/// Real mode: writer threads, flusher threads and a spike checker (see
/// [`real_spikes`]); readers' `count` is the number of flusher threads and
/// their `period_ms` the pause between their reads (below 0.01 ms: none).
fn run_real(
    h: &Header,
    sc: &StatsScenario,
    w: &Spikes,
    steps: &mut Steps<'_>,
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let shape = TreeShape::from_spec(&w.tree);
    let items = sc.schema_items();
    let threads = sc.threads() as usize;
    let (flushers, period) = match &w.readers {
        Some(r) => (r.count.clamp(1, 64) as usize, r.period_ms),
        None => (1, 0.0),
    };
    interleaved(h, steps, 1, |run, r, steps| {
        let choice = h.flush_policy(run.policy)?;
        let b = AnyBackend::build(choice, &shape, items, threads)?;
        let setup = real_spikes::SpikesSetup {
            writers: w.writers.cpus.map(|c| c as usize).unwrap_or(1),
            writer_spec: w.writers.clone(),
            flushers,
            flusher_period: if period < 0.01 {
                std::time::Duration::ZERO
            } else {
                std::time::Duration::from_secs_f64(period / 1000.0)
            },
            spikes: w.spikes.clone(),
            duration: std::time::Duration::from_millis(sc.duration_ms),
            seed: run.seed,
        };
        let o = with_backend!(&b, be => real_spikes::run_spikes(be, &shape, &setup))?;
        let rate = if o.spike_reads == 0 {
            0.0
        } else {
            o.missed as f64 / o.spike_reads as f64
        };
        r.push_latency("read_latency_ns", &o.latencies);
        r.push(MISSED_EVENT_RATE, "ratio", rate, false);
        r.push(MISSED_EVENTS, "count", o.missed as f64, false);
        r.push("spike_reads", "count", o.spike_reads as f64, true);
        r.push(CHILD_GT_PARENT, "count", o.child_gt_parent as f64, false);
        r.push("flusher_reads", "count", o.flusher_reads as f64, true);
        Ok(steps.step(run.label())?)
    })
}

/// The source thread's claims on a stale-read run (those whose policies are missing
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
    use lab::report::report_from_rows as report;

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
