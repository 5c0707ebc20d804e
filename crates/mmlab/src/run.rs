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

/// Loads a built-in scenario by name, or a TOML file by path.
pub fn load_scenario(spec: &str) -> Result<Scenario> {
    if let Some(sc) = Scenario::builtin(spec) {
        return Ok(sc?);
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

/// Runs a parsed scenario with a progress bar; dispatches on its kind.
pub fn execute(sc: &Scenario, costs: &CostModel) -> Result<RunReport> {
    match sc.kind {
        Kind::Stats => {
            let pb = progress_bar(&sc.name);
            let opts = RunOptions { costs: *costs };
            let mut cb = |p: Progress| match p {
                Progress::Total(n) => pb.set_length(n),
                Progress::Step(s) => {
                    pb.set_message(s);
                    pb.inc(1);
                }
            };
            let r = run_scenario(sc, &opts, &mut cb)
                .with_context(|| format!("running scenario `{}`", sc.name))?;
            pb.finish_and_clear();
            Ok(r)
        }
        Kind::Numab => bail!(
            "scenario `{}` is a NUMA-balancing scenario: its runner (models::numab) is not wired into mmlab yet",
            sc.name
        ),
        Kind::Refault => bail!(
            "scenario `{}` is a refault scenario: its runner (models::workingset) is not wired into mmlab yet",
            sc.name
        ),
    }
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
    std::fs::write(&tmp, text.as_bytes())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Prints the text report of a run and its directions.
pub fn print_report(report: &RunReport, sc: &Scenario, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{}", text::render_report(report))?;
    if let Some(w) = sc.workload {
        let checks = directions::checks(report, w);
        if !checks.is_empty() {
            writeln!(out, "seed directions:")?;
            writeln!(out, "{}", directions::render_checks(&checks))?;
        }
    }
    Ok(())
}

/// `mmlab run`.
pub fn cmd_run(args: &RunArgs, out: &mut dyn Write) -> Result<()> {
    let mut sc = load_scenario(&args.scenario)?;
    apply_overrides(&mut sc, args);
    let costs = load_costs(&args.common)?;
    let report = execute(&sc, &costs)?;
    let json_to_stdout = args.common.json.as_deref() == Some(Path::new("-"));
    if !json_to_stdout {
        print_report(&report, &sc, out)?;
    }
    if let Some(p) = &args.common.json {
        write_json(p, &json::report_json(&report), out)?;
    }
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
