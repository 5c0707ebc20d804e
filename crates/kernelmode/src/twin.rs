//! The simulated twin of a kernel run: the same shapes under the preset
//! closest to the host's kernel ([`CLOSEST_PRESET`]), on as many logical
//! CPUs as the host has online, put beside the host's figures
//! ([`side_by_side`]). Each twin is a typed `stats` scenario (or, for the
//! stale read, the engine driven directly), built from the kernel
//! scenario's configuration and the host's typed [`RunFacts`].

use crate::run::{
    gap_after_charge, ns_per_fault, read_latency, stat_lag_after_charge, RATIO_4_2, SLOPE_PCT,
    THRESHOLD,
};
use crate::spec::{Experiment, KernelScenario, HOST_POLICY};
use hierstat::Preset;
use hostkernel::RunFacts;
use sim::backend::{FlushReason, StatsBackend};
use sim::cost::Work;
use sim::kinds::stats::{stat_readers, update_path, Readers, StatsScenario, Workload};
use sim::report::{Mode, RunReport};
use sim::scenario::Header;
use sim::select::{AnyBackend, PolicyChoice};
use sim::workload::{
    FlusherSpec, ReadersSpec, Targets, TreeShape, TreeSpec, UpdateSpec, WritersSpec,
};
use sim::{RunOptions, Scenario, SimError};

/// The simulated preset closest to the host kernels this project runs on
/// (6.18 → linux-6.17: the lockless update path and the early break).
pub const CLOSEST_PRESET: Preset = Preset::Linux6_17;

/// One figure of the side-by-side view.
#[derive(Debug, Clone, PartialEq)]
pub struct SideRow {
    /// What is compared.
    pub figure: String,
    /// Unit of both values.
    pub unit: String,
    /// The host kernel's value.
    pub host: f64,
    /// The simulated preset's value.
    pub sim: f64,
}

impl SideRow {
    /// host ÷ sim; `None` when not finite.
    pub fn ratio(&self) -> Option<f64> {
        let k = self.host / self.sim;
        k.is_finite().then_some(k)
    }
}

/// The host's figures beside the simulated preset's for the same shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct SideBySide {
    /// The preset simulated (`linux-6.17`).
    pub preset: String,
    /// The host kernel release.
    pub host_kernel: String,
    /// Logical CPUs the simulation used (the host's online CPUs).
    pub cpus: usize,
    /// The figures.
    pub rows: Vec<SideRow>,
    /// What the figures mean and where the model differs.
    pub notes: Vec<String>,
}

/// Simulates the shapes of kernel scenario `sc` under [`CLOSEST_PRESET`]
/// on as many logical CPUs as the host had online (`facts`, the host the
/// run measured) and puts `report`'s host figures beside them.
///
/// * update-path: the simulator's update path on a chain of the same
///   depths, one stat update per operation; host ns/fault vs simulated
///   ns/update, the slope per level and the depth-4/depth-2 ratio;
/// * stat-readers: the simulated stat-readers workload with one parent
///   of G groups, W writer CPUs and one reader on the same period:
///   p50/p99/p99.9/max per case;
/// * stale-read: the engine under the preset, a spike of the same pages
///   charged on one shard and the parent read at once (threshold-guarded
///   flush, a forced root flush every 2 s of virtual time as the kernel's
///   periodic flusher): the parent's lag in pages, max and p99.
///
/// # Errors
/// Simulator errors.
pub fn side_by_side(
    sc: &KernelScenario,
    seed: u64,
    report: &RunReport,
    facts: &RunFacts,
    opts: &RunOptions,
) -> Result<SideBySide, SimError> {
    let cpus = facts.online_cpus.max(1);
    let host_kernel = facts.kernel_release.clone();
    let mean = |m: &str| report.mean_of(HOST_POLICY, m).unwrap_or(f64::NAN);
    let sum = |m: &str| report.sum_of(HOST_POLICY, m).unwrap_or(f64::NAN);
    let pct = |m: &str, k: &str| report.percentile_of(HOST_POLICY, m, k).unwrap_or(f64::NAN);
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let row = |figure: String, unit: &str, host: f64, sim: f64| SideRow {
        figure,
        unit: unit.into(),
        host,
        sim,
    };
    match &sc.experiment {
        Experiment::UpdatePath(cfg) => {
            let depths: Vec<u32> = cfg.depths.iter().map(|&d| d as u32).collect();
            let twin = StatsScenario {
                workload: Workload::UpdatePath(UpdateSpec {
                    depths: depths.clone(),
                    pages: 1,
                    items: 4,
                }),
                duration_ms: 1,
                cpus: Some(cpus as u32),
                threads: None,
            };
            let r = run_twin("update-path-kernel-sim", seed, twin, opts)?;
            let sim_ns = |d: u32| {
                let ops = r
                    .mean_of(CLOSEST_PRESET.name(), &update_path::metric_name(d))
                    .unwrap_or(f64::NAN);
                // Every CPU updates back to back: ns per update per CPU.
                cpus as f64 * 1e9 / ops
            };
            let mut sim_pts = Vec::new();
            for &d in &depths {
                let (h, s) = (mean(&ns_per_fault(d as usize)), sim_ns(d));
                rows.push(row(format!("cost per op, depth {d}"), "ns", h, s));
                sim_pts.push((f64::from(d), s));
            }
            // The thread's CPU time: what the fault executes, without the
            // time a loaded host keeps the worker waiting for a CPU.
            for &d in &depths {
                rows.push(row(
                    format!("cost per op (host CPU time), depth {d}"),
                    "ns",
                    mean(&format!("cpu_ns_per_fault_depth{d}")),
                    sim_ns(d),
                ));
            }
            let sim_slope = slope_pct(&sim_pts);
            rows.push(row(
                "slope per level".into(),
                "%",
                mean(SLOPE_PCT),
                sim_slope,
            ));
            rows.push(row(
                "slope per level (host CPU time)".into(),
                "%",
                mean("cpu_slope_pct_per_level"),
                sim_slope,
            ));
            if depths.contains(&2) && depths.contains(&4) {
                rows.push(row(
                    "ops/s depth 4 / depth 2".into(),
                    "ratio",
                    mean(RATIO_4_2),
                    sim_ns(2) / sim_ns(4),
                ));
            }
            notes.push(format!(
                "host op = one page fault (mmap + touch + munmap share: allocation, zeroing, page tables, \
                 charge, ~4 stat updates); simulated op = one stat update on {cpus} CPUs, the only part \
                 of a fault the model prices"
            ));
        }
        Experiment::StatReaders(cfg) => {
            let period = cfg.period.as_secs_f64() * 1e3;
            if period < 0.001 {
                return Err(SimError::Kind {
                    kind: "kernel",
                    source: "the simulated twin needs stat_readers.period_ms >= 0.001".into(),
                });
            }
            let duration_ms = ((cfg.reads_per_reader as f64 * period) as u64).clamp(1, 2000);
            for &g in &cfg.groups {
                for &w in &cfg.writers {
                    // A writer with no CPU is expressed as a hot set that is
                    // never written: no writer CPUs means rate 0 back to back,
                    // so W = 0 uses one CPU at a negligible rate.
                    let (wcpus, rate) = if w == 0 { (1, 1.0) } else { (w, 250_000.0) };
                    let twin = StatsScenario {
                        workload: Workload::StatReaders(Readers {
                            tree: TreeSpec {
                                fanout: vec![1, g as u32],
                                names: Vec::new(),
                            },
                            writers: WritersSpec {
                                cpus: Some(wcpus as u32),
                                rate_per_cpu: rate,
                                targets: Targets::Leaves,
                                hot_fraction: 1.0,
                                pages: [1, 1],
                                thp_fraction: 0.0,
                                items: 4,
                                uncharge_fraction: 0.5,
                                burst: 16,
                            },
                            readers: ReadersSpec {
                                count: cfg.readers as u32,
                                period_ms: period,
                                targets: Targets::Leaves,
                                items: None,
                                aligned: false,
                            },
                            flusher: Some(FlusherSpec { period_ms: 2000 }),
                        }),
                        duration_ms,
                        cpus: Some(cpus as u32),
                        threads: None,
                    };
                    let r = run_twin("stat-readers-kernel-sim", seed, twin, opts)?;
                    let sim_p = |k: &str| {
                        r.policies
                            .get(CLOSEST_PRESET.name())
                            .and_then(|p| p.metrics.get(stat_readers::READ_LATENCY_NS))
                            .and_then(|m| m.percentiles.get(k))
                            .map(|v| simcore::stats::mean(v))
                            .unwrap_or(f64::NAN)
                    };
                    let host = read_latency(g, w);
                    for (k, label) in [
                        ("p50", "p50"),
                        ("p99", "p99"),
                        ("p999", "p99.9"),
                        ("max", "max"),
                    ] {
                        rows.push(row(
                            format!("read {label}, {g} groups, {w} writers"),
                            "ns",
                            pct(&host, k),
                            sim_p(k),
                        ));
                    }
                }
            }
            notes.push(
                "host read = open + read + close of memory.stat (VFS, seq_file formatting of ~40 keys, \
                 the flush); simulated read = the flush and the per-item aggregation priced by the cost \
                 model (no syscall or formatting cost)"
                    .into(),
            );
        }
        Experiment::StaleRead(cfg) => {
            let page_kib = (facts.page_size as u64 / 1024).max(1);
            let threshold = mean(THRESHOLD);
            for &kib in &cfg.spikes_kib {
                let pages = kib / page_kib;
                let simulated =
                    simulate_spikes(cpus, pages, cfg.repetitions, cfg.pause.as_secs_f64() * 1e3)?;
                let mut sorted = simulated.lags.clone();
                sorted.sort_unstable();
                let smax = sorted.last().copied().unwrap_or(0) as f64;
                let sp99 = simcore::stats::quantile(&sorted, 0.99) as f64;
                let m = stat_lag_after_charge(kib);
                rows.push(row(
                    format!("stat lag max, {kib} KiB spike"),
                    "pages",
                    pct(&m, "max"),
                    smax,
                ));
                rows.push(row(
                    format!("stat lag p99, {kib} KiB spike"),
                    "pages",
                    pct(&m, "p99"),
                    sp99,
                ));
                rows.push(row(
                    format!("reads with stat lag > T, {kib} KiB spike"),
                    "count",
                    sum(&format!("stat_lag_over_threshold_{kib}kib")),
                    simulated
                        .lags
                        .iter()
                        .filter(|&&l| l > simulated.threshold)
                        .count() as f64,
                ));
                rows.push(row(
                    format!("longest stale window, {kib} KiB spike"),
                    "ms",
                    mean(&format!("stale_window_ms_{kib}kib")),
                    simulated.longest_stale_ms,
                ));
                let g = gap_after_charge(kib);
                rows.push(row(
                    format!("counter - stat gap max, {kib} KiB spike"),
                    "pages",
                    pct(&g, "max"),
                    smax,
                ));
            }
            notes.push(format!(
                "threshold T = 64 x {cpus} CPUs = {threshold:.0} pages on the host; simulated: one shard charges \
                 the spike (4 stat items per page), the parent is read with the preset's threshold-guarded \
                 flush, a forced root flush runs every 2 s of virtual time; the simulated gap has no per-CPU \
                 charge stocks, so it compares with the host's stat lag, not with its counter - stat gap"
            ));
        }
    }
    Ok(SideBySide {
        preset: CLOSEST_PRESET.name().to_string(),
        host_kernel,
        cpus,
        rows,
        notes,
    })
}

/// Least-squares slope of `y` over `x` as % of the mean `y` per unit `x`;
/// NaN with fewer than two points or no spread in `x`.
fn slope_pct(points: &[(f64, f64)]) -> f64 {
    let my = points.iter().map(|p| p.1).sum::<f64>() / points.len().max(1) as f64;
    simcore::stats::slope(points).map_or(f64::NAN, |s| 100.0 * s / my)
}

/// Items updated per faulted page (anon, LRU, pgfault, pgpgin).
pub const ITEMS_PER_PAGE: usize = 4;

/// Virtual time one faulted (or freed) page takes: the order of the host's
/// wall-clock cost per fault, so a periodic flush can land mid-spike as it
/// does on the host.
pub const NS_PER_PAGE: u64 = 3_000;

/// The kernel's periodic flush period (`FLUSH_TIME`, 2 s).
const PERIODIC_NS: u64 = 2_000_000_000;

/// The simulated stale-read shape: the parent's lag after every charge.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatedSpikes {
    /// The parent's lag (exact − read, pages, first item) after every charge.
    pub lags: Vec<u64>,
    /// The preset's flush threshold on this many shards, pages.
    pub threshold: u64,
    /// The longest run of consecutive repetitions whose lag exceeded the
    /// threshold, in virtual milliseconds (first to last such read).
    pub longest_stale_ms: f64,
}

/// The stale-read shape on the engine under [`CLOSEST_PRESET`]: root →
/// parent → leaf on `cpus` shards; `reps` times a spike of `pages` pages is
/// charged in the leaf on shard 0 (one page at a time, [`ITEMS_PER_PAGE`]
/// items each, [`NS_PER_PAGE`] of virtual time each), the parent is read
/// with the threshold-guarded flush, the spike is freed the same way and
/// read again; `pause_ms` between repetitions; a forced root flush every
/// 2 s of virtual time, checked after every page (so it can land mid-spike).
///
/// # Errors
/// Engine errors.
pub fn simulate_spikes(
    cpus: usize,
    pages: u64,
    reps: usize,
    pause_ms: f64,
) -> Result<SimulatedSpikes, SimError> {
    let shape = TreeShape::chain(2);
    let b = AnyBackend::build(
        PolicyChoice::Engine(CLOSEST_PRESET),
        &shape,
        ITEMS_PER_PAGE,
        cpus.max(1),
    )?;
    let AnyBackend::Engine(be) = b else {
        unreachable!("an engine preset builds the engine backend")
    };
    let threshold = be.stats().threshold_pages();
    let (parent, leaf) = (1, 2);
    let mut work = Work::default();
    let mut now_ns: u64 = 0;
    let mut last_periodic: u64 = 0;
    let mut exact: i64 = 0;
    let mut lags = Vec::with_capacity(reps);
    let mut lines = Vec::new();
    let mut step = |delta: i64, exact: &mut i64, now_ns: &mut u64, last: &mut u64| -> u64 {
        for _ in 0..pages {
            for item in 0..ITEMS_PER_PAGE {
                be.add_counted(0, leaf, item, delta, &mut work, &mut lines);
                lines.clear();
            }
            *exact += delta;
            *now_ns += NS_PER_PAGE;
            if *now_ns - *last >= PERIODIC_NS {
                be.set_time(*now_ns);
                be.flush(0, FlushReason::Periodic, &mut work);
                *last = *now_ns;
            }
        }
        be.set_time(*now_ns);
        if be.needs_flush(parent, FlushReason::Read) {
            be.flush(parent, FlushReason::Read, &mut work);
        }
        let v = be.read(parent, 0, &mut work).value as i64;
        (*exact - v).unsigned_abs()
    };
    let mut longest_stale_ms: f64 = 0.0;
    let mut window_start: Option<u64> = None;
    for _ in 0..reps {
        let lag = step(1, &mut exact, &mut now_ns, &mut last_periodic);
        lags.push(lag);
        if lag > threshold {
            let start = *window_start.get_or_insert(now_ns);
            longest_stale_ms = longest_stale_ms.max((now_ns - start) as f64 / 1e6);
        } else {
            window_start = None;
        }
        step(-1, &mut exact, &mut now_ns, &mut last_periodic);
        now_ns += (pause_ms * 1e6) as u64;
    }
    Ok(SimulatedSpikes {
        lags,
        threshold,
        longest_stale_ms,
    })
}

/// Runs a twin scenario under [`CLOSEST_PRESET`], once, with `seed`.
fn run_twin(
    name: &str,
    seed: u64,
    spec: StatsScenario,
    opts: &RunOptions,
) -> Result<RunReport, SimError> {
    let header = Header {
        name: name.into(),
        mode: Mode::Sim,
        description: String::new(),
        reproduces: String::new(),
        policies: vec![CLOSEST_PRESET.name().to_string()],
        runs: 1,
        seed,
        user_policies: Vec::new(),
    };
    let sc =
        Scenario::from_parts(&sim::kinds::stats::KIND, header, Box::new(spec)).map_err(|m| {
            SimError::Kind {
                kind: "kernel",
                source: m.into(),
            }
        })?;
    sc.run(opts, &mut |_| {})
}
