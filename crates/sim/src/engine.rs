//! The hierstat engine as a [`StatsBackend`], under one preset.
//!
//! Groups are created in the workload's preorder, so a [`GroupIdx`] indexes
//! the engine's [`Group`] handles directly. Items are page-unit state items
//! named like `memory.stat` entries. In simulated mode the engine reads a
//! [`ManualClock`] that the runner sets to virtual time before each call
//! (the ratelimit and periodic rules then run in virtual time).
//!
//! The simulated runner is the backend's one user for a run, and drives
//! the tree from one thread: its updates ([`StatsBackend::add_counted`],
//! `&mut`) go through `hierstat`'s
//! [`Simulator::add_with_mut`](hierstat::sim::Simulator::add_with_mut),
//! which, the backend's handle being the tree's only one, makes the shared
//! path's read-modify-writes as plain loads and stores, with the same
//! results and the same work counted.

use crate::backend::{
    FlushReason, FlushRules, FlushScope, LineId, ReadFlush, ReadValue, StatsBackend, Update,
    WithinValue,
};
use crate::cost::{CostTable, PricedWork, Work};
use crate::error::SimError;
use crate::lock::LockMode;
use crate::workload::{item_names, GroupIdx, TreeShape};
use hierstat::sim::Simulator as _;
use hierstat::{
    sim::{ManualClock, Shard, WorkCounters, WorkSink},
    Config, FlushKind, Group, HierStats, ItemId, OnBusy, Policy, Preset, ReadItem, Schema,
    ThresholdRule, Tolerance, Unit, WithinFlush,
};

/// hierstat under a preset, with the workload's tree built in it.
#[derive(Debug)]
pub struct EngineBackend {
    name: String,
    stats: HierStats,
    groups: Vec<Group>,
    items: Vec<ItemId>,
    clock: ManualClock,
    rules: FlushRules,
    fallback_bound: u64,
}

impl EngineBackend {
    /// Builds `shape` with `items` page-unit state items on `shards` shards
    /// under `preset`.
    pub fn new(
        preset: Preset,
        shape: &TreeShape,
        items: usize,
        shards: usize,
    ) -> Result<Self, SimError> {
        Self::with_policy(preset.name(), preset.policy(), shape, items, shards)
    }

    /// As [`EngineBackend::new`] under any knobs (a user policy), called
    /// `name`.
    pub fn with_policy(
        name: &str,
        policy: Policy,
        shape: &TreeShape,
        items: usize,
        shards: usize,
    ) -> Result<Self, SimError> {
        let mut b = Schema::builder();
        let ids: Vec<ItemId> = item_names(items)
            .iter()
            .map(|n| b.state(n, Unit::Pages))
            .collect();
        let schema = b.build().map_err(engine_err)?;
        let clock = ManualClock::new(0);
        let stats = HierStats::new(
            schema,
            Config::with_policy(policy)
                .shards(shards)
                .clock(clock.clone()),
        )
        .map_err(engine_err)?;
        let mut groups: Vec<Group> = Vec::with_capacity(shape.len());
        groups.push(stats.root());
        for g in &shape.groups()[1..] {
            let parent = &groups[g.parent.expect("non-root has a parent") as usize];
            let h = stats.create(parent, &g.name).map_err(engine_err)?;
            groups.push(h);
        }
        let p = *stats.policy();
        let rules = FlushRules {
            lock: LockMode::for_policy(p.concurrency),
            scope: match p.scope {
                hierstat::FlushScope::Root => FlushScope::Root,
                hierstat::FlushScope::Subtree => FlushScope::Subtree,
            },
            periodic: p.threshold != ThresholdRule::None,
        };
        // The documented worst case when the engine reports no bound: the
        // threshold plus every shard's unfolded residue.
        let fallback_bound =
            stats.threshold_pages() + shards as u64 * u64::from(p.batch.saturating_sub(1));
        Ok(EngineBackend {
            name: name.to_string(),
            stats,
            groups,
            items: ids,
            clock,
            rules,
            fallback_bound,
        })
    }

    /// The engine itself.
    pub fn stats(&self) -> &HierStats {
        &self.stats
    }

    /// The bound used to judge reads for which the engine reports none:
    /// the policy's documented `T + shards × (batch − 1)` pages.
    pub fn fallback_bound(&self) -> u64 {
        self.fallback_bound
    }

    /// The sole writer's update (`&mut`: plain stores, see
    /// `hierstat::sim::Simulator::add_with_mut`), its work counted into `sink`.
    #[inline]
    fn add_sole(&mut self, u: Update, sink: &mut impl WorkSink) {
        let r = self.stats.add_with_mut(
            Shard(u.shard),
            &self.groups[u.group as usize],
            self.items[u.item],
            u.delta,
            sink,
        );
        debug_assert!(r.is_ok(), "workload shards and items are in range");
    }
}

fn engine_err(e: hierstat::Error) -> SimError {
    SimError::Engine(e)
}

impl StatsBackend for EngineBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn rules(&self) -> FlushRules {
        self.rules
    }

    #[inline]
    fn add(&self, group: GroupIdx, item: usize, delta: i64) {
        let r = self
            .stats
            .add(&self.groups[group as usize], self.items[item], delta);
        debug_assert!(r.is_ok(), "workload items belong to the schema");
    }

    #[inline]
    fn add_counted(&mut self, update: Update, work: &mut Work, _lines: &mut Vec<LineId>) {
        // The engine counts into `work` directly, as `Work::from_engine`
        // converts its counters (see `Work`'s `WorkSink`).
        work.calls += 1;
        self.add_sole(update, work);
    }

    #[inline]
    fn add_priced(&mut self, update: Update, costs: &CostTable, _lines: &mut Vec<LineId>) -> u64 {
        // One call, then the engine's work priced as it is counted: the
        // `cost_ps` of what `add_counted` would have counted.
        let mut priced = PricedWork::calls(costs, 1);
        self.add_sole(update, &mut priced);
        priced.ps
    }

    fn needs_flush(&self, group: GroupIdx, reason: FlushReason) -> bool {
        match reason {
            FlushReason::Read => self.stats.needs_flush(&self.groups[group as usize]) == Ok(true),
            FlushReason::Periodic | FlushReason::Forced => true,
        }
    }

    fn flush(&self, group: GroupIdx, reason: FlushReason, work: &mut Work) {
        let mut wc = WorkCounters::default();
        let (g, kind) = match reason {
            FlushReason::Read => (&self.groups[group as usize], FlushKind::Read),
            FlushReason::Periodic => (&self.groups[0], FlushKind::Periodic),
            FlushReason::Forced => (&self.groups[group as usize], FlushKind::Forced),
        };
        let r = self.stats.flush_with(g, kind, &mut wc);
        debug_assert!(r.is_ok(), "the backend's groups are its tree's own");
        work.merge(&Work::from_engine(&wc, 1));
    }

    #[inline]
    fn set_time(&self, ns: u64) {
        self.clock.set(ns);
    }

    fn read_within(
        &self,
        group: GroupIdx,
        items: usize,
        tolerance: Tolerance,
        flush: bool,
        out: &mut Vec<WithinValue>,
        work: &mut Work,
    ) -> ReadFlush {
        out.clear();
        work.items_read += items as u64;
        let g = &self.groups[group as usize];
        if !flush {
            // Step 1 of `read_within`: the bounds as they are, no flush.
            let mut fits = true;
            for &item in &self.items[..items] {
                let v = match self.stats.read_bounded(g, item) {
                    Ok(b) => WithinValue {
                        read: ReadValue {
                            value: b.value,
                            bound: b.bound,
                        },
                        budget: tolerance.budget(b.signed),
                        signed: b.signed,
                    },
                    Err(_) => WithinValue {
                        read: ReadValue {
                            value: 0,
                            bound: None,
                        },
                        budget: 0,
                        signed: 0,
                    },
                };
                fits &= v.met();
                out.push(v);
            }
            return if fits {
                ReadFlush::None
            } else {
                ReadFlush::Needed
            };
        }
        let reads: Vec<(ReadItem, Tolerance)> = self.items[..items]
            .iter()
            .map(|&i| (ReadItem::Item(i), tolerance))
            .collect();
        let mut got = Vec::with_capacity(items);
        let mut wc = WorkCounters::default();
        let done = self
            .stats
            .read_many_within_with(g, &reads, OnBusy::Wait, &mut got, &mut wc);
        work.merge(&Work::from_engine(&wc, 1));
        if done.is_err() {
            // Not with the backend's own groups and items: nothing read.
            got.clear();
        }
        out.extend(got.iter().map(|w| WithinValue {
            read: ReadValue {
                value: w.read.value,
                bound: w.read.bound,
            },
            budget: w.budget,
            signed: w.read.signed,
        }));
        out.resize(
            items,
            WithinValue {
                read: ReadValue {
                    value: 0,
                    bound: None,
                },
                budget: 0,
                signed: 0,
            },
        );
        match done {
            Ok(WithinFlush::None) => ReadFlush::None,
            Ok(WithinFlush::Partial { .. }) => ReadFlush::Partial,
            // `Busy` cannot happen (the read waits); an error reads nothing.
            _ => ReadFlush::Full,
        }
    }

    fn read(&self, group: GroupIdx, item: usize, work: &mut Work) -> ReadValue {
        work.items_read += 1;
        match self
            .stats
            .read_bounded(&self.groups[group as usize], self.items[item])
        {
            Ok(b) => ReadValue {
                value: b.value,
                bound: Some(b.bound.unwrap_or(self.fallback_bound)),
            },
            Err(_) => ReadValue {
                value: 0,
                bound: None,
            },
        }
    }
}
