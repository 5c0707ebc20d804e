//! `serve_workload`: a systemd-like memory-cgroup tree updated by real
//! writer threads, exposed live on `/metrics` for Prometheus and Grafana.
//!
//! ```sh
//! cargo run --release -p hierstat-exporter --example serve_workload -- \
//!     --listen 127.0.0.1:9464 --threads 2 --pods 100 --policy flush
//! curl -s 127.0.0.1:9464/metrics | grep 'memcg_anon_pages{path="/kubepods.slice"'
//! ```
//!
//! Options: `--listen ADDR` (default `127.0.0.1:9464`), `--threads N`
//! writer threads (2), `--pods N` Kubernetes pods of two containers (100),
//! `--burst N` updates between 1 ms pauses per writer (0: none; default
//! 200), `--policy flush|bounded|cached` (flush), `--flusher-ms N` a
//! background flusher period (0: none, the default; use with `cached`),
//! `--seconds N` run time (0: until killed). Every value is checked before
//! anything starts (`options.rs`): a bad one is named with its range and
//! exits with status 2; sizes whose tree, writers' rows and scrape would
//! need more than 2 GiB are refused (with the most pods that fit); a
//! failure once started (the address in use) exits with status 1.

mod options;
mod workload;

use hierstat_exporter::{Exporter, MetricsServer, ScrapePolicy};
use options::{Options, Parsed, Policy};
use std::process::ExitCode;
use std::time::{Duration, Instant};

// Each writer owns a shard of the tree.
const _: () = assert!(options::MAX_THREADS <= hierstat::MAX_SHARDS);

fn main() -> ExitCode {
    match options::parse(std::env::args().skip(1)) {
        Ok(Parsed::Help) => {
            println!("{}", options::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Parsed::Serve(o)) => match serve(&o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("serve_workload: error: {e}");
                ExitCode::FAILURE
            }
        },
        Err(usage) => {
            eprintln!("serve_workload: {usage}\n{}", options::USAGE);
            ExitCode::from(2)
        }
    }
}

/// Builds the tree, starts its writers and serves `/metrics` until
/// `o.seconds` have passed (0: until killed).
fn serve(o: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let policy = match o.policy {
        Policy::Flush => ScrapePolicy::Flush,
        Policy::Bounded => ScrapePolicy::Bounded,
        Policy::Cached => ScrapePolicy::Cached,
    };
    let seconds = o.seconds;
    let work = workload::Workload::start(o.threads, o.pods, o.burst, 1);
    let flusher = (o.flusher_ms > 0)
        .then(|| {
            work.stats
                .start_flusher(Duration::from_millis(o.flusher_ms))
        })
        .transpose()?;
    let exporter = Exporter::builder(work.stats.clone())
        .prefix("memcg_")
        // promtool reads `sec` in `memcg_sec_pagetables_pages` as seconds.
        .rename("sec_pagetables", "secondary_pagetables")
        .local(true)
        .bounds(true)
        .policy(policy)
        .build()?;
    let server = MetricsServer::bind(o.listen.as_str(), exporter)
        .map_err(|e| format!("listening on {}: {e}", o.listen))?;
    println!(
        "serving {} groups on http://{}/metrics ({} writers, policy {policy:?})",
        work.stats.len(),
        server.local_addr(),
        o.threads
    );
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_secs(10).min(Duration::from_secs(seconds.max(1))));
        let s = server.stats();
        println!(
            "{:>6.0} s: {} updates, {} scrapes, last render {:.1} ms, {} bytes",
            start.elapsed().as_secs_f64(),
            work.updates(),
            s.openmetrics + s.prometheus,
            s.last_render_ns as f64 / 1e6,
            s.last_bytes
        );
        if seconds > 0 && start.elapsed() >= Duration::from_secs(seconds) {
            break;
        }
    }
    drop(flusher);
    server.shutdown();
    println!("{} updates", work.stop());
    Ok(())
}
