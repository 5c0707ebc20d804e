//! Experiment 1: page-fault cost per memcg depth (the update path).
//!
//! A worker placed in a group `depth` levels below the hierarchy root maps
//! `pages` anonymous pages, writes one byte to each (one fault per page, THP
//! disabled on the range), and unmaps them, `warmup_rounds + rounds` times.
//! Every fault charges the page counter of the group and of each ancestor
//! and updates memcg statistics (`NR_ANON_MAPPED`, LRU counts, `pgfault`, …)
//! whose rstat bookkeeping also walks the ancestors; so the cost per fault
//! as a function of depth is the update path's hierarchy cost.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cgroup::CgroupTree;
use crate::detect::{Host, RunFacts};
use crate::error::Error;
use crate::experiments::{Event, Observer};
use crate::sys::child::{Job, Mapping};
use crate::worker::Worker;
use simcore::stats::{self, slope};
use simcore::Cancel;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpdatePathConfig {
    /// Depths below the hierarchy root (1 = a group directly under it).
    pub depths: Vec<usize>,
    /// Pages mapped and touched per round.
    pub pages: usize,
    /// Measured rounds per run.
    pub rounds: usize,
    /// Unmeasured rounds first (cold page tables, allocator warm-up).
    pub warmup_rounds: usize,
    /// Runs per depth; each run is a fresh group chain and worker, and runs
    /// cycle through the depths (rotating the order) so drift on a noisy host
    /// is spread over all depths.
    pub runs: usize,
}

impl Default for UpdatePathConfig {
    /// Depths 1, 2, 4, 8; 4096 pages (16 MiB at 4 KiB) × 10 rounds; 5 runs.
    fn default() -> Self {
        UpdatePathConfig {
            depths: vec![1, 2, 4, 8],
            pages: 4096,
            rounds: 10,
            warmup_rounds: 2,
            runs: 5,
        }
    }
}

impl UpdatePathConfig {
    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), Error> {
        if self.depths.is_empty() || self.depths.iter().any(|&d| d == 0 || d > 64) {
            return Err(Error::Config(
                "update-path: depths must be 1..=64 and non-empty".into(),
            ));
        }
        if self.pages == 0 || self.rounds == 0 || self.runs == 0 {
            return Err(Error::Config(
                "update-path: pages, rounds and runs must be > 0".into(),
            ));
        }
        Ok(())
    }
}

/// One run at one depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdatePathRun {
    /// Run index (0-based).
    pub run: usize,
    /// Per measured round: ns from mmap to munmap's return (the full cycle).
    pub round_cycle_ns: Vec<u64>,
    /// Per measured round: ns from mmap to the last touch (faults only).
    pub round_touch_ns: Vec<u64>,
    /// Per measured round: the full cycle in the worker's CPU time (ns):
    /// time the worker was descheduled by other load is excluded.
    pub round_cycle_cpu_ns: Vec<u64>,
    /// Per measured round: the touch phase in the worker's CPU time (ns).
    pub round_touch_cpu_ns: Vec<u64>,
    /// Median round's full cycle divided by pages: ns per fault, including
    /// the unmap (free + uncharge) of the page.
    pub ns_per_fault: f64,
    /// Median round's touch time divided by pages: ns per fault alone.
    pub ns_per_fault_touch: f64,
    /// Median round's full cycle in CPU time divided by pages.
    pub cpu_ns_per_fault: f64,
    /// Median round's touch phase in CPU time divided by pages.
    pub cpu_ns_per_fault_touch: f64,
    /// `1e9 / ns_per_fault`.
    pub faults_per_sec: f64,
}

/// All runs at one depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepthResult {
    /// Levels below the hierarchy root.
    pub depth: usize,
    /// The runs.
    pub runs: Vec<UpdatePathRun>,
    /// Mean over runs of `ns_per_fault`.
    pub ns_per_fault_mean: f64,
    /// Sample standard deviation over runs of `ns_per_fault`.
    pub ns_per_fault_stddev: f64,
    /// Smallest run's `ns_per_fault` (least disturbed by other load).
    pub ns_per_fault_min: f64,
    /// Mean over runs of `ns_per_fault_touch`.
    pub ns_per_fault_touch_mean: f64,
    /// Mean over runs of `faults_per_sec`.
    pub faults_per_sec_mean: f64,
    /// Mean over runs of `cpu_ns_per_fault`.
    pub cpu_ns_per_fault_mean: f64,
    /// Sample standard deviation over runs of `cpu_ns_per_fault`.
    pub cpu_ns_per_fault_stddev: f64,
    /// Smallest run's `cpu_ns_per_fault`.
    pub cpu_ns_per_fault_min: f64,
    /// Mean over runs of `cpu_ns_per_fault_touch`.
    pub cpu_ns_per_fault_touch_mean: f64,
}

/// The experiment's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdatePathResult {
    /// Host facts.
    pub facts: RunFacts,
    /// The configuration run.
    pub config: UpdatePathConfig,
    /// One entry per configured depth, in configuration order.
    pub depths: Vec<DepthResult>,
    /// Least-squares slope of mean ns/fault over depth (ns per level).
    pub slope_ns_per_level: Option<f64>,
    /// Least-squares slope of mean CPU ns/fault over depth (ns per level):
    /// the figure least disturbed by other load on the host.
    pub slope_cpu_ns_per_level: Option<f64>,
    /// `slope_cpu_ns_per_level` relative to the shallowest depth's mean CPU
    /// ns/fault, percent per level.
    pub slope_cpu_pct_per_level: Option<f64>,
    /// CPU-time faults/s at depth 4 ÷ at depth 2.
    pub cpu_ratio_depth4_to_depth2: Option<f64>,
    /// The slope relative to the depth-1 mean, in percent per level.
    pub slope_pct_per_level: Option<f64>,
    /// faults/s at depth 4 ÷ faults/s at depth 2 (source 001's ratio), when
    /// both depths were measured.
    pub ratio_depth4_to_depth2: Option<f64>,
    /// Wall time of the whole experiment.
    pub wall_s: f64,
}

impl UpdatePathResult {
    /// The result for one depth.
    pub fn depth(&self, depth: usize) -> Option<&DepthResult> {
        self.depths.iter().find(|d| d.depth == depth)
    }
}

/// The median of `v` (mean of the middle two for an even count).
fn median_u64(v: &[u64]) -> f64 {
    stats::median(&v.iter().map(|&x| x as f64).collect::<Vec<_>>())
}

/// One run at `depth`: a fresh chain, a worker in its leaf, the rounds.
fn one_run(
    host: &Host,
    cfg: &UpdatePathConfig,
    depth: usize,
    run: usize,
    cancel: &Cancel,
    obs: Observer<'_>,
) -> Result<UpdatePathRun, Error> {
    let mut tree = CgroupTree::create(host)?;
    obs(Event::TreeCreated { top: tree.top() });
    let chain = tree.mkdir_chain(depth - 1)?;
    let leaf = chain
        .last()
        .cloned()
        .unwrap_or_else(|| tree.top().to_path_buf());
    let total = cfg.warmup_rounds + cfg.rounds;
    let mut w = Worker::start(
        &tree,
        &leaf,
        Job::FaultRounds {
            pages: cfg.pages,
            rounds: total,
            mapping: Mapping::Anon,
        },
    )?;
    obs(Event::WorkerStarted {
        pid: w.pid(),
        cgroup: &leaf,
    });
    // Generous: 50 µs per fault would be 30× the expected cost.
    let per_round = Duration::from_micros(50 * cfg.pages as u64) + Duration::from_secs(1);
    let mut cycle = Vec::with_capacity(cfg.rounds);
    let mut touch = Vec::with_capacity(cfg.rounds);
    let mut cycle_cpu = Vec::with_capacity(cfg.rounds);
    let mut touch_cpu = Vec::with_capacity(cfg.rounds);
    for r in 0..total {
        let mut buf = [0u8; 32];
        w.recv(&mut buf, per_round, cancel)?;
        if r < cfg.warmup_rounds {
            continue;
        }
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[8 * i..8 * i + 8]);
            u64::from_ne_bytes(b)
        };
        touch.push(word(0));
        cycle.push(word(1));
        touch_cpu.push(word(2));
        cycle_cpu.push(word(3));
    }
    w.finish()?;
    tree.close()?;
    let pages = cfg.pages as f64;
    let ns_per_fault = median_u64(&cycle) / pages;
    Ok(UpdatePathRun {
        run,
        ns_per_fault,
        ns_per_fault_touch: median_u64(&touch) / pages,
        cpu_ns_per_fault: median_u64(&cycle_cpu) / pages,
        cpu_ns_per_fault_touch: median_u64(&touch_cpu) / pages,
        faults_per_sec: 1e9 / ns_per_fault,
        round_cycle_ns: cycle,
        round_touch_ns: touch,
        round_cycle_cpu_ns: cycle_cpu,
        round_touch_cpu_ns: touch_cpu,
    })
}

/// Runs the update-path experiment. Everything it creates is removed before
/// it returns, on success, error, cancellation or panic.
pub fn run_update_path(
    host: &Host,
    cfg: &UpdatePathConfig,
    cancel: &Cancel,
) -> Result<UpdatePathResult, Error> {
    run_update_path_observed(host, cfg, cancel, &mut |_| {})
}

/// [`run_update_path`], reporting [`Event`]s to `obs`.
pub fn run_update_path_observed(
    host: &Host,
    cfg: &UpdatePathConfig,
    cancel: &Cancel,
    obs: Observer<'_>,
) -> Result<UpdatePathResult, Error> {
    cfg.validate()?;
    let start = Instant::now();
    let mut per_depth: Vec<Vec<UpdatePathRun>> = vec![Vec::new(); cfg.depths.len()];
    for run in 0..cfg.runs {
        for k in 0..cfg.depths.len() {
            let i = (k + run) % cfg.depths.len();
            crate::signals::check(cancel)?;
            per_depth[i].push(one_run(host, cfg, cfg.depths[i], run, cancel, obs)?);
            obs(Event::Step {
                done: run * cfg.depths.len() + k + 1,
                total: cfg.runs * cfg.depths.len(),
            });
        }
    }
    let depths: Vec<DepthResult> = cfg
        .depths
        .iter()
        .zip(per_depth)
        .map(|(&depth, runs)| {
            let ns: Vec<f64> = runs.iter().map(|r| r.ns_per_fault).collect();
            let (mean, sd) = (stats::mean(&ns), stats::stddev(&ns));
            let touch: Vec<f64> = runs.iter().map(|r| r.ns_per_fault_touch).collect();
            let fps: Vec<f64> = runs.iter().map(|r| r.faults_per_sec).collect();
            let cpu: Vec<f64> = runs.iter().map(|r| r.cpu_ns_per_fault).collect();
            let (cpu_mean, cpu_sd) = (stats::mean(&cpu), stats::stddev(&cpu));
            let cpu_touch: Vec<f64> = runs.iter().map(|r| r.cpu_ns_per_fault_touch).collect();
            DepthResult {
                cpu_ns_per_fault_mean: cpu_mean,
                cpu_ns_per_fault_stddev: cpu_sd,
                cpu_ns_per_fault_min: cpu.iter().cloned().fold(f64::INFINITY, f64::min),
                cpu_ns_per_fault_touch_mean: stats::mean(&cpu_touch),
                depth,
                ns_per_fault_mean: mean,
                ns_per_fault_stddev: sd,
                ns_per_fault_min: ns.iter().cloned().fold(f64::INFINITY, f64::min),
                ns_per_fault_touch_mean: stats::mean(&touch),
                faults_per_sec_mean: stats::mean(&fps),
                runs,
            }
        })
        .collect();
    let trend = |f: fn(&DepthResult) -> f64| {
        let points: Vec<(f64, f64)> = depths.iter().map(|d| (d.depth as f64, f(d))).collect();
        let s = slope(&points);
        let base = depths.iter().min_by_key(|d| d.depth).map(f);
        (s, s.zip(base).map(|(s, b)| 100.0 * s / b))
    };
    let (slope_ns, slope_pct) = trend(|d| d.ns_per_fault_mean);
    let (slope_cpu, slope_cpu_pct) = trend(|d| d.cpu_ns_per_fault_mean);
    let ratio = |f: fn(&DepthResult) -> f64| {
        let at = |k: usize| depths.iter().find(|d| d.depth == k).map(f);
        at(4).zip(at(2)).map(|(a, b)| a / b)
    };
    Ok(UpdatePathResult {
        facts: host.facts().clone(),
        config: cfg.clone(),
        slope_ns_per_level: slope_ns,
        slope_pct_per_level: slope_pct,
        slope_cpu_ns_per_level: slope_cpu,
        slope_cpu_pct_per_level: slope_cpu_pct,
        ratio_depth4_to_depth2: ratio(|d| d.faults_per_sec_mean),
        // faults/s in CPU time is 1e9 / CPU ns per fault.
        cpu_ratio_depth4_to_depth2: ratio(|d| 1e9 / d.cpu_ns_per_fault_mean),
        depths,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_validation() {
        assert!(UpdatePathConfig::default().validate().is_ok());
        let bad = UpdatePathConfig {
            depths: vec![0],
            ..Default::default()
        };
        assert!(matches!(bad.validate(), Err(Error::Config(_))));
        let bad = UpdatePathConfig {
            pages: 0,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn median_even_and_odd() {
        assert_eq!(median_u64(&[3, 1, 2]), 2.0);
        assert_eq!(median_u64(&[4, 1, 2, 3]), 2.5);
    }
}
