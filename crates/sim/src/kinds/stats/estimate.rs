//! The `stats` kind's pre-run estimate ([`estimate`]) and the probes of
//! its work classes.
//!
//! * **Simulated tree workloads** (`stat-readers`, `stale-read`,
//!   [`STATS_TREE`]): a writer burst, a read and a spike each
//!   touch the tree's (group, CPU) pairs in proportion to the square root
//!   of their number (flushes amortised over bursts, reads over the groups
//!   they visit), so each is weighed by that square root (a read a quarter
//!   of a burst, a spike fifty); the periodic flusher walks every pair; the
//!   rows the writers touch are allocated once each (see `engine_bytes`:
//!   hierstat allocates a (group, CPU) row on its first write). Fitted
//!   on the development host over CPUs 64–384, trees of 200–5,000 groups,
//!   writer rates 200–5,000 per CPU and second, 200–20,000 readers (every
//!   case within 1.6x of its CPU time). Beyond that range the weight stops
//!   growing (`MAX_PAIR_WEIGHT`).
//! * **Simulated `update-path`** ([`STATS_UPDATE`]): back-to-back
//!   updates, one unit each.
//! * **Priced workloads** (`will-it-scale`, `netperf`, also
//!   [`STATS_UPDATE`]): each operation's steps (its charge and
//!   stat updates), one unit each.
//! * **Real mode**: the measurement itself (every policy, run and depth
//!   for its duration) plus the setup of each.

use super::{StatsScenario, Workload};
use crate::cost::CostModel;
use lab::report::Mode;
use lab::{Estimate, Header, WorkClass};

const MIB: f64 = (1u64 << 20) as f64;

/// Units of a tree workload's writer burst (before the square-root
/// weight); a read weighs [`READ`], a spike [`SPIKE`].
const BURST: f64 = 1.0;
/// Units of a read, relative to a burst.
const READ: f64 = 0.25;
/// Units of a spike (a large update, the flushes it triggers, a read),
/// relative to a burst: measured at about 50 (`stale-read` with a fifth of
/// its spikes ran 14% faster).
const SPIKE: f64 = 50.0;
/// The largest square-root weight: that of the fitted range's largest tree
/// (2^21 pairs, about `stat-readers`' 5,011 groups on 384 CPUs). Past it
/// an event's cost measured flat, not growing: `stat-readers-full`'s
/// 51·10^6 pairs cost about 4 µs an event, `stat-readers`' 1.9·10^6 about
/// 6 µs (with slower policies), where the square root would have them
/// 5× apart (its estimate was 0.23× its time).
const MAX_PAIR_WEIGHT: f64 = 1448.0;
/// Units per (group, CPU) pair of a periodic flush.
const FLUSH_PAIR: f64 = 0.5;
/// Units per byte of per-CPU state a run initialises.
const PER_BYTE: f64 = 0.07;
/// Units of a tree workload run's fixed work (building the tree, the
/// report).
const TREE_RUN: f64 = 2e6;
/// Units of an `update-path` run's fixed work.
const UPDATE_RUN: f64 = 1e5;
/// Seconds of a real-mode run's setup (threads, tree), per policy, run
/// and depth.
const REAL_SETUP_S: f64 = 0.03;

/// The `stats` kind's tree workloads (`stat-readers`, `stale-read`) in
/// simulated mode: writer bursts, reads and spikes, each weighed by the
/// square root of the tree's (group, CPU) pairs it works on, plus the
/// per-CPU state the run initialises.
pub static STATS_TREE: WorkClass = WorkClass {
    name: "stats-tree",
    reference_rate: 1.2e8,
    probe: Some(PROBE_TREE),
    simulated: true,
};

/// The `stats` kind's `update-path` in simulated mode: back-to-back engine
/// updates.
pub static STATS_UPDATE: WorkClass = WorkClass {
    name: "stats-update",
    reference_rate: 9.0e7,
    probe: Some(PROBE_UPDATE),
    simulated: true,
};

/// The [`STATS_TREE`] probe: a small `stat-readers` (128 CPUs,
/// 409 groups, 0.1 s simulated; about 8·10^6 units).
pub const PROBE_TREE: &str = r#"
kind = "stats"
name = "probe-stats-tree"
workload = "stat-readers"
mode = "sim"
policies = ["linux-6.8"]
runs = 1
seed = 1
duration_ms = 100
cpus = 128

[tree]
fanout = [8, 50]

[writers]
rate_per_cpu = 5000.0
targets = "leaves"
pages = [1, 8]
uncharge_fraction = 0.3
items = 8
burst = 4

[readers]
count = 1000
period_ms = 10.0
targets = "all"
items = 8
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
/// threads of a real-mode run, the simulated events and their work units (see the
/// module documentation), and the seconds of real-mode measurement.
pub fn estimate(s: &StatsScenario, header: &Header, costs: &CostModel) -> Estimate {
    let repeats = header.policies.len().max(1) as f64 * f64::from(header.runs);
    let secs = s.duration_ms as f64 / 1e3;
    let (tree, writers, readers, spikes, flusher, update) = match &s.workload {
        Workload::UpdatePath(u) => (None, None, None, None, None, Some(u)),
        Workload::StatReaders(r) => (
            Some(&r.tree),
            Some(&r.writers),
            Some(&r.readers),
            None,
            r.flusher.as_ref(),
            None,
        ),
        Workload::StaleRead(x) => (
            Some(&x.tree),
            Some(&x.writers),
            x.readers.as_ref(),
            Some(&x.spikes),
            x.flusher.as_ref(),
            None,
        ),
        Workload::FalseSharing | Workload::WillItScale(_) | Workload::Netperf(_) => {
            (None, None, None, None, None, None)
        }
    };
    let groups = tree.map_or(8.0, |t| {
        let mut level = 1.0;
        let mut total = 1.0;
        for f in &t.fanout {
            level *= f64::from(*f);
            total += level;
        }
        total
    });
    let parallelism = s.parallelism(header.mode);
    let cpus = f64::from(parallelism);
    let items = 64.0;
    let reader_count = readers.map_or(0.0, |r| f64::from(r.count));
    let memory_bytes = engine_bytes(s, groups, cpus) + reader_count * items * 8.0 + MIB;
    let depths = update.map_or(1.0, |u| u.depths.len().max(1) as f64);
    let real = header.mode != Mode::Sim;
    let mut e = Estimate {
        memory_bytes,
        threads: 1,
        ..Estimate::default()
    };
    if real {
        let w = writers.and_then(|w| w.cpus).or(s.threads).unwrap_or(2);
        e.threads = u64::from(w.max(s.threads())) + 3;
        e.seconds = (secs + REAL_SETUP_S) * repeats * depths;
        return e;
    }
    if let Some(ops) = priced_steps(s, cpus, secs, costs) {
        e.events = ops * repeats;
        e.work = (ops + UPDATE_RUN) * repeats;
        e.class = Some(&STATS_UPDATE);
        return e;
    }
    if update.is_some() {
        let updates = cpus * back_to_back_rate(costs) * secs * depths;
        e.events = updates * repeats;
        e.work = (updates + UPDATE_RUN) * repeats;
        e.class = Some(&STATS_UPDATE);
        return e;
    }
    let Some(w) = writers else {
        return e;
    };
    let wcpus = f64::from(w.cpus.unwrap_or(parallelism));
    let rate = if w.rate_per_cpu > 0.0 {
        w.rate_per_cpu
    } else {
        back_to_back_rate(costs)
    };
    let bursts = wcpus * rate * secs / f64::from(w.burst.max(1));
    let reads = readers.map_or(0.0, |r| f64::from(r.count) * secs * 1e3 / r.period_ms);
    let spike_count = spikes.map_or(0.0, |sp| secs * 1e3 / sp.every_ms);
    let pairs = groups * cpus;
    let flushes = secs * 1e3 / flusher.map_or(2000.0, |f| f.period_ms.max(1) as f64);
    let per_run = (BURST * bursts + READ * reads + SPIKE * spike_count)
        * pairs.sqrt().min(MAX_PAIR_WEIGHT)
        + FLUSH_PAIR * flushes * pairs
        + PER_BYTE * memory_bytes
        + TREE_RUN;
    e.events = (bursts + reads + spike_count) * repeats;
    e.work = per_run * repeats;
    e.class = Some(&STATS_TREE);
    e
}

/// The engine's memory for a tree workload (its schema's items): per group, its aggregates and
/// deltas (4 words an item) and its row table (a dense part for the first
/// 64 CPUs, a directory of 16-CPU blocks above); per (group, CPU) row
/// written, its control words, cells and shared cells (the simulator
/// writes through the shared path) and, above CPU 64, its share of a table
/// block (an upper bound: a directory is counted for every group). Rows
/// exist only once a CPU writes the group, so the rows are at
/// most one per writer burst of the run (each burst writes one group on
/// one CPU), and at most one per pair. A workload without writers (the
/// update path) is counted as one row per pair.
fn engine_bytes(s: &StatsScenario, groups: f64, cpus: f64) -> f64 {
    let items = s.schema_items() as f64;
    let writers = match &s.workload {
        Workload::StatReaders(r) => Some(&r.writers),
        Workload::StaleRead(x) => Some(&x.writers),
        _ => None,
    };
    let pairs = groups * cpus;
    let rows = writers.map_or(pairs, |w| {
        let wcpus = w.cpus.map_or(cpus, f64::from).min(cpus);
        let bursts =
            wcpus * w.rate_per_cpu * (s.duration_ms as f64 / 1e3) / f64::from(w.burst.max(1));
        // Plus one a group: spikes, and slack.
        (bursts + groups).min(pairs)
    });
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

/// Priced workloads (`will-it-scale`, `netperf`): each CPU's operations
/// over the warm-up and the measured time, for every case, times the steps
/// an operation takes in the simulation (its charge and its stat updates;
/// a step costs about an update-path update, so they count in
/// [`STATS_UPDATE`] units). `None` for the other workloads.
fn priced_steps(s: &StatsScenario, cpus: f64, secs: f64, costs: &CostModel) -> Option<f64> {
    let (cases, warmup_ms, op_ns, steps) = match &s.workload {
        Workload::WillItScale(w) => (
            w.modes.len() as f64,
            w.warmup_ms,
            costs.kernel.fault_shared_ns.max(100.0),
            1.0 + costs.kernel.updates_per_fault_anon,
        ),
        Workload::Netperf(n) => (
            n.depths.len() as f64,
            n.warmup_ms,
            costs.kernel.send_ns.max(100.0),
            5.0,
        ),
        _ => return None,
    };
    Some(cases * cpus * (secs + warmup_ms / 1e3) * 1e9 / op_ns * steps)
}

/// Updates per second of one CPU updating back to back: one call and one
/// atomic each.
fn back_to_back_rate(costs: &CostModel) -> f64 {
    1e9 / (costs.call_ns + costs.atomic_ns).max(0.1)
}
