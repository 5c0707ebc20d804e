//! The default suite: every scenario with the policies that tell its
//! story, the kernel ones included where this host can run them, each
//! through the one pipeline and stored as it finishes; then every claim in
//! one summary.

use crate::cli::SuiteArgs;
use crate::cmd::Session;
use crate::pipeline::{input, Outcome, StoreAs};
use crate::render::{self, display_name, json, suite};
use anyhow::Result;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where the suite writes its HTML report when `--html` is not given.
pub const DEFAULT_HTML_DIR: &str = "out";

/// The file an HTML report goes to when no `--html` is given:
/// `out/NAME`, the folder created if needed. When `out` exists and is not
/// a folder (a user's `mmlab > out` creates that file before mmlab
/// starts), the report goes to `NAME` in the working directory instead,
/// and the second value says so.
///
/// # Errors
/// The folder cannot be created.
pub fn default_report_path(name: &str) -> Result<(PathBuf, Option<String>)> {
    let dir = Path::new(DEFAULT_HTML_DIR);
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            let note = format!(
                "{DEFAULT_HTML_DIR} is a file, not a folder (a redirect of the output?): the \
                 HTML report goes to {name} instead"
            );
            return Ok((PathBuf::from(name), Some(note)));
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?,
    }
    Ok((dir.join(name), None))
}

/// The suite's scenarios, in order (the kernel ones last: they run where
/// the host allows kernel mode and are skipped, with the reason, elsewhere).
pub const SUITE: [&str; 19] = [
    "update-path",
    "update-path-sim",
    "stat-readers",
    "stat-readers-real",
    "stale-read",
    "stale-read-real",
    "false-sharing",
    "numa01",
    "numa01-thread-alloc",
    "numa01-thread-alloc-64",
    "numa02",
    "refault-storm",
    "page-fault1",
    "page-fault2",
    "page-fault3",
    "netperf",
    "update-path-kernel",
    "stat-readers-kernel",
    "stale-read-kernel",
];

/// `mmlab` / `mmlab suite`: every scenario in [`SUITE`] (or `--only`),
/// each estimated before any runs, run with progress and stored as soon as
/// it finishes (an interrupt keeps the ones that completed), one line each
/// (`-v`: the full tables), then every claim. A scenario this host cannot
/// run is skipped with the reason; one that fails is reported and the
/// suite goes on (and ends with an error).
pub fn cmd_suite(args: &SuiteArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let started = Instant::now();
    for name in &args.only {
        if !SUITE.contains(&name.as_str()) {
            anyhow::bail!(
                "--only: `{}` is not a suite scenario (suite: {})",
                display_name(name, 60),
                SUITE.join(", ")
            );
        }
    }
    let chosen = |n: &&str| args.only.is_empty() || args.only.iter().any(|o| o == n);
    // The suite always leaves an HTML report (default
    // `out/mmlab-report.html`; a quick run's has its own name, so it never
    // replaces the full suite's).
    let mut common = args.common.clone();
    if common.html.is_none() {
        let name = if args.quick {
            "mmlab-report-quick.html"
        } else {
            "mmlab-report.html"
        };
        let (path, note) = default_report_path(name)?;
        if let Some(n) = note {
            eprintln!("mmlab: note: {n}");
        }
        common.html = Some(path);
    }
    let mut session = Session::open(&common, db)?;
    // Every scenario read and estimated before the first one runs.
    let mut scenarios = Vec::new();
    for name in SUITE.into_iter().filter(chosen) {
        let mut sc = input::load(name)?;
        if args.quick {
            sc.shrink_for_smoke_test();
        }
        let available = sc.availability();
        if available.is_ok() {
            session.pipeline.check(&sc)?;
        }
        scenarios.push((sc, available));
    }
    session.open_store(&common, db)?;
    let json_to_stdout = crate::cmd::output_on_stdout(&common);
    let show = !json_to_stdout;
    if show && !args.verbose {
        let store = session.pipeline.store.as_ref().map(|s| s.path());
        write!(out, "{}", suite::heading(scenarios.len(), store))?;
        out.flush()?;
    }
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut not_run: Vec<(String, String)> = Vec::new();
    let mut failed = 0;
    for (sc, available) in &scenarios {
        let name = sc.name();
        if let Err(reason) = available {
            if show {
                write!(out, "{}", suite::not_run_line(name, "skipped", reason))?;
            }
            not_run.push((name.to_string(), reason.clone()));
            continue;
        }
        let o = match session.pipeline.run(sc, StoreAs::Run) {
            Ok(o) => o,
            Err(e) if crate::cmd::is_interrupted(&e) => return Err(e),
            Err(e) => {
                let reason = format!("{e:#}");
                if show {
                    write!(out, "{}", suite::not_run_line(name, "failed", &reason))?;
                }
                not_run.push((name.to_string(), reason));
                failed += 1;
                continue;
            }
        };
        if !show {
        } else if args.verbose {
            write!(
                out,
                "{}",
                suite::verbose_heading(name, sc.description(), sc.reproduces())
            )?;
            writeln!(out, "{}", render::text::render_report(&o.report))?;
            crate::cmd::warn_truncated(&o.report);
            write!(out, "{}", render::claims::render_run_claims(&o.claims))?;
            if let Some(sbs) = sc.compare_with_simulation(&o.report, &session.run_options()) {
                writeln!(out, "{}", render::side_by_side::render_side_by_side(&sbs?))?;
            }
            write!(out, "{}", suite::verbose_footer(name, o.took, o.id))?;
        } else {
            write!(
                out,
                "{}",
                suite::summary_line(name, o.took, &o.claims, o.id)
            )?;
        }
        out.flush()?;
        outcomes.push(o);
    }
    let all_claims: Vec<_> = outcomes.iter().flat_map(|o| o.claims.clone()).collect();
    if show {
        write!(
            out,
            "{}",
            suite::summary(&all_claims, started.elapsed(), args.verbose)
        )?;
    }
    if let Some(p) = &args.common.json {
        let runs: Vec<_> = outcomes
            .iter()
            .map(|o| (&o.report, o.claims.as_slice()))
            .collect();
        json::write_json(p, &json::suite_json(&runs, &not_run), out)?;
    }
    // Already stored scenario by scenario: only the HTML report is left.
    session.finish(&outcomes, "mmlab suite", out, true)?;
    if let Some(p) = session
        .html
        .as_ref()
        .filter(|p| show && !render::output::is_stdout(p))
    {
        writeln!(out, "HTML report written to {}", render::shown(p))?;
    }
    let ids: Vec<_> = outcomes.iter().filter_map(|o| o.id).collect();
    if let (true, Some(first), Some(last)) = (show, ids.first(), ids.last()) {
        writeln!(
            out,
            "stored as runs #{first}..#{last} in {} (mmlab history / show / compare)",
            render::shown(db)
        )?;
    }
    if failed > 0 {
        anyhow::bail!("{failed} scenario(s) of the suite failed (see above)");
    }
    Ok(())
}
