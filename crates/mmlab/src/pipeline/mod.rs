//! The one scenario pipeline every command that runs scenarios goes
//! through (`run`, the suite and its kernel section, `sweep`):
//!
//! 1. **read** ([`input`]): a built-in name or a file read with a bounded
//!    size, parsed with file, line and field in its errors;
//! 2. **estimate** ([`Pipeline::check`]): the scenario's pre-run estimate
//!    against the limits, its time at this host's measured speed
//!    ([`rates`]), before anything runs (`--force` runs anyway);
//! 3. **run** ([`Pipeline::run`]): with progress ([`progress::Reporter`]:
//!    a bar on a terminal, plain lines on a pipe) and the cancellation
//!    token of the process's signal handler;
//! 4. **store** as it finishes (one transaction per run, so an interrupt
//!    keeps what completed); a finished run is never lost: when the
//!    database stays busy (or cannot be written) it is saved in a database
//!    of its own, and the command says where and how to merge it;
//! 5. **claims** computed once ([`Outcome::claims`]);
//! 6. the command **prints** the outcome through [`crate::render`].

pub mod input;
pub mod progress;
pub mod rates;

use anyhow::{bail, Context, Result};
use lab::report::{Claim, RunReport};
use lab::{Estimate, Limits, Rates};
use lab::{RunOptions, Scenario};
use runstore::sweep::PointMeta;
use runstore::{HostFacts, RunId, Store};
use sim::cost::CostModel;
use simcore::Cancel;
use std::time::{Duration, Instant, SystemTime};

/// What a finished scenario left: its report, its claims (computed once),
/// where it was stored, and how long it took.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The report.
    pub report: RunReport,
    /// The source threads' claims on it.
    pub claims: Vec<Claim>,
    /// The stored run, unless the store is off (or the run went to
    /// [`Outcome::elsewhere`]).
    pub id: Option<RunId>,
    /// The database the run was saved in instead of the results database,
    /// when that one stayed busy or could not be written.
    pub elsewhere: Option<std::path::PathBuf>,
    /// Wall time of the run.
    pub took: Duration,
}

/// How a finished run is stored.
#[derive(Debug, Clone)]
pub enum StoreAs {
    /// As a run of its own.
    Run,
    /// As a point of a sweep.
    SweepPoint(PointMeta),
}

/// The settings shared by the scenarios of one command, and its store.
#[derive(Debug)]
pub struct Pipeline {
    /// Per-unit costs of simulated mode.
    pub costs: CostModel,
    /// The cost file they were read from (`None`: the built-in costs):
    /// the host's measured speed is cached beside it.
    pub costs_path: Option<std::path::PathBuf>,
    /// This host's speed for the estimates, measured (or read from its
    /// cache) at the first check.
    pub rates: Option<Rates>,
    /// The pre-run limits.
    pub limits: Limits,
    /// Run even when the estimate is over the limits (with a warning).
    pub force: bool,
    /// Polled by the runs (linked to the process's SIGINT/SIGTERM handler).
    pub cancel: Cancel,
    /// Where runs are stored (`None`: `--no-store`).
    pub store: Option<Store>,
    /// Show each run's progress (the sweep shows its jobs' instead).
    pub show_progress: bool,
    /// The database runs go to once the results database could not take
    /// one (see [`Pipeline::run`]).
    fallback: Option<Store>,
    /// Finished runs that could be stored nowhere (their reports were
    /// still printed): the command ends with an error.
    pub unsaved: usize,
}

impl Pipeline {
    /// A pipeline with `costs`, the default limits, no store, progress
    /// shown and a token nothing cancels.
    pub fn new(costs: CostModel) -> Pipeline {
        Pipeline {
            costs,
            costs_path: None,
            rates: None,
            limits: Limits::default(),
            force: false,
            cancel: Cancel::new(),
            store: None,
            show_progress: true,
            fallback: None,
            unsaved: 0,
        }
    }

    /// This host's speed ([`rates::host_rates`]), measured or read at the
    /// first call.
    pub fn rates(&mut self) -> &Rates {
        let (path, costs) = (self.costs_path.as_deref(), &self.costs);
        self.rates
            .get_or_insert_with(|| rates::host_rates(path, costs))
    }

    /// What the kinds are handed: the costs.
    pub fn context(&self) -> lab::Context {
        lab::Context::default().with(self.costs.clone())
    }

    /// The pre-run estimate of `sc` and its wall time on this host.
    pub fn estimate(&mut self, sc: &Scenario) -> (Estimate, f64) {
        let est = sc.estimate(&self.context());
        let wall = est.wall_seconds(self.rates());
        (est, wall)
    }

    /// Refuses a scenario whose pre-run estimate is over the limits
    /// (unless forced, which warns).
    ///
    /// # Errors
    /// The estimate is over a limit.
    pub fn check(&mut self, sc: &Scenario) -> Result<()> {
        let est = sc.estimate(&self.context());
        let (limits, force) = (self.limits, self.force);
        let rates = self.rates();
        if let Some(why) = est.exceeds(&limits, rates) {
            let name = crate::render::display_name(sc.name(), 60);
            if force {
                eprintln!("mmlab: warning: scenario `{name}` {why}; running anyway (--force)");
            } else {
                bail!(
                    "scenario `{name}` {why}\n  estimate: {est}\n  lower its sizes, raise the \
                     limit (--max-seconds, --max-memory-mib, --max-events), or pass --force to \
                     run it anyway"
                );
            }
        }
        Ok(())
    }

    /// Refuses work of several scenarios (a sweep's jobs) whose estimated
    /// time together is over the time limit (unless forced, which warns);
    /// each is checked on its own by [`Pipeline::check`].
    ///
    /// # Errors
    /// The total is over the limit.
    pub fn check_total<'a>(
        &mut self,
        what: &str,
        scenarios: impl IntoIterator<Item = &'a Scenario>,
    ) -> Result<()> {
        let mut total = 0.0;
        let mut n = 0usize;
        for sc in scenarios {
            total += self.estimate(sc).1;
            n += 1;
        }
        if total > self.limits.seconds {
            let why = format!(
                "{what}: {n} runs would take about {} on this host (limit {})",
                lab::estimate::duration_words(total),
                lab::estimate::duration_words(self.limits.seconds)
            );
            if self.force {
                eprintln!("mmlab: warning: {why}; running anyway (--force)");
            } else {
                bail!(
                    "{why}\n  run fewer (--shard I/N, fewer points or seeds), raise --max-seconds, \
                     or pass --force to run them anyway"
                );
            }
        }
        Ok(())
    }

    /// Runs `sc` with progress, stores it as it finishes (as `store_as`),
    /// and computes its claims.
    ///
    /// A finished run is never lost to its database: when the database is
    /// busy the run waits for it, saying so and how long ([`busy_wait`]);
    /// when it stays busy, or cannot be written, the run is saved in a
    /// database of its own (`STEM-unsaved-PID.db` beside it, else in the
    /// temporary folder), with a warning that names it and the `store
    /// merge` command that brings it home; later runs of the command go
    /// there too unless the database is free at once. A run that can be
    /// stored nowhere is still returned (and counted in
    /// [`Pipeline::unsaved`]).
    ///
    /// # Errors
    /// The run fails (a cancelled run: [`lab::RunError::Cancelled`] in the
    /// chain).
    pub fn run(&mut self, sc: &Scenario, store_as: StoreAs) -> Result<Outcome> {
        let t = Instant::now();
        let started = SystemTime::now();
        let opts = RunOptions {
            context: self.context(),
            cancel: self.cancel.clone(),
        };
        let mut reporter = self
            .show_progress
            .then(|| progress::Reporter::new(&crate::render::display_name(sc.name(), 40)));
        let result = sc.run(&opts, &mut |p| {
            if let Some(r) = reporter.as_mut() {
                r.observe(p);
            }
        });
        if let Some(r) = reporter {
            r.finish();
        }
        let report = result.with_context(|| format!("running scenario `{}`", sc.name()))?;
        let (id, elsewhere) = self.store_run(&report, started, &store_as);
        let claims = sc.claims(&report);
        Ok(Outcome {
            report,
            claims,
            id,
            elsewhere,
            took: t.elapsed(),
        })
    }

    /// Stores a finished run (see [`Pipeline::run`]): its id in the results
    /// database, or the database it was saved in instead.
    fn store_run(
        &mut self,
        r: &RunReport,
        started: SystemTime,
        how: &StoreAs,
    ) -> (Option<RunId>, Option<std::path::PathBuf>) {
        let Some(store) = self.store.as_mut() else {
            return (None, None);
        };
        let host = host_facts();
        let ended = SystemTime::now();
        let attempt = |store: &mut Store| match how {
            StoreAs::Run => store.save(r, &host, started, ended),
            StoreAs::SweepPoint(meta) => store.save_sweep_point(r, &host, started, ended, meta),
        };
        let name = crate::render::display_name(&r.scenario, 60);
        // Once runs go elsewhere, the database gets no second long wait.
        let wait = self.fallback.is_none().then(busy_wait);
        let why = match save_waiting(store, &attempt, wait, &name) {
            Ok(id) => return (Some(id), None),
            Err(runstore::StoreError::Busy { .. }) => match wait {
                Some(w) => format!("another process held it for {} s", w.as_secs()),
                None => "it is busy".to_string(),
            },
            Err(e) => crate::render::escape_controls(&e.to_string()),
        };
        let db = store.path().to_path_buf();
        let saved = self
            .fallback_store(&db)
            .and_then(|fb| Ok((attempt(fb)?, fb.path().to_path_buf())));
        match saved {
            Ok((_, path)) => {
                let merge = merge_command(&path, &db).map_or_else(
                    |_| "mmlab store merge (the names cannot be printed as a command)".into(),
                    |c| format!("merge it with: {c}"),
                );
                eprintln!(
                    "mmlab: warning: the run of {name} could not be stored in {} ({why}); it is \
                     saved in {} instead; {merge}",
                    crate::render::shown(&db),
                    crate::render::shown(&path)
                );
                (None, Some(path))
            }
            Err(e) => {
                self.unsaved += 1;
                eprintln!(
                    "mmlab: error: the run of {name} could not be stored in {} ({why}) nor in a \
                     database of its own ({}); only its report is left",
                    crate::render::shown(&db),
                    crate::render::escape_controls(&format!("{e:#}"))
                );
                (None, None)
            }
        }
    }

    /// The database runs go to when the results database `db` cannot
    /// take them: opened (created) at the first call, beside `db` or else
    /// in the temporary folder.
    fn fallback_store(&mut self, db: &std::path::Path) -> Result<&mut Store> {
        if self.fallback.is_none() {
            let mut name = db
                .file_stem()
                .map_or_else(|| "mmlab".into(), std::ffi::OsStr::to_os_string);
            name.push(format!("-unsaved-{}.db", std::process::id()));
            let beside = db
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            let mut errors = Vec::new();
            for dir in [beside.to_path_buf(), std::env::temp_dir()] {
                match Store::open(dir.join(&name)) {
                    Ok(s) => {
                        self.fallback = Some(s);
                        break;
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            if self.fallback.is_none() {
                bail!("{}", errors.join("; "));
            }
        }
        self.fallback
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("no database of its own"))
    }
}

/// How long a finished run waits for a busy results database before it is
/// saved in a database of its own: `MMLAB_BUSY_WAIT_S` seconds when set
/// (a finite number, 0 or more), else [`runstore::BUSY_TIMEOUT`].
pub fn busy_wait() -> Duration {
    std::env::var("MMLAB_BUSY_WAIT_S")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(runstore::BUSY_TIMEOUT)
}

/// `PROG store merge FROM --into INTO`, every word quoted for the shell.
///
/// # Errors
/// A name that cannot be printed as it is.
fn merge_command(from: &std::path::Path, into: &std::path::Path) -> Result<String> {
    use crate::cmd::{path_word, program_name};
    Ok(format!(
        "{} store merge {} --into {}",
        program_name()?,
        path_word(from)?,
        path_word(into)?
    ))
}

/// The scenario a report was run from, parsed from the text stored with
/// it through the catalog (`label` names the run in errors): how whatever
/// holds only a report (a stored run, a finished one) reaches its kind's
/// [`lab::Spec`] methods, its claims, tables and figures.
///
/// # Errors
/// The stored text no longer parses (a scenario kind or field this build
/// does not know).
pub fn stored_scenario(report: &RunReport, label: &str) -> Result<Scenario> {
    Ok(input::catalog().parse(&format!("<run {label}>"), &report.scenario_toml)?)
}

/// The source threads' claims on a stored report, from the scenario text
/// stored with it (`label` names the run in errors).
///
/// # Errors
/// The stored text no longer parses (a scenario kind or field this build
/// does not know).
pub fn stored_claims(report: &RunReport, label: &str) -> Result<Vec<Claim>> {
    Ok(stored_scenario(report, label)?.claims(report))
}

/// [`stored_claims`] of each stored run; a run whose text no longer
/// parses has none, with a warning on stderr.
pub fn stored_claims_or_warn(runs: &[runstore::StoredRun]) -> Vec<Vec<Claim>> {
    runs.iter()
        .map(|r| {
            let label = format!("#{}", r.summary.id);
            stored_claims(&r.report, &label).unwrap_or_else(|e| {
                eprintln!(
                    "mmlab: warning: run {label}: no claims: {}",
                    crate::render::escape_controls(&format!("{e:#}"))
                );
                Vec::new()
            })
        })
        .collect()
}

/// The facts stored with every run: this host and this build.
pub fn host_facts() -> HostFacts {
    HostFacts::detect(
        env!("CARGO_PKG_VERSION"),
        option_env!("MMLAB_GIT_COMMIT"),
        option_env!("MMLAB_GIT_DIRTY").map(|d| d == "1"),
    )
}

/// Saves with `attempt`, waiting up to `wait` (none: not at all) while
/// another process holds the database's write lock, saying so on stderr
/// and, every 5 s, how long it has waited.
fn save_waiting(
    store: &mut Store,
    attempt: &dyn Fn(&mut Store) -> Result<RunId, runstore::StoreError>,
    wait: Option<Duration>,
    name: &str,
) -> Result<RunId, runstore::StoreError> {
    store.set_busy_timeout(Duration::from_millis(200))?;
    let mut result = attempt(store);
    if let (Err(runstore::StoreError::Busy { .. }), Some(wait)) = (&result, wait) {
        eprintln!(
            "mmlab: {} is busy (another process is writing); waiting up to {} s to store the run \
             of {name}",
            crate::render::shown(store.path()),
            wait.as_secs()
        );
        let t = Instant::now();
        let mut told = 0;
        loop {
            let left = wait.saturating_sub(t.elapsed());
            if left.is_zero() {
                break;
            }
            // SQLite's busy handler waits (at most a second) for the lock.
            store.set_busy_timeout(left.min(Duration::from_secs(1)))?;
            result = attempt(store);
            if !matches!(result, Err(runstore::StoreError::Busy { .. })) {
                break;
            }
            let waited = t.elapsed().as_secs();
            if waited / 5 > told {
                told = waited / 5;
                eprintln!(
                    "mmlab: still waiting for {}: {waited} s of {} s",
                    crate::render::shown(store.path()),
                    wait.as_secs()
                );
            }
        }
    }
    let _ = store.set_busy_timeout(runstore::BUSY_TIMEOUT);
    result
}
