//! The `numab` kind's pre-run estimate ([`estimate`]) and its probe
//! ([`NUMAB`]): the model steps through the pages its threads
//! write in 2 MiB chunks, one event (and one work unit) each, plus a fixed
//! part per run.

use lab::{Estimate, Header, WorkClass};
use numab::NumabScenario;

/// Units of a run's fixed work (page tables, the report).
const RUN: f64 = 1e5;

/// The `numab` kind's work: 2 MiB chunks of page sweeps.
pub static NUMAB: WorkClass = WorkClass::simulated("numab", 1.8e7, PROBE);

/// The [`NUMAB`] probe: `numa02` under one scanner version
/// (about 4·10^5 chunks).
pub const PROBE: &str = r#"
name = "probe-numab"
description = "the numab work-class probe"
kind = "numab"
mode = "sim"
runs = 1
seed = 4
policies = ["v6.8"]

[numab]
nodes = 2
cpus_per_node = 32
sample_interval_ms = 500

[numab.workload]
kind = "numa02"
buffer_mib = 1024
passes = 800
thp_fraction = 0.0
"#;

/// Per-page state (node, flags, access history) and the per-CPU and
/// per-node tables; one event per 2 MiB chunk the model steps through.
pub fn estimate(n: &NumabScenario, header: &Header) -> Estimate {
    let repeats = header.policies.len().max(1) as f64 * f64::from(header.runs);
    let cpus = f64::from(n.nodes) * f64::from(n.cpus_per_node);
    let (mib, sweeps) = work(&n.workload, cpus);
    let pages = mib * 256.0;
    let chunks = sweeps / 512.0;
    Estimate {
        memory_bytes: pages * 48.0 + cpus * 64.0 * 1024.0,
        threads: 1,
        events: chunks * repeats,
        seconds: 0.0,
        work: (chunks + RUN) * repeats,
        class: Some(&NUMAB),
    }
}

/// `(MiB of memory the workload maps, pages written over the run)`.
fn work(w: &::numab::WorkloadSpec, cpus: f64) -> (f64, f64) {
    use ::numab::WorkloadSpec as W;
    match w {
        W::Numa01(p) => {
            let t = p.threads.map_or(cpus / 2.0, f64::from);
            let mib = 2.0 * p.buffer_mib as f64;
            (mib, mib * 256.0 * t * (f64::from(p.passes) + 1.0))
        }
        W::Numa01ThreadAlloc(p) => {
            let t = p.threads.map_or(cpus / 2.0, f64::from).max(1.0);
            let mib = 2.0 * p.buffer_mib as f64;
            // One whole-buffer sweep per thread, then `passes` over its slice.
            (mib, mib * 256.0 * (t + f64::from(p.passes)))
        }
        W::Numa02 {
            buffer_mib, passes, ..
        } => {
            let mib = *buffer_mib as f64;
            (mib, mib * 256.0 * (f64::from(*passes) + 1.0))
        }
        W::Disjoint {
            vma_x_mib,
            vma_y_mib,
            vma_z_mib,
            vma_w_mib,
            vma_v_mib,
            duration_s,
            set1_threads,
            set2_threads,
            set3_threads,
            set2_duty_percent,
            d_start_s,
            ..
        } => {
            let mib = (vma_x_mib + vma_y_mib + vma_z_mib + vma_w_mib + vma_v_mib) as f64;
            // Threads writing on average: set 2 part of the time, set 3
            // from `d_start_s`.
            let d = (*duration_s as f64).max(1.0);
            let threads = f64::from(*set1_threads)
                + f64::from(*set2_threads) * f64::from(*set2_duty_percent).min(100.0) / 100.0
                + f64::from(*set3_threads) * (d - *d_start_s as f64).max(0.0) / d;
            // About 1 GiB/s written per thread.
            (mib, threads.max(1.0) * 256.0 * 1024.0 * d)
        }
    }
}
