//! Developer report: every built-in scenario under every scanner version,
//! means over seeds 1..=n (elapsed time with its standard deviation, PTE
//! updates, steady-state updates, hint faults, migrations, system time,
//! locality, starved VMAs).
//!
//! `cargo run -p numab --release --example multi_seed`
//!
//! Environment: `SEEDS=n` (default 5), `NUMAB_SCENARIO=name` runs one
//! built-in scenario, `NUMAB_TOML=path` replaces each scenario with a file.

use numab::{builtin_scenario, run, ScannerVersion, BUILTIN};

fn main() {
    let seeds: u64 = std::env::var("SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let only = std::env::var("NUMAB_SCENARIO").ok();
    for (name, _) in BUILTIN {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let sc = match std::env::var("NUMAB_TOML") {
            Ok(path) => {
                numab::parse_scenario(&std::fs::read_to_string(path).expect("read")).expect("parse")
            }
            Err(_) => builtin_scenario(name).expect("builtin"),
        };
        println!("== {name}");
        for v in ScannerVersion::ALL {
            let rs: Vec<_> = (0..seeds)
                .map(|s| run(&sc.numab, v, s + 1).expect("run"))
                .collect();
            let n = rs.len() as f64;
            let mean = |f: &dyn Fn(&numab::NumabResult) -> f64| rs.iter().map(f).sum::<f64>() / n;
            let el = mean(&|r| r.elapsed_s());
            let sd = (rs.iter().map(|r| (r.elapsed_s() - el).powi(2)).sum::<f64>()
                / (n - 1.0).max(1.0))
            .sqrt();
            println!(
                "{:<9} elapsed {:7.2} ±{:5.2}  pte {:>10.0} steady {:>10.0} hint {:>9.0} migr {:>9.0} sys {:7.2} local {:.3} starved {:.1}",
                v.to_string(),
                el,
                sd,
                mean(&|r| r.counters.numa_pte_updates as f64),
                mean(&|r| r.pte_updates_steady as f64),
                mean(&|r| r.counters.numa_hint_faults as f64),
                mean(&|r| r.counters.numa_pages_migrated as f64),
                mean(&|r| r.sys_s()),
                mean(&|r| r.local_fraction),
                mean(&|r| r.starved_vmas as f64),
            );
        }
    }
}
