//! The HTML report of a sweep (`mmlab sweep FILE --html OUT`): the
//! trade-off plot (every grid point, the Pareto front joined by a line,
//! the built-in presets named) and the table of points. Both axes are
//! "lower is better"; a point is on the front when no other point is at
//! least as good on both axes and better on one.

use super::{palette_css, CSS};
use sim::scenario::sweep::SweepSpec;
use std::fmt::Write as _;
use svgplot::{esc, Axis, Chart, Line, ScaleKind, TickFormat};

/// One point of a sweep as plotted: its axes averaged over its seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// The policy's name (`pages_per_shard=16`, or a preset's).
    pub label: String,
    /// `(knob, value)` of the swept knobs; empty for presets.
    pub knobs: Vec<(String, String)>,
    /// Whether it is a built-in preset.
    pub preset: bool,
    /// The seeds stored.
    pub seeds: Vec<u64>,
    /// Mean x over the seeds.
    pub x: f64,
    /// Mean y over the seeds.
    pub y: f64,
    /// x per seed.
    pub xs: Vec<f64>,
    /// y per seed.
    pub ys: Vec<f64>,
}

/// Indices of the rows on the Pareto front (both axes minimised; rows
/// with a NaN axis are never on it), in increasing x.
pub fn pareto_front(rows: &[SweepRow]) -> Vec<usize> {
    let ok = |r: &SweepRow| r.x.is_finite() && r.y.is_finite();
    let mut front: Vec<usize> = (0..rows.len())
        .filter(|&i| ok(&rows[i]))
        .filter(|&i| {
            let a = &rows[i];
            !rows.iter().enumerate().any(|(j, b)| {
                j != i && ok(b) && b.x <= a.x && b.y <= a.y && (b.x < a.x || b.y < a.y)
            })
        })
        .collect();
    front.sort_by(|&a, &b| rows[a].x.total_cmp(&rows[b].x));
    front
}

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

/// The trade-off plot of `rows` as an SVG: every grid point as a dot (its
/// knob values in the tooltip), the Pareto front as a line with its points
/// labelled by their knob values, the presets as big labelled dots.
pub fn tradeoff_svg(title: &str, rows: &[SweepRow], ax: &str, ay: &str) -> String {
    let axis = |label: &str, vals: Vec<f64>, zero: bool| {
        let kind = scale_of(vals.iter().copied());
        Axis::fit(
            kind,
            label,
            format_of(label),
            vals,
            zero && kind == ScaleKind::Linear,
        )
    };
    let x = axis(ax, rows.iter().map(|r| r.x).collect(), false);
    let y = axis(ay, rows.iter().map(|r| r.y).collect(), true);
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
    let dots: Vec<Line> = rows
        .iter()
        .filter(|r| !r.preset)
        .map(|r| Line {
            name: r.label.clone(),
            color: 0,
            points: vec![(r.x, r.y)],
        })
        .collect();
    c.lines(&dots, true);
    c.lines(
        &[Line {
            name: "Pareto front".into(),
            color: 1,
            points: front.iter().map(|&i| (rows[i].x, rows[i].y)).collect(),
        }],
        true,
    );
    let (tx, ty) = (|v: f64| unit(&x_axis, v), |v: f64| unit(&y_axis, v));
    let near = |a: &(String, usize, f64, f64), b: &(String, usize, f64, f64)| {
        (tx(a.2) - tx(b.2)).abs() < 0.12 && (ty(a.3) - ty(b.3)).abs() < 0.06
    };
    let labels: Vec<(String, usize, f64, f64)> = front
        .iter()
        .map(|&i| &rows[i])
        .filter(|r| !r.preset)
        .map(|r| (short(r), 1, r.x, r.y))
        .collect();
    c.scatter(&merge_near(labels, near));
    let presets: Vec<(String, usize, f64, f64)> = rows
        .iter()
        .filter(|r| r.preset)
        .map(|r| (r.label.clone(), 3, r.x, r.y))
        .collect();
    c.scatter(&merge_near(presets, near));
    c.finish(None)
}

fn num(v: f64, f: TickFormat) -> String {
    if v.is_nan() {
        return "–".into();
    }
    match f {
        TickFormat::Nanos => format!("{:.0} ns", v),
        TickFormat::Percent => format!("{:.3}%", v * 100.0),
        _ => format!("{v:.4}"),
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
        r#"<div class="tablewrap"><table><thead><tr><th class="m">point</th><th>seeds</th><th>{}</th><th>{}</th><th>front</th></tr></thead><tbody>"#,
        esc(ax),
        esc(ay)
    );
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            table,
            r#"<tr><td class="m">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&r.label),
            if r.preset { " (preset)" } else { "" },
            r.seeds.len(),
            num(r.x, format_of(ax)),
            num(r.y, format_of(ay)),
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
<body><header><h1>{t}</h1><p class="meta">{desc}Knobs swept: {knobs} (base {base}); seeds {seeds:?}; each point is the mean over its seeds. Both axes: lower is better; on a logarithmic axis, zeros are drawn on the axis.</p></header>
<main><div class="plots one"><figure data-kind="sweep-tradeoff"><figcaption>{ay} against {ax}</figcaption>{svg}<ul class="legend"><li><i class="s0"></i>grid point (knob values in the tooltip)</li><li><i class="s1"></i>Pareto front (labelled by knob values)</li><li><i class="s3"></i>built-in preset</li></ul></figure></div>
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
    fn front_keeps_only_undominated_points() {
        let rows = vec![
            row("a", 1.0, 5.0, false),
            row("b", 2.0, 2.0, false),
            row("c", 3.0, 3.0, false), // dominated by b
            row("d", 4.0, 1.0, true),
            row("e", f64::NAN, 0.0, false),
            row("f", 1.0, 6.0, false), // dominated by a
        ];
        assert_eq!(pareto_front(&rows), vec![0, 1, 3]);
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
    }
}
