//! `mmlab sweep FILE`: runs the grid of a `[sweep]` file (every policy
//! point under every seed, [`sim::spec::sweep`]), stores each job as it
//! finishes, prints the trade-off table and writes the HTML plot; and
//! `mmlab store merge`.
//!
//! * A job is one scenario run: the sweep's scenario with the point's
//!   `[[policy]]` table added (its full definition is in the stored text),
//!   `runs = 1` and the job's seed.
//! * Jobs already stored under their key ([`crate::store::sweep`]) are not
//!   run again: an interrupted sweep (Ctrl-C, a killed job) keeps what
//!   finished and continues where it stopped when run again; `--shard I/N`
//!   slices merged with `mmlab store merge` hold the same jobs as one full
//!   sweep.
//! * `--plan` prints one independent command per job for an external
//!   scheduler (see `docs/sweeps.md`).

use crate::cli::{MergeArgs, SweepArgs};
use crate::render::html::sweep::{pareto_front, render_sweep_html, SweepRow};
use crate::render::write_atomic;
use crate::store::sweep::{job_key, PointMeta};
use crate::store::{HostFacts, Store};
use anyhow::{bail, Context, Result};
use sim::cost::CostModel;
use sim::report::{mean, RunReport};
use sim::spec::sweep::{Job, Sweep};
use sim::spec::{Kind, Overrides, Scenario, Workload};
use sim::RunOptions;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A loaded sweep: the parsed file and its scenario with the sweep's
/// duration overrides applied.
#[derive(Debug, Clone)]
pub struct LoadedSweep {
    /// The sweep.
    pub sweep: Sweep,
    /// The scenario every job starts from.
    pub scenario: Scenario,
}

/// Reads and validates a sweep file and its scenario (a built-in name, or
/// a file relative to the sweep file).
///
/// # Errors
/// Unreadable files, parse errors (with file, line and field).
pub fn load_sweep(path: &Path) -> Result<LoadedSweep> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading sweep file {}", path.display()))?;
    let sweep = Sweep::parse(&path.display().to_string(), &text)?;
    let name = &sweep.spec.scenario;
    let mut scenario = match Scenario::builtin(name) {
        Some(sc) => sc?,
        None => {
            let rel = path.parent().unwrap_or(Path::new(".")).join(name);
            let file = if rel.is_file() {
                rel
            } else {
                PathBuf::from(name)
            };
            crate::cmd::run::load(&file.display().to_string())
                .with_context(|| format!("the scenario of sweep {}", path.display()))?
        }
    };
    if matches!(scenario.kind(), Kind::Numab | Kind::Kernel) {
        bail!(
            "sweep {}: scenario `{}` runs {}, not flush policies",
            path.display(),
            scenario.name(),
            if scenario.kind() == Kind::Numab {
                "scanner versions"
            } else {
                "on the host's kernel"
            }
        );
    }
    let (d, w) = (sweep.spec.duration_ms, sweep.spec.warmup_ms);
    match &mut scenario {
        Scenario::Stats(s) => {
            if let Some(d) = d {
                s.duration_ms = d;
            }
        }
        Scenario::Refault { file, source } => {
            if d.is_some() || w.is_some() {
                if let Some(d) = d {
                    file.refault.duration_ms = d;
                }
                if let Some(w) = w {
                    file.refault.warmup_ms = w;
                }
                // The stored text must say what ran: write the adjusted
                // file back out.
                *source = toml::to_string(file.as_ref()).context("writing the scenario back")?;
            }
        }
        Scenario::Numab { .. } | Scenario::Kernel { .. } => {}
    }
    Ok(LoadedSweep { sweep, scenario })
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

    /// The plot's axes: the file's `x` / `y`, or the scenario's defaults
    /// (refault: mean refault latency against decision mismatches; stats:
    /// read latency p99.9 against stale reads, or missed events for
    /// stale-read).
    pub fn axes(&self) -> (String, String) {
        let (dx, dy) = match &self.scenario {
            Scenario::Refault { .. } => ("refault_latency_ns", "decision_mismatch_rate"),
            Scenario::Stats(s) if s.workload == Some(Workload::StaleRead) => {
                ("read_latency_ns.p999", "missed_event_rate")
            }
            _ => ("read_latency_ns.p999", "stale_reads"),
        };
        (
            self.sweep.spec.x.clone().unwrap_or_else(|| dx.into()),
            self.sweep.spec.y.clone().unwrap_or_else(|| dy.into()),
        )
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

/// Progress of [`run_jobs`], after each job.
#[derive(Debug, Clone, Copy)]
pub struct JobProgress<'a> {
    /// Jobs finished in this call.
    pub done: usize,
    /// Jobs to run in this call (those not stored before).
    pub total: usize,
    /// The job just finished (`point seed S`).
    pub label: &'a str,
    /// Estimated time left: the mean job time so far × jobs left.
    pub eta: Duration,
}

/// Runs `jobs` of `ls` (those not stored yet), storing each as it
/// finishes; `progress` after each.
///
/// # Errors
/// Scenario or store errors; what finished before stays stored.
pub fn run_jobs(
    ls: &LoadedSweep,
    jobs: &[Job],
    costs: &CostModel,
    store: &mut Store,
    progress: &mut dyn FnMut(&JobProgress<'_>),
) -> Result<JobTally> {
    let host = HostFacts::detect(env!("CARGO_PKG_VERSION"), None);
    let opts = RunOptions { costs: *costs };
    let mut tally = JobTally::default();
    let mut todo = Vec::new();
    for job in jobs {
        let sc = ls.job_scenario(job)?;
        let key = ls.key(job, &sc);
        if store.sweep_job(&ls.sweep.spec.name, &key)?.is_some() {
            tally.skipped += 1;
        } else {
            todo.push((job, sc, key));
        }
    }
    let total = todo.len();
    let t0 = Instant::now();
    for (done, (job, sc, key)) in todo.into_iter().enumerate() {
        let point = &ls.sweep.points[job.point];
        let label = format!("{} seed {}", point.label, job.seed);
        let started = SystemTime::now();
        let report = sim::run(&sc, &opts, &mut |_| {})
            .with_context(|| format!("sweep job {} ({label})", job.index + 1))?;
        let meta = PointMeta {
            sweep: ls.sweep.spec.name.clone(),
            point: point.label.clone(),
            knobs: point.knobs.clone(),
            preset: point.preset,
            seed: job.seed,
            job_key: key,
        };
        store.save_sweep_point(&report, &host, started, SystemTime::now(), &meta)?;
        tally.ran += 1;
        let per = t0.elapsed() / (done as u32 + 1);
        let eta = per * (total - done - 1) as u32;
        progress(&JobProgress {
            done: done + 1,
            total,
            label: &label,
            eta,
        });
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
    let (ax, ay) = ls.axes();
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
            xs.push(axis_value(&run.report, &point.label, &ax));
            ys.push(axis_value(&run.report, &point.label, &ay));
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

/// Prints the sweep table: point, seeds, both axes, front membership.
pub fn print_table(rows: &[SweepRow], ax: &str, ay: &str, out: &mut dyn Write) -> Result<()> {
    let front = pareto_front(rows);
    let w = rows.iter().map(|r| r.label.len()).max().unwrap_or(5).max(5);
    writeln!(
        out,
        "{:<w$}  {:>5}  {:>22}  {:>22}  front",
        "point", "seeds", ax, ay
    )?;
    for (i, r) in rows.iter().enumerate() {
        let mark = match (front.contains(&i), r.preset) {
            (true, true) => "* (preset)",
            (true, false) => "*",
            (false, true) => "  (preset)",
            (false, false) => "",
        };
        writeln!(
            out,
            "{:<w$}  {:>5}  {:>22}  {:>22}  {mark}",
            r.label,
            r.seeds.len(),
            fmt(r.x),
            fmt(r.y),
        )?;
    }
    Ok(())
}

fn fmt(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v != 0.0 && v.abs() < 0.01 {
        format!("{v:.3e}")
    } else {
        format!("{v:.3}")
    }
}

/// `mmlab sweep`.
pub fn cmd_sweep(a: &SweepArgs, db: &Path, out: &mut dyn Write) -> Result<()> {
    let ls = load_sweep(&a.file)?;
    let jobs = ls.sweep.jobs();
    if a.plan {
        let n = jobs.len();
        let stem = db.with_extension("");
        for j in &jobs {
            let p = &ls.sweep.points[j.point];
            writeln!(
                out,
                "mmlab sweep {} --shard {}/{n} --db {}-{}.db  # {} seed {}",
                a.file.display(),
                j.index + 1,
                stem.display(),
                j.index + 1,
                p.label,
                j.seed
            )?;
        }
        return Ok(());
    }
    let jobs = match &a.shard {
        Some(s) => {
            let (i, n) = parse_shard(s)?;
            ls.sweep.shard(i, n)
        }
        None => jobs,
    };
    let costs = match &a.costs {
        None => CostModel::defaults(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading cost file {}", p.display()))?;
            CostModel::from_toml(&text).with_context(|| format!("cost file {}", p.display()))?
        }
    };
    let mut store =
        Store::open(db).with_context(|| format!("opening results database {}", db.display()))?;
    let tty = std::io::stderr().is_terminal();
    let name = ls.sweep.spec.name.clone();
    let mut progress = |p: &JobProgress<'_>| {
        let line = format!(
            "sweep {name}: {}/{} done, ETA {}s (last: {})",
            p.done,
            p.total,
            p.eta.as_secs(),
            p.label
        );
        if tty {
            eprint!("\r\x1b[2K{line}");
            if p.done == p.total {
                eprintln!();
            }
        } else {
            eprintln!("{line}");
        }
    };
    let tally = run_jobs(&ls, &jobs, &costs, &mut store, &mut progress)?;
    writeln!(
        out,
        "sweep {}: {} jobs ran, {} already stored in {} ({} points x {} seeds in the grid)",
        ls.sweep.spec.name,
        tally.ran,
        tally.skipped,
        db.display(),
        ls.sweep.points.len(),
        ls.sweep.seeds.len()
    )?;
    let rows = collect_rows(&ls, &store)?;
    let (ax, ay) = ls.axes();
    print_table(&rows, &ax, &ay, out)?;
    if let Some(p) = &a.html {
        let html = render_sweep_html(&ls.sweep.spec, ls.scenario.name(), &rows, &ax, &ay);
        write_atomic(p, html.as_bytes())?;
        writeln!(out, "HTML report written to {}", p.display())?;
    }
    Ok(())
}

/// `mmlab store merge`.
pub fn cmd_store_merge(a: &MergeArgs, out: &mut dyn Write) -> Result<()> {
    let mut store = Store::open(&a.into)
        .with_context(|| format!("opening results database {}", a.into.display()))?;
    let sum = store.merge_from(&a.sources)?;
    writeln!(
        out,
        "merged {} database(s) into {}: {} runs copied, {} already present",
        a.sources.len(),
        a.into.display(),
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
