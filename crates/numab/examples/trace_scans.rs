//! Developer trace: one run's scan calls of process 0 (time, thread,
//! scan sequence, PTEs updated, period, offset), then the locality series.
//!
//! `cargo run -p numab --release --example trace_scans`
//!
//! Environment: `NUMAB_SCENARIO=name` (default `numa01-thread-alloc`) or
//! `NUMAB_TOML=path` (a scenario file), `NUMAB_VERSION` (default `v6.5`),
//! `SEED` (default: the scenario's).

mod common;

use numab::run;

fn main() {
    let (sc, v) = common::scenario_from_env("numa01-thread-alloc", "v6.5");
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(sc.seed);
    let r = run(&sc.numab, v, seed).expect("run");
    for s in r.scans.iter().filter(|s| s.process == 0) {
        println!(
            "{:>8.3} tid={} seq={} upd={} period={} off={:#x}",
            s.t_ns as f64 / 1e9,
            s.tid,
            s.seq,
            s.updated,
            s.period_ms,
            s.offset
        );
    }
    for (t, f) in &r.local_series {
        print!("{t:.0}:{f:.2} ");
    }
    println!();
}
