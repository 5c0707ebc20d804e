//! The `refault` kind's pre-run estimate ([`estimate`]) and its probe
//! ([`REFAULT`]): background update bursts and workload
//! accesses over warm-up and measurement, each weighed by the square root
//! of the tree's groups (the flushes they trigger walk the tree; an access
//! weighs two bursts), the bursts of the first 0.3 simulated seconds
//! half again (the storm costs more per burst while memory fills), plus a
//! fixed part per run. Fitted on the development host over 24–96 CPUs,
//! 30–120 services, 0.3–4 simulated seconds, update rates of 3,000–12,000
//! and access rates of 300–1,200 per CPU and second (every case within
//! 1.4x of its CPU time, averaged over the policies).

use super::spec::RefaultSpec;
use lab::{Estimate, Header, WorkClass};

/// Units of an access, relative to a burst.
const ACCESS: f64 = 2.0;
/// Units of a run's fixed work (the tree, the page state, the report).
const RUN: f64 = 1e5;
/// Simulated seconds at the start of a run whose bursts count
/// [`EARLY`] more.
const EARLY_S: f64 = 0.3;
/// The extra weight of a burst in the first [`EARLY_S`] (fitted: 0.5 puts
/// the built-in storm's six policies within 1.2x of their CPU time; a
/// `hierstat`-only run is then overestimated by about as much).
const EARLY: f64 = 0.5;

/// The `refault` kind's work: background update bursts and workload
/// accesses, weighed by the square root of the tree's groups.
pub static REFAULT: WorkClass = WorkClass {
    name: "refault",
    reference_rate: 3.7e6,
    probe: Some(PROBE),
    simulated: true,
};

/// The [`REFAULT`] probe: a short storm on the built-in
/// scenario's tree (96 CPUs, 120 services, 0.3 s simulated: the expensive
/// start of a storm and some of its steady state; about 10^6 units) under
/// `hierstat`, whose cost per unit is near the average of the built-in
/// scenario's six policies.
pub const PROBE: &str = r#"
name = "probe-refault"
kind = "refault"
mode = "sim"
runs = 1
seed = 1
policies = ["hierstat"]

[refault]
cpus = 96
nodes = 2
duration_ms = 200
warmup_ms = 100
services = 120

[refault.background]
updates_per_sec_per_cpu = 12000.0
burst = 8
"#;

/// Per-group per-CPU counters and per-page LRU state; background bursts
/// and workload accesses, and their work units (see the module
/// documentation).
pub fn estimate(r: &RefaultSpec, header: &Header) -> Estimate {
    let repeats = header.policies.len().max(1) as f64 * f64::from(header.runs);
    let secs = (r.duration_ms + r.warmup_ms) as f64 / 1e3;
    let b = &r.background;
    let w = &r.workload;
    let bursts = f64::from(r.cpus) * b.updates_per_sec_per_cpu * secs / f64::from(b.burst.max(1));
    let early = if secs > 0.0 {
        EARLY * bursts * EARLY_S.min(secs) / secs
    } else {
        0.0
    };
    let accesses = f64::from(w.cpus) * w.accesses_per_sec_per_cpu * secs;
    let groups = f64::from(r.services) + 16.0;
    let pages = ((w.memory_max_mb + w.swap_mb + w.file_mb) as f64) * 256.0;
    Estimate {
        memory_bytes: groups * f64::from(r.cpus) * 64.0 * 8.0 + pages * 32.0,
        threads: 1,
        events: (bursts + accesses) * repeats,
        seconds: 0.0,
        work: ((bursts + early + ACCESS * accesses) * groups.sqrt() + RUN) * repeats,
        class: Some(&REFAULT),
    }
}
