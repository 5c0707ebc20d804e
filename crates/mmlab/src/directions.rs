//! The seeds' directions, checked on a run: each [`Check`] states a claim
//! from the seed thread, the figure measured side by side, the seed's
//! figure, and whether the measurement shows the same direction.

use crate::stats;
use sim::report::RunReport;
use sim::scenario::Workload;
use std::fmt::Write as _;

/// One claim checked against a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Scenario name.
    pub scenario: String,
    /// What the seed says should happen.
    pub claim: String,
    /// What this run measured.
    pub measured: String,
    /// The seed's figure.
    pub seed: String,
    /// Whether the measurement shows the claim.
    pub pass: bool,
}

fn mean_of(r: &RunReport, policy: &str, metric: &str) -> Option<f64> {
    let m = r.policies.get(policy)?.metrics.get(metric)?;
    let v = stats::mean(&m.values);
    v.is_finite().then_some(v)
}

fn pct_of(r: &RunReport, policy: &str, metric: &str, key: &str) -> Option<f64> {
    let m = r.policies.get(policy)?.metrics.get(metric)?;
    let vs = m.percentiles.get(key)?;
    let v = if key == "max" {
        vs.iter().copied().fold(f64::NAN, f64::max)
    } else {
        stats::mean(vs)
    };
    v.is_finite().then_some(v)
}

fn sum_of(r: &RunReport, policy: &str, metric: &str) -> Option<f64> {
    let m = r.policies.get(policy)?.metrics.get(metric)?;
    Some(m.values.iter().sum())
}

fn us(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

/// The checks that apply to `report` of a `workload` scenario (those whose
/// policies are missing from the run are left out).
pub fn checks(report: &RunReport, workload: Workload) -> Vec<Check> {
    let mut out = Vec::new();
    let sc = report.scenario.clone();
    let mut add = |claim: &str, measured: String, seed: &str, pass: bool| {
        out.push(Check {
            scenario: sc.clone(),
            claim: claim.to_string(),
            measured,
            seed: seed.to_string(),
            pass,
        })
    };
    match workload {
        Workload::UpdatePath => {
            let d2 = "update_ops_per_sec_depth2";
            let d4 = "update_ops_per_sec_depth4";
            if let (Some(a), Some(b)) = (
                mean_of(report, "hierstat", d2),
                mean_of(report, "hierstat", d4),
            ) {
                let k = b / a;
                add(
                    "hierstat keeps >= 90% of its depth-2 throughput at depth 4",
                    format!("{:.1}%", 100.0 * k),
                    "kernel 6.8: 4-level netperf −18.7% vs 2-level (mostly charging)",
                    k >= 0.90,
                );
            }
            for d in [d2, d4] {
                if let (Some(h), Some(p)) = (
                    mean_of(report, "hierstat", d),
                    mean_of(report, "pre-rstat", d),
                ) {
                    add(
                        &format!(
                            "hierstat beats the pre-rstat eager-atomic tree ({})",
                            &d[d.len() - 6..]
                        ),
                        format!("{:.2}×", h / p),
                        "rstat replaced eager atomics (2d146aa3aa84)",
                        h > p,
                    );
                }
            }
            for (d, seed) in [
                (d2, "−3.9% (netperf, level 2)"),
                (d4, "−5% (netperf, level 4)"),
            ] {
                if let (Some(a), Some(b)) = (
                    mean_of(report, "linux-5.15", d),
                    mean_of(report, "linux-6.8", d),
                ) {
                    let c = stats::pct_change(a, b).unwrap_or(f64::NAN);
                    add(
                        &format!("linux-6.8 per-group thresholds cost update throughput vs linux-5.15 ({})", &d[d.len() - 6..]),
                        format!("{c:+.1}%"),
                        seed,
                        c < 0.0,
                    );
                }
            }
        }
        Workload::StatReaders => {
            let m = "read_latency_ns";
            if let (Some(p999), Some(max)) = (
                pct_of(report, "hierstat", m, "p999"),
                pct_of(report, "hierstat", m, "max"),
            ) {
                add(
                    "hierstat: 99.9% of reads <= 50 µs",
                    format!("p99.9 {}", us(p999)),
                    "99.9% <= 50 µs (250k readers, 50k cgroups, 384 CPUs)",
                    p999 <= 50_000.0,
                );
                add(
                    "hierstat: no read over 100 ms",
                    format!("max {}", us(max)),
                    "none > 100 ms",
                    max <= 100e6,
                );
            }
            if let Some(s) = sum_of(report, "hierstat", "stale_reads") {
                add(
                    "hierstat: zero stale reads",
                    format!("{s:.0}"),
                    "—",
                    s == 0.0,
                );
            }
            for p in ["linux-5.15", "linux-6.8", "linux-5.13"] {
                if let Some(p999) = pct_of(report, p, m, "p999") {
                    let stale = sum_of(report, p, "stale_reads").unwrap_or(0.0);
                    let max = pct_of(report, p, m, "max").unwrap_or(0.0);
                    add(
                        &format!("{p} (reference)"),
                        format!("p99.9 {}, max {}, {stale:.0} stale", us(p999), us(max)),
                        if p == "linux-6.8" {
                            "99.9% <= 50 µs"
                        } else {
                            "—"
                        },
                        true,
                    );
                }
            }
        }
        Workload::StaleRead => {
            let r515 = mean_of(report, "linux-5.15", "missed_event_rate");
            let r68 = mean_of(report, "linux-6.8", "missed_event_rate");
            if let Some(a) = r515 {
                add(
                    "linux-5.15 (skip if a flush runs) misses events",
                    format!("{:.2}% of spike reads", 100.0 * a),
                    "stale reads up to 2 s (7d7ef0a4686a)",
                    a > 0.0,
                );
            }
            if let (Some(a), Some(b)) = (r515, r68) {
                add(
                    "linux-6.8 misses at most a tenth as often",
                    format!("{:.2}% vs {:.2}%", 100.0 * b, 100.0 * a),
                    "6.8 stopped skipping",
                    a > 0.0 && b <= a / 10.0,
                );
            }
            if let Some(h) = sum_of(report, "hierstat", "missed_events") {
                add(
                    "hierstat misses no event",
                    format!("{h:.0} missed"),
                    "—",
                    h == 0.0,
                );
            }
            if let Some(c) = sum_of(report, "hierstat", "child_gt_parent") {
                add(
                    "hierstat never shows child > parent",
                    format!("{c:.0}"),
                    "—",
                    c == 0.0,
                );
            }
            if let Some(c) = sum_of(report, "linux-5.15", "child_gt_parent") {
                add(
                    "linux-5.15 child > parent (reference)",
                    format!("{c:.0}"),
                    "observed with skipping",
                    true,
                );
            }
        }
        Workload::FalseSharing => {
            if let (Some(s), Some(p)) = (
                mean_of(report, "separated", "ops_per_sec"),
                mean_of(report, "shared", "ops_per_sec"),
            ) {
                add(
                    "separated layout >= 1.15× the shared one",
                    format!("{:.2}×", s / p),
                    "57311 → 36542 → 57089 ops/s (1.57×)",
                    s / p >= 1.15,
                );
            }
        }
    }
    out
}

/// Renders checks as a table.
pub fn render_checks(checks: &[Check]) -> String {
    let mut out = String::new();
    if checks.is_empty() {
        return out;
    }
    let w = checks
        .iter()
        .map(|c| c.claim.chars().count())
        .max()
        .unwrap_or(0)
        .min(80);
    let wm = checks
        .iter()
        .map(|c| c.measured.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "{:<6} {:<w$}  {:<wm$}  seed", "", "claim", "measured");
    for c in checks {
        let mark = if c.pass { "[ok]" } else { "[MISS]" };
        let _ = writeln!(
            out,
            "{mark:<6} {:<w$}  {:<wm$}  {}",
            c.claim, c.measured, c.seed
        );
    }
    out
}
