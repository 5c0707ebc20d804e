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

use crate::error::ScenarioError;
use crate::scenario::ranges::Range;
use crate::scenario::source::Source;
use hierstat::WorkCounters;
use serde::{Deserialize, Serialize};

/// The cost file's ranges: every cost in ns. An engine call costs at least
/// 0.1 ns, so virtual time always advances (a zero-cost call would let a
/// back-to-back writer loop forever at one instant).
pub const RANGES: &[Range] = &[Range::real("call_ns", 0.1, 1e6), Range::real("*", 0.0, 1e6)];

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
    /// one conversion from [`hierstat::WorkCounters`] (update-list pops are
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

/// Per-unit costs in nanoseconds (fractions allowed), as stored in TOML.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
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
}

fn to_ps(ns: f64) -> u64 {
    (ns * 1000.0).round().max(0.0) as u64
}

impl CostModel {
    /// The costs shipped in [`DEFAULT_COSTS_TOML`].
    pub fn defaults() -> Self {
        Self::from_toml(DEFAULT_COSTS_TOML).expect("shipped cost defaults parse")
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
        crate::scenario::ranges::check(&src, &[RANGES])?;
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

impl Default for CostModel {
    fn default() -> Self {
        Self::defaults()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(crate::scenario::ranges::find(&[RANGES], k).is_some(), "{k}");
        }
        assert_eq!(
            crate::scenario::ranges::find(&[RANGES], "call_ns")
                .unwrap()
                .min,
            0.1
        );
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
