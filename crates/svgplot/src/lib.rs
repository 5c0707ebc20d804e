//! Hand-written SVG charts: line charts, bar charts and scatter plots with
//! axes, ticks and grid lines, sized by `viewBox` so they scale to any
//! screen. Colours come from the page's CSS classes (`s0` … `s11`), so the
//! charts follow the page's light or dark scheme.
//!
//! ```
//! use svgplot::{Axis, Chart, Line, ScaleKind, TickFormat};
//! let points = vec![(1.0, 9e8), (8.0, 8e8)];
//! let x = Axis::fit(ScaleKind::Linear, "depth", TickFormat::Number, [1.0, 8.0], false);
//! let y = Axis::fit(ScaleKind::Linear, "updates/s", TickFormat::Number, [9e8, 8e8], true);
//! let mut chart = Chart::new("throughput", "throughput vs depth", x, y);
//! chart.lines(&[Line { name: "hierstat".into(), color: 0, points }], true);
//! let svg = chart.finish(None);
//! assert!(svg.contains("<svg") && svg.contains("hierstat"));
//! ```

#![warn(missing_docs)]

use std::fmt::Write as _;

/// Width of every chart's `viewBox`.
pub const W: f64 = 480.0;
/// Height of every chart's `viewBox`.
pub const H: f64 = 300.0;
const LEFT: f64 = 76.0;
const RIGHT: f64 = 26.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 46.0;

/// Number of series colours defined by the page CSS (`.s0` … `.s11`).
pub const PALETTE: usize = 12;

/// Escapes text for HTML and SVG content and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScaleKind {
    /// Linear, ticks at 1/2/5 × 10^k.
    Linear,
    /// Logarithmic base 10, ticks at decades.
    Log10,
    /// Logarithmic base 2, ticks at powers of two (latency buckets).
    Log2,
}

/// How tick values are written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TickFormat {
    /// Plain number with an SI suffix (`52M`, `1.5k`, `0.25`).
    Number,
    /// Nanoseconds in the largest fitting unit (`512ns`, `4µs`, `2ms`).
    Nanos,
    /// A fraction shown as a percentage (`25%`).
    Percent,
    /// "Nines" of a cumulative fraction: the value `t` stands for the
    /// fraction `1 - 10^-t`, so ticks read `0%`, `90%`, `99%`, `99.9%`…
    /// (a percentile axis that keeps the tail visible). Ticks are integers.
    Nines,
}

/// One axis: its scale, label, tick format and data range.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Scale kind.
    pub kind: ScaleKind,
    /// Label under (x) or beside (y) the axis.
    pub label: String,
    /// Tick label format.
    pub format: TickFormat,
    /// Smallest value shown.
    pub lo: f64,
    /// Largest value shown.
    pub hi: f64,
    /// Ticks only at whole numbers (depths, indices).
    pub integer: bool,
}

impl Axis {
    /// An axis covering `values` (finite ones; log scales skip values ≤ 0),
    /// starting at zero for linear scales when `from_zero`.
    pub fn fit(
        kind: ScaleKind,
        label: &str,
        format: TickFormat,
        values: impl IntoIterator<Item = f64>,
        from_zero: bool,
    ) -> Axis {
        let ok = |v: &f64| v.is_finite() && (kind == ScaleKind::Linear || *v > 0.0);
        let (mut lo, mut hi) = values
            .into_iter()
            .filter(ok)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        if !lo.is_finite() {
            (lo, hi) = (if kind == ScaleKind::Linear { 0.0 } else { 1.0 }, 1.0);
        }
        match kind {
            ScaleKind::Linear => {
                if from_zero {
                    lo = lo.min(0.0);
                    hi = hi.max(0.0);
                }
                if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
                    let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
                    (lo, hi) = (lo - pad, hi + pad);
                }
                let step = nice_step((hi - lo) / 5.0);
                lo = (lo / step).floor() * step;
                hi = (hi / step).ceil() * step;
            }
            ScaleKind::Log10 => {
                lo = 10f64.powf(lo.log10().floor());
                hi = 10f64.powf(hi.log10().ceil().max(lo.log10() + 1.0));
            }
            ScaleKind::Log2 => {
                lo = 2f64.powf(lo.log2().floor());
                hi = 2f64.powf(hi.log2().ceil().max(lo.log2() + 1.0));
            }
        }
        Axis {
            kind,
            label: label.to_string(),
            format,
            lo,
            hi,
            integer: false,
        }
    }

    /// The same axis with ticks at whole numbers only.
    pub fn integers(mut self) -> Axis {
        self.integer = true;
        self
    }

    fn t(&self, v: f64) -> f64 {
        match self.kind {
            ScaleKind::Linear => (v - self.lo) / (self.hi - self.lo),
            ScaleKind::Log10 => (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
            ScaleKind::Log2 => (v.log2() - self.lo.log2()) / (self.hi.log2() - self.lo.log2()),
        }
    }

    /// Tick values, at most about eight.
    pub fn ticks(&self) -> Vec<f64> {
        match self.kind {
            ScaleKind::Linear => {
                let mut step = nice_step((self.hi - self.lo) / 5.0);
                if self.format == TickFormat::Nines || self.integer {
                    step = step.max(1.0).round();
                }
                let first = (self.lo / step - 1e-9).ceil() * step;
                let n = ((self.hi - first) / step + 1e-9).floor() as i64;
                (0..=n).map(|i| first + i as f64 * step).collect()
            }
            ScaleKind::Log10 | ScaleKind::Log2 => {
                let base: f64 = if self.kind == ScaleKind::Log10 {
                    10.0
                } else {
                    2.0
                };
                let (a, b) = (
                    self.lo.log(base).round() as i64,
                    self.hi.log(base).round() as i64,
                );
                let every = ((b - a) as f64 / 7.0).ceil().max(1.0) as i64;
                (a..=b)
                    .filter(|e| (e - a) % every == 0)
                    .map(|e| base.powi(e as i32))
                    .collect()
            }
        }
    }
}

/// 1, 2 or 5 × 10^k, the smallest not below `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Formats a tick or value label.
pub fn fmt_value(v: f64, f: TickFormat) -> String {
    match f {
        TickFormat::Percent => {
            let p = v * 100.0;
            if (p - p.round()).abs() < 1e-9 {
                format!("{p:.0}%")
            } else {
                format!("{}%", trim_num(p))
            }
        }
        TickFormat::Nines => {
            let p = 100.0 * (1.0 - 10f64.powf(-v));
            let digits = (v.round() as i64 - 2).max(0) as usize;
            format!("{p:.digits$}%")
        }
        TickFormat::Nanos => {
            let units = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")];
            let (d, u) = units
                .iter()
                .copied()
                .find(|(d, _)| v.abs() >= *d)
                .unwrap_or((1.0, "ns"));
            format!("{}{u}", trim_num(v / d))
        }
        TickFormat::Number => {
            let units = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
            match units.iter().find(|(d, _)| v.abs() >= *d) {
                Some((d, u)) => format!("{}{u}", trim_num(v / d)),
                None => trim_num(v),
            }
        }
    }
}

/// Up to three significant digits, trailing zeros removed.
fn trim_num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        // Three significant digits however small.
        let decimals = (2.0 - a.log10().floor()) as usize;
        format!("{v:.decimals$}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A chart under construction: axes and the SVG body drawn so far.
#[derive(Debug)]
pub struct Chart {
    kind: String,
    title: String,
    x: Axis,
    y: Axis,
    body: String,
    /// Row labels of a heat-strip chart, drawn instead of y ticks.
    rows: Option<Vec<String>>,
}

/// One named series of points with its palette index.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend name.
    pub name: String,
    /// Palette index (`s0` … `s11`).
    pub color: usize,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
}

impl Chart {
    /// A chart of `kind` (the `data-plot` attribute) with a title (the SVG
    /// `<title>`, for screen readers and tooltips) and two axes.
    pub fn new(kind: &str, title: &str, x: Axis, y: Axis) -> Chart {
        Chart {
            kind: kind.to_string(),
            title: title.to_string(),
            x,
            y,
            body: String::new(),
            rows: None,
        }
    }

    /// Draws one horizontal strip per line, one cell per point: the cell
    /// at `x` spans `x ± 0.5` and is shaded by `y` in `[0, 1]` (the
    /// line's colour at that opacity; empty cells show the strip's
    /// background). Runs of equal neighbouring cells become one rectangle.
    /// The row names replace the y ticks.
    pub fn heat_rows(&mut self, rows: &[Line]) {
        let n = rows.len().max(1) as f64;
        let band = (H - TOP - BOTTOM) / n;
        let (x0, x1) = (LEFT, W - RIGHT);
        for (i, l) in rows.iter().enumerate() {
            let y = TOP + i as f64 * band + band * 0.12;
            let h = band * 0.76;
            let c = l.color % PALETTE;
            let _ = write!(
                self.body,
                r#"<rect class="cellbg" x="{x0}" y="{y:.1}" width="{:.1}" height="{h:.1}"><title>{}</title></rect>"#,
                x1 - x0,
                esc(&l.name)
            );
            let mut pts: Vec<(f64, f64)> = l
                .points
                .iter()
                .copied()
                .filter(|(x, v)| x.is_finite() && v.is_finite())
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut k = 0;
            while k < pts.len() {
                let (start, v) = pts[k];
                let mut end = start;
                while k + 1 < pts.len() && pts[k + 1].1 == v && pts[k + 1].0 - end <= 1.0 {
                    k += 1;
                    end = pts[k].0;
                }
                k += 1;
                if v <= 0.0 {
                    continue;
                }
                let (a, b) = (self.px(start - 0.5).max(x0), self.px(end + 0.5).min(x1));
                let _ = write!(
                    self.body,
                    r#"<rect class="bar s{c}" x="{a:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill-opacity="{:.2}"/>"#,
                    (b - a).max(0.5),
                    v.clamp(0.08, 1.0)
                );
            }
        }
        self.rows = Some(rows.iter().map(|l| l.name.clone()).collect());
    }

    fn px(&self, v: f64) -> f64 {
        LEFT + self.x.t(v) * (W - LEFT - RIGHT)
    }

    fn py(&self, v: f64) -> f64 {
        H - BOTTOM - self.y.t(v) * (H - TOP - BOTTOM)
    }

    fn visible(&self, x: f64, y: f64) -> bool {
        let ok = |a: &Axis, v: f64| {
            v.is_finite() && (a.kind == ScaleKind::Linear || v > 0.0) && v >= a.lo && v <= a.hi
        };
        ok(&self.x, x) && ok(&self.y, y)
    }

    /// Draws lines (with point markers when `markers`).
    pub fn lines(&mut self, lines: &[Line], markers: bool) {
        for l in lines {
            let pts: Vec<(f64, f64)> = l
                .points
                .iter()
                .copied()
                .filter(|(x, y)| self.visible(*x, *y))
                .map(|(x, y)| (self.px(x), self.py(y)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let c = l.color % PALETTE;
            let d: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = write!(
                self.body,
                r#"<polyline class="line s{c}" points="{}"><title>{}</title></polyline>"#,
                d.join(" "),
                esc(&l.name)
            );
            if markers || pts.len() == 1 {
                for (x, y) in &pts {
                    let _ = write!(
                        self.body,
                        r#"<circle class="dot s{c}" cx="{x:.1}" cy="{y:.1}" r="3"/>"#
                    );
                }
            }
        }
    }

    /// Draws error bars: for each `(x, y, dx, dy)`, a horizontal bar over
    /// `x ± dx` and a vertical one over `y ± dy` (clipped to the axes; a
    /// zero or NaN half-width draws none), in palette colour `color`.
    pub fn error_bars(&mut self, bars: &[(f64, f64, f64, f64)], color: usize) {
        let c = color % PALETTE;
        for &(x, y, dx, dy) in bars {
            if !self.visible(x, y) {
                continue;
            }
            let (px, py) = (self.px(x), self.py(y));
            let ok = |d: f64, a: &Axis, v: f64| {
                d.is_finite() && d > 0.0 && (a.kind == ScaleKind::Linear || v - d > 0.0)
            };
            let mut seg = String::new();
            if ok(dx, &self.x, x) {
                let (a, b) = (
                    self.px((x - dx).clamp(self.x.lo, self.x.hi)),
                    self.px((x + dx).clamp(self.x.lo, self.x.hi)),
                );
                let _ = write!(
                    seg,
                    r#"<line class="err s{c}" x1="{a:.1}" y1="{py:.1}" x2="{b:.1}" y2="{py:.1}"/>"#
                );
            }
            if ok(dy, &self.y, y) {
                let (a, b) = (
                    self.py((y - dy).clamp(self.y.lo, self.y.hi)),
                    self.py((y + dy).clamp(self.y.lo, self.y.hi)),
                );
                let _ = write!(
                    seg,
                    r#"<line class="err s{c}" x1="{px:.1}" y1="{a:.1}" x2="{px:.1}" y2="{b:.1}"/>"#
                );
            }
            self.body.push_str(&seg);
        }
    }

    /// Draws vertical bars, one per `(x, value)`, centred on `x` with
    /// `width` in data units of a linear x axis or a factor on a log one.
    pub fn bars(&mut self, bars: &[(f64, f64, String)], color: usize) {
        let n = bars.len().max(1) as f64;
        let slot = (W - LEFT - RIGHT) / n;
        let base = self.py(self.y.lo.max(if self.y.kind == ScaleKind::Linear {
            0.0
        } else {
            self.y.lo
        }));
        for (i, (_, v, tip)) in bars.iter().enumerate() {
            if v.is_nan() {
                continue; // an empty slot (another series' bar)
            }
            let x = LEFT + i as f64 * slot + slot * 0.1;
            let top = if v.is_finite() && *v > 0.0 {
                self.py(v.min(self.y.hi))
            } else {
                base
            };
            let _ = write!(
                self.body,
                r#"<rect class="bar s{}" x="{x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
                color % PALETTE,
                slot * 0.8,
                (base - top).max(0.0),
                esc(tip)
            );
        }
    }

    /// The box the y axis's title takes (top left, above the plot).
    fn y_title_box(&self) -> (f64, f64, f64, f64) {
        let w = self.y.label.chars().count() as f64 * 7.6;
        (0.0, TOP - 12.0 - 13.0, 4.0 + w + 4.0, TOP - 12.0 + 4.0)
    }

    /// Where each point's marker is drawn: at its position, except that
    /// points within a few pixels of one another (equal values) are spread
    /// on a small circle around their common position, so every marker
    /// shows; the second value says whether it was moved.
    fn spread(&self, points: &[(String, usize, f64, f64)]) -> Vec<((f64, f64), bool)> {
        let at: Vec<(f64, f64)> = points
            .iter()
            .map(|p| (self.px(p.2), self.py(p.3)))
            .collect();
        let mut group: Vec<usize> = (0..points.len()).collect();
        for i in 0..points.len() {
            if let Some(j) = (0..i).find(|&j| {
                group[j] == j && (at[i].0 - at[j].0).abs() < 4.0 && (at[i].1 - at[j].1).abs() < 4.0
            }) {
                group[i] = j;
            }
        }
        (0..points.len())
            .map(|i| {
                let g = group[i];
                let members: Vec<usize> = (0..points.len()).filter(|&k| group[k] == g).collect();
                let k = members.len();
                if k == 1 {
                    return (at[i], false);
                }
                let pos = members.iter().position(|&m| m == i).unwrap_or(0);
                // Markers of radius 6 a chord of 13 px apart at least.
                let r = (6.5 / (std::f64::consts::PI / k as f64).sin()).max(9.0);
                let a = -std::f64::consts::FRAC_PI_2
                    + 2.0 * std::f64::consts::PI * pos as f64 / k as f64;
                ((at[g].0 + r * a.cos(), at[g].1 + r * a.sin()), true)
            })
            .collect()
    }

    /// Draws labelled points. Points at the same position (equal values)
    /// are spread on a small circle around it, each joined to it by a
    /// short line, so none hides another. Labels never overlap one another
    /// or the y axis's title: each is placed at the first free spot among
    /// positions around its point (right or left of it, then stepped up
    /// and down), in order of the points' heights; a label with no free
    /// spot near its point keeps the nearest one and is joined to its
    /// point by a leader line.
    pub fn scatter(&mut self, points: &[(String, usize, f64, f64)]) {
        /// Approximate width of one 13 px label character.
        const CHAR_W: f64 = 7.6;
        const LABEL_H: f64 = 15.0;
        let mut placed: Vec<(f64, f64, f64, f64)> = vec![self.y_title_box()];
        let spread = self.spread(points);
        let mut order: Vec<usize> = (0..points.len())
            .filter(|&i| self.visible(points[i].2, points[i].3))
            .collect();
        order.sort_by(|&a, &b| {
            let (ya, yb) = (spread[a].0 .1, spread[b].0 .1);
            ya.total_cmp(&yb).then(a.cmp(&b))
        });
        let overlaps = |b: &(f64, f64, f64, f64), placed: &[(f64, f64, f64, f64)]| {
            placed
                .iter()
                .any(|p| b.0 < p.2 && p.0 < b.2 && b.1 < p.3 && p.1 < b.3)
        };
        for i in order {
            let (name, c, x, y) = &points[i];
            let ((px, py), moved) = spread[i];
            if moved {
                let _ = write!(
                    self.body,
                    r#"<line class="grid" x1="{:.1}" y1="{:.1}" x2="{px:.1}" y2="{py:.1}"/>"#,
                    self.px(*x),
                    self.py(*y)
                );
            }
            let w = name.chars().count() as f64 * CHAR_W;
            let prefer_left = px > W * 0.7;
            // Candidate baselines: above the point, below it, then further
            // away in steps of a label height.
            let mut candidates: Vec<(f64, bool)> = Vec::new();
            for k in 0..8 {
                let dy = [-8.0, 20.0][k % 2]
                    + (k / 2) as f64 * LABEL_H * if k % 2 == 0 { -1.0 } else { 1.0 };
                candidates.push((py + dy, prefer_left));
                candidates.push((py + dy, !prefer_left));
            }
            let boxed = |base: f64, left: bool| {
                let x0 = if left { px - 8.0 - w } else { px + 8.0 };
                (x0, base - LABEL_H + 3.0, x0 + w, base + 3.0)
            };
            // Inside the plot area (ticks and axis titles are outside it).
            let (base, left) = candidates
                .iter()
                .copied()
                .find(|&(b, l)| {
                    let bx = boxed(b, l);
                    bx.0 >= LEFT
                        && bx.2 <= W
                        && bx.1 >= 0.0
                        && bx.3 <= H - BOTTOM + 4.0
                        && !overlaps(&bx, &placed)
                })
                .unwrap_or(candidates[0]);
            placed.push(boxed(base, left));
            let (anchor, lx) = if left {
                ("end", px - 8.0)
            } else {
                ("start", px + 8.0)
            };
            if (base - (py - 8.0)).abs() > LABEL_H * 1.5 {
                let _ = write!(
                    self.body,
                    r#"<line class="grid" x1="{px:.1}" y1="{py:.1}" x2="{lx:.1}" y2="{:.1}"/>"#,
                    base - 4.0
                );
            }
            let tip = if moved {
                format!("{name} (drawn beside its position: other points have the same values)")
            } else {
                name.clone()
            };
            let _ = write!(
                self.body,
                r#"<circle class="dot big s{}" cx="{px:.1}" cy="{py:.1}" r="6"><title>{}</title></circle><text class="ptlabel" x="{lx:.1}" y="{base:.1}" text-anchor="{anchor}">{}</text>"#,
                c % PALETTE,
                esc(&tip),
                esc(name)
            );
        }
    }

    /// Finishes the SVG with grid, axes, ticks and labels. With
    /// `category_ticks`, the x axis is labelled by those strings, one per
    /// equal slot (bar charts), instead of by value.
    pub fn finish(self, category_ticks: Option<&[String]>) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg class="plot" data-plot="{}" viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{}"><title>{}</title>"#,
            esc(&self.kind),
            esc(&self.title),
            esc(&self.title)
        );
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
        // Row labels (heat strips) or horizontal grid and y ticks.
        if let Some(rows) = &self.rows {
            let band = (y1 - y0) / rows.len().max(1) as f64;
            for (i, r) in rows.iter().enumerate() {
                let name: String = r.chars().take(11).collect();
                let _ = write!(
                    s,
                    r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                    x0 - 6.0,
                    y0 + (i as f64 + 0.5) * band + 4.0,
                    esc(&name)
                );
            }
        }
        let y_ticks = if self.rows.is_some() {
            Vec::new()
        } else {
            self.y.ticks()
        };
        for v in y_ticks {
            let y = self.py(v);
            let _ = write!(
                s,
                r#"<line class="grid" x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 6.0,
                y + 4.0,
                esc(&fmt_value(v, self.y.format))
            );
        }
        // x ticks.
        match category_ticks {
            Some(labels) => {
                let n = labels.len().max(1);
                let slot = (x1 - x0) / n as f64;
                let every = n.div_ceil(8);
                for (i, l) in labels.iter().enumerate().filter(|(i, _)| i % every == 0) {
                    let x = x0 + (i as f64 + 0.5) * slot;
                    let _ = write!(
                        s,
                        r#"<text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                        y1 + 16.0,
                        esc(l)
                    );
                }
            }
            None => {
                for v in self.x.ticks() {
                    let x = self.px(v);
                    let _ = write!(
                        s,
                        r#"<line class="grid" x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                        y1 + 16.0,
                        esc(&fmt_value(v, self.x.format))
                    );
                }
            }
        }
        s.push_str(&self.body);
        let _ = write!(
            s,
            r#"<path class="axis" d="M{x0},{y0} V{y1} H{x1}"/><text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="label" x="4" y="{:.1}" text-anchor="start">{}</text></svg>"#,
            (x0 + x1) / 2.0,
            H - 8.0,
            esc(&self.x.label),
            TOP - 12.0,
            esc(&self.y.label)
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_labels_at_one_point_do_not_overlap() {
        let x = Axis::fit(ScaleKind::Linear, "x", TickFormat::Number, [0.0, 1.0], true);
        let y = Axis::fit(ScaleKind::Linear, "y", TickFormat::Number, [0.0, 1.0], true);
        let mut c = Chart::new("t", "t", x, y);
        let names = ["linux-5.15-async", "linux-6.8", "linux-6.17", "hierstat"];
        let pts: Vec<(String, usize, f64, f64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i, 0.5, 0.5 + i as f64 * 0.001))
            .collect();
        c.scatter(&pts);
        let svg = c.finish(None);
        let mut boxes = Vec::new();
        for part in svg.split("<text class=\"ptlabel\" ").skip(1) {
            let num = |key: &str| -> f64 {
                let v = part.split(key).nth(1).unwrap().split('"').nth(1).unwrap();
                v.parse().unwrap()
            };
            let (x, y) = (num("x="), num("y="));
            let end = part.contains("text-anchor=\"end\"");
            let text = part.split('>').nth(1).unwrap().split('<').next().unwrap();
            let w = text.chars().count() as f64 * 7.6;
            let x0 = if end { x - w } else { x };
            boxes.push((x0, y - 12.0, x0 + w, y + 3.0));
        }
        assert_eq!(boxes.len(), 4);
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                let overlap = a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
                assert!(!overlap, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn coinciding_points_are_all_visible_and_labels_avoid_the_y_title() {
        let x = Axis::fit(ScaleKind::Linear, "x", TickFormat::Number, [0.0, 1.0], true);
        let y = Axis::fit(
            ScaleKind::Linear,
            "a long y axis title over the plot",
            TickFormat::Number,
            [0.0, 1.0],
            true,
        );
        let mut c = Chart::new("t", "t", x, y);
        // Six policies with the same values, and one at the top left.
        let mut pts: Vec<(String, usize, f64, f64)> = (0..6)
            .map(|i| (format!("policy-{i}"), i, 0.5, 0.5))
            .collect();
        pts.push(("top".into(), 7, 0.0, 1.0));
        c.scatter(&pts);
        let svg = c.finish(None);
        let num = |part: &str, key: &str| -> f64 {
            let v = part.split(key).nth(1).unwrap().split('"').nth(1).unwrap();
            v.parse().unwrap()
        };
        let centres: Vec<(f64, f64)> = svg
            .split("<circle class=\"dot big ")
            .skip(1)
            .map(|p| (num(p, "cx="), num(p, "cy=")))
            .collect();
        assert_eq!(centres.len(), 7);
        for (i, a) in centres.iter().enumerate() {
            for b in &centres[i + 1..] {
                let d = ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
                assert!(d >= 12.0, "{a:?} and {b:?} overlap ({d:.1} px)");
            }
        }
        // No point label in the y title's band.
        for part in svg.split("<text class=\"ptlabel\" ").skip(1) {
            let (x, y) = (num(part, "x="), num(part, "y="));
            let title_right = 4.0 + "a long y axis title over the plot".len() as f64 * 7.6;
            assert!(
                !(y - 12.0 < TOP - 8.0 && x < title_right),
                "label at ({x}, {y}) over the y title"
            );
        }
    }

    #[test]
    fn ticks_and_formats() {
        let a = Axis::fit(
            ScaleKind::Linear,
            "x",
            TickFormat::Number,
            [3.0, 47.0],
            true,
        );
        assert_eq!((a.lo, a.hi), (0.0, 50.0));
        assert_eq!(a.ticks(), [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        let l = Axis::fit(
            ScaleKind::Log2,
            "ns",
            TickFormat::Nanos,
            [300.0, 5000.0],
            false,
        );
        assert_eq!((l.lo, l.hi), (256.0, 8192.0));
        assert_eq!(fmt_value(1024.0, TickFormat::Nanos), "1.02µs");
        assert_eq!(fmt_value(2_000_000.0, TickFormat::Nanos), "2ms");
        assert_eq!(fmt_value(52.0e6, TickFormat::Number), "52M");
        assert_eq!(fmt_value(0.25, TickFormat::Percent), "25%");
        assert_eq!(fmt_value(1e-6, TickFormat::Percent), "0.0001%");
        assert_eq!(fmt_value(0.00123, TickFormat::Number), "0.00123");
        assert_eq!(fmt_value(0.0, TickFormat::Nines), "0%");
        assert_eq!(fmt_value(1.0, TickFormat::Nines), "90%");
        assert_eq!(fmt_value(2.0, TickFormat::Nines), "99%");
        assert_eq!(fmt_value(3.0, TickFormat::Nines), "99.9%");
        assert_eq!(fmt_value(5.0, TickFormat::Nines), "99.999%");
        assert_eq!(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        let c = Axis::fit(
            ScaleKind::Linear,
            "x",
            TickFormat::Number,
            [5.0, 5.0],
            false,
        );
        assert!(c.lo < 5.0 && c.hi > 5.0);
    }
}

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
