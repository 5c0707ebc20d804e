//! The tables that describe a stats workload, shared by the runners and
//! the `stats` scenario kind: the group tree, the writers, the
//! `memory.stat` readers, the background flusher, the spikes and the
//! update-path depths (each a TOML table of a scenario file).

use lab::reader::ReadMode;
use serde::{Deserialize, Serialize};

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
    /// Pages every leaf holds in each of the `items` written items when
    /// the run starts (sim mode; flushed before the measured run): groups
    /// of a realistic size, which a relative read tolerance is taken of.
    #[serde(default, skip_serializing_if = "is_zero_pages")]
    pub initial_pages: u64,
}

/// A `[writers]` table with no keys: every writer CPU back to back on the
/// leaves, 1-page updates over 4 items, no THP, no uncharges, bursts of 16
/// (the serde defaults above).
impl Default for WritersSpec {
    fn default() -> Self {
        WritersSpec {
            cpus: None,
            rate_per_cpu: 0.0,
            targets: default_leaves(),
            hot_fraction: default_one(),
            pages: default_pages(),
            thp_fraction: 0.0,
            items: default_items(),
            uncharge_fraction: 0.0,
            burst: default_burst(),
            initial_pages: 0,
        }
    }
}

fn is_zero_pages(v: &u64) -> bool {
    *v == 0
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
    /// How each read reads ([`ReadMode`]: `guarded`, the policy's own
    /// read flush, by default; `forced`, `clean`, or a tolerance such as
    /// `"1%"`, `"64"` pages or `"1%+64"`). A policy's `read_tolerance`
    /// knob overrides it.
    #[serde(default, skip_serializing_if = "ReadMode::is_guarded")]
    pub tolerance: ReadMode,
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

/// A will-it-scale page-fault test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultTest {
    /// `page_fault1`: private anonymous memory.
    PageFault1,
    /// `page_fault2`: a private file mapping (copy on write).
    PageFault2,
    /// `page_fault3`: a shared file mapping.
    PageFault3,
}

impl FaultTest {
    /// The test's name as will-it-scale prints it.
    pub fn name(self) -> &'static str {
        match self {
            FaultTest::PageFault1 => "page_fault1",
            FaultTest::PageFault2 => "page_fault2",
            FaultTest::PageFault3 => "page_fault3",
        }
    }
}

/// How will-it-scale runs its copies of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskMode {
    /// One process per CPU (`per_process_ops`).
    Process,
    /// One thread per CPU in one process (`per_thread_ops`).
    Thread,
}

impl TaskMode {
    /// The mode's name in will-it-scale's metric (`process`, `thread`).
    pub fn name(self) -> &'static str {
        match self {
            TaskMode::Process => "process",
            TaskMode::Thread => "thread",
        }
    }
}

/// The will-it-scale workload: one task per CPU faulting in a region of
/// its own, all in one group `depth` levels deep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WillItScaleSpec {
    /// The test.
    pub test: FaultTest,
    /// Process and/or thread mode.
    #[serde(default = "both_modes")]
    pub modes: Vec<TaskMode>,
    /// Depth of the tasks' group (root = 0).
    pub depth: u32,
    /// Size of each task's region, MiB (will-it-scale: 128).
    #[serde(default = "default_region_mib")]
    pub region_mib: u64,
    /// Virtual time run before measuring, ms.
    #[serde(default = "default_warmup_ms")]
    pub warmup_ms: f64,
}

/// The netperf workload: `clients` `TCP_SENDFILE` clients of 10 KiB sends
/// over loopback, each with its server, on two CPUs of their own, all in
/// one group; one case per depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetperfSpec {
    /// Client–server pairs.
    pub clients: u32,
    /// Depths of the group (root = 0), one case each.
    pub depths: Vec<u32>,
    /// Virtual time run before measuring, ms.
    #[serde(default = "default_warmup_ms")]
    pub warmup_ms: f64,
    /// Levels below the root with `memory.min` and `memory.low` set (the
    /// top ones; 0: none, as in source 000's runs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub protected_levels: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn both_modes() -> Vec<TaskMode> {
    vec![TaskMode::Process, TaskMode::Thread]
}
fn default_region_mib() -> u64 {
    128
}
fn default_warmup_ms() -> f64 {
    1.0
}

#[cfg(test)]
mod tests {
    use super::WritersSpec;

    #[test]
    fn default_writers_are_an_empty_table() {
        let empty: WritersSpec = toml::from_str("").unwrap();
        assert_eq!(empty, WritersSpec::default());
    }
}
