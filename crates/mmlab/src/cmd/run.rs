//! `mmlab run`: one scenario (a built-in name or a file) with the
//! command-line overrides, through the pipeline; its report and claims
//! printed, its JSON and HTML written.

use crate::cli::RunArgs;
use crate::cmd::Session;
use crate::pipeline::{input, StoreAs};
use crate::render::{self, json};
use anyhow::{bail, Result};
use kernelmode::KernelScenario;
use sim::scenario::Overrides;
use std::io::Write;
use std::path::Path;

/// The command-line overrides of `mmlab run`.
pub fn overrides(args: &RunArgs) -> Overrides {
    Overrides {
        policies: args.policies.clone(),
        runs: args.runs,
        seed: args.seed,
        duration_ms: args.duration_ms,
    }
}

/// `mmlab run`.
pub fn cmd_run(args: &RunArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let mut sc = input::load(&args.scenario)?;
    if let Some(path) = &args.reproducer {
        let Some(script) = sc
            .spec_as::<KernelScenario>()
            .and_then(kernelmode::reproducer::script)
        else {
            bail!(
                "`{}` has no reproducer (stale-read-kernel has one)",
                sc.name()
            );
        };
        render::write_atomic(path, script.as_bytes())?;
        writeln!(out, "wrote {0}; run it as root: sh {0}", path.display())?;
        return Ok(());
    }
    let mut o = overrides(args);
    for (i, p) in o.policies.iter().enumerate() {
        if o.policies[..i].contains(p) {
            eprintln!("mmlab: note: policy `{p}` given twice; it runs once");
        }
    }
    o.policies = input::policy_files(&mut sc, &o.policies)?;
    sc.apply(&o);
    sc.check_policies()
        .map_err(|m| anyhow::anyhow!("scenario `{}`: {m}", sc.name()))?;
    if args.compare_sim && sc.spec_as::<KernelScenario>().is_none() {
        bail!(
            "--compare-sim compares a kernel scenario (mode = \"kernel\") with its simulation; `{}` is not one",
            sc.name()
        );
    }
    if args.quick {
        sc.shrink_for_smoke_test();
    }
    if let Err(why) = sc.availability() {
        bail!("scenario `{}` cannot run on this host: {why}", sc.name());
    }
    let mut session = Session::open(&args.common)?;
    session.pipeline.check(&sc)?;
    session.open_store(&args.common, db)?;
    let outcome = session.pipeline.run(&sc, StoreAs::Run)?;
    let json_to_stdout = args.common.json.as_deref() == Some(Path::new("-"));
    if !json_to_stdout {
        writeln!(out, "{}", render::text::render_report(&outcome.report))?;
        crate::cmd::warn_truncated(&outcome.report);
        write!(
            out,
            "{}",
            render::claims::render_run_claims(&outcome.claims)
        )?;
        if let (true, Some(k)) = (args.compare_sim, sc.spec_as::<KernelScenario>()) {
            let facts = kernelmode::host()
                .map_err(|why| anyhow::anyhow!("kernel mode: {why}"))?
                .facts();
            let sbs = kernelmode::side_by_side(
                k,
                sc.seed(),
                &outcome.report,
                facts,
                &session.run_options(),
            )
            .map_err(|e| anyhow::anyhow!("simulating the shapes of `{}`: {e}", sc.name()))?;
            writeln!(out, "{}", render::side_by_side::render_side_by_side(&sbs))?;
        }
    }
    if let Some(p) = &args.common.json {
        json::write_json(p, &json::run_json(&outcome.report, &outcome.claims), out)?;
    }
    session.finish(
        std::slice::from_ref(&outcome),
        &format!("mmlab run: {}", outcome.report.scenario),
        out,
        json_to_stdout,
    )
}
