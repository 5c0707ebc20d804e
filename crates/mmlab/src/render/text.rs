//! Text output in the formats of the source threads:
//!
//! * bcc `funclatency`-style log2 histograms ([`render_histogram`]):
//!   `     nsecs               : count     distribution` and one
//!   `    low -> high       : count    |*****     |` line per bucket, 40
//!   stars wide, exactly as bcc's `print_log2_hist` prints them;
//! * percentile lines ([`render_percentiles`]);
//! * a scenario kind's own tables ([`render_tables`], kernel mode's pivots):
//!   each titled, aligned, shown instead of the robot's table;
//! * the kernel test robot's comparison table ([`render_table`]): per
//!   metric, each column's mean and `± N%` stddev, the %change against the
//!   first column, and the metric name on the right, with the robot's
//!   column widths. The robot prints only significant rows; we print every
//!   row and mark the change instead: `~` before a change that is within
//!   noise (Welch's t-test, p ≥ 0.05) and `?` before one that could not be
//!   tested (fewer than two runs on a side). A legend line follows the
//!   table when a mark appears. `± N%` is shown when the stddev rounds to at
//!   least 1% of the mean (the robot hides small ones too).
//!
//! Everything returns a `String`; nothing here prints.

use crate::analysis::stats::{self, Significance};
use crate::analysis::table::{self, Cell, ComparisonTable};
use lab::report::{Log2Histogram, MetricSamples, PolicyResult, RunReport, Table};
use std::fmt::Write as _;

/// Width of the star bar in histograms, as in bcc.
pub const STARS: u64 = 40;
/// Width of the first table column (value + stddev), as the robot prints.
const FIRST_COL: usize = 16;
/// Width of every other table column (change + value + stddev).
const OTHER_COL: usize = 27;

/// Label of a unit in histogram headers: `ns` → `nsecs`, `us` → `usecs`,
/// `ms` → `msecs`, anything else as is.
pub fn unit_label(unit: &str) -> &str {
    match unit {
        "ns" => "nsecs",
        "us" | "µs" => "usecs",
        "ms" => "msecs",
        "" => "value",
        u => u,
    }
}

/// Renders a log2 histogram as bcc's funclatency does. Buckets from 0 up
/// to the last non-empty one are printed; an empty histogram renders as
/// the header alone.
pub fn render_histogram(hist: &Log2Histogram, unit: &str) -> String {
    let label = unit_label(unit);
    let last = hist.buckets.iter().rposition(|&c| c > 0);
    let max = hist.buckets.iter().copied().max().unwrap_or(0);
    // bcc widens the columns when the largest bucket's bound needs > 32 bits.
    let wide = last.is_some_and(|l| l + 1 > 32);
    let mut out = String::new();
    if wide {
        let _ = writeln!(out, "               {label:<29} : count     distribution");
    } else {
        let _ = writeln!(out, "     {label:<19} : count     distribution");
    }
    let Some(last) = last else {
        return out;
    };
    for (i, &count) in hist.buckets.iter().enumerate().take(last + 1) {
        let low: u128 = if i == 0 { 0 } else { 1u128 << i };
        let high: u128 = (1u128 << (i + 1)) - 1;
        let bar = "*".repeat(stars(count, max) as usize);
        if wide {
            let _ = writeln!(out, "{low:>20} -> {high:<20} : {count:<8} |{bar:<40}|");
        } else {
            let _ = writeln!(out, "{low:>10} -> {high:<10} : {count:<8} |{bar:<40}|");
        }
    }
    out
}

/// Number of stars for `count` when the tallest bucket holds `max`
/// (`floor(40 · count / max)`, bcc's `_stars`).
pub fn stars(count: u64, max: u64) -> u64 {
    if max == 0 {
        return 0;
    }
    ((STARS as u128 * count as u128) / max as u128).min(STARS as u128) as u64
}

/// Display name of a percentile key: `p50` → `p50`, `p999` → `p99.9`,
/// `p9999` → `p99.99`, `max` → `max`.
pub fn percentile_label(key: &str) -> String {
    match key.strip_prefix('p') {
        Some(d) if d.len() > 2 && d.bytes().all(|b| b.is_ascii_digit()) => {
            format!("p{}.{}", &d[..2], &d[2..])
        }
        _ => key.to_string(),
    }
}

/// One line of percentiles, each the mean over runs, in the order p50,
/// p90, p99, p99.9, max (then others): `p50 = 1023 nsecs, p99 = 4095 nsecs,
/// ...`. `None` when the metric has no percentiles.
pub fn render_percentiles(m: &MetricSamples) -> Option<String> {
    if m.percentiles.is_empty() {
        return None;
    }
    let label = unit_label(&m.unit);
    let mut keys: Vec<&String> = m.percentiles.keys().collect();
    keys.sort_by_key(|k| {
        let order = ["p50", "p90", "p99", "p999", "max"];
        (
            order.iter().position(|o| o == k).unwrap_or(order.len()),
            k.to_string(),
        )
    });
    let parts: Vec<String> = keys
        .iter()
        .map(|k| {
            let v = stats::mean(&m.percentiles[*k]);
            format!("{} = {} {label}", percentile_label(k), human_number(v))
        })
        .collect();
    let runs = m.percentiles.values().map(Vec::len).max().unwrap_or(0);
    let suffix = if runs > 1 {
        format!(" (mean of {runs} runs)")
    } else {
        String::new()
    };
    Some(format!("{}{suffix}", parts.join(", ")))
}

/// A number for prose lines: integers for large values, up to two
/// decimals for small ones.
fn human_number(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Renders a comparison table in the robot's layout (see the module docs).
pub fn render_table(t: &ComparisonTable) -> String {
    let mut out = String::new();
    if t.columns.is_empty() {
        return out;
    }
    // Header: labels, dashes, %stddev/%change captions, the arrows.
    // Labels wider than their column wrap onto more header lines (at
    // spaces, else hard), so nothing is cut off; short labels take one
    // line, as in the robot's tables.
    let widths: Vec<usize> = (0..t.columns.len())
        .map(|i| if i == 0 { FIRST_COL } else { OTHER_COL })
        .collect();
    let wrapped: Vec<Vec<String>> = t
        .columns
        .iter()
        .zip(&widths)
        .map(|(l, w)| wrap(l, *w))
        .collect();
    let label_lines = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    for k in 0..label_lines {
        let mut l = String::new();
        for (i, lines) in wrapped.iter().enumerate() {
            if i > 0 {
                l.push(' ');
            }
            let part = lines.get(k).map(String::as_str).unwrap_or("");
            l.push_str(&crate::render::pad(part, widths[i], false));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    }
    let mut l2 = String::new();
    let mut l3 = String::new();
    let mut l4 = String::new();
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            l2.push(' ');
        }
        l2.push_str(&"-".repeat(*w));
        if i == 0 {
            l3.push_str("         %stddev");
            l4.push_str("             \\  ");
        } else {
            l3.push_str("     %change         %stddev");
            l4.push_str("        |                \\  ");
        }
    }
    for l in [l2, l3, l4] {
        out.push_str(l.trim_end());
        out.push('\n');
    }
    let (mut noise, mut untested) = (false, false);
    for row in &t.rows {
        let mut line = String::new();
        let means: Vec<Option<f64>> = row.cells.iter().map(|c| c.mean).collect();
        let shown = table::robot_numbers(&means);
        for (i, cell) in row.cells.iter().enumerate() {
            if i > 0 {
                line.push(' ');
                let ch = change_field(cell, &mut noise, &mut untested);
                let _ = write!(line, "{ch:>10}");
            }
            let v = &shown[i];
            // The robot's value field is 10 wide in the first column, 11 after.
            let w = if i == 0 { 10 } else { 11 };
            let _ = write!(line, "{v:>w$}{}", stddev_field(cell));
        }
        let _ = write!(line, "  {}", row.metric);
        out.push_str(&line);
        out.push('\n');
    }
    if noise || untested {
        let mut legend = Vec::new();
        if noise {
            legend.push("~ within noise (Welch's t-test, p >= 0.05)");
        }
        if untested {
            legend.push("? not tested (fewer than 2 runs)");
        }
        let _ = writeln!(out, "\n{}", legend.join("; "));
    }
    out
}

/// Splits `label` into lines of at most `width` characters, at spaces
/// where possible. Always at least one line.
fn wrap(label: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in label.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let cur_len = cur.chars().count();
            let need = if cur.is_empty() { 0 } else { 1 };
            if cur_len + need + word.len() <= width {
                if need == 1 {
                    cur.push(' ');
                }
                cur.extend(word.iter());
                break;
            }
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
                continue;
            }
            // A word longer than the column: cut it.
            let rest = word.split_off(width);
            lines.push(word.into_iter().collect());
            word = rest;
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The `± N%` field (6 characters, blank below 1%).
fn stddev_field(cell: &Cell) -> String {
    let pct = cell.pct_stddev.round();
    if cell.mean.is_some() && pct >= 1.0 {
        format!(" ±{:>3}%", pct as u64)
    } else {
        "      ".to_string()
    }
}

/// The change field: `+3.7%`, `-0.5 ` (absolute), with a `~`/`?` mark.
fn change_field(cell: &Cell, noise: &mut bool, untested: &mut bool) -> String {
    let Some(c) = cell.change else {
        return String::new();
    };
    let mark = match c.significance {
        Significance::Significant(_) => "",
        Significance::WithinNoise(_) => {
            *noise = true;
            "~"
        }
        Significance::Untested => {
            *untested = true;
            "?"
        }
    };
    if c.absolute {
        format!("{mark}{:+.1} ", c.value)
    } else {
        format!("{mark}{:+.1}%", c.value)
    }
}

/// The robot table for several `(label, result)` columns (compare output:
/// one column per stored run).
pub fn comparison_table(columns: &[(&str, &PolicyResult)]) -> String {
    render_table(&ComparisonTable::build(columns))
}

/// The robot table of a run: one column per policy, `policy_order` first.
pub fn report_table(report: &RunReport) -> String {
    render_table(&ComparisonTable::for_report(report))
}

/// Histograms (with avg, count and percentile lines) of every latency
/// metric of one policy. For a metric with a histogram, `values` is taken
/// to be each run's average latency, printed as bcc's `avg = ...` line.
pub fn render_policy_histograms(policy: &str, result: &PolicyResult) -> String {
    let mut out = String::new();
    for (name, m) in &result.metrics {
        let Some(h) = &m.histogram else { continue };
        let runs = m.values.len();
        let merged = if runs > 1 {
            format!(" ({runs} runs merged)")
        } else {
            String::new()
        };
        let _ = writeln!(out, "{policy}: {name}{merged}\n");
        out.push_str(&render_histogram(h, &m.unit));
        out.push('\n');
        let label = unit_label(&m.unit);
        if !m.values.is_empty() {
            let _ = writeln!(
                out,
                "avg = {} {label}, count: {}",
                human_number(stats::mean(&m.values)),
                h.count()
            );
        } else {
            let _ = writeln!(out, "count: {}", h.count());
        }
        if let Some(p) = render_percentiles(m) {
            let _ = writeln!(out, "{p}");
        }
        out.push('\n');
    }
    // Percentile lines of metrics without a histogram.
    for (name, m) in &result.metrics {
        if m.histogram.is_none() {
            if let Some(p) = render_percentiles(m) {
                let _ = writeln!(out, "{policy}: {name}: {p}");
            }
        }
    }
    out
}

/// The robot's header block for a run: scenario, mode, runs, seed and the
/// policies, in the layout of its `commit:` section.
pub fn render_report_header(report: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", "=".repeat(89));
    let _ = writeln!(out, "scenario/mode/runs/seed:");
    let mode = match report.mode {
        lab::report::Mode::Sim => "sim",
        lab::report::Mode::Real => "real",
        lab::report::Mode::Kernel => "kernel",
    };
    let _ = writeln!(
        out,
        "  {}/{mode}/{}/{}\n",
        super::escape_text(&report.scenario),
        report.runs,
        report.seed
    );
    if !report.facts.is_empty() {
        let _ = writeln!(out, "run facts:");
        for (k, v) in &report.facts {
            let _ = writeln!(out, "  {k}: {v}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "policy:");
    for (p, _) in table::report_columns(report) {
        let _ = writeln!(out, "  {p}");
    }
    out.push('\n');
    out
}

/// A kind's own tables ([`lab::Spec::tables`]) as text: each one's title,
/// then its cells aligned ([`super::aligned`]), a blank line after.
pub fn render_tables(tables: &[Table]) -> String {
    let mut out = String::new();
    for t in tables {
        out.push_str(&t.title);
        out.push_str(":\n");
        out.push_str(&super::aligned(&t.header, &t.rows));
        out.push('\n');
    }
    out
}

/// Everything a run prints: the header, the comparison table across
/// policies (or the kind's own tables instead, when it makes some of the
/// run: [`lab::Spec::tables`] of the scenario stored with it,
/// [`crate::pipeline::stored_scenario`]) and each policy's latency
/// histograms and percentiles; every name from the run (policies,
/// metrics, units, facts) escaped ([`super::escape_controls`]).
pub fn render_report(report: &RunReport) -> String {
    let mut out = render_report_header(report);
    let tables = crate::pipeline::stored_scenario(report, &report.scenario)
        .map(|sc| sc.tables(report))
        .unwrap_or_default();
    if tables.is_empty() {
        out.push_str(&report_table(report));
    } else {
        out.push_str(&render_tables(&tables));
    }
    for (p, r) in table::report_columns(report) {
        let h = render_policy_histograms(p, r);
        if !h.is_empty() {
            out.push('\n');
            out.push_str(&h);
        }
    }
    super::escape_controls(&out)
}
