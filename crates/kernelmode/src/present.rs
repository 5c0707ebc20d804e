//! Kernel-mode runs as people read them ([`lab::Spec::tables`] and
//! [`lab::Spec::figures`] of the kernel kind): the metrics of the one
//! `host` policy pivoted by the experiment's shape, each figure beside the
//! simulated twin's prediction ([`crate::twin`]).
//!
//! Tables, which a front end shows instead of its generic metric table:
//! depth × metric for update-path; groups × writers for stat-readers (one
//! table per percentile); spike size × metric for stale-read; each
//! percentile with the samples behind it.
//!
//! Figures, one per experiment:
//!
//! | `kind` | experiment | lines |
//! |---|---|---|
//! | `kernel-faults` | update-path | ns per fault by depth: host wall clock, host CPU time, predicted |
//! | `kernel-reads` | stat-readers | read latency by writers: host p50/p99 (CPU time) and predicted, per group count |
//! | `kernel-stale` | stale-read | pages the parent missed after a spike, by spike size: host and predicted medians |
//!
//! Both read the cases from the report's metric names ([`host_cases`]), so
//! a stored run is shown as it was run.

use crate::claims::samples_of;
use crate::metrics::{
    cpu_ns_per_fault, faults_per_sec, host_cases, ns_per_fault, read_cpu_ns, read_latency,
    stale_for_ms, stat_lag_after_charge, stat_lag_over_threshold, THRESHOLD,
};
use crate::spec::HOST_POLICY;
use crate::twin::predicted;
use lab::report::{format_us, Figure, FigureAxis, FigureLine, RunReport, Scale, Table};
use std::collections::BTreeSet;

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

/// The (groups, writers) cases of a stat-readers run, from its
/// `read_cpu_ns_g{G}_w{W}` metrics.
fn read_cases(r: &RunReport) -> BTreeSet<(usize, usize)> {
    r.policies
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
        .unwrap_or_default()
}

/// The tables of a kernel run (see the module docs); none for a report
/// without kernel metrics.
pub fn tables(r: &RunReport) -> Vec<Table> {
    let mut out = Vec::new();
    let depths = host_cases::<usize>(r, "ns_per_fault_depth", "");
    if !depths.is_empty() {
        let rows = depths
            .iter()
            .map(|&d| {
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
        out.push(Table {
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
    let cases = read_cases(r);
    if !cases.is_empty() {
        let groups: BTreeSet<usize> = cases.iter().map(|c| c.0).collect();
        let writers: BTreeSet<usize> = cases.iter().map(|c| c.1).collect();
        for k in ["p50", "p99"] {
            let mut header = vec!["groups \\ writers".to_string()];
            header.extend(writers.iter().map(|w| w.to_string()));
            let rows = groups
                .iter()
                .map(|&g| {
                    let mut row = vec![g.to_string()];
                    for &w in &writers {
                        row.push(if cases.contains(&(g, w)) {
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
            out.push(Table {
                title: format!(
                    "memory.stat read {k}: wall, the reader's CPU time, predicted (samples)"
                ),
                header,
                rows,
            });
        }
    }
    let spikes = host_cases::<u64>(r, "stat_lag_over_threshold_", "kib");
    if !spikes.is_empty() {
        let t = mean(r, THRESHOLD);
        let runs = f64::from(r.runs.max(1));
        let rows = spikes
            .iter()
            .map(|&kib| {
                let (lag, stale, over) = (
                    stat_lag_after_charge(kib),
                    stale_for_ms(kib),
                    stat_lag_over_threshold(kib),
                );
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
        out.push(Table {
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

/// The points `(x, metric)` of the host policy: each metric's mean, or its
/// percentile `pct`; cases without a finite value are left out.
fn points(r: &RunReport, xs: &[(f64, String)], pct: Option<&str>) -> Vec<(f64, f64)> {
    xs.iter()
        .filter_map(|(x, m)| {
            let y = match pct {
                Some(k) => r.percentile_of(HOST_POLICY, m, k)?,
                None => r.mean_of(HOST_POLICY, m)?,
            };
            (x.is_finite() && y.is_finite()).then_some((*x, y))
        })
        .collect()
}

fn line(name: impl Into<String>, color: usize, points: Vec<(f64, f64)>) -> FigureLine {
    FigureLine {
        name: name.into(),
        color,
        points,
    }
}

fn axis(label: &str, scale: Scale, whole_numbers: bool, values: Vec<f64>) -> FigureAxis {
    FigureAxis {
        label: label.into(),
        scale,
        whole_numbers,
        values,
    }
}

/// The figure of a kernel run (see the module docs); none for a report
/// without kernel metrics.
pub fn figures(r: &RunReport) -> Vec<Figure> {
    let mut out = Vec::new();
    let depths = host_cases::<usize>(r, "ns_per_fault_depth", "");
    if !depths.is_empty() {
        let at = |f: &dyn Fn(usize) -> String| -> Vec<(f64, String)> {
            depths.iter().map(|&d| (d as f64, f(d))).collect()
        };
        out.push(Figure {
            kind: "kernel-faults",
            title: "Page faults by memcg depth: the host and its twin".into(),
            x: axis(
                "depth",
                Scale::Linear,
                true,
                depths.iter().map(|&d| d as f64).collect(),
            ),
            y_label: "ns per fault".into(),
            lines: vec![
                line("host, wall clock", 0, points(r, &at(&ns_per_fault), None)),
                line("host, CPU time", 1, points(r, &at(&cpu_ns_per_fault), None)),
                line(
                    "predicted",
                    2,
                    points(r, &at(&|d| predicted(&ns_per_fault(d))), None),
                ),
            ],
        });
    }
    let cases = read_cases(r);
    if !cases.is_empty() {
        let groups: BTreeSet<usize> = cases.iter().map(|c| c.0).collect();
        let mut lines = Vec::new();
        for (i, &g) in groups.iter().enumerate() {
            let at = |f: &dyn Fn(usize) -> String| -> Vec<(f64, String)> {
                cases
                    .iter()
                    .filter(|c| c.0 == g)
                    .map(|&(_, w)| (w as f64, f(w)))
                    .collect()
            };
            for (k, j) in [("p50", 0), ("p99", 1)] {
                lines.push(line(
                    format!("host {k} (CPU), {g} groups"),
                    3 * i + j,
                    points(r, &at(&|w| read_cpu_ns(g, w)), Some(k)),
                ));
            }
            lines.push(line(
                format!("predicted p50, {g} groups"),
                3 * i + 2,
                points(r, &at(&|w| predicted(&read_latency(g, w))), Some("p50")),
            ));
        }
        out.push(Figure {
            kind: "kernel-reads",
            title: "memory.stat read latency by writers: the host and its twin".into(),
            x: axis(
                "writers",
                Scale::Linear,
                true,
                cases.iter().map(|c| c.1 as f64).collect(),
            ),
            y_label: "ns".into(),
            lines,
        });
    }
    let spikes = host_cases::<u64>(r, "stat_lag_over_threshold_", "kib");
    if !spikes.is_empty() {
        let at = |f: &dyn Fn(u64) -> String| -> Vec<(f64, String)> {
            spikes.iter().map(|&k| (k as f64, f(k))).collect()
        };
        out.push(Figure {
            kind: "kernel-stale",
            title: "Pages the parent's memory.stat missed after a spike: the host and its twin"
                .into(),
            x: axis(
                "spike (KiB)",
                Scale::Log2,
                false,
                spikes.iter().map(|&k| k as f64).collect(),
            ),
            y_label: "pages".into(),
            lines: vec![
                line(
                    "host (median)",
                    0,
                    points(r, &at(&stat_lag_after_charge), Some("p50")),
                ),
                line(
                    "predicted (median)",
                    2,
                    points(
                        r,
                        &at(&|k| predicted(&stat_lag_after_charge(k))),
                        Some("p50"),
                    ),
                ),
            ],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::report::{Mode, PolicyResult};
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
        let t = tables(&r);
        assert_eq!(t.len(), 3, "{t:?}");
        assert!(t[0].title.starts_with("page faults by depth"));
        assert_eq!(t[0].rows.len(), 2);
        assert_eq!(t[0].rows[0][5], "0.93x");
        assert_eq!(t[0].rows[1][4], "-", "no prediction at depth 4");
        assert_eq!(t[1].header, vec!["groups \\ writers", "0", "2"]);
        assert!(t[1].rows[0][1].contains("(n=600)"), "{:?}", t[1].rows);
        assert_eq!(t[1].rows[0][2], "-", "no case 200 x 2");
        assert!(t[2].title.starts_with("memory.stat read p99"));
        // A report without kernel metrics has neither tables nor figures.
        let other = lab::report::report_from_rows("s", &[("hierstat", "ops_per_sec", 1.0)]);
        assert!(tables(&other).is_empty() && figures(&other).is_empty());
    }

    #[test]
    fn figures_put_the_host_beside_the_prediction() {
        let r = kernel_report(&[
            ("ns_per_fault_depth1", 3000.0),
            ("cpu_ns_per_fault_depth1", 2500.0),
            ("predicted_ns_per_fault_depth1", 2700.0),
            ("ns_per_fault_depth4", 3100.0),
            ("stat_lag_over_threshold_64kib", 0.0),
            ("stat_lag_over_threshold_1024kib", 1.0),
            ("stat_lag_after_charge_pages_1024kib", 200.0),
            ("predicted_stat_lag_after_charge_pages_1024kib", 190.0),
        ]);
        let f = figures(&r);
        let kinds: Vec<_> = f.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, ["kernel-faults", "kernel-stale"]);
        let faults = &f[0];
        assert_eq!(faults.x.values, [1.0, 4.0]);
        assert!(faults.x.whole_numbers && faults.x.scale == Scale::Linear);
        assert_eq!(faults.lines[0].points, [(1.0, 3000.0), (4.0, 3100.0)]);
        assert_eq!(faults.lines[2].points, [(1.0, 2700.0)], "predicted");
        let stale = &f[1];
        assert_eq!(stale.x.scale, Scale::Log2);
        assert_eq!(
            stale.x.values,
            [64.0, 1024.0],
            "every spike, with or without points"
        );
        assert_eq!(stale.lines[0].points, [(1024.0, 200.0)]);
        assert_eq!(
            stale.lines[1].color, 2,
            "the predicted slot in every figure"
        );
    }
}
