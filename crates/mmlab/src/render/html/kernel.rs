//! Kernel-mode runs in the HTML report: the pivoted tables of
//! [`crate::render::kernel`] and one plot per kernel scenario, the host's
//! figures beside the simulated twin's prediction.
//!
//! | `data-plot` | kernel experiment | lines |
//! |---|---|---|
//! | `kernel-faults` | update-path | ns per fault by depth: host wall clock, host CPU time, predicted |
//! | `kernel-reads` | stat-readers | read latency by writers: host p50/p99 (CPU time) and predicted, per group count |
//! | `kernel-stale` | stale-read | pages the parent missed after a spike, by spike size: host and predicted medians |

use super::plots::Plot;
use crate::render::kernel::pivots;
use kernelmode::metrics::{
    cpu_ns_per_fault, ns_per_fault, read_cpu_ns, read_latency, stat_lag_after_charge,
};
use kernelmode::twin::predicted;
use kernelmode::HOST_POLICY;
use lab::report::{Mode, RunReport};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use svgplot::{esc, Axis, Chart, Line, ScaleKind, TickFormat};

/// The pivoted tables as HTML (empty for other modes).
pub fn tables_html(r: &RunReport) -> String {
    let mut s = String::new();
    for p in pivots(r) {
        let _ = write!(s, "<h3>{}</h3><table><thead><tr>", esc(&p.title));
        for h in &p.header {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for row in &p.rows {
            s.push_str("<tr>");
            for c in row {
                let _ = write!(s, "<td>{}</td>", esc(c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
    }
    s
}

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

fn plot(kind: &'static str, title: &str, x: Axis, y_label: &str, lines: Vec<Line>) -> Option<Plot> {
    let lines: Vec<Line> = lines.into_iter().filter(|l| !l.points.is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let y = Axis::fit(ScaleKind::Linear, y_label, TickFormat::Number, ys, true);
    let mut chart = Chart::new(kind, title, x, y);
    chart.lines(&lines, true);
    Some(Plot {
        kind,
        title: title.to_string(),
        legend: lines.iter().map(|l| (l.name.clone(), l.color)).collect(),
        svg: chart.finish(None),
    })
}

fn keys(r: &RunReport, prefix: &str) -> BTreeSet<String> {
    r.policies
        .get(HOST_POLICY)
        .map(|p| {
            p.metrics
                .keys()
                .filter_map(|k| k.strip_prefix(prefix).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The kernel scenario's plot (none for other modes).
pub fn plots(r: &RunReport) -> Vec<Plot> {
    if r.mode != Mode::Kernel {
        return Vec::new();
    }
    let mut out = Vec::new();
    let depths: BTreeSet<usize> = keys(r, "ns_per_fault_depth")
        .iter()
        .filter_map(|k| k.parse().ok())
        .collect();
    if !depths.is_empty() {
        let at = |f: fn(usize) -> String| -> Vec<(f64, String)> {
            depths.iter().map(|&d| (d as f64, f(d))).collect()
        };
        let lines = vec![
            Line {
                name: "host, wall clock".into(),
                color: 0,
                points: points(r, &at(ns_per_fault), None),
            },
            Line {
                name: "host, CPU time".into(),
                color: 1,
                points: points(r, &at(cpu_ns_per_fault), None),
            },
            Line {
                name: "predicted".into(),
                color: 2,
                points: points(r, &at(|d| predicted(&ns_per_fault(d))), None),
            },
        ];
        let xs = depths.iter().map(|&d| d as f64);
        let x = Axis::fit(ScaleKind::Linear, "depth", TickFormat::Number, xs, false).integers();
        out.extend(plot(
            "kernel-faults",
            "Page faults by memcg depth: the host and its twin",
            x,
            "ns per fault",
            lines,
        ));
    }
    let cases: BTreeSet<(usize, usize)> = keys(r, "read_cpu_ns_g")
        .iter()
        .filter_map(|k| {
            let (g, w) = k.split_once("_w")?;
            Some((g.parse().ok()?, w.parse().ok()?))
        })
        .collect();
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
                lines.push(Line {
                    name: format!("host {k} (CPU), {g} groups"),
                    color: 3 * i + j,
                    points: points(r, &at(&|w| read_cpu_ns(g, w)), Some(k)),
                });
            }
            lines.push(Line {
                name: format!("predicted p50, {g} groups"),
                color: 3 * i + 2,
                points: points(r, &at(&|w| predicted(&read_latency(g, w))), Some("p50")),
            });
        }
        let xs = cases.iter().map(|c| c.1 as f64);
        let x = Axis::fit(ScaleKind::Linear, "writers", TickFormat::Number, xs, false).integers();
        out.extend(plot(
            "kernel-reads",
            "memory.stat read latency by writers: the host and its twin",
            x,
            "ns",
            lines,
        ));
    }
    let spikes: BTreeSet<u64> = keys(r, "stat_lag_over_threshold_")
        .iter()
        .filter_map(|k| k.strip_suffix("kib")?.parse().ok())
        .collect();
    if !spikes.is_empty() {
        let at = |f: &dyn Fn(u64) -> String| -> Vec<(f64, String)> {
            spikes.iter().map(|&k| (k as f64, f(k))).collect()
        };
        let lines = vec![
            Line {
                name: "host (median)".into(),
                color: 0,
                points: points(r, &at(&stat_lag_after_charge), Some("p50")),
            },
            Line {
                name: "predicted (median)".into(),
                color: 2,
                points: points(
                    r,
                    &at(&|k| predicted(&stat_lag_after_charge(k))),
                    Some("p50"),
                ),
            },
        ];
        let xs = spikes.iter().map(|&k| k as f64);
        let x = Axis::fit(
            ScaleKind::Log2,
            "spike (KiB)",
            TickFormat::Number,
            xs,
            false,
        );
        out.extend(plot(
            "kernel-stale",
            "Pages the parent's memory.stat missed after a spike: the host and its twin",
            x,
            "pages",
            lines,
        ));
    }
    out
}
