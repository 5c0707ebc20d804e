//! The source threads' claims checked on runs, as text: the full table
//! ([`render_claims`]) and the compact two-line form of the suite
//! ([`render_claims_compact`]).

use super::{pad, wrap};
use lab::report::Claim;
use std::fmt::Write as _;

/// The widest line the compact form prints.
pub const COMPACT_WIDTH: usize = 100;

/// The claims as a table: `[ok]`, `[MISS]` or `[info]`, the claim, the
/// measured figure and the published one.
pub fn render_claims(claims: &[Claim]) -> String {
    let mut out = String::new();
    if claims.is_empty() {
        return out;
    }
    let w = claims
        .iter()
        .map(|c| c.claim.chars().count())
        .max()
        .unwrap_or(0)
        .min(80);
    let wm = claims
        .iter()
        .map(|c| c.measured.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "{:<6} {:<w$}  {:<wm$}  published",
        "", "claim", "measured"
    );
    for c in claims {
        let mark = c.mark();
        let _ = writeln!(
            out,
            "{mark:<6} {:<w$}  {:<wm$}  {}",
            c.claim, c.measured, c.published
        );
        if !c.why.is_empty() {
            let _ = writeln!(out, "{:<6} why: {}", "", c.why);
        }
    }
    out
}

/// The claims in at most [`COMPACT_WIDTH`] columns: the verdict and the
/// claim, then the measured figure beside the published one, each wrapped
/// onto as many indented lines as it needs (nothing is cut: a MISS's
/// explanation is read whole).
pub fn render_claims_compact(claims: &[Claim]) -> String {
    let mut out = String::new();
    let indent = " ".repeat(7);
    for c in claims {
        for (i, line) in wrap(&c.claim, COMPACT_WIDTH - 7).iter().enumerate() {
            let lead = if i == 0 {
                pad(c.mark(), 7, false)
            } else {
                indent.clone()
            };
            out.push_str((lead + line).trim_end());
            out.push('\n');
        }
        let figures = format!("measured {}   published {}", c.measured, c.published);
        let why = (!c.why.is_empty()).then(|| format!("why: {}", c.why));
        for text in std::iter::once(&figures).chain(why.as_ref()) {
            for line in wrap(text, COMPACT_WIDTH - 7) {
                out.push_str(&indent);
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// A run's claims under their heading, as `mmlab run` prints them after
/// the report (nothing when the scenario states none).
pub fn render_run_claims(claims: &[Claim]) -> String {
    if claims.is_empty() {
        return String::new();
    }
    format!("claims of the source threads:\n{}\n", render_claims(claims))
}
