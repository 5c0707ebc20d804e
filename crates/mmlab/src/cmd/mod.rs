//! One module per command of the `mmlab` binary, and [`dispatch`], the
//! one entry `main.rs` calls.

pub mod bench;
pub mod calibrate;
pub mod list;
pub mod run;
pub mod stored;
pub mod suite;
pub mod sweep;

use crate::cli::{Cli, Command, CommonRunArgs, StoreCommand};
use crate::pipeline::{input, Outcome, Pipeline};
use crate::render;
use anyhow::Result;
use lab::report::RunReport;
use lab::{RunError, RunOptions};
use runstore::Store;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a Ctrl-C prints when it ends a run at once: runs are stored one
/// scenario at a time, each in one transaction, so what completed is kept
/// and the scenario under way leaves no trace.
const INTERRUPTED: &[u8] = b"\nmmlab: interrupted: the scenarios that completed are stored \
(see `mmlab history`); the one under way was not stored\n";

/// Runs the command `cli` asks for, writing its output to `out`.
///
/// # Errors
/// Whatever the command meets; [`is_interrupted`] tells a run stopped by
/// SIGINT/SIGTERM.
pub fn dispatch(cli: Cli, out: &mut dyn Write) -> Result<()> {
    let db = cli.global.db.as_path();
    match cli.command {
        None => suite::cmd_suite(&cli.suite, db, out),
        Some(Command::Suite(a)) => suite::cmd_suite(&a, db, out),
        Some(Command::Run(a)) => run::cmd_run(&a, db, out),
        Some(Command::List(a)) => list::cmd_list(a.json.as_deref(), out),
        Some(Command::Bench(a)) => bench::cmd_bench(&a, out),
        Some(Command::Calibrate(a)) => calibrate::cmd_calibrate(&a, out),
        Some(Command::History(a)) => stored::cmd_history(&a, db, out),
        Some(Command::Show(a)) => stored::cmd_show(&a, db, out),
        Some(Command::Compare(a)) => stored::cmd_compare(&a, db, out),
        Some(Command::Tag(a)) => stored::cmd_tag(&a, db, out),
        Some(Command::Report(a)) => stored::cmd_report(&a, db, out),
        Some(Command::Results(a)) => stored::cmd_results(&a, db, out),
        Some(Command::Sweep(a)) => sweep::cmd_sweep(&a, db, out),
        Some(Command::Store(StoreCommand::Merge(a))) => stored::cmd_store_merge(&a, out),
    }
}

/// Whether `e` is a run stopped by SIGINT/SIGTERM (after its cleanup).
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<RunError>(), Some(RunError::Cancelled)))
}

/// Installs the process's signal handler (`hostkernel::signals`) with the
/// message an interrupt prints, and returns its token.
///
/// # Errors
/// `sigaction` failed.
pub fn interrupts() -> Result<simcore::Cancel> {
    Ok(hostkernel::signals::install(Some(INTERRUPTED))?)
}

/// A command that runs scenarios: its pipeline (costs, limits, store,
/// cancellation) and its HTML report.
#[derive(Debug)]
pub struct Session {
    /// The pipeline every scenario of the command goes through.
    pub pipeline: Pipeline,
    /// Where the HTML report goes, if anywhere.
    pub html: Option<PathBuf>,
}

impl Session {
    /// Reads the costs, checks the output files (against each other and
    /// the results database `db` when runs are stored) and installs the
    /// signal handler, before any work.
    ///
    /// # Errors
    /// An unreadable cost file, a refused output path.
    pub fn open(common: &CommonRunArgs, db: &Path) -> Result<Session> {
        check_run_outputs(common, db)?;
        let mut pipeline = Pipeline::new(input::load_costs(common.costs.as_deref())?);
        pipeline.costs_path = common.costs.clone();
        pipeline.limits = common.limits();
        pipeline.force = common.limits.force;
        pipeline.cancel = interrupts()?;
        Ok(Session {
            pipeline,
            html: common.html.clone(),
        })
    }

    /// Opens (creating) the database runs are stored in, unless
    /// `--no-store`: after the estimates, before the first run, so a bad
    /// path, a foreign file or a busy database is reported at once.
    ///
    /// # Errors
    /// The database cannot be opened, is not mmlab's, or is busy.
    pub fn open_store(&mut self, common: &CommonRunArgs, db: &Path) -> Result<()> {
        if !common.no_store {
            self.pipeline.store = Some(Store::open(db)?);
        }
        Ok(())
    }

    /// The options a run outside the pipeline uses (the simulated twin).
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            context: self.pipeline.context(),
            cancel: self.pipeline.cancel.clone(),
        }
    }

    /// Writes the HTML report of `outcomes` (titled `title`) and says where
    /// they were stored, unless `quiet`.
    ///
    /// # Errors
    /// Writing the report or the output.
    pub fn finish(
        &self,
        outcomes: &[Outcome],
        title: &str,
        out: &mut dyn Write,
        quiet: bool,
    ) -> Result<()> {
        if let Some(p) = &self.html {
            let reports: Vec<RunReport> = outcomes.iter().map(|o| o.report.clone()).collect();
            let claims: Vec<_> = outcomes.iter().flat_map(|o| o.claims.clone()).collect();
            let host = crate::pipeline::host_facts();
            render::output::write_output(
                p,
                render::html::render_html_checked(title, &reports, &claims, Some(&host)).as_bytes(),
                out,
            )?;
            if !quiet && !render::output::is_stdout(p) {
                writeln!(out, "HTML report written to {}", p.display())?;
            }
        }
        let ids: Vec<String> = outcomes
            .iter()
            .filter_map(|o| o.id)
            .map(|i| format!("#{i}"))
            .collect();
        if let (false, Some(store)) = (quiet || ids.is_empty(), &self.pipeline.store) {
            writeln!(
                out,
                "stored as run {} in {} (mmlab show / compare / history)",
                ids.join(", "),
                store.path().display()
            )?;
        }
        Ok(())
    }
}

/// How a printed command names this program: `mmlab` when that name on
/// `PATH` is this very binary (after `cargo install --path crates/mmlab`),
/// else the binary's absolute path (`target/release/mmlab` after `cargo
/// run`), so the command runs as printed. Shell-quoted.
pub fn program_name() -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(exe) = std::env::current_exe() else {
        return "mmlab".into();
    };
    let same = |p: &Path| match (std::fs::metadata(p), std::fs::metadata(&exe)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.join("mmlab"))
        .find(|c| c.is_file());
    match on_path {
        Some(c) if same(&c) => "mmlab".into(),
        _ => render::shell_quote(&exe.display().to_string()),
    }
}

/// `path` as one word of a printed command: shell-quoted, and starting
/// with `./` when it would otherwise read as an option.
pub fn path_word(path: &Path) -> String {
    let s = path.display().to_string();
    if s.starts_with('-') {
        render::shell_quote(&format!("./{s}"))
    } else {
        render::shell_quote(&s)
    }
}

/// Checks the `--json` and `--html` outputs of a command that runs
/// scenarios: writable, distinct, and not the results database `db` (when
/// runs are stored).
///
/// # Errors
/// The first output refused.
pub fn check_run_outputs(common: &CommonRunArgs, db: &Path) -> Result<()> {
    let mut outs: Vec<(&str, &Path)> = Vec::new();
    if let Some(p) = &common.json {
        outs.push(("--json", p));
    }
    if let Some(p) = &common.html {
        outs.push(("--html", p));
    }
    render::output::check_outputs(&outs, (!common.no_store).then_some(db))
}

/// Whether a command's text output is left out because one of its
/// outputs (`--json`, `--html`) goes to standard output.
pub fn output_on_stdout(common: &CommonRunArgs) -> bool {
    [&common.json, &common.html]
        .into_iter()
        .flatten()
        .any(|p| render::output::is_stdout(p))
}

/// Says on stderr which policies' NUMA runs stopped at
/// `numab.max_virtual_s` before their workload finished.
pub fn warn_truncated(report: &RunReport) {
    let cut: Vec<&str> = report
        .policies
        .iter()
        .filter(|(_, r)| r.metrics.contains_key(sim::kinds::numab::run::TRUNCATED))
        .map(|(p, _)| p.as_str())
        .collect();
    if !cut.is_empty() {
        eprintln!(
            "mmlab: warning: {}: the runs of {} stopped at numab.max_virtual_s before the workload \
             finished; their figures are cut short (raise max_virtual_s or lower passes)",
            render::display_name(&report.scenario, 60),
            render::display_name(&cut.join(", "), 200)
        );
    }
}
