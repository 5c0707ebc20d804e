//! `mmlab run`: load a scenario (built-in or file), apply the command-line
//! overrides, run it ([`sim::run()`]), print the report, write JSON.

use crate::cli::{CommonRunArgs, RunArgs};
use crate::render::json;
use crate::render::text;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::cost::CostModel;
use sim::report::RunReport;
use sim::spec::Overrides;
use sim::{Progress, RunOptions, Scenario};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// Loads a built-in scenario by name, or a TOML file by path, parsed and
/// validated (errors name the file, line and field).
pub fn load(spec: &str) -> Result<Scenario> {
    if let Some(sc) = Scenario::builtin(spec) {
        return Ok(sc?);
    }
    let path = Path::new(spec);
    if !path.exists() {
        let names: Vec<&str> = Scenario::builtin_names().collect();
        bail!(
            "no built-in scenario or file named `{spec}` (built-in: {})",
            names.join(", ")
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading scenario file {}", path.display()))?;
    Ok(Scenario::parse(&path.display().to_string(), &text)?)
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

/// Runs a scenario ([`sim::run()`]) with a progress bar.
pub fn execute(sc: &Scenario, costs: &CostModel) -> Result<RunReport> {
    let pb = progress_bar(sc.name());
    let opts = RunOptions { costs: *costs };
    let mut cb = |p: Progress| match p {
        Progress::Total(n) => pb.set_length(n),
        Progress::Step(s) => {
            pb.set_message(s);
            pb.inc(1);
        }
    };
    let report = sim::run(sc, &opts, &mut cb)
        .with_context(|| format!("running scenario `{}`", sc.name()))?;
    pb.finish_and_clear();
    Ok(report)
}

/// The command-line overrides of `mmlab run`.
pub fn overrides(args: &RunArgs) -> Overrides {
    Overrides {
        policies: args.policies.clone(),
        runs: args.runs,
        seed: args.seed,
        duration_ms: args.duration_ms,
    }
}

/// Resolves `-p` arguments: a name stays as it is; a policy file (a
/// `.toml` path holding `[[policy]]` tables) adds its policies to `sc` and
/// stands for their names, in file order.
///
/// # Errors
/// Unreadable or invalid policy files (file, line and field), a scenario
/// that runs no flush policies, a name defined twice differently.
pub fn policy_files(sc: &mut Scenario, policies: &[String]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for p in policies {
        let path = Path::new(p);
        if !(p.ends_with(".toml") && path.is_file()) {
            names.push(p.clone());
            continue;
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading policy file {}", path.display()))?;
        let file = sim::spec::PolicyFile::parse(p, &text)?;
        sc.add_policies(&file.policy)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("policy file {p}"))?;
        names.extend(file.policy.iter().map(|s| s.name.clone()));
    }
    Ok(names)
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
    crate::render::write_atomic(path, text.as_bytes())
}

/// Prints the text report of a run and its seed claims.
pub fn print_report(report: &RunReport, sc: &Scenario, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{}", text::render_report(report))?;
    let claims = sim::claims(report, sc);
    if !claims.is_empty() {
        writeln!(out, "seed directions:")?;
        writeln!(out, "{}", text::render_claims(&claims))?;
    }
    Ok(())
}

/// `mmlab run`.
pub fn cmd_run(args: &RunArgs, out: &mut dyn Write) -> Result<()> {
    let mut sc = load(&args.scenario)?;
    let mut ov = overrides(args);
    ov.policies = policy_files(&mut sc, &args.policies)?;
    sc.apply(&ov);
    if args.compare_sim && !matches!(sc, Scenario::Kernel { .. }) {
        bail!(
            "--compare-sim compares a kernel scenario (mode = \"kernel\") with its simulation; `{}` is not one",
            sc.name()
        );
    }
    let costs = load_costs(&args.common)?;
    let started = std::time::SystemTime::now();
    let report = execute(&sc, &costs)?;
    let json_to_stdout = args.common.json.as_deref() == Some(Path::new("-"));
    if !json_to_stdout {
        print_report(&report, &sc, out)?;
        if args.compare_sim {
            crate::cmd::kernel::print_side_by_side(&sc, &report, &costs, out)?;
        }
    }
    if let Some(p) = &args.common.json {
        write_json(p, &json::report_json(&report), out)?;
    }
    crate::cmd::store::after_run(&args.common, &[report], started, out, json_to_stdout)?;
    Ok(())
}

/// `mmlab list`.
pub fn cmd_list(out: &mut dyn Write) -> Result<()> {
    writeln!(out, "scenarios:")?;
    for name in Scenario::builtin_names() {
        let sc = Scenario::builtin(name).expect("listed")?;
        let mode = match sc.mode() {
            sim::report::Mode::Sim => format!("sim, {} CPUs", sc.parallelism()),
            sim::report::Mode::Real => format!("real, {} threads", sc.parallelism()),
            sim::report::Mode::Kernel => "host kernel".to_string(),
        };
        writeln!(out, "  {name:<20} {mode:<18} {}", sc.description())?;
        writeln!(out, "  {:<20} policies: {}", "", sc.policies().join(", "))?;
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
