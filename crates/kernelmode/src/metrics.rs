//! The kernel kind's metric names (the table in [`crate::run`]'s docs):
//! what the runner records, the twin predicts (`predicted_*`), the claims
//! check and the reports pivot.

use crate::spec::HOST_POLICY;
use lab::report::{PolicyResult, RunReport};

/// The cases a report's host metrics hold, read from their names: the
/// part between `prefix` and `suffix` of each name that has both, parsed
/// as `T`, sorted and deduplicated (the depths of `ns_per_fault_depth*`,
/// the spike sizes of `stat_lag_over_threshold_*kib`, …). The claims and
/// the tables and figures of [`crate::present`] enumerate a run's cases
/// with it.
pub fn host_cases<T: std::str::FromStr + Ord>(
    report: &RunReport,
    prefix: &str,
    suffix: &str,
) -> Vec<T> {
    let mut v: Vec<T> = report
        .policies
        .get(HOST_POLICY)
        .map(|p| {
            p.metrics
                .keys()
                .filter_map(|k| k.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.dedup();
    v
}

/// Metric: faults per second at `depth`.
pub fn faults_per_sec(depth: usize) -> String {
    format!("faults_per_sec_depth{depth}")
}

/// Metric: wall-clock ns per fault at `depth`.
pub fn ns_per_fault(depth: usize) -> String {
    format!("ns_per_fault_depth{depth}")
}

/// Metric: the worker's CPU ns per fault at `depth`.
pub fn cpu_ns_per_fault(depth: usize) -> String {
    format!("cpu_ns_per_fault_depth{depth}")
}

/// Metric: `memory.stat` read latency with `groups` groups and `writers` writers.
pub fn read_latency(groups: usize, writers: usize) -> String {
    format!("read_latency_ns_g{groups}_w{writers}")
}

/// Metric: the reader's CPU ns per `memory.stat` read (the read's own
/// kernel work, without waiting for a CPU).
pub fn read_cpu_ns(groups: usize, writers: usize) -> String {
    format!("read_cpu_ns_g{groups}_w{writers}")
}

/// Metric: repetitions of a spike of `kib` whose parent missed more than
/// the threshold right after the charge.
pub fn stat_lag_over_threshold(kib: u64) -> String {
    format!("stat_lag_over_threshold_{kib}kib")
}

/// Metric: how long a followed parent stayed stale after a spike of
/// `kib`, ms (one sample per followed repetition).
pub fn stale_for_ms(kib: u64) -> String {
    format!("stale_for_ms_{kib}kib")
}

/// Metric: the counter − stat gap (pages) right after a spike of `kib`.
pub fn gap_after_charge(kib: u64) -> String {
    format!("gap_after_charge_pages_{kib}kib")
}

/// Metric: spike pages the parent's stat did not show right after the charge.
pub fn stat_lag_after_charge(kib: u64) -> String {
    format!("stat_lag_after_charge_pages_{kib}kib")
}

/// Metric: the slope of wall ns/fault over depth, % per level.
pub const SLOPE_PCT: &str = "slope_pct_per_level";
/// Metric: faults/s at depth 4 ÷ faults/s at depth 2.
pub const RATIO_4_2: &str = "ratio_depth4_to_depth2";
/// Metric: the documented flush threshold, pages.
pub const THRESHOLD: &str = "threshold_pages";

/// Pushes `n_{name}`: the samples behind a distribution (claims and
/// tables print it beside the percentiles).
pub fn push_count(r: &mut PolicyResult, name: &str, n: usize) {
    r.push(&format!("n_{name}"), "count", n as f64, false);
}
