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

/// What a Ctrl-C prints when it ends a run that stores nothing
/// (`--no-store`).
const INTERRUPTED_NO_STORE: &[u8] =
    b"\nmmlab: interrupted: nothing was stored (--no-store); the results of the run under way \
are lost\n";

/// Runs the command `cli` asks for, writing its output to `out`.
///
/// # Errors
/// Whatever the command meets; [`is_interrupted`] tells a run stopped by
/// SIGINT/SIGTERM.
pub fn dispatch(cli: Cli, out: &mut dyn Write) -> Result<()> {
    let db = cli.global.db.as_path();
    // Every output of every command, checked once before any work.
    render::output::check_outputs(&outputs(&cli), db)?;
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

/// Every file the command of `cli` writes, with the option that names it
/// (the suite's default HTML report aside: its path is chosen when the
/// suite starts, and checked then). [`dispatch`] checks them together
/// before the command does anything ([`render::output::check_outputs`]):
/// a command with an output adds it here.
pub fn outputs(cli: &Cli) -> Vec<(&'static str, &Path)> {
    let mut v: Vec<(&'static str, Option<&Path>)> = Vec::new();
    fn run(c: &CommonRunArgs) -> [(&'static str, Option<&Path>); 2] {
        [("--json", c.json.as_deref()), ("--html", c.html.as_deref())]
    }
    match &cli.command {
        None => v.extend(run(&cli.suite.common)),
        Some(Command::Suite(a)) => v.extend(run(&a.common)),
        Some(Command::Run(a)) => {
            v.extend(run(&a.common));
            v.push(("--reproducer", a.reproducer.as_deref()));
        }
        Some(Command::List(a)) => v.push(("--json", a.json.as_deref())),
        Some(Command::Bench(a)) => v.push(("--json", a.json.as_deref())),
        Some(Command::Calibrate(a)) => v.push(("--costs/-o", Some(a.out.as_path()))),
        Some(Command::History(a)) => v.push(("--json", a.json.as_deref())),
        Some(Command::Show(a)) => v.push(("--json", a.json.as_deref())),
        Some(Command::Compare(a)) => v.push(("--html", a.html.as_deref())),
        Some(Command::Report(a)) => v.push(("--html", a.html.as_deref())),
        Some(Command::Results(a)) => v.push(("--markdown", a.markdown.as_deref())),
        Some(Command::Sweep(a)) if !a.plan => v.push(("--html", a.html.as_deref())),
        Some(Command::Sweep(_) | Command::Tag(_) | Command::Store(_)) => {}
    }
    v.into_iter()
        .filter_map(|(o, p)| p.map(|p| (o, p)))
        .collect()
}

/// The error of a command whose finished runs could be stored nowhere
/// ([`crate::pipeline::Pipeline::unsaved`]; each was reported as it
/// finished, and its report printed).
///
/// # Errors
/// When there is one.
pub fn unsaved(pipeline: &crate::pipeline::Pipeline) -> Result<()> {
    if pipeline.unsaved > 0 {
        anyhow::bail!(
            "{} finished run(s) could not be stored (see above); their reports are all that is \
             left",
            pipeline.unsaved
        );
    }
    Ok(())
}

/// Whether `e` is a run stopped by SIGINT/SIGTERM (after its cleanup).
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<RunError>(), Some(RunError::Cancelled)))
}

/// Installs the process's signal handler (`hostkernel::signals`) with the
/// message an interrupt prints (what was kept: the completed runs when
/// the command `stores` them, else nothing), and returns its token.
///
/// # Errors
/// `sigaction` failed.
pub fn interrupts(stores: bool) -> Result<simcore::Cancel> {
    let message = if stores {
        INTERRUPTED
    } else {
        INTERRUPTED_NO_STORE
    };
    Ok(hostkernel::signals::install(Some(message))?)
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
        pipeline.cancel = interrupts(!common.no_store)?;
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
    /// Writing the report or the output; a finished run that could be
    /// stored nowhere (after everything else is written).
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
                writeln!(out, "HTML report written to {}", render::shown(p))?;
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
                render::shown(store.path())
            )?;
        }
        unsaved(&self.pipeline)
    }
}

/// How a printed command names this program: `mmlab` when that name on
/// `PATH` is this very binary (after `cargo install --path crates/mmlab`),
/// else the binary's absolute path (`target/release/mmlab` after `cargo
/// run`), so the command runs as printed. A shell word
/// ([`render::shell_word`]).
///
/// # Errors
/// The binary's path cannot be printed as it is.
pub fn program_name() -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(exe) = std::env::current_exe() else {
        return Ok("mmlab".into());
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
        Some(c) if same(&c) => Ok("mmlab".into()),
        _ => render::shell_word(exe.as_os_str()),
    }
}

/// `path` as one word of a printed command ([`render::shell_word`]),
/// starting with `./` when it would otherwise read as an option.
///
/// # Errors
/// The path cannot be printed as it is.
pub fn path_word(path: &Path) -> Result<String> {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().as_bytes().starts_with(b"-") {
        render::shell_word(Path::new(".").join(path).as_os_str())
    } else {
        render::shell_word(path.as_os_str())
    }
}

/// Checks the `--json` and `--html` outputs of a command that runs
/// scenarios (the suite's default report included): writable, distinct,
/// and not the results database `db` ([`render::output::check_outputs`]).
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
    render::output::check_outputs(&outs, db)
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
