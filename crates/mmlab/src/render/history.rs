//! Text for `mmlab history` (a table of stored runs) and `mmlab show RUN`
//! (a stored run's facts followed by its report).

use crate::render::{display_name, text};

/// The most characters of a name (scenario, policies, tags) a history row
/// shows; `mmlab show` shows them whole.
pub const NAME_MAX: usize = 40;
use runstore::{format_utc, RunSummary, StoredRun};
use std::fmt::Write as _;

/// The table of stored runs, one line each, oldest first, with column
/// widths fitted to the content. An empty history says so.
pub fn render_history(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no stored runs\n".to_string();
    }
    let header = [
        "id",
        "started (UTC)",
        "took",
        "scenario",
        "mode",
        "runs",
        "seed",
        "policies",
        "tags",
    ];
    let rows: Vec<[String; 9]> = runs
        .iter()
        .map(|r| {
            [
                r.id.to_string(),
                format_utc(r.started),
                took(r),
                display_name(&r.scenario, NAME_MAX),
                mode(r).to_string(),
                r.runs.to_string(),
                r.seed.to_string(),
                display_name(&r.policies.join(","), NAME_MAX),
                display_name(
                    &r.tags
                        .iter()
                        .map(|t| display_name(t, NAME_MAX))
                        .collect::<Vec<_>>()
                        .join(","),
                    NAME_MAX,
                ),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    // Numbers right-aligned, text left-aligned.
    let right = [true, false, true, false, false, true, true, false, false];
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths[i];
            let _ = write!(l, "{}  ", crate::render::pad(c, w, right[i]));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header.map(str::to_string), &mut out);
    for row in &rows {
        line(row, &mut out);
    }
    out
}

fn mode(r: &RunSummary) -> &'static str {
    match r.mode {
        lab::report::Mode::Sim => "sim",
        lab::report::Mode::Real => "real",
        lab::report::Mode::Kernel => "kernel",
    }
}

fn took(r: &RunSummary) -> String {
    let secs = r
        .ended
        .duration_since(r.started)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:02}s", (secs / 60.0) as u64, secs as u64 % 60)
    }
}

/// The facts of a stored run (id, tags, times, host, build) followed by
/// its full text report (see [`text::render_report`]), every stored field
/// escaped ([`crate::render::escape_controls`]).
pub fn render_show(run: &StoredRun) -> String {
    let s = &run.summary;
    let mut out = String::new();
    let _ = writeln!(out, "run:      {}", s.id);
    if !s.tags.is_empty() {
        let tags: Vec<&str> = s.tags.iter().map(String::as_str).collect();
        let _ = writeln!(out, "tags:     {}", tags.join(", "));
    }
    let _ = writeln!(
        out,
        "started:  {} UTC (took {})",
        format_utc(s.started),
        took(s)
    );
    let _ = writeln!(
        out,
        "host:     {} CPUs, {}, kernel {}",
        s.host.cpus, s.host.cpu_model, s.host.kernel
    );
    let _ = writeln!(
        out,
        "mmlab:    {}{}",
        s.host.mmlab_version,
        s.host
            .commit_label()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    );
    out.push('\n');
    out.push_str(&text::render_report(&run.report));
    crate::render::escape_controls(&out)
}
