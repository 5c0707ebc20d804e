//! The results-store commands (`history`, `show`, `compare`, `tag`,
//! `report`) and the saving of runs, on the reports engineer's
//! [`crate::store`], [`crate::analysis::compare`], [`crate::render::history`] and
//! [`crate::render::html`].

use crate::analysis::compare::{compare_stored, render_comparison};
use crate::cli::{CommonRunArgs, CompareArgs, HistoryArgs, ReportArgs, ShowArgs, TagArgs};
use crate::render::history::{render_history, render_show};
use crate::render::html;
use crate::render::write_atomic;
use crate::store::{HostFacts, RunId, Store};
use anyhow::{Context, Result};
use sim::report::RunReport;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// Opens an existing database for the commands that read runs (never
/// creating one).
fn open(db: &Path) -> Result<Store> {
    Ok(Store::open_existing(db)?)
}

/// Opens (creating) the database runs are stored in, before any work, so
/// that a bad path, a foreign file or a busy database is reported at once;
/// `None` with `--no-store`.
///
/// # Errors
/// The database cannot be opened, is not mmlab's, or is busy.
pub fn open_for_runs(common: &CommonRunArgs, db: &Path) -> Result<Option<Store>> {
    if common.no_store {
        return Ok(None);
    }
    Ok(Some(Store::open(db)?))
}

/// Stores one report, waiting (and saying so on stderr) when another
/// process holds the database's write lock.
///
/// # Errors
/// The save fails, or the lock is not released within
/// [`crate::store::BUSY_TIMEOUT`].
pub fn save_one(store: &mut Store, r: &RunReport, started: SystemTime) -> Result<RunId> {
    let host = HostFacts::detect(env!("CARGO_PKG_VERSION"), None);
    let ended = SystemTime::now();
    store.set_busy_timeout(std::time::Duration::from_millis(200))?;
    let first = store.save(r, &host, started, ended);
    let res = match first {
        Err(crate::store::StoreError::Busy { .. }) => {
            eprintln!(
                "mmlab: {} is busy (another process is writing); waiting up to {} s to store the run",
                store.path().display(),
                crate::store::BUSY_TIMEOUT.as_secs()
            );
            store.set_busy_timeout(crate::store::BUSY_TIMEOUT)?;
            store.save(r, &host, started, ended)
        }
        other => other,
    };
    res.with_context(|| format!("storing the run of {}", r.scenario))
}

/// Stores `reports` (unless `--no-store`) and writes `--html`; prints the
/// stored ids.
pub fn after_run(
    common: &CommonRunArgs,
    store: Option<&mut Store>,
    reports: &[RunReport],
    claims: &[sim::report::Claim],
    started: SystemTime,
    out: &mut dyn Write,
    quiet: bool,
) -> Result<Vec<RunId>> {
    if let Some(p) = &common.html {
        let host = HostFacts::detect(env!("CARGO_PKG_VERSION"), None);
        let title = if reports.len() == 1 {
            format!("mmlab run: {}", reports[0].scenario)
        } else {
            "mmlab suite".to_string()
        };
        write_atomic(
            p,
            html::render_html_checked(&title, reports, claims, Some(&host)).as_bytes(),
        )?;
        if !quiet {
            writeln!(out, "HTML report written to {}", p.display())?;
        }
    }
    let mut ids = Vec::new();
    let Some(store) = store else {
        return Ok(ids);
    };
    for r in reports {
        ids.push(save_one(store, r, started)?);
    }
    if !quiet && !ids.is_empty() {
        let list: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
        writeln!(
            out,
            "stored as run {} in {} (mmlab show / compare / history)",
            list.join(", "),
            store.path().display()
        )?;
    }
    Ok(ids)
}

/// A stored run's facts as JSON (`history --json`, `show --json`).
fn summary_json(r: &crate::store::RunSummary) -> serde_json::Value {
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    };
    serde_json::json!({
        "id": r.id.0,
        "scenario": r.scenario,
        "mode": r.mode.as_str(),
        "runs": r.runs,
        "seed": r.seed,
        "policies": r.policies,
        "tags": r.tags,
        "started_unix_s": secs(r.started),
        "ended_unix_s": secs(r.ended),
        "host": {
            "cpus": r.host.cpus,
            "cpu_model": r.host.cpu_model,
            "kernel": r.host.kernel,
            "mmlab_version": r.host.mmlab_version,
            "git_commit": r.host.git_commit,
        },
    })
}

/// `mmlab history`.
pub fn cmd_history(a: &HistoryArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let store = open(db)?;
    let runs = store.history(a.scenario.as_deref())?;
    if let Some(p) = &a.json {
        let v: Vec<serde_json::Value> = runs.iter().map(summary_json).collect();
        return crate::cmd::run::write_json(p, &serde_json::Value::Array(v), out);
    }
    write!(out, "{}", render_history(&runs))?;
    Ok(())
}

/// `mmlab show`.
pub fn cmd_show(a: &ShowArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let store = open(db)?;
    let id = store.resolve(&a.run)?;
    let run = store.load(id)?;
    if let Some(p) = &a.json {
        let mut v = summary_json(&run.summary);
        v["report"] = crate::render::json::report_json(&run.report);
        return crate::cmd::run::write_json(p, &v, out);
    }
    write!(out, "{}", render_show(&run))?;
    Ok(())
}

/// `mmlab compare`.
pub fn cmd_compare(a: &CompareArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let store = open(db)?;
    let specs: Vec<&str> = a.runs.iter().map(String::as_str).collect();
    let c = compare_stored(&store, &specs)?;
    let scenarios = crate::analysis::compare::distinct_scenarios(&c.runs);
    if scenarios.len() > 1 && !a.force {
        let runs: Vec<String> = c
            .runs
            .iter()
            .map(|r| {
                format!(
                    "{} ({})",
                    crate::render::display_name(&r.label, 40),
                    crate::render::display_name(&r.report.scenario, 40)
                )
            })
            .collect();
        anyhow::bail!(
            "the runs are of different scenarios: {}; their figures are not comparable \
             (pass --force to compare them anyway)",
            runs.join(", ")
        );
    }
    write!(out, "{}", render_comparison(&c))?;
    if let Some(p) = &a.html {
        write_atomic(
            p,
            html::render_html_with("mmlab compare", &[], &[c]).as_bytes(),
        )?;
        writeln!(out, "HTML written to {}", p.display())?;
    }
    Ok(())
}

/// `mmlab tag`.
pub fn cmd_tag(a: &TagArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let mut store = open(db)?;
    let id = store.resolve(&a.run)?;
    store.tag(id, &a.name)?;
    writeln!(
        out,
        "run #{id} tagged {}",
        crate::render::display_name(&a.name, 80)
    )?;
    Ok(())
}

/// `mmlab report`.
pub fn cmd_report(a: &ReportArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let store = open(db)?;
    let mut runs = Vec::new();
    for spec in &a.runs {
        let id = store.resolve(spec)?;
        runs.push(store.load(id)?);
    }
    let path = match &a.html {
        Some(p) => p.clone(),
        None => {
            let dir = Path::new(crate::cmd::suite::DEFAULT_HTML_DIR);
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir.join("mmlab-report.html")
        }
    };
    write_atomic(
        &path,
        html::render_stored_html("mmlab report", &runs).as_bytes(),
    )?;
    writeln!(
        out,
        "HTML report of {} run(s) written to {}",
        runs.len(),
        path.display()
    )?;
    Ok(())
}
