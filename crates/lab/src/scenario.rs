//! The scenario-kind interface: what every kind of scenario file provides,
//! and the one handle ([`Scenario`]) the front ends use.
//!
//! A scenario file is TOML whose `kind` key picks its [`Kind`]: the
//! simulated kinds of the `sim` crate (`stats`, `numab`, `refault`) or
//! kernel mode's `kernel` kind.
//! A [`Kind`] is data: its name, numeric ranges, built-in files and a
//! parser that makes the shared [`Header`] and the kind's own [`Spec`]; a
//! spec estimates its cost, runs, and states its claims. Whatever else a
//! kind offers a front end is a [`Spec`] method with a default, so a front
//! end never needs the concrete type: a reproducer script, its runs beside
//! a simulation of the same shapes ([`SideBySide`]), and its own tables and
//! figures of a run ([`Table`], [`Figure`]).
//! [`crate::Catalog`] holds the kinds a program knows and parses any file
//! through them.
//!
//! Adding a kind is one folder with a `static KIND: Kind` and a type
//! implementing [`Spec`], and one line where its catalog is built.
//!
//! ```text
//!   file ──Catalog::parse──▶ Kind::parse ──▶ Scenario { Header, Box<dyn Spec> }
//!                                             │ estimate · run · claims
//!                                             ▼
//!                                          RunReport ──▶ tables · figures ·
//!                                                        compare_with_simulation
//! ```

use crate::error::{RunError, ScenarioError};
use crate::estimate::{Estimate, WorkClass};
use crate::policy::UserPolicy;
use crate::progress::{Context, Progress, RunOptions, Steps};
use crate::ranges::{self, Range};
use crate::report::{Claim, Figure, Mode, PolicyResult, RunReport, SideBySide, Table};
use crate::source::{self, Source};
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;

/// The keys every scenario file has, whatever its kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Scenario name.
    pub name: String,
    /// Simulated, real threads, or the host's kernel.
    pub mode: Mode,
    /// One-line description.
    pub description: String,
    /// Which source thread it reproduces and the published figures (empty
    /// when the file does not say).
    pub reproduces: String,
    /// Policies to compare; the first is the baseline of %change.
    pub policies: Vec<String>,
    /// Runs per policy.
    pub runs: u32,
    /// Base seed of the random number generator (run `i` uses `seed + i`).
    pub seed: u64,
    /// User flush policies (`[[policy]]` tables, resolved when the file
    /// was parsed), for the kinds that run flush policies.
    pub user_policies: Vec<UserPolicy>,
}

impl Header {
    /// What the flush policy `name` selects ([`crate::policy::resolve`]):
    /// a preset, the pre-rstat baseline or one of this header's user
    /// policies.
    ///
    /// # Errors
    /// [`RunError::UnknownPolicy`] for a name none of them has (a parsed
    /// scenario's names are checked against its runner's, so this is a
    /// runner that lists a name it cannot run).
    pub fn flush_policy(&self, name: &str) -> Result<crate::policy::FlushPolicy, RunError> {
        crate::policy::resolve(&self.user_policies, name).ok_or_else(|| RunError::UnknownPolicy {
            name: name.to_string(),
            scenario: self.name.clone(),
            known: crate::policy::FlushPolicy::builtin_names()
                .into_iter()
                .chain(self.user_policies.iter().map(|u| u.name().to_string()))
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

/// One kind of scenario file (the `kind` key): its name, the range of
/// every numeric field of its files (besides the shared
/// [`ranges::HEADER`]), its built-in files, and its parser. A kind is data:
/// each kind's folder declares one `static KIND: Kind`.
#[derive(Clone, Copy)]
pub struct Kind {
    /// The `kind` key's value.
    pub name: &'static str,
    /// The ranges of its numeric fields ([`ranges`]).
    pub ranges: &'static [Range],
    /// The scenarios of this kind embedded in the binary, `(name, TOML)`,
    /// in the order `mmlab list` shows them.
    pub builtins: &'static [(&'static str, &'static str)],
    /// The classes of work its estimates count in, with their probes.
    pub work_classes: &'static [&'static WorkClass],
    /// Parses and validates a file of this kind (its ranges are checked
    /// before): the shared header and the kind's own spec, or a
    /// [`ScenarioError`] with the file, line and field of the first
    /// problem.
    pub parse: ParseFn,
}

/// A kind's parser: a file's shared header and the kind's own spec.
pub type ParseFn = fn(&Source<'_>) -> Result<(Header, Box<dyn Spec>), ScenarioError>;

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kind").field("name", &self.name).finish()
    }
}

/// What every [`Spec`] gets from being `Clone + 'static` (a blanket
/// implementation): boxed copies and downcasts.
pub trait SpecObject {
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn Spec>;
    /// The concrete spec, for [`Scenario::spec_as`]: tests, examples and
    /// diagnosis tools of the kind's own crate that read its typed spec.
    fn as_any(&self) -> &dyn Any;
    /// As [`SpecObject::as_any`], to adjust it ([`Scenario::spec_as_mut`]).
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Spec + Clone> SpecObject for T {
    fn clone_box(&self) -> Box<dyn Spec> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A parsed scenario of one kind: everything beyond the [`Header`].
pub trait Spec: SpecObject + fmt::Debug + Send + Sync + 'static {
    /// The built-in policy names its runner accepts (user policies come on
    /// top, when [`Spec::user_policies_refused`] is `None`).
    fn known_policies(&self) -> Vec<String>;

    /// Why `[[policy]]` tables cannot be added (the kind runs scanner
    /// versions, layouts or the host's kernel); `None` when they can.
    fn user_policies_refused(&self) -> Option<&'static str> {
        None
    }

    /// What `mmlab list` says about its size: logical CPUs in sim mode,
    /// threads in real mode.
    fn parallelism(&self, header: &Header) -> u32;

    /// The estimated cost of running it as it stands (`ctx`: what the
    /// front end hands the kinds, the simulator's costs among them).
    fn estimate(&self, header: &Header, ctx: &Context) -> Estimate;

    /// Runs every policy `header.runs` times (run `i` with seed
    /// `header.seed + i`, runs interleaved across policies).
    ///
    /// # Errors
    /// Engine and model errors, [`RunError::Cancelled`].
    fn run(&self, header: &Header, steps: &mut Steps<'_>) -> Result<RunOutput, RunError>;

    /// The source threads' claims on `report`, a run of this scenario.
    fn claims(&self, report: &RunReport) -> Vec<Claim>;

    /// The text stored with a run (re-parsing it runs the same scenario).
    fn source(&self, header: &Header) -> String;

    /// Sets the measured duration per run (`--duration-ms`); kinds that
    /// size their runs in their own tables ignore it.
    fn set_duration_ms(&mut self, _ms: u64) {}

    /// Shrinks it for a smoke test (`--quick`).
    fn shrink_for_smoke_test(&mut self, header: &mut Header);

    /// Whether this host can run it; `Err` holds the reason a suite prints
    /// as `skipped: <reason>`.
    fn availability(&self) -> Result<(), String> {
        Ok(())
    }

    /// For a policy sweep: the default plot axes (`metric` or
    /// `metric.pXX`), or `None` when the kind runs no flush policies.
    fn sweep_axes(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// For a policy sweep: shorter runs than the file's.
    fn set_sweep_durations(&mut self, duration_ms: Option<u64>, _warmup_ms: Option<u64>) {
        if let Some(ms) = duration_ms {
            self.set_duration_ms(ms);
        }
    }

    /// A POSIX shell script that shows what this scenario finds without
    /// the lab (`mmlab run NAME --reproducer FILE`), or `None` (the
    /// default) when it has none.
    fn reproducer(&self) -> Option<String> {
        None
    }

    /// Whether [`Spec::compare_with_simulation`] has a simulation to put
    /// the runs beside (a front end asks before running); `false` by
    /// default.
    fn has_simulated_twin(&self) -> bool {
        false
    }

    /// The measured figures of `report`, a run of this scenario, beside
    /// the kind's simulation of the same shapes (`--compare-sim`);
    /// `opts` gives the simulation its costs when the report does not hold
    /// its predictions. `None` (the default) when the kind has no
    /// simulated twin.
    ///
    /// # Errors
    /// The simulation fails, or what it needs is missing.
    fn compare_with_simulation(
        &self,
        _header: &Header,
        _report: &RunReport,
        _opts: &RunOptions,
    ) -> Option<Result<SideBySide, RunError>> {
        None
    }

    /// The kind's own tables of `report`, a run of this scenario (kernel
    /// mode: its metrics pivoted by the experiment's shape), which a front
    /// end shows instead of its generic table of every metric by policy;
    /// none (the default): the generic table.
    fn tables(&self, _report: &RunReport) -> Vec<Table> {
        Vec::new()
    }

    /// The kind's own plots of `report`, a run of this scenario, which a
    /// front end shows after its generic plots; none by default.
    fn figures(&self, _report: &RunReport) -> Vec<Figure> {
        Vec::new()
    }
}

/// What a run of a spec produced: results by policy and facts about what
/// ran (kernel mode: the host's kernel, cgroup version, online CPUs ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutput {
    /// Results by policy name.
    pub policies: BTreeMap<String, PolicyResult>,
    /// Facts by name; empty for the simulated kinds.
    pub facts: BTreeMap<String, String>,
}

impl From<BTreeMap<String, PolicyResult>> for RunOutput {
    fn from(policies: BTreeMap<String, PolicyResult>) -> RunOutput {
        RunOutput {
            policies,
            facts: BTreeMap::new(),
        }
    }
}

/// The command-line overrides of a scenario's header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Policies to run instead of the file's (empty: keep the file's).
    pub policies: Vec<String>,
    /// Runs per policy.
    pub runs: Option<u32>,
    /// Base seed.
    pub seed: Option<u64>,
    /// Measured duration per run in milliseconds (the stats kind; the
    /// other kinds size their runs in their own tables).
    pub duration_ms: Option<u64>,
}

/// A parsed, validated scenario of any kind.
pub struct Scenario {
    kind: &'static Kind,
    header: Header,
    spec: Box<dyn Spec>,
}

impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field("kind", &self.kind.name)
            .field("header", &self.header)
            .field("spec", &self.spec)
            .finish()
    }
}

impl Clone for Scenario {
    fn clone(&self) -> Scenario {
        Scenario {
            kind: self.kind,
            header: self.header.clone(),
            spec: self.spec.clone_box(),
        }
    }
}

impl Scenario {
    /// Parses `src` as a file of `kind`: its ranges, its parser, then the
    /// policies against the runner's names.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the file, line and field of the first
    /// problem.
    pub fn parse_as(kind: &'static Kind, src: &Source<'_>) -> Result<Scenario, ScenarioError> {
        // The kind's own table first: it may narrow a shared key (`runs`).
        ranges::check(src, &[kind.ranges, &ranges::HEADER, &ranges::POLICY])?;
        let (header, spec) = (kind.parse)(src)?;
        if header.name.trim().is_empty() {
            return Err(src.error("name", "must not be empty"));
        }
        let sc = Scenario { kind, header, spec };
        sc.check_policies().map_err(|m| src.error("policies", m))?;
        Ok(sc)
    }

    /// A scenario built in code from its parts (kernel mode's simulated
    /// twin): the same policy check as a parsed file.
    ///
    /// # Errors
    /// The message naming the first unknown or repeated policy.
    pub fn from_parts(
        kind: &'static Kind,
        header: Header,
        spec: Box<dyn Spec>,
    ) -> Result<Scenario, String> {
        let sc = Scenario { kind, header, spec };
        sc.check_policies()?;
        Ok(sc)
    }

    /// The kind's name (`stats`, `numab`, `refault`, `kernel`).
    pub fn kind(&self) -> &'static str {
        self.kind.name
    }

    /// The shared header keys.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The kind's own part.
    pub fn spec(&self) -> &dyn Spec {
        self.spec.as_ref()
    }

    /// The kind's own part as its concrete type, if it is a `T`: for the
    /// tests, examples and diagnosis tools of the kind's own crate, which
    /// know its type. A front end asks the [`Spec`] methods instead.
    pub fn spec_as<T: 'static>(&self) -> Option<&T> {
        self.spec.as_any().downcast_ref()
    }

    /// The kind's own part as its concrete type, to adjust it (tests and
    /// examples that shrink a built-in scenario in the kind's own terms).
    pub fn spec_as_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.spec.as_any_mut().downcast_mut()
    }

    /// The shared header keys, to adjust them.
    pub fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    /// Scenario name.
    pub fn name(&self) -> &str {
        &self.header.name
    }

    /// One-line description.
    pub fn description(&self) -> &str {
        &self.header.description
    }

    /// Which source thread it reproduces and the published figures.
    pub fn reproduces(&self) -> &str {
        &self.header.reproduces
    }

    /// Simulated, real or kernel.
    pub fn mode(&self) -> Mode {
        self.header.mode
    }

    /// Policies to compare, the first is the baseline of %change.
    pub fn policies(&self) -> &[String] {
        &self.header.policies
    }

    /// Runs per policy.
    pub fn runs(&self) -> u32 {
        self.header.runs
    }

    /// Base seed (run `i` uses `seed + i`).
    pub fn seed(&self) -> u64 {
        self.header.seed
    }

    /// Logical CPUs (sim) or threads (real) it uses.
    pub fn parallelism(&self) -> u32 {
        self.spec.parallelism(&self.header)
    }

    /// The user policies (`[[policy]]` tables) it defines.
    pub fn user_policies(&self) -> &[UserPolicy] {
        &self.header.user_policies
    }

    /// The text stored with a run.
    pub fn source(&self) -> String {
        self.spec.source(&self.header)
    }

    /// The estimated cost of running it as it stands (after overrides).
    pub fn estimate(&self, ctx: &Context) -> Estimate {
        self.spec.estimate(&self.header, ctx)
    }

    /// Whether this host can run it (`Err`: the reason).
    pub fn availability(&self) -> Result<(), String> {
        self.spec.availability()
    }

    /// The policy names its runner accepts: the runner's own, then the
    /// user policies.
    pub fn known_policies(&self) -> Vec<String> {
        let mut known = self.spec.known_policies();
        if self.spec.user_policies_refused().is_none() {
            known.extend(
                self.header
                    .user_policies
                    .iter()
                    .map(|p| p.name().to_string()),
            );
        }
        known
    }

    /// Checks that every policy is known to the runner and named once.
    ///
    /// # Errors
    /// The message naming the first unknown or repeated policy.
    pub fn check_policies(&self) -> Result<(), String> {
        let known = self.known_policies();
        let policies = &self.header.policies;
        if policies.is_empty() {
            return Err("at least one policy is needed".into());
        }
        for (i, p) in policies.iter().enumerate() {
            if !known.iter().any(|k| k == p) {
                return Err(format!(
                    "unknown policy `{}` (known: {})",
                    source::escape(p),
                    known.join(", ")
                ));
            }
            if policies[..i].contains(p) {
                return Err(format!("policy `{p}` is listed twice"));
            }
        }
        Ok(())
    }

    /// Adds user policies (from a policy file named on the command line or
    /// a sweep point) so that runs can name them; the stored text then
    /// holds their definitions. A policy already defined identically is
    /// left as it is.
    ///
    /// # Errors
    /// A message when the scenario runs no flush policies or a name is
    /// already defined differently.
    pub fn add_policies(&mut self, specs: &[UserPolicy]) -> Result<(), String> {
        if let Some(why) = self.spec.user_policies_refused() {
            return Err(format!("scenario `{}` {why}", self.header.name));
        }
        let list = &mut self.header.user_policies;
        for s in specs {
            match list.iter().find(|o| o.name() == s.name()) {
                Some(o) if o == s => {}
                Some(_) => {
                    return Err(format!(
                        "policy `{}` is defined twice, differently",
                        s.name()
                    ))
                }
                None => list.push(s.clone()),
            }
        }
        Ok(())
    }

    /// Applies command-line overrides.
    pub fn apply(&mut self, o: &Overrides) {
        if !o.policies.is_empty() {
            // A policy named twice runs once (the first place counts).
            let mut seen = std::collections::HashSet::with_capacity(o.policies.len());
            self.header.policies = o
                .policies
                .iter()
                .filter(|p| seen.insert(p.as_str()))
                .cloned()
                .collect();
        }
        if let Some(r) = o.runs {
            self.header.runs = r;
        }
        if let Some(s) = o.seed {
            self.header.seed = s;
        }
        if let Some(d) = o.duration_ms {
            self.spec.set_duration_ms(d);
        }
    }

    /// For a policy sweep: its default axes, or `None` when the scenario
    /// runs no flush policies.
    pub fn sweep_axes(&self) -> Option<(&'static str, &'static str)> {
        self.spec.sweep_axes()
    }

    /// For a policy sweep: shorter runs than the file's.
    pub fn set_sweep_durations(&mut self, duration_ms: Option<u64>, warmup_ms: Option<u64>) {
        self.spec.set_sweep_durations(duration_ms, warmup_ms);
    }

    /// Shrinks it for a smoke test (`mmlab --quick`); each kind says how.
    pub fn shrink_for_smoke_test(&mut self) {
        self.spec.shrink_for_smoke_test(&mut self.header);
    }

    /// Runs it and assembles its report (the one place a report is made).
    ///
    /// # Errors
    /// Unknown policies, engine and model errors, [`RunError::Cancelled`].
    pub fn run(
        &self,
        opts: &RunOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RunReport, RunError> {
        if let Err(message) = self.check_policies() {
            return Err(ScenarioError {
                file: format!("<scenario {}>", self.header.name),
                line: None,
                field: "policies".into(),
                message,
            }
            .into());
        }
        let out = self
            .spec
            .run(&self.header, &mut Steps::new(opts, progress))?;
        Ok(RunReport {
            scenario: self.header.name.clone(),
            mode: self.header.mode,
            runs: self.header.runs,
            seed: self.header.seed,
            scenario_toml: self.source(),
            policy_order: self.header.policies.clone(),
            policies: out.policies,
            facts: out.facts,
        })
    }

    /// The source threads' claims on `report`, a run of this scenario.
    pub fn claims(&self, report: &RunReport) -> Vec<Claim> {
        self.spec.claims(report)
    }

    /// Its reproducer script, if its kind has one ([`Spec::reproducer`]).
    pub fn reproducer(&self) -> Option<String> {
        self.spec.reproducer()
    }

    /// Whether its runs can be put beside a simulation of the same shapes
    /// ([`Spec::has_simulated_twin`]).
    pub fn has_simulated_twin(&self) -> bool {
        self.spec.has_simulated_twin()
    }

    /// The measured figures of `report`, a run of this scenario, beside
    /// its kind's simulation ([`Spec::compare_with_simulation`]); `None`
    /// when the kind has none.
    pub fn compare_with_simulation(
        &self,
        report: &RunReport,
        opts: &RunOptions,
    ) -> Option<Result<SideBySide, RunError>> {
        self.spec
            .compare_with_simulation(&self.header, report, opts)
    }

    /// Its kind's own tables of `report` ([`Spec::tables`]); empty: the
    /// generic table.
    pub fn tables(&self, report: &RunReport) -> Vec<Table> {
        self.spec.tables(report)
    }

    /// Its kind's own plots of `report` ([`Spec::figures`]).
    pub fn figures(&self, report: &RunReport) -> Vec<Figure> {
        self.spec.figures(report)
    }
}
