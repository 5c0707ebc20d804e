//! The results model shared by every runner, the CLI, the results store and
//! the reports: one [`RunReport`] per scenario run.
//!
//! A scenario is run once per policy (or scanner version), `runs` times each.
//! Every metric keeps its per-run values so that comparisons can compute
//! %stddev and a Welch t-test, and latency metrics keep a log2 histogram
//! (funclatency-style buckets) merged over runs.
//!
//! A kind may also present its runs in its own terms, for any front end
//! to lay out: [`Table`]s, [`Figure`]s and a [`SideBySide`] of measured
//! and simulated figures (see [`crate::Spec`]).

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
    /// The host's own kernel: processes in real memory cgroups
    /// (`kind = "kernel"` scenarios, the `hostkernel` crate).
    Kernel,
}

impl Mode {
    /// The name scenario files and the results store use.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Real => "real",
            Mode::Kernel => "kernel",
        }
    }
}

/// The log2 latency histogram (funclatency's buckets) of a latency
/// metric: the workspace's one definition, [`simcore::stats::Log2Histogram`].
pub use simcore::stats::Log2Histogram;

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

impl PolicyResult {
    fn metric(&mut self, name: &str, unit: &str, higher_is_better: bool) -> &mut MetricSamples {
        self.metrics
            .entry(name.to_string())
            .or_insert_with(|| MetricSamples {
                unit: unit.to_string(),
                higher_is_better,
                ..MetricSamples::default()
            })
    }

    /// Appends one run's value of a metric.
    pub fn push(&mut self, name: &str, unit: &str, value: f64, higher_is_better: bool) {
        self.metric(name, unit, higher_is_better).values.push(value);
    }

    /// Appends one run's latency distribution: mean as the value, p50/p99/
    /// p999/max as percentiles, and the samples into the merged histogram.
    pub fn push_latency(&mut self, name: &str, samples: &[u64]) {
        self.push_distribution(name, "ns", samples);
        let m = self.metric(name, "ns", false);
        let h = m.histogram.get_or_insert_with(Log2Histogram::default);
        for &v in samples {
            h.record(v);
        }
    }

    /// Appends one run's distribution summary (mean as the value, p50/p99/
    /// p999/max as nearest-rank percentiles) without a histogram.
    pub fn push_distribution(&mut self, name: &str, unit: &str, samples: &[u64]) {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let mean = if sorted.is_empty() {
            0.0
        } else {
            sorted.iter().map(|&v| v as f64).sum::<f64>() / sorted.len() as f64
        };
        let q = |q: f64| simcore::stats::quantile(&sorted, q) as f64;
        let pcts = [
            ("p50", q(0.50)),
            ("p99", q(0.99)),
            ("p999", q(0.999)),
            ("max", q(1.0)),
        ];
        self.push_summary(name, unit, mean, pcts);
    }

    /// Appends one run's distribution given as its summary figures: `value`
    /// (the mean) and the `p50`/`p99`/`p999`/`max` percentiles.
    pub fn push_summary(&mut self, name: &str, unit: &str, value: f64, pcts: [(&str, f64); 4]) {
        let m = self.metric(name, unit, false);
        m.values.push(value);
        for (k, v) in pcts {
            m.percentiles.entry(k.to_string()).or_default().push(v);
        }
    }
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
    /// Facts about what ran beyond the host facts every run carries (kernel
    /// mode: the host kernel release, the cgroup version, online CPUs, the
    /// flush threshold ...), by name; empty for the simulated kinds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facts: BTreeMap<String, String>,
}

/// One claim of a source thread checked against a run: the claim, the
/// figure measured side by side, the figure the thread published, and
/// whether the measurement shows it. Each scenario kind states its claims
/// next to its runner ([`crate::scenario::Spec::claims`]).
///
/// A claim whose source gives a figure is checked *in size*
/// ([`Claim::size`]): the source's relative change and ours, which must
/// have the same sign and be within 2× of it ([`InSize::holds`]). A claim
/// whose source gives no figure checks a direction. A claim that misses,
/// or a reference shown instead of a claim, says why in [`Claim::why`]:
/// the mechanism the model lacks and the evidence, or the reason the
/// figure is not comparable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claim {
    /// Scenario name.
    pub scenario: String,
    /// What the source thread says should happen.
    pub claim: String,
    /// What this run measured.
    pub measured: String,
    /// The figure the source thread published.
    pub published: String,
    /// Whether the measurement shows the claim.
    pub pass: bool,
    /// A reference figure shown for comparison, not a claim to meet.
    pub info: bool,
    /// The source's figure and ours, for a claim in size.
    pub size: Option<InSize>,
    /// Why the claim misses, or why it is only a reference; empty when
    /// there is nothing to add.
    pub why: String,
}

/// A claim in size: the source's figure and the measured one, in the same
/// unit: a relative change in percent, or a ratio (`×`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InSize {
    /// The source's figure.
    pub published: f64,
    /// Ours.
    pub measured: f64,
    /// `%` (a relative change) or `×` (a ratio).
    pub unit: &'static str,
}

impl InSize {
    /// The band every claim in size states: the same sign as the source's
    /// figure, and within 2× of it (`published / 2 ..= 2 × published`).
    pub fn holds(&self) -> bool {
        let k = self.ratio();
        k.is_finite() && (0.5..=2.0).contains(&k)
    }

    /// Whether ours is above the band: more than twice the source's figure
    /// (a miss the other way is under half of it, or of the opposite sign).
    /// What a missed claim's reason turns on.
    pub fn above(&self) -> bool {
        self.ratio() > 2.0
    }

    /// Ours ÷ the source's (negative: opposite signs).
    pub fn ratio(&self) -> f64 {
        self.measured / self.published
    }

    /// The measured figure as printed: ours, and the ratio to the source's.
    pub fn describe(&self) -> String {
        let ours = if self.unit == "%" {
            format!("{:+.2}%", self.measured)
        } else {
            format!("{:.1}{}", self.measured, self.unit)
        };
        let k = self.ratio();
        if k.is_finite() {
            format!("{ours} ({k:.2}× the source's)")
        } else {
            ours
        }
    }
}

impl Claim {
    /// The verdict as printed: `[info]` for a reference figure, `[ok]`
    /// for a claim that holds, `[MISS]` for one that does not.
    pub fn mark(&self) -> &'static str {
        if self.info {
            "[info]"
        } else if self.pass {
            "[ok]"
        } else {
            "[MISS]"
        }
    }
}

/// Collects the claims of one report, in the order they are added.
#[derive(Debug)]
pub struct Claims {
    scenario: String,
    out: Vec<Claim>,
}

impl Claims {
    /// No claims yet, for `report`'s scenario.
    pub fn new(report: &RunReport) -> Claims {
        Claims {
            scenario: report.scenario.clone(),
            out: Vec::new(),
        }
    }

    /// A claim of this report's scenario that holds, counted, not in
    /// size, with no reason given: what each `add` changes.
    fn claim(&self, claim: &str, measured: String, published: &str) -> Claim {
        Claim {
            scenario: self.scenario.clone(),
            claim: claim.into(),
            measured,
            published: published.into(),
            pass: true,
            info: false,
            size: None,
            why: String::new(),
        }
    }

    /// Adds a claim of direction (its source gives no figure to meet in
    /// size); one whose text ends in "(reference)" is shown for
    /// information and not counted.
    pub fn add(&mut self, claim: &str, measured: String, published: &str, pass: bool) {
        self.out.push(Claim {
            pass,
            info: claim.ends_with("(reference)"),
            ..self.claim(claim, measured, published)
        });
    }

    /// Adds a claim in size: `size` holds ([`InSize::holds`]) or the claim
    /// misses; `published` is the source's figure as the source wrote it,
    /// `context` what else the run measured (may be empty) and `why` the
    /// missing mechanism with its evidence, printed when it misses.
    pub fn add_in_size(
        &mut self,
        claim: &str,
        size: InSize,
        context: &str,
        published: &str,
        why: &str,
    ) {
        let pass = size.holds();
        let mut measured = size.describe();
        if !context.is_empty() {
            measured.push_str("; ");
            measured.push_str(context);
        }
        self.out.push(Claim {
            pass,
            size: Some(size),
            why: if pass { String::new() } else { why.into() },
            ..self.claim(claim, measured, published)
        });
    }

    /// Adds a reference figure (not counted) with the reason it is not a
    /// claim.
    pub fn add_info(&mut self, claim: &str, measured: String, published: &str, why: &str) {
        self.out.push(Claim {
            info: true,
            why: why.into(),
            ..self.claim(claim, measured, published)
        });
    }

    /// Sets the reason of the last claim added when it misses.
    pub fn why_if_missed(&mut self, why: &str) {
        if let Some(c) = self.out.last_mut() {
            if !c.pass && !c.info {
                c.why = why.into();
            }
        }
    }

    /// The claims added.
    pub fn into_vec(self) -> Vec<Claim> {
        self.out
    }
}

impl RunReport {
    /// Mean over runs of `metric` under `policy`; `None` when either is
    /// missing or the mean is not finite.
    pub fn mean_of(&self, policy: &str, metric: &str) -> Option<f64> {
        let m = self.policies.get(policy)?.metrics.get(metric)?;
        let v = mean(&m.values);
        v.is_finite().then_some(v)
    }

    /// Percentile `key` (`p50`, `p99`, `p999`, `max`) of `metric` under
    /// `policy`: the mean over runs, the largest for `max`.
    pub fn percentile_of(&self, policy: &str, metric: &str, key: &str) -> Option<f64> {
        let m = self.policies.get(policy)?.metrics.get(metric)?;
        let vs = m.percentiles.get(key)?;
        let v = if key == "max" {
            vs.iter().copied().fold(f64::NAN, f64::max)
        } else {
            mean(vs)
        };
        v.is_finite().then_some(v)
    }

    /// Sum over runs of `metric` under `policy`.
    pub fn sum_of(&self, policy: &str, metric: &str) -> Option<f64> {
        let m = self.policies.get(policy)?.metrics.get(metric)?;
        Some(m.values.iter().sum())
    }

    /// Median over runs of `num`'s `metric[i] / den`'s `metric[i]`, two
    /// policies whose runs are aligned by index (real-mode runs interleave
    /// the policies, so run `i` of each ran at about the same time and a
    /// drift in the host's speed moves one ratio, not every mean); `None`
    /// if either is missing or no pair is finite.
    pub fn paired_policy_ratio(&self, num: &str, den: &str, metric: &str) -> Option<f64> {
        let n = self.policies.get(num)?.metrics.get(metric)?;
        let d = self.policies.get(den)?.metrics.get(metric)?;
        median_ratio(&n.values, &d.values)
    }

    /// The smallest value of `metric` over every run of `policies` (those
    /// that have it); `None` when none has it.
    pub fn min_over(&self, policies: &[&str], metric: &str) -> Option<f64> {
        let v = policies
            .iter()
            .filter_map(|p| self.policies.get(*p)?.metrics.get(metric))
            .flat_map(|m| m.values.iter().copied())
            .fold(f64::INFINITY, f64::min);
        v.is_finite().then_some(v)
    }

    /// Median over runs of `num[i] / den[i]` for one policy (runs are
    /// aligned by index); `None` if either metric is missing or no pair is
    /// finite.
    pub fn paired_median_ratio(&self, policy: &str, num: &str, den: &str) -> Option<f64> {
        let p = self.policies.get(policy)?;
        let (n, d) = (p.metrics.get(num)?, p.metrics.get(den)?);
        median_ratio(&n.values, &d.values)
    }
}

/// Median of `num[i] / den[i]` over the finite ratios; `None` when none is.
fn median_ratio(num: &[f64], den: &[f64]) -> Option<f64> {
    let ratios: Vec<f64> = num
        .iter()
        .zip(den)
        .map(|(a, b)| a / b)
        .filter(|k| k.is_finite())
        .collect();
    let k = median(&ratios);
    k.is_finite().then_some(k)
}

/// A table a scenario kind makes of its runs ([`crate::Spec::tables`]):
/// a title, column headings and rows of cells, each cell already written
/// as it is shown. A front end lays it out (mmlab: aligned text, an HTML
/// table) and shows it instead of its generic table of every metric by
/// policy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// What the table shows.
    pub title: String,
    /// Column headings.
    pub header: Vec<String>,
    /// Rows of cells, in the order of [`Table::header`].
    pub rows: Vec<Vec<String>>,
}

/// A plot a scenario kind makes of its runs ([`crate::Spec::figures`]):
/// named lines of points over one x axis, the y axis linear from zero. A
/// front end draws it (mmlab's HTML report: an SVG line chart after its
/// generic plots), leaving out lines without points, and the figure when
/// none has any.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// What it plots, a short stable name (`kernel-faults`): the HTML
    /// report's `data-plot`.
    pub kind: &'static str,
    /// Caption.
    pub title: String,
    /// The x axis.
    pub x: FigureAxis,
    /// Label of the y axis (with unit).
    pub y_label: String,
    /// The lines, in legend order.
    pub lines: Vec<FigureLine>,
}

/// The x axis of a [`Figure`].
#[derive(Debug, Clone, PartialEq)]
pub struct FigureAxis {
    /// Label (with unit).
    pub label: String,
    /// How values map onto it.
    pub scale: Scale,
    /// Ticks at whole numbers only (depths, counts).
    pub whole_numbers: bool,
    /// The values it spans besides the lines' points: the figure's cases,
    /// whether every line has a point there or not.
    pub values: Vec<f64>,
}

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Logarithmic, base 2 (sizes that double).
    Log2,
    /// Logarithmic, base 10.
    Log10,
}

/// One line of a [`Figure`].
#[derive(Debug, Clone, PartialEq)]
pub struct FigureLine {
    /// Legend name.
    pub name: String,
    /// Palette slot (mmlab's report has 12; the same slot is the same
    /// colour in every figure).
    pub color: usize,
    /// Points in x order, finite.
    pub points: Vec<(f64, f64)>,
}

/// A run's measured figures beside a simulation of the same shapes
/// ([`crate::Spec::compare_with_simulation`]): one row per figure, with
/// the headings of the measured and simulated columns and notes on what
/// the figures mean and where the simulation differs.
#[derive(Debug, Clone, PartialEq)]
pub struct SideBySide {
    /// What is compared with what (`host kernel vs simulated linux-6.17`).
    pub title: String,
    /// Heading of the measured column (`host 6.18.0`).
    pub measured: String,
    /// Heading of the simulated column (`sim linux-6.17 (2 CPUs)`).
    pub simulated: String,
    /// Heading of the ratio column, measured ÷ simulated (`host / sim`).
    pub ratio: String,
    /// The figures.
    pub rows: Vec<SideRow>,
    /// What the figures mean and where the simulation differs.
    pub notes: Vec<String>,
}

/// One figure of a [`SideBySide`].
#[derive(Debug, Clone, PartialEq)]
pub struct SideRow {
    /// What is compared.
    pub figure: String,
    /// Unit of both values.
    pub unit: String,
    /// The measured value.
    pub measured: f64,
    /// The simulated value.
    pub simulated: f64,
}

impl SideRow {
    /// measured ÷ simulated; `None` when not finite.
    pub fn ratio(&self) -> Option<f64> {
        let k = self.measured / self.simulated;
        k.is_finite().then_some(k)
    }
}

pub use simcore::stats::{mean, median, pct_change};

/// Nanoseconds as microseconds, or milliseconds from 1 ms on (claims'
/// measured figures).
pub fn format_us(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

/// A one-run simulated report of `scenario` with `(policy, metric, value)`
/// rows, built by hand: for claims' unit tests and examples.
pub fn report_from_rows(scenario: &str, rows: &[(&str, &str, f64)]) -> RunReport {
    let mut policies: BTreeMap<String, PolicyResult> = BTreeMap::new();
    for (p, m, v) in rows {
        policies.entry(p.to_string()).or_default().metrics.insert(
            m.to_string(),
            MetricSamples {
                values: vec![*v],
                ..Default::default()
            },
        );
    }
    RunReport {
        scenario: scenario.into(),
        mode: Mode::Sim,
        runs: 1,
        seed: 0,
        scenario_toml: String::new(),
        policy_order: vec![],
        policies,
        facts: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_size_is_same_sign_within_twice() {
        let c = |p: f64, m: f64| InSize {
            published: p,
            measured: m,
            unit: "%",
        };
        assert!(c(-6.0, -3.0).holds() && c(-6.0, -12.0).holds());
        assert!(!c(-6.0, -2.9).holds() && !c(-6.0, -12.1).holds());
        assert!(!c(-6.0, 6.0).holds(), "opposite sign");
        assert!(!c(0.0, 0.0).holds(), "no figure to be within 2x of");
        // Which way a miss went: above the band, or under it (or the
        // opposite sign).
        assert!(c(-6.0, -12.1).above() && c(10.0, 20.1).above());
        assert!(!c(-6.0, -2.9).above() && !c(-6.0, 6.0).above() && !c(10.0, 15.0).above());
        assert_eq!(c(-4.0, -2.0).describe(), "-2.00% (0.50× the source's)");
    }
}
