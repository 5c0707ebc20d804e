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
//! `--seconds N` run time (0: until killed).

mod workload;

use hierstat_exporter::{Exporter, MetricsServer, ScrapePolicy};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut listen = "127.0.0.1:9464".to_string();
    let (mut threads, mut pods, mut burst, mut flusher_ms, mut seconds) = (2, 100, 200, 0, 0);
    let mut policy = ScrapePolicy::Flush;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--listen" => listen = value()?,
            "--threads" => threads = value()?.parse()?,
            "--pods" => pods = value()?.parse()?,
            "--burst" => burst = value()?.parse()?,
            "--flusher-ms" => flusher_ms = value()?.parse()?,
            "--seconds" => seconds = value()?.parse()?,
            "--policy" => {
                policy = match value()?.as_str() {
                    "flush" => ScrapePolicy::Flush,
                    "bounded" => ScrapePolicy::Bounded,
                    "cached" => ScrapePolicy::Cached,
                    p => {
                        return Err(format!("unknown policy {p:?} (flush, bounded, cached)").into())
                    }
                }
            }
            "-h" | "--help" => {
                println!("usage: serve_workload [--listen ADDR] [--threads N] [--pods N] [--burst N] [--policy flush|bounded|cached] [--flusher-ms N] [--seconds N]");
                return Ok(());
            }
            _ => return Err(format!("unknown argument {a:?} (try --help)").into()),
        }
    }
    let work = workload::Workload::start(threads, pods, burst, 1);
    let flusher = (flusher_ms > 0)
        .then(|| work.stats.start_flusher(Duration::from_millis(flusher_ms)))
        .transpose()?;
    let exporter = Exporter::builder(work.stats.clone())
        .prefix("memcg_")
        // promtool reads `sec` in `memcg_sec_pagetables_pages` as seconds.
        .rename("sec_pagetables", "secondary_pagetables")
        .local(true)
        .bounds(true)
        .policy(policy)
        .build()?;
    let server = MetricsServer::bind(listen.as_str(), exporter)?;
    println!(
        "serving {} groups on http://{}/metrics ({threads} writers, policy {policy:?})",
        work.stats.len(),
        server.local_addr()
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
