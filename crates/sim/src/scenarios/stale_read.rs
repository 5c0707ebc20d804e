//! `stale-read`: a large event (usage spike) lands in a leaf; shortly after,
//! the leaf and then its parent are read while other readers keep flushing.
//!
//! Seed 000 patch 5/5 (`7d7ef0a4686a`): with "skip if a flush is ongoing",
//! readers got stats up to 2 s old (an OOM killer acting on pre-spike
//! values, a proactive reclaimer seeing no progress) and child > parent
//! inconsistencies; 6.8 stopped skipping.

use super::stat_readers::{record_sim, sim_setup};
use super::{push, schema_items, AnyBackend, PolicyChoice, Progress, RunOptions};
use crate::error::SimError;
use crate::report::{Mode, PolicyResult};
use crate::runner::sim;
use crate::scenario::Scenario;
use crate::with_backend;
use crate::workload::TreeShape;
use std::collections::BTreeMap;

/// Runs the stale-read workload (simulated mode).
pub fn run(
    sc: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    if sc.mode != Mode::Sim {
        return Err(SimError::Config(
            "stale-read runs in simulated mode (it needs an exact oracle at every instant)".into(),
        ));
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
