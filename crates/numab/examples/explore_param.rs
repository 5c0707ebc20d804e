//! Developer sweep of two cost parameters: for each speed spread and convoy
//! fault cost, every scanner version's elapsed time, PTE updates (all and
//! steady-state), hint faults, migrations, locality and starved VMAs.
//!
//! `cargo run -p numab --release --example explore_param`
//!
//! Environment: `NUMAB_SCENARIO=name` (default `numa01-thread-alloc`) or
//! `NUMAB_TOML=path`; `SPREADS` (per mille, default `100,300,500`), `CFS`
//! (convoy fault ns, default `160`), `STACK_KIB` (overrides the workload's
//! stack size).

use numab::{builtin_scenario, run, ScannerVersion};

fn main() {
    let name = std::env::var("NUMAB_SCENARIO").unwrap_or_else(|_| "numa01-thread-alloc".into());
    let mut sc = match std::env::var("NUMAB_TOML") {
        Ok(path) => {
            numab::parse_scenario(&std::fs::read_to_string(path).expect("read")).expect("parse")
        }
        Err(_) => builtin_scenario(&name).expect("builtin"),
    };
    if let Ok(k) = std::env::var("STACK_KIB") {
        let k: u64 = k.parse().expect("num");
        match &mut sc.numab.workload {
            numab::WorkloadSpec::Numa01ThreadAlloc(numab::Numa01Spec { stack_kib, .. })
            | numab::WorkloadSpec::Numa01(numab::Numa01Spec { stack_kib, .. })
            | numab::WorkloadSpec::Numa02 { stack_kib, .. }
            | numab::WorkloadSpec::Disjoint { stack_kib, .. } => *stack_kib = k,
        }
    }
    let spreads: Vec<u32> = std::env::var("SPREADS")
        .unwrap_or_else(|_| "100,300,500".into())
        .split(',')
        .map(|x| x.parse().expect("num"))
        .collect();
    let cfs: Vec<u64> = std::env::var("CFS")
        .unwrap_or_else(|_| "160".into())
        .split(',')
        .map(|x| x.parse().expect("num"))
        .collect();
    for sp in spreads {
        for &cf in &cfs {
            sc.numab.cost.speed_spread_permille = sp;
            sc.numab.cost.convoy_fault_ns = cf;
            for v in ScannerVersion::ALL {
                let r = run(&sc.numab, v, sc.seed).expect("run");
                println!(
                    "spread {sp} cf {cf} {v:<9} elapsed {:7.2} pte {:>9} steady {:>9} hint {:>9} migr {:>8} local {:.3} starved {}",
                    r.elapsed_s(),
                    r.counters.numa_pte_updates,
                    r.pte_updates_steady,
                    r.counters.numa_hint_faults,
                    r.counters.numa_pages_migrated,
                    r.local_fraction,
                    r.starved_vmas
                );
            }
        }
    }
}
