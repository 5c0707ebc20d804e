//! Kernel-mode runs as tables people can read: the metrics of the one
//! `host` policy pivoted by the experiment's shape (depth × metric for
//! update-path, groups × writers for stat-readers, spike size × metric for
//! stale-read), each percentile with the samples behind it, and the
//! simulated twin's prediction beside the host's figure. The text report
//! prints them instead of the generic metric table; the HTML report shows
//! them and a plot per kernel scenario (`html::kernel`).

use kernelmode::claims::samples_of;
use kernelmode::metrics::{
    cpu_ns_per_fault, faults_per_sec, host_cases, ns_per_fault, read_cpu_ns, read_latency,
    stale_for_ms, stat_lag_after_charge, stat_lag_over_threshold, THRESHOLD,
};
use kernelmode::twin::predicted;
use kernelmode::HOST_POLICY;
use lab::report::{format_us, Mode, RunReport};
use std::collections::BTreeSet;

/// One pivoted table.
#[derive(Debug, Clone, PartialEq)]
pub struct Pivot {
    /// What the table shows.
    pub title: String,
    /// Column headings.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

fn mean(r: &RunReport, m: &str) -> Option<f64> {
    r.mean_of(HOST_POLICY, m)
}

fn pct(r: &RunReport, m: &str, k: &str) -> Option<f64> {
    r.percentile_of(HOST_POLICY, m, k)
}

fn us(v: Option<f64>) -> String {
    v.map_or("-".into(), format_us)
}

fn num(v: Option<f64>, unit: &str) -> String {
    v.map_or("-".into(), |v| format!("{v:.0}{unit}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if (a / b).is_finite() => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// The pivots of a kernel-mode report (none for other modes).
pub fn pivots(r: &RunReport) -> Vec<Pivot> {
    if r.mode != Mode::Kernel {
        return Vec::new();
    }
    let mut out = Vec::new();
    let depths = host_cases::<u64>(r, "ns_per_fault_depth", "");
    if !depths.is_empty() {
        let rows = depths
            .iter()
            .map(|&d| {
                let d = d as usize;
                let (w, c, p) = (
                    mean(r, &ns_per_fault(d)),
                    mean(r, &cpu_ns_per_fault(d)),
                    mean(r, &predicted(&ns_per_fault(d))),
                );
                vec![
                    d.to_string(),
                    us(w),
                    us(c),
                    num(mean(r, &faults_per_sec(d)), ""),
                    us(p),
                    ratio(c, p),
                    samples_of(r, &ns_per_fault(d)).to_string(),
                ]
            })
            .collect();
        out.push(Pivot {
            title: "page faults by depth (mmap + touch + munmap per page)".into(),
            header: [
                "depth",
                "ns/fault (wall)",
                "ns/fault (CPU)",
                "faults/s",
                "predicted",
                "CPU / predicted",
                "n (runs)",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    let cases: BTreeSet<(u64, u64)> = r
        .policies
        .get(HOST_POLICY)
        .map(|p| {
            p.metrics
                .keys()
                .filter_map(|k| {
                    let (g, w) = k.strip_prefix("read_cpu_ns_g")?.split_once("_w")?;
                    Some((g.parse().ok()?, w.parse().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    if !cases.is_empty() {
        let groups: BTreeSet<u64> = cases.iter().map(|c| c.0).collect();
        let writers: BTreeSet<u64> = cases.iter().map(|c| c.1).collect();
        for (k, label) in [("p50", "p50"), ("p99", "p99")] {
            let mut header = vec!["groups \\ writers".to_string()];
            header.extend(writers.iter().map(|w| w.to_string()));
            let rows = groups
                .iter()
                .map(|&g| {
                    let mut row = vec![g.to_string()];
                    for &w in &writers {
                        let (g, w) = (g as usize, w as usize);
                        row.push(if cases.contains(&(g as u64, w as u64)) {
                            format!(
                                "{} cpu {} / pred {} (n={})",
                                us(pct(r, &read_latency(g, w), k)),
                                us(pct(r, &read_cpu_ns(g, w), k)),
                                us(pct(r, &predicted(&read_latency(g, w)), k)),
                                samples_of(r, &read_latency(g, w))
                            )
                        } else {
                            "-".into()
                        });
                    }
                    row
                })
                .collect();
            out.push(Pivot {
                title: format!(
                    "memory.stat read {label}: wall, the reader's CPU time, predicted (samples)"
                ),
                header,
                rows,
            });
        }
    }
    let spikes = host_cases::<u64>(r, "stat_lag_over_threshold_", "kib");
    if !spikes.is_empty() {
        let t = mean(r, THRESHOLD);
        let rows = spikes
            .iter()
            .map(|&kib| {
                let (lag, stale, over) = (
                    stat_lag_after_charge(kib),
                    stale_for_ms(kib),
                    stat_lag_over_threshold(kib),
                );
                let runs = f64::from(r.runs.max(1));
                vec![
                    format!("{kib} KiB"),
                    samples_of(r, &lag).to_string(),
                    format!(
                        "{} / {}",
                        num(mean(r, &over).map(|v| v * runs), ""),
                        num(mean(r, &predicted(&over)).map(|v| v * runs), "")
                    ),
                    format!(
                        "{} / {}",
                        num(pct(r, &lag, "p50"), ""),
                        num(pct(r, &predicted(&lag), "p50"), "")
                    ),
                    num(pct(r, &lag, "max"), ""),
                    format!(
                        "{} / {} (n={})",
                        num(pct(r, &stale, "p50"), " ms"),
                        num(pct(r, &predicted(&stale), "p50"), " ms"),
                        samples_of(r, &stale)
                    ),
                    num(pct(r, &stale, "max"), " ms"),
                ]
            })
            .collect();
        out.push(Pivot {
            title: format!(
                "the parent's memory.stat after a spike (T = {} pages): host / predicted",
                num(t, "")
            ),
            header: [
                "spike",
                "n",
                "lag > T",
                "lag p50 (pages)",
                "lag max",
                "stale for p50",
                "stale max",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    out
}

/// The pivots as aligned text (empty for other modes).
pub fn render_pivots(r: &RunReport) -> String {
    let mut out = String::new();
    for p in pivots(r) {
        out.push_str(&p.title);
        out.push_str(":\n");
        out.push_str(&super::aligned(&p.header, &p.rows));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::report::PolicyResult;
    use std::collections::BTreeMap;

    fn kernel_report(rows: &[(&str, f64)]) -> RunReport {
        let mut p = PolicyResult::default();
        for (m, v) in rows {
            p.push_summary(
                m,
                "ns",
                *v,
                [("p50", *v), ("p99", *v), ("p999", *v), ("max", *v)],
            );
        }
        RunReport {
            scenario: "k".into(),
            mode: Mode::Kernel,
            runs: 1,
            seed: 1,
            scenario_toml: String::new(),
            policy_order: vec![HOST_POLICY.into()],
            policies: BTreeMap::from([(HOST_POLICY.to_string(), p)]),
            facts: BTreeMap::new(),
        }
    }

    #[test]
    fn depth_and_groups_by_writers_pivot_with_predictions_and_counts() {
        let r = kernel_report(&[
            ("ns_per_fault_depth1", 3000.0),
            ("cpu_ns_per_fault_depth1", 2500.0),
            ("predicted_ns_per_fault_depth1", 2700.0),
            ("ns_per_fault_depth4", 3100.0),
            ("read_latency_ns_g200_w0", 30_000.0),
            ("read_cpu_ns_g200_w0", 25_000.0),
            ("predicted_read_latency_ns_g200_w0", 20_000.0),
            ("read_cpu_ns_g2000_w2", 40_000.0),
            ("n_read_latency_ns_g200_w0", 600.0),
        ]);
        let p = pivots(&r);
        assert_eq!(p.len(), 3, "{p:?}");
        assert_eq!(p[0].rows.len(), 2);
        assert_eq!(p[0].rows[0][5], "0.93x");
        assert_eq!(p[1].header, vec!["groups \\ writers", "0", "2"]);
        assert!(p[1].rows[0][1].contains("(n=600)"), "{:?}", p[1].rows);
        assert_eq!(p[1].rows[0][2], "-", "no case 200 x 2");
        let text = render_pivots(&r);
        assert!(text.contains("page faults by depth") && text.contains("read p99"));
        let mut sim = r.clone();
        sim.mode = Mode::Sim;
        assert!(pivots(&sim).is_empty());
    }
}
