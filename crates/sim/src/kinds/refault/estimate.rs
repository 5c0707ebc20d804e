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
//!   time), in units of `EVENT_UNIT_NS` (the flush weights' nanoseconds).
//! * **Flushes**, from the policy's knobs ([`lab::estimate::flush`]): the
//!   refaults are the hot-path events of `workload.service` (about one
//!   access in `1 − resident / file` misses, every miss a refault once
//!   the file has been read), the background the updates of the
//!   services, the periodic flush (and the async policies' background
//!   flushes, a kworker's delay after their request) a root flush; the
//!   lock is priced as the storm prices a flush (its cost model, plus a
//!   line transfer per remote row line). Each shard pass and visit weighs
//!   what storms' flushes were measured to cost (`PASS_NS`, `VISIT_NS`,
//!   and `VISIT_MISS_NS` for the visits that miss the caches in a tree of
//!   many per-CPU rows; the `calibrate` test).
//!
//! The probe runs `linux-6.8`, whose refaults never flush in the storm
//! (its ratelimit opens only when the periodic flush is two periods late):
//! it measures the events alone, which every policy has.

use super::spec::RefaultSpec;
use crate::cost::CostModel;
use crate::kinds::stats::estimate::{miss_share, uniform_pages};
use lab::estimate::flush::{flush_load, FlushLoad, Level, TreeLoad};
use lab::{Estimate, Header, WorkClass};

/// Nanoseconds of the development host per event unit, in the same
/// nanoseconds as the flush weights ([`VISIT_NS`]): the calibration
/// storms' `linux-6.8` runs (which flush once at most) over their event
/// units, fitted with the flush weights (the `calibrate` test: 94–179 ns
/// a unit over the four storms). The events' weights among themselves
/// were fitted before, at 270 ns a unit (3.7·10^6 units a CPU second);
/// the simulator's events have become cheaper since, and a unit kept at
/// 270 ns priced each flush's nanoseconds at 270 / 124 of their share of
/// the probe's rate: the storms that flush often came out at 2.2–4.45x
/// their estimate.
const EVENT_UNIT_NS: f64 = 124.0;
/// Units of an access, relative to a burst.
const ACCESS: f64 = 2.0;
/// Units of a run's fixed work (the tree, the page state, the report).
const RUN: f64 = 1e5;
/// Simulated seconds at the start of a run whose bursts count
/// [`EARLY`] more.
const EARLY_S: f64 = 0.3;
/// The extra weight of a burst in the first [`EARLY_S`]: fitted (the
/// `calibrate` test) on the calibration storms' `linux-6.8` runs of 0.3
/// and 1.5–2 simulated seconds, the weight at which both cost the same
/// per unit (0.03–0.52 over the four storms, their mean). It was 0.5,
/// fitted to the built-in storm's rows, which put the 0.3 s probe's
/// units high against a long run's: every storm row came out 1.4–1.9x
/// its estimate on a loaded host before any flush.
const EARLY: f64 = 0.31;
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
// fitted (least squares of the relative error, weights non-negative) to
// the CPU time storms spend beyond their events, on four storms that are
// not the built-in one (the `calibrate` test: 32–128 CPUs, 40–200
// services, 16–64 services a CPU, 6,000–12,000 updates a second) under
// five policies each, from none of the refaults flushing to every one
// (each within 0.77–1.80x of its fitted time on a loaded host, 14 of the
// 20 within 0.89–1.18x). On one storm alone the passes and the visits
// grow together and the fit cannot tell them apart (it put 1,100 ns on a
// pass and 123 on a visit, which priced the built-in storm's flushes, of
// more visits each in a larger tree, at about half their time); over
// four, a visit costs more the larger the per-CPU rows it reads.
/// A flush's shard pass (drain, lock, extract), with the storm's own
/// work per flush (its lock, records and events).
const PASS_NS: f64 = 226.0;
/// A (group, CPU) visit: every item of the memcg schema, on every node...
const VISIT_NS: f64 = 337.0;
/// ...and the share of those that miss the caches (`miss_share` of the
/// per-CPU rows' bytes: 13% for the built-in storm's 13,056 rows).
const VISIT_MISS_NS: f64 = 886.0;

/// The `refault` kind's work, in nanoseconds of the development host.
pub static REFAULT: WorkClass = WorkClass::simulated("refault", 1e9, PROBE);

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
    let accesses = f64::from(w.cpus) * w.accesses_per_sec_per_cpu * secs;
    let groups = f64::from(r.services) + 16.0;
    let pages = ((w.memory_max_mb + w.swap_mb + w.file_mb) as f64) * 256.0;
    let memory_bytes = groups * f64::from(r.cpus) * 64.0 * 8.0 + pages * 32.0;
    let events = event_units(r, EARLY) * EVENT_UNIT_NS;
    let load = tree_load(r);
    let price = lock_price(r, costs);
    let miss = visit_miss(r);
    let mut work = 0.0;
    for name in &header.policies {
        // A parsed scenario's names are all known (the storm runs no
        // pre-rstat baseline): one that is not is counted without flushes.
        let flushes = header
            .flush_policy(name)
            .ok()
            .and_then(|f| f.knobs())
            .map_or(0.0, |p| flush_ns(&flush_load(&p, &load, &price), miss));
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

/// The storm's events in units of [`EVENT_UNIT_NS`]: its background
/// bursts (those of the first [`EARLY_S`] weighed `early` more: [`EARLY`])
/// and accesses, by the square root of its groups, and a run's fixed work.
fn event_units(r: &RefaultSpec, early: f64) -> f64 {
    let secs = (r.duration_ms + r.warmup_ms) as f64 / 1e3;
    let b = &r.background;
    let w = &r.workload;
    let bursts = f64::from(r.cpus) * b.updates_per_sec_per_cpu * secs / f64::from(b.burst.max(1));
    let early = if secs > 0.0 {
        early * bursts * EARLY_S.min(secs) / secs
    } else {
        0.0
    };
    let accesses = f64::from(w.cpus) * w.accesses_per_sec_per_cpu * secs;
    let groups = f64::from(r.services) + 16.0;
    (bursts + early + ACCESS * accesses) * groups.sqrt() + RUN
}

/// A flush's hold of the lock in seconds, as the storm prices it (its
/// cost model, plus a line transfer per remote row line, see
/// [`super::flush::Pricing`]), by its shard passes and visits, a visit
/// folding every item of the memcg schema.
fn lock_price(r: &RefaultSpec, costs: &CostModel) -> impl Fn(f64, f64) -> f64 {
    let slots = schema_slots(r);
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

/// Nanoseconds of the flushes `f`, `miss` the share of their visits that
/// miss the caches ([`visit_miss`]).
fn flush_ns(f: &FlushLoad, miss: f64) -> f64 {
    f.passes * PASS_NS + f.visits * (VISIT_NS + miss * VISIT_MISS_NS)
}

/// The share of a flush's visits that miss the caches: `miss_share` of
/// the per-CPU rows a flush reads (a row per group and CPU, 8 bytes an
/// item of the memcg schema).
fn visit_miss(r: &RefaultSpec) -> f64 {
    let groups = f64::from(r.services) + 16.0;
    miss_share(groups * f64::from(r.cpus) * schema_slots(r) * 8.0)
}

/// Items of the storm's memcg schema (every counter on every node).
fn schema_slots(r: &RefaultSpec) -> f64 {
    models::memcg::MemcgSchema::new(r.nodes as usize).map_or(64.0, |s| s.schema().slots() as f64)
}

/// The storm's tree as the flush model sees it: the root and
/// `system.slice` over every update, the services (each written by the
/// CPUs that run it), and `workload.service` with its refaults (counted
/// as a level of its own below the services: it is one group among them
/// whose updates and hot-path events differ). No group is read.
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
        sizes: mix,
        ..Level::default()
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
                sizes: bg_sizes,
                ..Level::default()
            },
            Level {
                groups: 1.0,
                active: 1.0,
                updates: wl_updates,
                writers: wl_cpus,
                pairs: wl_cpus,
                hot: refaults,
                sizes: wl_sizes,
                ..Level::default()
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
    //! [`VISIT_NS`](super::VISIT_NS),
    //! [`VISIT_MISS_NS`](super::VISIT_MISS_NS)): storms of four shapes,
    //! each under policies from every refault flushing to none, each
    //! run's CPU time beyond its storm's `linux-6.8` (whose refaults never
    //! flush) against its modelled passes, visits and visits that miss
    //! beyond it; and [`EVENT_UNIT_NS`](super::EVENT_UNIT_NS), the mean of
    //! the `linux-6.8` runs' CPU time over their event units, so that the
    //! events and the flushes are counted in the same nanoseconds.

    use super::{event_units, flush_ns, lock_price, tree_load, visit_miss, EARLY};
    use crate::cost::CostModel;
    use crate::kinds::refault::RefaultSpec;
    use lab::estimate::flush::flush_load;
    use lab::estimate::spin;
    use lab::{Context, Overrides, RunOptions};
    use simcore::clock::CpuTimer;
    use std::time::Duration;

    /// `(cpus, services, services per CPU, updates per second per CPU,
    /// duration ms, warm-up ms)`: storms that are not the built-in one
    /// (96 CPUs, 120 services, 48 a CPU, 12,000 updates a second), of
    /// different shard counts, tree widths and update rates, so that
    /// the passes and visits of a flush vary apart.
    const SHAPES: &[(u32, u32, u32, f64, u64, u64)] = &[
        (64, 80, 24, 12000.0, 1500, 500),
        (32, 200, 64, 12000.0, 1500, 500),
        (128, 40, 16, 6000.0, 1000, 500),
        (96, 160, 64, 8000.0, 1000, 500),
    ];

    fn storm(shape: &(u32, u32, u32, f64, u64, u64)) -> String {
        let (cpus, services, per_cpu, rate, ms, warmup) = *shape;
        format!(
            r#"
name = "calibration-storm"
kind = "refault"
mode = "sim"
runs = 1
seed = 3
policies = ["linux-6.8"]

[refault]
cpus = {cpus}
nodes = 2
duration_ms = {ms}
warmup_ms = {warmup}
services = {services}

[refault.background]
updates_per_sec_per_cpu = {rate}
services_per_cpu = {per_cpu}
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
"#
        )
    }

    #[test]
    #[ignore = "runs four storms under six policies each (minutes); prints the fitted flush weights"]
    fn calibrate() {
        let ctx = Context::default();
        let costs = CostModel::of(&ctx).into_owned();
        let (_, speed) = spin(Duration::from_millis(300));
        // Per run beyond its storm's `linux-6.8`: (CPU ns beyond, its whole
        // CPU ns, [passes, visits, visits that miss] beyond).
        let mut rows: Vec<(f64, f64, [f64; 3])> = Vec::new();
        // Per storm: its `linux-6.8` run's CPU ns over its event units.
        let mut per_unit = Vec::new();
        // Per storm: the early weight that prices its 0.3 s run and its
        // long one alike.
        let mut early = Vec::new();
        for shape in SHAPES {
            let sc = crate::catalog().parse("storm", &storm(shape)).unwrap();
            let mut base: Option<(f64, [f64; 3])> = None;
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
                let x = [f.passes, f.visits, f.visits * visit_miss(spec)];
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
                    "{shape:?} {p}: {:.3} s; flushes {:.0}, passes {:.0}, visits {:.0}, \
                     priced now {:.3} s beyond the events",
                    best / 1e9,
                    f.flushes,
                    f.passes,
                    f.visits,
                    flush_ns(&f, visit_miss(spec)) / 1e9
                );
                match base {
                    None => {
                        per_unit.push(best / event_units(spec, EARLY));
                        early.push(early_weight(&s, spec, best, speed));
                        base = Some((best, x));
                    }
                    Some((y0, x0)) => {
                        rows.push((best - y0, best, [0, 1, 2].map(|j| x[j] - x0[j])));
                    }
                }
            }
        }
        let w = fit(&rows);
        println!(
            "EVENT_UNIT_NS = {:.1} (per storm: {per_unit:.1?})",
            per_unit.iter().sum::<f64>() / per_unit.len() as f64
        );
        println!(
            "EARLY = {:.2} (per storm: {early:.2?})",
            early.iter().sum::<f64>() / early.len() as f64
        );
        println!(
            "PASS_NS = {:.1}, VISIT_NS = {:.1}, VISIT_MISS_NS = {:.1}",
            w[0], w[1], w[2]
        );
        for (dy, y, x) in &rows {
            let m: f64 = (0..3).map(|j| x[j] * w[j]).sum();
            println!("measured / fitted {:.2}", y / (y - dy + m));
        }
    }

    /// The early weight at which `long`'s storm run for 0.3 simulated
    /// seconds costs as much per event unit as its long run (`cpu` ns at
    /// loop speed `speed`).
    fn early_weight(long: &lab::Scenario, spec: &RefaultSpec, cpu: f64, speed: f64) -> f64 {
        let mut short = long.clone();
        short.set_sweep_durations(Some(200), Some(100));
        let short_spec = short.spec_as::<RefaultSpec>().unwrap().clone();
        let (_, before) = spin(Duration::from_millis(20));
        let t = CpuTimer::start();
        short.run(&RunOptions::default(), &mut |_| {}).unwrap();
        let ns = t.elapsed_ns();
        let (_, after) = spin(Duration::from_millis(20));
        let short_cpu = ns * (before + after) / 2.0 / speed;
        // The short run's share of the two, decreasing in the weight.
        let gap = |e: f64| short_cpu / cpu - event_units(&short_spec, e) / event_units(spec, e);
        let (mut lo, mut hi) = (-0.9, 5.0);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if gap(mid) < 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        0.5 * (lo + hi)
    }

    /// Least squares of the error relative to each run's CPU time, the
    /// weights non-negative: the best of the fits on every subset of the
    /// terms whose weights all come out non-negative.
    fn fit(rows: &[(f64, f64, [f64; 3])]) -> [f64; 3] {
        let mut best = ([0.0; 3], f64::INFINITY);
        for mask in 1u32..8 {
            let on: Vec<usize> = (0..3).filter(|j| mask & (1 << j) != 0).collect();
            let n = on.len();
            // Normal equations of the scaled columns, solved by elimination.
            let mut a = vec![vec![0.0; n + 1]; n];
            for (dy, y, x) in rows {
                for (r, &i) in on.iter().enumerate() {
                    for (c, &j) in on.iter().enumerate() {
                        a[r][c] += x[i] / y * x[j] / y;
                    }
                    a[r][n] += x[i] / y * dy / y;
                }
            }
            for c in 0..n {
                let piv = a[c][c];
                if piv.abs() < 1e-300 {
                    continue;
                }
                let pivot = a[c].clone();
                for (r, row) in a.iter_mut().enumerate() {
                    if r != c {
                        let k = row[c] / piv;
                        for (x, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                            *x -= k * p;
                        }
                    }
                }
            }
            let mut w = [0.0; 3];
            for (r, &i) in on.iter().enumerate() {
                w[i] = a[r][n] / a[r][r];
            }
            if w.iter().any(|v| *v < 0.0 || !v.is_finite()) {
                continue;
            }
            let err: f64 = rows
                .iter()
                .map(|(dy, y, x)| {
                    let m: f64 = (0..3).map(|j| x[j] * w[j]).sum();
                    ((dy - m) / y).powi(2)
                })
                .sum();
            if err < best.1 {
                best = (w, err);
            }
        }
        best.0
    }
}
