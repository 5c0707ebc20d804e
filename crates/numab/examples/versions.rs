//! Developer report: every built-in scenario under every scanner version,
//! one line each (PTE updates, hint faults, local hint faults, migrations,
//! elapsed and system time, locality, starved VMAs, scan-sequence advances,
//! host seconds).
//!
//! `cargo run -p numab --release --example versions`
//!
//! Environment: `NUMAB_SCENARIO=name` runs one built-in scenario;
//! `NUMAB_VERBOSE=1` adds each run's skip counts and its incompletely
//! scanned or non-stack VMAs.

use numab::{builtin_scenario, run, ScannerVersion, BUILTIN};

fn main() {
    let only = std::env::var("NUMAB_SCENARIO").ok();
    for (name, _) in BUILTIN {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let sc = builtin_scenario(name).expect("builtin");
        println!("== {name}");
        println!(
            "{:<9} {:>12} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8} {:>7} {:>6} {:>7}",
            "version",
            "pte_upd",
            "hint",
            "hint_loc",
            "migrated",
            "elapsed",
            "sys",
            "local",
            "starved",
            "seqs",
            "host_s"
        );
        for v in ScannerVersion::ALL {
            let t0 = std::time::Instant::now();
            let r = run(&sc.numab, v, sc.seed).expect("run");
            let c = r.counters;
            println!(
                "{:<9} {:>12} {:>10} {:>10} {:>10} {:>9.2} {:>9.2} {:>8.3} {:>7} {:>6} {:>7.2}",
                v.to_string(),
                c.numa_pte_updates,
                c.numa_hint_faults,
                c.numa_hint_faults_local,
                c.numa_pages_migrated,
                r.elapsed_s(),
                r.sys_s(),
                r.local_fraction,
                r.starved_vmas,
                c.scan_seq_advances,
                t0.elapsed().as_secs_f64()
            );
            if std::env::var("NUMAB_VERBOSE").is_ok() {
                println!("   skips {:?}", r.skips.entries());
                for cv in r
                    .coverage
                    .iter()
                    .filter(|c| c.fraction_scanned < 1.0 || !c.name.starts_with("stack:"))
                {
                    println!(
                        "   cov {} {:.2} scans={}",
                        cv.name, cv.fraction_scanned, cv.complete_scans
                    );
                }
            }
        }
    }
}
