//! The HTML report of a sweep (`mmlab sweep FILE --html OUT`): the
//! trade-off plot (every point labelled by its knob values, with its
//! seeds' spread as error bars, the Pareto front joined by a line, the
//! built-in presets named) and the table of points. Both axes are "lower
//! is better"; a point is on the front when no other point is better on
//! one axis and not worse on the other beyond run-to-run noise
//! ([`pareto_front`]), and an axis spans at least the noise, so a
//! difference within it is drawn as small as it is.

use super::{palette_css, CSS};
use crate::analysis::sweep::{column_numbers, noise_sd};
pub use crate::analysis::sweep::{pareto_front, SweepRow};
use lab::sweep::SweepSpec;
use std::fmt::Write as _;
use svgplot::{esc, Axis, Chart, Line, ScaleKind, TickFormat};

fn format_of(axis: &str) -> TickFormat {
    if axis.contains("_ns") || axis.contains("latency") {
        TickFormat::Nanos
    } else if axis.contains("rate") || axis.contains("fraction") {
        TickFormat::Percent
    } else {
        TickFormat::Number
    }
}

fn short(r: &SweepRow) -> String {
    if r.preset {
        r.label.clone()
    } else {
        r.knobs
            .iter()
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Linear, or log10 when the positive values span two decades or more
/// (mismatch rates of 0.02% next to 5%); zeros are then drawn on the
/// axis's floor.
fn scale_of(values: impl Iterator<Item = f64>) -> ScaleKind {
    let v: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    if v.len() >= 2 && hi / lo >= 100.0 {
        ScaleKind::Log10
    } else {
        ScaleKind::Linear
    }
}

/// Where `v` falls on `a`, from 0 (its low end) to 1 (its high end).
fn unit(a: &Axis, v: f64) -> f64 {
    let f = |v: f64| match a.kind {
        ScaleKind::Linear => v,
        ScaleKind::Log10 => v.max(a.lo).log10(),
        ScaleKind::Log2 => v.max(a.lo).log2(),
    };
    let span = f(a.hi) - f(a.lo);
    if span > 0.0 {
        (f(v) - f(a.lo)) / span
    } else {
        0.0
    }
}

/// Joins the labels of points that would overlap (`near`) into the label
/// of the first of them; the others keep their dot with an empty label.
fn merge_near(
    points: Vec<(String, usize, f64, f64)>,
    near: impl Fn(&(String, usize, f64, f64), &(String, usize, f64, f64)) -> bool,
) -> Vec<(String, usize, f64, f64)> {
    let mut out: Vec<(String, usize, f64, f64)> = Vec::new();
    for mut p in points {
        if let Some(o) = out.iter_mut().find(|o| !o.0.is_empty() && near(o, &p)) {
            o.0.push_str(" / ");
            o.0.push_str(&p.0);
            p.0.clear();
        }
        out.push(p);
    }
    out
}

/// An axis over `vals` on `kind`, at least `4 x noise` wide (two
/// standard deviations of the seeds' noise each side of the data's middle)
/// on a linear scale, so that a spread within the noise does not fill it.
fn noisy_axis(
    kind: ScaleKind,
    label: &str,
    vals: &[f64],
    noise: Option<f64>,
    from_zero: bool,
) -> Axis {
    let mut v: Vec<f64> = vals.to_vec();
    if let (ScaleKind::Linear, Some(sd)) = (kind, noise.filter(|n| *n > 0.0)) {
        let finite: Vec<f64> = vals.iter().copied().filter(|x| x.is_finite()).collect();
        if let (Some(lo), Some(hi)) = (
            finite.iter().copied().reduce(f64::min),
            finite.iter().copied().reduce(f64::max),
        ) {
            if hi - lo < 4.0 * sd {
                let mid = (lo + hi) / 2.0;
                let (a, b) = (mid - 2.0 * sd, mid + 2.0 * sd);
                // A rate or a latency cannot go below zero.
                v.push(if lo >= 0.0 { a.max(0.0) } else { a });
                v.push(b);
            }
        }
    }
    Axis::fit(
        kind,
        label,
        format_of(label),
        v,
        from_zero && kind == ScaleKind::Linear,
    )
}

/// The trade-off plot of `rows` as an SVG: every point as a dot labelled
/// by its knob values (the presets by name, bigger), its seeds' standard
/// deviation as error bars, the Pareto front as a line.
pub fn tradeoff_svg(title: &str, rows: &[SweepRow], ax: &str, ay: &str) -> String {
    let xs: Vec<f64> = rows.iter().map(|r| r.x).collect();
    let ys: Vec<f64> = rows.iter().map(|r| r.y).collect();
    let x = noisy_axis(
        scale_of(xs.iter().copied()),
        ax,
        &xs,
        noise_sd(rows, |r| &r.xs),
        false,
    );
    let y = noisy_axis(
        scale_of(ys.iter().copied()),
        ay,
        &ys,
        noise_sd(rows, |r| &r.ys),
        true,
    );
    // On a log axis, zeros sit on the floor.
    let (xlo, ylo) = (
        if x.kind == ScaleKind::Linear {
            f64::NEG_INFINITY
        } else {
            x.lo
        },
        if y.kind == ScaleKind::Linear {
            f64::NEG_INFINITY
        } else {
            y.lo
        },
    );
    let rows: Vec<SweepRow> = rows
        .iter()
        .map(|r| SweepRow {
            x: if r.x <= 0.0 { r.x.max(xlo) } else { r.x },
            y: if r.y <= 0.0 { r.y.max(ylo) } else { r.y },
            ..r.clone()
        })
        .collect();
    let rows = &rows[..];
    let (x_axis, y_axis) = (x.clone(), y.clone());
    let mut c = Chart::new("sweep-tradeoff", title, x, y);
    let front = pareto_front(rows);
    let bars: Vec<(f64, f64, f64, f64)> = rows
        .iter()
        .map(|r| (r.x, r.y, r.x_sd().unwrap_or(0.0), r.y_sd().unwrap_or(0.0)))
        .collect();
    c.error_bars(&bars, 0);
    c.lines(
        &[Line {
            name: "Pareto front".into(),
            color: 1,
            points: front.iter().map(|&i| (rows[i].x, rows[i].y)).collect(),
        }],
        false,
    );
    let (tx, ty) = (|v: f64| unit(&x_axis, v), |v: f64| unit(&y_axis, v));
    let near = |a: &(String, usize, f64, f64), b: &(String, usize, f64, f64)| {
        (tx(a.2) - tx(b.2)).abs() < 0.02 && (ty(a.3) - ty(b.3)).abs() < 0.02
    };
    // Every point labelled: grid points by their knob values (the front's
    // in its colour), presets by name.
    let points: Vec<(String, usize, f64, f64)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let color = if r.preset {
                3
            } else if front.contains(&i) {
                1
            } else {
                0
            };
            (short(r), color, r.x, r.y)
        })
        .collect();
    c.scatter(&merge_near(points, near));
    c.finish(None)
}

/// A value in the unit its table column shows: a rate in percent.
fn scaled(v: f64, axis: &str) -> f64 {
    if format_of(axis) == TickFormat::Percent {
        v * 100.0
    } else {
        v
    }
}

/// The unit of an axis's table column.
fn unit_of(axis: &str) -> &'static str {
    match format_of(axis) {
        TickFormat::Nanos => " (ns)",
        TickFormat::Percent => " (%)",
        _ => "",
    }
}

/// The whole page: facts of the sweep, the plot, the table.
pub fn render_sweep_html(
    spec: &SweepSpec,
    scenario: &str,
    rows: &[SweepRow],
    ax: &str,
    ay: &str,
) -> String {
    let front = pareto_front(rows);
    let title = format!("sweep {} on {scenario}", spec.name);
    let knobs: Vec<&str> = spec.knobs.keys().map(String::as_str).collect();
    let mut table = String::new();
    let _ = write!(
        table,
        r#"<div class="tablewrap"><table><thead><tr><th class="m">point</th><th>seeds</th><th>{}</th><th>± sd</th><th>{}</th><th>± sd</th><th>front</th></tr></thead><tbody>"#,
        esc(&format!("{ax}{}", unit_of(ax))),
        esc(&format!("{ay}{}", unit_of(ay)))
    );
    let col =
        |f: &dyn Fn(&SweepRow) -> f64| column_numbers(&rows.iter().map(f).collect::<Vec<_>>());
    let (xv, xsd) = (
        col(&|r| scaled(r.x, ax)),
        col(&|r| r.x_sd().map_or(f64::NAN, |v| scaled(v, ax))),
    );
    let (yv, ysd) = (
        col(&|r| scaled(r.y, ay)),
        col(&|r| r.y_sd().map_or(f64::NAN, |v| scaled(v, ay))),
    );
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            table,
            r#"<tr><td class="m">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&r.label),
            if r.preset { " (preset)" } else { "" },
            r.seeds.len(),
            xv[i],
            xsd[i],
            yv[i],
            ysd[i],
            if front.contains(&i) { "●" } else { "" }
        );
    }
    table.push_str("</tbody></table></div>");
    let svg = tradeoff_svg(&title, rows, ax, ay);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>{t}</title><style>{CSS}{pal}.plots.one{{grid-template-columns:1fr;max-width:900px}}</style></head>
<body><header><h1>{t}</h1><p class="meta">{desc}Knobs swept: {knobs} (base {base}); seeds {seeds:?}; each point is the mean over its seeds. Both axes: lower is better; on a logarithmic axis, zeros are drawn on the axis; a linear axis spans at least four standard deviations of the seeds' noise.</p></header>
<main><div class="plots one"><figure data-kind="sweep-tradeoff"><figcaption>{ay} against {ax}</figcaption>{svg}<ul class="legend"><li><i class="s0"></i>grid point, labelled by its knob values; bars: ± 1 standard deviation over the seeds</li><li><i class="s1"></i>Pareto front (beyond run-to-run noise: Welch's test over the seeds, p &lt; 0.05)</li><li><i class="s3"></i>built-in preset</li></ul></figure></div>
<h2>Points</h2>{table}</main><footer>Generated by mmlab sweep. Self-contained: no scripts, no external resources.</footer></body></html>
"#,
        t = esc(&title),
        pal = palette_css(),
        desc = if spec.description.is_empty() {
            String::new()
        } else {
            format!("{}. ", esc(&spec.description))
        },
        knobs = esc(&knobs.join(", ")),
        base = esc(&spec.base),
        seeds = rows.first().map(|r| r.seeds.clone()).unwrap_or_default(),
        ax = esc(ax),
        ay = esc(ay),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, x: f64, y: f64, preset: bool) -> SweepRow {
        SweepRow {
            label: label.into(),
            knobs: vec![("k".into(), label.into())],
            preset,
            seeds: vec![1],
            x,
            y,
            xs: vec![x],
            ys: vec![y],
        }
    }

    #[test]
    fn page_has_the_plot_and_marks_presets() {
        let rows = vec![row("a", 1.0, 5.0, false), row("hierstat", 2.0, 2.0, true)];
        let spec: SweepSpec = toml::from_str(
            "name = \"s\"\nscenario = \"x\"\nseeds = [1]\nbase = \"hierstat\"\n[knobs]\nbatch = [1]\n",
        )
        .unwrap();
        let html = render_sweep_html(
            &spec,
            "refault-storm",
            &rows,
            "refault_latency_ns",
            "decision_mismatch_rate",
        );
        assert!(html.contains(r#"data-plot="sweep-tradeoff""#));
        assert!(html.contains("hierstat (preset)"));
        assert!(html.contains("Pareto front"));
        // Every point is labelled on the plot, not only in a tooltip.
        assert_eq!(html.matches(r#"class="ptlabel""#).count(), 2, "{html}");
    }
}

#[cfg(test)]
mod noise_tests {
    use super::*;

    /// Issue 28: a 0.04% spread of means with a 1% noise is not drawn
    /// full height: the y axis spans the noise.
    #[test]
    fn an_axis_spans_the_noise() {
        let r = |label: &str, ys: &[f64]| SweepRow {
            label: label.into(),
            knobs: vec![("k".into(), label.into())],
            preset: false,
            seeds: vec![1, 2, 3],
            x: 1.0,
            y: crate::analysis::stats::mean(ys),
            xs: vec![1.0, 1.0, 1.0],
            ys: ys.to_vec(),
        };
        let rows = vec![
            r("a", &[0.500, 0.510, 0.490]),
            r("b", &[0.5002, 0.5102, 0.4902]),
        ];
        let svg = tradeoff_svg("t", &rows, "x_ns", "mismatch_rate");
        // The two points are less than a tenth of the plot height apart.
        let ys: Vec<f64> = svg
            .split("<circle class=\"dot big ")
            .skip(1)
            .map(|p| {
                p.split("cy=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(ys.len(), 2);
        assert!((ys[0] - ys[1]).abs() < 25.0, "{ys:?}");
        // Both are on the front: the difference is within the noise.
        assert_eq!(pareto_front(&rows).len(), 2);
    }
}
