//! A comparison of stored runs as text: the runs compared (the robot's
//! `commit:` block), one robot table per policy, then the notes.

use crate::analysis::compare::{Comparison, MIXED_SCENARIOS};
use crate::render::{display_name, pad, text};
use runstore::format_utc;
use std::fmt::Write as _;

/// The comparison as text: the runs compared (robot's `commit:` block),
/// then one robot table per policy, then the notes; every stored name
/// escaped ([`super::escape_controls`]).
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    for n in c.notes.iter().filter(|n| n.starts_with(MIXED_SCENARIOS)) {
        let _ = writeln!(
            out,
            "warning: {n}; their figures are not comparable (%change across scenarios means nothing)"
        );
    }
    let _ = writeln!(out, "{}", "=".repeat(89));
    let _ = writeln!(out, "run/scenario/mode/runs/seed:");
    let width = c.runs.iter().map(|r| r.label.len()).max().unwrap_or(0);
    for r in &c.runs {
        let rep = &r.report;
        let mode = match rep.mode {
            lab::report::Mode::Sim => "sim",
            lab::report::Mode::Real => "real",
            lab::report::Mode::Kernel => "kernel",
        };
        let mut line = format!(
            "  {}  {}/{mode}/{}/{}",
            pad(&display_name(&r.label, 40), width.min(40), false),
            display_name(&rep.scenario, 60),
            rep.runs,
            rep.seed
        );
        if let Some(s) = &r.summary {
            let _ = write!(line, "  {} UTC", format_utc(s.started));
            if let Some(commit) = s.host.commit_label() {
                let _ = write!(line, "  {commit}");
            }
        }
        let _ = writeln!(out, "{line}");
    }
    for t in &c.tables {
        let _ = writeln!(out, "\npolicy: {}\n", t.policy);
        out.push_str(&text::render_table(&t.table));
    }
    if c.notes.iter().any(|n| !n.starts_with(MIXED_SCENARIOS)) {
        out.push('\n');
        for n in c.notes.iter().filter(|n| !n.starts_with(MIXED_SCENARIOS)) {
            let _ = writeln!(out, "note: {n}");
        }
    }
    super::escape_controls(&out)
}
