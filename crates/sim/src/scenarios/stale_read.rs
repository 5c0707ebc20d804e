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
use crate::report::{Mode, PolicyResult};
use crate::run::{Progress, RunOptions};
use crate::runner::{real_spikes, sim};
use crate::spec::StatsScenario;
use crate::with_backend;
use crate::workload::TreeShape;
use std::collections::BTreeMap;

/// Runs the stale-read workload (simulated mode).
pub fn run(
    sc: &StatsScenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    if sc.mode == Mode::Real {
        return run_real(sc, progress);
    }
    let shape = TreeShape::from_spec(sc.tree.as_ref().expect("validated: tree"));
    let items = schema_items(sc);
    let cpus = sc.cpus.unwrap_or(1) as usize;
    let mut out: BTreeMap<String, PolicyResult> = BTreeMap::new();
    progress(Progress::Total(
        u64::from(sc.runs) * sc.policies.len() as u64,
    ));
    for run in 0..sc.runs {
        let seed = sc.seed.wrapping_add(u64::from(run));
        for p in &sc.policies {
            let choice = PolicyChoice::parse(p).expect("checked policies");
            let b = AnyBackend::build(choice, &shape, items, cpus)?;
            let setup = sim_setup(sc, opts, items, seed);
            let o: sim::SimOutcome = with_backend!(&b, be => sim::run(be, &shape, &setup));
            let r = out.entry(p.clone()).or_default();
            record_sim(r, &o);
            let rate = if o.spike_reads == 0 {
                0.0
            } else {
                o.missed_spikes as f64 / o.spike_reads as f64
            };
            push(r, "missed_event_rate", "ratio", rate, false);
            push(r, "missed_events", "count", o.missed_spikes as f64, false);
            push(r, "spike_reads", "count", o.spike_reads as f64, true);
            push(
                r,
                "child_gt_parent",
                "count",
                o.child_gt_parent as f64,
                false,
            );
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
    let shape = TreeShape::from_spec(sc.tree.as_ref().expect("validated: tree"));
    let items = schema_items(sc);
    let threads = sc.threads.unwrap_or(2) as usize;
    let w = sc.writers.clone().expect("validated: writers");
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
            let choice = PolicyChoice::parse(p).expect("checked policies");
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
                spikes: sc.spikes.clone().expect("validated: spikes"),
                duration: std::time::Duration::from_millis(sc.duration_ms),
                seed: sc.seed.wrapping_add(u64::from(run)),
            };
            let o = with_backend!(&b, be => real_spikes::run_spikes(be, &shape, &setup));
            let r = out.entry(p.clone()).or_default();
            let rate = if o.spike_reads == 0 {
                0.0
            } else {
                o.missed as f64 / o.spike_reads as f64
            };
            push_latency(r, "read_latency_ns", &o.latencies);
            push(r, "missed_event_rate", "ratio", rate, false);
            push(r, "missed_events", "count", o.missed as f64, false);
            push(r, "spike_reads", "count", o.spike_reads as f64, true);
            push(
                r,
                "child_gt_parent",
                "count",
                o.child_gt_parent as f64,
                false,
            );
            push(r, "flusher_reads", "count", o.flusher_reads as f64, true);
            progress(Progress::Step(format!("{p} run {}", run + 1)));
        }
    }
    Ok(out)
}
