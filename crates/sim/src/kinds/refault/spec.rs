//! `kind = "refault"` scenario files: the refault storm (source 003).
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

use crate::cpu::MAX_CPUS;
use lab::report::Mode;
use lab::ScenarioError;
use lab::{Header, PolicySpec, Range, Source};
use serde::{Deserialize, Serialize};

/// The ranges of the refault kind's numeric fields.
pub const RANGES: &[Range] = &[
    Range::int("refault.cpus", 1, MAX_CPUS as u64),
    Range::int("refault.nodes", 1, 64),
    Range::int("refault.duration_ms", 1, lab::ranges::MS_MAX),
    Range::int("refault.warmup_ms", 0, lab::ranges::MS_MAX),
    Range::int("refault.services", 1, 10_000),
    Range::int("refault.flush_period_ms", 1, lab::ranges::MS_MAX),
    Range::real("refault.background.updates_per_sec_per_cpu", 0.0, 1e7),
    Range::int("refault.background.pages", 1, 1 << 20),
    Range::int("refault.background.services_per_cpu", 1, 10_000),
    Range::int("refault.background.burst", 1, 4096),
    Range::int("refault.workload.cpus", 1, MAX_CPUS as u64),
    Range::real("refault.workload.accesses_per_sec_per_cpu", 0.001, 1e7),
    Range::int("refault.workload.memory_max_mb", 1, 1 << 20),
    Range::int("refault.workload.swap_mb", 0, 1 << 20),
    Range::int("refault.workload.file_mb", 1, 1 << 16),
    Range::real("refault.workload.hot_fraction", 0.0, 1.0),
    Range::real("refault.workload.hot_access", 0.0, 1.0),
    Range::int("refault.workload.anon_min_mb", 0, 1 << 20),
    Range::int("refault.workload.anon_max_mb", 0, 1 << 20),
    Range::int("refault.workload.anon_period_ms", 1, lab::ranges::MS_MAX),
    Range::int("refault.workload.anon_touch_per_tick", 0, 1 << 20),
    Range::int("refault.latency.base_ns", 1, 1_000_000_000),
    Range::int("refault.latency.counters_per_line", 1, 64),
    Range::int("refault.latency.kworker_delay_us", 0, 10_000_000),
];

/// The whole file: header plus the `[refault]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Source thread reproduced.
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
    /// User policies (`[[policy]]` tables, [`lab::policy`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<PolicySpec>,
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
    /// mean of about 2.3 µs, the shape of source 003's 5.10 histogram.
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
    /// Parses and validates a scenario file (its ranges are already
    /// checked).
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem.
    pub fn parse(src: &Source<'_>) -> Result<Self, ScenarioError> {
        let sc: RefaultScenario = src.deserialize()?;
        if sc.kind != "refault" {
            return Err(src.error("kind", format!("`{}` is not `refault`", sc.kind)));
        }
        if sc.mode != Mode::Sim {
            return Err(src.error("mode", "the refault storm runs in sim mode only"));
        }
        sc.refault.validate().map_err(|(field, msg)| {
            // A check between two fields is placed at the one the file sets.
            let others: &[&str] = match field.as_str() {
                "nodes" => &["refault.cpus"],
                "workload.cpus" => &["refault.cpus"],
                "workload.anon_max_mb" => &[
                    "refault.workload.anon_min_mb",
                    "refault.workload.memory_max_mb",
                ],
                _ => &[],
            };
            src.error_between(&format!("refault.{field}"), others, msg)
        })?;
        Ok(sc)
    }

    /// The shared header keys, its user policies resolved (`src` names
    /// their errors).
    ///
    /// # Errors
    /// A [`ScenarioError`] for the first invalid `[[policy]]` table.
    pub fn header(&self, src: &Source<'_>) -> Result<Header, ScenarioError> {
        Ok(Header {
            name: self.name.clone(),
            mode: self.mode,
            description: self.description.clone(),
            reproduces: self.reproduces.clone(),
            policies: self.policies.clone(),
            runs: self.runs,
            seed: self.seed,
            user_policies: lab::policy::validate(src, self.policy.clone())?,
        })
    }

    /// A file of `header`'s keys and a default `[refault]` table.
    pub fn default_with(header: &Header) -> RefaultScenario {
        RefaultScenario {
            name: header.name.clone(),
            kind: "refault".into(),
            mode: header.mode,
            description: header.description.clone(),
            reproduces: header.reproduces.clone(),
            runs: header.runs,
            seed: header.seed,
            policies: header.policies.clone(),
            refault: RefaultSpec::default(),
            policy: header
                .user_policies
                .iter()
                .map(|u| u.spec.clone())
                .collect(),
        }
    }
}

impl RefaultSpec {
    /// Checks the relations between fields (each field's own range is in
    /// [`RANGES`]); returns `(field, message)` for the first problem.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |f: &str, m: String| Err((f.to_string(), m));
        if self.nodes > self.cpus {
            return e(
                "nodes",
                format!("{} is more than cpus = {}", self.nodes, self.cpus),
            );
        }
        let b = &self.background;
        if b.pages[0] > b.pages[1] {
            return e("background.pages", "needs 1 <= min <= max".into());
        }
        let w = &self.workload;
        if w.cpus > self.cpus {
            return e(
                "workload.cpus",
                format!("{} is more than cpus = {}", w.cpus, self.cpus),
            );
        }
        if w.anon_min_mb > w.anon_max_mb || w.anon_max_mb >= w.memory_max_mb {
            return e(
                "workload.anon_max_mb",
                "needs anon_min_mb <= anon_max_mb < memory_max_mb".into(),
            );
        }
        let l = &self.latency;
        if l.base_ns[0] > l.base_ns[1] {
            return e("latency.base_ns", "needs 1 <= min <= max".into());
        }
        Ok(())
    }
}
