//! `mmlab run`: one scenario (a built-in name or a file) with the
//! command-line overrides, through the pipeline; its report and claims
//! printed, its JSON and HTML written.

use crate::cli::RunArgs;
use crate::cmd::Session;
use crate::pipeline::{input, StoreAs};
use crate::render::{self, json};
use anyhow::{bail, Context, Result};
use lab::Overrides;
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

/// The names given more than once, each once, with how many times, in
/// first-seen order.
pub fn repeated(names: &[String]) -> Vec<(&str, usize)> {
    let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut order = Vec::new();
    for n in names {
        let c = counts.entry(n.as_str()).or_insert(0);
        if *c == 0 {
            order.push(n.as_str());
        }
        *c += 1;
    }
    order
        .into_iter()
        .map(|n| (n, counts[n]))
        .filter(|(_, c)| *c > 1)
        .collect()
}

/// `mmlab run`.
pub fn cmd_run(args: &RunArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let mut sc = input::load(&args.scenario)?;
    if let Some(path) = &args.reproducer {
        let Some(script) = sc.reproducer() else {
            bail!(
                "`{}` has no reproducer (stale-read-kernel has one)",
                sc.name()
            );
        };
        render::output::write_output(path, script.as_bytes(), out)?;
        if !render::output::is_stdout(path) {
            // The command as one can paste it; a name that cannot be
            // printed as it is is only shown, escaped.
            match crate::cmd::path_word(path) {
                Ok(word) => writeln!(out, "wrote {word}; run it as root: sh {word}")?,
                Err(_) => writeln!(
                    out,
                    "wrote {}; run it as root with sh",
                    render::escape_text(&path.display().to_string())
                )?,
            }
        }
        return Ok(());
    }
    let mut o = overrides(args);
    for (p, n) in repeated(&o.policies) {
        eprintln!(
            "mmlab: note: policy `{}` given {n} times; it runs once",
            render::display_name(p, 80)
        );
    }
    o.policies = input::policy_files(&mut sc, &o.policies)?;
    sc.apply(&o);
    sc.check_policies()
        .map_err(|m| anyhow::anyhow!("scenario `{}`: {m}", sc.name()))?;
    if args.compare_sim && !sc.has_simulated_twin() {
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
    if args.estimate {
        let mut pipeline =
            crate::pipeline::Pipeline::new(input::load_costs(args.common.costs.as_deref())?);
        pipeline.costs_path = args.common.costs.clone();
        pipeline.limits = args.common.limits();
        let (est, wall) = pipeline.estimate(&sc);
        let rates = pipeline.rates().clone();
        writeln!(
            out,
            "{}: {}\n  {est}\n  estimated wall time: {wall:.2} s (speed now: {:.3e} loop \
             iterations per second, {:.0}% of a CPU)\n  {}",
            render::display_name(sc.name(), 60),
            est.time_words(&rates),
            rates.speed,
            rates.cpu_share * 100.0,
            match est.exceeds(&pipeline.limits, &rates) {
                Some(why) => format!("over the limits: it {why}"),
                None => "within the limits".to_string(),
            }
        )?;
        return Ok(());
    }
    let mut session = Session::open(&args.common, db)?;
    session.pipeline.check(&sc)?;
    session.open_store(&args.common, db)?;
    let outcome = session.pipeline.run(&sc, StoreAs::Run)?;
    let json_to_stdout = crate::cmd::output_on_stdout(&args.common);
    if !json_to_stdout {
        writeln!(out, "{}", render::text::render_report(&outcome.report))?;
        crate::cmd::warn_truncated(&outcome.report);
        write!(
            out,
            "{}",
            render::claims::render_run_claims(&outcome.claims)
        )?;
        let twin = if args.compare_sim {
            sc.compare_with_simulation(&outcome.report, &session.run_options())
        } else {
            None
        };
        if let Some(sbs) = twin {
            let sbs = sbs.with_context(|| format!("simulating the shapes of `{}`", sc.name()))?;
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
