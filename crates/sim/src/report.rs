//! The results model shared by every runner, the CLI, the results store and
//! the reports: one [`RunReport`] per scenario run.
//!
//! A scenario is run once per policy (or scanner version), `runs` times each.
//! Every metric keeps its per-run values so that comparisons can compute
//! %stddev and a Welch t-test, and latency metrics keep a log2 histogram
//! (funclatency-style buckets) merged over runs.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a scenario was executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Deterministic virtual time on N logical CPUs.
    Sim,
    /// Real threads on real cores, wall-clock timing.
    Real,
}

/// Log2 latency histogram: `buckets[i]` counts samples `v` with
/// `2^i <= v < 2^(i+1)` (bucket 0 also holds `v == 0`), as bcc's funclatency prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Log2Histogram {
    /// Sample counts per power-of-two bucket.
    pub buckets: Vec<u64>,
}

impl Log2Histogram {
    /// Index of the bucket holding `v`.
    pub fn bucket_of(v: u64) -> usize {
        if v == 0 {
            0
        } else {
            63 - v.leading_zeros() as usize
        }
    }

    /// Records one sample.
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    /// Records `n` samples of value `v`.
    pub fn record_n(&mut self, v: u64, n: u64) {
        let b = Self::bucket_of(v);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += n;
    }

    /// Adds every bucket of `other` into `self`.
    pub fn merge(&mut self, other: &Log2Histogram) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
    }

    /// Total number of samples.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// One metric of one policy: its unit, its value in every run, optional
/// percentiles (per run, keyed `p50`, `p99`, `p999`, `max`) and histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricSamples {
    /// Unit of the values: `ns`, `ops/s`, `count`, `ratio`, `s`, ...
    pub unit: String,
    /// The metric's value in each run, in run order.
    pub values: Vec<f64>,
    /// Per-run percentile values keyed by name (`p50`, `p99`, `p999`, `max`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub percentiles: BTreeMap<String, Vec<f64>>,
    /// Latency distribution merged over all runs, when the metric is a latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Log2Histogram>,
    /// `true` when a larger value is better (throughput); used to colour %change.
    #[serde(default)]
    pub higher_is_better: bool,
}

/// A named series of (x, y) points for plots: throughput vs depth, local
/// access fraction over time, per-VMA scan coverage, read-latency CDF ...
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Label of the x axis (with unit).
    pub x_label: String,
    /// Label of the y axis (with unit).
    pub y_label: String,
    /// The points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// Everything measured for one policy (or scanner version) of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// Metrics by name (`read_latency_ns`, `update_ops_per_sec_depth2`, ...).
    pub metrics: BTreeMap<String, MetricSamples>,
    /// Plot series by name (`throughput_vs_depth`, `local_fraction`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub series: BTreeMap<String, Series>,
}

/// The result of running one scenario under several policies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Scenario name.
    pub scenario: String,
    /// Execution mode.
    pub mode: Mode,
    /// Runs per policy.
    pub runs: u32,
    /// Base seed (run `i` uses `seed + i`).
    pub seed: u64,
    /// The resolved scenario file (TOML text) that produced this report.
    #[serde(default)]
    pub scenario_toml: String,
    /// Policy names in the order they were run; the first is the baseline of
    /// every %change.
    pub policy_order: Vec<String>,
    /// Results by policy name.
    pub policies: BTreeMap<String, PolicyResult>,
}

impl RunReport {
    /// The report of scenario `sc` with its per-policy results: the one
    /// place a report is assembled ([`crate::run()`]).
    pub fn new(sc: &crate::spec::Scenario, policies: BTreeMap<String, PolicyResult>) -> RunReport {
        RunReport {
            scenario: sc.name().to_string(),
            mode: sc.mode(),
            runs: sc.runs(),
            seed: sc.seed(),
            scenario_toml: sc.source(),
            policy_order: sc.policies().to_vec(),
            policies,
        }
    }
}
