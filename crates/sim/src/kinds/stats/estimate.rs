//! The `stats` kind's pre-run estimate ([`estimate`]) and the probes of
//! its work classes, in nanoseconds of the development host. Each policy
//! of the scenario is estimated from its knobs (`Header::flush_policy`):
//!
//! * **Simulated tree workloads** (`stat-readers`, `stale-read`,
//!   [`STATS_TREE`]): what the simulator steps through whatever the policy
//!   (updates, the rows they allocate, reads and their items, events
//!   through the queue, the groups the engine builds), and the flush work
//!   the policy makes of it: flushes, shard passes, (group, CPU) visits
//!   and the waiters a saturated lock's queue holds
//!   ([`lab::estimate::flush`], from the knobs and the workload's rates;
//!   the lock priced by the cost model, as the simulator prices it). Each
//!   piece (`Term`) weighs its `WEIGHTS`, fitted to the CPU time of
//!   calibration runs (the `calibrate` test); in a model larger than the
//!   host's last-level cache the pieces that touch it cost their misses
//!   (`miss_share`).
//! * **Simulated `update-path`** ([`STATS_UPDATE`]): the updates the
//!   policy's virtual update time allows, each at its measured cost
//!   (`update_path`).
//! * **Priced workloads** (`will-it-scale`, `netperf`, also
//!   [`STATS_UPDATE`]): the operations, each with its charges, its updates,
//!   the levels they walk, the count lines they read or write and the page
//!   counter lines their charge path reads and walks (the policy's kernel
//!   path), at their measured costs (`Priced`).
//! * **Real mode**: the measurement itself (every policy, run and depth
//!   for its duration) plus the setup of each.

use super::{StatsScenario, Workload};
use crate::cost::CostModel;
use crate::workload::Targets;
use lab::estimate::flush::{flush_load, Level, TreeLoad};
use lab::reader::ReadMode;
use lab::report::Mode;
use lab::{Estimate, Header, WorkClass};

const MIB: f64 = (1u64 << 20) as f64;

/// Declares [`Term`] and, for the calibration, its variants in order
/// (`Term::ALL`).
macro_rules! terms {
    ($($(#[$doc:meta])* $v:ident,)*) => {
        /// The pieces of a simulated tree run's work, each counted by the
        /// model ([`TreeWork::terms`]) and weighed by `WEIGHTS`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Term {
            $($(#[$doc])* $v,)*
        }

        #[cfg(test)]
        impl Term {
            /// Every term, in the order of [`WEIGHTS`].
            const ALL: [Term; TERMS] = [$(Term::$v,)*];
        }
    };
}

terms! {
    /// A run: building the tree and the schema, the report.
    Run,
    /// A byte of per-group state and reader snapshots allocated.
    Byte,
    /// A group the engine creates (its row table, its place in the
    /// tree) and tears down.
    EngineGroup,
    /// An update: the simulator's draws, the exact oracle, the engine's
    /// add.
    Update,
    /// ... the share of those that miss the caches.
    UpdateMiss,
    /// A per-ancestor update's walk, per level above the updated group.
    Level,
    /// ... the share of those that miss the caches.
    LevelMiss,
    /// A pre-rstat update's eager atomic per ancestor.
    EagerLevel,
    /// A (group, CPU) row's first write: its allocation and pages.
    Row,
    /// ... the share of those that miss the caches.
    RowMiss,
    /// A read: its request, the oracle's snapshot, the bound.
    Read,
    /// An item read through the engine.
    ReadItem,
    /// ... the share of those that miss the caches.
    ReadItemMiss,
    /// An item read from the pre-rstat baseline's eager sums.
    BaselineItem,
    /// An event's trip through the event queue, per level of its heap.
    EventLevel,
    /// ... the share of those that miss the caches.
    EventMiss,
    /// A flush: its request, gate and hand-over.
    Flush,
    /// A shard pass of a flush (drain, lock, extract).
    Pass,
    /// ... the share of those that miss the caches.
    PassMiss,
    /// A (group, CPU) visit of a flush: the claim it undoes, the row it
    /// folds.
    Visit,
    /// ... per item of the schema.
    VisitSlot,
    /// ... the share of those that miss the caches.
    VisitMiss,
    /// A waiter a saturated serialized lock looks at on a release.
    QueueScan,
    /// ... the share of those that miss the caches (a long queue).
    QueueScanMiss,
}

/// Number of [`Term`]s.
const TERMS: usize = Term::QueueScanMiss as usize + 1;

/// Nanoseconds of the development host (release build) per [`Term`],
/// fitted by least squares (relative error, weights non-negative) to the
/// CPU time of the calibration runs: 16 trees of 32–1,024 CPUs,
/// 45–20,000 groups, 100–1,000,000 readers and 20–700 simulated ms, none
/// of them a built-in scenario, each under eight policies at both ends of
/// the knobs (127 runs, each within 0.68–2.2x of its fitted time, 80% of
/// them within 0.82–1.38x). `cargo test --release -p sim --lib calibrate --
/// --ignored --nocapture` runs them (about 15 minutes) and prints this
/// table. A weight the fit sets to zero is a piece the others account
/// for on these runs.
const WEIGHTS: [f64; TERMS] = [
    68900.0, // Run
    0.122,   // Byte
    2490.0,  // EngineGroup
    133.0,   // Update
    881.0,   // UpdateMiss
    27.0,    // Level
    174.0,   // LevelMiss
    0.0,     // EagerLevel
    62.5,    // Row
    410.0,   // RowMiss
    0.0,     // Read
    15.0,    // ReadItem
    11.7,    // ReadItemMiss
    14.3,    // BaselineItem
    1.44,    // EventLevel
    2.54,    // EventMiss
    0.0,     // Flush
    18.6,    // Pass
    7.49,    // PassMiss
    62.5,    // Visit
    6.41,    // VisitSlot
    631.0,   // VisitMiss
    3.18,    // QueueScan
    0.0,     // QueueScanMiss
];

/// The model size at which half the accesses miss the caches (see
/// [`miss_share`]): the development host's last-level cache.
const CACHE_BYTES: f64 = 32.0 * MIB;
/// Bytes of an event in the event queue's heap.
const EVENT_BYTES: f64 = 32.0;
/// Bytes of a waiter in a flush lock's queue.
const WAITER_BYTES: f64 = 24.0;
/// Nanoseconds of an `update-path` or priced run's fixed work.
const UPDATE_RUN: f64 = 1e6;
// The simulated update path's and the priced workloads' costs, in
// nanoseconds of the development host, measured on `update-path-sim`,
// `page-fault1` and `netperf` under each policy (CPU time over the
// updates or operations the runs report).
/// A simulated update-path update (the engine's shared path, the
/// simulator's event): 32 ns under the folded and global schemes.
const UPDATE_PATH_NS: f64 = 32.0;
/// A shared line the simulator prices (pre-rstat's eager atomics: 80 ns an
/// update over 3–5 lines).
const LINE_NS: f64 = 12.0;
/// A priced operation's own work (its event, its base and the parts it
/// adds up), besides its charges...
const PRICED_OP_NS: f64 = 52.0;
/// ...and per charge or uncharge through the per-CPU stock (pre-rstat: 75
/// ns a fault with one charge, 144 ns a send with four).
const PRICED_CHARGE_NS: f64 = 23.0;
/// A priced stat update through the threshold counts (one level).
const PRICED_UPDATE_NS: f64 = 9.0;
/// Each further level a priced update walks (`per-ancestor`).
const PRICED_LEVEL_NS: f64 = 2.0;
/// A shared line a priced operation reads or writes: an access of the
/// simulator's line table (`crate::priced::lines`), a count line's or a
/// page counter's alike (`linux-6.17`'s early break reads one count line
/// an update: 430 ns a fault of six updates, against 180 ns without it;
/// on will-it-scale and netperf runs that are not built-in scenarios, the
/// `charge_lines` of the 5.13-era charge path put `pre-rstat` and
/// `linux-5.13` within 0.9–1.1x of `linux-6.8`'s measured / estimated).
const PRICED_LINE_NS: f64 = 55.0;
/// Seconds of a real-mode run's setup (threads, tree), per policy, run
/// and depth.
const REAL_SETUP_S: f64 = 0.03;

/// The `stats` kind's tree workloads (`stat-readers`, `stale-read`) in
/// simulated mode: updates, rows allocated, reads, and the flushes the
/// policy makes of them (see the module documentation), in nanoseconds
/// of the development host.
pub static STATS_TREE: WorkClass = WorkClass::simulated("stats-tree", 1e9, PROBE_TREE);

/// The `stats` kind's `update-path` in simulated mode and its priced
/// workloads: engine updates and priced operations, in nanoseconds of the
/// development host.
pub static STATS_UPDATE: WorkClass = WorkClass::simulated("stats-update", 1e9, PROBE_UPDATE);

/// The [`STATS_TREE`] probe: a short `stat-readers` of the built-in's
/// shape (384 CPUs, 4,011 groups, a hot fifth of the leaves written,
/// 20,000 readers; 40 ms simulated), where the tree workloads' costs are
/// their cache misses as in the built-in scenarios.
pub const PROBE_TREE: &str = r#"
kind = "stats"
name = "probe-stats-tree"
workload = "stat-readers"
mode = "sim"
policies = ["linux-6.8"]
runs = 1
seed = 1
duration_ms = 40
cpus = 384

[tree]
fanout = [10, 400]

[writers]
rate_per_cpu = 2000.0
targets = "leaves"
hot_fraction = 0.2
pages = [1, 8]
thp_fraction = 0.02
uncharge_fraction = 0.3
items = 8
burst = 4

[readers]
count = 20000
period_ms = 100.0
targets = "all"
items = 16
"#;

/// The [`STATS_UPDATE`] probe: `update-path` on 22 CPUs for a
/// simulated millisecond at two depths (about 4·10^6 updates).
pub const PROBE_UPDATE: &str = r#"
kind = "stats"
name = "probe-stats-update"
workload = "update-path"
mode = "sim"
policies = ["linux-6.8"]
runs = 1
seed = 1
duration_ms = 1
cpus = 22

[update]
depths = [2, 4]
pages = 1
items = 4
"#;

/// Memory of the engine's rows written and per-group state (see
/// `engine_bytes`), the exact oracle and one snapshot per reader, the
/// threads of a real-mode run, the simulated events and their work units
/// (see the module documentation), and the seconds of real-mode
/// measurement.
pub fn estimate(s: &StatsScenario, header: &Header, costs: &CostModel) -> Estimate {
    let repeats = header.policies.len().max(1) as f64 * f64::from(header.runs);
    let secs = s.duration_ms as f64 / 1e3;
    let update = match &s.workload {
        Workload::UpdatePath(u) => Some(u),
        _ => None,
    };
    let cpus = f64::from(s.parallelism(header.mode));
    let tree = TreeWork::of(s, cpus, costs);
    let groups = tree.as_ref().map_or(8.0, |t| t.groups);
    let items = 64.0;
    let memory_bytes = engine_bytes(s, groups, cpus, tree.as_ref().map(|t| t.rows))
        + tree.as_ref().map_or(0.0, |t| t.readers) * items * 8.0
        + MIB;
    let depths = update.map_or(1.0, |u| u.depths.len().max(1) as f64);
    let mut e = Estimate {
        memory_bytes,
        threads: 1,
        ..Estimate::default()
    };
    if header.mode != Mode::Sim {
        let w = match &s.workload {
            Workload::StatReaders(r) => r.writers.cpus,
            Workload::StaleRead(x) => x.writers.cpus,
            _ => None,
        }
        .or(s.threads)
        .unwrap_or(2);
        e.threads = u64::from(w.max(s.threads())) + 3;
        e.seconds = (secs + REAL_SETUP_S) * repeats * depths;
        return e;
    }
    let runs = f64::from(header.runs);
    // The knobs each policy runs (`None`: the pre-rstat baseline). A
    // parsed scenario's names are all known; one that is not is counted as
    // the engine's default policy.
    let knobs = |name: &String| {
        header
            .flush_policy(name)
            .map_or(Some(hierstat::Preset::Hierstat.policy()), |f| f.knobs())
    };
    if let Some(p) = Priced::of(s, cpus, secs, costs) {
        for name in &header.policies {
            // (The kernel path its charges and updates take: the
            // engine's default policy's for an unknown name.)
            let path = header
                .flush_policy(name)
                .map_or(lab::kernel::preset_path(hierstat::Preset::Hierstat), |f| {
                    f.path
                });
            let (ops, ns) = p.run(knobs(name).as_ref(), &path);
            e.events += ops * runs;
            e.work += (ns + UPDATE_RUN) * runs;
        }
        e.class = Some(&STATS_UPDATE);
        return e;
    }
    if let Some(u) = update {
        for name in &header.policies {
            let (updates, ns) = update_path(u, knobs(name).as_ref(), cpus, secs, costs);
            e.events += updates * runs;
            e.work += (ns + UPDATE_RUN) * runs;
        }
        e.class = Some(&STATS_UPDATE);
        return e;
    }
    let Some(t) = tree else {
        return e;
    };
    // Per-group state and reader snapshots (the rows are counted apart).
    let other = memory_bytes - engine_bytes(s, groups, cpus, Some(t.rows))
        + engine_bytes(s, groups, cpus, Some(0.0));
    for name in &header.policies {
        let read = header
            .flush_policy(name)
            .ok()
            .and_then(|f| f.reader)
            .unwrap_or(t.read);
        let (events, terms) = t.terms(knobs(name).as_ref(), read, memory_bytes, other);
        e.events += events * runs;
        e.work += terms.iter().zip(WEIGHTS).map(|(n, w)| n * w).sum::<f64>() * runs;
    }
    e.class = Some(&STATS_TREE);
    e
}

/// A tree workload (`stat-readers`, `stale-read`) in simulated mode: its
/// tree and rates as the flush model sees them, and what a run steps
/// through whatever the policy.
#[derive(Debug, Clone)]
struct TreeWork {
    load: TreeLoad,
    groups: f64,
    /// Levels below the root.
    depth: f64,
    updates: f64,
    /// Updates per writer burst (one event each).
    burst: f64,
    /// (group, CPU) rows the writers allocate (their first writes).
    rows: f64,
    reads: f64,
    read_items: f64,
    readers: f64,
    /// How the scenario's readers read (a policy's `read_tolerance`
    /// replaces it).
    read: ReadMode,
    spikes: f64,
    /// The schema's items: a visit folds each.
    slots: f64,
    /// Kernel counters an engine counter stands for in a flush's price.
    counters_per_item: f64,
    costs: CostModel,
}

impl TreeWork {
    fn of(s: &StatsScenario, cpus: f64, costs: &CostModel) -> Option<TreeWork> {
        let (tree, writers, readers, spikes, flusher) = match &s.workload {
            Workload::StatReaders(r) => (
                &r.tree,
                &r.writers,
                Some(&r.readers),
                None,
                r.flusher.as_ref(),
            ),
            Workload::StaleRead(x) => (
                &x.tree,
                &x.writers,
                x.readers.as_ref(),
                Some(&x.spikes),
                x.flusher.as_ref(),
            ),
            _ => return None,
        };
        let secs = s.duration_ms as f64 / 1e3;
        // Groups per level, level 0 the root.
        let mut per_level = vec![1.0];
        for f in &tree.fanout {
            per_level.push(per_level.last().copied().unwrap_or(1.0) * f64::from(*f));
        }
        let depth = per_level.len() - 1;
        let groups: f64 = per_level.iter().sum();
        // Groups of each level that `targets` picks from.
        let at = |targets: Targets| -> Vec<f64> {
            per_level
                .iter()
                .enumerate()
                .map(|(l, n)| {
                    let picked = match targets {
                        Targets::Root => l == 0,
                        Targets::Slices => l == 1,
                        Targets::Leaves => l == depth,
                        Targets::All => l > 0 || depth == 0,
                    };
                    if picked {
                        *n
                    } else {
                        0.0
                    }
                })
                .collect()
        };
        let wt = at(writers.targets);
        let targets: f64 = wt.iter().sum::<f64>().max(1.0);
        // The writers' hot set: a sample of their targets.
        let hot = (targets * writers.hot_fraction).ceil().clamp(1.0, targets);
        let q = hot / targets;
        let wcpus = writers.cpus.map_or(cpus, f64::from).min(cpus).max(1.0);
        let rate = if writers.rate_per_cpu > 0.0 {
            writers.rate_per_cpu
        } else {
            back_to_back_rate(costs)
        };
        let per_second = wcpus * rate;
        let rt = readers.map(|r| at(r.targets));
        let read_rate = readers.map_or(0.0, |r| f64::from(r.count) * 1e3 / r.period_ms);
        let read_targets: f64 = rt.as_ref().map_or(0.0, |v| v.iter().sum::<f64>()).max(1.0);
        let spike_rate = spikes.map_or(0.0, |sp| 1e3 / sp.every_ms);
        let thp = writers.thp_fraction.clamp(0.0, 1.0);
        let mut sizes = vec![(thp, 512.0)];
        sizes.extend(uniform_pages(writers.pages, 1.0 - thp));
        let mut levels = Vec::with_capacity(per_level.len());
        for (l, n) in per_level.iter().enumerate() {
            // Targets in one group's subtree, and the chance that one of
            // them is hot.
            let below: f64 = wt[l..].iter().map(|t| t / n).sum();
            let active = 1.0 - (1.0 - q).powf(below);
            let hot_below = q * below;
            levels.push(Level {
                groups: *n,
                active: n * active,
                updates: if active > 0.0 {
                    per_second * hot_below / hot / active
                } else {
                    0.0
                },
                writers: wcpus,
                pairs: hot_below / active.max(1e-12) * wcpus,
                reads: rt.as_ref().map_or(0.0, |v| {
                    if v[l] > 0.0 {
                        read_rate / read_targets
                    } else {
                        0.0
                    }
                }),
                // A spike reads the leaf it hit, then its parent.
                over_reads: if depth > 0 && l + 1 >= depth {
                    spike_rate / n
                } else {
                    0.0
                },
                over_pages: spikes.map_or(0.0, |sp| sp.pages as f64),
                hot: 0.0,
                sizes: sizes.clone(),
            });
        }
        let pairs = hot * wcpus;
        let updates = per_second * secs;
        let items = s.schema_items() as f64;
        Some(TreeWork {
            load: TreeLoad {
                levels,
                shards: cpus,
                seconds: secs,
                periodic_s: flusher.map(|f| f.period_ms as f64 / 1e3),
                async_delay_s: 0.0,
                waiters: readers.map_or(0.0, |r| f64::from(r.count)),
            },
            groups,
            depth: depth as f64,
            updates,
            burst: f64::from(writers.burst.max(1)),
            rows: pairs * (1.0 - (-updates / pairs).exp()),
            reads: read_rate * secs,
            read_items: readers
                .and_then(|r| r.items)
                .map_or(items, f64::from)
                .min(items),
            readers: readers.map_or(0.0, |r| f64::from(r.count)),
            read: readers.map_or(ReadMode::Guarded, |r| r.tolerance),
            spikes: spike_rate * secs,
            slots: items,
            counters_per_item: (f64::from(costs.kernel.stat_items) / items.max(1.0))
                .floor()
                .max(1.0),
            costs: costs.clone(),
        })
    }

    /// The pieces of one run under `knobs` (`None`: the pre-rstat
    /// baseline, which never flushes) with readers reading as `read`
    /// says, with `memory_bytes` of model of which `other_bytes` are not
    /// rows: its events and its [`Term`]s.
    ///
    /// A `clean` read never flushes. A `forced` read flushes its subtree
    /// whatever the counts say, and so, in this estimate, does a tolerance
    /// read: a forced flush is its ceiling, and on `tolerance-slices` it
    /// comes close to it (at 1%, 1.19e6 visits counted against a forced
    /// read's 1.42e6; at 0.1%, 1.47e6), because a slice's leaves hold most
    /// of its error and are flushed whole.
    fn terms(
        &self,
        knobs: Option<&hierstat::Policy>,
        read: ReadMode,
        memory_bytes: f64,
        other_bytes: f64,
    ) -> (f64, [f64; TERMS]) {
        let mut t = [0.0; TERMS];
        t[Term::Run as usize] = 1.0;
        t[Term::Byte as usize] = other_bytes;
        t[Term::Update as usize] = self.updates;
        let queue = self.load.levels.first().map_or(1.0, |l| l.writers) + self.readers;
        let heap_levels = (queue + 1.0).log2();
        let heap_miss = miss_share(queue * EVENT_BYTES);
        // Events through the queue: a burst each, a read's wake and
        // completion, a spike's update and reads, a flush's release.
        let mut events = self.updates / self.burst + 2.0 * self.reads + 3.0 * self.spikes;
        let steps = self.updates / self.burst + self.reads + self.spikes;
        let Some(p) = knobs else {
            // Eager atomics up every ancestor; a read loads its values
            // into its reader's snapshot, which misses the caches as an
            // engine read's does once the eager sums and the snapshots
            // outgrow them (the baseline allocates no rows).
            t[Term::EagerLevel as usize] = self.updates * self.depth;
            let reads = self.reads + 2.0 * self.spikes;
            let baseline_bytes = (self.groups + self.readers) * self.slots * 8.0;
            t[Term::Read as usize] = reads;
            t[Term::BaselineItem as usize] = reads * self.read_items;
            t[Term::ReadItemMiss as usize] = reads * self.read_items * miss_share(baseline_bytes);
            t[Term::EventLevel as usize] = events * heap_levels;
            t[Term::EventMiss as usize] = events * heap_levels * heap_miss;
            return (steps, t);
        };
        t[Term::EngineGroup as usize] = self.groups;
        let miss = miss_share(memory_bytes);
        let c = &self.costs;
        // A flush's hold of the lock, as the simulator prices it.
        let price = |passes: f64, visits: f64| -> f64 {
            (passes * (c.shard_scanned_ns + c.lock_ns)
                + visits
                    * (c.group_visited_ns
                        + self.slots * self.counters_per_item * c.counter_aggregated_ns))
                * 1e-9
        };
        let f = match read {
            ReadMode::Guarded => flush_load(p, &self.load, &price),
            ReadMode::Clean => {
                let mut load = self.load.clone();
                for l in &mut load.levels {
                    l.reads = 0.0;
                }
                flush_load(p, &load, &price)
            }
            // Every read finds its group "over": as under no threshold
            // (for the flushes only; the update path keeps `p`'s).
            ReadMode::Forced | ReadMode::Within { .. } => {
                let mut every_read = *p;
                every_read.threshold = hierstat::ThresholdRule::None;
                flush_load(&every_read, &self.load, &price)
            }
        };
        let levels = if p.scheme == hierstat::ThresholdScheme::PerAncestor
            && p.threshold == hierstat::ThresholdRule::PerGroup
        {
            self.depth
        } else {
            0.0
        };
        t[Term::UpdateMiss as usize] = self.updates * miss;
        t[Term::Level as usize] = self.updates * levels;
        t[Term::LevelMiss as usize] = self.updates * levels * miss;
        t[Term::Row as usize] = self.rows;
        t[Term::RowMiss as usize] = self.rows * miss;
        let reads = (self.reads - f.reads_lost).max(0.0) + 2.0 * self.spikes;
        t[Term::Read as usize] = reads;
        t[Term::ReadItem as usize] = reads * self.read_items;
        t[Term::ReadItemMiss as usize] = reads * self.read_items * miss;
        events = self.updates / self.burst + 2.0 * reads + f.flushes;
        t[Term::EventLevel as usize] = events * heap_levels;
        t[Term::EventMiss as usize] = events * heap_levels * heap_miss;
        t[Term::Flush as usize] = f.flushes;
        t[Term::Pass as usize] = f.passes;
        t[Term::PassMiss as usize] = f.passes * miss;
        t[Term::Visit as usize] = f.visits;
        t[Term::VisitSlot as usize] = f.visits * self.slots;
        t[Term::VisitMiss as usize] = f.visits * miss;
        t[Term::QueueScan as usize] = f.queue_scans;
        let steps = steps + f.flushes;
        if f.flushes > 0.0 {
            let queue = f.queue_scans / f.flushes;
            t[Term::QueueScanMiss as usize] = f.queue_scans * miss_share(queue * WAITER_BYTES);
        }
        (steps, t)
    }
}

/// Eight sizes spread over `[lo, hi]` pages, of total probability
/// `share`: the update sizes of a writer's `pages` range.
pub(crate) fn uniform_pages(pages: [u64; 2], share: f64) -> Vec<(f64, f64)> {
    let (lo, hi) = (pages[0] as f64, pages[1].max(pages[0]) as f64);
    (0..8)
        .map(|i| (share / 8.0, lo + (hi - lo) * f64::from(i) / 7.0))
        .collect()
}

/// The share of the engine's accesses that miss the caches in a model of
/// `bytes`: few below a few MiB, most above tens (the shape of the
/// measured costs per row and per visit against the tree's size).
pub(crate) fn miss_share(bytes: f64) -> f64 {
    let x = (bytes / CACHE_BYTES).powi(2);
    x / (1.0 + x)
}

/// The engine's memory for a tree workload (its schema's items): per
/// group, its aggregates and deltas (4 words an item) and its row table
/// (a dense part for the first 64 CPUs, a directory of 16-CPU blocks
/// above); per (group, CPU) row written (`rows`: the distinct pairs the
/// writers update, plus one a group for spikes and slack), its control
/// words, cells and shared cells (the simulator writes through the shared
/// path) and, above CPU 64, its share of a table block (an upper bound: a
/// directory is counted for every group). A workload without writers
/// (the update path) is counted as one row per pair.
fn engine_bytes(s: &StatsScenario, groups: f64, cpus: f64, rows: Option<f64>) -> f64 {
    let items = s.schema_items() as f64;
    let pairs = groups * cpus;
    let rows = rows.map_or(pairs, |r| (r + groups).min(pairs));
    let near = cpus.min(64.0);
    let far_blocks = ((cpus - 64.0).max(0.0) / 16.0).ceil();
    let far_share = if cpus > 64.0 {
        (cpus - 64.0) / cpus
    } else {
        0.0
    };
    let per_group = items * 8.0 * 4.0 + near * 9.0 + far_blocks * 24.0;
    let per_row = 8.0 * (2.0 + 2.0 * items) + far_share * 144.0;
    groups * per_group + rows * per_row
}

/// Simulated `update-path` under `knobs` (`None`: pre-rstat) on `cpus`
/// CPUs updating back to back for `secs` at each depth: the updates the
/// simulation makes and their nanoseconds. An update's virtual time is
/// its call and atomics (two on the engine's shared path, one more per
/// ancestor with the per-ancestor scheme); pre-rstat's eager atomics go to
/// each ancestor's line, which every CPU writes: each waits for about half
/// the other CPUs' transfers (measured: 1.4 µs an update at depth 2 on
/// 22 CPUs). Each update costs [`UPDATE_PATH_NS`] of simulation, plus
/// [`LINE_NS`] per shared line it prices.
fn update_path(
    u: &crate::workload::UpdateSpec,
    knobs: Option<&hierstat::Policy>,
    cpus: f64,
    secs: f64,
    costs: &CostModel,
) -> (f64, f64) {
    let (mut updates, mut ns) = (0.0, 0.0);
    for &depth in &u.depths {
        let levels = f64::from(depth) + 1.0;
        let (virtual_ns, lines) = match knobs {
            None => (
                costs.call_ns
                    + levels * (cpus + 1.0) / 2.0 * costs.line_transfer_ns.max(costs.atomic_ns),
                levels,
            ),
            Some(p) => {
                // (An early break stops the walk at the updated group,
                // over its threshold from the first moments.)
                let walk = if p.threshold == hierstat::ThresholdRule::PerGroup
                    && p.scheme == hierstat::ThresholdScheme::PerAncestor
                    && p.early_break == hierstat::EarlyBreak::Off
                {
                    f64::from(depth)
                } else {
                    0.0
                };
                (costs.call_ns + (2.0 + walk) * costs.atomic_ns, 0.0)
            }
        };
        let n = cpus * secs * 1e9 / virtual_ns.max(0.1);
        updates += n;
        ns += n * (UPDATE_PATH_NS + LINE_NS * lines);
    }
    (updates, ns)
}

/// A priced workload (`will-it-scale`, `netperf`): its tasks' operations
/// (each a fault or a send priced whole, with its charges and stat
/// updates), per case, over the warm-up and the measured time.
#[derive(Debug, Clone)]
struct Priced {
    /// Cases × tasks × seconds: operations at one per `op_ns`.
    task_seconds: f64,
    tasks: f64,
    /// The tree's shards (its threshold's size).
    shards: f64,
    /// The operation's virtual time outside the statistics.
    op_ns: f64,
    charges: f64,
    updates: f64,
    depth: f64,
    seconds: f64,
    transfer_ns: f64,
    /// Pages each charge and uncharge moves (a fault's page, a send's
    /// socket pages); 0 for an operation that charges nothing.
    charge_pages: f64,
    /// Page-counter walks per operation besides the stock's (a fault's
    /// munmap: one per region).
    unmap_walks: f64,
    /// Levels below the root whose page counters carry protection.
    protected_levels: f64,
}

impl Priced {
    fn of(s: &StatsScenario, cpus: f64, secs: f64, costs: &CostModel) -> Option<Priced> {
        use crate::priced::Op;
        let k = &costs.kernel;
        let (cases, warmup_ms, tasks, op, depth) = match &s.workload {
            Workload::WillItScale(w) => (
                w.modes.len() as f64,
                w.warmup_ms,
                cpus,
                super::will_it_scale::op(w.test),
                f64::from(w.depth),
            ),
            // Every depth is a case (counted at their mean depth).
            Workload::Netperf(n) => (
                n.depths.len() as f64,
                n.warmup_ms,
                f64::from(n.clients),
                Op::Send,
                n.depths.iter().map(|d| f64::from(*d)).sum::<f64>() / n.depths.len().max(1) as f64,
            ),
            _ => return None,
        };
        let (charges, updates) = match op {
            // A send charges and uncharges the client's and the server's
            // socket buffers, each with a stat update.
            Op::Send => (4.0, 4.0),
            op => (1.0, op.updates(k)),
        };
        let (charge_pages, unmap_walks, protected_levels) = match &s.workload {
            Workload::WillItScale(w) => (
                op.charged_pages() as f64,
                // (As the run sizes its regions.)
                4096.0 / (w.region_mib.max(1) << 20) as f64,
                0.0,
            ),
            // A root group's sockets are not charged.
            Workload::Netperf(n) if depth > 0.0 => (
                k.sock_pages_per_send.round().max(1.0),
                0.0,
                f64::from(n.protected_levels),
            ),
            _ => (0.0, 0.0, 0.0),
        };
        let seconds = secs + warmup_ms / 1e3;
        Some(Priced {
            task_seconds: cases * tasks * seconds,
            tasks,
            shards: cpus,
            op_ns: op.base_ns(k, &s.priced_machine()).max(100.0),
            charges,
            updates,
            depth,
            seconds,
            transfer_ns: costs.line_transfer_ns,
            charge_pages,
            unmap_walks,
            protected_levels,
        })
    }

    /// The shared lines (`crate::priced::lines`) an operation reads or
    /// writes on its charge path under `charge`, besides the threshold
    /// counts, each an access of the simulator's line table like a count
    /// line's ([`PRICED_LINE_NS`]). With the page counter's `usage` on
    /// the line of the read-mostly limits (before 6.1: the era presets
    /// 5.13 and 5.15, and pre-rstat, which runs 5.13's path), every
    /// charge and every stat update first reads that line of the updated
    /// group, and the walks write it: a fault reads it at its charge and
    /// at each of its updates, a send at its two charges and its four
    /// updates (an operation that charges nothing never writes it, and
    /// its reads find no line). Every `stock` pages a charge refills the
    /// per-CPU stock with a walk of every level's counter (its atomic,
    /// the protected levels' two more) and a read of each level's usage
    /// against its limit; a send's uncharges drain the server's stock as
    /// often; a fault's munmap walks once per region.
    fn charge_lines(&self, charge: &lab::kernel::ChargePath) -> f64 {
        use lab::kernel::{CounterLayout, Protection};
        if self.charge_pages <= 0.0 {
            return 0.0;
        }
        let levels = self.depth + 1.0;
        let protection = match charge.protection {
            Protection::EveryCharge => 2.0 * self.protected_levels.min(self.depth),
            Protection::OnChange => 0.0,
        };
        let walk = levels + protection;
        // Charges a task makes per operation: a fault one, a send two
        // (and two uncharges).
        let charges = (self.charges / 2.0).max(1.0);
        let refills = charges * self.charge_pages / f64::from(charge.stock_pages.max(1));
        let drains = if self.charges > 1.0 { refills } else { 0.0 };
        let neighbours = match charge.counter_layout {
            CounterLayout::SharedLine => charges + self.updates,
            CounterLayout::OwnLine => 0.0,
        };
        neighbours + refills * (walk + levels) + (drains + self.unmap_walks) * walk
    }

    /// One run under `knobs` (`None`: pre-rstat, which keeps no
    /// threshold counts): the operations and their nanoseconds.
    ///
    /// Per update, after the first moments the threshold counts are over
    /// `T` (no flush runs within a priced run) and updates stop folding:
    /// what remains is the walk (`per-ancestor`: every level; an early
    /// break: one read of the updated group's count line, where it
    /// breaks) and, once per `batch` pages, the fold's reads of the count
    /// lines. While a count is under `T` its folds write the count lines
    /// that every task writes: a fold walks its levels' lines one after
    /// another, and each waits for the other tasks' folds there (measured:
    /// 22 µs an operation on 384 CPUs under a threshold no run reaches,
    /// 2.5 µs over it). A global count folded without its guard (5.15)
    /// is written so all run long (5.4 µs a fault on 384 CPUs, 1.8 µs
    /// of it the fault's own work: a fold every 32 pages of every task,
    /// each a 50 ns transfer).
    fn run(&self, knobs: Option<&hierstat::Policy>, path: &lab::kernel::KernelPath) -> (f64, f64) {
        let per_op_base = PRICED_OP_NS
            + PRICED_CHARGE_NS * self.charges
            + PRICED_LINE_NS * self.charge_lines(&path.charge);
        let Some(p) = knobs else {
            // No counts: the updates are the operation's own work.
            let ops = self.task_seconds * 1e9 / self.op_ns;
            return (ops, ops * per_op_base);
        };
        use hierstat::{EarlyBreak, ThresholdRule, ThresholdScheme};
        let batch = f64::from(p.batch.max(1));
        let levels = self.depth + 1.0;
        let early_break = p.early_break != EarlyBreak::Off;
        // A global count's fold without the guard (5.15's path,
        // `Fold::Always`) writes the count line every `batch` pages
        // whatever the count, and reads nothing first.
        let always = p.threshold == ThresholdRule::Global
            && path.update.global_fold == lab::kernel::Fold::Always;
        // (levels walked, count lines read, count lines written while
        // under T, count lines written whatever T) per update of one page.
        let (walk, reads, folds, written) = match (p.threshold, p.scheme) {
            (ThresholdRule::None, _) => (0.0, 0.0, 0.0, 0.0),
            (ThresholdRule::Global, _) if always => (1.0, 0.0, 0.0, 1.0 / batch),
            (ThresholdRule::Global, _) => (1.0, 1.0 / batch, 1.0 / batch, 0.0),
            (_, ThresholdScheme::PerAncestor) if early_break => (0.0, 1.0, levels / batch, 0.0),
            (_, ThresholdScheme::PerAncestor) => (levels, levels / batch, levels / batch, 0.0),
            _ => (1.0, levels / batch, levels / batch, 0.0),
        };
        let threshold = p.threshold_pages(self.shards as usize) as f64;
        // Pages a second into the updated group's count, all tasks.
        let pages = self.tasks * self.updates * 1e9 / self.op_ns;
        let under = if pages > 0.0 {
            (threshold / pages / self.seconds).min(1.0)
        } else {
            0.0
        };
        let writes = under * folds + written;
        let op_ns = self.op_ns + writes * self.updates * self.tasks * self.transfer_ns;
        let ops = self.task_seconds * 1e9 / op_ns;
        let per_update =
            PRICED_UPDATE_NS + PRICED_LEVEL_NS * walk + PRICED_LINE_NS * (reads + writes);
        (ops, ops * (per_op_base + self.updates * per_update))
    }
}

/// Updates per second of one CPU updating back to back: one call and one
/// atomic each.
fn back_to_back_rate(costs: &CostModel) -> f64 {
    1e9 / (costs.call_ns + costs.atomic_ns).max(0.1)
}

#[cfg(test)]
mod calibrate {
    //! The fit behind [`WEIGHTS`](super::WEIGHTS): calibration runs of
    //! tree workloads (none of them a built-in scenario), each run and
    //! counted ([`TreeWork::terms`](super::TreeWork::terms)), and the
    //! weights that put the terms' sum nearest the runs' CPU time
    //! (least squares of the relative error, weights non-negative).

    use super::{engine_bytes, Term, TreeWork, TERMS, WEIGHTS};
    use crate::cost::CostModel;
    use crate::kinds::stats::StatsScenario;
    use lab::estimate::spin;
    use lab::{Context, Overrides, RunOptions};
    use simcore::clock::CpuTimer;
    use std::time::Duration;

    /// `(cpus, fanout, writer rate per CPU, hot fraction, readers, period
    /// ms, items read, duration ms)`.
    pub(super) type Shape = (u32, &'static str, f64, f64, u32, f64, u32, u64);

    const SHAPES: &[Shape] = &[
        (32, "[4, 10]", 5000.0, 1.0, 500, 5.0, 4, 300),
        (64, "[8, 25]", 5000.0, 1.0, 2000, 10.0, 8, 200),
        (64, "[8, 25]", 200.0, 1.0, 200_000, 100.0, 8, 50),
        (64, "[8, 25]", 200.0, 1.0, 1_000_000, 100.0, 8, 30),
        (384, "[10, 400]", 2000.0, 0.2, 500_000, 100.0, 16, 30),
        (64, "[10, 50]", 1.0, 1.0, 500, 10.0, 4, 200),
        (128, "[8, 50]", 5000.0, 1.0, 1000, 10.0, 8, 100),
        (256, "[16, 100]", 2000.0, 0.5, 5000, 50.0, 16, 200),
        (384, "[10, 400]", 2000.0, 0.2, 20000, 100.0, 16, 200),
        (384, "[10, 400]", 2000.0, 0.2, 100_000, 100.0, 16, 60),
        (1024, "[20, 200]", 1000.0, 0.25, 20000, 100.0, 16, 80),
        // The probe's shape, a long run of a tree like the built-in's, and
        // a larger one.
        (384, "[10, 400]", 2000.0, 0.2, 20000, 100.0, 16, 40),
        (384, "[10, 450]", 2000.0, 0.2, 20000, 100.0, 16, 700),
        (1024, "[40, 500]", 1000.0, 0.25, 100_000, 100.0, 16, 150),
        // Trees whose building and state outweigh their events.
        (384, "[20, 200]", 50.0, 1.0, 100, 100.0, 16, 50),
        (1024, "[50, 200]", 10.0, 1.0, 100, 100.0, 16, 20),
    ];

    const POLICIES: &[&str] = &[
        "pre-rstat",
        "huge-threshold",
        "linux-6.8",
        "hierstat",
        "linux-5.15",
        "no-threshold",
        "root-every-page",
        "linux-5.13",
    ];

    pub(super) fn text(s: &Shape) -> String {
        let (cpus, fanout, rate, hot, readers, period, items, ms) = *s;
        format!(
            r#"
kind = "stats"
name = "calibration"
workload = "stat-readers"
mode = "sim"
policies = ["hierstat"]
runs = 1
seed = 2
duration_ms = {ms}
cpus = {cpus}

[tree]
fanout = {fanout}

[writers]
rate_per_cpu = {rate}
targets = "leaves"
hot_fraction = {hot}
pages = [1, 8]
thp_fraction = 0.02
uncharge_fraction = 0.3
items = 8
burst = 4

[readers]
count = {readers}
period_ms = {period}
targets = "all"
items = {items}

[[policy]]
name = "huge-threshold"
base = "hierstat"
fixed_pages = 1073741824

[[policy]]
name = "no-threshold"
base = "hierstat"
threshold = "none"

[[policy]]
name = "root-every-page"
base = "hierstat"
fixed_pages = 1
scope = "root"
"#
        )
    }

    /// Least squares of the relative error with non-negative weights
    /// (coordinate descent on the normal equations of scaled columns).
    fn fit(rows: &[([f64; TERMS], f64)]) -> [f64; TERMS] {
        let a: Vec<[f64; TERMS]> = rows
            .iter()
            .map(|(x, y)| {
                let mut r = [0.0; TERMS];
                for j in 0..TERMS {
                    r[j] = x[j] / y;
                }
                r
            })
            .collect();
        let mut scale = [0.0f64; TERMS];
        for r in &a {
            for j in 0..TERMS {
                scale[j] += r[j] * r[j];
            }
        }
        let scale: Vec<f64> = scale.iter().map(|s| s.sqrt()).collect();
        let mut g = [[0.0; TERMS]; TERMS];
        let mut h = [0.0; TERMS];
        for r in &a {
            for i in 0..TERMS {
                if scale[i] == 0.0 {
                    continue;
                }
                h[i] += r[i] / scale[i];
                for j in 0..TERMS {
                    if scale[j] > 0.0 {
                        g[i][j] += r[i] / scale[i] * r[j] / scale[j];
                    }
                }
            }
        }
        // Start from the current weights (in scaled units).
        let mut w: Vec<f64> = (0..TERMS).map(|j| WEIGHTS[j] * scale[j]).collect();
        for _ in 0..20_000 {
            for j in 0..TERMS {
                if scale[j] == 0.0 || g[j][j] == 0.0 {
                    continue;
                }
                let gw: f64 = (0..TERMS).map(|k| g[j][k] * w[k]).sum();
                w[j] = (w[j] + (h[j] - gw) / g[j][j]).max(0.0);
            }
        }
        let mut out = WEIGHTS;
        for j in 0..TERMS {
            if scale[j] > 0.0 {
                out[j] = w[j] / scale[j];
            }
        }
        out
    }

    #[test]
    #[ignore = "runs the calibration shapes (minutes); prints the fitted WEIGHTS"]
    fn calibrate() {
        let ctx = Context::default();
        let costs = CostModel::of(&ctx).into_owned();
        let (_, speed) = spin(Duration::from_millis(300));
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        for shape in SHAPES {
            let sc = crate::catalog().parse("calibration", &text(shape)).unwrap();
            for p in POLICIES {
                let mut s = sc.clone();
                s.apply(&Overrides {
                    policies: vec![p.to_string()],
                    ..Overrides::default()
                });
                let spec = s.spec_as::<StatsScenario>().unwrap();
                let cpus = f64::from(spec.cpus.unwrap_or(1));
                let t = TreeWork::of(spec, cpus, &costs).unwrap();
                let est = s.estimate(&ctx);
                let other = est.memory_bytes - engine_bytes(spec, t.groups, cpus, Some(t.rows))
                    + engine_bytes(spec, t.groups, cpus, Some(0.0));
                let knobs = s.header().flush_policy(p).unwrap().knobs();
                let (_, terms) = t.terms(knobs.as_ref(), t.read, est.memory_bytes, other);
                // Skip runs the model puts past a minute (5.13 on the large
                // trees).
                let guess: f64 = terms.iter().zip(WEIGHTS).map(|(n, w)| n * w).sum();
                if guess > 60e9 {
                    continue;
                }
                let mut best = f64::INFINITY;
                let mut counted = String::new();
                for _ in 0..2 {
                    let (_, before) = spin(Duration::from_millis(20));
                    let timer = CpuTimer::start();
                    let report = s.run(&RunOptions::default(), &mut |_| {}).unwrap();
                    let ns = timer.elapsed_ns();
                    let (_, after) = spin(Duration::from_millis(20));
                    best = best.min(ns * (before + after) / 2.0 / speed);
                    let m = |k: &str| report.mean_of(p, k).unwrap_or(f64::NAN);
                    counted = format!(
                        "flushes {:.3e} (model {:.3e}), visits {:.3e} (model {:.3e}), reads {:.3e}, lock wait {:.2e} s",
                        m("flushes"),
                        terms[Term::Flush as usize],
                        m("flushes") * m("flush_groups_visited"),
                        terms[Term::Visit as usize],
                        m("reads"),
                        m("lock_wait_ns") / 1e9,
                    );
                }
                eprintln!(
                    "{shape:?} {p}: {:.3} s, model {:.3} s; {counted}",
                    best / 1e9,
                    guess / 1e9
                );
                rows.push((terms, best));
                labels.push(format!("{shape:?} {p}"));
            }
        }
        let w = fit(&rows);
        println!("const WEIGHTS: [f64; TERMS] = [");
        for (j, v) in w.iter().enumerate() {
            println!("    {v:.3e}, // {:?}", Term::ALL[j]);
        }
        println!("];");
        for ((x, y), l) in rows.iter().zip(&labels) {
            let m: f64 = x.iter().zip(w).map(|(n, w)| n * w).sum();
            println!("{l}: measured / fitted {:.2}", y / m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Term, TreeWork};
    use crate::cost::CostModel;
    use crate::kinds::stats::StatsScenario;
    use lab::{Context, Overrides, RunOptions};

    /// The flush model ([`lab::estimate::flush`]) against the flushes and
    /// visits the simulator counts, on a small tree under policies at both
    /// ends of the knobs: every read flushing (serialized or in parallel),
    /// a global threshold, per-group ones, a one-page threshold with root
    /// flushes, a threshold no run reaches.
    #[test]
    fn the_flush_model_counts_what_the_simulator_counts() {
        let text = super::calibrate::text(&(32, "[4, 10]", 5000.0, 1.0, 500, 5.0, 4, 100));
        let sc = crate::catalog().parse("small", &text).unwrap();
        let costs = CostModel::of(&Context::default()).into_owned();
        let mut off = Vec::new();
        for p in [
            "linux-5.13",
            "no-threshold",
            "linux-5.15",
            "linux-6.8",
            "hierstat",
            "root-every-page",
            "huge-threshold",
        ] {
            let mut s = sc.clone();
            s.apply(&Overrides {
                policies: vec![p.to_string()],
                ..Overrides::default()
            });
            let spec = s.spec_as::<StatsScenario>().unwrap();
            let t = TreeWork::of(spec, 32.0, &costs).unwrap();
            let knobs = s.header().flush_policy(p).unwrap().knobs();
            let (_, terms) = t.terms(knobs.as_ref(), t.read, 1e6, 0.0);
            let report = s.run(&RunOptions::default(), &mut |_| {}).unwrap();
            let flushes = report.mean_of(p, "flushes").unwrap();
            let visits = flushes * report.mean_of(p, "flush_groups_visited").unwrap();
            for (what, counted, model) in [
                ("flushes", flushes, terms[Term::Flush as usize]),
                ("visits", visits, terms[Term::Visit as usize]),
            ] {
                // Within 3x, or both next to nothing.
                let ok = if counted < 10.0 {
                    model < 30.0
                } else {
                    (counted / 3.0..=counted * 3.0).contains(&model)
                };
                if !ok {
                    off.push(format!(
                        "{p}: {what} counted {counted:.0}, model {model:.0}"
                    ));
                }
            }
        }
        assert!(off.is_empty(), "{}", off.join("\n"));
    }

    /// The readers' read mode in the flush model, against the simulator's
    /// counts on `tolerance-slices` (shortened): a clean read never
    /// flushes, a forced read flushes every time, and a tolerance read is
    /// priced at its ceiling, a forced read's (its counted visits at most
    /// that, and more than a third of it).
    #[test]
    fn the_flush_model_prices_the_read_mode() {
        let costs = CostModel::of(&Context::default()).into_owned();
        let mut sc = crate::catalog()
            .builtin("tolerance-slices")
            .unwrap()
            .unwrap();
        sc.apply(&Overrides {
            runs: Some(1),
            duration_ms: Some(100),
            ..Overrides::default()
        });
        let mut model_visits = Vec::new();
        for p in ["read=clean", "read=forced", "read=1%", "hierstat"] {
            let mut s = sc.clone();
            s.apply(&Overrides {
                policies: vec![p.to_string()],
                ..Overrides::default()
            });
            let spec = s.spec_as::<StatsScenario>().unwrap();
            let t = TreeWork::of(spec, f64::from(spec.cpus.unwrap()), &costs).unwrap();
            let choice = s.header().flush_policy(p).unwrap();
            let read = choice.reader.unwrap_or(t.read);
            let (_, terms) = t.terms(choice.knobs().as_ref(), read, 1e6, 0.0);
            let report = s.run(&RunOptions::default(), &mut |_| {}).unwrap();
            let flushes = report.mean_of(p, "flushes").unwrap();
            let visits = flushes * report.mean_of(p, "flush_groups_visited").unwrap();
            let (model_f, model_v) = (terms[Term::Flush as usize], terms[Term::Visit as usize]);
            match p {
                "read=clean" => {
                    assert!(flushes == 0.0 && model_f == 0.0, "{p}: {flushes} {model_f}")
                }
                "read=forced" => {
                    let reads = report.mean_of(p, "reads").unwrap();
                    assert!(
                        flushes >= 0.99 * reads,
                        "{p}: {flushes} flushes, {reads} reads"
                    );
                    assert!(
                        (reads / 3.0..=reads * 3.0).contains(&model_f),
                        "{p}: {model_f}"
                    );
                }
                _ => {}
            }
            if flushes > 0.0 {
                assert!(
                    (visits / 3.0..=visits * 3.0).contains(&model_v),
                    "{p}: visits counted {visits:.0}, model {model_v:.0}"
                );
            }
            model_visits.push(model_v);
        }
        // A tolerance read at a forced read's ceiling; a guarded one below.
        assert_eq!(model_visits[2], model_visits[1]);
        assert!(model_visits[3] < model_visits[1]);
    }
}
