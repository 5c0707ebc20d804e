//! The kernel kind's runner: a `hostkernel` experiment `runs` times on
//! the host's kernel, its typed results turned into the shared results
//! model under the one policy `host`, and the host's facts.
//!
//! | experiment | metrics (per case) |
//! |---|---|
//! | update-path | `faults_per_sec_depth{d}`, `ns_per_fault_depth{d}`, `cpu_ns_per_fault_depth{d}`, `slope_pct_per_level`, `ratio_depth4_to_depth2` |
//! | stat-readers | `read_latency_ns_g{G}_w{W}` (p50/p99/p999/max, log2 histogram), `read_cpu_ns_g{G}_w{W}`, `reads_over_1ms_g{G}_w{W}` |
//! | stale-read | `gap_after_charge_pages_{S}kib`, `stat_lag_after_charge_pages_{S}kib`, `gap_after_free_pages_{S}kib`, `over_threshold_{S}kib`, `stat_lag_over_threshold_{S}kib`, `stale_window_ms_{S}kib`, `stale_for_ms_{S}kib` (followed repetitions), `reader_reads_{S}kib`, `threshold_pages` |
//!
//! Every run also stores the simulated twin's predictions of the same
//! figures (`predicted_*`, [`crate::twin::predict_into`]) under the host
//! kernel's era preset, priced with the run's costs.
//!
//! Cancellation: the experiments poll [`lab::RunOptions::cancel`] (the
//! binary links it to its SIGINT/SIGTERM handler, `hostkernel::signals`);
//! a cancelled experiment kills and reaps its workers, removes its groups
//! and the run returns [`RunError::Cancelled`].

use crate::metrics::*;
use crate::spec::{Experiment, KernelScenario, HOST_POLICY};
use hostkernel::{Event, Host, RunFacts};
use lab::report::{PolicyResult, Series};
use lab::{Header, RunOutput};
use lab::{RunError, Steps};
use std::collections::BTreeMap;

/// The run facts as the report's `facts` (for the results store and the
/// reports; code that needs them typed uses [`RunFacts`]).
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

/// A hostkernel error as a run error: cancellation is
/// [`RunError::Cancelled`], the one "interrupted" of the workspace.
pub fn run_error(e: hostkernel::Error) -> RunError {
    match e {
        hostkernel::Error::Interrupted => RunError::Cancelled,
        e => RunError::Kind {
            kind: "kernel",
            source: Box::new(e),
        },
    }
}

/// Runs the experiment `header.runs` times on `host`; its results under
/// the policy `host`, and the host's facts.
///
/// # Errors
/// A cgroup or process operation failed, or the run was cancelled
/// (cleanup has run in every case).
pub fn run(
    host: &Host,
    header: &Header,
    sc: &KernelScenario,
    steps: &mut Steps<'_>,
) -> Result<RunOutput, RunError> {
    let cancel = steps.opts().cancel.clone();
    let costs = sim::cost::CostModel::of(steps.context()).into_owned();
    let mut r = PolicyResult::default();
    steps.total(sc.steps_per_run() * u64::from(header.runs));
    for run in 0..header.runs {
        let mut obs = |ev: Event<'_>| {
            if let Event::Step { done, total } = ev {
                steps.notify(format!("run {} step {done}/{total}", run + 1));
            }
        };
        match &sc.experiment {
            Experiment::UpdatePath(cfg) => {
                let res = hostkernel::run_update_path_observed(host, cfg, &cancel, &mut obs)
                    .map_err(run_error)?;
                record_update_path(&mut r, &res);
            }
            Experiment::StatReaders(cfg) => {
                let mut cfg = cfg.clone();
                cfg.seed = header.seed.wrapping_add(u64::from(run));
                let res = hostkernel::run_stat_readers_observed(host, &cfg, &cancel, &mut obs)
                    .map_err(run_error)?;
                record_stat_readers(&mut r, &res);
            }
            Experiment::StaleRead(cfg) => {
                let res = hostkernel::run_stale_read_observed(host, cfg, &cancel, &mut obs)
                    .map_err(run_error)?;
                record_stale_read(&mut r, &res);
            }
        }
        crate::twin::predict_into(
            &mut r,
            sc,
            host.facts(),
            &costs,
            header.seed.wrapping_add(u64::from(run)),
        )?;
    }
    let mut policies = BTreeMap::new();
    policies.insert(HOST_POLICY.to_string(), r);
    Ok(RunOutput {
        policies,
        facts: facts_map(host.facts()),
    })
}

fn record_update_path(r: &mut PolicyResult, res: &hostkernel::UpdatePathResult) {
    let mut points = Vec::new();
    for d in &res.depths {
        r.push(
            &faults_per_sec(d.depth),
            "ops/s",
            d.faults_per_sec_mean,
            true,
        );
        // The inner runs' ns/fault as a distribution: mean as the value.
        let mut per_run: Vec<u64> = d.runs.iter().map(|x| x.ns_per_fault as u64).collect();
        per_run.sort_unstable();
        let q = |f: f64| simcore::stats::quantile(&per_run, f) as f64;
        push_count(r, &ns_per_fault(d.depth), d.runs.len());
        r.push_summary(
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
        r.push(
            &cpu_ns_per_fault(d.depth),
            "ns",
            d.cpu_ns_per_fault_mean,
            false,
        );
        points.push((d.depth as f64, d.faults_per_sec_mean));
    }
    // The depth figures (NaN where the run could not fit them).
    for (name, unit, value, higher_is_better) in [
        (SLOPE_PCT, "%", res.slope_pct_per_level, false),
        (CPU_SLOPE_PCT, "%", res.slope_cpu_pct_per_level, false),
        (RATIO_4_2, "ratio", res.ratio_depth4_to_depth2, true),
        (CPU_RATIO_4_2, "ratio", res.cpu_ratio_depth4_to_depth2, true),
    ] {
        r.push(name, unit, value.unwrap_or(f64::NAN), higher_is_better);
    }
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
        r.push_latency(&name, &c.samples_ns);
        let cpu = &c.cpu_ns;
        r.push_summary(
            &read_cpu_ns(c.groups, c.writers),
            "ns",
            cpu.mean,
            [
                ("p50", cpu.p50),
                ("p99", cpu.p99),
                ("p999", cpu.p999),
                ("max", cpu.max),
            ],
        );
        r.push(
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
    r.push_latency(sim::kinds::stats::stat_readers::READ_LATENCY_NS, &all);
}

fn record_stale_read(r: &mut PolicyResult, res: &hostkernel::StaleReadResult) {
    r.push(THRESHOLD, "pages", res.threshold_pages as f64, false);
    if let Some(f) = &res.flush_share {
        r.push(FLUSH_SHARE, "ratio", f.share, false);
        r.push(FLUSH_SHARE_LOW, "ratio", f.share_low, false);
        r.push(FLUSH_SHARE_HIGH, "ratio", f.share_high, false);
        r.push(FLUSH_SHARE_PASS_NS, "ns", f.short_pass_ns, false);
    }
    let t = res.threshold_pages as i64;
    for c in &res.cases {
        let k = c.spike_kib;
        for name in [
            gap_after_charge(k),
            stat_lag_after_charge(k),
            format!("gap_after_free_pages_{k}kib"),
        ] {
            push_count(r, &name, c.samples.len());
        }
        for (name, g) in [
            (gap_after_charge(k), &c.after_charge),
            (stat_lag_after_charge(k), &c.stat_lag_after_charge),
            (format!("gap_after_free_pages_{k}kib"), &c.after_free),
        ] {
            r.push_summary(
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
        r.push(
            &format!("over_threshold_{k}kib"),
            "count",
            c.after_charge.over_threshold as f64,
            false,
        );
        r.push(
            &stat_lag_over_threshold(k),
            "count",
            c.stat_lag_after_charge.over_threshold as f64,
            false,
        );
        let stale: Vec<u64> = c
            .samples
            .iter()
            .filter_map(|s| s.stale_for_ms.map(|ms| ms.round() as u64))
            .collect();
        if !stale.is_empty() {
            r.push_distribution(&stale_for_ms(k), "ms", &stale);
            push_count(r, &stale_for_ms(k), stale.len());
        }
        r.push(
            &format!("reader_reads_{k}kib"),
            "count",
            c.samples.iter().map(|s| s.reader_reads).sum::<u64>() as f64,
            false,
        );
        // The trap's trials: the reader flushed the parent during the
        // charge (read it, where the passes were not traced).
        let trials: Vec<_> = c
            .samples
            .iter()
            .filter(|s| s.reader_flushes.map_or(s.reader_reads > 0, |n| n > 0))
            .collect();
        let lags: Vec<u64> = trials
            .iter()
            .filter(|s| s.stat_lag_after_charge > t)
            .map(|s| s.stat_lag_after_charge as u64)
            .collect();
        r.push(&trap_trials(k), "count", trials.len() as f64, false);
        r.push(&trapped(k), "count", lags.len() as f64, false);
        if !lags.is_empty() {
            r.push_distribution(&stat_lag_trapped(k), "pages", &lags);
            push_count(r, &stat_lag_trapped(k), lags.len());
        }
        let flushes: Vec<u64> = c
            .samples
            .iter()
            .filter_map(|s| s.reader_flushes.map(u64::from))
            .collect();
        if !flushes.is_empty() {
            r.push_distribution(&reader_flushes(k), "count", &flushes);
        }
        for (name, sum) in [
            (first_pass_ns(k), &c.first_pass_ns),
            (later_pass_ns(k), &c.later_pass_ns),
        ] {
            if let Some(x) = sum {
                r.push_summary(
                    &name,
                    "ns",
                    x.mean,
                    [
                        ("p50", x.p50),
                        ("p99", x.p99),
                        ("p999", x.p999),
                        ("max", x.max),
                    ],
                );
                push_count(r, &name, x.count);
            }
        }
        for (pick, low, high) in [
            (
                (|s: &hostkernel::StaleReadSample| s.first_pass_ns) as fn(&_) -> Option<f64>,
                first_pass_low_ns(k),
                first_pass_high_ns(k),
            ),
            (
                |s| s.later_pass_ns,
                later_pass_low_ns(k),
                later_pass_high_ns(k),
            ),
        ] {
            let xs: Vec<f64> = c.samples.iter().filter_map(pick).collect();
            if let Some((lo, hi)) =
                simcore::stats::median_interval(&xs, hostkernel::INTERVAL_CONFIDENCE)
            {
                r.push(&low, "ns", lo, false);
                r.push(&high, "ns", hi, false);
            }
        }
        let per_page: Vec<f64> = c
            .samples
            .iter()
            .filter(|s| s.charge_ms > 0.0)
            .map(|s| s.charge_ms * 1e6 / c.spike_pages.max(1) as f64)
            .collect();
        if !per_page.is_empty() {
            r.push(
                &charge_ns_per_page(k),
                "ns",
                simcore::stats::median(&per_page),
                false,
            );
        }
        r.push(
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
