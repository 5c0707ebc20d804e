//! `hostkernel-run EXPERIMENT [--small] [--trap]`: runs one kernel-mode experiment and
//! prints its result as JSON. SIGINT/SIGTERM stop it cleanly (exit status
//! 130). Used by the interrupt test; handy for scripting.

use std::process::ExitCode;

use hostkernel::{
    run_stale_read, run_stat_readers, run_update_path, Error, Host, StaleReadConfig,
    StatReadersConfig, UpdatePathConfig,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let small = args.iter().any(|a| a == "--small");
    let Some(which) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: hostkernel-run update-path|stat-readers|stale-read [--small] [--trap]");
        return ExitCode::from(2);
    };
    let host = match Host::detect() {
        Ok(h) => h,
        Err(e) if e.is_host_unsupported() => {
            eprintln!("skipped: {e}");
            return ExitCode::from(77);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let cancel = match hostkernel::signals::install(None) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let json = match which.as_str() {
        "update-path" => {
            let mut c = UpdatePathConfig::default();
            if small {
                c.pages = 1024;
                c.rounds = 3;
                c.runs = 1;
            }
            run_update_path(&host, &c, &cancel).map(|r| serde_json::to_string_pretty(&r))
        }
        "stat-readers" => {
            let mut c = StatReadersConfig::default();
            if small {
                c.groups = vec![50];
                c.writers = vec![0, 2];
                c.reads_per_reader = 300;
            }
            run_stat_readers(&host, &c, &cancel).map(|r| serde_json::to_string_pretty(&r))
        }
        "stale-read" => {
            let mut c = StaleReadConfig::default();
            if small {
                c.spikes_kib = vec![256, 1024];
                c.repetitions = 30;
            }
            if args.iter().any(|a| a == "--trap") {
                // A concurrent reader and the follow phase (the trap).
                c.concurrent_reader = true;
                c.follow_ms = 4000.0;
                c.spikes_kib = vec![1024, 16 * 1024];
                c.repetitions = 3;
            }
            run_stale_read(&host, &c, &cancel).map(|r| serde_json::to_string_pretty(&r))
        }
        other => {
            eprintln!("unknown experiment {other:?}");
            return ExitCode::from(2);
        }
    };
    match json {
        Ok(Ok(s)) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        Err(Error::Interrupted) => {
            eprintln!("interrupted; cleaned up");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
