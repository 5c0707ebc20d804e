//! Developer probe: every scanner version on the named built-in scenarios
//! and seeds; prints elapsed time and PTE updates per run, then the mean
//! per version and the figures the NUMA claims compare.
//!
//! `cargo run --release -p numab --example sweep -- numa01-thread-alloc,numa02 1,2,3,4`
use numab::{builtin_scenario, run, ScannerVersion};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let names: Vec<String> = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("numa01-thread-alloc,numa01-thread-alloc-64,numa02,numa01,numa-disjoint")
        .split(',')
        .map(str::to_string)
        .collect();
    let seeds: Vec<u64> = args
        .get(2)
        .map(String::as_str)
        .unwrap_or("4")
        .split(',')
        .map(|s| s.parse().expect("seed"))
        .collect();
    for name in &names {
        let sc = builtin_scenario(name).expect("built-in scenario").numab;
        println!("== {name} seeds {seeds:?}");
        let mut means = Vec::new();
        for v in ScannerVersion::ALL {
            let mut el = Vec::new();
            let mut pte = Vec::new();
            let mut starved = 0u64;
            let (mut sys, mut stacks, mut local2, mut local) = (0.0, 0.0, 0.0, 0.0);
            for &seed in &seeds {
                let r = run(&sc, v, seed).expect("run");
                el.push(r.elapsed_s());
                pte.push(r.counters.numa_pte_updates as f64);
                starved += r.starved_vmas;
                sys += r.sys_s();
                stacks += r.window_share_stacks_steady();
                local2 += r.local_fraction_at_seq2();
                local += r.local_fraction;
            }
            let n = el.len() as f64;
            let m = el.iter().sum::<f64>() / n;
            let p = pte.iter().sum::<f64>() / n;
            let runs: Vec<String> = el.iter().map(|e| format!("{e:.2}")).collect();
            println!(
                "{:9} elapsed {:8.2} s  pte {:12.0}  starved {:3}  runs [{}]",
                v.name(),
                m,
                p,
                starved,
                runs.join(", ")
            );
            println!(
                "          sys {:7.2} s  window on stacks (seq>=2) {:.3}  local at seq 2 {:.3}  local {:.3}",
                sys / n,
                stacks / n,
                local2 / n,
                local / n
            );
            means.push((v, m));
        }
        let get = |v: ScannerVersion| means.iter().find(|(x, _)| *x == v).map(|x| x.1);
        if let (Some(a), Some(b), Some(c)) = (
            get(ScannerVersion::V6_5),
            get(ScannerVersion::Rfc2of6),
            get(ScannerVersion::Rfc1of6),
        ) {
            println!(
                "rfc-2of6 vs v6.5 {:+.1}%, rfc-2of6 vs rfc-1of6 {:+.1}%",
                100.0 * (b / a - 1.0),
                100.0 * (b / c - 1.0)
            );
        }
        if let (Some(a), Some(b)) = (get(ScannerVersion::V6_5), get(ScannerVersion::V6_7)) {
            println!("v6.7 vs v6.5 {:+.1}%", 100.0 * (b / a - 1.0));
        }
        let best = means
            .iter()
            .filter(|(v, _)| *v != ScannerVersion::Mmlab)
            .map(|x| x.1)
            .fold(f64::INFINITY, f64::min);
        if let Some(m) = get(ScannerVersion::Mmlab) {
            println!(
                "mmlab {m:.2} s vs best kernel {best:.2} s ({:+.1}%)",
                100.0 * (m / best - 1.0)
            );
        }
    }
}
