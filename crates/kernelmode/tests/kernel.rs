//! Kernel mode end to end on this host (skipped, with the reason, where
//! the host cannot run it): every built-in kernel scenario reports like
//! any run and leaves nothing behind; the simulated twin's stale-read
//! shape follows the threshold.

use kernelmode::run::{ns_per_fault, read_latency, stat_lag_after_charge};
use kernelmode::twin::simulate_spikes;
use kernelmode::HOST_POLICY;
use sim::{Progress, RunOptions};

#[path = "../../hostkernel/tests/support/mod.rs"]
mod support;
use support::{host_or_skip, own_subtrees};

#[test]
fn builtin_kernel_scenarios_report_like_any_run() {
    let Some((host, _serial)) = host_or_skip("builtin_kernel_scenarios_report_like_any_run") else {
        return;
    };
    for (name, metric) in [
        ("update-path-kernel", ns_per_fault(4)),
        ("stat-readers-kernel", read_latency(2000, 2)),
        ("stale-read-kernel", stat_lag_after_charge(16384)),
    ] {
        let mut sc = kernelmode::catalog().builtin(name).unwrap().unwrap();
        sc.shrink_for_smoke_test();
        let mut steps = 0;
        let report = sc
            .run(&RunOptions::default(), &mut |p| {
                if matches!(p, Progress::Step(_)) {
                    steps += 1;
                }
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(steps > 0, "{name}: no progress");
        assert_eq!(report.mode, sim::report::Mode::Kernel);
        assert_eq!(report.policy_order, vec![HOST_POLICY.to_string()]);
        let m = &report.policies[HOST_POLICY].metrics[&metric];
        assert_eq!(m.values.len(), 1, "{name}: {metric}");
        for k in ["p50", "p99", "p999", "max"] {
            assert!(m.percentiles.contains_key(k), "{name}: {metric} {k}");
        }
        assert_eq!(
            report.facts["cgroup_version"],
            host.facts().cgroup_version.to_string()
        );
        assert_eq!(report.facts["kernel_release"], host.facts().kernel_release);
        assert!(own_subtrees(&host).is_empty(), "{name} left a subtree");
    }
}

#[test]
fn a_panic_in_the_progress_callback_leaves_no_cgroup_behind() {
    let Some((host, _serial)) =
        host_or_skip("a_panic_in_the_progress_callback_leaves_no_cgroup_behind")
    else {
        return;
    };
    let mut sc = kernelmode::catalog()
        .builtin("stat-readers-kernel")
        .unwrap()
        .unwrap();
    sc.shrink_for_smoke_test();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sc.run(&RunOptions::default(), &mut |p| {
            if matches!(p, Progress::Step(_)) {
                panic!("progress observer fails mid-run");
            }
        })
    }));
    assert!(r.is_err(), "the observer's panic propagates");
    assert!(own_subtrees(&host).is_empty(), "a subtree was left behind");
}

#[test]
fn simulated_spikes_below_the_threshold_are_missed_and_large_ones_seen() {
    // 2 CPUs: T = 128 pages. 16 pages x 4 items = 64 units stay under
    // it: the parent's read does not flush and misses the spike.
    let small = simulate_spikes(2, 16, 5, 2.0).unwrap();
    assert_eq!(small.threshold, 128);
    assert!(small.lags.iter().all(|&l| l <= 16), "{small:?}");
    assert!(small.lags.iter().any(|&l| l > 0), "{small:?}");
    assert_eq!(small.longest_stale_ms, 0.0);
    // 1024 pages is far over T: the read flushes, lag within the bound.
    let big = simulate_spikes(2, 1024, 5, 2.0).unwrap();
    assert!(big.lags.iter().all(|&l| l <= 128 + 2 * 63), "{big:?}");
}
