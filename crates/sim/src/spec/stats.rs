//! `kind = "stats"` scenario files: a hierstat workload (update path, stat
//! readers, stale reads, false sharing), how to run it and under which
//! flush policies.
//!
//! ```toml
//! kind = "stats"                 # which runner: stats | numab | refault
//! name = "stat-readers"
//! workload = "stat-readers"      # stats kind: update-path | stat-readers | stale-read | false-sharing
//! mode = "sim"                   # sim | real
//! policies = ["linux-6.8", "hierstat"]
//! runs = 3
//! seed = 1
//! duration_ms = 1000
//! cpus = 384                     # sim: logical CPUs (1..=1024)
//! threads = 2                    # real: threads
//!
//! [tree]                         # the group hierarchy below the root
//! fanout = [10, 500]             # 10 first-level groups with 500 children each
//! names = ["system.slice", "user.slice"]   # optional names of first-level groups
//!
//! [writers]                      # stat updates
//! rate_per_cpu = 2000.0          # updates/s per CPU (0 = back to back)
//! pages = [1, 4]                 # magnitude range per update
//! ...
//! ```
//!
//! Parsing reports the file, the 1-based line and the dotted field path of
//! the first problem ([`super::deserialize`]), and semantic checks (ranges,
//! required tables) do the same.

use super::{deserialize, Kind};
use crate::cpu::MAX_CPUS;
use crate::error::ScenarioError;
use crate::report::Mode;
use serde::{Deserialize, Serialize};

/// The stats workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Threads updating a group 2 and 4 levels deep: update throughput.
    UpdatePath,
    /// Many groups with writers and periodic readers: read latency.
    StatReaders,
    /// A large event then a read: missed events and child > parent.
    StaleRead,
    /// A write-hot counter beside a hot read-mostly pointer vs separated.
    FalseSharing,
}

/// Which groups a writer or reader picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Targets {
    /// Leaves of the tree.
    Leaves,
    /// Any non-root group.
    All,
    /// First-level groups (slices).
    Slices,
    /// The root.
    Root,
}

/// The group hierarchy below the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeSpec {
    /// Children per group at each level (`[10, 500]`: 10 slices × 500).
    pub fanout: Vec<u32>,
    /// Optional names of the first-level groups (others are `gN`).
    #[serde(default)]
    pub names: Vec<String>,
}

/// Stat updates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WritersSpec {
    /// CPUs (sim) or threads (real) that write; default all.
    #[serde(default)]
    pub cpus: Option<u32>,
    /// Updates per second per writer; `0` means back to back.
    #[serde(default)]
    pub rate_per_cpu: f64,
    /// Which groups are written.
    #[serde(default = "default_leaves")]
    pub targets: Targets,
    /// Fraction of the target groups that receive updates (hot set).
    #[serde(default = "default_one")]
    pub hot_fraction: f64,
    /// Update magnitude range in pages, inclusive.
    #[serde(default = "default_pages")]
    pub pages: [u64; 2],
    /// Probability that an update is a 512-page (THP) charge.
    #[serde(default)]
    pub thp_fraction: f64,
    /// Number of stat items updated (round robin).
    #[serde(default = "default_items")]
    pub items: u32,
    /// Probability that an update is an uncharge (negative delta).
    #[serde(default)]
    pub uncharge_fraction: f64,
    /// Updates per simulated burst (sim speed; bursts are short in time).
    #[serde(default = "default_burst")]
    pub burst: u32,
}

/// `memory.stat` readers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadersSpec {
    /// Number of readers.
    pub count: u32,
    /// Each reader reads once per period (milliseconds).
    pub period_ms: f64,
    /// Which groups readers read.
    #[serde(default = "default_all")]
    pub targets: Targets,
    /// Items read per `memory.stat` read (default: all items).
    #[serde(default)]
    pub items: Option<u32>,
    /// All readers wake at the same instants (a herd of monitoring agents)
    /// instead of at seeded random phases.
    #[serde(default)]
    pub aligned: bool,
}

/// The background flusher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlusherSpec {
    /// Period in milliseconds (the kernel's `FLUSH_TIME` is 2 s).
    #[serde(default = "default_flush_period")]
    pub period_ms: u64,
}

/// Large events followed by a read (stale-read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpikeSpec {
    /// Mean interval between spikes (milliseconds).
    pub every_ms: f64,
    /// Size of a spike in pages.
    pub pages: u64,
    /// Delay between the spike and the read (microseconds).
    pub read_after_us: u64,
}

/// The update-path workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateSpec {
    /// Depths of the updated group (root is depth 0).
    pub depths: Vec<u32>,
    /// Pages per update.
    #[serde(default = "default_one_u64")]
    pub pages: u64,
    /// Number of stat items updated (round robin).
    #[serde(default = "default_items")]
    pub items: u32,
}

fn default_leaves() -> Targets {
    Targets::Leaves
}
fn default_all() -> Targets {
    Targets::All
}
fn default_one() -> f64 {
    1.0
}
fn default_one_u64() -> u64 {
    1
}
fn default_pages() -> [u64; 2] {
    [1, 1]
}
fn default_items() -> u32 {
    4
}
fn default_burst() -> u32 {
    16
}
fn default_flush_period() -> u64 {
    2000
}
fn default_runs() -> u32 {
    1
}

/// A parsed, validated `kind = "stats"` scenario: a hierstat workload
/// under flush policies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsScenario {
    /// Always [`Kind::Stats`].
    pub kind: Kind,
    /// Scenario name.
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Which seed thread it reproduces and the published figures.
    #[serde(default)]
    pub reproduces: String,
    /// The stats workload (for `kind = "stats"`).
    #[serde(default)]
    pub workload: Option<Workload>,
    /// Simulated or real.
    pub mode: Mode,
    /// Policies to compare, first is the baseline of %change.
    #[serde(default)]
    pub policies: Vec<String>,
    /// Runs per policy.
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// Base seed (run `i` uses `seed + i`).
    #[serde(default)]
    pub seed: u64,
    /// Measured duration per run in milliseconds (virtual in sim mode).
    #[serde(default)]
    pub duration_ms: u64,
    /// Logical CPUs (sim mode), 1..=1024.
    #[serde(default)]
    pub cpus: Option<u32>,
    /// Threads (real mode).
    #[serde(default)]
    pub threads: Option<u32>,
    /// Group hierarchy.
    #[serde(default)]
    pub tree: Option<TreeSpec>,
    /// Writers.
    #[serde(default)]
    pub writers: Option<WritersSpec>,
    /// Readers.
    #[serde(default)]
    pub readers: Option<ReadersSpec>,
    /// Background flusher.
    #[serde(default)]
    pub flusher: Option<FlusherSpec>,
    /// Spikes.
    #[serde(default)]
    pub spikes: Option<SpikeSpec>,
    /// Update-path parameters.
    #[serde(default)]
    pub update: Option<UpdateSpec>,
    /// User policies (`[[policy]]` tables, [`super::policy`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<super::policy::PolicySpec>,
}

/// The most groups a tree may have.
pub const MAX_GROUPS: u64 = 200_000;

impl StatsScenario {
    /// Parses and validates `text`; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<StatsScenario, ScenarioError> {
        let sc: StatsScenario = deserialize(file, text)?;
        sc.validate(file, text)?;
        Ok(sc)
    }

    fn validate(&self, file: &str, text: &str) -> Result<(), ScenarioError> {
        let err = |field: &str, message: String| ScenarioError::at(file, text, field, message);
        super::policy::validate(file, text, &self.policy)?;
        if self.name.trim().is_empty() {
            return Err(err("name", "must not be empty".into()));
        }
        if self.runs == 0 || self.runs > 1000 {
            return Err(err("runs", format!("{} is not in 1..=1000", self.runs)));
        }
        if let Some(c) = self.cpus {
            if c == 0 || c as usize > MAX_CPUS {
                return Err(err("cpus", format!("{c} is not in 1..={MAX_CPUS}")));
            }
        }
        if let Some(t) = self.threads {
            if t == 0 || t > 256 {
                return Err(err("threads", format!("{t} is not in 1..=256")));
            }
        }
        if self.kind != Kind::Stats {
            return Err(err("kind", "a stats scenario has kind = \"stats\"".into()));
        }
        let Some(w) = self.workload else {
            return Err(err(
                "workload",
                "missing: kind = \"stats\" needs a workload (update-path, stat-readers, stale-read, false-sharing)".into(),
            ));
        };
        if self.duration_ms == 0 || self.duration_ms > 600_000 {
            return Err(err(
                "duration_ms",
                format!("{} is not in 1..=600000", self.duration_ms),
            ));
        }
        if self.policies.is_empty() {
            return Err(err("policies", "at least one policy is needed".into()));
        }
        if self.mode == Mode::Kernel {
            return Err(err(
                "mode",
                "kernel mode runs kind = \"kernel\" scenarios (experiment = update-path | stat-readers | stale-read)".into(),
            ));
        }
        if self.mode == Mode::Sim && self.cpus.is_none() {
            return Err(err("cpus", "missing: sim mode needs `cpus`".into()));
        }
        if let Some(t) = &self.tree {
            if t.fanout.is_empty() {
                return Err(err("tree.fanout", "needs at least one level".into()));
            }
            let mut total: u64 = 0;
            let mut level: u64 = 1;
            for &f in &t.fanout {
                if f == 0 {
                    return Err(err("tree.fanout", "a level has fan-out 0".into()));
                }
                level = level.saturating_mul(u64::from(f));
                total = total.saturating_add(level);
            }
            if total > MAX_GROUPS {
                return Err(err(
                    "tree.fanout",
                    format!("{total} groups is more than {MAX_GROUPS}"),
                ));
            }
            if t.names.len() > t.fanout[0] as usize {
                return Err(err(
                    "tree.names",
                    format!(
                        "{} names for {} first-level groups",
                        t.names.len(),
                        t.fanout[0]
                    ),
                ));
            }
        }
        if let Some(wr) = &self.writers {
            if let Some(c) = wr.cpus {
                let most = match self.mode {
                    Mode::Sim => self.cpus.unwrap_or(1),
                    Mode::Real | Mode::Kernel => 256,
                };
                if c == 0 || c > most {
                    return Err(err(
                        "writers.cpus",
                        format!(
                            "{c} is not in 1..={most} (the scenario's CPUs or the thread limit)"
                        ),
                    ));
                }
            }
            if !(wr.rate_per_cpu.is_finite() && wr.rate_per_cpu >= 0.0) {
                return Err(err("writers.rate_per_cpu", "must be >= 0".into()));
            }
            if !(0.0..=1.0).contains(&wr.hot_fraction) || wr.hot_fraction == 0.0 {
                return Err(err("writers.hot_fraction", "must be in (0, 1]".into()));
            }
            if !(0.0..=1.0).contains(&wr.thp_fraction) {
                return Err(err("writers.thp_fraction", "must be in [0, 1]".into()));
            }
            if !(0.0..=1.0).contains(&wr.uncharge_fraction) {
                return Err(err("writers.uncharge_fraction", "must be in [0, 1]".into()));
            }
            if wr.pages[0] == 0 || wr.pages[0] > wr.pages[1] {
                return Err(err(
                    "writers.pages",
                    "must be [min, max] with 1 <= min <= max".into(),
                ));
            }
            if wr.items == 0 || wr.items > 64 {
                return Err(err("writers.items", "must be in 1..=64".into()));
            }
            if wr.burst == 0 || wr.burst > 4096 {
                return Err(err("writers.burst", "must be in 1..=4096".into()));
            }
        }
        if let Some(r) = &self.readers {
            if !(r.period_ms.is_finite() && r.period_ms > 0.0) {
                return Err(err("readers.period_ms", "must be > 0".into()));
            }
            if r.count > 1_000_000 {
                return Err(err("readers.count", "must be <= 1000000".into()));
            }
        }
        if let Some(f) = &self.flusher {
            if f.period_ms == 0 {
                return Err(err("flusher.period_ms", "must be > 0".into()));
            }
        }
        if let Some(s) = &self.spikes {
            if !(s.every_ms.is_finite() && s.every_ms > 0.0) {
                return Err(err("spikes.every_ms", "must be > 0".into()));
            }
            if s.pages == 0 {
                return Err(err("spikes.pages", "must be > 0".into()));
            }
        }
        let need = |present: bool, field: &str| {
            if present {
                Ok(())
            } else {
                Err(err(
                    field,
                    format!("missing: workload `{}` needs a [{field}] table", self.name),
                ))
            }
        };
        match w {
            Workload::UpdatePath => {
                need(self.update.is_some(), "update")?;
                let u = self.update.as_ref().expect("checked");
                if u.depths.is_empty() || u.depths.iter().any(|&d| d == 0 || d > 64) {
                    return Err(err("update.depths", "depths must be in 1..=64".into()));
                }
                if u.items == 0 || u.items > 64 {
                    return Err(err("update.items", "must be in 1..=64".into()));
                }
            }
            Workload::StatReaders => {
                need(self.tree.is_some(), "tree")?;
                need(self.writers.is_some(), "writers")?;
                need(self.readers.is_some(), "readers")?;
            }
            Workload::StaleRead => {
                need(self.tree.is_some(), "tree")?;
                need(self.writers.is_some(), "writers")?;
                need(self.spikes.is_some(), "spikes")?;
            }
            Workload::FalseSharing => {
                if self.mode != Mode::Real {
                    return Err(err("mode", "false-sharing runs in real mode only".into()));
                }
            }
        }
        Ok(())
    }

    /// Logical CPUs (sim) or threads (real) this scenario uses.
    pub fn parallelism(&self) -> u32 {
        match self.mode {
            Mode::Sim => self.cpus.unwrap_or(1),
            Mode::Real | Mode::Kernel => self.threads.unwrap_or(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
kind = "stats"
name = "t"
workload = "stat-readers"
mode = "sim"
policies = ["linux-6.8"]
duration_ms = 100
cpus = 8

[tree]
fanout = [2, 3]

[writers]
rate_per_cpu = 1000.0

[readers]
count = 4
period_ms = 10.0
"#;

    #[test]
    fn good_file_parses() {
        let s = StatsScenario::parse("good.toml", GOOD).unwrap();
        assert_eq!(s.workload, Some(Workload::StatReaders));
        assert_eq!(s.cpus, Some(8));
        assert_eq!(s.writers.unwrap().burst, 16);
    }

    #[test]
    fn wrong_type_names_file_line_and_field() {
        let bad = GOOD.replace("period_ms = 10.0", "period_ms = \"fast\"");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!(e.file, "bad.toml");
        assert_eq!(e.field, "readers.period_ms");
        assert_eq!(e.line, Some(18));
        let msg = e.to_string();
        assert!(
            msg.starts_with("bad.toml:18: field `readers.period_ms`"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_field_is_reported_with_its_line() {
        let bad = GOOD.replace("rate_per_cpu = 1000.0", "rate_per_cpu = 1000.0\nrat = 3");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!(e.line, Some(15));
        assert!(e.message.contains("unknown field `rat`"), "{}", e.message);
        assert!(e.field.starts_with("writers"), "{}", e.field);
    }

    #[test]
    fn syntax_error_has_a_line() {
        let bad = GOOD.replace("cpus = 8", "cpus = = 8");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!(e.line, Some(8));
    }

    #[test]
    fn out_of_range_value_names_the_field() {
        let bad = GOOD.replace("cpus = 8", "cpus = 2048");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!(e.field, "cpus");
        assert_eq!(e.line, Some(8));
        assert!(e.message.contains("1..=1024"));
        let bad = GOOD.replace("period_ms = 10.0", "period_ms = 0.0");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("readers.period_ms", Some(18)));
    }

    #[test]
    fn missing_table_is_named() {
        let bad = GOOD.replace("[readers]\ncount = 4\nperiod_ms = 10.0\n", "");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!(e.field, "readers");
        assert!(e.message.contains("needs a [readers] table"));
    }

    #[test]
    fn unknown_workload_variant_is_reported() {
        let bad = GOOD.replace("workload = \"stat-readers\"", "workload = \"readers\"");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!(e.line, Some(4));
        assert_eq!(e.field, "workload");
    }

    #[test]
    fn too_many_groups_is_rejected() {
        let bad = GOOD.replace("fanout = [2, 3]", "fanout = [1000, 1000]");
        let e = StatsScenario::parse("bad.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("tree.fanout", Some(11)));
    }
}
