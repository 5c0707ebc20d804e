//! The cost model: virtual duration of an engine call from its work counters.
//!
//! Every engine call in simulated mode runs for real and reports the work it
//! did ([`Work`]); its virtual duration is `Σ count × per-unit cost`. Costs
//! are kept as integer picoseconds so that the sum is exact and the same on
//! every platform; the duration in ns is the sum rounded up.
//!
//! Contended shared cache lines are not a per-call constant: the simulator
//! models each shared line as a resource (see `runner::sim`), and charges
//! [`CostModel::line_transfer_ns`] when a line moves between CPUs.
//!
//! The `[kernel]` table ([`KernelCosts`]) prices what the kernel does around
//! the statistics: the rest of a page fault or a send, one level of a
//! page-counter charge, a stat update and one level of its threshold walk,
//! the `memory.stat` syscall and the formatting of each of its lines, and
//! how many stat updates a fault makes. `mmlab calibrate` measures them on
//! the host (kernel mode) and writes the file's `host` line, the machine
//! the figures came from; see [`crate::priced`] for how they are used.

use hierstat::sim::WorkCounters;
use lab::ranges::Range;
use lab::source::Source;
use lab::ScenarioError;
use serde::{Deserialize, Serialize};

/// The cost file's ranges: every cost in ns. An engine call costs at least
/// 0.1 ns, so virtual time always advances (a zero-cost call would let a
/// back-to-back writer loop forever at one instant).
pub const RANGES: &[Range] = &[
    Range::real("call_ns", 0.1, 1e6),
    Range::real("kernel.updates_per_fault_anon", 0.0, 1e3),
    Range::real("kernel.updates_per_fault_cow", 0.0, 1e3),
    Range::real("kernel.updates_per_fault_shared", 0.0, 1e3),
    Range::real("kernel.sock_pages_per_send", 0.0, 1e3),
    Range::int("kernel.stat_items", 1, 10_000),
    Range::real("kernel.*", 0.0, 1e7),
    Range::real("*", 0.0, 1e6),
];

/// The default costs shipped with the crate (TOML).
pub const DEFAULT_COSTS_TOML: &str = include_str!("cost_defaults.toml");

/// Work done by one engine call, as counted by the engine (and the
/// baselines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Engine API calls (each pays a fixed entry cost).
    pub calls: u64,
    /// Atomic read-modify-writes on lines owned by the caller's shard.
    pub atomics: u64,
    /// Per-shard structures scanned by a flush.
    pub shards_scanned: u64,
    /// Groups visited by a flush (or an eager propagation).
    pub groups_visited: u64,
    /// Counters aggregated (delta/prev/pending steps).
    pub counters_aggregated: u64,
    /// Lock acquisitions.
    pub locks: u64,
    /// Items read from aggregated counters.
    pub items_read: u64,
}

impl Work {
    /// The work the engine counted in `wc`, as `calls` engine calls: the
    /// one conversion from [`hierstat::sim::WorkCounters`] (update-list pops are
    /// priced as atomics; lock waits are not work, the simulator prices
    /// them as time spent waiting).
    pub fn from_engine(wc: &WorkCounters, calls: u64) -> Work {
        Work {
            calls,
            atomics: wc.atomics + wc.list_pops,
            shards_scanned: wc.shards_scanned,
            groups_visited: wc.groups_visited,
            counters_aggregated: wc.counters_aggregated,
            locks: wc.lock_acquisitions,
            items_read: 0,
        }
    }

    /// Adds every counter of `other` into `self`.
    pub fn merge(&mut self, other: &Work) {
        self.calls += other.calls;
        self.atomics += other.atomics;
        self.shards_scanned += other.shards_scanned;
        self.groups_visited += other.groups_visited;
        self.counters_aggregated += other.counters_aggregated;
        self.locks += other.locks;
        self.items_read += other.items_read;
    }
}

/// The engine counts into a [`Work`] directly (the simulator's hot path:
/// no [`WorkCounters`] to convert), exactly as [`Work::from_engine`]
/// converts them: update-list pops are priced as atomics, lock waits and
/// heavy barriers are not work. The caller counts the call itself.
impl hierstat::sim::WorkSink for Work {
    #[inline]
    fn count(&mut self, work: hierstat::sim::Work, n: u64) {
        use hierstat::sim::Work as Engine;
        match work {
            Engine::Atomic | Engine::ListPop => self.atomics += n,
            Engine::ShardScanned => self.shards_scanned += n,
            Engine::GroupVisited => self.groups_visited += n,
            Engine::CounterAggregated => self.counters_aggregated += n,
            Engine::LockAcquired => self.locks += n,
            // `LockWaited`, `Barrier`, and any kind `from_engine` does not
            // convert.
            _ => {}
        }
    }
}

/// Per-unit costs in nanoseconds (fractions allowed), as stored in TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
    /// The machine the costs were measured on (CPU, kernel, cgroup
    /// version, date), as `mmlab calibrate` wrote it; empty when unknown.
    #[serde(default)]
    pub host: String,
    /// Fixed cost of entering an engine call.
    pub call_ns: f64,
    /// One uncontended atomic RMW.
    pub atomic_ns: f64,
    /// One per-shard structure scanned by a flush.
    pub shard_scanned_ns: f64,
    /// One group visited.
    pub group_visited_ns: f64,
    /// One counter aggregated.
    pub counter_aggregated_ns: f64,
    /// One uncontended lock acquisition and release.
    pub lock_ns: f64,
    /// One item read.
    pub item_read_ns: f64,
    /// Moving a contended cache line from one CPU to another.
    pub line_transfer_ns: f64,
    /// What the kernel does around the statistics (the `[kernel]` table;
    /// the shipped values when a file has none).
    #[serde(default = "KernelCosts::shipped")]
    pub kernel: KernelCosts,
}

/// The kernel's work around the statistics, for the priced workloads
/// ([`crate::priced`]): the `[kernel]` table of a cost file. Costs in ns;
/// counts per operation are averages (fractions allowed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelCosts {
    /// An anonymous write fault (will-it-scale `page_fault1`) less its
    /// memcg charge and stat updates: the trap, page allocation and
    /// zeroing, page tables, LRU insertion, and its share of the `munmap`.
    pub fault_anon_ns: f64,
    /// A write fault on a private file mapping (`page_fault2`: a page
    /// allocated and copied) less its memcg charge and stat updates.
    pub fault_cow_ns: f64,
    /// A write fault on a shared file mapping (`page_fault3`: the page is
    /// in the page cache, nothing allocated) less its stat updates.
    pub fault_shared_ns: f64,
    /// One 10 KiB `TCP_SENDFILE` send over loopback, its receive included,
    /// less its memcg socket charges and their stat updates.
    pub send_ns: f64,
    /// One level of a page-counter charge or uncharge, uncontended (an
    /// atomic RMW on the level's counter, the limit and watermark checks).
    pub charge_level_ns: f64,
    /// A stat update's own per-CPU adds (the memcg's and the lruvec's
    /// counters), without its threshold walk.
    pub stat_update_ns: f64,
    /// One level of the threshold walk (`memcg_rstat_updated`): the
    /// dependent loads of the level and its per-CPU add.
    pub rstat_level_ns: f64,
    /// `open` + `read` + `close` of a cgroup file, nothing formatted.
    pub read_syscall_ns: f64,
    /// Formatting one line of `memory.stat` (its counter read and print).
    pub read_item_ns: f64,
    /// One visit of a kernel flush: the memcg flush callback of one group
    /// on one CPU (every counter aggregated, the CPU's per-CPU lines read
    /// from the flusher's), from a flushing read minus a plain one.
    pub flush_visit_ns: f64,
    /// Stat updates an anonymous fault makes, its unmap included
    /// (counted with the memcg tracepoints).
    pub updates_per_fault_anon: f64,
    /// Stat updates a private-file (copy-on-write) fault makes.
    pub updates_per_fault_cow: f64,
    /// Stat updates a shared-file write fault makes.
    pub updates_per_fault_shared: f64,
    /// Pages of socket memory one 10 KiB send charges (and uncharges) on
    /// each side (its skb's true size, in pages).
    pub sock_pages_per_send: f64,
    /// Lines of `memory.stat` a read formats.
    pub stat_items: u32,
}

impl KernelCosts {
    /// The `[kernel]` table of [`DEFAULT_COSTS_TOML`].
    pub fn shipped() -> KernelCosts {
        CostModel::defaults().kernel
    }
}

fn to_ps(ns: f64) -> u64 {
    (ns * 1000.0).round().max(0.0) as u64
}

impl CostModel {
    /// The costs the front end handed the run (`mmlab --costs`), or the
    /// shipped defaults.
    pub fn of(ctx: &lab::Context) -> std::borrow::Cow<'_, CostModel> {
        match ctx.get::<CostModel>() {
            Some(c) => std::borrow::Cow::Borrowed(c),
            None => std::borrow::Cow::Owned(CostModel::defaults()),
        }
    }

    /// The costs shipped in [`DEFAULT_COSTS_TOML`].
    pub fn defaults() -> Self {
        static SHIPPED: std::sync::OnceLock<CostModel> = std::sync::OnceLock::new();
        SHIPPED
            .get_or_init(|| {
                let src = Source::new("<costs>", DEFAULT_COSTS_TOML);
                lab::ranges::check(&src, &[RANGES])
                    .and_then(|()| src.deserialize::<ShippedCosts>())
                    .map(CostModel::from)
                    .expect("shipped cost defaults parse")
            })
            .clone()
    }

    /// Parses the text of a cost file (errors name it `<costs>`).
    ///
    /// # Errors
    /// As [`CostModel::parse`].
    pub fn from_toml(text: &str) -> Result<Self, ScenarioError> {
        Self::parse("<costs>", text)
    }

    /// Parses a cost file; `file` names it in errors. Every field has the
    /// range in [`RANGES`] (in particular `call_ns >= 0.1`, so virtual
    /// time always advances).
    ///
    /// # Errors
    /// A [`ScenarioError`] with the file, line and field of the first
    /// problem (syntax, unknown key, missing key, range).
    pub fn parse(file: &str, text: &str) -> Result<Self, ScenarioError> {
        let src = Source::new(file, text);
        lab::ranges::check(&src, &[RANGES])?;
        src.deserialize()
    }

    /// Serializes to TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("cost model serializes")
    }

    /// Picoseconds of `work` (exact integer sum).
    pub fn cost_ps(&self, w: &Work) -> u64 {
        self.table().cost_ps(w)
    }

    /// Virtual duration of `work` in ns (rounded up).
    pub fn cost_ns(&self, w: &Work) -> u64 {
        self.cost_ps(w).div_ceil(1000)
    }

    /// The costs as integer picoseconds, for the simulator's inner loops.
    pub fn table(&self) -> CostTable {
        CostTable {
            call: to_ps(self.call_ns),
            atomic: to_ps(self.atomic_ns),
            shard_scanned: to_ps(self.shard_scanned_ns),
            group_visited: to_ps(self.group_visited_ns),
            counter_aggregated: to_ps(self.counter_aggregated_ns),
            lock: to_ps(self.lock_ns),
            item_read: to_ps(self.item_read_ns),
        }
    }

    /// One cache-line transfer in ns (rounded up, at least 1).
    pub fn line_transfer(&self) -> u64 {
        to_ps(self.line_transfer_ns).div_ceil(1000).max(1)
    }
}

/// [`CostModel`] converted once to integer picoseconds per unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostTable {
    call: u64,
    atomic: u64,
    shard_scanned: u64,
    group_visited: u64,
    counter_aggregated: u64,
    lock: u64,
    item_read: u64,
}

/// Prices engine work as the engine counts it: picoseconds under a
/// [`CostTable`], each count priced as [`Work::from_engine`] converts it,
/// so that an update's `ps` is `cost_ps` of the `Work` it would have
/// counted (the same integer sum, term by term). The simulated runner's
/// updates, which need only their cost ([`crate::backend::StatsBackend::add_priced`]).
#[derive(Debug)]
pub struct PricedWork<'a> {
    /// Picoseconds so far.
    pub ps: u64,
    costs: &'a CostTable,
}

impl<'a> PricedWork<'a> {
    /// `calls` engine calls' entry cost under `costs`, nothing else yet.
    #[inline]
    pub fn calls(costs: &'a CostTable, calls: u64) -> Self {
        PricedWork {
            ps: calls * costs.call,
            costs,
        }
    }
}

impl hierstat::sim::WorkSink for PricedWork<'_> {
    #[inline]
    fn count(&mut self, work: hierstat::sim::Work, n: u64) {
        use hierstat::sim::Work as Engine;
        let unit = match work {
            Engine::Atomic | Engine::ListPop => self.costs.atomic,
            Engine::ShardScanned => self.costs.shard_scanned,
            Engine::GroupVisited => self.costs.group_visited,
            Engine::CounterAggregated => self.costs.counter_aggregated,
            Engine::LockAcquired => self.costs.lock,
            // As `Work`'s sink: not work.
            _ => 0,
        };
        self.ps += n * unit;
    }
}

impl CostTable {
    /// Picoseconds of `work` (exact integer sum).
    #[inline]
    pub fn cost_ps(&self, w: &Work) -> u64 {
        w.calls * self.call
            + w.atomics * self.atomic
            + w.shards_scanned * self.shard_scanned
            + w.groups_visited * self.group_visited
            + w.counters_aggregated * self.counter_aggregated
            + w.locks * self.lock
            + w.items_read * self.item_read
    }

    /// Virtual duration of `work` in ns (rounded up).
    #[inline]
    pub fn cost_ns(&self, w: &Work) -> u64 {
        self.cost_ps(w).div_ceil(1000)
    }
}

/// The shipped file, whose `[kernel]` table is required (a file a user
/// writes may leave it out and get the shipped one).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShippedCosts {
    host: String,
    call_ns: f64,
    atomic_ns: f64,
    shard_scanned_ns: f64,
    group_visited_ns: f64,
    counter_aggregated_ns: f64,
    lock_ns: f64,
    item_read_ns: f64,
    line_transfer_ns: f64,
    kernel: KernelCosts,
}

impl From<ShippedCosts> for CostModel {
    fn from(s: ShippedCosts) -> Self {
        CostModel {
            host: s.host,
            call_ns: s.call_ns,
            atomic_ns: s.atomic_ns,
            shard_scanned_ns: s.shard_scanned_ns,
            group_visited_ns: s.group_visited_ns,
            counter_aggregated_ns: s.counter_aggregated_ns,
            lock_ns: s.lock_ns,
            item_read_ns: s.item_read_ns,
            line_transfer_ns: s.line_transfer_ns,
            kernel: s.kernel,
        }
    }
}

impl Default for CostModel {
    fn default() -> Self {
        Self::defaults()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of engine work.
    const ENGINE_WORK: [hierstat::sim::Work; 8] = {
        use hierstat::sim::Work as Engine;
        [
            Engine::ShardScanned,
            Engine::GroupVisited,
            Engine::CounterAggregated,
            Engine::Atomic,
            Engine::ListPop,
            Engine::LockAcquired,
            Engine::LockWaited,
            Engine::Barrier,
        ]
    };

    /// Counting into a `Work` directly is `from_engine` of the engine's
    /// counters: every kind of engine work, one call.
    #[test]
    fn work_counted_directly_is_work_from_engine() {
        use hierstat::sim::WorkSink;
        let kinds = ENGINE_WORK;
        let (mut wc, mut direct) = (WorkCounters::default(), Work::default());
        for (i, k) in kinds.into_iter().enumerate() {
            let n = 1 << (3 * i);
            wc.count(k, n);
            direct.count(k, n);
        }
        direct.calls += 1;
        assert_eq!(direct, Work::from_engine(&wc, 1));
    }

    /// Pricing the engine's counts as they come is `cost_ps` of the `Work`
    /// they convert to: every kind of engine work, with costs that tell
    /// the kinds apart.
    #[test]
    fn work_priced_as_counted_is_cost_ps_of_the_work() {
        use hierstat::sim::WorkSink;
        let mut m = CostModel::defaults();
        m.call_ns = 1.001;
        m.atomic_ns = 2.02;
        m.shard_scanned_ns = 3.3;
        m.group_visited_ns = 4.0004;
        m.counter_aggregated_ns = 5.5;
        m.lock_ns = 6.66;
        m.item_read_ns = 7.7;
        let table = m.table();
        let kinds = ENGINE_WORK;
        let (mut work, mut priced) = (Work::default(), PricedWork::calls(&table, 3));
        work.calls = 3;
        for (i, k) in kinds.into_iter().enumerate() {
            let n = 1 + 7 * i as u64;
            work.count(k, n);
            priced.count(k, n);
        }
        assert_eq!(priced.ps, table.cost_ps(&work));
        assert_eq!(priced.ps.div_ceil(1000), table.cost_ns(&work));
    }

    #[test]
    fn defaults_parse_and_round_trip() {
        let m = CostModel::defaults();
        let back = CostModel::from_toml(&m.to_toml()).unwrap();
        assert_eq!(m, back);
    }

    #[test]
    fn cost_is_the_dot_product() {
        let m = CostModel::from_toml(
            "call_ns = 1.5\natomic_ns = 2\nshard_scanned_ns = 3\ngroup_visited_ns = 4\n\
             counter_aggregated_ns = 0.5\nlock_ns = 10\nitem_read_ns = 1\nline_transfer_ns = 40\n",
        )
        .unwrap();
        let w = Work {
            calls: 2,
            atomics: 3,
            shards_scanned: 4,
            groups_visited: 5,
            counters_aggregated: 3,
            locks: 1,
            items_read: 7,
        };
        // 3 + 6 + 12 + 20 + 1.5 + 10 + 7 = 59.5 -> 60
        assert_eq!(m.cost_ps(&w), 59_500);
        assert_eq!(m.cost_ns(&w), 60);
    }

    #[test]
    fn every_default_cost_has_a_range() {
        let t: toml::Table = DEFAULT_COSTS_TOML.parse().unwrap();
        for k in t.keys() {
            assert!(lab::ranges::find(&[RANGES], k).is_some(), "{k}");
        }
        assert_eq!(lab::ranges::find(&[RANGES], "call_ns").unwrap().min, 0.1);
    }

    #[test]
    fn bad_costs_are_rejected() {
        let mut m = CostModel::defaults();
        m.atomic_ns = -1.0;
        let e = CostModel::from_toml(&m.to_toml()).unwrap_err();
        assert!(e.to_string().contains("atomic_ns"), "{e}");
        assert!(CostModel::from_toml("call_ns = 1").is_err());
    }
}
