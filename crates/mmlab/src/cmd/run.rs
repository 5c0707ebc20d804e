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
    let text = read_input(path, "scenario file")?;
    Ok(Scenario::parse(&path.display().to_string(), &text)?)
}

/// The most bytes an input file (scenario, costs) may have: the largest
/// built-in scenario is under 8 KiB.
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// Reads a text input file of at most [`MAX_INPUT_BYTES`] (`/dev/zero` or
/// a huge file is refused after reading that much, not read into memory),
/// as UTF-8 (an invalid byte is reported with its line).
///
/// # Errors
/// The file cannot be read, is too large, or is not UTF-8.
pub fn read_input(path: &Path, what: &str) -> Result<String> {
    use std::io::Read;
    let f =
        std::fs::File::open(path).with_context(|| format!("reading {what} {}", path.display()))?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        bail!("{what} {} is a directory", path.display());
    }
    let mut bytes = Vec::new();
    f.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        bail!(
            "{what} {} is larger than {} KiB: not a scenario or cost file",
            path.display(),
            MAX_INPUT_BYTES >> 10
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow::anyhow!(
            "{}:{line}: not UTF-8 text (invalid byte at offset {at})",
            path.display()
        )
    })
}

/// The cost model: the file given, or the shipped defaults.
pub fn load_costs(common: &CommonRunArgs) -> Result<CostModel> {
    match &common.costs {
        None => Ok(CostModel::defaults()),
        Some(p) => {
            let text = read_input(p, "cost file")?;
            Ok(CostModel::parse(&p.display().to_string(), &text)?)
        }
    }
}

/// A progress bar on stderr; it draws once the number of steps is known
/// (its first frame is never `0/0`). When stderr is not a terminal,
/// [`execute`] prints plain progress lines instead.
pub fn progress_bar(label: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    pb.set_style(
        ProgressStyle::with_template("{prefix:>18} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(label.to_string());
    pb
}

/// Runs a scenario ([`sim::run()`]) with a progress bar on a terminal, or
/// plain `name: k/n step` lines on stderr (at most one a second) when
/// stderr is a pipe or a file.
pub fn execute(sc: &Scenario, costs: &CostModel) -> Result<RunReport> {
    let name = crate::render::display_name(sc.name(), 40);
    let pb = progress_bar(&name);
    let tty = std::io::stderr().is_terminal();
    let opts = RunOptions { costs: *costs };
    let (mut done, mut total) = (0u64, 0u64);
    let mut last_line = std::time::Instant::now();
    let mut cb = |p: Progress| match p {
        Progress::Total(n) => {
            total = n;
            pb.set_length(n);
            if tty {
                pb.set_draw_target(ProgressDrawTarget::stderr());
            } else {
                eprintln!("{name}: 0/{n} started");
            }
        }
        Progress::Step(s) => {
            done += 1;
            pb.set_message(s.clone());
            pb.inc(1);
            if !tty && (last_line.elapsed().as_secs() >= 1 || done == total) {
                last_line = std::time::Instant::now();
                eprintln!("{name}: {done}/{total} {s}");
            }
        }
    };
    let report = sim::run(sc, &opts, &mut cb)
        .with_context(|| format!("running scenario `{}`", sc.name()))?;
    pb.finish_and_clear();
    Ok(report)
}

/// Refuses a run whose pre-run estimate is over the default limits
/// (unless `--force`), and checks the output files before any work.
///
/// # Errors
/// The estimate is over a limit, or an output path is refused.
pub fn preflight(sc: &Scenario, costs: &CostModel, common: &CommonRunArgs) -> Result<()> {
    let est = sc.estimate(costs);
    if let Some(why) = est.exceeds(&common.limits()) {
        if common.force {
            eprintln!(
                "mmlab: warning: scenario `{}` {why}; running anyway (--force)",
                sc.name()
            );
        } else {
            bail!(
                "scenario `{}` {why}\n  estimate: {est}\n  lower its sizes, or pass --force to run it anyway",
                crate::render::display_name(sc.name(), 60)
            );
        }
    }
    if let Some(p) = common.json.as_deref().filter(|p| *p != Path::new("-")) {
        crate::render::output_target(p)?;
    }
    if let Some(p) = &common.html {
        crate::render::output_target(p)?;
    }
    Ok(())
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
    warn_truncated(report);
    let claims = sim::claims(report, sc);
    if !claims.is_empty() {
        writeln!(out, "seed directions:")?;
        writeln!(out, "{}", text::render_claims(&claims))?;
    }
    Ok(())
}

/// Says on stderr which policies' NUMA runs stopped at
/// `numab.max_virtual_s` before their workload finished.
pub fn warn_truncated(report: &RunReport) {
    let cut: Vec<&str> = report
        .policies
        .iter()
        .filter(|(_, r)| r.metrics.contains_key(sim::scenarios::numab::TRUNCATED))
        .map(|(p, _)| p.as_str())
        .collect();
    if !cut.is_empty() {
        eprintln!(
            "mmlab: warning: {}: the runs of {} stopped at numab.max_virtual_s before the workload \
             finished; their figures are cut short (raise max_virtual_s or lower passes)",
            report.scenario,
            cut.join(", ")
        );
    }
}

/// `mmlab run`.
pub fn cmd_run(args: &RunArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let mut sc = load(&args.scenario)?;
    let mut o = overrides(args);
    for (i, p) in o.policies.iter().enumerate() {
        if o.policies[..i].contains(p) {
            eprintln!("mmlab: note: policy `{p}` given twice; it runs once");
        }
    }
    o.policies = policy_files(&mut sc, &o.policies)?;
    sc.apply(&o);
    sc.check_policies()
        .map_err(|m| anyhow::anyhow!("scenario `{}`: {m}", sc.name()))?;
    if args.compare_sim && !matches!(sc, Scenario::Kernel { .. }) {
        bail!(
            "--compare-sim compares a kernel scenario (mode = \"kernel\") with its simulation; `{}` is not one",
            sc.name()
        );
    }
    if args.quick {
        sc.shrink_for_smoke_test();
    }
    let costs = load_costs(&args.common)?;
    preflight(&sc, &costs, &args.common)?;
    let mut store = crate::cmd::store::open_for_runs(&args.common, db)?;
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
    let claims = sim::claims(&report, &sc);
    crate::cmd::store::after_run(
        &args.common,
        store.as_mut(),
        &[report],
        &claims,
        started,
        out,
        json_to_stdout,
    )?;
    Ok(())
}

/// What each flush policy is, in one line (distinct for every preset).
pub fn policy_description(name: &str) -> &'static str {
    match name {
        "linux-5.13" => "rstat for memcg: every memory.stat read flushes its subtree",
        "linux-5.15" => "global threshold, root flushes, skip if a flush runs, sync refault flush",
        "linux-5.15-async" => "5.15 with the refault flush queued to the periodic worker",
        "linux-5.15-ratelimited" => "5.15.y: refault flush at most every 2 s (stats up to 4 s old)",
        "linux-6.8" => "per-group thresholds, subtree flushes, no skipping, ratelimited refault",
        "linux-6.17" => "6.8 plus early break, flush lock dropped per CPU, lockless update lists",
        "hierstat" => "folded O(1) thresholds, parallel disjoint flushes, guarded hot-path flush",
        "pre-rstat" => "eager shared atomics up every ancestor (before rstat)",
        _ => "",
    }
}

/// `mmlab list`: the built-in scenarios (their real CPU or thread count,
/// their policies), the flush policies and the NUMA scanner versions.
pub fn cmd_list(json: Option<&Path>, out: &mut dyn Write) -> Result<()> {
    let mut scenarios = Vec::new();
    for name in Scenario::builtin_names() {
        let sc = Scenario::builtin(name)
            .ok_or_else(|| anyhow::anyhow!("built-in `{name}` is listed but missing"))??;
        scenarios.push(sc);
    }
    if let Some(p) = json {
        let v = serde_json::json!({
            "scenarios": scenarios.iter().map(|sc| serde_json::json!({
                "name": sc.name(),
                "kind": format!("{:?}", sc.kind()).to_lowercase(),
                "mode": sc.mode().as_str(),
                "parallelism": sc.parallelism(),
                "policies": sc.policies(),
                "description": sc.description(),
            })).collect::<Vec<_>>(),
            "policies": hierstat::Preset::ALL.iter().map(|p| p.name()).chain(["pre-rstat"])
                .map(|n| serde_json::json!({"name": n, "description": policy_description(n)}))
                .collect::<Vec<_>>(),
            "scanner_versions": numab::ScannerVersion::ALL.iter()
                .map(|v| serde_json::json!({"description": v.description(), "name": v.to_string()}))
                .collect::<Vec<_>>(),
        });
        return write_json(p, &v, out);
    }
    writeln!(out, "scenarios:")?;
    for sc in &scenarios {
        let name = sc.name();
        let mode = match sc.mode() {
            sim::report::Mode::Sim => format!("sim, {} CPUs", sc.parallelism()),
            sim::report::Mode::Real => format!("real, {} threads", sc.parallelism()),
            sim::report::Mode::Kernel => "host kernel".to_string(),
        };
        writeln!(
            out,
            "  {name:<22} {mode:<16} {}",
            crate::render::display_name(sc.description(), 58)
        )?;
        // Wrapped at 100 columns.
        let mut line = String::from("      policies:");
        for (i, p) in sc.policies().iter().enumerate() {
            let item = if i + 1 < sc.policies().len() {
                format!(" {p},")
            } else {
                format!(" {p}")
            };
            if line.chars().count() + item.chars().count() > 100 {
                writeln!(out, "{line}")?;
                line = " ".repeat(15);
            }
            line.push_str(&item);
        }
        writeln!(out, "{line}")?;
    }
    writeln!(out, "\nflush policies (stats and refault scenarios):")?;
    for name in hierstat::Preset::ALL
        .iter()
        .map(|p| p.name())
        .chain(["pre-rstat"])
    {
        writeln!(out, "  {name:<24} {}", policy_description(name))?;
    }
    writeln!(out, "\nNUMA scanner versions (numab scenarios):")?;
    for v in numab::ScannerVersion::ALL {
        writeln!(out, "  {:<24} {}", v.to_string(), v.description())?;
    }
    writeln!(out, "\nlayouts (false-sharing): separated, shared")?;
    writeln!(
        out,
        "\nfull descriptions: `mmlab show` of a stored run, or the scenario files"
    )?;
    Ok(())
}
