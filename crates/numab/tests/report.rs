//! Developer reports (ignored tests; run in release with `--ignored
//! --nocapture`): every built-in scenario under every version
//! (`numab_report_all_versions`), multi-seed means (`numab_multi_seed`,
//! `SEEDS=n`), one run's scan-call trace (`numab_trace_scans`,
//! `NUMAB_VERSION`, `SEED`), the starved VMAs of a version
//! (`numab_starved_detail`) and a cost-parameter sweep
//! (`numab_explore_param`, `SPREADS`, `CFS`, `STACK_KIB`).
//! `NUMAB_SCENARIO=name` picks a built-in scenario, `NUMAB_TOML=path` a
//! scenario file.

use numab::{builtin_scenario, run, ScannerVersion, BUILTIN};

#[test]
#[ignore = "report, not a check; run in release with --nocapture"]
fn numab_report_all_versions() {
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

#[test]
#[ignore = "trace, not a check"]
fn numab_trace_scans() {
    let name = std::env::var("NUMAB_SCENARIO").unwrap_or_else(|_| "numa01-thread-alloc".into());
    let v: ScannerVersion = std::env::var("NUMAB_VERSION")
        .unwrap_or_else(|_| "v6.5".into())
        .parse()
        .expect("version");
    let sc = match std::env::var("NUMAB_TOML") {
        Ok(path) => {
            numab::parse_scenario(&std::fs::read_to_string(path).expect("read")).expect("parse")
        }
        Err(_) => builtin_scenario(&name).expect("builtin"),
    };
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

#[test]
#[ignore = "exploration"]
fn numab_explore_param() {
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

#[test]
#[ignore = "exploration: multi-seed means"]
fn numab_multi_seed() {
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

#[test]
#[ignore = "exploration: starved VMAs of one version"]
fn numab_starved_detail() {
    let name = std::env::var("NUMAB_SCENARIO").unwrap_or_else(|_| "numa-disjoint".into());
    let v: ScannerVersion = std::env::var("NUMAB_VERSION")
        .unwrap_or_else(|_| "mmlab".into())
        .parse()
        .expect("version");
    let sc = match std::env::var("NUMAB_TOML") {
        Ok(path) => {
            numab::parse_scenario(&std::fs::read_to_string(path).expect("read")).expect("parse")
        }
        Err(_) => builtin_scenario(&name).expect("builtin"),
    };
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
