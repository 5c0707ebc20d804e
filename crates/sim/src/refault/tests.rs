use super::*;
use crate::cost::CostModel;

fn show(name: &str, o: &StormOutcome) {
    let mut s = o.refault_latencies.clone();
    s.sort_unstable();
    let p99 = crate::scenarios::quantile(&s, 0.99);
    eprintln!(
        "{name:24} refaults {:6} mean {:9.0} ns p99 {:9} flushes {:5} fl_mean {:9.0} mismatch {:.4} act {:.3}/{:.3} skip {} waits {} ({} ns) async {} evict {} ooms {}",
        o.refaults,
        o.mean_refault_ns(),
        p99,
        o.refault_flushes,
        storm::mean(&o.flush_latencies),
        o.mismatch_rate(),
        storm::ratio(o.activations, o.refaults),
        storm::ratio(o.exact_activations, o.refaults),
        o.skipped_flushes,
        o.flush_waits,
        o.flush_wait_ns,
        o.async_requests,
        o.evictions,
        o.ooms,
    );
}

#[test]
#[ignore = "exploration: prints every policy's figures"]
fn explore_full() {
    let text = include_str!("../../../../scenarios/refault-storm.toml");
    let sc = RefaultScenario::parse("refault-storm.toml", text).unwrap();
    let only = std::env::var("STORM_POLICIES").unwrap_or_default();
    for p in sc.policies.iter().filter(|p| only.is_empty() || only.split(',').any(|o| o == p.as_str())) {
        let t = std::time::Instant::now();
        let seeds: u64 = std::env::var("STORM_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        for seed in sc.seed..sc.seed + seeds {
            let o = run_once(&sc.refault, p.parse().unwrap(), seed, &CostModel::defaults()).unwrap();
            show(p, &o);
        }
        eprintln!("   host {:?}", t.elapsed());
    }
}

/// A smaller machine for debug-build tests: 32 CPUs, 50 services.
fn reduced() -> RefaultSpec {
    let mut s = RefaultSpec {
        cpus: 32,
        nodes: 2,
        duration_ms: 1500,
        warmup_ms: 300,
        services: 50,
        ..RefaultSpec::default()
    };
    s.background.services_per_cpu = 24;
    s.workload = WorkloadSpec {
        cpus: 8,
        accesses_per_sec_per_cpu: 300.0,
        memory_max_mb: 128,
        swap_mb: 512,
        file_mb: 256,
        anon_min_mb: 24,
        anon_max_mb: 88,
        anon_period_ms: 1000,
        anon_touch_per_tick: 16,
        ..WorkloadSpec::default()
    };
    s
}

#[test]
#[ignore = "exploration: reduced-size figures"]
fn explore_reduced() {
    for p in ["linux-5.15", "linux-5.15-ratelimited", "hierstat"] {
        let t = std::time::Instant::now();
        let o = run_once(&reduced(), p.parse().unwrap(), 1, &CostModel::defaults()).unwrap();
        show(p, &o);
        eprintln!("   host {:?}", t.elapsed());
    }
}
