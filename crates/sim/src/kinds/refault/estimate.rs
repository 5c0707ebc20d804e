//! The `refault` kind's pre-run estimate ([`estimate`]) and its probe
//! ([`REFAULT`]), in nanoseconds of the development host.
//!
//! * **Events**, whatever the policy: background update bursts and
//!   workload accesses over warm-up and measurement, each weighed by the
//!   square root of the tree's groups (an access weighs two bursts), the
//!   bursts of the first 0.3 simulated seconds half again (the storm costs
//!   more per burst while memory fills), plus a fixed part per run. Fitted
//!   on the development host over 24–96 CPUs, 30–120 services, 0.3–4
//!   simulated seconds, update rates of 3,000–12,000 and access rates of
//!   300–1,200 per CPU and second (every case within 1.4x of its CPU
//!   time), in units of `EVENT_UNIT_NS`.
//! * **Flushes**, from the policy's knobs ([`lab::estimate::flush`]): the
//!   refaults are the hot-path events of `workload.service` (about one
//!   access in `1 − resident / file` misses, every miss a refault once
//!   the file has been read), the background the updates of the
//!   services, the periodic flush (and the async policies' background
//!   flushes, a kworker's delay after their request) a root flush; the
//!   lock is priced as the storm prices a flush (its cost model, plus a
//!   line transfer per remote row line). Each shard pass and visit weighs
//!   what a storm's flushes were measured to cost (`PASS_NS`,
//!   `VISIT_NS`, the `calibrate` test).
//!
//! The probe runs `linux-6.8`, whose refaults never flush in the storm
//! (its ratelimit opens only when the periodic flush is two periods late):
//! it measures the events alone, which every policy has.

use super::spec::RefaultSpec;
use crate::cost::CostModel;
use crate::kinds::stats::estimate::uniform_pages;
use lab::estimate::flush::{flush_load, FlushLoad, Level, TreeLoad};
use lab::{Estimate, Header, WorkClass};

/// Nanoseconds of the development host per event unit: its rate when
/// the event weights were fitted (3.7·10^6 units per CPU second).
const EVENT_UNIT_NS: f64 = 1e9 / 3.7e6;
/// Units of an access, relative to a burst.
const ACCESS: f64 = 2.0;
/// Units of a run's fixed work (the tree, the page state, the report).
const RUN: f64 = 1e5;
/// Simulated seconds at the start of a run whose bursts count
/// [`EARLY`] more.
const EARLY_S: f64 = 0.3;
/// The extra weight of a burst in the first [`EARLY_S`] (fitted: 0.5 puts
/// the built-in storm's policies within 1.2x of their CPU time).
const EARLY: f64 = 0.5;
/// Statistics updates of one page a file miss makes in the workload's
/// group (its charge and LRU add, the refault event, the eviction it
/// causes and that eviction's LRU and workingset counts).
const UPDATES_PER_MISS: f64 = 6.0;
/// Statistics updates of a THP's pages each heap fault or free makes
/// (anon, its LRU list, the charge).
const UPDATES_PER_THP: f64 = 3.0;
/// Pages of a THP.
const THP_PAGES: f64 = 512.0;
// A flush of the storm's tree, in nanoseconds of the development host:
// fitted (least squares) to the CPU time a storm spends beyond its
// events, on a storm that is not the built-in one (the `calibrate` test:
// 64 CPUs, 80 services, 2 s) under six policies, from none of the
// refaults flushing to every one (each within 0.86–1.29x of its fitted
// time).
/// A flush's shard pass, with the storm's own work per flush (its lock,
/// records and events), which that storm's fixed shard count cannot tell
/// apart from the pass.
const PASS_NS: f64 = 1100.0;
/// A (group, CPU) visit: every item of the memcg schema, on every node.
const VISIT_NS: f64 = 123.0;

/// The `refault` kind's work, in nanoseconds of the development host.
pub static REFAULT: WorkClass = WorkClass {
    name: "refault",
    reference_rate: 1e9,
    probe: Some(PROBE),
    simulated: true,
};

/// The [`REFAULT`] probe: a short storm on the built-in
/// scenario's tree (96 CPUs, 120 services, 0.3 s simulated: the expensive
/// start of a storm and some of its steady state) under `linux-6.8`,
/// whose refaults do not flush (see the module documentation).
pub const PROBE: &str = r#"
name = "probe-refault"
kind = "refault"
mode = "sim"
runs = 1
seed = 1
policies = ["linux-6.8"]

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

/// Per-group per-CPU counters and per-page LRU state; the events and the
/// flushes each policy makes of them (see the module documentation).
pub fn estimate(r: &RefaultSpec, header: &Header, costs: &CostModel) -> Estimate {
    let runs = f64::from(header.runs);
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
    let memory_bytes = groups * f64::from(r.cpus) * 64.0 * 8.0 + pages * 32.0;
    let events = ((bursts + early + ACCESS * accesses) * groups.sqrt() + RUN) * EVENT_UNIT_NS;
    let load = tree_load(r);
    let price = lock_price(r, costs);
    let mut work = 0.0;
    for name in &header.policies {
        // A parsed scenario's names are all known (the storm runs no
        // pre-rstat baseline): one that is not is counted without flushes.
        let flushes = header
            .flush_policy(name)
            .ok()
            .and_then(|f| f.knobs())
            .map_or(0.0, |p| flush_ns(&flush_load(&p, &load, &price)));
        work += (events + flushes) * runs;
    }
    let repeats = header.policies.len().max(1) as f64 * runs;
    Estimate {
        memory_bytes,
        threads: 1,
        events: (bursts + accesses) * repeats,
        seconds: 0.0,
        work,
        class: Some(&REFAULT),
    }
}

/// A flush's hold of the lock in seconds, as the storm prices it (its
/// cost model, plus a line transfer per remote row line, see
/// [`super::flush::Pricing`]), by its shard passes and visits, a visit
/// folding every item of the memcg schema.
fn lock_price(r: &RefaultSpec, costs: &CostModel) -> impl Fn(f64, f64) -> f64 {
    let slots = models::memcg::MemcgSchema::new(r.nodes as usize)
        .map_or(64.0, |s| s.schema().slots() as f64);
    let remote = if r.latency.remote_flush_lines {
        costs.line_transfer_ns / f64::from(r.latency.counters_per_line.max(1))
    } else {
        0.0
    };
    let (pass, visit) = (
        costs.shard_scanned_ns + costs.lock_ns,
        costs.group_visited_ns + slots * (costs.counter_aggregated_ns + remote),
    );
    move |passes, visits| (passes * pass + visits * visit) * 1e-9
}

/// Nanoseconds of the flushes `f`.
fn flush_ns(f: &FlushLoad) -> f64 {
    f.passes * PASS_NS + f.visits * VISIT_NS
}

/// The storm's tree as the flush model sees it: the root and
/// `system.slice` over every update, the services (each written by the
/// CPUs that run it), and `workload.service` with its refaults (counted
/// as a level of its own below the services: it is one group among them
/// whose updates and hot-path events differ).
fn tree_load(r: &RefaultSpec) -> TreeLoad {
    let cpus = f64::from(r.cpus);
    let services = f64::from(r.services.max(1));
    let b = &r.background;
    let w = &r.workload;
    // One update in twelve also counts a page fault (an anon charge).
    let bg = cpus * b.updates_per_sec_per_cpu * (1.0 + 1.0 / 12.0);
    let per_cpu = f64::from(b.services_per_cpu).min(services);
    let svc_writers = cpus * (1.0 - (1.0 - 1.0 / services).powf(per_cpu));
    // The workload: misses of the file beyond what memory holds beside
    // the heap's mean size, and the heap's THPs faulted and freed.
    let accesses = f64::from(w.cpus) * w.accesses_per_sec_per_cpu;
    let heap_mb = (w.anon_min_mb + w.anon_max_mb) as f64 / 2.0;
    let resident = (w.memory_max_mb as f64 - heap_mb).max(0.0);
    let miss = if w.file_mb > 0 {
        1.0 - (resident / w.file_mb as f64).min(1.0)
    } else {
        0.0
    };
    let refaults = accesses * miss;
    let thps = if w.anon_period_ms > 0 {
        2.0 * (w.anon_max_mb.saturating_sub(w.anon_min_mb)) as f64 * 256.0
            / THP_PAGES
            / (w.anon_period_ms as f64 / 1e3)
    } else {
        0.0
    };
    let file_updates = refaults * UPDATES_PER_MISS;
    let thp_updates = thps * UPDATES_PER_THP;
    let wl_updates = file_updates + thp_updates;
    let wl_sizes = if wl_updates > 0.0 {
        vec![
            (file_updates / wl_updates, 1.0),
            (thp_updates / wl_updates, THP_PAGES),
        ]
    } else {
        vec![(1.0, 1.0)]
    };
    let bg_sizes = uniform_pages(b.pages, 1.0);
    let all = bg + wl_updates;
    let mix: Vec<(f64, f64)> = bg_sizes
        .iter()
        .map(|&(p, s)| (p * bg / all.max(1e-9), s))
        .chain(
            wl_sizes
                .iter()
                .map(|&(p, s)| (p * wl_updates / all.max(1e-9), s)),
        )
        .collect();
    let wl_cpus = f64::from(w.cpus).min(cpus).max(1.0);
    let top = Level {
        groups: 1.0,
        active: 1.0,
        updates: all,
        writers: cpus,
        pairs: services * svc_writers + wl_cpus,
        reads: 0.0,
        over_reads: 0.0,
        over_pages: 0.0,
        hot: 0.0,
        sizes: mix,
    };
    TreeLoad {
        levels: vec![
            top.clone(),
            top,
            Level {
                groups: services,
                active: services,
                updates: bg / services,
                writers: svc_writers,
                pairs: svc_writers,
                reads: 0.0,
                over_reads: 0.0,
                over_pages: 0.0,
                hot: 0.0,
                sizes: bg_sizes,
            },
            Level {
                groups: 1.0,
                active: 1.0,
                updates: wl_updates,
                writers: wl_cpus,
                pairs: wl_cpus,
                reads: 0.0,
                over_reads: 0.0,
                over_pages: 0.0,
                hot: refaults,
                sizes: wl_sizes,
            },
        ],
        shards: cpus,
        seconds: (r.duration_ms + r.warmup_ms) as f64 / 1e3,
        periodic_s: Some(r.flush_period_ms as f64 / 1e3),
        async_delay_s: r.latency.kworker_delay_us as f64 / 1e6,
        waiters: wl_cpus,
    }
}

#[cfg(test)]
mod calibrate {
    //! The fit behind the flush weights ([`PASS_NS`](super::PASS_NS),
    //! [`VISIT_NS`](super::VISIT_NS)): a
    //! storm under policies from every refault flushing to none, each
    //! run's CPU time beyond `linux-6.8`'s (whose refaults never flush)
    //! against its modelled flushes, passes and visits beyond it.

    use super::{lock_price, tree_load};
    use crate::cost::CostModel;
    use crate::kinds::refault::RefaultSpec;
    use lab::estimate::flush::flush_load;
    use lab::estimate::spin;
    use lab::{Context, Overrides, RunOptions};
    use simcore::clock::CpuTimer;
    use std::time::Duration;

    const STORM: &str = r#"
name = "calibration-storm"
kind = "refault"
mode = "sim"
runs = 1
seed = 3
policies = ["linux-6.8"]

[refault]
cpus = 64
nodes = 2
duration_ms = 1500
warmup_ms = 500
services = 80

[refault.background]
updates_per_sec_per_cpu = 12000.0
burst = 8

[[policy]]
name = "root-every-page"
base = "hierstat"
fixed_pages = 1
scope = "root"
hot_path = "sync"

[[policy]]
name = "no-threshold"
base = "hierstat"
threshold = "none"
"#;

    #[test]
    #[ignore = "runs a storm under six policies (a minute); prints the fitted flush weights"]
    fn calibrate() {
        let ctx = Context::default();
        let costs = CostModel::of(&ctx).into_owned();
        let sc = crate::catalog().parse("storm", STORM).unwrap();
        let (_, speed) = spin(Duration::from_millis(300));
        let mut rows = Vec::new();
        for p in [
            "linux-6.8",
            "linux-5.15",
            "linux-5.15-async",
            "hierstat",
            "root-every-page",
            "no-threshold",
        ] {
            let mut s = sc.clone();
            s.apply(&Overrides {
                policies: vec![p.to_string()],
                ..Overrides::default()
            });
            let spec = s.spec_as::<RefaultSpec>().unwrap();
            let knobs = s.header().flush_policy(p).unwrap().knobs().unwrap();
            let f = flush_load(&knobs, &tree_load(spec), &lock_price(spec, &costs));
            let mut best = f64::INFINITY;
            for _ in 0..2 {
                let (_, before) = spin(Duration::from_millis(20));
                let t = CpuTimer::start();
                s.run(&RunOptions::default(), &mut |_| {}).unwrap();
                let ns = t.elapsed_ns();
                let (_, after) = spin(Duration::from_millis(20));
                best = best.min(ns * (before + after) / 2.0 / speed);
            }
            println!(
                "{p}: {:.3} s; flushes {:.0}, passes {:.0}, visits {:.0}",
                best / 1e9,
                f.flushes,
                f.passes,
                f.visits
            );
            rows.push((best, f));
        }
        // Beyond the baseline: least squares of (passes, visits).
        let (y0, f0) = rows[0];
        let (mut spp, mut spv, mut svv, mut syp, mut syv) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (y, f) in &rows[1..] {
            let (p, v, dy) = (f.passes - f0.passes, f.visits - f0.visits, y - y0);
            spp += p * p;
            spv += p * v;
            svv += v * v;
            syp += dy * p;
            syv += dy * v;
        }
        let det = spp * svv - spv * spv;
        let pass = (syp * svv - syv * spv) / det;
        let visit = (syv * spp - syp * spv) / det;
        println!("PASS_NS = {pass:.1}, VISIT_NS = {visit:.1}");
        for (y, f) in &rows {
            let m = y0 + (f.passes - f0.passes) * pass + (f.visits - f0.visits) * visit;
            println!("measured / fitted {:.2}", y / m);
        }
    }
}
