//! The report's plots, each built from a [`RunReport`]'s data and omitted
//! (`None` / empty) when that data is absent.
//!
//! | `data-plot`           | data used                                               |
//! |-----------------------|---------------------------------------------------------|
//! | `latency-histogram`   | every metric with a histogram, one plot per policy      |
//! | `latency-cdf`         | the same histograms as cumulative distributions         |
//! | `throughput-vs-depth` | series `throughput_vs_depth`, else metrics `update_ops_per_sec_depthN` |
//! | `refault-vs-mismatch` | metrics `refault_latency_ns` and `decision_mismatch_rate` |
//! | `layout-throughput`   | metric `ops_per_sec` (false-sharing), one bar per layout |
//! | `local-fraction`      | series `local_fraction`                                 |
//! | `vma-coverage`        | series `vma_coverage` (or `scan_coverage`, the sim's name), as heat strips |
//! | a kind's own          | [`lab::Spec::figures`] (kernel mode: `kernel-*`, the host beside its twin), drawn by [`figure_plot`] |

use crate::analysis::stats;
use crate::analysis::table::report_columns;
use lab::report::{Figure, Log2Histogram, RunReport, Scale};
use svgplot::{Axis, Chart, Line, ScaleKind, TickFormat};

/// Deepest percentile a CDF shows: 99.9999% (six nines).
const MAX_NINES: f64 = 6.0;

/// One rendered plot: its caption and legend entries beside the SVG.
#[derive(Debug, Clone)]
pub struct Plot {
    /// The `data-plot` kind.
    pub kind: &'static str,
    /// Caption shown above the plot.
    pub title: String,
    /// Legend entries: (name, palette index).
    pub legend: Vec<(String, usize)>,
    /// The `<svg class="plot" …>` element.
    pub svg: String,
}

/// Every plot of a report, in a fixed order (a kind's own figures,
/// [`figure_plot`], come after these).
pub fn plots(report: &RunReport) -> Vec<Plot> {
    let mut out = Vec::new();
    out.extend(latency_histograms(report));
    out.extend(latency_cdfs(report));
    out.extend(throughput_vs_depth(report));
    out.extend(refault_vs_mismatch(report));
    out.extend(layout_throughput(report));
    out.extend(series_plot(
        report,
        &["local_fraction"],
        "local-fraction",
        "NUMA local-access fraction over time",
        TickFormat::Percent,
        false,
    ));
    out.extend(coverage_strips(report));
    out
}

/// A kind's figure ([`lab::Spec::figures`]) as a line chart with markers:
/// lines without points left out (and the figure, when none has any), the
/// x axis over the figure's cases and points, the y axis linear from zero.
pub fn figure_plot(f: &Figure) -> Option<Plot> {
    let lines: Vec<Line> = f
        .lines
        .iter()
        .filter(|l| !l.points.is_empty())
        .map(|l| Line {
            name: l.name.clone(),
            color: l.color,
            points: l.points.clone(),
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let scale = match f.x.scale {
        Scale::Linear => ScaleKind::Linear,
        Scale::Log2 => ScaleKind::Log2,
        Scale::Log10 => ScaleKind::Log10,
    };
    let xs = f.x.values.iter().copied();
    let xs = xs.chain(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
    let mut x = Axis::fit(scale, &f.x.label, TickFormat::Number, xs, false);
    if f.x.whole_numbers {
        x = x.integers();
    }
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let y = Axis::fit(ScaleKind::Linear, &f.y_label, TickFormat::Number, ys, true);
    let mut chart = Chart::new(f.kind, &f.title, x, y);
    chart.lines(&lines, true);
    Some(Plot {
        kind: f.kind,
        title: f.title.clone(),
        legend: lines.iter().map(|l| (l.name.clone(), l.color)).collect(),
        svg: chart.finish(None),
    })
}

/// The palette slot of a policy known by name, the same in every report:
/// flush presets, NUMA scanner versions (never in one report with the
/// presets, so they share the slots), layouts, the host.
pub fn fixed_color(name: &str) -> Option<usize> {
    let slot = match name {
        "hierstat" | "mmlab" | "separated" | "host" => 0,
        "linux-6.8" | "v6.12" | "shared" => 1,
        "linux-5.15" | "v6.8" => 2,
        "linux-6.17" | "v6.7" => 3,
        "linux-5.15-ratelimited" | "rfc-2of6" => 4,
        "linux-5.15-async" | "rfc-1of6" => 5,
        "linux-5.13" | "v6.5" => 6,
        "pre-rstat" | "v6.3" => 7,
        _ => return None,
    };
    Some(slot)
}

/// The palette slots of `names` (the policies of one report): a known
/// policy's fixed slot ([`fixed_color`]), so hierstat has one colour in
/// every report whatever its column; a user policy a slot from 8 up picked
/// by its name's hash (stable across reports), the next free one if
/// another policy of the report has it.
pub fn policy_colors(names: &[&str]) -> Vec<usize> {
    let mut taken: Vec<usize> = names.iter().filter_map(|n| fixed_color(n)).collect();
    names
        .iter()
        .map(|n| {
            if let Some(c) = fixed_color(n) {
                return c;
            }
            let user = svgplot::PALETTE - 8;
            let h = n.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            let start = (h % user as u64) as usize;
            let free = (0..svgplot::PALETTE)
                .map(|k| 8 + (start + k) % user)
                .chain(0..8)
                .find(|c| !taken.contains(c))
                .unwrap_or(8 + start);
            taken.push(free);
            free
        })
        .collect()
}

/// Palette slot of each policy of the report ([`policy_colors`]).
fn colors(report: &RunReport) -> Vec<(&str, usize)> {
    let cols: Vec<&str> = report_columns(report).into_iter().map(|(p, _)| p).collect();
    let slots = policy_colors(&cols);
    cols.into_iter().zip(slots).collect()
}

/// Metric names that carry a non-empty histogram in some policy.
fn histogram_metrics(report: &RunReport) -> Vec<String> {
    let mut names: Vec<String> = report
        .policies
        .values()
        .flat_map(|r| {
            r.metrics
                .iter()
                .filter(|(_, m)| m.histogram.as_ref().is_some_and(|h| h.count() > 0))
                .map(|(n, _)| n.clone())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Label of a log2 bucket's lower bound in binary units (`512ns`, `1µs`
/// for 1024 ns, `2ms` for 2^21 ns); exact ranges are in the tooltips.
pub fn bucket_label(i: usize, unit: &str) -> String {
    if unit != "ns" {
        return format!("2^{i}");
    }
    let units = ["ns", "µs", "ms", "s"];
    let u = (i / 10).min(units.len() - 1);
    format!("{}{}", 1u64 << (i - u * 10), units[u])
}

fn latency_histograms(report: &RunReport) -> Vec<Plot> {
    let mut out = Vec::new();
    for name in histogram_metrics(report) {
        // Common bucket range across policies so the plots line up.
        let hists: Vec<(&str, usize, &Log2Histogram, &str)> = colors(report)
            .into_iter()
            .filter_map(|(p, c)| {
                let m = report.policies.get(p)?.metrics.get(&name)?;
                let h = m.histogram.as_ref().filter(|h| h.count() > 0)?;
                Some((p, c, h, m.unit.as_str()))
            })
            .collect();
        let first = hists
            .iter()
            .filter_map(|(_, _, h, _)| h.buckets.iter().position(|&c| c > 0))
            .min()
            .unwrap_or(0);
        let last = hists
            .iter()
            .filter_map(|(_, _, h, _)| h.buckets.iter().rposition(|&c| c > 0))
            .max()
            .unwrap_or(0);
        // One scale for all policies of a metric, so their plots compare:
        // log when some policy has buckets 1000× smaller than its tallest
        // (they would be invisible on a linear axis).
        let log_scale = hists.iter().any(|(_, _, h, _)| {
            let nz = h.buckets.iter().filter(|&&c| c > 0);
            let max = nz.clone().max().copied().unwrap_or(0) as f64;
            let min = nz.min().copied().unwrap_or(0) as f64;
            min > 0.0 && max / min > 1000.0
        });
        // Smallest non-zero share of any policy: the log axis's floor.
        let min_share = hists
            .iter()
            .filter_map(|(_, _, h, _)| {
                let min = h.buckets.iter().filter(|&&c| c > 0).min()?;
                Some(*min as f64 / h.count() as f64)
            })
            .fold(1.0, f64::min);
        for (policy, color, h, unit) in hists {
            let total = h.count() as f64;
            let bars: Vec<(f64, f64, String)> = (first..=last)
                .map(|i| {
                    let c = h.buckets.get(i).copied().unwrap_or(0);
                    let lo: u128 = if i == 0 { 0 } else { 1 << i };
                    let hi: u128 = (1u128 << (i + 1)) - 1;
                    (
                        i as f64,
                        c as f64 / total,
                        format!(
                            "{lo} -> {hi} {unit}: {c} ({:.1}%)",
                            100.0 * c as f64 / total
                        ),
                    )
                })
                .collect();
            let labels: Vec<String> = (first..=last).map(|i| bucket_label(i, unit)).collect();
            let shares: Vec<f64> = bars.iter().map(|b| b.1).filter(|v| *v > 0.0).collect();
            let ymax = shares.iter().copied().fold(0.0, f64::max);
            let x = Axis::fit(
                ScaleKind::Linear,
                &format!("{name} (log2 buckets)"),
                TickFormat::Number,
                [0.0, 1.0],
                true,
            );
            let y = if log_scale {
                // From below the smallest share (so its bar shows) to 100%.
                Axis::fit(
                    ScaleKind::Log10,
                    "share of samples (log)",
                    TickFormat::Percent,
                    [min_share * 0.5, 1.0],
                    false,
                )
            } else {
                Axis::fit(
                    ScaleKind::Linear,
                    "share of samples",
                    TickFormat::Percent,
                    [0.0, ymax],
                    true,
                )
            };
            let title = format!("{name}: {policy}");
            let mut chart = Chart::new("latency-histogram", &title, x, y);
            chart.bars(&bars, color);
            out.push(Plot {
                kind: "latency-histogram",
                title,
                legend: vec![(format!("{policy} ({} samples)", h.count()), color)],
                svg: chart.finish(Some(&labels)),
            });
        }
    }
    out
}

/// Cumulative fraction at each bucket's upper bound.
pub fn cdf_points(h: &Log2Histogram) -> Vec<(f64, f64)> {
    let total = h.count() as f64;
    if total == 0.0 {
        return Vec::new();
    }
    let first = h.buckets.iter().position(|&c| c > 0).unwrap_or(0);
    let mut acc = 0u64;
    let mut pts = Vec::new();
    for (i, &c) in h.buckets.iter().enumerate().skip(first) {
        if pts.is_empty() {
            // Start at the lower bound of the first non-empty bucket.
            pts.push(((1u64 << i).max(1) as f64, 0.0));
        }
        acc += c;
        pts.push((((1u128 << (i + 1)) - 1) as f64, acc as f64 / total));
    }
    pts
}

fn latency_cdfs(report: &RunReport) -> Vec<Plot> {
    let mut out = Vec::new();
    for name in histogram_metrics(report) {
        let mut lines = Vec::new();
        let mut unit = "ns";
        for (p, c) in colors(report) {
            let Some(m) = report.policies.get(p).and_then(|r| r.metrics.get(&name)) else {
                continue;
            };
            let Some(h) = m.histogram.as_ref().filter(|h| h.count() > 0) else {
                continue;
            };
            unit = if m.unit == "ns" { "ns" } else { "" };
            // Percentile ("nines") scale: the tail stays visible. A
            // cumulative fraction of 1 is drawn at the histogram's
            // resolution, log10(samples), at most MAX_NINES.
            let cap = (h.count() as f64).log10().ceil().clamp(1.0, MAX_NINES);
            let points = cdf_points(h)
                .into_iter()
                .map(|(x, f)| {
                    (
                        x,
                        if f >= 1.0 {
                            cap
                        } else {
                            (-(1.0 - f).log10()).min(cap)
                        },
                    )
                })
                .collect();
            lines.push(Line {
                name: p.to_string(),
                color: c,
                points,
            });
        }
        if lines.is_empty() {
            continue;
        }
        let fmt = if unit == "ns" {
            TickFormat::Nanos
        } else {
            TickFormat::Number
        };
        let x = Axis::fit(
            ScaleKind::Log10,
            &format!("{name} (≤ value)"),
            fmt,
            lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
            false,
        );
        let top = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(1.0, f64::max);
        let y = Axis::fit(
            ScaleKind::Linear,
            "samples ≤ value (percentile scale)",
            TickFormat::Nines,
            [0.0, top],
            true,
        );
        let title = format!("{name}: cumulative distribution");
        let mut chart = Chart::new("latency-cdf", &title, x, y);
        chart.lines(&lines, false);
        out.push(Plot {
            kind: "latency-cdf",
            title,
            legend: lines.iter().map(|l| (l.name.clone(), l.color)).collect(),
            svg: chart.finish(None),
        });
    }
    out
}

fn throughput_vs_depth(report: &RunReport) -> Option<Plot> {
    let mut lines = Vec::new();
    let mut y_label = "updates/s".to_string();
    for (p, c) in colors(report) {
        let Some(r) = report.policies.get(p) else {
            continue;
        };
        let points: Vec<(f64, f64)> = if let Some(s) = r.series.get("throughput_vs_depth") {
            if !s.y_label.is_empty() {
                y_label = s.y_label.clone();
            }
            s.points.clone()
        } else {
            let mut pts: Vec<(f64, f64)> = r
                .metrics
                .iter()
                .filter_map(|(n, m)| {
                    let d: f64 = n.strip_prefix("update_ops_per_sec_depth")?.parse().ok()?;
                    (!m.values.is_empty()).then(|| (d, stats::mean(&m.values)))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            pts
        };
        let points: Vec<(f64, f64)> = points
            .into_iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        if !points.is_empty() {
            lines.push(Line {
                name: p.to_string(),
                color: c,
                points,
            });
        }
    }
    if lines.is_empty() {
        return None;
    }
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let x = Axis::fit(ScaleKind::Linear, "depth", TickFormat::Number, xs, false).integers();
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let y = Axis::fit(ScaleKind::Linear, &y_label, TickFormat::Number, ys, true);
    let title = "Update throughput vs hierarchy depth".to_string();
    let mut chart = Chart::new("throughput-vs-depth", &title, x, y);
    chart.lines(&lines, true);
    Some(Plot {
        kind: "throughput-vs-depth",
        title,
        legend: lines.iter().map(|l| (l.name.clone(), l.color)).collect(),
        svg: chart.finish(None),
    })
}

fn refault_vs_mismatch(report: &RunReport) -> Option<Plot> {
    let pts: Vec<(String, usize, f64, f64)> = colors(report)
        .into_iter()
        .filter_map(|(p, c)| {
            let r = report.policies.get(p)?;
            let lat = r.metrics.get("refault_latency_ns")?;
            let mis = r.metrics.get("decision_mismatch_rate")?;
            if lat.values.is_empty() || mis.values.is_empty() {
                return None;
            }
            Some((
                p.to_string(),
                c,
                stats::mean(&mis.values),
                stats::mean(&lat.values),
            ))
        })
        .filter(|(_, _, x, y)| x.is_finite() && y.is_finite() && *y > 0.0)
        .collect();
    if pts.is_empty() {
        return None;
    }
    let x = Axis::fit(
        ScaleKind::Linear,
        "refault decisions that differ from exact stats",
        TickFormat::Percent,
        pts.iter().map(|p| p.2),
        true,
    );
    let y = Axis::fit(
        ScaleKind::Log10,
        "mean refault latency",
        TickFormat::Nanos,
        pts.iter().map(|p| p.3),
        false,
    );
    let title = "Refault latency vs decision mismatch (lower left is better)".to_string();
    let mut chart = Chart::new("refault-vs-mismatch", &title, x, y);
    chart.scatter(&pts);
    Some(Plot {
        kind: "refault-vs-mismatch",
        title,
        legend: pts.iter().map(|p| (p.0.clone(), p.1)).collect(),
        svg: chart.finish(None),
    })
}

/// Update throughput per layout (the false-sharing scenario's
/// `ops_per_sec`): one bar per policy at its mean, each run's value in the
/// tooltip.
fn layout_throughput(report: &RunReport) -> Option<Plot> {
    let cols: Vec<(String, usize, Vec<f64>)> = colors(report)
        .into_iter()
        .filter_map(|(p, c)| {
            let m = report.policies.get(p)?.metrics.get("ops_per_sec")?;
            (!m.values.is_empty()).then(|| (p.to_string(), c, m.values.clone()))
        })
        .collect();
    // Only where the metric is the report's point: the false-sharing
    // layouts (other reports plot throughput against depth).
    if cols.len() < 2
        || report
            .policies
            .values()
            .any(|r| r.metrics.contains_key("update_ops_per_sec_depth2"))
    {
        return None;
    }
    let means: Vec<f64> = cols.iter().map(|(_, _, v)| stats::mean(v)).collect();
    let x = Axis::fit(
        ScaleKind::Linear,
        "layout",
        TickFormat::Number,
        [0.0, 1.0],
        true,
    );
    let y = Axis::fit(
        ScaleKind::Linear,
        "updates per second",
        TickFormat::Number,
        means.iter().copied().chain([0.0]),
        true,
    );
    let title = "Update throughput by layout (higher is better)".to_string();
    let mut chart = Chart::new("layout-throughput", &title, x, y);
    for (i, (name, c, values)) in cols.iter().enumerate() {
        let bars: Vec<(f64, f64, String)> = (0..cols.len())
            .map(|j| {
                let v = if j == i { means[i] } else { f64::NAN };
                let runs: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
                (
                    j as f64,
                    v,
                    format!(
                        "{name}: mean {:.0} ops/s (runs: {})",
                        means[i],
                        runs.join(", ")
                    ),
                )
            })
            .collect();
        chart.bars(&bars, *c);
    }
    let ticks: Vec<String> = cols.iter().map(|(n, _, _)| n.clone()).collect();
    Some(Plot {
        kind: "layout-throughput",
        title,
        legend: cols.iter().map(|(n, c, _)| (n.clone(), *c)).collect(),
        svg: chart.finish(Some(&ticks)),
    })
}

/// Per-VMA scan coverage (series `vma_coverage`, or the sim's
/// `scan_coverage`): one strip per policy, one cell per VMA shaded by the
/// fraction scanned. Hundreds of VMAs stay readable, unlike lines.
fn coverage_strips(report: &RunReport) -> Option<Plot> {
    let rows: Vec<Line> = colors(report)
        .into_iter()
        .filter_map(|(p, c)| {
            let r = report.policies.get(p)?;
            let s = ["vma_coverage", "scan_coverage"]
                .iter()
                .find_map(|n| r.series.get(*n))?;
            (!s.points.is_empty()).then(|| Line {
                name: p.to_string(),
                color: c,
                points: s.points.clone(),
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let xs: Vec<f64> = rows
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite())
        .collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut x = Axis::fit(
        ScaleKind::Linear,
        "VMA (shade: fraction scanned, blank: never scanned)",
        TickFormat::Number,
        [lo, hi],
        false,
    )
    .integers();
    // Cells span x ± 0.5: the axis covers exactly the VMAs.
    x.lo = lo - 0.5;
    x.hi = hi + 0.5;
    let y = Axis::fit(ScaleKind::Linear, "", TickFormat::Number, [0.0, 1.0], true);
    let title = "Scan coverage per VMA".to_string();
    let mut chart = Chart::new("vma-coverage", &title, x, y);
    chart.heat_rows(&rows);
    Some(Plot {
        kind: "vma-coverage",
        title,
        legend: rows.iter().map(|l| (l.name.clone(), l.color)).collect(),
        svg: chart.finish(None),
    })
}

/// A line plot of the first of `names` (aliases) that a policy has.
fn series_plot(
    report: &RunReport,
    names: &[&str],
    kind: &'static str,
    title: &str,
    y_format: TickFormat,
    markers: bool,
) -> Option<Plot> {
    let mut x_label = String::new();
    let mut y_label = String::new();
    let lines: Vec<Line> = colors(report)
        .into_iter()
        .filter_map(|(p, c)| {
            let r = report.policies.get(p)?;
            let s = names.iter().find_map(|n| r.series.get(*n))?;
            let points: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            if points.is_empty() {
                return None;
            }
            x_label.clone_from(&s.x_label);
            y_label.clone_from(&s.y_label);
            Some(Line {
                name: p.to_string(),
                color: c,
                points,
            })
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .collect();
    // Fractions get a 0–100% axis; anything else its own range.
    let is_fraction = ys.iter().all(|y| (0.0..=1.0).contains(y));
    let fmt = if is_fraction {
        y_format
    } else {
        TickFormat::Number
    };
    let y_range = if is_fraction { vec![0.0, 1.0] } else { ys };
    let x = Axis::fit(
        ScaleKind::Linear,
        &x_label,
        TickFormat::Number,
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        false,
    );
    let y = Axis::fit(ScaleKind::Linear, &y_label, fmt, y_range, true);
    let mut chart = Chart::new(kind, title, x, y);
    chart.lines(&lines, markers);
    Some(Plot {
        kind,
        title: title.to_string(),
        legend: lines.iter().map(|l| (l.name.clone(), l.color)).collect(),
        svg: chart.finish(None),
    })
}
