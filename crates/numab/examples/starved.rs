//! Developer detail: the starved VMAs of one scanner version, seeds 1..=4:
//! per seed the elapsed time, the VMAs more than two scan passes behind
//! (all of them with `ALLCOV=1`) and the last scan calls.
//!
//! `cargo run -p numab --release --example starved`
//!
//! Environment: `NUMAB_SCENARIO=name` (default `numa-disjoint`) or
//! `NUMAB_TOML=path`, `NUMAB_VERSION` (default `mmlab`).

mod common;

use numab::run;

fn main() {
    let (sc, v) = common::scenario_from_env("numa-disjoint", "mmlab");
    for seed in 1..=4 {
        let r = run(&sc.numab, v, seed).expect("run");
        println!(
            "seed {seed}: elapsed {:.2} starved {}",
            r.elapsed_s(),
            r.starved_vmas
        );
        for c in r
            .coverage
            .iter()
            .filter(|c| c.passes_behind > 2 || std::env::var("ALLCOV").is_ok())
        {
            println!(
                "   {} p{} {:.3} units={} scans={} behind={}",
                c.name,
                c.process,
                c.fraction_scanned,
                c.present_units,
                c.complete_scans,
                c.passes_behind
            );
        }
        let last = r.scans.iter().filter(|s| s.process == 0).count();
        println!(
            "   scan calls {last}, last seqs {:?}",
            r.scans
                .iter()
                .rev()
                .take(3)
                .map(|s| (s.t_ns / 1_000_000_000, s.seq, s.period_ms))
                .collect::<Vec<_>>()
        );
    }
}
