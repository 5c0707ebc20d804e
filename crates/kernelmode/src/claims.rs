//! Kernel mode's claims: the simulation predicts the host. Every run
//! stores the twin's predictions (`predicted_*`, [`crate::twin`]); a claim
//! holds when the host's figure is within the stated tolerance of the
//! prediction:
//!
//! * sizes (ns per fault, read latency, pages of lag, ms stale): within
//!   2× (`0.5 ≤ host ÷ predicted ≤ 2`), the band of every claim in size;
//! * counts of repetitions (how many spikes the parent missed): within a
//!   third of the repetitions, at least 1.
//!
//! Host times are the worker's or the reader's CPU time where the claim is
//! about the kernel's work (a loaded 2-vCPU host delays a thread without
//! changing what it executes); wall-clock figures are shown for reference.

use crate::metrics::{
    cpu_ns_per_fault, host_cases, ns_per_fault, read_cpu_ns, read_latency, stale_for_ms,
    stat_lag_after_charge, stat_lag_over_threshold, RATIO_4_2, THRESHOLD,
};
use crate::spec::HOST_POLICY;
use crate::twin::predicted;
use lab::report::{format_us, Claim, Claims, RunReport};

fn within_2x(host: f64, predicted: f64) -> bool {
    let k = host / predicted;
    k.is_finite() && (0.5..=2.0).contains(&k)
}

/// The claims of a kernel run.
pub fn claims(report: &RunReport) -> Vec<Claim> {
    let mut c = Claims::new(report);
    let p = HOST_POLICY;
    let mean = |m: &str| report.mean_of(p, m);
    let pct = |m: &str, k: &str| report.percentile_of(p, m, k);
    // Update path: ns per fault per depth.
    for d in host_cases::<usize>(report, "cpu_ns_per_fault_depth", "") {
        if let (Some(h), Some(s)) = (
            mean(&cpu_ns_per_fault(d)),
            mean(&predicted(&ns_per_fault(d))),
        ) {
            c.add(
                &format!("fault at depth {d}: the priced twin predicts the host within 2x"),
                format!(
                    "host {} (CPU time), wall {}; {:.2}x",
                    format_us(h),
                    mean(&ns_per_fault(d)).map_or("-".into(), format_us),
                    h / s
                ),
                &format!("predicted {}", format_us(s)),
                within_2x(h, s),
            );
            c.why_if_missed(
                "the [kernel] costs come from another host, or the host's fault work changed: \
                 run `mmlab calibrate` on this host",
            );
        }
    }
    if let Some(k) = mean(RATIO_4_2) {
        c.add_info(
            "faults/s depth 4 / depth 2 (reference)",
            format!("{k:.3}"),
            "source 001 netperf: ~0.95",
            "a fault, not a send: the netperf scenario prices the source's send",
        );
    }
    // Stat readers: p50 and p99 of the read, CPU time, per case.
    for (g, w) in host_cases::<String>(report, "read_cpu_ns_g", "")
        .iter()
        .filter_map(|s| {
            let (g, w) = s.split_once("_w")?;
            Some((g.parse::<usize>().ok()?, w.parse::<usize>().ok()?))
        })
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (cpu, wall, pred) = (
            read_cpu_ns(g, w),
            read_latency(g, w),
            predicted(&read_latency(g, w)),
        );
        let n = samples_of(report, &wall);
        if let (Some(h), Some(s)) = (pct(&cpu, "p50"), pct(&pred, "p50")) {
            c.add(
                &format!(
                    "memory.stat read p50, {g} groups, {w} writers: the priced read predicts the host within 2x"
                ),
                format!(
                    "host {} (CPU time, n={n}), wall {}; {:.2}x",
                    format_us(h),
                    pct(&wall, "p50").map_or("-".into(), format_us),
                    h / s
                ),
                &format!("predicted {}", format_us(s)),
                within_2x(h, s),
            );
            c.why_if_missed(
                "the read's [kernel] costs (read_syscall_ns, read_item_ns, stat_items) come from \
                 another host or another load: run `mmlab calibrate` here",
            );
        }
        if let (Some(h), Some(h50), Some(s)) =
            (pct(&cpu, "p99"), pct(&cpu, "p50"), pct(&pred, "p99"))
        {
            c.add_info(
                &format!("memory.stat read p99, {g} groups, {w} writers (reference)"),
                format!("host {} (CPU time, n={n}, {:.1}x its p50)", format_us(h), h / h50),
                &format!("predicted {}", format_us(s)),
                "a loaded 2-vCPU guest's tail: with no writer (no flush) the host's p99 is still \
                 about twice its p50, noise (interrupts, cache pollution, the hypervisor) the model \
                 does not have; the predicted tail is the flushes'",
            );
        }
    }
    // Stale read: the trap, its size and how long it lasts.
    let t = mean(THRESHOLD);
    for kib in host_cases::<u64>(report, "stat_lag_over_threshold_", "kib") {
        let reps = samples_of(report, &stat_lag_after_charge(kib));
        let over = (
            mean(&stat_lag_over_threshold(kib)),
            mean(&predicted(&stat_lag_over_threshold(kib))),
        );
        let runs = report.runs.max(1) as f64;
        if let (Some(h), Some(s)) = over {
            let n = reps;
            let tol = (n as f64 / 3.0).max(1.0);
            c.add(
                &format!(
                    "{kib} KiB spike: repetitions the parent missed by more than T, as the twin predicts (within a third)"
                ),
                format!("host {:.0} of {n}", h * runs),
                &format!("predicted {:.0}", s * runs),
                (h - s).abs() * runs <= tol,
            );
            c.why_if_missed(
                "the trap needs a charge between a concurrent flush's visits of the leaf and of the parent; \
                 on a host where the reader could not run beside the worker (one CPU) or the kernel predates \
                 the early break, the twin and the host differ in that sequence",
            );
        }
        let lag = stat_lag_after_charge(kib);
        if let (Some(h), Some(s), Some(t)) = (pct(&lag, "p50"), pct(&predicted(&lag), "p50"), t) {
            let (pass, ratio) = if h <= t && s <= t {
                (true, "both within T".to_string())
            } else {
                (within_2x(h, s), format!("{:.2}x", h / s))
            };
            c.add(
                &format!(
                    "{kib} KiB spike: the parent's lag (median) as the twin predicts, within 2x"
                ),
                format!("host {h:.0} pages ({ratio}; T = {t:.0}, n={reps})"),
                &format!("predicted {s:.0} pages"),
                pass,
            );
        }
        let stale = stale_for_ms(kib);
        match (pct(&stale, "p50"), pct(&predicted(&stale), "p50")) {
            (Some(h), Some(s)) => {
                c.add(
                    &format!(
                        "{kib} KiB spike: stale until the periodic flush, as the twin predicts (median within 2x)"
                    ),
                    format!(
                        "host {h:.0} ms (max {:.0} ms, n={})",
                        pct(&stale, "max").unwrap_or(f64::NAN),
                        samples_of(report, &stale)
                    ),
                    &format!("predicted {s:.0} ms"),
                    within_2x(h, s),
                );
                c.why_if_missed(
                    "the periodic flush ends the trap; a host whose flush worker runs late (an overloaded \
                     host, a deferrable timer on an idle CPU) keeps the parent stale longer than 2 s",
                );
            }
            (None, Some(s)) => c.add(
                &format!("{kib} KiB spike: stale until the periodic flush, as the twin predicts"),
                "host: never stale".into(),
                &format!("predicted {s:.0} ms"),
                false,
            ),
            (Some(h), None) => c.add(
                &format!("{kib} KiB spike: fresh after the charge, as the twin predicts"),
                format!("host stale for {h:.0} ms"),
                "predicted: never stale",
                false,
            ),
            (None, None) => {}
        }
        if let (Some(mx), Some(t)) = (pct(&lag, "max"), t) {
            c.add_info(
                &format!("{kib} KiB spike: the documented bound, lag <= 64 x online CPUs (reference)"),
                format!("max lag {mx:.0} pages, T = {t:.0}"),
                "kernel docs / test_kmem.c",
                "a bound the early break (6.16+) does not keep: a parent stuck at T misses every later \
                 charge of its child until the periodic flush",
            );
        }
    }
    c.into_vec()
}

/// Samples behind a distribution metric: the `n_{metric}` counts stored
/// beside it, summed over runs, or its histogram's count.
pub fn samples_of(report: &RunReport, m: &str) -> u64 {
    let p = report.policies.get(HOST_POLICY);
    if let Some(n) = p.and_then(|p| p.metrics.get(&format!("n_{m}"))) {
        return n.values.iter().sum::<f64>() as u64;
    }
    p.and_then(|p| p.metrics.get(m))
        .and_then(|s| s.histogram.as_ref())
        .map_or(0, |h| h.count())
}
