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

fn open(db: &Path) -> Result<Store> {
    Store::open(db).with_context(|| format!("opening results database {}", db.display()))
}

/// Stores `reports` (unless `--no-store`) and writes `--html`; prints the
/// stored ids.
pub fn after_run(
    common: &CommonRunArgs,
    reports: &[RunReport],
    started: SystemTime,
    out: &mut dyn Write,
    quiet: bool,
) -> Result<Vec<RunId>> {
    if let Some(p) = &common.html {
        write_atomic(p, html::render_html(reports).as_bytes())?;
        if !quiet {
            writeln!(out, "HTML report written to {}", p.display())?;
        }
    }
    let mut ids = Vec::new();
    if common.no_store {
        return Ok(ids);
    }
    let mut store = open(&common.db)?;
    let host = HostFacts::detect(env!("CARGO_PKG_VERSION"), None);
    let ended = SystemTime::now();
    for r in reports {
        let id = store
            .save(r, &host, started, ended)
            .with_context(|| format!("storing the run of {}", r.scenario))?;
        ids.push(id);
    }
    if !quiet && !ids.is_empty() {
        let list: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
        writeln!(
            out,
            "stored as run {} in {} (mmlab show / compare / history)",
            list.join(", "),
            common.db.display()
        )?;
    }
    Ok(ids)
}

/// `mmlab history`.
pub fn cmd_history(a: &HistoryArgs, out: &mut dyn Write) -> Result<()> {
    let store = open(&a.db.db)?;
    let runs = store.history(a.scenario.as_deref())?;
    write!(out, "{}", render_history(&runs))?;
    Ok(())
}

/// `mmlab show`.
pub fn cmd_show(a: &ShowArgs, out: &mut dyn Write) -> Result<()> {
    let store = open(&a.db.db)?;
    let id = store.resolve(&a.run)?;
    let run = store.load(id)?;
    write!(out, "{}", render_show(&run))?;
    Ok(())
}

/// `mmlab compare`.
pub fn cmd_compare(a: &CompareArgs, out: &mut dyn Write) -> Result<()> {
    let store = open(&a.db.db)?;
    let specs: Vec<&str> = a.runs.iter().map(String::as_str).collect();
    let c = compare_stored(&store, &specs)?;
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
pub fn cmd_tag(a: &TagArgs, out: &mut dyn Write) -> Result<()> {
    let mut store = open(&a.db.db)?;
    let id = store.resolve(&a.run)?;
    store.tag(id, &a.name)?;
    writeln!(out, "run #{id} tagged {}", a.name)?;
    Ok(())
}

/// `mmlab report`.
pub fn cmd_report(a: &ReportArgs, out: &mut dyn Write) -> Result<()> {
    let store = open(&a.db.db)?;
    let mut runs = Vec::new();
    for spec in &a.runs {
        let id = store.resolve(spec)?;
        runs.push(store.load(id)?);
    }
    write_atomic(
        &a.html,
        html::render_stored_html("mmlab report", &runs).as_bytes(),
    )?;
    writeln!(
        out,
        "HTML report of {} run(s) written to {}",
        runs.len(),
        a.html.display()
    )?;
    Ok(())
}
