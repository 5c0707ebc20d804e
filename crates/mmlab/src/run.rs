//! `mmlab run`: load a scenario (built-in or file), apply the command-line
//! overrides, dispatch it to its runner, print the report, write JSON.

use crate::cli::{CommonRunArgs, RunArgs};
use crate::directions;
use crate::json;
use crate::text;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::cost::CostModel;
use sim::report::RunReport;
use sim::scenario::{Kind, Scenario, BUILTIN};
use sim::scenarios::{run_scenario, Progress, RunOptions};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// A scenario with the text and file name it came from (runners of other
/// kinds parse their own tables from the text).
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The parsed scenario (with command-line overrides applied).
    pub scenario: Scenario,
    /// File name for messages (`<builtin NAME>` for embedded ones).
    pub file: String,
    /// The TOML text.
    pub text: String,
}

/// Loads a built-in scenario by name, or a TOML file by path.
pub fn load_scenario(spec: &str) -> Result<Scenario> {
    Ok(load(spec)?.scenario)
}

/// Loads a built-in scenario by name, or a TOML file by path, with its text.
pub fn load(spec: &str) -> Result<Loaded> {
    if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == spec) {
        let file = format!("<builtin {name}>");
        let scenario = Scenario::parse(&file, text)?;
        return Ok(Loaded {
            scenario,
            file,
            text: text.to_string(),
        });
    }
    let path = Path::new(spec);
    if !path.exists() {
        let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
        bail!(
            "no built-in scenario or file named `{spec}` (built-in: {})",
            names.join(", ")
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading scenario file {}", path.display()))?;
    let file = path.display().to_string();
    let scenario = Scenario::parse(&file, &text)?;
    Ok(Loaded {
        scenario,
        file,
        text,
    })
}

/// The cost model: the file given, or the shipped defaults.
pub fn load_costs(common: &CommonRunArgs) -> Result<CostModel> {
    match &common.costs {
        None => Ok(CostModel::defaults()),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading cost file {}", p.display()))?;
            CostModel::from_toml(&text).with_context(|| format!("cost file {}", p.display()))
        }
    }
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn progress_bar(label: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(0),
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    pb.set_style(
        ProgressStyle::with_template("{prefix:>18} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(label.to_string());
    pb
}

/// Runs a loaded scenario with a progress bar; dispatches on its kind:
/// `stats` to the sim crate's scenarios, `numab` to the `numab` crate,
/// `refault` to `sim::refault`.
pub fn execute(l: &Loaded, costs: &CostModel) -> Result<RunReport> {
    let sc = &l.scenario;
    let pb = progress_bar(&sc.name);
    let opts = RunOptions { costs: *costs };
    let mut cb = |p: Progress| match p {
        Progress::Total(n) => pb.set_length(n),
        Progress::Step(s) => {
            pb.set_message(s);
            pb.inc(1);
        }
    };
    let ctx = || format!("running scenario `{}`", sc.name);
    let report = match sc.kind {
        Kind::Stats => run_scenario(sc, &opts, &mut cb).with_context(ctx)?,
        Kind::Numab => {
            let file =
                numab::parse_scenario(&l.text).map_err(|e| anyhow::anyhow!("{}: {e}", l.file))?;
            let policies =
                sim::scenarios::numab::run(&file, &sc.policies, sc.runs, sc.seed, &mut cb)
                    .with_context(ctx)?;
            RunReport::new(sc, l.text.clone(), policies)
        }
        Kind::Refault => {
            let r = sim::refault::RefaultScenario::parse(&l.file, &l.text)?;
            let policies =
                sim::refault::run(&r.refault, &sc.policies, sc.runs, sc.seed, &opts, &mut cb)
                    .with_context(ctx)?;
            RunReport::new(sc, l.text.clone(), policies)
        }
    };
    pb.finish_and_clear();
    Ok(report)
}

/// Applies the command-line overrides to a scenario.
pub fn apply_overrides(sc: &mut Scenario, args: &RunArgs) {
    if !args.policies.is_empty() {
        sc.policies = args.policies.clone();
    }
    if let Some(r) = args.runs {
        sc.runs = r;
    }
    if let Some(s) = args.seed {
        sc.seed = s;
    }
    if let Some(d) = args.duration_ms {
        sc.duration_ms = d;
    }
}

/// Writes `value` as pretty JSON to `path` (`-`: stdout) atomically: a
/// temporary file renamed into place, so a failure leaves nothing half
/// written.
pub fn write_json(path: &Path, value: &serde_json::Value, out: &mut dyn Write) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("serializing JSON")?;
    if path == Path::new("-") {
        writeln!(out, "{text}")?;
        return Ok(());
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text.as_bytes()).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Prints the text report of a run and its directions.
pub fn print_report(report: &RunReport, sc: &Scenario, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{}", text::render_report(report))?;
    let checks = directions::checks_for(report, sc);
    if !checks.is_empty() {
        writeln!(out, "seed directions:")?;
        writeln!(out, "{}", directions::render_checks(&checks))?;
    }
    Ok(())
}

/// `mmlab run`.
pub fn cmd_run(args: &RunArgs, out: &mut dyn Write) -> Result<()> {
    let mut l = load(&args.scenario)?;
    apply_overrides(&mut l.scenario, args);
    let sc = l.scenario.clone();
    let costs = load_costs(&args.common)?;
    let started = std::time::SystemTime::now();
    let report = execute(&l, &costs)?;
    let json_to_stdout = args.common.json.as_deref() == Some(Path::new("-"));
    if !json_to_stdout {
        print_report(&report, &sc, out)?;
    }
    if let Some(p) = &args.common.json {
        write_json(p, &json::report_json(&report), out)?;
    }
    crate::storecmd::after_run(&args.common, &[report], started, out, json_to_stdout)?;
    Ok(())
}

/// `mmlab list`.
pub fn cmd_list(out: &mut dyn Write) -> Result<()> {
    writeln!(out, "scenarios:")?;
    for (name, _) in BUILTIN {
        let sc = Scenario::builtin(name).expect("listed")?;
        let mode = match sc.mode {
            sim::report::Mode::Sim => format!("sim, {} CPUs", sc.cpus.unwrap_or(1)),
            sim::report::Mode::Real => format!("real, {} threads", sc.threads.unwrap_or(2)),
        };
        writeln!(out, "  {name:<20} {mode:<18} {}", sc.description)?;
        writeln!(out, "  {:<20} policies: {}", "", sc.policies.join(", "))?;
    }
    writeln!(out, "\npolicies (stats scenarios):")?;
    for p in hierstat::Preset::ALL {
        writeln!(out, "  {:<24} {}", p.name(), policy_summary(p))?;
    }
    writeln!(
        out,
        "  {:<24} eager shared atomics up every ancestor (before rstat)",
        "pre-rstat"
    )?;
    writeln!(out, "\nlayouts (false-sharing): separated, shared")?;
    Ok(())
}

fn policy_summary(p: hierstat::Preset) -> String {
    let pol = p.policy();
    format!(
        "threshold {:?}, scope {:?}, concurrent flush {:?}, hot path {:?}, batch {}",
        pol.threshold, pol.scope, pol.concurrency, pol.hot_path, pol.batch
    )
}
