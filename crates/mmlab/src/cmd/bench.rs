//! `mmlab bench`: the engine's costs and ratios against the baselines,
//! measured side by side in one run, and the simulator's own speed.
//!
//! Every figure is the median of several repetitions, timed on the
//! measuring thread's own CPU time (so other processes' time slices on a
//! shared host do not count). The single-thread figures are interleaved:
//! each repetition times every variant once, in turn, so a change in the
//! host's load or clock hits them alike. Names (also in `docs/json.md`):
//!
//! | `ns_per_op` name | what |
//! |---|---|
//! | `atomic_fetch_add` | one uncontended `AtomicU64::fetch_add` (1 thread) |
//! | `plain_add` | a plain add to a per-thread array (4 cells in turn): what a thread-local counter costs |
//! | `hierstat_counter_add_depth1` | `Counter::add` (the handle checks done once) on a group at depth 1, `hierstat` preset |
//! | `hierstat_shared_path_depth1` | the shared (atomic) path: `hierstat::sim::Simulator::add_with` on an explicit shard, depth 1 |
//! | `hierstat_update_depthD` | `HierStats::add` (group and item handles, 4 items in turn) on a group at depth D (1, 4, 8), `hierstat` preset |
//! | `linux-6.8_update_depth4`, `linux-5.15_update_depth4` | the same under those presets |
//! | `pre-rstat_update_depthD` | the eager-atomic tree (depth 1, 4, 8), through the simulator's backend (index lookups) |
//! | `hierstat_update_2threads` | per-op cost per thread (on its own CPU time), 2 threads `HierStats::add`ing to one group, each owning its shard (the tree has a shard per thread, the bench's own thread included); the same loop as the two baselines below |
//! | `shared_atomic_2threads` | per-op cost per thread (on its own CPU time), 2 threads on one `AtomicU64` |
//! | `sharded_counter_2threads` | per-op cost per thread, 2 threads each on its own cache-padded `AtomicU64` (`fetch_add`): a flat sharded counter |
//! | `hierstat_read_clean` | `HierStats::read` of a clean group (group and item handles) |
//! | `hierstat_flush_100_dirty_10k` / `_100k` | forced root flush of 100 leaves dirtied by their shard's owner, in a 10k / 100k-group tree (one heavy barrier per flush; median of 3 × the repetitions) |
//! | `hierstat_flush_barrier` | the flusher's heavy barrier (`membarrier(2)`) alone, with a second thread running |
//! | `sim_engine_update` | host time per engine update in simulated mode |
//!
//! | `ratios` name | target |
//! |---|---|
//! | `hierstat_depth1_vs_atomic` | ≤ 2 |
//! | `hierstat_depth1_vs_plain`, `hierstat_counter_vs_plain`, `hierstat_shared_path_vs_plain` | the physical ratios (a plain add is the floor on every CPU) |
//! | `hierstat_counter_vs_atomic`, `hierstat_shared_path_vs_atomic` | shared path ≤ 1.3 |
//! | `hierstat_depth8_vs_depth1` | ≤ 1.5 |
//! | `hierstat_2threads_vs_1thread` | ≤ 1.3 |
//! | `shared_atomic_vs_hierstat_2threads` | ≥ 3 |
//! | `hierstat_vs_sharded_2threads` | ≤ 1.25 |
//! | `pre-rstat_vs_hierstat_depth4` | > 1 (pre-rstat slower) |
//! | `linux-6.8_vs_linux-5.15_depth4` | the source thread's per-group threshold cost |
//! | `flush_100k_vs_10k` | ≤ 1.5 |
//!
//! `rates`: `sim_engine_updates_per_sec` (target ≥ 5 M/s) and
//! `numab_units_per_sec` (page-table units the NUMA-balancing simulator
//! processes per second of host time, on `numa02` with the `mmlab` scanner).

use crate::cli::BenchArgs;
use crate::render::json::write_json;
use anyhow::{Context, Result};
use hierstat::sim::{Shard, Simulator};
use hierstat::{Config, HierStats, Preset, Schema, Unit};
use serde_json::json;
use sim::backend::StatsBackend;
use sim::baselines::EagerTree;
use sim::engine::EngineBackend;
use sim::runner::sim as simrun;
use sim::workload::TreeShape;
use sim::workload::{Targets, WritersSpec};
use simcore::clock::CpuTimer;
use simcore::stats::median;
use simcore::thread::{spawn_scoped, Gate};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Median of `reps` timings of `f`, each returning ns per op.
pub fn median_of(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..reps.max(1)).map(|_| f()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// ns per `AtomicU64::fetch_add` over `n` iterations.
#[inline(never)]
pub fn time_atomic(n: u64) -> f64 {
    // ORDERING: Relaxed; a benchmark counter.
    let a = AtomicU64::new(0);
    let t = CpuTimer::start();
    for _ in 0..n {
        black_box(&a).fetch_add(1, Ordering::Relaxed);
    }
    t.elapsed_ns() / n as f64
}

/// ns per update of `backend` on `group`, one thread.
pub fn time_updates<B: StatsBackend + ?Sized>(b: &B, group: u32, n: u64) -> f64 {
    let t = CpuTimer::start();
    for i in 0..n {
        b.add(black_box(group), (i & 3) as usize, 1);
    }
    t.elapsed_ns() / n as f64
}

fn engine(preset: Preset, shape: &TreeShape, shards: usize) -> Result<EngineBackend> {
    EngineBackend::new(preset, shape, 4, shards).context("building the engine")
}

/// ns per forced root flush of 100 dirty leaves in a tree of about `groups`
/// groups (fan-out 100 per level), the leaves dirtied by the calling
/// thread (the owner of its shard when there are enough shards), so each
/// flush pays the heavy barrier as a real one does.
pub fn time_flush(groups: usize, shards: usize, reps: usize) -> Result<f64> {
    let mut b = Schema::builder();
    let items: Vec<_> = (0..4)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(shards))?;
    let root = stats.root();
    let mut leaves = Vec::new();
    let slices = groups.div_ceil(100).max(1);
    for s in 0..slices {
        let sl = stats.create(&root, &format!("s{s}"))?;
        for c in 0..100.min(groups) {
            leaves.push(stats.create(&sl, &format!("c{c}"))?);
        }
    }
    let step = (leaves.len() / 100).max(1);
    let mut times = Vec::new();
    for r in 0..reps.max(1) {
        for (k, g) in leaves.iter().step_by(step).take(100).enumerate() {
            for &it in &items {
                stats.add(g, it, 1 + ((k + r) % 3) as i64)?;
            }
        }
        let t = CpuTimer::start();
        stats.flush_forced(&root)?;
        times.push(t.elapsed_ns());
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times[times.len() / 2])
}

/// Host ns per engine update in simulated mode (22 CPUs, one group at
/// depth 2, `hierstat` preset), and the updates done.
pub fn time_sim_updates(virtual_ms: u64) -> Result<(f64, u64)> {
    let shape = TreeShape::chain(2);
    let b = engine(Preset::Hierstat, &shape, 22)?;
    let setup = simrun::SimSetup {
        cpus: 22,
        duration: virtual_ms * 1_000_000,
        seed: 1,
        costs: sim::cost::CostModel::defaults(),
        items: 4,
        writers: WritersSpec {
            cpus: None,
            rate_per_cpu: 0.0,
            targets: Targets::Leaves,
            hot_fraction: 1.0,
            pages: [1, 1],
            thp_fraction: 0.0,
            items: 4,
            uncharge_fraction: 0.0,
            burst: 16,
        },
        readers: None,
        flush_period: None,
        spikes: None,
    };
    let t = CpuTimer::start();
    let o = simrun::run(&b, &shape, &setup);
    let ns = t.elapsed_ns();
    Ok((ns / o.updates.max(1) as f64, o.updates))
}

/// `mmlab bench`.
pub fn cmd_bench(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    let n: u64 = if args.quick { 200_000 } else { 1_000_000 };
    let reps = if args.quick { 3 } else { 9 };
    let shards = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut pb = crate::pipeline::progress::Reporter::new("bench");
    pb.total(reps as u64 + 5);
    let mut ns: BTreeMap<String, f64> = BTreeMap::new();
    let mut step = |name: &str| pb.step(name);

    // The single-thread figures, interleaved: every repetition times each
    // variant once, in turn, so a burst of load from other processes (or a
    // change of the host's clock) hits all of them alike; each figure is
    // the median of its repetitions.
    let mut hier = Vec::new();
    for d in [1u32, 4, 8] {
        // The library's own API, as a user calls it: a group handle and
        // item handles, no simulator backend in between.
        hier.push((
            format!("hierstat_update_depth{d}"),
            chain_tree(Preset::Hierstat, d, shards)?,
        ));
    }
    for p in [Preset::Linux6_8, Preset::Linux5_15] {
        hier.push((
            format!("{}_update_depth4", p.name()),
            chain_tree(p, 4, shards)?,
        ));
    }
    let eager: Vec<(u32, EagerTree)> = [1u32, 4, 8]
        .into_iter()
        .map(|d| (d, EagerTree::new(&TreeShape::chain(d), 4)))
        .collect();
    // `hier[0]` is the `hierstat` preset at depth 1.
    let (s1, g1, items1) = &hier[0].1;
    let counters: Vec<hierstat::Counter> = items1
        .iter()
        .map(|&it| s1.counter(g1, it))
        .collect::<Result<_, _>>()?;
    let mut plain = [0u64; 4];
    let (rstats, rg, ritems) = chain_tree(Preset::Hierstat, 2, shards)?;
    rstats.add(&rg, ritems[0], 5)?;
    rstats.flush_forced(&rstats.root())?;
    let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut sample = |name: String, v: f64| samples.entry(name).or_default().push(v);
    for _ in 0..reps {
        sample("atomic_fetch_add".into(), time_atomic(n));
        sample("plain_add".into(), time_plain(&mut plain, n));
        for (name, (stats, g, items)) in &hier {
            sample(name.clone(), time_add(stats, g, items, n));
        }
        sample(
            "hierstat_counter_add_depth1".into(),
            time_counter(&counters, n),
        );
        let (stats, g, items) = &hier[0].1;
        sample(
            "hierstat_shared_path_depth1".into(),
            time_add_with(stats, g, items, n),
        );
        for (d, e) in &eager {
            sample(format!("pre-rstat_update_depth{d}"), time_updates(e, *d, n));
        }
        sample(
            "hierstat_read_clean".into(),
            time_read(&rstats, &rg, &ritems, n)?,
        );
        step("one thread");
    }
    for (name, v) in samples {
        ns.insert(name, median(&v));
    }
    let dur = Duration::from_millis(if args.quick { 30 } else { 150 });
    {
        // A shard per thread: the two updaters and this one. All three
        // two-thread figures come from the same loop (`two_threads`), in
        // turn within each repetition, so load from other processes hits
        // them alike.
        let (stats, g, items) = chain_tree(Preset::Hierstat, 1, shards.max(3))?;
        // ORDERING: Relaxed; benchmark counters.
        let cells = [Padded(AtomicU64::new(0)), Padded(AtomicU64::new(0))];
        let (mut h, mut sa, mut sh) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            h.push(two_threads(dur, |_, i| {
                let _ = stats.add(&g, items[(i & 3) as usize], 1);
            })?);
            sa.push(two_threads(dur, |_, _| {
                black_box(&cells[0].0).fetch_add(1, Ordering::Relaxed);
            })?);
            sh.push(two_threads(dur, |t, _| {
                black_box(&cells[t].0).fetch_add(1, Ordering::Relaxed);
            })?);
        }
        ns.insert("hierstat_update_2threads".into(), median(&h));
        ns.insert("shared_atomic_2threads".into(), median(&sa));
        ns.insert("sharded_counter_2threads".into(), median(&sh));
        ns.insert(
            "hierstat_flush_barrier".into(),
            median_of(reps, || time_barrier(shards, dur)),
        );
    }
    step("2 threads");
    ns.insert(
        "hierstat_flush_100_dirty_10k".into(),
        time_flush(10_000, shards, reps * 3)?,
    );
    step("flush 10k");
    ns.insert(
        "hierstat_flush_100_dirty_100k".into(),
        time_flush(100_000, shards, reps * 3)?,
    );
    step("flush 100k");
    let (sim_ns, _) = time_sim_updates(if args.quick { 1 } else { 4 })?;
    ns.insert("sim_engine_update".into(), sim_ns);
    step("sim");
    step("numab");
    pb.finish();

    let g = |k: &str| ns.get(k).copied().unwrap_or(f64::NAN);
    // (ratio name, numerator, denominator), all from `ns` above.
    const RATIOS: [(&str, &str, &str); 13] = [
        (
            "hierstat_depth1_vs_atomic",
            "hierstat_update_depth1",
            "atomic_fetch_add",
        ),
        (
            "hierstat_depth1_vs_plain",
            "hierstat_update_depth1",
            "plain_add",
        ),
        (
            "hierstat_counter_vs_plain",
            "hierstat_counter_add_depth1",
            "plain_add",
        ),
        (
            "hierstat_counter_vs_atomic",
            "hierstat_counter_add_depth1",
            "atomic_fetch_add",
        ),
        (
            "hierstat_shared_path_vs_plain",
            "hierstat_shared_path_depth1",
            "plain_add",
        ),
        (
            "hierstat_shared_path_vs_atomic",
            "hierstat_shared_path_depth1",
            "atomic_fetch_add",
        ),
        (
            "hierstat_depth8_vs_depth1",
            "hierstat_update_depth8",
            "hierstat_update_depth1",
        ),
        (
            "hierstat_2threads_vs_1thread",
            "hierstat_update_2threads",
            "hierstat_update_depth1",
        ),
        (
            "shared_atomic_vs_hierstat_2threads",
            "shared_atomic_2threads",
            "hierstat_update_2threads",
        ),
        (
            "hierstat_vs_sharded_2threads",
            "hierstat_update_2threads",
            "sharded_counter_2threads",
        ),
        (
            "pre-rstat_vs_hierstat_depth4",
            "pre-rstat_update_depth4",
            "hierstat_update_depth4",
        ),
        (
            "linux-6.8_vs_linux-5.15_depth4",
            "linux-6.8_update_depth4",
            "linux-5.15_update_depth4",
        ),
        (
            "flush_100k_vs_10k",
            "hierstat_flush_100_dirty_100k",
            "hierstat_flush_100_dirty_10k",
        ),
    ];
    let ratios: BTreeMap<String, f64> = RATIOS
        .iter()
        .map(|&(name, num, den)| (name.to_string(), g(num) / g(den)))
        .collect();
    let mut rates: BTreeMap<String, f64> = BTreeMap::new();
    rates.insert("sim_engine_updates_per_sec".into(), 1e9 / sim_ns);
    rates.insert("numab_units_per_sec".into(), numab_rate()?);

    let to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    if !to_stdout {
        writeln!(out, "ns per op (median of {reps}):")?;
        for (k, v) in &ns {
            writeln!(out, "  {k:<34} {v:>12.2}")?;
        }
        writeln!(out, "\nratios:")?;
        for (k, v) in &ratios {
            writeln!(out, "  {k:<34} {v:>12.3}")?;
        }
        writeln!(out, "\nrates:")?;
        for (k, v) in &rates {
            writeln!(out, "  {k:<34} {:>12.2} M/s", v / 1e6)?;
        }
    }
    if let Some(p) = &args.json {
        write_json(
            p,
            &json!({"ns_per_op": ns, "ratios": ratios, "rates": rates}),
            out,
        )?;
    }
    Ok(())
}

/// Page-table units per second of the NUMA-balancing simulator (`numa02`,
/// `mmlab` scanner).
pub fn numab_rate() -> Result<f64> {
    use numab::{bench_throughput, builtin_scenario, ScannerVersion};
    let file = builtin_scenario("numa02").context("the numa02 scenario is built in")?;
    let (rate, _) = bench_throughput(&file.numab, ScannerVersion::Mmlab, file.seed)
        .map_err(|e| anyhow::anyhow!("numab bench: {e}"))?;
    Ok(rate)
}

/// ns per flush of the heavy barrier alone: a forced flush of one leaf
/// its shard's owner dirtied, minus the same flush of a tree whose flushes
/// use fences instead (`Config::membarrier(false)`), with a second thread
/// running (membarrier interrupts the CPUs running the process's threads).
fn time_barrier(shards: usize, dur: Duration) -> f64 {
    let flush = |membarrier: bool| -> f64 {
        let mut b = Schema::builder();
        let it = b.state("s", Unit::Pages);
        let Ok(schema) = b.build() else {
            return f64::NAN;
        };
        let cfg = Config::preset(Preset::Hierstat)
            .shards(shards.max(2))
            .membarrier(membarrier);
        let Ok(stats) = HierStats::new(schema, cfg) else {
            return f64::NAN;
        };
        let Ok(g) = stats.create(&stats.root(), "g") else {
            return f64::NAN;
        };
        let root = stats.root();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mut times = Vec::new();
        std::thread::scope(|s| {
            // ORDERING: Relaxed; a stop flag.
            if spawn_scoped(s, "mmlab-bench-spin", || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
            .is_err()
            {
                return;
            }
            let t0 = Instant::now();
            while t0.elapsed() < dur {
                let _ = stats.add(&g, it, 1);
                let t = Instant::now();
                let _ = stats.flush_forced(&root);
                times.push(t.elapsed().as_nanos() as f64);
            }
            stop.store(true, Ordering::Relaxed);
        });
        times.sort_by(|a, b| a.total_cmp(b));
        times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
    };
    (flush(true) - flush(false)).max(0.0)
}

/// A cache-padded atomic.
#[repr(align(128))]
struct Padded(AtomicU64);

/// A tree of `shards` shards with 4 state items and a chain of `depth`
/// groups below the root: (tree, deepest group, items).
fn chain_tree(
    preset: Preset,
    depth: u32,
    shards: usize,
) -> Result<(HierStats, hierstat::Group, Vec<hierstat::ItemId>)> {
    let mut b = Schema::builder();
    let items: Vec<_> = (0..4)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let stats = HierStats::new(b.build()?, Config::preset(preset).shards(shards))?;
    let mut g = stats.root();
    for d in 0..depth {
        g = stats.create(&g, &format!("d{d}"))?;
    }
    Ok((stats, g, items))
}

/// ns per `HierStats::add` of 1 to `g` (rotating over `items`), one thread.
#[inline(never)]
fn time_add(stats: &HierStats, g: &hierstat::Group, items: &[hierstat::ItemId], n: u64) -> f64 {
    let t = CpuTimer::start();
    for i in 0..n {
        let _ = stats.add(black_box(g), items[(i & 3) as usize], 1);
    }
    t.elapsed_ns() / n as f64
}

/// ns per plain add to a per-thread array (4 cells in turn), one thread.
#[inline(never)]
fn time_plain(cells: &mut [u64; 4], n: u64) -> f64 {
    let t = CpuTimer::start();
    for i in 0..n {
        black_box(&mut *cells)[(i & 3) as usize] += 1;
    }
    t.elapsed_ns() / n as f64
}

/// ns per `Counter::add` of 1 (rotating over `counters`), one thread.
#[inline(never)]
fn time_counter(counters: &[hierstat::Counter], n: u64) -> f64 {
    let t = CpuTimer::start();
    for i in 0..n {
        let _ = black_box(&counters[(i & 3) as usize]).add(1);
    }
    t.elapsed_ns() / n as f64
}

/// ns per shared-path update (`add_with` on shard 0) of 1 to `g`
/// (rotating over `items`), one thread.
#[inline(never)]
fn time_add_with(
    stats: &HierStats,
    g: &hierstat::Group,
    items: &[hierstat::ItemId],
    n: u64,
) -> f64 {
    let t = CpuTimer::start();
    for i in 0..n {
        let _ = stats.add_with(Shard(0), black_box(g), items[(i & 3) as usize], 1, &mut ());
    }
    t.elapsed_ns() / n as f64
}

/// ns per `HierStats::read` of `g` (rotating over `items`), one thread.
///
/// # Errors
/// A read's error (none: the handles are the tree's own).
#[inline(never)]
fn time_read(
    stats: &HierStats,
    g: &hierstat::Group,
    items: &[hierstat::ItemId],
    n: u64,
) -> Result<f64> {
    let t = CpuTimer::start();
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(stats.read(black_box(g), items[(i & 3) as usize])?);
    }
    black_box(acc);
    Ok(t.elapsed_ns() / n as f64)
}

/// Per-thread ns per operation, 2 threads each running `op(thread, i)` in
/// the same tight loop (chunks of 256 between stop checks), timed on each
/// thread's own CPU time. They start together through a [`Gate`], so a thread that cannot be spawned is an error, not a hang.
///
/// # Errors
/// A thread that cannot be spawned.
fn two_threads(dur: Duration, op: impl Fn(usize, u64) + Sync) -> Result<f64> {
    // ORDERING: Relaxed; a stop flag (the per-op figures come back through
    // join).
    let stop = std::sync::atomic::AtomicBool::new(false);
    let gate = Gate::default();
    std::thread::scope(|s| {
        let mut hs = Vec::new();
        let mut failed = None;
        for t in 0..2 {
            let (gate, stop, op) = (&gate, &stop, &op);
            match spawn_scoped(s, "mmlab-bench", move || {
                gate.wait();
                let timer = CpuTimer::start();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for i in n..n + 256 {
                        op(t, i);
                    }
                    n += 256;
                }
                timer.elapsed_ns() / n.max(1) as f64
            }) {
                Ok(h) => hs.push(h),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        gate.start(&stop, failed)?;
        std::thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        let per_op: Vec<f64> = hs
            .into_iter()
            .map(|h| h.join().unwrap_or(f64::NAN))
            .collect();
        Ok(per_op.iter().sum::<f64>() / per_op.len().max(1) as f64)
    })
}
