//! Integration checks of the NUMA-balancing scanner simulator.
//!
//! The heavy side-by-side run of the source thread's scenario at full size (256
//! CPUs, 3 GiB per process) is release-only; every check it makes on the
//! model's direction is repeated on a scaled-down scenario that runs in
//! debug builds.

use numab::{
    builtin_scenario, parse_scenario, run, NumabError, NumabResult, NumabScenario, Op,
    ScannerVersion, BUILTIN,
};

const ALL: [ScannerVersion; 8] = ScannerVersion::ALL;

/// The kernel versions: every version but mmlab's, in order.
fn kernels() -> impl Iterator<Item = ScannerVersion> {
    ALL.into_iter().filter(|&v| v != ScannerVersion::Mmlab)
}

fn scenario(text: &str) -> NumabScenario {
    parse_scenario(text).expect("valid scenario").numab
}

/// The disjoint-VMA corner cases on 16 CPUs.
const DISJOINT_16: &str = r#"
name = "numa-disjoint-16"
kind = "numab"
mode = "sim"
description = "scaled disjoint"
runs = 1
seed = 1
policies = ["v6.5", "mmlab"]
[numab]
nodes = 2
cpus_per_node = 8
[numab.workload]
kind = "disjoint"
set1_threads = 4
set2_threads = 2
set3_threads = 2
vma_x_mib = 32
vma_y_mib = 1024
vma_z_mib = 128
vma_w_mib = 128
vma_v_mib = 128
set2_duty_percent = 25
d_start_s = 10
late_s = 30
duration_s = 90
"#;

/// A tiny numa02 for quick checks.
const TINY: &str = r#"
name = "tiny"
kind = "numab"
mode = "sim"
description = "tiny numa02"
runs = 1
seed = 1
policies = ["v6.5"]
[numab]
nodes = 2
cpus_per_node = 4
[numab.workload]
kind = "numa02"
buffer_mib = 256
passes = 60
"#;

fn mean(rs: &[NumabResult], f: impl Fn(&NumabResult) -> f64) -> f64 {
    rs.iter().map(f).sum::<f64>() / rs.len() as f64
}

fn runs(sc: &NumabScenario, v: ScannerVersion, seeds: &[u64]) -> Vec<NumabResult> {
    seeds.iter().map(|&s| run(sc, v, s).expect("run")).collect()
}

#[test]
fn numab_builtin_scenarios_parse_and_name_every_version() {
    assert_eq!(BUILTIN.len(), 5);
    for (name, _) in BUILTIN {
        let f = builtin_scenario(name).expect("builtin");
        assert_eq!(f.name, name);
        assert_eq!(f.kind, "numab");
        assert_eq!(f.mode, "sim");
        assert!(f.runs >= 1);
        let mut versions: Vec<ScannerVersion> = f
            .policies
            .iter()
            .map(|p| p.parse().expect("version"))
            .collect();
        // v6.5, the source thread's base, comes first: it is every table's baseline.
        assert_eq!(versions[0], ScannerVersion::V6_5, "{name}");
        versions.sort();
        assert_eq!(versions, ALL.to_vec(), "{name} compares every version");
        // No built-in scenario fits the first visits (`premap_passes` is a
        // what-if); the numa01_THREAD_ALLOC ones run the benchmark's
        // MPOL_BIND -> bzero -> MPOL_DEFAULT sequence instead.
        let plan = f.numab.plan().expect("plan");
        let ops = || {
            plan.processes
                .iter()
                .flat_map(|p| &p.threads)
                .flat_map(|t| &t.ops)
        };
        assert!(
            !ops().any(|op| matches!(op, Op::SpinUntilScanSeq { .. })),
            "{name}"
        );
        let binds = ops()
            .filter(|op| matches!(op, Op::SetMempolicy { bind: Some(_) }))
            .count();
        let unbinds = ops()
            .filter(|op| matches!(op, Op::SetMempolicy { bind: None }))
            .count();
        assert_eq!(binds, unbinds, "{name}");
        // The benchmark's Makefile builds numa01 and numa01_THREAD_ALLOC with
        // -DNO_BIND_FORCE_SAME_NODE.
        assert_eq!(binds > 0, name.starts_with("numa01"), "{name}");
    }
    assert!(builtin_scenario("numa03").is_none());
}

#[test]
fn numab_bad_input_is_rejected_with_a_reason() {
    assert!(matches!(
        "v6.6".parse::<ScannerVersion>(),
        Err(NumabError::UnknownVersion(_))
    ));
    assert!(matches!(
        parse_scenario("name = 1"),
        Err(NumabError::Parse(_))
    ));
    let wrong_kind = TINY.replace("kind = \"numab\"", "kind = \"memcg\"");
    assert!(matches!(
        parse_scenario(&wrong_kind),
        Err(NumabError::BadScenario(_))
    ));
    let bad_policy = TINY.replace("policies = [\"v6.5\"]", "policies = [\"v9\"]");
    assert!(matches!(
        parse_scenario(&bad_policy),
        Err(NumabError::UnknownVersion(_))
    ));
    // 3 MiB is not a multiple of 2 MiB.
    let unaligned = TINY.replace("buffer_mib = 256", "buffer_mib = 3");
    assert!(matches!(
        parse_scenario(&unaligned),
        Err(NumabError::BadScenario(_))
    ));
    // More threads than CPUs.
    let crowded = TINY.replace("passes = 60", "passes = 60\nthreads = 64");
    assert!(matches!(
        parse_scenario(&crowded),
        Err(NumabError::BadScenario(_))
    ));
    let unknown_field = TINY.replace("passes = 60", "passes = 60\nbogus = 1");
    assert!(matches!(
        parse_scenario(&unknown_field),
        Err(NumabError::Parse(_))
    ));
    // The numa01 workloads' shared table refuses unknown keys too.
    for kind in ["numa01", "numa01-thread-alloc"] {
        let (_, text) = numab::BUILTIN
            .iter()
            .find(|(_, t)| t.contains(&format!("kind = \"{kind}\"")))
            .expect("a built-in of each numa01 workload");
        assert!(parse_scenario(text).is_ok(), "{kind}");
        let bad = text.replacen("buffer_mib", "bogus = 1\nbuffer_mib", 1);
        assert!(
            matches!(parse_scenario(&bad), Err(NumabError::Parse(_))),
            "{kind}"
        );
    }
}

#[test]
fn numab_same_seed_same_result_different_seed_different_result() {
    let sc = scenario(TINY);
    for v in [ScannerVersion::V6_5, ScannerVersion::Mmlab] {
        let a = run(&sc, v, 7).expect("run");
        let b = run(&sc, v, 7).expect("run");
        let c = run(&sc, v, 8).expect("run");
        assert_eq!(a, b, "{v}: same seed must give an identical result");
        assert_ne!(a.elapsed_ns, c.elapsed_ns, "{v}: the seed must matter");
    }
}

#[test]
fn numab_metrics_carry_the_required_names_and_counters_agree() {
    let sc = scenario(TINY);
    let r = run(&sc, ScannerVersion::V6_7, 1).expect("run");
    let m = r.metrics();
    for name in [
        "numa_pte_updates",
        "numa_hint_faults",
        "numa_hint_faults_local",
        "numa_pages_migrated",
        "elapsed_s",
        "sys_s",
        "starved_vmas",
        "user_s",
        "numa_huge_pte_updates",
        "autonuma_cost",
    ] {
        assert_eq!(m.iter().filter(|(n, _, _)| *n == name).count(), 1, "{name}");
    }
    let get = |n: &str| {
        m.iter()
            .find(|(k, _, _)| *k == n)
            .map(|x| x.1)
            .expect("metric")
    };
    let c = r.counters;
    assert_eq!(get("numa_pte_updates"), c.numa_pte_updates as f64);
    assert!(c.numa_hint_faults > 0 && c.numa_pte_updates > 0);
    assert!(c.numa_hint_faults_local <= c.numa_hint_faults);
    // Every hint fault needs a PROT_NONE PTE first.
    assert!(c.numa_hint_faults <= c.numa_pte_updates);
    assert!(r.elapsed_s() > 0.0 && r.user_s() > r.sys_s());
    assert!(!r.local_series.is_empty());
    assert!(r.local_series.iter().all(|(_, f)| (0.0..=1.0).contains(f)));
    assert!(r
        .coverage_series()
        .iter()
        .all(|(_, f)| (0.0..=1.0).contains(f)));
    assert!((r.autonuma_cost() - get("autonuma_cost")).abs() < 1e-9);
    // numa02's main thread puts the buffer on one node: half the threads
    // start remote and balancing must move memory.
    assert!(c.numa_pages_migrated > 0);
}

/// The source thread's comparison on the 64-CPU twin of numa01_THREAD_ALLOC
/// (`numa01-thread-alloc-64`: the benchmark's 1000 passes over 96 MiB
/// slices, about 3 minutes of virtual time; runs in debug builds). No first-visit
/// parameter: every thread zeroes the buffer under `MPOL_BIND`, and every
/// scanner call a bound thread makes skips every VMA (`!vma_policy_mof`)
/// while still wrapping `numa_scan_seq`, one call a second. So the buffer
/// and the stacks first meet the scanner at `numa_scan_seq` >= 2: no PTE of
/// theirs was ever made PROT_NONE,
/// so no hint fault ever records a PID in their windows, and v6.5's filter
/// skips them for good (an absorbing state). RFC 2/6's forced every-other
/// visit and v6.7's forced retry break out of it (seed: 6,985 vs 1,573,363
/// PTE updates, 2,705 vs 1,022,623 hint faults, 82.8 s vs 69.2 s; T7:
/// v6.7 −29.8% on a 2-socket machine with fewer threads than 256).
#[test]
fn numab_scaled_thread_alloc_collapses_under_v6_5_and_later_versions_restore_it() {
    let sc = builtin_scenario("numa01-thread-alloc-64")
        .expect("builtin")
        .numab;
    let seeds = [1, 2];
    let v65 = runs(&sc, ScannerVersion::V6_5, &seeds);
    let rfc = runs(&sc, ScannerVersion::Rfc2of6, &seeds);
    let v67 = runs(&sc, ScannerVersion::V6_7, &seeds);
    let ours = runs(&sc, ScannerVersion::Mmlab, &seeds);
    let el = |rs: &[NumabResult]| mean(rs, |r| r.elapsed_s());
    let migrated = |rs: &[NumabResult]| mean(rs, |r| r.counters.numa_pages_migrated as f64);
    for (a, b) in v65.iter().zip(&rfc) {
        // The bind phase: calls one second (250 jiffies) apart, each one
        // skipping every VMA and advancing the seq by one.
        let p0: Vec<_> = a.scans.iter().filter(|s| s.process == 0).collect();
        assert!(a.skips.mpol_no_mof > 0);
        // (Calls are ordered within their tick by a seeded offset below
        // 1 µs, so compare jiffies.)
        let jiffy = |t: u64| t / 4_000_000;
        assert_eq!(jiffy(p0[1].t_ns) - jiffy(p0[0].t_ns), 250, "{:?}", &p0[..3]);
        assert!(p0[..2]
            .iter()
            .all(|s| s.seq == s.seq_start + 1 && s.updated == 0));
        // The first call that marks anything runs at seq >= 2.
        let first = b
            .scans
            .iter()
            .find(|s| s.updated > 0)
            .expect("rfc-2of6 marks");
        assert!(first.seq_start >= 2, "{first:?}");
        let (ca, cb) = (a.counters, b.counters);
        assert!(ca.numa_pte_updates <= 10_000, "v6.5 {ca:?}");
        assert!(ca.numa_hint_faults <= 10_000, "v6.5 {ca:?}");
        assert!(cb.numa_pte_updates >= 100_000, "rfc-2of6 {cb:?}");
        assert!(cb.numa_hint_faults >= 100_000, "rfc-2of6 {cb:?}");
        assert!(cb.numa_pages_migrated > ca.numa_pages_migrated);
        // Every remote hint fault on these private slices migrates its
        // page, as in the source thread's RFC run (632,990 = 1,022,623 − 389,633):
        // the two-stage filter lets an unset or own `last_cpupid` through.
        // The exceptions are faults taken by a thread still bound to one
        // node while others already scan: `mpol_misplaced()` of an
        // `MPOL_BIND` policy never asks for a migration.
        let remote = cb.numa_hint_faults - cb.numa_hint_faults_local;
        assert!(cb.numa_pages_migrated <= remote, "rfc-2of6 {cb:?}");
        // (Since the earliest call wins the race, unbound threads scan
        // while slower ones are still bound: up to a few hundred such
        // faults per run, well under 1%.)
        assert!(
            cb.numa_pages_migrated * 100 >= remote * 99,
            "rfc-2of6 {cb:?}"
        );
        assert!(a
            .coverage
            .iter()
            .any(|c| c.name == "buffer" && c.passes_behind > numab::STARVED_PASSES));
    }
    // RFC 2/6 alone: the robot measured −11.9%; the target is within 2×
    // of it (6–24%). The model: seeds 1–3 −10.3%, seed 4 −9.5%.
    let gain = 1.0 - el(&rfc) / el(&v65);
    assert!(
        (0.06..=0.24).contains(&gain),
        "{} vs {}",
        el(&rfc),
        el(&v65)
    );
    // v6.7 (T7, 2 sockets: −29.8%): its one-stack-per-call crawl reaches
    // the buffer early in the benchmark's 1000 passes (model: −34%).
    assert!(migrated(&v67) > migrated(&v65));
    assert!(el(&v67) <= 0.8 * el(&v65), "{} vs {}", el(&v67), el(&v65));
    // v6.5 leaves the stacks and the buffer starving; mmlab nothing, and it
    // is within 2% of the best kernel version.
    assert!(v65.iter().all(|r| r.starved_vmas > 10));
    assert!(ours.iter().all(|r| r.starved_vmas == 0));
    let best = [&v65, &rfc, &v67]
        .iter()
        .map(|rs| el(rs))
        .fold(f64::MAX, f64::min);
    assert!(el(&ours) <= best * 1.02, "{} vs {best}", el(&ours));
}

#[test]
fn numab_scaled_disjoint_corner_cases_starve_under_v6_5_not_under_mmlab() {
    let sc = scenario(DISJOINT_16);
    for seed in [1, 2] {
        let base = run(&sc, ScannerVersion::V6_5, seed).expect("run");
        let ours = run(&sc, ScannerVersion::Mmlab, seed).expect("run");
        let starved = |r: &NumabResult, name: &str| {
            r.coverage
                .iter()
                .any(|c| c.name == name && c.passes_behind > numab::STARVED_PASSES)
        };
        // (c) the idle vma_z and (d) the idle allocator's vma_w are passed
        // over for good once the unconditional passes are spent.
        assert!(starved(&base, "vma_z"), "seed {seed}: {:?}", base.coverage);
        assert!(base.starved_vmas >= 5, "seed {seed}: {}", base.starved_vmas);
        assert_eq!(ours.starved_vmas, 0, "seed {seed}: {:?}", ours.coverage);
        // Every populated VMA got complete scans under mmlab: three or
        // more, except (e) the VMA created late, which has a third of the
        // run and at least one.
        assert!(
            ours.coverage
                .iter()
                .all(|c| c.complete_scans >= if c.name == "vma_v" { 1 } else { 3 }),
            "{:?}",
            ours.coverage
        );
    }
}

#[test]
fn numab_numa02_is_flat_across_kernel_versions_and_mmlab_is_not_slower() {
    // The kernel test robot's numa02 on 256 CPUs (T4: 8.11 / 8.04 / 8.05 /
    // 8.10 s) is flat: the run ends before the PID filter applies.
    let sc = builtin_scenario("numa02").expect("builtin").numab;
    let kernel: Vec<f64> = kernels()
        .map(|v| run(&sc, v, 1).expect("run").elapsed_s())
        .collect();
    let ours = run(&sc, ScannerVersion::Mmlab, 1).expect("run");
    let lo = kernel.iter().cloned().fold(f64::MAX, f64::min);
    let hi = kernel.iter().cloned().fold(0.0, f64::max);
    assert!(hi / lo < 1.02, "{kernel:?}");
    assert!(
        ours.elapsed_s() <= lo * 1.001,
        "mmlab {} vs {lo}",
        ours.elapsed_s()
    );
    assert_eq!(ours.starved_vmas, 0);
}

/// Mel Gorman's numa02 comparison (6.5-rc6 + RFC 1/6 → + 2/6: 12.93 →
/// 21.69 s, system 2.35 → 1.86 s) and what the model shows of it: once the
/// PID filter applies (seq >= 2), 2/6's forced visits of the other threads'
/// stacks take a large share of each 256 MB window (each stack charges its
/// whole 8 MiB for a few present pages), where 1/6 skips them; but the
/// model's numa02 is already all local when seq 2 begins, so the budget
/// lost to stacks slows nothing (see the crate docs).
#[test]
fn numab_numa02_rfc_2of6_spends_the_window_on_stacks_after_locality_converged() {
    let sc = builtin_scenario("numa02").expect("builtin").numab;
    let one = run(&sc, ScannerVersion::Rfc1of6, 1).expect("run");
    let two = run(&sc, ScannerVersion::Rfc2of6, 1).expect("run");
    for r in [&one, &two] {
        assert!(r.scans.iter().all(|s| s.charged_stacks <= s.charged));
        assert!(
            r.local_fraction_at_seq2() > 0.95,
            "{}",
            r.local_fraction_at_seq2()
        );
    }
    assert!(one.window_share_stacks_steady() < 0.1);
    assert!(two.window_share_stacks_steady() > 0.3);
}

/// The source thread's scenario at full size, every version side by side on the
/// same seeds (release builds; ~1 s of host time per run).
#[test]
#[cfg_attr(debug_assertions, ignore = "full-size run; release only")]
fn numab_seed_thread_alloc_side_by_side() {
    let sc = builtin_scenario("numa01-thread-alloc")
        .expect("builtin")
        .numab;
    let seeds = [1, 2, 3];
    let all: Vec<(ScannerVersion, Vec<NumabResult>)> =
        ALL.iter().map(|&v| (v, runs(&sc, v, &seeds))).collect();
    let by = |v: ScannerVersion| &all.iter().find(|(w, _)| *w == v).expect("version").1;
    let el = |v| mean(by(v), |r| r.elapsed_s());
    let local = |v| mean(by(v), |r| r.local_fraction);
    let pte = |v| mean(by(v), |r| r.counters.numa_pte_updates as f64);
    for (v, rs) in &all {
        let r = &rs[0];
        println!(
            "{v:<9} pte {:>9} steady {:>9} hint {:>9} local {:>9} migrated {:>8} elapsed {:6.2} sys {:6.2} starved {}",
            r.counters.numa_pte_updates,
            r.pte_updates_steady,
            r.counters.numa_hint_faults,
            r.counters.numa_hint_faults_local,
            r.counters.numa_pages_migrated,
            r.elapsed_s(),
            r.sys_s(),
            r.starved_vmas
        );
    }
    // Seed: base 82.8 s; the model's base is in that range.
    assert!((60.0..100.0).contains(&el(ScannerVersion::V6_5)));
    // v6.5 collapses to 10^3–10^4 PTE updates (seed: 6,985; the model
    // marks fewer: the exec-time pages sit on the node of the then
    // single-threaded process, which change_prot_numa() leaves alone).
    for r in by(ScannerVersion::V6_5) {
        assert!(r.counters.numa_pte_updates <= 10_000, "{:?}", r.counters);
    }
    // RFC 2/6 cuts elapsed time by 6–24%, within 2× of LKP's −11.9% for
    // 2/6 alone (the model, seeds 1–3: −9.5%), and PTE updates are of the
    // order of 10^5–10^6 (the whole series: 1,573,363); v6.5's are at most
    // 1% of them.
    let gain = 1.0 - el(ScannerVersion::Rfc2of6) / el(ScannerVersion::V6_5);
    assert!((0.06..=0.24).contains(&gain), "{gain}");
    assert!((1e5..5e6).contains(&pte(ScannerVersion::Rfc2of6)));
    assert!(pte(ScannerVersion::V6_5) <= 0.01 * pte(ScannerVersion::Rfc2of6));
    // v6.8's start_scan_seq gives the late VMAs their two unconditional
    // passes (T9, this machine: 81.79 → 67.74 s) and beats v6.7, which on
    // 256 CPUs spends its one-VMA-per-call forced scans on 128 stacks
    // first (T9's v6.7 base, 81.79 s, is within 1.2% of T3's v6.5 base).
    assert!(el(ScannerVersion::V6_8) < 0.9 * el(ScannerVersion::V6_7));
    assert!(local(ScannerVersion::V6_8) > local(ScannerVersion::V6_7) + 0.1);
    // mmlab starves nothing and is within 2% of the best version.
    let best = kernels().map(el).fold(f64::MAX, f64::min);
    assert!(by(ScannerVersion::Mmlab)
        .iter()
        .all(|r| r.starved_vmas == 0));
    assert!(
        el(ScannerVersion::Mmlab) <= best * 1.02,
        "{} vs {best}",
        el(ScannerVersion::Mmlab)
    );
}

/// mmlab on every built-in scenario against the best kernel version.
#[test]
#[cfg_attr(debug_assertions, ignore = "full-size runs; release only")]
fn numab_mmlab_is_never_clearly_slower_and_never_starves() {
    for (name, _) in BUILTIN {
        let sc = builtin_scenario(name).expect("builtin").numab;
        let seeds = [1, 2, 3];
        let best = kernels()
            .map(|v| mean(&runs(&sc, v, &seeds), |r| r.elapsed_s()))
            .fold(f64::MAX, f64::min);
        let ours = runs(&sc, ScannerVersion::Mmlab, &seeds);
        let el = mean(&ours, |r| r.elapsed_s());
        println!("{name}: mmlab {el:.2} s, best kernel version {best:.2} s");
        assert!(ours.iter().all(|r| r.starved_vmas == 0), "{name}");
        // A known miss on numa-disjoint since threads touch their stacks
        // at creation (see the crate docs): 76.4 s vs rfc-1of6's 74.4 s
        // (+2.7%), one more marking scan of the part-time set's 2 GiB VMA;
        // the best kernel version there starves 25 VMAs.
        let allowance = if name == "numa-disjoint" { 1.04 } else { 1.02 };
        assert!(el <= best * allowance, "{name}: mmlab {el} vs best {best}");
    }
}

#[test]
fn numab_thp_units_count_as_pmds() {
    let sc = scenario(&TINY.replace("passes = 60", "passes = 60\nthp_fraction = 1.0"));
    let r = run(&sc, ScannerVersion::V6_7, 3).expect("run");
    let c = r.counters;
    assert!(c.numa_huge_pte_updates > 0);
    // A PMD counts 512 base pages in numa_pte_updates; the rest are the
    // 4 KiB stack and data pages.
    assert!(c.numa_pte_updates >= 512 * c.numa_huge_pte_updates);
    assert!(c.numa_pte_updates - 512 * c.numa_huge_pte_updates < 10_000);
    // One hint fault per PMD, 512 pages per migrated THP.
    assert!(c.numa_hint_faults < c.numa_pte_updates / 100);
    assert!(c.thp_migration_success > 0);
    assert_eq!(c.numa_pages_migrated, 512 * c.thp_migration_success);
}

#[test]
fn numab_bench_throughput_counts_units() {
    let sc = scenario(TINY);
    let (units_per_s, r) = numab::bench_throughput(&sc, ScannerVersion::V6_5, 1).expect("bench");
    assert!(r.units_processed > 0);
    assert!(units_per_s.is_finite() && units_per_s > 0.0);
    // The benchmark runs the same model as `run`.
    assert_eq!(r, run(&sc, ScannerVersion::V6_5, 1).expect("run"));
}
