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

/// Standard output whose errors say that they are standard output's
/// (`writing standard output: No space left on device`), keeping their
/// kind (a closed pipe is still told apart).
struct Stdout<W>(W);

impl<W: Write> Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(named)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(named)
    }
}

fn named(e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("writing standard output: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = cli.check() {
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, e)
            .exit();
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(Stdout(stdout.lock()));
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
