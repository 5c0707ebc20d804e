//! Command-line syntax (clap derive), converted once into validated
//! requests by `main.rs`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// mmlab: reproduce the experiments of the Linux memcg statistics threads
/// on the hierstat engine, under every flush policy, side by side.
///
/// With no command, runs the default suite (every scenario with the
/// policies that tell its story) and prints a readable report.
#[derive(Debug, Parser)]
#[command(name = "mmlab", version, propagate_version = true)]
pub struct Cli {
    /// What to do (default: the suite).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options every command takes (before or after its name).
    #[command(flatten)]
    pub global: DbArgs,
    /// The suite's options, when no command is given.
    #[command(flatten)]
    pub suite: SuiteArgs,
}

impl Cli {
    /// Refuses the suite's options next to a subcommand (`mmlab --quick
    /// history`): they would be silently ignored. Only the global `--db`
    /// goes anywhere.
    ///
    /// # Errors
    /// A usage error naming the misplaced options.
    pub fn check(&self) -> Result<(), String> {
        let s = &self.suite;
        let c = &s.common;
        let set = s.quick
            || s.verbose
            || !s.only.is_empty()
            || c.json.is_some()
            || c.costs.is_some()
            || c.html.is_some()
            || c.no_store
            || c.limits.any_set();
        if self.command.is_some() && set {
            return Err(
                "the suite's options (--quick, --json, --html, --costs, --no-store, --force, -v) \
                 go after `suite` or with no command; only --db goes before a command"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the default suite: every scenario, the policies that tell its
    /// story, key figures against the source threads'.
    Suite(SuiteArgs),
    /// Run one scenario (a built-in name or a TOML file).
    Run(RunArgs),
    /// List the built-in scenarios, the flush policies and the NUMA
    /// scanner versions.
    List(ListArgs),
    /// Engine ratios against the baselines, and the simulator's speed.
    Bench(BenchArgs),
    /// Measure the simulator's per-unit costs on this host and save them.
    Calibrate(CalibrateArgs),
    /// List stored runs, newest last (optionally of one scenario).
    History(HistoryArgs),
    /// Print a stored run (its report as `run` printed it).
    Show(ShowArgs),
    /// Compare stored runs policy by policy (`last`, `last~1`, `#12`, tags).
    Compare(CompareArgs),
    /// Name a stored run.
    Tag(TagArgs),
    /// Write the HTML report of stored runs.
    Report(ReportArgs),
    /// Write the results tables (claims per suite scenario, from the
    /// newest stored runs, with date, commit and host) as Markdown.
    Results(ResultsArgs),
    /// Run a policy sweep file (a `[sweep]` table): the grid of knob
    /// values × seeds, every point stored, a table and a trade-off plot.
    Sweep(SweepArgs),
    /// Maintain results databases (`store merge`).
    #[command(subcommand)]
    Store(StoreCommand),
}

/// `mmlab sweep`.
#[derive(Debug, Args, Clone)]
pub struct SweepArgs {
    /// The sweep file (TOML with a `[sweep]` table).
    pub file: PathBuf,
    /// Print one independent command per grid point (for a Slurm job
    /// array, Kubernetes Jobs or GNU parallel) and run nothing.
    #[arg(long)]
    pub plan: bool,
    /// Run only slice I of N (1-based): every N-th job from the I-th.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Write the HTML report (table and trade-off plot) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Per-unit simulator costs (TOML written by `mmlab calibrate`).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// The pre-run limits every job is estimated against.
    #[command(flatten)]
    pub limits: LimitArgs,
    // The points go to the global `--db` (jobs already stored there are not
    // run again).
}

/// `mmlab store …`.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Merge results databases into one (idempotent; runs keep their
    /// identity; refuses databases of another schema version).
    Merge(MergeArgs),
}

/// `mmlab store merge`.
#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// The databases to merge.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// The database to merge into (created if missing).
    #[arg(long, value_name = "FILE")]
    pub into: PathBuf,
}

/// The results database option, global: `mmlab --db x history` and
/// `mmlab history --db x` alike. Commands that store runs open (creating)
/// it before any work; commands that read runs never create it.
#[derive(Debug, Args, Clone, Default)]
pub struct DbArgs {
    /// The results database (SQLite).
    #[arg(long, value_name = "FILE", default_value = "mmlab.db", global = true)]
    pub db: PathBuf,
}

/// `mmlab list`.
#[derive(Debug, Args, Clone, Default)]
pub struct ListArgs {
    /// Write the list as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `mmlab history`.
#[derive(Debug, Args, Clone)]
pub struct HistoryArgs {
    /// Only runs of this scenario.
    pub scenario: Option<String>,
    /// Write the runs as JSON to FILE (`-` for stdout, replacing the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `mmlab show`.
#[derive(Debug, Args, Clone)]
pub struct ShowArgs {
    /// The run (`last`, `last~N`, an id, `#id` or a tag).
    pub run: String,
    /// Write the run as JSON to FILE (`-` for stdout, replacing the text):
    /// its facts and the report as `mmlab run --json` writes it.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `mmlab compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// Two or more runs; the first is the baseline.
    #[arg(num_args = 2.., required = true)]
    pub runs: Vec<String>,
    /// Also write the comparison as a self-contained HTML file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Compare runs of different scenarios anyway (refused by default).
    #[arg(long)]
    pub force: bool,
}

/// `mmlab tag`.
#[derive(Debug, Args, Clone)]
pub struct TagArgs {
    /// The run.
    pub run: String,
    /// The name.
    pub name: String,
}

/// `mmlab report`.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// One or more runs.
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// The HTML file to write (default `out/mmlab-report.html`, as the
    /// suite's).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `mmlab results`.
#[derive(Debug, Args, Clone)]
pub struct ResultsArgs {
    /// Write the Markdown to FILE (`-` or absent: standard output), e.g.
    /// `docs/results.md`.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// Options shared by the commands that run scenarios.
#[derive(Debug, Args, Clone)]
pub struct CommonRunArgs {
    /// Write the results as JSON to FILE (`-` for stdout, replacing the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Per-unit simulator costs (TOML written by `mmlab calibrate`).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// Also write a self-contained HTML report with plots to FILE (the
    /// suite writes `out/mmlab-report.html` when this is not given).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Do not store the run in the results database.
    #[arg(long)]
    pub no_store: bool,
    /// The pre-run limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

impl CommonRunArgs {
    /// The pre-run limits ([`LimitArgs::limits`]).
    pub fn limits(&self) -> lab::Limits {
        self.limits.limits()
    }
}

/// The pre-run limits of the commands that run scenarios.
#[derive(Debug, Args, Clone, Default)]
pub struct LimitArgs {
    /// Run even when the pre-run estimate (time, memory, threads) is over
    /// the limits.
    #[arg(long)]
    pub force: bool,
    /// Refuse runs estimated above this many simulated events (default
    /// 2e10).
    #[arg(long, value_name = "N", value_parser = limit_value, allow_hyphen_values = true)]
    pub max_events: Option<f64>,
    /// Refuse runs estimated above this much model memory in MiB (default
    /// 4096).
    #[arg(long, value_name = "MIB", value_parser = limit_value, allow_hyphen_values = true)]
    pub max_memory_mib: Option<f64>,
    /// Refuse runs estimated to take longer than this many seconds on
    /// this host (default 3600).
    #[arg(long, value_name = "S", value_parser = limit_value, allow_hyphen_values = true)]
    pub max_seconds: Option<f64>,
}

/// A limit's value: a finite number, 0 or more. NaN compares false with
/// every estimate (so it would let anything through), infinity and
/// negative numbers are no limit a user means: all refused at parsing.
///
/// # Errors
/// The message clap prints after the option's name.
pub fn limit_value(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number (a finite number, 0 or more)"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("must be a finite number, 0 or more (got {s})"))
    }
}

impl LimitArgs {
    /// The limits: the defaults, lowered or raised by `--max-events`,
    /// `--max-memory-mib` and `--max-seconds`.
    pub fn limits(&self) -> lab::Limits {
        let mut l = lab::Limits::default();
        if let Some(e) = self.max_events {
            l.events = e;
        }
        if let Some(m) = self.max_memory_mib {
            l.memory_bytes = m * f64::from(1u32 << 20);
        }
        if let Some(s) = self.max_seconds {
            l.seconds = s;
        }
        l
    }

    /// Whether any of them was given.
    pub fn any_set(&self) -> bool {
        self.force
            || self.max_events.is_some()
            || self.max_memory_mib.is_some()
            || self.max_seconds.is_some()
    }

    /// The options as given, as command-line words (for `--plan`).
    pub fn to_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.force {
            v.push("--force".to_string());
        }
        for (flag, value) in [
            ("--max-events", self.max_events),
            ("--max-memory-mib", self.max_memory_mib),
            ("--max-seconds", self.max_seconds),
        ] {
            if let Some(x) = value {
                v.push(flag.to_string());
                v.push(x.to_string());
            }
        }
        v
    }
}

/// `mmlab suite`.
#[derive(Debug, Args, Clone)]
pub struct SuiteArgs {
    /// Common options.
    #[command(flatten)]
    pub common: CommonRunArgs,
    /// Reduced sizes and one run each (a smoke test, not the source threads' sizes).
    #[arg(long)]
    pub quick: bool,
    /// Print every scenario's full tables (the default prints one line per
    /// scenario and the claims; the HTML report has the tables).
    #[arg(long, short)]
    pub verbose: bool,
    /// Only these suite scenarios (comma-separated names, suite order).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub only: Vec<String>,
}

/// `mmlab run`.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// A built-in scenario name (see `mmlab list`) or a scenario TOML file.
    pub scenario: String,
    /// Policy to run (repeatable; replaces the scenario's list, the first
    /// is the baseline of %change): a built-in name, a `[[policy]]` of the
    /// scenario file, or a policy file (`scenarios/policies/*.toml`), which
    /// stands for all its policies.
    #[arg(long = "policy", short = 'p', value_name = "P")]
    pub policies: Vec<String>,
    /// Runs per policy.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// Base seed (run i uses seed + i).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Measured duration per run in milliseconds (virtual in sim mode).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub duration_ms: Option<u64>,
    /// Kernel scenarios: also simulate the same shapes under the preset of
    /// the host kernel's era (linux-5.15 before 6.8, linux-6.8 before 6.16,
    /// linux-6.17 from 6.16) and print the host's figures beside the
    /// simulated ones with their ratio.
    #[arg(long)]
    pub compare_sim: bool,
    /// Reduced sizes and one run (as `mmlab --quick`).
    #[arg(long)]
    pub quick: bool,
    /// Kernel scenarios with a finding (stale-read-kernel): write its
    /// reproducer to FILE, a POSIX shell script over cgroupfs to run as
    /// root without mmlab, instead of running the scenario.
    #[arg(long, value_name = "FILE")]
    pub reproducer: Option<PathBuf>,

    /// Print the pre-run estimate (time, memory, threads) against the
    /// limits and run nothing.
    #[arg(long)]
    pub estimate: bool,
    /// Common options.
    #[command(flatten)]
    pub common: CommonRunArgs,
}

/// `mmlab bench`.
#[derive(Debug, Args, Clone, Default)]
pub struct BenchArgs {
    /// Write `{"ns_per_op": .., "ratios": .., "rates": ..}` to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Shorter measurements (noisier).
    #[arg(long)]
    pub quick: bool,
}

/// `mmlab calibrate`.
#[derive(Debug, Args, Clone, Default)]
pub struct CalibrateArgs {
    /// Where to save the costs (the file `--costs` reads).
    #[arg(
        long = "costs",
        short,
        visible_alias = "out",
        value_name = "FILE",
        default_value = "mmlab-costs.toml"
    )]
    pub out: PathBuf,
    /// Shorter measurements (noisier).
    #[arg(long)]
    pub quick: bool,
    /// Leave the `[kernel]` table at the shipped values (no kernel-mode
    /// measurement, which needs root and a writable memory controller).
    #[arg(long)]
    pub no_kernel: bool,
    /// Also count the stat updates per fault with the memcg tracepoints
    /// (enables and filters tracefs events while it runs).
    #[arg(long)]
    pub count_updates: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_parses_repeated_policies() {
        let c = Cli::try_parse_from([
            "mmlab",
            "run",
            "stale-read",
            "-p",
            "linux-6.8",
            "--policy",
            "hierstat",
            "--runs",
            "2",
        ])
        .unwrap();
        match c.command {
            Some(Command::Run(r)) => {
                assert_eq!(r.policies, vec!["linux-6.8", "hierstat"]);
                assert_eq!(r.runs, Some(2));
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["mmlab", "run", "x", "--runs", "0"]).is_err());
    }

    #[test]
    fn db_is_global() {
        for argv in [
            &["mmlab", "--db", "x.db", "history"][..],
            &["mmlab", "history", "--db", "x.db"][..],
            &["mmlab", "--db", "x.db"][..],
            &["mmlab", "run", "stale-read", "--db", "x.db", "--quick"][..],
        ] {
            let c = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            assert_eq!(c.global.db, PathBuf::from("x.db"), "{argv:?}");
        }
    }
}
