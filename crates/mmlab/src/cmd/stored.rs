//! The commands on stored runs: `history`, `show`, `compare`, `tag`,
//! `report` (HTML), `results` (the results tables of `docs/results.md`)
//! and `store merge`, on the `runstore` crate's [`Store`].

use crate::analysis::compare::{compare_stored, distinct_scenarios};
use crate::cli::{CompareArgs, HistoryArgs, MergeArgs, ReportArgs, ResultsArgs, ShowArgs, TagArgs};
use crate::pipeline;
use crate::render::compare::render_comparison;
use crate::render::history::{render_history, render_show};
use crate::render::output::write_output;
use crate::render::{self, html, json};
use anyhow::Result;
use runstore::Store;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// Opens an existing database for the commands that read runs (never
/// creating one).
fn open(db: &Path) -> Result<Store> {
    Ok(Store::open_existing(db)?)
}

/// A stored run's facts as JSON (`history --json`, `show --json`).
fn summary_json(r: &runstore::RunSummary) -> serde_json::Value {
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
            "git_dirty": r.host.git_dirty,
        },
    })
}

/// `mmlab history`.
pub fn cmd_history(a: &HistoryArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let store = open(db)?;
    let runs = store.history(a.scenario.as_deref())?;
    if let Some(p) = &a.json {
        let v: Vec<serde_json::Value> = runs.iter().map(summary_json).collect();
        return json::write_json(p, &serde_json::Value::Array(v), out);
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
        let claims = pipeline::stored_claims_or_warn(std::slice::from_ref(&run));
        let mut v = summary_json(&run.summary);
        v["report"] = json::run_json(&run.report, &claims[0]);
        return json::write_json(p, &v, out);
    }
    write!(out, "{}", render_show(&run))?;
    Ok(())
}

/// `mmlab compare`.
pub fn cmd_compare(a: &CompareArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let store = open(db)?;
    let specs: Vec<&str> = a.runs.iter().map(String::as_str).collect();
    let c = compare_stored(&store, &specs)?;
    let scenarios = distinct_scenarios(&c.runs);
    if scenarios.len() > 1 && !a.force {
        let runs: Vec<String> = c
            .runs
            .iter()
            .map(|r| {
                format!(
                    "{} ({})",
                    render::display_name(&r.label, 40),
                    render::display_name(&r.report.scenario, 40)
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
        let claims: Vec<Vec<lab::report::Claim>> = c
            .runs
            .iter()
            .map(|r| {
                pipeline::stored_claims(&r.report, &r.label).unwrap_or_else(|e| {
                    eprintln!(
                        "mmlab: warning: run {}: no claims: {}",
                        render::display_name(&r.label, 40),
                        render::escape_controls(&format!("{e:#}"))
                    );
                    Vec::new()
                })
            })
            .collect();
        write_output(
            p,
            html::render_compare_html("mmlab compare", &c, &claims).as_bytes(),
            out,
        )?;
        writeln!(out, "HTML written to {}", render::shown(p))?;
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
        render::display_name(&a.name, 80)
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
            let (p, note) = crate::cmd::suite::default_report_path("mmlab-report.html")?;
            if let Some(n) = note {
                eprintln!("mmlab: note: {n}");
            }
            p
        }
    };
    render::output::check_outputs(&[("--html", &path)], db)?;
    write_output(
        &path,
        html::render_stored_html(
            "mmlab report",
            &runs,
            &pipeline::stored_claims_or_warn(&runs),
        )
        .as_bytes(),
        out,
    )?;
    writeln!(
        out,
        "HTML report of {} run(s) written to {}",
        runs.len(),
        render::shown(&path)
    )?;
    Ok(())
}

/// `mmlab results`: the results tables (claims per scenario, with the
/// stored run, its date, commit and host) from the newest stored run of
/// every suite scenario, as Markdown.
pub fn cmd_results(a: &ResultsArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let store = open(db)?;
    let mut rows = Vec::new();
    for name in crate::cmd::suite::SUITE {
        let Some(last) = store.history(Some(name))?.into_iter().last() else {
            continue;
        };
        let run = store.load(last.id)?;
        // The claims of the scenario that ran, read from its stored text.
        match pipeline::stored_claims(&run.report, &format!("#{}", last.id)) {
            Ok(claims) => rows.push((last, claims)),
            Err(e) => eprintln!(
                "mmlab: results: {name}: run #{} left out: {}",
                last.id,
                render::escape_controls(&format!("{e:#}"))
            ),
        }
    }
    let md = render::results::render_results(&rows);
    match &a.markdown {
        Some(p) if !render::output::is_stdout(p) => {
            write_output(p, md.as_bytes(), out)?;
            writeln!(
                out,
                "results of {} scenario(s) written to {}",
                rows.len(),
                render::shown(p)
            )?;
        }
        _ => write!(out, "{md}")?,
    }
    Ok(())
}

/// `mmlab store merge`.
pub fn cmd_store_merge(a: &MergeArgs, out: &mut dyn Write) -> Result<()> {
    let sum = runstore::merge::merge_into(&a.into, &a.sources)?;
    writeln!(
        out,
        "merged {} database(s) into {}: {} runs copied, {} already present",
        a.sources.len(),
        render::shown(&a.into),
        sum.copied,
        sum.present
    )?;
    if !sum.tags_skipped.is_empty() {
        writeln!(
            out,
            "tags not copied (name taken in the target): {}",
            sum.tags_skipped.join(", ")
        )?;
    }
    if sum.points_skipped > 0 {
        writeln!(
            out,
            "{} sweep points not linked (the target holds those jobs already)",
            sum.points_skipped
        )?;
    }
    Ok(())
}
