//! The suite's text: its heading, one line per scenario (or the full
//! report under a heading with `-v`), and the closing summary of every
//! claim.

use super::claims::{render_claims, render_claims_compact};
use super::display_name;
use lab::report::Claim;
use runstore::RunId;
use std::fmt::Write as _;
use std::time::Duration;

/// The compact suite's heading: how many scenarios, where they are stored,
/// and the column titles.
pub fn heading(scenarios: usize, store: Option<&std::path::Path>) -> String {
    format!(
        "mmlab suite: {scenarios} scenarios{}\n(-v prints every table; so does the HTML report)\n\n  {:<24} {:>7}  {:<CLAIMS_W$} stored\n",
        match store {
            Some(p) => format!(
                ", each stored in {} as it finishes",
                display_name(&p.display().to_string(), 40)
            ),
            None => String::new(),
        },
        "scenario",
        "took",
        "claims"
    )
}

/// The claims column of a finished scenario: `3/3 ok` when every
/// counted claim holds, else how many miss (`1 MISS of 3`), `-` when it
/// states none.
pub fn claims_cell(claims: &[Claim]) -> String {
    let counted: Vec<&Claim> = claims.iter().filter(|c| !c.info).collect();
    let ok = counted.iter().filter(|c| c.pass).count();
    match (counted.len(), counted.len() - ok) {
        (0, _) => "-".to_string(),
        (n, 0) => format!("{n}/{n} ok"),
        (n, miss) => format!("{miss} MISS of {n}"),
    }
}

/// Width of the compact suite's claims column.
const CLAIMS_W: usize = 13;

/// The compact suite's line for one finished scenario: name, time, claims
/// held of those counted, stored run.
pub fn summary_line(name: &str, took: Duration, claims: &[Claim], id: Option<RunId>) -> String {
    format!(
        "  {:<24} {:>6.1}s  {:<CLAIMS_W$} {}\n",
        display_name(name, 60),
        took.as_secs_f64(),
        claims_cell(claims),
        id.map(|i| format!("#{i}")).unwrap_or_else(|| "-".into())
    )
}

/// The line of a scenario that did not run: `skipped` (this host cannot
/// run it) or `failed`, and why (wrapped, never cut).
pub fn not_run_line(name: &str, what: &str, reason: &str) -> String {
    let mut out = String::new();
    for (i, line) in super::wrap(&format!("{what}: {reason}"), 72)
        .iter()
        .enumerate()
    {
        let lead = if i == 0 {
            format!("  {:<24} ", display_name(name, 60))
        } else {
            " ".repeat(27)
        };
        out.push_str(&lead);
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The verbose suite's heading of one scenario: its name, description and
/// what it reproduces.
pub fn verbose_heading(name: &str, description: &str, reproduces: &str) -> String {
    let mut out = format!("### {name}: {description}\n");
    if !reproduces.is_empty() {
        let _ = writeln!(out, "### reproduces {reproduces}");
    }
    out
}

/// The verbose suite's closing line of one scenario: time and stored run.
pub fn verbose_footer(name: &str, took: Duration, id: Option<RunId>) -> String {
    format!(
        "({name} took {:.1} s{})\n\n",
        took.as_secs_f64(),
        id.map(|i| format!(", stored as run #{i}"))
            .unwrap_or_default()
    )
}

/// The closing summary: how many claims hold, then every scenario's claims
/// (compact, or the full tables with `verbose`).
pub fn summary(claims: &[Claim], took: Duration, verbose: bool) -> String {
    let mut out = format!(
        "\nsummary: {} of {} claims hold ([info] lines are references), {:.1} s\n\n",
        claims.iter().filter(|c| c.pass && !c.info).count(),
        claims.iter().filter(|c| !c.info).count(),
        took.as_secs_f64()
    );
    let mut by_scenario: Vec<&str> = Vec::new();
    for c in claims {
        if !by_scenario.contains(&c.scenario.as_str()) {
            by_scenario.push(&c.scenario);
        }
    }
    for s in by_scenario {
        let cs: Vec<Claim> = claims.iter().filter(|c| c.scenario == s).cloned().collect();
        let _ = writeln!(out, "{s}:");
        if verbose {
            let _ = writeln!(out, "{}", render_claims(&cs));
        } else {
            let _ = writeln!(out, "{}", render_claims_compact(&cs));
        }
    }
    out
}
