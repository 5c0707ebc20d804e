//! `kind = "refault"` scenario files: the refault storm (seed 003).
//!
//! ```toml
//! name = "refault-storm"
//! kind = "refault"
//! mode = "sim"
//! runs = 2
//! seed = 1
//! policies = ["linux-5.15", "linux-5.15-ratelimited", "hierstat"]
//!
//! [refault]              # every key optional; defaults below
//! cpus = 96
//! nodes = 2
//! duration_ms = 4000     # measured virtual time
//! warmup_ms = 1000
//! services = 60          # system.slice/svcN.service besides the workload
//! flush_period_ms = 2000
//!
//! [refault.background]   # stat updates on every CPU, in other services
//! updates_per_sec_per_cpu = 12000.0
//! pages = [1, 4]
//! services_per_cpu = 24
//! burst = 8
//!
//! [refault.workload]     # system.slice/workload.service
//! cpus = 16
//! accesses_per_sec_per_cpu = 300.0
//! memory_max_mb = 512
//! swap_mb = 2048
//! file_mb = 1024
//! hot_fraction = 0.3
//! hot_access = 0.85
//! anon_min_mb = 96
//! anon_max_mb = 352
//! anon_period_ms = 4000
//! anon_touch_per_tick = 64
//!
//! [refault.latency]
//! base_ns = [256, 8192]  # rest of workingset_refault, log-uniform
//! counters_per_line = 8
//! remote_flush_lines = true
//! kworker_delay_us = 50
//! ```

use super::deserialize;
use crate::error::ScenarioError;
use crate::report::Mode;
use serde::{Deserialize, Serialize};

/// The whole file: header plus the `[refault]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefaultScenario {
    /// Scenario name.
    pub name: String,
    /// Must be `refault`.
    pub kind: String,
    /// Must be `sim`.
    pub mode: Mode,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Seed thread reproduced.
    #[serde(default)]
    pub reproduces: String,
    /// Runs per policy.
    #[serde(default = "one")]
    pub runs: u32,
    /// Base seed (run `i` uses `seed + i`).
    #[serde(default)]
    pub seed: u64,
    /// Policies (hierstat presets), the first is the baseline.
    #[serde(default)]
    pub policies: Vec<String>,
    /// Parameters.
    #[serde(default)]
    pub refault: RefaultSpec,
    /// User policies (`[[policy]]` tables, [`super::policy`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<super::policy::PolicySpec>,
}

fn one() -> u32 {
    1
}

/// Parameters of the refault storm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RefaultSpec {
    /// Logical CPUs (engine shards).
    pub cpus: u32,
    /// NUMA nodes.
    pub nodes: u32,
    /// Measured virtual time.
    pub duration_ms: u64,
    /// Virtual time run before measuring.
    pub warmup_ms: u64,
    /// Services besides the workload under `system.slice`.
    pub services: u32,
    /// Period of the background flusher (`FLUSH_TIME`).
    pub flush_period_ms: u64,
    /// Stat updates in the other services.
    pub background: BackgroundSpec,
    /// The refaulting workload.
    pub workload: WorkloadSpec,
    /// Latency model.
    pub latency: LatencySpec,
}

impl Default for RefaultSpec {
    fn default() -> Self {
        RefaultSpec {
            cpus: 96,
            nodes: 2,
            duration_ms: 4000,
            warmup_ms: 1000,
            services: 60,
            flush_period_ms: 2000,
            background: BackgroundSpec::default(),
            workload: WorkloadSpec::default(),
            latency: LatencySpec::default(),
        }
    }
}

/// Stat updates on every CPU in the other services: page faults, anon
/// map/unmap, dirtying and writeback, slab and socket buffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackgroundSpec {
    /// Updates per second on each CPU.
    pub updates_per_sec_per_cpu: f64,
    /// Update size range in pages (inclusive).
    pub pages: [u64; 2],
    /// Services whose tasks run on each CPU (each CPU updates these).
    pub services_per_cpu: u32,
    /// Updates per simulated burst.
    pub burst: u32,
}

impl Default for BackgroundSpec {
    fn default() -> Self {
        BackgroundSpec {
            updates_per_sec_per_cpu: 12_000.0,
            pages: [1, 4],
            services_per_cpu: 24,
            burst: 8,
        }
    }
}

/// The workload: reads of a file with a hot set, and an anonymous heap
/// that grows and shrinks, under `memory.max`, with swap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadSpec {
    /// CPUs running the workload (the first N).
    pub cpus: u32,
    /// File page accesses per second per workload CPU.
    pub accesses_per_sec_per_cpu: f64,
    /// `memory.max` of the workload.
    pub memory_max_mb: u64,
    /// Swap space (zram).
    pub swap_mb: u64,
    /// Size of the file read.
    pub file_mb: u64,
    /// Fraction of the file that is hot.
    pub hot_fraction: f64,
    /// Fraction of accesses that go to the hot part.
    pub hot_access: f64,
    /// Smallest anonymous heap.
    pub anon_min_mb: u64,
    /// Largest anonymous heap.
    pub anon_max_mb: u64,
    /// Period of the heap's grow/shrink cycle.
    pub anon_period_ms: u64,
    /// Heap THPs touched per 10 ms tick.
    pub anon_touch_per_tick: u32,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            cpus: 16,
            accesses_per_sec_per_cpu: 300.0,
            memory_max_mb: 512,
            swap_mb: 2048,
            file_mb: 1024,
            hot_fraction: 0.3,
            hot_access: 0.85,
            anon_min_mb: 96,
            anon_max_mb: 352,
            anon_period_ms: 4000,
            anon_touch_per_tick: 64,
        }
    }
}

/// The refault latency model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LatencySpec {
    /// Range of the rest of `workingset_refault` (xarray, LRU cost
    /// accounting, interrupts), drawn log-uniformly: `[256, 8192]` gives a
    /// mean of about 2.3 µs, the shape of seed 003's 5.10 histogram.
    pub base_ns: [u64; 2],
    /// Counters per cache line of a flushed per-CPU row.
    pub counters_per_line: u32,
    /// Price a flush's reads of per-CPU rows written by other CPUs as cache
    /// line transfers (`CostModel::line_transfer_ns` per line).
    pub remote_flush_lines: bool,
    /// Delay before a kworker runs a queued flush (async policy).
    pub kworker_delay_us: u64,
}

impl Default for LatencySpec {
    fn default() -> Self {
        LatencySpec {
            base_ns: [256, 8192],
            counters_per_line: 8,
            remote_flush_lines: true,
            kworker_delay_us: 50,
        }
    }
}

impl RefaultScenario {
    /// Parses and validates a scenario file; `file` names it in errors.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem.
    pub fn parse(file: &str, text: &str) -> Result<Self, ScenarioError> {
        let sc: RefaultScenario = deserialize(file, text)?;
        let err = |field: &str, message: String| ScenarioError::at(file, text, field, message);
        super::policy::validate(file, text, &sc.policy)?;
        if sc.kind != "refault" {
            return Err(err("kind", format!("`{}` is not `refault`", sc.kind)));
        }
        if sc.mode != Mode::Sim {
            return Err(err(
                "mode",
                "the refault storm runs in sim mode only".into(),
            ));
        }
        if sc.runs == 0 || sc.runs > 1000 {
            return Err(err("runs", format!("{} is not in 1..=1000", sc.runs)));
        }
        sc.refault
            .validate()
            .map_err(|(field, msg)| err(&format!("refault.{field}"), msg))?;
        Ok(sc)
    }
}

impl RefaultSpec {
    /// Checks ranges; returns `(field, message)` for the first problem.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |f: &str, m: String| Err((f.to_string(), m));
        if self.cpus == 0 || self.cpus as usize > crate::cpu::MAX_CPUS {
            return e("cpus", format!("{} is not in 1..=1024", self.cpus));
        }
        if self.nodes == 0 || self.nodes > 64 || self.nodes > self.cpus {
            return e(
                "nodes",
                format!("{} is not in 1..=min(64, cpus)", self.nodes),
            );
        }
        if self.duration_ms == 0 || self.duration_ms > 600_000 {
            return e(
                "duration_ms",
                format!("{} is not in 1..=600000", self.duration_ms),
            );
        }
        if self.services == 0 || self.services > 10_000 {
            return e("services", format!("{} is not in 1..=10000", self.services));
        }
        if self.flush_period_ms == 0 {
            return e("flush_period_ms", "must be > 0".into());
        }
        let b = &self.background;
        if !(b.updates_per_sec_per_cpu.is_finite() && b.updates_per_sec_per_cpu >= 0.0) {
            return e("background.updates_per_sec_per_cpu", "must be >= 0".into());
        }
        if b.pages[0] == 0 || b.pages[0] > b.pages[1] {
            return e("background.pages", "needs 1 <= min <= max".into());
        }
        if b.services_per_cpu == 0 || b.burst == 0 {
            return e(
                "background.burst",
                "burst and services_per_cpu must be > 0".into(),
            );
        }
        let w = &self.workload;
        if w.cpus == 0 || w.cpus > self.cpus {
            return e(
                "workload.cpus",
                format!("{} is not in 1..={}", w.cpus, self.cpus),
            );
        }
        if !(w.accesses_per_sec_per_cpu.is_finite() && w.accesses_per_sec_per_cpu > 0.0) {
            return e("workload.accesses_per_sec_per_cpu", "must be > 0".into());
        }
        if !(0.0..=1.0).contains(&w.hot_fraction) || !(0.0..=1.0).contains(&w.hot_access) {
            return e(
                "workload.hot_fraction",
                "fractions must be in [0, 1]".into(),
            );
        }
        if w.anon_min_mb > w.anon_max_mb || w.anon_max_mb >= w.memory_max_mb {
            return e(
                "workload.anon_max_mb",
                "needs anon_min_mb <= anon_max_mb < memory_max_mb".into(),
            );
        }
        if w.file_mb == 0 || w.memory_max_mb == 0 || w.file_mb > 64 << 10 {
            return e("workload.file_mb", "must be in 1..=65536".into());
        }
        if w.anon_period_ms == 0 {
            return e("workload.anon_period_ms", "must be > 0".into());
        }
        let l = &self.latency;
        if l.base_ns[0] == 0 || l.base_ns[0] > l.base_ns[1] {
            return e("latency.base_ns", "needs 1 <= min <= max".into());
        }
        if l.counters_per_line == 0 {
            return e("latency.counters_per_line", "must be > 0".into());
        }
        Ok(())
    }
}
