//! Synthetic but realistic [`RunReport`]s, shaped like the scenarios'
//! output (latency histograms, percentiles, several runs per policy,
//! plot series), for the store, compare and HTML tests and for the report
//! screenshot in `docs/`: a test fixture, outside the library.
//! Deterministic: the same seed gives the same reports. The numbers follow the source threads' orders of magnitude; they are
//! not measurements.

use lab::report::{Log2Histogram, MetricSamples, Mode, PolicyResult, RunReport, Series};
use std::collections::BTreeMap;

/// A small deterministic generator for the synthetic data: the SplitMix64
/// stream of `simcore::rng` (the seeding step of the one RNG).
#[derive(Debug, Clone)]
pub struct SampleRng(u64);

impl SampleRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SampleRng {
        SampleRng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        simcore::rng::splitmix64(&mut self.0)
    }

    /// Uniform in `(0, 1)`.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// A latency metric: `runs` runs of `n` log-normal samples around
/// `median_ns` (spread `sigma` in log space) with a rare slow mode
/// (`tail_frac` of samples at `tail_ns`). Fills the per-run mean, the
/// per-run p50/p99/p999/max and the merged histogram.
pub fn latency_metric(
    rng: &mut SampleRng,
    runs: usize,
    n: usize,
    median_ns: f64,
    sigma: f64,
    tail_frac: f64,
    tail_ns: f64,
) -> MetricSamples {
    let mut m = MetricSamples {
        unit: "ns".into(),
        ..Default::default()
    };
    let mut hist = Log2Histogram::default();
    for _ in 0..runs {
        let mut xs: Vec<f64> = (0..n)
            .map(|_| {
                let base = if rng.unit() < tail_frac {
                    tail_ns
                } else {
                    median_ns
                };
                (base * (sigma * rng.normal()).exp()).max(1.0)
            })
            .collect();
        xs.sort_by(f64::total_cmp);
        for x in &xs {
            hist.record(*x as u64);
        }
        let q = |p: f64| xs[((xs.len() as f64 * p) as usize).min(xs.len() - 1)].round();
        m.values
            .push((xs.iter().sum::<f64>() / xs.len() as f64).round());
        for (k, p) in [("p50", 0.5), ("p99", 0.99), ("p999", 0.999), ("max", 1.0)] {
            m.percentiles.entry(k.to_string()).or_default().push(q(p));
        }
    }
    m.histogram = Some(hist);
    m
}

/// A scalar metric: `runs` values around `mean` with relative noise `rel`.
pub fn scalar_metric(
    rng: &mut SampleRng,
    unit: &str,
    runs: usize,
    mean: f64,
    rel: f64,
    higher_is_better: bool,
) -> MetricSamples {
    MetricSamples {
        unit: unit.into(),
        values: (0..runs)
            .map(|_| (mean * (1.0 + rel * rng.normal())).max(0.0))
            .collect(),
        higher_is_better,
        ..Default::default()
    }
}

fn report(scenario: &str, mode: Mode, runs: u32, seed: u64, order: &[&str]) -> RunReport {
    RunReport {
        scenario: scenario.into(),
        mode,
        runs,
        seed,
        scenario_toml: format!(
            "name = \"{scenario}\"\nmode = \"{}\"\nruns = {runs}\nseed = {seed}\npolicies = [{}]\n",
            mode.as_str(),
            order
                .iter()
                .map(|p| format!("\"{p}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        policy_order: order.iter().map(|s| s.to_string()).collect(),
        policies: BTreeMap::new(),
        facts: Default::default(),
    }
}

/// `refault-storm` (source 003): refault latency and decision mismatch.
pub fn refault_storm(seed: u64) -> RunReport {
    let mut rng = SampleRng::new(seed);
    let order = [
        "linux-5.15",
        "linux-5.15-ratelimited",
        "linux-6.8",
        "hierstat",
    ];
    let mut r = report("refault-storm", Mode::Sim, 5, seed, &order);
    // (median ns, sigma, slow fraction, slow ns, mismatch rate)
    let shape = [
        (600.0, 0.9, 0.08, 2_600_000.0, 0.0),
        (900.0, 0.8, 0.002, 60_000.0, 0.118),
        (1_400.0, 0.7, 0.004, 40_000.0, 0.021),
        (700.0, 0.6, 0.0005, 12_000.0, 0.0),
    ];
    for (p, (med, sig, tf, tn, mm)) in order.iter().zip(shape) {
        let mut res = PolicyResult::default();
        res.metrics.insert(
            "refault_latency_ns".into(),
            latency_metric(&mut rng, 5, 4000, med, sig, tf, tn),
        );
        let mut mis = scalar_metric(&mut rng, "ratio", 5, mm, 0.08, false);
        if mm == 0.0 {
            mis.values = vec![0.0; 5];
        }
        res.metrics.insert("decision_mismatch_rate".into(), mis);
        r.policies.insert(p.to_string(), res);
    }
    r
}

/// `stat-readers` (source 000 patch 5): read latency and stale reads.
pub fn stat_readers(seed: u64) -> RunReport {
    let mut rng = SampleRng::new(seed ^ 0x5eed);
    let order = ["linux-5.15", "linux-6.8", "hierstat"];
    let mut r = report("stat-readers", Mode::Sim, 3, seed, &order);
    let shape = [
        (3_000.0, 1.0, 0.01, 9_000_000.0, 41.0),
        (1_800.0, 0.8, 0.003, 400_000.0, 3.0),
        (900.0, 0.6, 0.0005, 30_000.0, 0.0),
    ];
    for (p, (med, sig, tf, tn, stale)) in order.iter().zip(shape) {
        let mut res = PolicyResult::default();
        res.metrics.insert(
            "read_latency_ns".into(),
            latency_metric(&mut rng, 3, 5000, med, sig, tf, tn),
        );
        let mut st = scalar_metric(&mut rng, "count", 3, stale, 0.2, false);
        st.values.iter_mut().for_each(|v| *v = v.round());
        res.metrics.insert("stale_reads".into(), st);
        r.policies.insert(p.to_string(), res);
    }
    r
}

/// `update-path` (sources 000 patch 3, 001): throughput at depth 2 and 4
/// and a throughput-vs-depth series.
pub fn update_path(seed: u64) -> RunReport {
    let mut rng = SampleRng::new(seed ^ 0xdead);
    let order = ["linux-5.15", "pre-rstat", "linux-6.8", "hierstat"];
    let mut r = report("update-path", Mode::Real, 5, seed, &order);
    // ops/s at depth 1; relative cost per extra level.
    let shape = [
        (52.0e6, 0.035),
        (31.0e6, 0.22),
        (50.0e6, 0.055),
        (55.0e6, 0.012),
    ];
    for (p, (d1, per_level)) in order.iter().zip(shape) {
        let mut res = PolicyResult::default();
        let at = |d: f64| d1 * (1.0f64 - per_level).powf(d - 1.0);
        for d in [2.0, 4.0] {
            res.metrics.insert(
                format!("update_ops_per_sec_depth{d}"),
                scalar_metric(&mut rng, "ops/s", 5, at(d), 0.012, true),
            );
        }
        res.series.insert(
            "throughput_vs_depth".into(),
            Series {
                x_label: "depth".into(),
                y_label: "updates/s".into(),
                points: (1..=6)
                    .map(|d| (d as f64, at(d as f64) * (1.0 + 0.01 * rng.normal())))
                    .collect(),
            },
        );
        r.policies.insert(p.to_string(), res);
    }
    r
}

/// `numa01-thread-alloc` (source 004): scanner versions, PTE updates, local
/// access fraction over time and per-VMA coverage.
pub fn numa01(seed: u64) -> RunReport {
    let mut rng = SampleRng::new(seed ^ 0x0404);
    let order = ["v6.5", "v6.7", "v6.12", "ours"];
    let mut r = report("numa01-thread-alloc", Mode::Sim, 3, seed, &order);
    // (elapsed s, pte updates, final local fraction, coverage of cold VMAs)
    let shape = [
        (82.8, 6_985.0, 0.62, 0.05),
        (74.1, 410_000.0, 0.81, 0.45),
        (69.2, 1_570_000.0, 0.93, 0.92),
        (67.5, 1_210_000.0, 0.95, 0.97),
    ];
    for (p, (el, pte, local, cold)) in order.iter().zip(shape) {
        let mut res = PolicyResult::default();
        res.metrics.insert(
            "elapsed_s".into(),
            scalar_metric(&mut rng, "s", 3, el, 0.01, false),
        );
        res.metrics.insert(
            "pte_updates".into(),
            scalar_metric(&mut rng, "count", 3, pte, 0.03, true),
        );
        res.series.insert(
            "local_fraction".into(),
            Series {
                x_label: "time (s)".into(),
                y_label: "local accesses".into(),
                points: (0..=40)
                    .map(|i| {
                        let t = i as f64 * 2.0;
                        let f = 0.5 + (local - 0.5) * (1.0 - (-t / 15.0).exp());
                        (t, (f + 0.01 * rng.normal()).clamp(0.0, 1.0))
                    })
                    .collect(),
            },
        );
        res.series.insert(
            "vma_coverage".into(),
            Series {
                x_label: "VMA".into(),
                y_label: "fraction scanned".into(),
                points: (0..24)
                    .map(|v| {
                        let hot = v < 4;
                        let c = if hot { 1.0 } else { cold };
                        (v as f64, (c + 0.02 * rng.normal()).clamp(0.0, 1.0))
                    })
                    .collect(),
            },
        );
        r.policies.insert(p.to_string(), res);
    }
    r
}

/// One report of each kind above, for a full-featured HTML page.
pub fn all(seed: u64) -> Vec<RunReport> {
    vec![
        refault_storm(seed),
        stat_readers(seed),
        update_path(seed),
        numa01(seed),
    ]
}
