//! Developer probe: prints the scan calls of one numab scenario run.
//!
//! `cargo run --release -p numab --example timeline -- numa01-thread-alloc v6.5 4 [max_s]`
use numab::{builtin_scenario, run, ScannerVersion};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("numa01-thread-alloc");
    let version: ScannerVersion = args
        .get(2)
        .map(String::as_str)
        .unwrap_or("v6.5")
        .parse()
        .expect("scanner version");
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(4);
    let max_s: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(30.0);
    let sc = builtin_scenario(name).expect("built-in scenario").numab;
    let r = run(&sc, version, seed).expect("run");
    for s in r.scans.iter().filter(|s| (s.t_ns as f64) / 1e9 <= max_s) {
        println!(
            "{:9.3}s p{} tid {:5} seq {}->{} off {:#x} updated {:7} period {} ms",
            s.t_ns as f64 / 1e9,
            s.process,
            s.tid,
            s.seq_start,
            s.seq,
            s.offset,
            s.updated,
            s.period_ms
        );
    }
    println!(
        "elapsed {:.2}s pte {} hint {} migrated {}",
        r.elapsed_s(),
        r.counters.numa_pte_updates,
        r.counters.numa_hint_faults,
        r.counters.numa_pages_migrated
    );
}
