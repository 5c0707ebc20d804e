//! The default suite: every scenario with the policies that tell its
//! story, then every seed direction in one summary.

use crate::cli::SuiteArgs;
use crate::cmd::run::{execute, load, load_costs, preflight, print_report, write_json};
use crate::cmd::store::{open_for_runs, save_one};
use crate::render::json;
use crate::render::text::render_claims;
use crate::render::{display_name, pad};
use anyhow::Result;
use serde_json::{json, Value};
use sim::report::Claim;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Where the suite writes its HTML report when `--html` is not given.
pub const DEFAULT_HTML_DIR: &str = "out";

/// The suite's scenarios, in order.
pub const SUITE: [&str; 12] = [
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
];

/// The widest line the compact suite output prints.
pub const COMPACT_WIDTH: usize = 100;

/// The seed claims in at most [`COMPACT_WIDTH`] columns, two lines each:
/// the verdict and the claim, then the measured figure beside the seed's
/// (each elided with `…` past the width).
pub fn render_claims_compact(claims: &[Claim]) -> String {
    let mut out = String::new();
    for c in claims {
        let mark = c.mark();
        let first = format!(
            "{} {}",
            pad(mark, 6, false),
            display_name(&c.claim, COMPACT_WIDTH - 7)
        );
        let second = display_name(
            &format!("measured {}   seed {}", c.measured, c.seed),
            COMPACT_WIDTH - 7,
        );
        out.push_str(first.trim_end());
        out.push_str("\n       ");
        out.push_str(&second);
        out.push('\n');
    }
    out
}

/// `mmlab` / `mmlab suite`: every scenario in [`SUITE`], each stored as
/// soon as it finishes (an interrupt keeps the ones that completed), one
/// line each (`-v`: the full tables), then every seed claim.
pub fn cmd_suite(args: &SuiteArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let costs = load_costs(&args.common)?;
    let started = Instant::now();
    let mut reports = Vec::new();
    let mut all_claims: Vec<Claim> = Vec::new();
    let json_to_stdout = args.common.json.as_deref() == Some(Path::new("-"));
    let kernel = crate::cmd::kernel::KERNEL_SUITE;
    for name in &args.only {
        if !SUITE.contains(&name.as_str()) && !kernel.contains(&name.as_str()) {
            anyhow::bail!(
                "--only: `{}` is not a suite scenario (suite: {}, {})",
                display_name(name, 60),
                SUITE.join(", "),
                kernel.join(", ")
            );
        }
    }
    let chosen = |n: &&str| args.only.is_empty() || args.only.iter().any(|o| o == n);
    let kernel_names: Vec<&str> = kernel.into_iter().filter(chosen).collect();
    let mut scenarios = Vec::new();
    for name in SUITE.into_iter().filter(chosen) {
        let mut sc = load(name)?;
        if args.quick {
            sc.shrink_for_smoke_test();
        }
        preflight(&sc, &costs, &args.common)?;
        scenarios.push(sc);
    }
    // The suite always leaves an HTML report (default `out/mmlab-report.html`).
    let mut common = args.common.clone();
    if common.html.is_none() {
        let dir = Path::new(DEFAULT_HTML_DIR);
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        common.html = Some(dir.join("mmlab-report.html"));
    }
    if let Some(p) = &common.html {
        crate::render::output_target(p)?;
    }
    let mut store = open_for_runs(&args.common, db)?;
    if !json_to_stdout && !args.verbose {
        writeln!(
            out,
            "mmlab suite: {} scenarios{}\n(-v prints every table; so does the HTML report)\n",
            scenarios.len() + kernel_names.len(),
            match &store {
                Some(s) => format!(
                    ", each stored in {} as it finishes",
                    display_name(&s.path().display().to_string(), 40)
                ),
                None => String::new(),
            }
        )?;
        writeln!(
            out,
            "  {:<24} {:>7}  {:<9} stored",
            "scenario", "took", "claims"
        )?;
        out.flush()?;
    }
    let mut ids = Vec::new();
    for sc in &scenarios {
        let name = sc.name();
        let t = Instant::now();
        let run_started = std::time::SystemTime::now();
        let report = execute(sc, &costs)?;
        let id = match store.as_mut() {
            Some(st) => Some(save_one(st, &report, run_started)?),
            None => None,
        };
        ids.extend(id);
        let claims = sim::claims(&report, sc);
        if json_to_stdout {
        } else if args.verbose {
            verbose_heading(name, sc, out)?;
            print_report(&report, sc, out)?;
            verbose_footer(name, t.elapsed(), id, out)?;
        } else {
            summary_line(name, t.elapsed(), &claims, id, out)?;
        }
        out.flush()?;
        all_claims.extend(claims);
        reports.push(report);
    }
    let skipped = crate::cmd::kernel::suite_section(
        &kernel_names,
        sim::scenarios::kernel::host_support(),
        args.quick,
        args.verbose,
        &costs,
        json_to_stdout,
        store.as_mut(),
        &mut ids,
        &mut reports,
        &mut all_claims,
        out,
    )?;
    if !json_to_stdout {
        writeln!(out)?;
        writeln!(
            out,
            "summary: {} of {} seed claims hold ([info] lines are references), {:.1} s\n",
            all_claims.iter().filter(|c| c.pass && !c.info).count(),
            all_claims.iter().filter(|c| !c.info).count(),
            started.elapsed().as_secs_f64()
        )?;
        let mut by_scenario: Vec<&str> = Vec::new();
        for c in &all_claims {
            if !by_scenario.contains(&c.scenario.as_str()) {
                by_scenario.push(&c.scenario);
            }
        }
        for s in by_scenario {
            let cs: Vec<Claim> = all_claims
                .iter()
                .filter(|c| c.scenario == s)
                .cloned()
                .collect();
            writeln!(out, "{s}:")?;
            if args.verbose {
                writeln!(out, "{}", render_claims(&cs))?;
            } else {
                writeln!(out, "{}", render_claims_compact(&cs))?;
            }
        }
    }
    if let Some(p) = &args.common.json {
        let v = json!({
            "suite": reports.iter().map(json::report_json).collect::<Vec<Value>>(),
            "checks": all_claims.iter().map(|c| json!({
                "scenario": c.scenario, "claim": c.claim, "measured": c.measured,
                "seed": c.seed, "pass": c.pass, "info": c.info,
            })).collect::<Vec<Value>>(),
            "skipped": skipped.iter().map(|(s, r)| json!({"scenario": s, "reason": r}))
                .collect::<Vec<Value>>(),
        });
        write_json(p, &v, out)?;
    }
    // Already stored scenario by scenario: only the HTML report is left.
    crate::cmd::store::after_run(
        &common,
        None,
        &reports,
        &all_claims,
        started_at(),
        out,
        json_to_stdout,
    )?;
    if !json_to_stdout && !ids.is_empty() {
        let first = ids.first().map(|i| i.to_string()).unwrap_or_default();
        let last = ids.last().map(|i| i.to_string()).unwrap_or_default();
        writeln!(
            out,
            "stored as runs #{first}..#{last} in {} (mmlab history / show / compare)",
            db.display()
        )?;
    }
    Ok(())
}

/// The verbose suite's heading of one scenario: its name, description and
/// what it reproduces.
pub fn verbose_heading(name: &str, sc: &sim::Scenario, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "### {name}: {}", sc.description())?;
    if !sc.reproduces().is_empty() {
        writeln!(out, "### reproduces {}", sc.reproduces())?;
    }
    Ok(())
}

/// The verbose suite's closing line of one scenario: time and stored run.
pub fn verbose_footer(
    name: &str,
    took: std::time::Duration,
    id: Option<crate::store::RunId>,
    out: &mut dyn Write,
) -> Result<()> {
    writeln!(
        out,
        "({name} took {:.1} s{})\n",
        took.as_secs_f64(),
        id.map(|i| format!(", stored as run #{i}"))
            .unwrap_or_default()
    )?;
    Ok(())
}

/// The compact suite's line for one finished scenario: name, time, claims
/// held of those counted, stored run.
pub fn summary_line(
    name: &str,
    took: std::time::Duration,
    claims: &[Claim],
    id: Option<crate::store::RunId>,
    out: &mut dyn Write,
) -> Result<()> {
    let counted: Vec<&Claim> = claims.iter().filter(|c| !c.info).collect();
    let ok = counted.iter().filter(|c| c.pass).count();
    writeln!(
        out,
        "  {:<24} {:>6.1}s  {:<9} {}",
        name,
        took.as_secs_f64(),
        if counted.is_empty() {
            "-".to_string()
        } else {
            format!("{ok}/{} ok", counted.len())
        },
        id.map(|i| format!("#{i}")).unwrap_or_else(|| "-".into())
    )?;
    Ok(())
}

fn started_at() -> std::time::SystemTime {
    std::time::SystemTime::now()
}
