//! The `mmlab` command line. See `mmlab --help`.

use anyhow::Result;
use clap::Parser;
use mmlab::cli::{Cli, Command};
use std::io::Write;
use std::process::ExitCode;

/// What a Ctrl-C prints: runs are stored one scenario at a time, each in
/// one transaction, so what completed is kept and the scenario under way
/// leaves no trace.
const INTERRUPTED: &[u8] = b"\nmmlab: interrupted: the scenarios that completed are stored \
(see `mmlab history`); the one under way was not stored\n";

/// Says on Ctrl-C what the store kept (the commands that run scenarios):
/// the process's one signal design ([`hostkernel::signals`]).
fn report_interrupts() -> Result<()> {
    hostkernel::signals::install(Some(INTERRUPTED))?;
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let db = cli.global.db.as_path();
    if matches!(
        cli.command,
        None | Some(Command::Suite(_)) | Some(Command::Run(_))
    ) {
        report_interrupts()?;
    }
    match cli.command {
        None => mmlab::cmd::suite::cmd_suite(&cli.suite, db, &mut out)?,
        Some(Command::Suite(a)) => mmlab::cmd::suite::cmd_suite(&a, db, &mut out)?,
        Some(Command::Run(a)) => mmlab::cmd::run::cmd_run(&a, db, &mut out)?,
        Some(Command::List(a)) => mmlab::cmd::run::cmd_list(a.json.as_deref(), &mut out)?,
        Some(Command::Bench(a)) => mmlab::cmd::bench::cmd_bench(&a, &mut out)?,
        Some(Command::Calibrate(a)) => mmlab::cmd::calibrate::cmd_calibrate(&a, &mut out)?,
        Some(Command::History(a)) => mmlab::cmd::store::cmd_history(&a, db, &mut out)?,
        Some(Command::Show(a)) => mmlab::cmd::store::cmd_show(&a, db, &mut out)?,
        Some(Command::Compare(a)) => mmlab::cmd::store::cmd_compare(&a, db, &mut out)?,
        Some(Command::Tag(a)) => mmlab::cmd::store::cmd_tag(&a, db, &mut out)?,
        Some(Command::Report(a)) => mmlab::cmd::store::cmd_report(&a, db, &mut out)?,
        Some(Command::Sweep(a)) => mmlab::cmd::sweep::cmd_sweep(&a, db, &mut out)?,
        Some(Command::Store(mmlab::cli::StoreCommand::Merge(a))) => {
            mmlab::cmd::sweep::cmd_store_merge(&a, &mut out)?
        }
    }
    out.flush()?;
    Ok(())
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = cli.check() {
        use clap::CommandFactory;
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, e)
            .exit();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        // A kernel-mode run stopped by Ctrl-C / SIGTERM (after its cleanup):
        // the shell's convention for "killed by SIGINT".
        Err(e) if mmlab::cmd::kernel::is_interrupted(&e) => {
            eprintln!("mmlab: {e:#}");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("mmlab: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
