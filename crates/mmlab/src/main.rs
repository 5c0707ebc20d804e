//! The `mmlab` command line. See `mmlab --help`.

use clap::{CommandFactory, Parser};
use mmlab::cli::Cli;
use std::io::Write;
use std::process::ExitCode;

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = cli.check() {
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, e)
            .exit();
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = mmlab::cmd::dispatch(cli, &mut out).and_then(|()| Ok(out.flush()?));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`mmlab list | head`) is not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        // A kernel run stopped by Ctrl-C or SIGTERM, after its cleanup: the
        // shell's convention for "killed by SIGINT".
        Err(e) if mmlab::cmd::is_interrupted(&e) => {
            let _ = out.flush();
            let e = mmlab::render::escape_controls(&format!("{e:#}"));
            eprintln!("mmlab: {e}; everything the run created was removed");
            ExitCode::from(130)
        }
        Err(e) => {
            let _ = out.flush();
            // Messages quote user input (names, paths, file text): no
            // control character reaches the terminal raw.
            let e = mmlab::render::escape_controls(&format!("{e:#}"));
            eprintln!("mmlab: error: {e}");
            ExitCode::FAILURE
        }
    }
}
