//! The `kind = "kernel"` runner: the `hostkernel` experiments on the host's
//! own kernel, turned into the shared results model, and their simulated
//! twin (the same shapes under the `linux-6.17` preset) for a side-by-side
//! view.
//!
//! Every figure lands in the one policy `host` with the names below, so the
//! store, `show`, `compare`, `report` and the HTML report treat a kernel run
//! like any other; the host facts (kernel release, cgroup version, online
//! CPUs, the flush threshold) go into [`RunReport::facts`].
//!
//! | experiment | metrics (per case) |
//! |---|---|
//! | update-path | `faults_per_sec_depth{d}`, `ns_per_fault_depth{d}`, `cpu_ns_per_fault_depth{d}`, `slope_pct_per_level`, `ratio_depth4_to_depth2` |
//! | stat-readers | `read_latency_ns_g{G}_w{W}` (p50/p99/p999/max, log2 histogram), `read_cpu_ns_g{G}_w{W}`, `reads_over_1ms_g{G}_w{W}` |
//! | stale-read | `gap_after_charge_pages_{S}kib`, `stat_lag_after_charge_pages_{S}kib`, `gap_after_free_pages_{S}kib`, `over_threshold_{S}kib`, `stat_lag_over_threshold_{S}kib`, `stale_window_ms_{S}kib`, `threshold_pages` |
//!
//! Cancellation: the runner installs the process's SIGINT/SIGTERM handler
//! ([`hostkernel::Cancel::with_signals`]) for the run only (the caller's
//! handler, such as mmlab's Ctrl-C report, is back after it); a signal makes the
//! experiment stop, kill and reap its workers, remove its groups and return
//! [`SimError::Kernel`] with [`hostkernel::Error::Interrupted`].

use super::{push, push_latency, AnyBackend, PolicyChoice};
use crate::backend::{FlushReason, StatsBackend};
use crate::cost::Work;
use crate::error::SimError;
use crate::report::{Claim, Claims, Log2Histogram, MetricSamples, PolicyResult, RunReport, Series};
use crate::run::{Progress, RunOptions};
use crate::spec::kernel::{Experiment, KernelScenario, HOST_POLICY};
use crate::spec::StatsScenario;
use crate::workload::TreeShape;
use hierstat::Preset;
use hostkernel::{Event, Host, RunFacts};
use std::collections::BTreeMap;

/// The simulated preset closest to the host kernels this project runs on
/// (6.18 → linux-6.17: the lockless update path and the early break).
pub const CLOSEST_PRESET: Preset = Preset::Linux6_17;

/// Metric: faults per second at `depth`.
pub fn faults_per_sec(depth: usize) -> String {
    format!("faults_per_sec_depth{depth}")
}

/// Metric: wall-clock ns per fault at `depth`.
pub fn ns_per_fault(depth: usize) -> String {
    format!("ns_per_fault_depth{depth}")
}

/// Metric: `memory.stat` read latency with `groups` groups and `writers` writers.
pub fn read_latency(groups: usize, writers: usize) -> String {
    format!("read_latency_ns_g{groups}_w{writers}")
}

/// Metric: the counter − stat gap (pages) right after a spike of `kib`.
pub fn gap_after_charge(kib: u64) -> String {
    format!("gap_after_charge_pages_{kib}kib")
}

/// Metric: spike pages the parent's stat did not show right after the charge.
pub fn stat_lag_after_charge(kib: u64) -> String {
    format!("stat_lag_after_charge_pages_{kib}kib")
}

/// Metric: the slope of wall ns/fault over depth, % per level.
pub const SLOPE_PCT: &str = "slope_pct_per_level";
/// Metric: faults/s at depth 4 ÷ faults/s at depth 2.
pub const RATIO_4_2: &str = "ratio_depth4_to_depth2";
/// Metric: the documented flush threshold, pages.
pub const THRESHOLD: &str = "threshold_pages";

/// Whether this host can run kernel mode: `Err` holds the reason (no root,
/// no memory controller, read-only, not delegated) a suite prints as
/// `skipped: <reason>`.
pub fn host_support() -> Result<(), String> {
    match Host::detect() {
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether a run error means "this host cannot run kernel mode" (rather
/// than a failure of a run that could have worked).
pub fn is_host_unsupported(e: &SimError) -> bool {
    matches!(e, SimError::Kernel(k) if k.is_host_unsupported())
}

/// Whether a run error is a kernel run stopped by SIGINT/SIGTERM (after
/// its cleanup).
pub fn is_interrupted(e: &SimError) -> bool {
    matches!(e, SimError::Kernel(hostkernel::Error::Interrupted))
}

/// The run facts as the report's `facts`.
pub fn facts_map(f: &RunFacts) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("kernel_release".into(), f.kernel_release.clone());
    m.insert("kernel_version".into(), f.kernel_version.clone());
    m.insert("machine".into(), f.machine.clone());
    m.insert("cgroup_version".into(), f.cgroup_version.to_string());
    m.insert("memory_mount".into(), f.memory_mount.display().to_string());
    m.insert("online_cpus".into(), f.online_cpus.to_string());
    m.insert("page_size".into(), f.page_size.to_string());
    if let Some(t) = &f.thp_mode {
        m.insert("thp_mode".into(), t.clone());
    }
    m.insert("charge_batch".into(), f.charge_batch.to_string());
    m.insert(
        "flush_threshold_pages".into(),
        f.flush_threshold_pages.to_string(),
    );
    m
}

/// A kernel run's results by policy (only `host`) and its run facts.
pub type KernelResults = (BTreeMap<String, PolicyResult>, BTreeMap<String, String>);

/// Runs a kernel scenario: the experiment `runs` times; its results under
/// the policy `host` and the host's run facts.
///
/// # Errors
/// [`SimError::Kernel`]: the host cannot run kernel mode
/// ([`is_host_unsupported`]), the run was interrupted, or a cgroup or
/// process operation failed (cleanup has run in every case);
/// [`SimError::Config`] for a policy other than `host`.
pub fn run(
    sc: &KernelScenario,
    progress: &mut dyn FnMut(Progress),
) -> Result<KernelResults, SimError> {
    if sc.policies.as_slice() != [HOST_POLICY] {
        return Err(SimError::Config(format!(
            "kernel scenario `{}` runs only the policy `{HOST_POLICY}`, not {:?}",
            sc.name, sc.policies
        )));
    }
    let host = Host::detect()?;
    let cancel = hostkernel::signals::install(None)?;
    let mut r = PolicyResult::default();
    let mut facts = BTreeMap::new();
    let mut total_sent = false;
    for run in 0..sc.runs {
        let mut obs = |ev: Event<'_>| {
            if let Event::Step { done, total } = ev {
                if !total_sent {
                    progress(Progress::Total(total as u64 * u64::from(sc.runs)));
                    total_sent = true;
                }
                progress(Progress::Step(format!(
                    "run {} step {done}/{total}",
                    run + 1
                )));
            }
        };
        match sc.experiment {
            Experiment::UpdatePath => {
                let cfg = sc.update_path.clone().unwrap_or_default();
                let res = hostkernel::run_update_path_observed(&host, &cfg, &cancel, &mut obs)?;
                facts = facts_map(&res.facts);
                record_update_path(&mut r, &res);
            }
            Experiment::StatReaders => {
                let mut cfg = sc.stat_readers.clone().unwrap_or_default();
                cfg.seed = sc.seed.wrapping_add(u64::from(run));
                let res = hostkernel::run_stat_readers_observed(&host, &cfg, &cancel, &mut obs)?;
                facts = facts_map(&res.facts);
                record_stat_readers(&mut r, &res);
            }
            Experiment::StaleRead => {
                let cfg = sc.stale_read.clone().unwrap_or_default();
                let res = hostkernel::run_stale_read_observed(&host, &cfg, &cancel, &mut obs)?;
                facts = facts_map(&res.facts);
                record_stale_read(&mut r, &res);
            }
        }
    }
    let mut out = BTreeMap::new();
    out.insert(HOST_POLICY.to_string(), r);
    Ok((out, facts))
}

/// Appends one run's distribution given as summary figures.
fn push_summary(r: &mut PolicyResult, name: &str, unit: &str, value: f64, pcts: [(&str, f64); 4]) {
    let m = r
        .metrics
        .entry(name.to_string())
        .or_insert_with(|| MetricSamples {
            unit: unit.to_string(),
            ..MetricSamples::default()
        });
    m.values.push(value);
    for (k, v) in pcts {
        m.percentiles.entry(k.to_string()).or_default().push(v);
    }
}

fn record_update_path(r: &mut PolicyResult, res: &hostkernel::UpdatePathResult) {
    let mut points = Vec::new();
    for d in &res.depths {
        push(
            r,
            &faults_per_sec(d.depth),
            "ops/s",
            d.faults_per_sec_mean,
            true,
        );
        // The inner runs' ns/fault as a distribution: mean as the value.
        let mut per_run: Vec<u64> = d.runs.iter().map(|x| x.ns_per_fault as u64).collect();
        per_run.sort_unstable();
        let q = |f: f64| super::quantile(&per_run, f) as f64;
        push_summary(
            r,
            &ns_per_fault(d.depth),
            "ns",
            d.ns_per_fault_mean,
            [
                ("p50", q(0.5)),
                ("p99", q(0.99)),
                ("p999", q(0.999)),
                ("max", q(1.0)),
            ],
        );
        push(
            r,
            &format!("cpu_ns_per_fault_depth{}", d.depth),
            "ns",
            d.cpu_ns_per_fault_mean,
            false,
        );
        points.push((d.depth as f64, d.faults_per_sec_mean));
    }
    let nan = f64::NAN;
    push(
        r,
        SLOPE_PCT,
        "%",
        res.slope_pct_per_level.unwrap_or(nan),
        false,
    );
    push(
        r,
        "cpu_slope_pct_per_level",
        "%",
        res.slope_cpu_pct_per_level.unwrap_or(nan),
        false,
    );
    push(
        r,
        RATIO_4_2,
        "ratio",
        res.ratio_depth4_to_depth2.unwrap_or(nan),
        true,
    );
    push(
        r,
        "cpu_ratio_depth4_to_depth2",
        "ratio",
        res.cpu_ratio_depth4_to_depth2.unwrap_or(nan),
        true,
    );
    r.series.insert(
        "faults_per_sec_vs_depth".into(),
        Series {
            x_label: "depth".into(),
            y_label: "faults/s".into(),
            points,
        },
    );
}

fn record_stat_readers(r: &mut PolicyResult, res: &hostkernel::StatReadersResult) {
    for c in &res.cases {
        let name = read_latency(c.groups, c.writers);
        push_latency(r, &name, &c.samples_ns);
        let cpu = &c.cpu_ns;
        push_summary(
            r,
            &format!("read_cpu_ns_g{}_w{}", c.groups, c.writers),
            "ns",
            cpu.mean,
            [
                ("p50", cpu.p50),
                ("p99", cpu.p99),
                ("p999", cpu.p999),
                ("max", cpu.max),
            ],
        );
        push(
            r,
            &format!("reads_over_1ms_g{}_w{}", c.groups, c.writers),
            "count",
            c.over_1ms as f64,
            false,
        );
    }
    // All cases together, under the name the simulated stat-readers uses.
    let all: Vec<u64> = res
        .cases
        .iter()
        .flat_map(|c| c.samples_ns.iter().copied())
        .collect();
    push_latency(r, super::stat_readers::READ_LATENCY_NS, &all);
}

fn record_stale_read(r: &mut PolicyResult, res: &hostkernel::StaleReadResult) {
    push(r, THRESHOLD, "pages", res.threshold_pages as f64, false);
    for c in &res.cases {
        let k = c.spike_kib;
        for (name, g) in [
            (gap_after_charge(k), &c.after_charge),
            (stat_lag_after_charge(k), &c.stat_lag_after_charge),
            (format!("gap_after_free_pages_{k}kib"), &c.after_free),
        ] {
            push_summary(
                r,
                &name,
                "pages",
                g.mean,
                [
                    ("p50", g.abs.p50),
                    ("p99", g.abs.p99),
                    ("p999", g.abs.p999),
                    ("max", g.max as f64),
                ],
            );
        }
        push(
            r,
            &format!("over_threshold_{k}kib"),
            "count",
            c.after_charge.over_threshold as f64,
            false,
        );
        push(
            r,
            &format!("stat_lag_over_threshold_{k}kib"),
            "count",
            c.stat_lag_after_charge.over_threshold as f64,
            false,
        );
        push(
            r,
            &format!("stale_window_ms_{k}kib"),
            "ms",
            c.longest_stale_window
                .as_ref()
                .map(|w| w.duration_ms)
                .unwrap_or(0.0),
            false,
        );
    }
}

/// The reference figures of `kernel-rstat.md` (measured with small C
/// programs on the build host) beside this run, for information.
pub fn claims(report: &RunReport) -> Vec<Claim> {
    let mut c = Claims::new(report);
    let p = HOST_POLICY;
    if let (Some(a), Some(b)) = (
        report.mean_of(p, &ns_per_fault(1)),
        report.mean_of(p, &ns_per_fault(8)),
    ) {
        c.add(
            "fault cost flat over depth 1..8 (reference)",
            format!("{:.2} -> {:.2} µs", a / 1e3, b / 1e3),
            "1.42-1.48 µs, flat within 3%",
            true,
        );
    }
    if let Some(k) = report.mean_of(p, RATIO_4_2) {
        c.add(
            "faults/s depth 4 / depth 2 (reference)",
            format!("{k:.3}"),
            "seed 001 netperf: ~0.95",
            true,
        );
    }
    for (g, w) in [(200, 0), (200, 1), (2000, 2)] {
        let m = read_latency(g, w);
        if let (Some(p50), Some(p999)) = (
            report.percentile_of(p, &m, "p50"),
            report.percentile_of(p, &m, "p999"),
        ) {
            let seed = match (g, w) {
                (200, 0) => "p50 15.8 µs, p99.9 57 µs",
                (200, _) => "p50 15.6 µs, p99.9 40 µs",
                _ => "p50 24.6 µs, p99.9 61 µs",
            };
            c.add(
                &format!("memory.stat read, {g} groups, {w} writers (reference)"),
                format!(
                    "p50 {}, p99.9 {}",
                    crate::report::format_us(p50),
                    crate::report::format_us(p999)
                ),
                seed,
                true,
            );
        }
    }
    if let Some(t) = report.mean_of(p, THRESHOLD) {
        let pol = report.policies.get(p);
        let mut lag_max: Option<(String, f64)> = None;
        if let Some(pol) = pol {
            for (name, m) in &pol.metrics {
                if let Some(kib) = name
                    .strip_prefix("stat_lag_after_charge_pages_")
                    .and_then(|s| s.strip_suffix("kib"))
                {
                    let mx = m
                        .percentiles
                        .get("max")
                        .map(|v| v.iter().copied().fold(f64::NAN, f64::max))
                        .unwrap_or(f64::NAN);
                    if lag_max.as_ref().is_none_or(|(_, v)| mx > *v) {
                        lag_max = Some((format!("{kib} KiB"), mx));
                    }
                }
            }
        }
        if let Some((spike, mx)) = lag_max {
            c.add(
                "parent memory.stat misses at most the threshold after a spike",
                format!("max lag {mx:.0} pages ({spike} spike), T = {t:.0}"),
                "64 pages x online CPUs",
                mx <= t,
            );
        }
    }
    c.into_vec()
}

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
/// on as many logical CPUs as the host had online (from `report`'s facts)
/// and puts `report`'s host figures beside them.
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
    report: &RunReport,
    opts: &RunOptions,
) -> Result<SideBySide, SimError> {
    let cpus: usize = report
        .facts
        .get("online_cpus")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let host_kernel = report
        .facts
        .get("kernel_release")
        .cloned()
        .unwrap_or_else(|| "unknown".into());
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
    match sc.experiment {
        Experiment::UpdatePath => {
            let cfg = sc.update_path.clone().unwrap_or_default();
            let depths: Vec<u32> = cfg.depths.iter().map(|&d| d as u32).collect();
            let text = format!(
                "kind = \"stats\"\nname = \"update-path-kernel-sim\"\nworkload = \"update-path\"\n\
                 mode = \"sim\"\npolicies = [\"{}\"]\nruns = 1\nseed = {}\nduration_ms = 1\ncpus = {cpus}\n\n\
                 [update]\ndepths = {depths:?}\npages = 1\nitems = 4\n",
                CLOSEST_PRESET.name(),
                sc.seed
            );
            let twin = StatsScenario::parse("<update-path-kernel twin>", &text)?;
            let res = super::update_path::run(&twin, opts, &mut |_| {})?;
            let pol = res.get(CLOSEST_PRESET.name()).cloned().unwrap_or_default();
            let sim_ns = |d: u32| {
                let ops = pol
                    .metrics
                    .get(&super::update_path::metric_name(d))
                    .map(|m| crate::report::mean(&m.values))
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
        Experiment::StatReaders => {
            let cfg = sc.stat_readers.clone().unwrap_or_default();
            let period = cfg.period.as_secs_f64() * 1e3;
            let duration_ms = ((cfg.reads_per_reader as f64 * period) as u64).clamp(1, 2000);
            for &g in &cfg.groups {
                for &w in &cfg.writers {
                    // A writer with no CPU is expressed as a hot set that is
                    // never written: no writer CPUs means rate 0 back to back,
                    // so W = 0 uses one CPU at a negligible rate.
                    let (wcpus, rate) = if w == 0 { (1, 1.0) } else { (w, 250_000.0) };
                    let text = format!(
                        "kind = \"stats\"\nname = \"stat-readers-kernel-sim\"\nworkload = \"stat-readers\"\n\
                         mode = \"sim\"\npolicies = [\"{}\"]\nruns = 1\nseed = {}\nduration_ms = {duration_ms}\ncpus = {cpus}\n\n\
                         [tree]\nfanout = [1, {g}]\n\n\
                         [writers]\ncpus = {wcpus}\nrate_per_cpu = {rate:.1}\ntargets = \"leaves\"\npages = [1, 1]\nuncharge_fraction = 0.5\nitems = 4\nburst = 16\n\n\
                         [readers]\ncount = {}\nperiod_ms = {period}\ntargets = \"leaves\"\n\n[flusher]\nperiod_ms = 2000\n",
                        CLOSEST_PRESET.name(),
                        sc.seed,
                        cfg.readers
                    );
                    let twin = StatsScenario::parse("<stat-readers-kernel twin>", &text)?;
                    let res = super::stat_readers::run(&twin, opts, &mut |_| {})?;
                    let m = res
                        .get(CLOSEST_PRESET.name())
                        .and_then(|p| p.metrics.get(super::stat_readers::READ_LATENCY_NS))
                        .cloned()
                        .unwrap_or_default();
                    let sim_p = |k: &str| {
                        m.percentiles
                            .get(k)
                            .map(|v| crate::report::mean(v))
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
        Experiment::StaleRead => {
            let cfg = sc.stale_read.clone().unwrap_or_default();
            let page_kib: u64 = report
                .facts
                .get("page_size")
                .and_then(|s| s.parse::<u64>().ok())
                .map(|b| (b / 1024).max(1))
                .unwrap_or(4);
            let threshold = mean(THRESHOLD);
            for &kib in &cfg.spikes_kib {
                let pages = kib / page_kib;
                let simulated =
                    simulate_spikes(cpus, pages, cfg.repetitions, cfg.pause.as_secs_f64() * 1e3)?;
                let mut sorted = simulated.lags.clone();
                sorted.sort_unstable();
                let smax = sorted.last().copied().unwrap_or(0) as f64;
                let sp99 = super::quantile(&sorted, 0.99) as f64;
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

/// Least-squares slope of `y` over `x` as % of the mean `y` per unit `x`.
fn slope_pct(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return f64::NAN;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    100.0 * (sxy / sxx) / my
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

/// The histogram of a host metric, for renderers that want it directly.
pub fn histogram_of<'a>(report: &'a RunReport, metric: &str) -> Option<&'a Log2Histogram> {
    report
        .policies
        .get(HOST_POLICY)?
        .metrics
        .get(metric)?
        .histogram
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Scenario;

    /// The kernel tests run one at a time: each checks that no subtree of
    /// this process is left, which another test's live run would break.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// The host and the serial lock, or `None` after printing why kernel
    /// mode cannot run here.
    fn host_or_skip(test: &str) -> Option<(Host, std::sync::MutexGuard<'static, ()>)> {
        match Host::detect() {
            Ok(h) => Some((h, SERIAL.lock().unwrap_or_else(|e| e.into_inner()))),
            Err(e) if e.is_host_unsupported() => {
                eprintln!("{test}: skipped: {e}");
                None
            }
            Err(e) => panic!("{test}: detection failed: {e}"),
        }
    }

    /// Subtrees under the hierarchy root owned by this process.
    fn own_subtrees(host: &Host) -> Vec<std::path::PathBuf> {
        let me = std::process::id() as i32;
        std::fs::read_dir(host.base())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .and_then(hostkernel::parse_subtree_name)
                    .is_some_and(|o| o.pid == me)
            })
            .map(|e| e.path())
            .collect()
    }

    #[test]
    fn builtin_kernel_scenarios_report_like_any_run() {
        let Some((host, _serial)) = host_or_skip("builtin_kernel_scenarios_report_like_any_run")
        else {
            return;
        };
        for (name, metric) in [
            ("update-path-kernel", ns_per_fault(4)),
            ("stat-readers-kernel", read_latency(2000, 2)),
            ("stale-read-kernel", stat_lag_after_charge(16384)),
        ] {
            let mut sc = Scenario::builtin(name).unwrap().unwrap();
            sc.shrink_for_smoke_test();
            let mut steps = 0;
            let report = crate::run(&sc, &RunOptions::default(), &mut |p| {
                if matches!(p, Progress::Step(_)) {
                    steps += 1;
                }
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(steps > 0, "{name}: no progress");
            assert_eq!(report.mode, crate::report::Mode::Kernel);
            assert_eq!(report.policy_order, vec![HOST_POLICY.to_string()]);
            let m = &report.policies[HOST_POLICY].metrics[&metric];
            assert_eq!(m.values.len(), 1, "{name}: {metric}");
            for k in ["p50", "p99", "p999", "max"] {
                assert!(m.percentiles.contains_key(k), "{name}: {metric} {k}");
            }
            assert_eq!(
                report.facts["cgroup_version"],
                host.facts().cgroup_version.to_string()
            );
            assert_eq!(report.facts["kernel_release"], host.facts().kernel_release);
            assert!(own_subtrees(&host).is_empty(), "{name} left a subtree");
        }
    }

    #[test]
    fn a_panic_in_the_progress_callback_leaves_no_cgroup_behind() {
        let Some((host, _serial)) =
            host_or_skip("a_panic_in_the_progress_callback_leaves_no_cgroup_behind")
        else {
            return;
        };
        let mut sc = Scenario::builtin("stat-readers-kernel").unwrap().unwrap();
        sc.shrink_for_smoke_test();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::run(&sc, &RunOptions::default(), &mut |p| {
                if matches!(p, Progress::Step(_)) {
                    panic!("progress observer fails mid-run");
                }
            })
        }));
        assert!(r.is_err(), "the observer's panic propagates");
        assert!(own_subtrees(&host).is_empty(), "a subtree was left behind");
    }

    #[test]
    fn slope_of_a_line() {
        let s = slope_pct(&[(1.0, 100.0), (2.0, 110.0), (3.0, 120.0)]);
        assert!((s - 10.0 / 110.0 * 100.0).abs() < 1e-9, "{s}");
        assert!(slope_pct(&[(1.0, 1.0)]).is_nan());
    }

    #[test]
    fn simulated_spikes_below_the_threshold_are_missed_and_large_ones_seen() {
        // 2 CPUs: T = 128 pages. 16 pages x 4 items = 64 units stay under
        // it: the parent's read does not flush and misses the spike.
        let small = simulate_spikes(2, 16, 5, 2.0).unwrap();
        assert_eq!(small.threshold, 128);
        assert!(small.lags.iter().all(|&l| l <= 16), "{small:?}");
        assert!(small.lags.iter().any(|&l| l > 0), "{small:?}");
        assert_eq!(small.longest_stale_ms, 0.0);
        // 1024 pages is far over T: the read flushes, lag within the bound.
        let big = simulate_spikes(2, 1024, 5, 2.0).unwrap();
        assert!(big.lags.iter().all(|&l| l <= 128 + 2 * 63), "{big:?}");
    }
}
