//! The source threads' claims checked on runs, as text: the full table
//! ([`render_claims`]) and the compact two-line form of the suite
//! ([`render_claims_compact`]).

use super::{display_name, pad};
use sim::report::Claim;
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

/// The claims in at most [`COMPACT_WIDTH`] columns, two lines each: the
/// verdict and the claim, then the measured figure beside the published
/// one (each elided with `…` past the width).
pub fn render_claims_compact(claims: &[Claim]) -> String {
    let mut out = String::new();
    for c in claims {
        let first = format!(
            "{} {}",
            pad(c.mark(), 6, false),
            display_name(&c.claim, COMPACT_WIDTH - 7)
        );
        let second = display_name(
            &format!("measured {}   published {}", c.measured, c.published),
            COMPACT_WIDTH - 7,
        );
        out.push_str(first.trim_end());
        out.push_str("\n       ");
        out.push_str(&second);
        out.push('\n');
        if !c.why.is_empty() {
            for line in wrap(&format!("why: {}", c.why), COMPACT_WIDTH - 7) {
                out.push_str("       ");
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// `text` (control characters escaped) in lines of at most `width`
/// characters, broken at spaces (a longer word gets a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in sim::scenario::source::escape(text).split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A run's claims under their heading, as `mmlab run` prints them after
/// the report (nothing when the scenario states none).
pub fn render_run_claims(claims: &[Claim]) -> String {
    if claims.is_empty() {
        return String::new();
    }
    format!("claims of the source threads:\n{}\n", render_claims(claims))
}
