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
//!    keeps what completed);
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
    /// The stored run, unless the store is off.
    pub id: Option<RunId>,
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
    /// # Errors
    /// The run fails (a cancelled run: [`lab::RunError::Cancelled`] in the
    /// chain), or storing it fails.
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
        let id = match self.store.as_mut() {
            Some(st) => Some(save(st, &report, started, &store_as)?),
            None => None,
        };
        let claims = sc.claims(&report);
        Ok(Outcome {
            report,
            claims,
            id,
            took: t.elapsed(),
        })
    }
}

/// The source threads' claims on a stored report, from the scenario text
/// stored with it (`label` names the run in errors).
///
/// # Errors
/// The stored text no longer parses (a scenario kind or field this build
/// does not know).
pub fn stored_claims(report: &RunReport, label: &str) -> Result<Vec<Claim>> {
    let sc = input::catalog().parse(&format!("<run {label}>"), &report.scenario_toml)?;
    Ok(sc.claims(report))
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

/// Stores one report, waiting (and saying so on stderr) when another
/// process holds the database's write lock.
fn save(store: &mut Store, r: &RunReport, started: SystemTime, how: &StoreAs) -> Result<RunId> {
    let host = host_facts();
    let ended = SystemTime::now();
    let attempt = |store: &mut Store| match how {
        StoreAs::Run => store.save(r, &host, started, ended),
        StoreAs::SweepPoint(meta) => store.save_sweep_point(r, &host, started, ended, meta),
    };
    store.set_busy_timeout(Duration::from_millis(200))?;
    let res = match attempt(store) {
        Err(runstore::StoreError::Busy { .. }) => {
            eprintln!(
                "mmlab: {} is busy (another process is writing); waiting up to {} s to store the run",
                store.path().display(),
                runstore::BUSY_TIMEOUT.as_secs()
            );
            store.set_busy_timeout(runstore::BUSY_TIMEOUT)?;
            attempt(store)
        }
        other => other,
    };
    res.with_context(|| format!("storing the run of {}", r.scenario))
}
