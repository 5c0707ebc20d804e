//! A sweep's trade-off table as text (the HTML plot is in
//! [`super::html::sweep`]).

use crate::analysis::sweep::{column_numbers, pareto_front, SweepRow};
use std::fmt::Write as _;

/// The sweep table: point, seeds, both axes with the seeds' standard
/// deviation, front membership (beyond run-to-run noise, see
/// [`pareto_front`]); every column's numbers formatted alike.
pub fn render_sweep_table(rows: &[SweepRow], ax: &str, ay: &str) -> String {
    let mut out = String::new();
    let front = pareto_front(rows);
    let w = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let col =
        |f: &dyn Fn(&SweepRow) -> f64| column_numbers(&rows.iter().map(f).collect::<Vec<_>>());
    let (xv, xsd) = (col(&|r| r.x), col(&|r| r.x_sd().unwrap_or(f64::NAN)));
    let (yv, ysd) = (col(&|r| r.y), col(&|r| r.y_sd().unwrap_or(f64::NAN)));
    let wx = xv
        .iter()
        .chain([&ax.to_string()])
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(8);
    let wy = yv
        .iter()
        .chain([&ay.to_string()])
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(8);
    let wsx = xsd
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(1)
        .max(4);
    let wsy = ysd
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(1)
        .max(4);
    let _ = writeln!(
        out,
        "{:<w$}  {:>5}  {:>wx$}  {:>wsx$}  {:>wy$}  {:>wsy$}  front",
        "point", "seeds", ax, "± sd", ay, "± sd"
    );
    for (i, r) in rows.iter().enumerate() {
        let mark = match (front.contains(&i), r.preset) {
            (true, true) => "* (preset)",
            (true, false) => "*",
            (false, true) => "  (preset)",
            (false, false) => "",
        };
        let line = format!(
            "{:<w$}  {:>5}  {:>wx$}  {:>wsx$}  {:>wy$}  {:>wsy$}  {mark}",
            r.label,
            r.seeds.len(),
            xv[i],
            xsd[i],
            yv[i],
            ysd[i],
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "* on the front: no other point is better on one axis and not worse on the other \
         beyond the seeds' noise (Welch's test, p < 0.05)"
    );
    out
}
