//! `mmlab calibrate`: measures the simulator's per-unit costs on this host
//! and saves them as TOML (load them with `--costs FILE`).
//!
//! * `atomic_ns`: an uncontended `fetch_add`;
//! * `lock_ns`: an uncontended `Mutex` lock + unlock;
//! * `call_ns`: an engine update's time minus its atomics' cost;
//! * `shard_scanned_ns`, `group_visited_ns`, `counter_aggregated_ns`: a
//!   non-negative least-squares fit of forced flushes' wall time against
//!   their work counters (after subtracting their locks and atomics), over
//!   trees of several shard counts, dirty-set sizes and item counts;
//! * `item_read_ns`: one `read_bounded`;
//! * `line_transfer_ns`: half a ping-pong round trip between two threads
//!   (kept at the default on a single-CPU host).
//!
//! The `[kernel]` table ([`sim::cost::KernelCosts`]):
//!
//! * `rstat_level_ns`, `charge_level_ns`, `stat_update_ns`: replicas of one
//!   level of `memcg_rstat_updated`'s walk (dependent loads and a per-CPU
//!   add, each walk waiting for the one before, as the fault's own work
//!   separates them), of one page-counter level (an atomic add, the limit
//!   and watermark checks) and of a stat update's two per-CPU adds;
//! * with kernel mode (root, a writable memory controller;
//!   `hostkernel::run_calibration`): the host's faults per mapping less
//!   their modelled memcg work (charge and stat updates under the host
//!   era's preset, at the measured depth), the `memory.stat` syscalls and
//!   lines, a flush visit, a loopback send, and with `--count-updates` the
//!   stat updates per fault; the file's `host` line names the machine.

use crate::cli::CalibrateArgs;
use crate::cmd::bench::time_atomic;
use anyhow::Result;
use hierstat::sim::Simulator as _;
use hierstat::{Config, FlushKind, HierStats, Preset, Schema, Shard, Unit, WorkCounters};
use lab::policy::FlushPolicy;
use sim::cost::CostModel;
use sim::priced::{machine, Op, PricedSetup};
use simcore::clock::CpuTimer;
use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Smallest of `reps` measurements: on a shared, noisy host the minimum is
/// the best estimate of an uncontended per-unit cost.
pub fn min_of(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..reps.max(1)).map(|_| f()).fold(f64::INFINITY, f64::min)
}

/// A measured line transfer above this (ns) means the two threads were not
/// running at the same time (an overloaded host); the default is kept.
pub const MAX_PLAUSIBLE_TRANSFER_NS: f64 = 2_000.0;

/// Solves the normal equations of `rows · x ≈ y` by Gaussian elimination,
/// dropping (fixing at 0) any coefficient that comes out negative.
pub fn nnls(rows: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let k = rows.first().map(|r| r.len()).unwrap_or(0);
    let mut active: Vec<bool> = vec![true; k];
    loop {
        let idx: Vec<usize> = (0..k).filter(|&i| active[i]).collect();
        let n = idx.len();
        let mut a = vec![vec![0.0; n + 1]; n];
        for (r, &yv) in rows.iter().zip(y) {
            for (i, &ci) in idx.iter().enumerate() {
                for (j, &cj) in idx.iter().enumerate() {
                    a[i][j] += r[ci] * r[cj];
                }
                a[i][n] += r[ci] * yv;
            }
        }
        for col in 0..n {
            let piv = (col..n)
                .max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))
                .unwrap_or(col);
            a.swap(col, piv);
            let d = a[col][col];
            if d.abs() < 1e-12 {
                continue;
            }
            let pivot = a[col].clone();
            for (row, r) in a.iter_mut().enumerate() {
                if row != col {
                    let f = r[col] / d;
                    for (x, p) in r.iter_mut().zip(&pivot).skip(col) {
                        *x -= f * p;
                    }
                }
            }
        }
        let mut x = vec![0.0; k];
        let mut negative = false;
        for (i, &ci) in idx.iter().enumerate() {
            let d = a[i][i];
            x[ci] = if d.abs() < 1e-12 { 0.0 } else { a[i][n] / d };
            if x[ci] < 0.0 {
                active[ci] = false;
                negative = true;
            }
        }
        if !negative {
            return x;
        }
    }
}

fn lock_ns(n: u64) -> f64 {
    let m = Mutex::new(0u64);
    let t = CpuTimer::start();
    for _ in 0..n {
        *black_box(&m).lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }
    t.elapsed_ns() / n as f64
}

fn line_transfer_ns(rounds: u64) -> Option<f64> {
    if std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        < 2
    {
        return None;
    }
    // ORDERING: Acquire/Release pairs between the two threads' stores and
    // loads of the ping-pong word (each side waits for the other's value).
    let word = AtomicU64::new(0);
    let start = Instant::now();
    let ran = std::thread::scope(|s| {
        let w = &word;
        let other = simcore::thread::spawn_scoped(s, "mmlab-calibrate", move || {
            for i in 0..rounds {
                while w.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                w.store(2 * i + 2, Ordering::Release);
            }
        });
        if other.is_err() {
            return false;
        }
        for i in 0..rounds {
            w.store(2 * i + 1, Ordering::Release);
            while w.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        true
    });
    ran.then(|| start.elapsed().as_nanos() as f64 / (2 * rounds) as f64)
}

/// One flush sample: its work counters and wall time.
struct FlushSample {
    work: WorkCounters,
    ns: f64,
}

fn flush_samples(quick: bool) -> Result<Vec<FlushSample>> {
    let mut out = Vec::new();
    // `--quick` keeps three sizes on each axis: with two, the fit of the
    // three flush costs is nearly collinear and gave 0 for one of them.
    let shard_counts: &[usize] = if quick {
        &[4, 16, 64]
    } else {
        &[4, 16, 64, 256]
    };
    let dirty_counts: &[usize] = &[10, 100, 1000];
    for &shards in shard_counts {
        for &items in &[1usize, 4, 16, 64] {
            let mut b = Schema::builder();
            let ids: Vec<_> = (0..items)
                .map(|i| b.state(&format!("s{i}"), Unit::Pages))
                .collect();
            let stats =
                HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(shards))?;
            let root = stats.root();
            let mut leaves = Vec::new();
            for s in 0..10 {
                let sl = stats.create(&root, &format!("s{s}"))?;
                for c in 0..100 {
                    leaves.push(stats.create(&sl, &format!("c{c}"))?);
                }
            }
            for &dirty in dirty_counts {
                let mut best: Option<FlushSample> = None;
                for rep in 0..8 {
                    for (k, g) in leaves.iter().take(dirty).enumerate() {
                        for &it in &ids {
                            stats.add_with(Shard((k * 7 + rep) % shards), g, it, 1, &mut ())?;
                        }
                    }
                    let mut wc = WorkCounters::default();
                    let t = CpuTimer::start();
                    stats.flush_with(&root, FlushKind::Forced, &mut wc)?;
                    let ns = t.elapsed_ns();
                    // The first flush warms the tree; keep the fastest of the rest.
                    if rep > 0 && best.as_ref().is_none_or(|b| ns < b.ns) {
                        best = Some(FlushSample { work: wc, ns });
                    }
                }
                out.extend(best);
            }
        }
    }
    Ok(out)
}

/// One level of the rstat walk, replicated: per level a dependent load of
/// the parent pointer and of the per-CPU counter, an add and a compare;
/// each walk starts from the previous one's result (latency, not
/// throughput). Depth 8 minus depth 0, per level.
fn rstat_level_ns(n: u64) -> f64 {
    #[repr(align(64))]
    struct Level {
        parent: usize,
        residue: std::cell::Cell<u64>,
        _pad: [u64; 6],
    }
    let levels: Vec<Level> = (0..9usize)
        .map(|i| Level {
            parent: i.saturating_sub(1),
            residue: std::cell::Cell::new(0),
            _pad: [0; 6],
        })
        .collect();
    let walk = |start: usize| -> u64 {
        let mut at = start;
        let mut acc = 0u64;
        loop {
            let l = &levels[black_box(at)];
            let x = l.residue.get() + 1;
            l.residue.set(if x >= 64 { 0 } else { x });
            acc = acc.wrapping_add(x);
            if at == 0 {
                return acc;
            }
            at = l.parent;
        }
    };
    let time = |depth: usize| {
        let t = CpuTimer::start();
        let mut acc = 0u64;
        for _ in 0..n {
            // The next walk's start depends on this one's result (its top
            // bit, always 0, which the compiler cannot know).
            acc = walk(depth + (acc >> 63) as usize);
        }
        black_box(acc);
        t.elapsed_ns() / n as f64
    };
    let mut diffs: Vec<f64> = (0..9).map(|_| time(8) - time(0)).collect();
    diffs.sort_by(f64::total_cmp);
    (diffs[diffs.len() / 2] / 8.0).max(0.1)
}

/// One page-counter level, replicated: an atomic add to `usage`, loads of
/// `max` and `watermark` and their compares.
fn charge_level_ns(n: u64) -> f64 {
    #[repr(align(64))]
    struct Counter {
        usage: AtomicU64,
        max: u64,
        watermark: AtomicU64,
    }
    let c = Counter {
        usage: AtomicU64::new(0),
        max: u64::MAX,
        watermark: AtomicU64::new(0),
    };
    let t = CpuTimer::start();
    for _ in 0..n {
        // ORDERING: Relaxed; a single thread, timing only.
        let new = black_box(&c).usage.fetch_add(1, Ordering::Relaxed) + 1;
        if new > black_box(c.max) {
            break;
        }
        if new > c.watermark.load(Ordering::Relaxed) {
            c.watermark.store(new, Ordering::Relaxed);
        }
    }
    t.elapsed_ns() / n as f64
}

/// A stat update's own per-CPU adds, replicated: the memcg's and the
/// lruvec's counters of an item, each at an index looked up in a table.
fn stat_update_ns(n: u64) -> f64 {
    let index: Vec<u8> = (0..64).map(|i| (i * 7 % 64) as u8).collect();
    let mut memcg = vec![0i64; 64];
    let mut lruvec = vec![0i64; 64];
    let t = CpuTimer::start();
    for i in 0..n {
        let item = index[black_box(i as usize) & 63] as usize;
        memcg[item] += 1;
        lruvec[item] += 1;
    }
    black_box((&memcg, &lruvec));
    t.elapsed_ns() / n as f64
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The memcg work the model puts in one fault of `op` at `depth` under the
/// host era's preset: what a measured fault is reduced by to give the
/// rest of the fault.
fn modelled_memcg_ns(m: &CostModel, op: Op, depth: u32, cpus: usize, era: Preset) -> f64 {
    let mut costs = m.clone();
    costs.kernel.fault_anon_ns = 0.0;
    costs.kernel.fault_cow_ns = 0.0;
    costs.kernel.fault_shared_ns = 0.0;
    let o = machine::run(&PricedSetup {
        op,
        tasks: 1,
        cpus,
        depth,
        region_pages: 1024,
        shared_mm: false,
        warmup: 50_000,
        duration: 500_000,
        policy: FlushPolicy::preset(era),
        flush_period: Some(2_000_000_000),
        costs,
        machine: sim::machines::Machine::host().with_cpus(cpus as u32),
        protected_levels: 0,
    });
    1e9 / o.ops_per_sec_per_task().max(1.0)
}

/// The `[kernel]` table from the host (kernel mode), on top of `m`'s
/// replicas; the `host` line names the machine.
fn calibrate_kernel(m: &mut CostModel, quick: bool, count_updates: bool) -> Result<()> {
    let host = kernelmode::host().map_err(|why| anyhow::anyhow!("kernel mode: {why}"))?;
    let cancel = hostkernel::signals::install(None)?;
    let cfg = hostkernel::CalibrateConfig {
        pages: if quick { 512 } else { 1024 },
        rounds: if quick { 4 } else { 8 },
        reads: if quick { 100 } else { 400 },
        sends: if quick { 5_000 } else { 20_000 },
        count_updates,
    };
    let r = hostkernel::run_calibration(host, &cfg, &cancel)?;
    let f = &r.facts;
    let era = kernelmode::era_preset(&f.kernel_release);
    let k = &mut m.kernel;
    for fc in &r.faults {
        if let Some(u) = fc.updates_per_fault {
            match fc.mapping.as_str() {
                "anon" => k.updates_per_fault_anon = u,
                "file-private" => k.updates_per_fault_cow = u,
                _ => k.updates_per_fault_shared = u,
            }
        }
    }
    k.read_syscall_ns = r.read_syscall_ns;
    k.stat_items = r.stat_items.max(1);
    k.read_item_ns = ((r.read_stat_ns - r.read_syscall_ns) / f64::from(k.stat_items)).max(0.0);
    k.flush_visit_ns = r.flush_visit_ns;
    k.send_ns = r.send_ns;
    let snapshot = m.clone();
    for fc in &r.faults {
        let op = match fc.mapping.as_str() {
            "anon" => Op::FaultAnon,
            "file-private" => Op::FaultCow,
            _ => Op::FaultShared,
        };
        let memcg = modelled_memcg_ns(&snapshot, op, r.depth as u32, f.online_cpus, era);
        let rest = (fc.cpu_ns_per_fault - memcg).max(1.0);
        match op {
            Op::FaultAnon => m.kernel.fault_anon_ns = rest,
            Op::FaultCow => m.kernel.fault_cow_ns = rest,
            _ => m.kernel.fault_shared_ns = rest,
        }
    }
    m.host = format!(
        "{} ({} CPUs), Linux {}, cgroup {} (mmlab calibrate, {})",
        r.cpu_model,
        f.online_cpus,
        f.kernel_release,
        f.cgroup_version,
        today()
    );
    Ok(())
}

/// Measures the costs on this host (`kernel`: the `[kernel]` table from
/// kernel mode too).
pub fn calibrate(quick: bool) -> Result<CostModel> {
    calibrate_with(quick, false, false)
}

/// [`calibrate`], choosing the kernel part.
pub fn calibrate_with(quick: bool, kernel: bool, count_updates: bool) -> Result<CostModel> {
    let n: u64 = if quick { 200_000 } else { 2_000_000 };
    let mut m = CostModel::defaults();
    m.atomic_ns = min_of(5, || time_atomic(n));
    m.lock_ns = min_of(5, || lock_ns(n / 4));
    // Engine update: time and atomics per call.
    {
        let mut b = Schema::builder();
        let it = b.state("s", Unit::Pages);
        let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(4))?;
        let g = stats.create(&stats.root(), "a")?;
        let mut wc = WorkCounters::default();
        stats.add_with(Shard(0), &g, it, 1, &mut wc)?;
        let per_call_atomics = {
            let mut w = WorkCounters::default();
            for _ in 0..1000 {
                stats.add_with(Shard(0), &g, it, 1, &mut w)?;
            }
            (w.atomics + w.list_pops) as f64 / 1000.0
        };
        let t_add = min_of(5, || {
            let t = CpuTimer::start();
            for _ in 0..n {
                let _ = stats.add_with(Shard(0), black_box(&g), it, 1, &mut ());
            }
            t.elapsed_ns() / n as f64
        });
        m.call_ns = (t_add - per_call_atomics * m.atomic_ns).max(0.1);
        // Reads.
        stats.flush_forced(&stats.root())?;
        m.item_read_ns = min_of(5, || {
            let t = CpuTimer::start();
            for _ in 0..n / 4 {
                black_box(stats.read_bounded(black_box(&g), it).ok());
            }
            t.elapsed_ns() / (n / 4) as f64
        });
    }
    // Flush fit.
    let samples = flush_samples(quick)?;
    let rows: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| {
            vec![
                s.work.shards_scanned as f64,
                s.work.groups_visited as f64,
                s.work.counters_aggregated as f64,
            ]
        })
        .collect();
    let y: Vec<f64> = samples
        .iter()
        .map(|s| {
            let known = s.work.lock_acquisitions as f64 * m.lock_ns
                + (s.work.atomics + s.work.list_pops) as f64 * m.atomic_ns
                + m.call_ns;
            (s.ns - known).max(0.0)
        })
        .collect();
    let x = nnls(&rows, &y);
    // A coefficient the non-negative fit pinned at 0 was not measured (its
    // work is collinear with another's on this host's samples): keep the
    // shipped default for it rather than claim the work is free.
    let defaults = CostModel::defaults();
    let fitted = [
        ("shard_scanned_ns", x[0], defaults.shard_scanned_ns),
        ("group_visited_ns", x[1], defaults.group_visited_ns),
        (
            "counter_aggregated_ns",
            x[2],
            defaults.counter_aggregated_ns,
        ),
    ];
    let mut kept = [0.0; 3];
    for (i, (name, v, d)) in fitted.iter().enumerate() {
        kept[i] = if *v > 0.005 {
            *v
        } else {
            eprintln!(
                "mmlab calibrate: {name}: the fit gave {v:.3} ns; keeping the default {d} ns"
            );
            *d
        };
    }
    m.shard_scanned_ns = kept[0];
    m.group_visited_ns = kept[1];
    m.counter_aggregated_ns = kept[2];
    let transfer = min_of(3, || {
        line_transfer_ns(if quick { 20_000 } else { 100_000 }).unwrap_or(f64::INFINITY)
    });
    if transfer <= MAX_PLAUSIBLE_TRANSFER_NS {
        m.line_transfer_ns = transfer;
    }
    m.kernel.rstat_level_ns = rstat_level_ns(n / 8);
    m.kernel.charge_level_ns = min_of(5, || charge_level_ns(n / 4));
    m.kernel.stat_update_ns = min_of(5, || stat_update_ns(n / 4));
    m.host = format!(
        "engine and replica costs: this host ({} CPUs, mmlab calibrate, {}); the rest of [kernel]: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        today(),
        CostModel::defaults().host
    );
    if kernel {
        calibrate_kernel(&mut m, quick, count_updates)?;
    }
    // Round to 0.01 ns for a readable file.
    let k = &mut m.kernel;
    for v in [
        &mut m.call_ns,
        &mut m.atomic_ns,
        &mut m.shard_scanned_ns,
        &mut m.group_visited_ns,
        &mut m.counter_aggregated_ns,
        &mut m.lock_ns,
        &mut m.item_read_ns,
        &mut m.line_transfer_ns,
        &mut k.fault_anon_ns,
        &mut k.fault_cow_ns,
        &mut k.fault_shared_ns,
        &mut k.send_ns,
        &mut k.charge_level_ns,
        &mut k.stat_update_ns,
        &mut k.rstat_level_ns,
        &mut k.read_syscall_ns,
        &mut k.read_item_ns,
        &mut k.flush_visit_ns,
        &mut k.updates_per_fault_anon,
        &mut k.updates_per_fault_cow,
        &mut k.updates_per_fault_shared,
    ] {
        *v = (*v * 100.0).round() / 100.0;
    }
    Ok(m)
}

/// `mmlab calibrate`.
pub fn cmd_calibrate(args: &CalibrateArgs, out: &mut dyn Write) -> Result<()> {
    let mut pb = crate::pipeline::progress::Reporter::new("calibrate");
    pb.total(1);
    let kernel = !args.no_kernel;
    if kernel {
        if let Err(why) = kernelmode::host() {
            anyhow::bail!(
                "the [kernel] costs are measured in kernel mode, which this host cannot run ({why}); \
                 `--no-kernel` keeps the shipped ones"
            );
        }
    }
    let m = calibrate_with(args.quick, kernel, args.count_updates)?;
    pb.step("measured");
    pb.finish();
    let text = format!(
        "# Per-unit simulator costs measured by `mmlab calibrate` on the host below.\n{}",
        m.to_toml()
    );
    crate::render::output::write_output(&args.out, text.as_bytes(), out)?;
    if crate::render::output::is_stdout(&args.out) {
        return Ok(());
    }
    let d = CostModel::defaults();
    writeln!(
        out,
        "{:<30} {:>10} {:>10}",
        "cost (ns)", "measured", "default"
    )?;
    for (k, a, b) in [
        ("call_ns", m.call_ns, d.call_ns),
        ("atomic_ns", m.atomic_ns, d.atomic_ns),
        ("shard_scanned_ns", m.shard_scanned_ns, d.shard_scanned_ns),
        ("group_visited_ns", m.group_visited_ns, d.group_visited_ns),
        (
            "counter_aggregated_ns",
            m.counter_aggregated_ns,
            d.counter_aggregated_ns,
        ),
        ("lock_ns", m.lock_ns, d.lock_ns),
        ("item_read_ns", m.item_read_ns, d.item_read_ns),
        ("line_transfer_ns", m.line_transfer_ns, d.line_transfer_ns),
        (
            "kernel.fault_anon_ns",
            m.kernel.fault_anon_ns,
            d.kernel.fault_anon_ns,
        ),
        (
            "kernel.fault_cow_ns",
            m.kernel.fault_cow_ns,
            d.kernel.fault_cow_ns,
        ),
        (
            "kernel.fault_shared_ns",
            m.kernel.fault_shared_ns,
            d.kernel.fault_shared_ns,
        ),
        ("kernel.send_ns", m.kernel.send_ns, d.kernel.send_ns),
        (
            "kernel.charge_level_ns",
            m.kernel.charge_level_ns,
            d.kernel.charge_level_ns,
        ),
        (
            "kernel.stat_update_ns",
            m.kernel.stat_update_ns,
            d.kernel.stat_update_ns,
        ),
        (
            "kernel.rstat_level_ns",
            m.kernel.rstat_level_ns,
            d.kernel.rstat_level_ns,
        ),
        (
            "kernel.read_syscall_ns",
            m.kernel.read_syscall_ns,
            d.kernel.read_syscall_ns,
        ),
        (
            "kernel.read_item_ns",
            m.kernel.read_item_ns,
            d.kernel.read_item_ns,
        ),
        (
            "kernel.flush_visit_ns",
            m.kernel.flush_visit_ns,
            d.kernel.flush_visit_ns,
        ),
        (
            "kernel.updates_per_fault_anon",
            m.kernel.updates_per_fault_anon,
            d.kernel.updates_per_fault_anon,
        ),
        (
            "kernel.stat_items",
            f64::from(m.kernel.stat_items),
            f64::from(d.kernel.stat_items),
        ),
    ] {
        writeln!(out, "{k:<30} {a:>10.2} {b:>10.2}")?;
    }
    writeln!(out, "host: {}", m.host)?;
    writeln!(
        out,
        "\nsaved to {} (use it with --costs {})",
        crate::render::shown(&args.out),
        crate::cmd::path_word(&args.out).unwrap_or_else(|_| "FILE".into())
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nnls_recovers_exact_coefficients() {
        let rows = vec![
            vec![1.0, 0.0, 2.0],
            vec![0.0, 1.0, 1.0],
            vec![3.0, 1.0, 0.0],
            vec![1.0, 1.0, 1.0],
        ];
        let x = [2.0, 3.0, 0.5];
        let y: Vec<f64> = rows
            .iter()
            .map(|r| r.iter().zip(&x).map(|(a, b)| a * b).sum())
            .collect();
        let got = nnls(&rows, &y);
        for (g, e) in got.iter().zip(&x) {
            assert!((g - e).abs() < 1e-9, "{got:?}");
        }
    }

    #[test]
    fn nnls_clamps_negative_coefficients() {
        let rows = vec![vec![1.0, 1.0], vec![2.0, 1.0], vec![3.0, 1.0]];
        let y = vec![0.0, 1.0, 2.0]; // slope 1, intercept -1
        let got = nnls(&rows, &y);
        assert!(got.iter().all(|&v| v >= 0.0), "{got:?}");
    }
}
