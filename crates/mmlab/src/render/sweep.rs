//! A sweep's trade-off table as text (the HTML plot is in
//! [`super::html::sweep`]).

use super::html::sweep::{pareto_front, SweepRow};
use std::fmt::Write as _;

/// The sweep table: point, seeds, both axes, front membership.
pub fn render_sweep_table(rows: &[SweepRow], ax: &str, ay: &str) -> String {
    let mut out = String::new();
    let front = pareto_front(rows);
    let w = rows.iter().map(|r| r.label.len()).max().unwrap_or(5).max(5);
    let _ = writeln!(
        out,
        "{:<w$}  {:>5}  {:>22}  {:>22}  front",
        "point", "seeds", ax, ay
    );
    for (i, r) in rows.iter().enumerate() {
        let mark = match (front.contains(&i), r.preset) {
            (true, true) => "* (preset)",
            (true, false) => "*",
            (false, true) => "  (preset)",
            (false, false) => "",
        };
        let _ = writeln!(
            out,
            "{:<w$}  {:>5}  {:>22}  {:>22}  {mark}",
            r.label,
            r.seeds.len(),
            fmt(r.x),
            fmt(r.y),
        );
    }
    out
}

fn fmt(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v != 0.0 && v.abs() < 0.01 {
        format!("{v:.3e}")
    } else {
        format!("{v:.3}")
    }
}
