//! The simulated twin of a kernel run: the same shapes under the preset of
//! the host kernel's era ([`era_preset`]), on as many logical CPUs as the
//! host has online, priced with the cost file's `[kernel]` table.
//!
//! Every kernel run stores the twin's predictions beside the host's
//! figures, as `predicted_*` metrics of the `host` policy
//! ([`predict_into`]), so that the claims check "the simulation predicts
//! the host" on the stored run and the reports can show both:
//!
//! | experiment | host | predicted |
//! |---|---|---|
//! | update-path | `cpu_ns_per_fault_depth{d}` | `predicted_ns_per_fault_depth{d}`: one task faulting back to back ([`sim::priced::machine`]) |
//! | stat-readers | `read_cpu_ns_g{G}_w{W}`, `read_latency_ns_g{G}_w{W}` | `predicted_read_latency_ns_g{G}_w{W}`: the stat-readers workload with the priced read |
//! | stale-read | `stat_lag_after_charge_pages_{S}kib`, `stat_lag_over_threshold_{S}kib`, `stale_for_ms_{S}kib` | `predicted_*` of the same names: the same sequence in virtual time ([`sim::priced::spike`]) |
//!
//! [`side_by_side`] puts them in one table, the kind's
//! [`lab::Spec::compare_with_simulation`] (`mmlab run X-kernel
//! --compare-sim`).

use crate::metrics::{
    charge_ns_per_page, cpu_ns_per_fault, first_pass_high_ns, first_pass_low_ns, first_pass_ns,
    hit_first, hit_later, later_pass_high_ns, later_pass_low_ns, later_pass_ns, ns_per_fault,
    read_cpu_ns, read_latency, stale_for_ms, stat_lag_after_charge, stat_lag_over_threshold,
    stat_lag_trapped, trap_chances, trap_probability, trap_probability_high, trap_probability_low,
    trap_trials, trapped, window_first_ns, window_later_ns, FLUSH_SHARE, FLUSH_SHARE_HIGH,
    FLUSH_SHARE_LOW, FLUSH_SHARE_PASS_NS,
};
use crate::spec::{Experiment, KernelScenario, HOST_POLICY};
use hierstat::Preset;
use hostkernel::RunFacts;
use lab::policy::FlushPolicy;
use lab::report::{Mode, PolicyResult, RunReport, SideBySide, SideRow};
use lab::Header;
use lab::{RunError, RunOptions, Scenario};
use sim::cost::CostModel;
use sim::kinds::stats::{stat_readers, Readers, StatsScenario, Workload};
use sim::machines::Machine;
use sim::priced::{machine, spike, Op, PricedSetup};
use sim::workload::{FlusherSpec, ReadersSpec, Targets, TreeSpec, WritersSpec};
use simcore::time::{MILLIS, SECONDS};

/// The preset of the era of a kernel release: `linux-6.17` from 6.16 (the
/// 2025 early break in `memcg_rstat_updated`), `linux-6.8` from 6.8
/// (per-memcg thresholds, subtree flushes), `linux-5.15` before (one
/// global threshold); `linux-6.17` if the release does not parse.
pub fn era_preset(release: &str) -> Preset {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major: Option<u32> = it.next().and_then(|m| m.parse().ok());
    let minor: Option<u32> = it.next().and_then(|m| m.parse().ok());
    match (major, minor) {
        (Some(ma), Some(mi)) if (ma, mi) < (6, 8) => Preset::Linux5_15,
        (Some(ma), Some(mi)) if (ma, mi) < (6, 16) => Preset::Linux6_8,
        _ => Preset::Linux6_17,
    }
}

/// The name of a predicted metric.
pub fn predicted(metric: &str) -> String {
    format!("predicted_{metric}")
}

/// Pushes the twin's predictions for one run of `sc` on the host of
/// `facts` into `r` (see the module docs).
///
/// # Errors
/// Simulator errors.
pub fn predict_into(
    r: &mut PolicyResult,
    sc: &KernelScenario,
    facts: &RunFacts,
    costs: &CostModel,
    seed: u64,
) -> Result<(), RunError> {
    let cpus = facts.online_cpus.max(1);
    let preset = era_preset(&facts.kernel_release);
    let policy = FlushPolicy::preset(preset);
    match &sc.experiment {
        Experiment::UpdatePath(cfg) => {
            for &d in &cfg.depths {
                let o = machine::run(&PricedSetup {
                    op: Op::FaultAnon,
                    tasks: 1,
                    cpus,
                    depth: d as u32,
                    region_pages: cfg.pages as u64,
                    shared_mm: false,
                    warmup: MILLIS / 2,
                    duration: 5 * MILLIS,
                    policy,
                    flush_period: Some(2 * SECONDS),
                    costs: costs.clone(),
                    machine: Machine::host().with_cpus(cpus as u32),
                    protected_levels: 0,
                });
                r.push(
                    &predicted(&ns_per_fault(d)),
                    "ns",
                    1e9 / o.ops_per_sec_per_task().max(1e-9),
                    false,
                );
            }
        }
        Experiment::StatReaders(cfg) => {
            let period = (cfg.period.as_secs_f64() * 1e3).max(0.001);
            let duration_ms = ((cfg.reads_per_reader as f64 * period) as u64).clamp(1, 2000);
            for &g in &cfg.groups {
                for &w in &cfg.writers {
                    // No writer: one CPU writing at a negligible rate.
                    let (wcpus, rate) = if w == 0 { (1, 1.0) } else { (w, 250_000.0) };
                    let twin = StatsScenario {
                        workload: Workload::StatReaders(Readers {
                            tree: TreeSpec {
                                fanout: vec![1, g as u32],
                                names: Vec::new(),
                            },
                            writers: WritersSpec {
                                cpus: Some(wcpus.min(cpus) as u32),
                                rate_per_cpu: rate,
                                uncharge_fraction: 0.5,
                                ..WritersSpec::default()
                            },
                            readers: ReadersSpec {
                                count: cfg.readers as u32,
                                period_ms: period,
                                targets: Targets::Leaves,
                                items: None,
                                aligned: false,
                                tolerance: Default::default(),
                            },
                            flusher: Some(FlusherSpec { period_ms: 2000 }),
                        }),
                        duration_ms,
                        cpus: Some(cpus as u32),
                        threads: None,
                        machine: None,
                    };
                    let opts = RunOptions {
                        context: lab::Context::default().with(costs.clone()),
                        ..RunOptions::default()
                    };
                    let rep = run_twin("stat-readers-kernel-sim", preset, seed, twin, &opts)?;
                    let pct = |k: &str| {
                        rep.percentile_of(preset.name(), stat_readers::READ_LATENCY_NS, k)
                            .unwrap_or(f64::NAN)
                    };
                    let mean = rep
                        .mean_of(preset.name(), stat_readers::READ_LATENCY_NS)
                        .unwrap_or(f64::NAN);
                    r.push_summary(
                        &predicted(&read_latency(g, w)),
                        "ns",
                        mean,
                        [
                            ("p50", pct("p50")),
                            ("p99", pct("p99")),
                            ("p999", pct("p999")),
                            ("max", pct("max")),
                        ],
                    );
                }
            }
        }
        Experiment::StaleRead(cfg) => {
            let page_kib = (facts.page_size as u64 / 1024).max(1);
            let inputs: Vec<(u64, WindowBand, Option<f64>)> = cfg
                .spikes_kib
                .iter()
                .map(|&kib| {
                    (
                        kib,
                        window_of(r, cfg, kib, costs),
                        last(r, &charge_ns_per_page(kib)),
                    )
                })
                .collect();
            for (kib, band, page_ns) in inputs {
                let window = band.mid;
                let setup = spike::SpikeSetup {
                    cpus,
                    policy,
                    pages: kib / page_kib,
                    repetitions: cfg.repetitions,
                    concurrent_reader: cfg.concurrent_reader,
                    follow_ms: cfg.follow_ms,
                    follow_poll_ms: cfg.follow_poll_ms,
                    follow_repetitions: cfg.follow_repetitions,
                    pause_ms: cfg.pause.as_secs_f64() * 1e3,
                    periodic_phase: simcore::Rng::new(seed ^ kib).below(2 * SECONDS),
                    window,
                    page_ns,
                    seed: seed ^ kib.rotate_left(32),
                    costs: costs.clone(),
                };
                let o = spike::run(&setup).expect("a preset counts");
                let lags: Vec<u64> = o.samples.iter().map(|s| s.lag).collect();
                r.push_distribution(&predicted(&stat_lag_after_charge(kib)), "pages", &lags);
                crate::metrics::push_count(r, &predicted(&stat_lag_after_charge(kib)), lags.len());
                r.push(
                    &predicted(&stat_lag_over_threshold(kib)),
                    "count",
                    lags.iter().filter(|&&l| l > o.threshold).count() as f64,
                    false,
                );
                let trapped: Vec<u64> = lags.iter().copied().filter(|&l| l > o.threshold).collect();
                if !trapped.is_empty() {
                    r.push_distribution(&predicted(&stat_lag_trapped(kib)), "pages", &trapped);
                    crate::metrics::push_count(
                        r,
                        &predicted(&stat_lag_trapped(kib)),
                        trapped.len(),
                    );
                }
                let stale: Vec<u64> = o
                    .samples
                    .iter()
                    .filter_map(|s| s.stale_for_ms.map(|ms| ms.round() as u64))
                    .collect();
                if !stale.is_empty() {
                    r.push_distribution(&predicted(&stale_for_ms(kib)), "ms", &stale);
                    crate::metrics::push_count(r, &predicted(&stale_for_ms(kib)), stale.len());
                }
                let at = |w: spike::Window| {
                    spike::trap_odds(&spike::SpikeSetup {
                        window: w,
                        ..setup.clone()
                    })
                    .map(|o| o.probability)
                };
                if let (Some(lo), Some(hi)) = (at(band.low), at(band.high)) {
                    r.push(&predicted(&trap_probability_low(kib)), "ratio", lo, false);
                    r.push(&predicted(&trap_probability_high(kib)), "ratio", hi, false);
                }
                if let Some(odds) = spike::trap_odds(&setup) {
                    for (m, unit, v) in [
                        (trap_probability(kib), "ratio", odds.probability),
                        (window_first_ns(kib), "ns", odds.window.first_ns),
                        (window_later_ns(kib), "ns", odds.window.later_ns),
                        (hit_first(kib), "ratio", odds.hit_first),
                        (hit_later(kib), "ratio", odds.hit_later),
                        (trap_chances(kib), "count", odds.chances),
                        (charge_ns_per_page(kib), "ns", odds.page_ns),
                    ] {
                        r.push(&predicted(&m), unit, v, false);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The latest run's value of metric `m` of `r`.
fn last(r: &PolicyResult, m: &str) -> Option<f64> {
    r.metrics
        .get(m)
        .and_then(|s| s.values.last().copied())
        .filter(|v| v.is_finite())
}

/// The latest run's median of distribution `m` of `r`.
fn last_p50(r: &PolicyResult, m: &str) -> Option<f64> {
    r.metrics
        .get(m)
        .and_then(|s| s.percentiles.get("p50"))
        .and_then(|v| v.last().copied())
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// The trap's windows for a spike: the prediction's, and those the
/// measured inputs' intervals bound it by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowBand {
    /// From the inputs' medians.
    pub mid: spike::Window,
    /// From their lower bounds (the flush share's and the passes'
    /// intervals at [`hostkernel::INTERVAL_CONFIDENCE`]).
    pub low: spike::Window,
    /// From their upper bounds.
    pub high: spike::Window,
}

/// The trap's windows for the spike of `kib`, from the host's figures in
/// `r`: the parent's share of a flush pass (the chain calibration) times
/// the reader's own CPU-0 passes, the first of each charge and the later
/// ones (those of this spike, or of any spike, or the calibration's short
/// pass, in that order), each with the bounds of its interval (a pass
/// without one: its median for both); where the host could not trace its
/// flush passes, a priced visit each ([`spike::Window::priced`]), with no
/// band.
pub fn window_of(
    r: &PolicyResult,
    cfg: &hostkernel::StaleReadConfig,
    kib: u64,
    costs: &CostModel,
) -> WindowBand {
    let share = last(r, FLUSH_SHARE).filter(|s| *s > 0.0);
    let (Some(share), Some(first)) = (share, last_p50(r, &first_pass_ns(kib))) else {
        let w = spike::Window::priced(costs);
        return WindowBand {
            mid: w,
            low: w,
            high: w,
        };
    };
    let bound = |m: &str, mid: f64| last(r, m).filter(|v| *v > 0.0).unwrap_or(mid);
    let (share_lo, share_hi) = (
        bound(FLUSH_SHARE_LOW, share).max(0.0),
        bound(FLUSH_SHARE_HIGH, share),
    );
    let first_band = (
        bound(&first_pass_low_ns(kib), first),
        bound(&first_pass_high_ns(kib), first),
    );
    let pooled: Vec<f64> = cfg
        .spikes_kib
        .iter()
        .filter_map(|&k| last_p50(r, &later_pass_ns(k)))
        .collect();
    let (later, later_band) = match last_p50(r, &later_pass_ns(kib)) {
        Some(l) => (
            l,
            (
                bound(&later_pass_low_ns(kib), l),
                bound(&later_pass_high_ns(kib), l),
            ),
        ),
        None => {
            let l = (!pooled.is_empty())
                .then(|| simcore::stats::median(&pooled))
                .or_else(|| last(r, FLUSH_SHARE_PASS_NS))
                .unwrap_or(first);
            (l, (l, l))
        }
    };
    WindowBand {
        mid: spike::Window {
            first_ns: share * first,
            later_ns: share * later,
        },
        low: spike::Window {
            first_ns: share_lo * first_band.0,
            later_ns: share_lo * later_band.0,
        },
        high: spike::Window {
            first_ns: share_hi * first_band.1,
            later_ns: share_hi * later_band.1,
        },
    }
}

/// The host's figures of `report` (a run of `sc` on the host of `facts`)
/// beside the twin's predictions stored with them; a report stored before
/// predictions were (`predicted_*` missing) gets them computed now with
/// `opts`' costs and `seed`.
///
/// # Errors
/// Simulator errors.
pub fn side_by_side(
    sc: &KernelScenario,
    seed: u64,
    report: &RunReport,
    facts: &RunFacts,
    opts: &RunOptions,
) -> Result<SideBySide, RunError> {
    let cpus = facts.online_cpus.max(1);
    let preset = era_preset(&facts.kernel_release);
    let host = report
        .policies
        .get(HOST_POLICY)
        .cloned()
        .unwrap_or_default();
    let mut pred = host.clone();
    if !pred.metrics.keys().any(|k| k.starts_with("predicted_")) {
        predict_into(&mut pred, sc, facts, &CostModel::of(&opts.context), seed)?;
    }
    let one = |p: &PolicyResult, m: &str| {
        p.metrics
            .get(m)
            .map(|s| simcore::stats::mean(&s.values))
            .unwrap_or(f64::NAN)
    };
    let pct = |p: &PolicyResult, m: &str, k: &str| {
        p.metrics
            .get(m)
            .and_then(|s| s.percentiles.get(k))
            .map(|v| simcore::stats::mean(v))
            .unwrap_or(f64::NAN)
    };
    let row = |figure: String, unit: &str, host: f64, sim: f64| SideRow {
        figure,
        unit: unit.into(),
        measured: host,
        simulated: sim,
    };
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    match &sc.experiment {
        Experiment::UpdatePath(cfg) => {
            for &d in &cfg.depths {
                let p = one(&pred, &predicted(&ns_per_fault(d)));
                rows.push(row(
                    format!("fault, depth {d} (host CPU time)"),
                    "ns",
                    one(&host, &cpu_ns_per_fault(d)),
                    p,
                ));
                rows.push(row(
                    format!("fault, depth {d} (host wall clock)"),
                    "ns",
                    one(&host, &ns_per_fault(d)),
                    p,
                ));
            }
            notes.push(format!(
                "a fault priced whole: the rest of the fault ([kernel] fault_anon_ns), its charge through the \
                 stock, its stat updates with {}'s threshold walk ({} CPUs); the host's op is mmap + touch + \
                 munmap per page",
                preset.name(),
                cpus
            ));
        }
        Experiment::StatReaders(cfg) => {
            for &g in &cfg.groups {
                for &w in &cfg.writers {
                    let (m, c, p) = (
                        read_latency(g, w),
                        read_cpu_ns(g, w),
                        predicted(&read_latency(g, w)),
                    );
                    for (k, label) in [("p50", "p50"), ("p99", "p99")] {
                        rows.push(row(
                            format!("read {label}, {g} groups, {w} writers (host CPU time)"),
                            "ns",
                            pct(&host, &c, k),
                            pct(&pred, &p, k),
                        ));
                        rows.push(row(
                            format!("read {label}, {g} groups, {w} writers (host wall clock)"),
                            "ns",
                            pct(&host, &m, k),
                            pct(&pred, &p, k),
                        ));
                    }
                }
            }
            notes.push(
                "a read priced whole: open + read + close, every line of memory.stat formatted, and the flush \
                 it triggers (each engine counter standing for the kernel counters of the group)"
                    .into(),
            );
        }
        Experiment::StaleRead(cfg) => {
            for &kib in &cfg.spikes_kib {
                let (lag, lag_label) = if cfg.concurrent_reader {
                    let (n, k) = (one(&host, &trap_trials(kib)), one(&host, &trapped(kib)));
                    rows.push(row(
                        format!("trapped trials (lag > T), {kib} KiB spike"),
                        "ratio",
                        k / n,
                        one(&pred, &predicted(&trap_probability(kib))),
                    ));
                    (stat_lag_trapped(kib), "stat lag p50 of trapped trials")
                } else {
                    // No reader, no race: the lag of every repetition.
                    let m = stat_lag_over_threshold(kib);
                    rows.push(row(
                        format!("repetitions with lag > T, {kib} KiB spike"),
                        "count",
                        one(&host, &m),
                        one(&pred, &predicted(&m)),
                    ));
                    (stat_lag_after_charge(kib), "stat lag p50")
                };
                for (m, label, unit) in [
                    (lag, lag_label, "pages"),
                    (stale_for_ms(kib), "stale for p50", "ms"),
                ] {
                    rows.push(row(
                        format!("{label}, {kib} KiB spike"),
                        unit,
                        pct(&host, &m, "p50"),
                        pct(&pred, &predicted(&m), "p50"),
                    ));
                }
            }
            notes.push(format!(
                "{}: a concurrent flush's visit of the leaf, a charge, its visit of the parent: the parent's count \
                 stops at T behind the early break, and no read flushes it until the periodic flush \
                 (docs/fidelity.md); each flush traps with the odds of an update in its window (the parent's \
                 visit: the host's measured share of its flush passes); linux-6.8, without the early break, \
                 predicts no lag over T",
                preset.name()
            ));
        }
    }
    Ok(SideBySide {
        title: format!("host kernel vs simulated {}", preset.name()),
        measured: format!("host {}", facts.kernel_release),
        simulated: format!("sim {} ({cpus} CPUs)", preset.name()),
        ratio: "host / sim".into(),
        rows,
        notes,
    })
}

/// Runs a twin scenario under `preset`, once, with `seed`.
fn run_twin(
    name: &str,
    preset: Preset,
    seed: u64,
    spec: StatsScenario,
    opts: &RunOptions,
) -> Result<RunReport, RunError> {
    let header = Header {
        name: name.into(),
        mode: Mode::Sim,
        description: String::new(),
        reproduces: String::new(),
        policies: vec![preset.name().to_string()],
        runs: 1,
        seed,
        user_policies: Vec::new(),
    };
    let sc =
        Scenario::from_parts(&sim::kinds::stats::KIND, header, Box::new(spec)).map_err(|m| {
            RunError::Kind {
                kind: "kernel",
                source: m.into(),
            }
        })?;
    sc.run(opts, &mut |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras() {
        assert_eq!(era_preset("6.18.44-fc-v1098"), Preset::Linux6_17);
        assert_eq!(era_preset("6.16.0"), Preset::Linux6_17);
        assert_eq!(era_preset("6.8.12"), Preset::Linux6_8);
        assert_eq!(era_preset("6.15.1-arch"), Preset::Linux6_8);
        assert_eq!(era_preset("5.15.25"), Preset::Linux5_15);
        assert_eq!(era_preset("weird"), Preset::Linux6_17);
    }
}
