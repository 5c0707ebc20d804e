//! `mmlab sweep FILE`: runs the grid of a `[sweep]` file (every policy
//! point under every seed, [`lab::sweep`]) through the pipeline,
//! stores each job as it finishes, prints the trade-off table and writes
//! the HTML plot.
//!
//! * A job is one scenario run: the sweep's scenario with the point's
//!   `[[policy]]` table added (its full definition is in the stored text),
//!   `runs = 1` and the job's seed. Every job is estimated before the
//!   first one runs.
//! * Jobs already stored under their key ([`runstore::sweep`]) are not
//!   run again: an interrupted sweep (Ctrl-C, a killed job) keeps what
//!   finished and continues where it stopped when run again; `--shard I/N`
//!   slices merged with `mmlab store merge` hold the same jobs as one full
//!   sweep.
//! * `--plan` prints one independent command per job for an external
//!   scheduler (see `docs/sweeps.md`).

use crate::cli::SweepArgs;
use crate::pipeline::progress::Reporter;
use crate::pipeline::{input, Pipeline, StoreAs};
use crate::render::html::sweep::{render_sweep_html, SweepRow};
use crate::render::sweep::render_sweep_table;
use anyhow::{bail, Context, Result};
use lab::report::{mean, RunReport};
use lab::sweep::{Job, Sweep};
use lab::Overrides;
use lab::Scenario;
use runstore::sweep::{job_key, PointMeta};
use runstore::Store;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A loaded sweep: the parsed file and its scenario with the sweep's
/// duration overrides applied.
#[derive(Debug, Clone)]
pub struct LoadedSweep {
    /// The sweep.
    pub sweep: Sweep,
    /// The scenario every job starts from.
    pub scenario: Scenario,
    /// The plot's axes: the file's `x` / `y`, or the scenario's defaults.
    pub axes: (String, String),
}

/// Reads and validates a sweep file and its scenario (a built-in name, or
/// a file relative to the sweep file), both with bounded reads.
///
/// # Errors
/// Unreadable files, parse errors (with file, line and field), a scenario
/// that runs no flush policies.
pub fn load_sweep(path: &Path) -> Result<LoadedSweep> {
    let text = input::read_input(path, "sweep file")?;
    if let Some(e) = input::wrong_file_kind(path, &text, input::FileKind::Sweep) {
        return Err(e);
    }
    let sweep = Sweep::parse(&path.display().to_string(), &text)?;
    let name = &sweep.spec.scenario;
    let mut scenario = match input::catalog().builtin(name) {
        Some(sc) => sc?,
        None => {
            let rel = path.parent().unwrap_or(Path::new(".")).join(name);
            let file = if rel.is_file() {
                rel
            } else {
                PathBuf::from(name)
            };
            input::load(&file.display().to_string())
                .with_context(|| format!("the scenario of sweep {}", path.display()))?
        }
    };
    let Some((dx, dy)) = scenario.sweep_axes() else {
        bail!(
            "sweep {}: scenario `{}` ({} kind) runs no flush policies",
            path.display(),
            scenario.name(),
            scenario.kind()
        );
    };
    scenario.set_sweep_durations(sweep.spec.duration_ms, sweep.spec.warmup_ms);
    let axes = (
        sweep.spec.x.clone().unwrap_or_else(|| dx.into()),
        sweep.spec.y.clone().unwrap_or_else(|| dy.into()),
    );
    Ok(LoadedSweep {
        sweep,
        scenario,
        axes,
    })
}

impl LoadedSweep {
    /// The scenario of one job, ready to run.
    ///
    /// # Errors
    /// A point that cannot be added to the scenario.
    pub fn job_scenario(&self, job: &Job) -> Result<Scenario> {
        let point = &self.sweep.points[job.point];
        let mut sc = self.scenario.clone();
        if let Some(spec) = &point.spec {
            sc.add_policies(std::slice::from_ref(spec))
                .map_err(anyhow::Error::msg)?;
        }
        sc.apply(&Overrides {
            policies: vec![point.label.clone()],
            runs: Some(1),
            seed: Some(job.seed),
            duration_ms: None,
        });
        Ok(sc)
    }

    /// The key of a job: its sweep, point, seed and the text it runs.
    pub fn key(&self, job: &Job, sc: &Scenario) -> String {
        let point = &self.sweep.points[job.point];
        job_key(&[
            &self.sweep.spec.name,
            &point.label,
            &job.seed.to_string(),
            &sc.source(),
        ])
    }
}

/// Parses `I/N` (1 ≤ I ≤ N).
///
/// # Errors
/// A message for anything else.
pub fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let parsed = s
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((i, n)) if n >= 1 && (1..=n).contains(&i) => Ok((i, n)),
        _ => bail!("--shard `{s}`: expected I/N with 1 <= I <= N"),
    }
}

/// What [`run_jobs`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobTally {
    /// Jobs run and stored now.
    pub ran: usize,
    /// Jobs found already stored.
    pub skipped: usize,
}

/// Runs `jobs` of `ls` (those not stored yet in the pipeline's store)
/// through `pipeline`, each stored as a sweep point as it finishes;
/// `progress` shows the jobs (`point seed S`, estimated seconds left).
///
/// # Errors
/// A job over the limits (checked before the first runs), scenario or
/// store errors; what finished before stays stored.
pub fn run_jobs(
    ls: &LoadedSweep,
    jobs: &[Job],
    pipeline: &mut Pipeline,
    mut progress: Option<&mut Reporter>,
) -> Result<JobTally> {
    let mut tally = JobTally::default();
    let mut todo = Vec::new();
    for job in jobs {
        let sc = ls.job_scenario(job)?;
        let key = ls.key(job, &sc);
        let stored = match pipeline.store.as_ref() {
            Some(st) => st.sweep_job(&ls.sweep.spec.name, &key)?.is_some(),
            None => false,
        };
        if stored {
            tally.skipped += 1;
        } else {
            pipeline.check(&sc)?;
            todo.push((job, sc, key));
        }
    }
    pipeline.check_total(
        &format!("sweep {}", ls.sweep.spec.name),
        todo.iter().map(|(_, sc, _)| sc),
    )?;
    let total = todo.len();
    if let Some(r) = progress.as_deref_mut() {
        r.total(total as u64);
    }
    let t0 = Instant::now();
    for (done, (job, sc, key)) in todo.into_iter().enumerate() {
        let point = &ls.sweep.points[job.point];
        let label = format!("{} seed {}", point.label, job.seed);
        let meta = PointMeta {
            sweep: ls.sweep.spec.name.clone(),
            point: point.label.clone(),
            knobs: point.knobs.clone(),
            preset: point.preset,
            seed: job.seed,
            job_key: key,
        };
        pipeline
            .run(&sc, StoreAs::SweepPoint(meta))
            .with_context(|| format!("sweep job {} ({label})", job.index + 1))?;
        tally.ran += 1;
        let per = t0.elapsed() / (done as u32 + 1);
        let eta = per * (total - done - 1) as u32;
        if let Some(r) = progress.as_deref_mut() {
            r.step(&format!("{label}, ETA {}s", eta.as_secs()));
        }
    }
    Ok(tally)
}

/// The value of an axis (`metric` or `metric.pXX`) in one run of `policy`.
pub fn axis_value(report: &RunReport, policy: &str, axis: &str) -> f64 {
    let (metric, pct) = match axis.split_once('.') {
        Some((m, p)) => (m, Some(p)),
        None => (axis, None),
    };
    let Some(m) = report
        .policies
        .get(policy)
        .and_then(|r| r.metrics.get(metric))
    else {
        return f64::NAN;
    };
    match pct {
        None => mean(&m.values),
        Some(p) => m.percentiles.get(p).map_or(f64::NAN, |v| mean(v)),
    }
}

/// The sweep's rows from the store: one per point of the current grid
/// with at least one stored job, its axes averaged over the seeds stored.
///
/// # Errors
/// Store errors.
pub fn collect_rows(ls: &LoadedSweep, store: &Store) -> Result<Vec<SweepRow>> {
    let (ax, ay) = &ls.axes;
    let stored = store.sweep_points(&ls.sweep.spec.name)?;
    let mut rows = Vec::new();
    for (pi, point) in ls.sweep.points.iter().enumerate() {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        let mut seeds = Vec::new();
        for job in ls.sweep.jobs().iter().filter(|j| j.point == pi) {
            let sc = ls.job_scenario(job)?;
            let key = ls.key(job, &sc);
            let Some(sp) = stored.iter().find(|s| s.meta.job_key == key) else {
                continue;
            };
            let run = store.load(sp.run)?;
            xs.push(axis_value(&run.report, &point.label, ax));
            ys.push(axis_value(&run.report, &point.label, ay));
            seeds.push(job.seed);
        }
        if seeds.is_empty() {
            continue;
        }
        rows.push(SweepRow {
            label: point.label.clone(),
            knobs: point.knobs.clone(),
            preset: point.preset,
            seeds,
            x: mean(&xs),
            y: mean(&ys),
            xs,
            ys,
        });
    }
    Ok(rows)
}

/// The plan of a sweep: one command per job, each running that job alone
/// into its own database (`STEM-N.db` beside `db`), as printed by `--plan`
/// (see `docs/sweeps.md`): the program as it can be run
/// ([`crate::cmd::program_name`]), every path one shell word
/// ([`crate::cmd::path_word`]), every option of the sweep carried
/// (`--costs`, the limits); then the merge of exactly those databases
/// into `db`, as a comment. Each line is one command that does what it
/// says and nothing more, in any POSIX shell.
///
/// # Errors
/// A path that cannot be printed as it is (not UTF-8, or holding a
/// newline or another hidden character): refused rather than printed as
/// another name.
pub fn plan(a: &SweepArgs, ls: &LoadedSweep, db: &Path) -> Result<Vec<String>> {
    use crate::cmd::{path_word, program_name};
    let jobs = ls.sweep.jobs();
    let n = jobs.len();
    let prog = program_name()?;
    let stem = db.with_extension("").into_os_string();
    let job_db = |i: usize| {
        let mut p = stem.clone();
        p.push(format!("-{i}.db"));
        PathBuf::from(p)
    };
    let mut common = vec![path_word(&a.file)?];
    if let Some(c) = &a.costs {
        common.push("--costs".into());
        common.push(path_word(c)?);
    }
    common.extend(a.limits.to_args());
    let into = path_word(db)?;
    let mut lines = Vec::with_capacity(n + 1);
    let mut merged = Vec::with_capacity(n);
    for j in &jobs {
        let p = &ls.sweep.points[j.point];
        let jdb = path_word(&job_db(j.index + 1))?;
        lines.push(format!(
            "{prog} sweep {} --shard {}/{n} --db {jdb}  # {} seed {}",
            common.join(" "),
            j.index + 1,
            crate::render::escape_text(&p.label),
            j.seed
        ));
        merged.push(jdb);
    }
    lines.push(format!(
        "# then: {prog} store merge {} --into {into}",
        merged.join(" ")
    ));
    Ok(lines)
}

/// Checks that the plot's axes name metrics the sweep's scenario reports,
/// by running its first job for a moment (a few milliseconds of simulated
/// time, nothing stored): an unknown metric or percentile is refused
/// before the sweep runs, with the names it could use.
///
/// # Errors
/// The probe fails, or an axis names no metric of the run.
pub fn check_axes(ls: &LoadedSweep, pipeline: &Pipeline) -> Result<()> {
    let Some(first) = ls.sweep.jobs().into_iter().next() else {
        return Ok(());
    };
    let mut sc = ls.job_scenario(&first)?;
    sc.set_sweep_durations(Some(AXIS_PROBE_MS), Some(0));
    let opts = lab::RunOptions {
        context: pipeline.context(),
        cancel: pipeline.cancel.clone(),
    };
    let report = sc
        .run(&opts, &mut |_| {})
        .with_context(|| format!("checking the axes of sweep {}", ls.sweep.spec.name))?;
    let label = &ls.sweep.points[first.point].label;
    let Some(result) = report.policies.get(label) else {
        return Ok(());
    };
    for (key, axis) in [("x", &ls.axes.0), ("y", &ls.axes.1)] {
        let (metric, pct) = match axis.split_once('.') {
            Some((m, p)) => (m, Some(p)),
            None => (axis.as_str(), None),
        };
        let names: Vec<&str> = result.metrics.keys().map(String::as_str).collect();
        let Some(m) = result.metrics.get(metric) else {
            bail!(
                "sweep {}: axis {key} = `{}`: scenario `{}` reports no metric `{}` (its metrics: \
                 {})",
                ls.sweep.spec.name,
                crate::render::display_name(axis, 80),
                ls.scenario.name(),
                crate::render::display_name(metric, 80),
                names.join(", ")
            );
        };
        if let Some(p) = pct {
            if !m.percentiles.contains_key(p) {
                let with: Vec<&str> = result
                    .metrics
                    .iter()
                    .filter(|(_, m)| m.percentiles.contains_key(p))
                    .map(|(n, _)| n.as_str())
                    .collect();
                bail!(
                    "sweep {}: axis {key} = `{axis}`: metric `{metric}` has no percentiles \
                     (metrics with a {p}: {})",
                    ls.sweep.spec.name,
                    if with.is_empty() {
                        "none".to_string()
                    } else {
                        with.join(", ")
                    }
                );
            }
        }
    }
    Ok(())
}

/// Simulated milliseconds the axis probe runs ([`check_axes`]).
pub const AXIS_PROBE_MS: u64 = 5;

/// `mmlab sweep`.
pub fn cmd_sweep(a: &SweepArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let ls = load_sweep(&a.file)?;
    if a.plan {
        for line in plan(a, &ls, db)? {
            writeln!(out, "{line}")?;
        }
        return Ok(());
    }
    let jobs = match &a.shard {
        Some(s) => {
            let (i, n) = parse_shard(s)?;
            ls.sweep.shard(i, n)
        }
        None => ls.sweep.jobs(),
    };
    let mut pipeline = Pipeline::new(input::load_costs(a.costs.as_deref())?);
    pipeline.costs_path = a.costs.clone();
    pipeline.limits = a.limits.limits();
    pipeline.force = a.limits.force;
    pipeline.cancel = crate::cmd::interrupts(true)?;
    pipeline.show_progress = false;
    check_axes(&ls, &pipeline)?;
    pipeline.store = Some(
        Store::open(db).with_context(|| format!("opening results database {}", db.display()))?,
    );
    let mut reporter = Reporter::new(&format!("sweep {}", ls.sweep.spec.name));
    let tally = run_jobs(&ls, &jobs, &mut pipeline, Some(&mut reporter))?;
    reporter.finish();
    crate::cmd::unsaved(&pipeline)?;
    let store = pipeline.store.as_ref().expect("opened above");
    writeln!(
        out,
        "sweep {}: {} jobs ran, {} already stored in {} ({} points x {} seeds in the grid)",
        ls.sweep.spec.name,
        tally.ran,
        tally.skipped,
        crate::render::shown(db),
        ls.sweep.points.len(),
        ls.sweep.seeds.len()
    )?;
    let rows = collect_rows(&ls, store)?;
    let (ax, ay) = &ls.axes;
    write!(out, "{}", render_sweep_table(&rows, ax, ay))?;
    if let Some(p) = &a.html {
        let html = render_sweep_html(&ls.sweep.spec, ls.scenario.name(), &rows, ax, ay);
        crate::render::output::write_output(p, html.as_bytes(), out)?;
        if !crate::render::output::is_stdout(p) {
            writeln!(out, "HTML report written to {}", crate::render::shown(p))?;
        }
    }
    Ok(())
}
