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

/// Metric: repetitions of a spike of `kib` that were trials of the trap:
/// the concurrent reader flushed the parent while the spike was charged
/// (read it, where the kernel's flush passes could not be traced). A
/// reader the loaded host kept off its CPU for the whole charge gave the
/// race no chance.
pub fn trap_trials(kib: u64) -> String {
    format!("trap_trials_{kib}kib")
}

/// Metric: of the [`trap_trials`], those whose parent missed more than the
/// threshold right after the charge.
pub fn trapped(kib: u64) -> String {
    format!("trapped_{kib}kib")
}

/// Metric: the parent's lag (pages) right after the charge, over the
/// trapped trials only.
pub fn stat_lag_trapped(kib: u64) -> String {
    format!("stat_lag_trapped_pages_{kib}kib")
}

/// Metric: the CPU-0 pass of the reader's first flush of each charge, ns.
pub fn first_pass_ns(kib: u64) -> String {
    format!("first_pass_ns_{kib}kib")
}

/// Metric: the CPU-0 passes of the reader's later flushes of a charge
/// (each repetition's median), ns.
pub fn later_pass_ns(kib: u64) -> String {
    format!("later_pass_ns_{kib}kib")
}

/// Metric: the lower end of [`first_pass_ns`]'s median's interval at
/// [`hostkernel::INTERVAL_CONFIDENCE`] ([`simcore::stats::median_interval`]).
pub fn first_pass_low_ns(kib: u64) -> String {
    format!("first_pass_p50_low_ns_{kib}kib")
}

/// Metric: the upper end of that interval.
pub fn first_pass_high_ns(kib: u64) -> String {
    format!("first_pass_p50_high_ns_{kib}kib")
}

/// Metric: the lower end of [`later_pass_ns`]'s median's interval.
pub fn later_pass_low_ns(kib: u64) -> String {
    format!("later_pass_p50_low_ns_{kib}kib")
}

/// Metric: the upper end of that interval.
pub fn later_pass_high_ns(kib: u64) -> String {
    format!("later_pass_p50_high_ns_{kib}kib")
}

/// Metric: the charge's wall time per page (median over repetitions), ns.
pub fn charge_ns_per_page(kib: u64) -> String {
    format!("charge_ns_per_page_{kib}kib")
}

/// Metric: the reader's flushes of the parent during a charge.
pub fn reader_flushes(kib: u64) -> String {
    format!("reader_flushes_{kib}kib")
}

/// Metric (predicted only): the probability that a trial traps its parent.
pub fn trap_probability(kib: u64) -> String {
    format!("trap_probability_{kib}kib")
}

/// Metric (predicted only): the lower end of [`trap_probability`]'s band:
/// the probability with the windows the measured inputs' lower bounds
/// give (the flush share's and the passes' intervals).
pub fn trap_probability_low(kib: u64) -> String {
    format!("trap_probability_low_{kib}kib")
}

/// Metric (predicted only): the upper end of that band.
pub fn trap_probability_high(kib: u64) -> String {
    format!("trap_probability_high_{kib}kib")
}

/// Metric (predicted only): the window of a charge's first flush, ns.
pub fn window_first_ns(kib: u64) -> String {
    format!("window_first_ns_{kib}kib")
}

/// Metric (predicted only): the window of its later flushes, ns.
pub fn window_later_ns(kib: u64) -> String {
    format!("window_later_ns_{kib}kib")
}

/// Metric (predicted only): the chance that a charge's first flush has an
/// update in its window.
pub fn hit_first(kib: u64) -> String {
    format!("hit_first_{kib}kib")
}

/// Metric (predicted only): the same for its later flushes.
pub fn hit_later(kib: u64) -> String {
    format!("hit_later_{kib}kib")
}

/// Metric (predicted only): the flushes of a charge with more than `T`
/// pages to go (the trap's chances).
pub fn trap_chances(kib: u64) -> String {
    format!("trap_chances_{kib}kib")
}

/// Metric: the parent's visit over a flush's CPU-0 pass, measured on a
/// chain ([`hostkernel::FlushShare::share`]).
pub const FLUSH_SHARE: &str = "flush_share";
/// Metric: the lower bound of [`FLUSH_SHARE`] ([`hostkernel::FlushShare::share_low`]).
pub const FLUSH_SHARE_LOW: &str = "flush_share_low";
/// Metric: its upper bound ([`hostkernel::FlushShare::share_high`]).
pub const FLUSH_SHARE_HIGH: &str = "flush_share_high";
/// Metric: the chain's short pass (the leaf and its parent), ns.
pub const FLUSH_SHARE_PASS_NS: &str = "flush_share_short_pass_ns";

/// Metric: the slope of wall ns/fault over depth, % per level.
pub const SLOPE_PCT: &str = "slope_pct_per_level";
/// Metric: [`SLOPE_PCT`] of CPU ns/fault.
pub const CPU_SLOPE_PCT: &str = "cpu_slope_pct_per_level";
/// Metric: faults/s at depth 4 ÷ faults/s at depth 2.
pub const RATIO_4_2: &str = "ratio_depth4_to_depth2";
/// Metric: [`RATIO_4_2`] of CPU-time fault rates.
pub const CPU_RATIO_4_2: &str = "cpu_ratio_depth4_to_depth2";
/// Metric: the documented flush threshold, pages.
pub const THRESHOLD: &str = "threshold_pages";

/// Pushes `n_{name}`: the samples behind a distribution (claims and
/// tables print it beside the percentiles).
pub fn push_count(r: &mut PolicyResult, name: &str, n: usize) {
    r.push(&format!("n_{name}"), "count", n as f64, false);
}
