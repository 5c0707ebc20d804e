//! The default suite: every scenario with the policies that tell its
//! story, then every seed direction in one summary.

use crate::cli::SuiteArgs;
use crate::cmd::run::{execute, load, load_costs, print_report, write_json};
use crate::render::json;
use crate::render::text::render_claims;
use anyhow::Result;
use serde_json::{json, Value};
use sim::report::Claim;
use std::io::Write;
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

/// `mmlab` / `mmlab suite`.
pub fn cmd_suite(args: &SuiteArgs, out: &mut dyn Write) -> Result<()> {
    let costs = load_costs(&args.common)?;
    let started = Instant::now();
    let started_at = std::time::SystemTime::now();
    let mut reports = Vec::new();
    let mut all_claims: Vec<Claim> = Vec::new();
    let json_to_stdout = args.common.json.as_deref() == Some(std::path::Path::new("-"));
    for name in SUITE {
        let mut sc = load(name)?;
        if args.quick {
            sc.shrink_for_smoke_test();
        }
        let t = Instant::now();
        let report = execute(&sc, &costs)?;
        if !json_to_stdout {
            writeln!(out, "### {name}: {}", sc.description())?;
            if !sc.reproduces().is_empty() {
                writeln!(out, "### reproduces {}", sc.reproduces())?;
            }
            print_report(&report, &sc, out)?;
            writeln!(out, "({name} took {:.1} s)\n", t.elapsed().as_secs_f64())?;
        }
        all_claims.extend(sim::claims(&report, &sc));
        reports.push(report);
    }
    let skipped = crate::cmd::kernel::suite_section(
        sim::scenarios::kernel::host_support(),
        args.quick,
        &costs,
        json_to_stdout,
        &mut reports,
        &mut all_claims,
        out,
    )?;
    if !json_to_stdout {
        writeln!(out, "{}", "=".repeat(89))?;
        writeln!(
            out,
            "summary: the seeds' directions, measured side by side ({} of {} shown, {:.1} s)\n",
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
            writeln!(out, "{}", render_claims(&cs))?;
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
    // The suite always leaves an HTML report (default `out/mmlab-report.html`).
    let mut common = args.common.clone();
    if common.html.is_none() {
        let dir = std::path::Path::new(DEFAULT_HTML_DIR);
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        common.html = Some(dir.join("mmlab-report.html"));
    }
    crate::cmd::store::after_run(&common, &reports, started_at, out, json_to_stdout)?;
    Ok(())
}
