//! What kernel mode compares a host run with: reference figures measured
//! once on the development host (6.18, 2 vCPUs) with small C programs
//! (a page fault, a `memory.stat` read), shown for information, and the
//! documented flush threshold, which the stale-read run checks.

use crate::run::{ns_per_fault, read_latency, RATIO_4_2, THRESHOLD};
use crate::spec::HOST_POLICY;
use sim::report::{Claim, Claims, RunReport};

/// The reference figures beside this run (for information), and the
/// threshold claim of a stale-read run.
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
            "source 001 netperf: ~0.95",
            true,
        );
    }
    for (g, w) in [(200, 0), (200, 1), (2000, 2)] {
        let m = read_latency(g, w);
        if let (Some(p50), Some(p999)) = (
            report.percentile_of(p, &m, "p50"),
            report.percentile_of(p, &m, "p999"),
        ) {
            let published = match (g, w) {
                (200, 0) => "p50 15.8 µs, p99.9 57 µs",
                (200, _) => "p50 15.6 µs, p99.9 40 µs",
                _ => "p50 24.6 µs, p99.9 61 µs",
            };
            c.add(
                &format!("memory.stat read, {g} groups, {w} writers (reference)"),
                format!(
                    "p50 {}, p99.9 {}",
                    sim::report::format_us(p50),
                    sim::report::format_us(p999)
                ),
                published,
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
