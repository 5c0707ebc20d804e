//! The bound contract (`hierstat::Bounded`) at every instant a read can
//! happen: reads during flushes, right after racing flushes, and counters
//! that leave `i64`.
//!
//! A flush reports its work to a `WorkSink` at every step (each drain, each
//! group visited, each counter reset): the probe below is such a sink. At
//! every event it reads every group's bound and checks it against an exact
//! oracle, then injects an update, so that updates land at every point of a
//! flush too. Everything runs on the flushing thread, so no update is
//! concurrent with a read and the check is exact: `|signed − exact| ≤ b`.

use crate::items::ev_pages_bytes;
use crate::rng::Rng;
use hierstat::sim::{Shard, Simulator, Work, WorkSink};
use hierstat::{
    Concurrency, Config, ConfigError, EarlyBreak, Error, FlushKind, Group, HierStats, ItemId,
    Policy, Preset, Schema, ThresholdSize, Unit,
};
use std::cell::RefCell;

/// A tree with its groups (parents before children) and an exact oracle.
struct World {
    t: HierStats,
    items: [ItemId; 3],
    groups: Vec<Group>,
    parent: Vec<Option<usize>>,
    /// Exact sum of every update per group (own updates only) and item.
    exact: RefCell<Vec<[i64; 3]>>,
}

impl World {
    fn new(policy: Policy, shards: usize, membarrier: bool, rng: &mut Rng) -> World {
        let mut b = Schema::builder();
        let items = ev_pages_bytes(&mut b);
        let cfg = Config::with_policy(policy)
            .shards(shards)
            .membarrier(membarrier);
        let t = HierStats::new(b.build().unwrap(), cfg).unwrap();
        let mut groups = vec![t.root()];
        let mut parent = vec![None];
        for i in 0..9 {
            let p = rng.below(groups.len() as u64) as usize;
            groups.push(t.create(&groups[p], &format!("g{i}")).unwrap());
            parent.push(Some(p));
        }
        let exact = RefCell::new(vec![[0; 3]; groups.len()]);
        World {
            t,
            items,
            groups,
            parent,
            exact,
        }
    }

    /// One random update: owner path (`add`) or shared path (`add_with` on
    /// a random shard), small or large, both signs for states.
    fn update(&self, rng: &mut Rng) {
        let g = rng.below(self.groups.len() as u64) as usize;
        let k = rng.below(3) as usize;
        let mut d = match rng.below(40) {
            0 => 70_000 + rng.below(10_000) as i64,
            1..=4 => 1 + rng.below(400) as i64,
            _ => 1 + rng.below(40) as i64,
        };
        if k > 0 && rng.below(3) == 0 {
            d = -d;
        }
        if rng.below(2) == 0 {
            self.t.add(&self.groups[g], self.items[k], d).unwrap();
        } else {
            let s = Shard(rng.below(self.t.shards() as u64) as usize);
            self.t
                .add_with(s, &self.groups[g], self.items[k], d, &mut ())
                .unwrap();
        }
        self.exact.borrow_mut()[g][k] += d;
    }

    /// Exact subtree sums (children after parents in `groups`).
    fn subtree_exact(&self) -> Vec<[i64; 3]> {
        let mut sum = self.exact.borrow().clone();
        for g in (1..sum.len()).rev() {
            let (p, child) = (self.parent[g].unwrap(), sum[g]);
            for (total, v) in sum[p].iter_mut().zip(child) {
                *total += v;
            }
        }
        sum
    }

    /// Checks every (group, item) bound; returns how many were `Some`.
    fn check(&self, when: &str) -> u64 {
        let want = self.subtree_exact();
        let mut bounded = 0;
        for (g, group) in self.groups.iter().enumerate() {
            for (k, &item) in self.items.iter().enumerate() {
                let b = self.t.read_bounded(group, item).unwrap();
                if let Some(bound) = b.bound {
                    bounded += 1;
                    assert!(
                        (b.signed - want[g][k]).unsigned_abs() <= bound,
                        "{when}: {} item {k}: value {} exact {} bound {bound}",
                        group.path(),
                        b.signed,
                        want[g][k]
                    );
                }
            }
        }
        bounded
    }
}

/// The sink: at every event, check every bound, then inject an update
/// (every `every`-th event).
struct Probe<'a> {
    w: &'a World,
    rng: Rng,
    events: u64,
    every: u64,
    bounded: u64,
    what: &'a str,
}

impl WorkSink for Probe<'_> {
    fn count(&mut self, work: Work, _: u64) {
        self.events += 1;
        let when = format!("{} at event {} ({work:?})", self.what, self.events);
        self.bounded += self.w.check(&when);
        if self.events % self.every == 0 {
            self.w.update(&mut self.rng);
        }
    }
}

/// Policies that report bounds, with every concurrency and early-break
/// rule, and two tight ones (batch 2, small `T`) that put groups above
/// their threshold and their break level within a few updates.
fn policies() -> Vec<(String, Policy)> {
    let mut v: Vec<(String, Policy)> = Preset::ALL
        .iter()
        .filter(|p| **p != Preset::Linux5_13)
        .map(|p| (p.name().to_string(), p.policy()))
        .collect();
    let mut wait = Preset::Hierstat.policy();
    wait.concurrency = Concurrency::WaitOngoing { max_wait_ms: 1 };
    v.push(("hierstat wait-ongoing".into(), wait));
    for (name, base) in [
        ("hierstat", Preset::Hierstat),
        ("linux-6.8", Preset::Linux6_8),
        ("linux-6.17", Preset::Linux6_17),
        ("linux-5.15", Preset::Linux5_15),
    ] {
        // A global count holds the whole tree's folds: a wider T.
        let t = if base == Preset::Linux5_15 { 40 } else { 5 };
        let mut p = base.policy();
        p.batch = 2;
        p.threshold_size = ThresholdSize::Fixed(t);
        v.push((format!("{name} batch 2, T {t}"), p));
    }
    let mut margin = Preset::Linux6_8.policy();
    margin.early_break = EarlyBreak::Margin;
    v.push(("linux-6.8 margin".into(), margin));
    let mut folded_break = Preset::Hierstat.policy();
    folded_break.early_break = EarlyBreak::Upstream;
    folded_break.batch = 4;
    folded_break.threshold_size = ThresholdSize::Fixed(8);
    v.push(("hierstat upstream break, batch 4, T 8".into(), folded_break));
    v
}

/// Every flush entry point, on a random group.
fn flush_kind(rng: &mut Rng) -> FlushKind {
    match rng.below(5) {
        0 => FlushKind::Read,
        1 => FlushKind::Forced,
        2 => FlushKind::Ratelimited,
        3 => FlushKind::HotPath,
        _ => FlushKind::Periodic,
    }
}

/// Reads and checks every group's bound at every event of every flush, on
/// every policy that reports bounds, 1 to 3 shards, owner and shared paths,
/// with updates injected at every event (in other rounds at every 4th or
/// 16th, so that groups also get back under their thresholds).
#[test]
fn every_bound_holds_at_every_point_a_flush_can_be_observed() {
    let seeds: u64 = std::env::var("HIERSTAT_BOUND_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 6 } else { 30 });
    for (name, policy) in policies() {
        let mut bounded = 0;
        let mut events = 0;
        for seed in 0..seeds {
            for shards in 1..=3 {
                let mut rng = Rng(seed * 7919 + shards as u64);
                let w = World::new(policy, shards, seed % 2 == 0, &mut rng);
                for round in 0..40 {
                    for _ in 0..rng.below(12) {
                        w.update(&mut rng);
                    }
                    let what = format!("{name}, seed {seed}, {shards} shards, round {round}");
                    w.check(&format!("{what}, before the flush"));
                    let g = &w.groups[rng.below(w.groups.len() as u64) as usize];
                    let kind = flush_kind(&mut rng);
                    let mut probe = Probe {
                        w: &w,
                        rng: Rng(rng.next()),
                        events: 0,
                        every: [1, 4, 16][round % 3],
                        bounded: 0,
                        what: &format!("{what}, {kind:?} flush of {}", g.path()),
                    };
                    w.t.flush_with(g, kind, &mut probe).unwrap();
                    bounded += probe.bounded;
                    events += probe.events;
                    w.check(&format!("{what}, after the flush"));
                }
            }
        }
        // The probe must have seen flushes and bounds to check, or it
        // proved nothing.
        eprintln!("{name}: {events} events, {bounded} bounds checked");
        assert!(events > 1000, "{name}: only {events} flush events");
        assert!(bounded > 500, "{name}: only {bounded} bounds checked");
    }
}

/// linux-6.8, one shard: 60 events on `/a/b`, then a forced flush of `/a`.
/// Between the flush's visit of `/a/b` and its visit of `/a`, add 60 more
/// to `/a/b` and read `/a`: the flush has taken `/a`'s residue but not
/// landed it, and the bound must still count it (it said 63 for an error
/// of 120 before the hand-over).
#[test]
fn a_read_between_a_flushs_visits_of_a_child_and_its_parent_is_bounded() {
    let mut b = Schema::builder();
    let ev = b.event("ev", Unit::Count);
    let t = HierStats::new(
        b.build().unwrap(),
        Config::preset(Preset::Linux6_8).shards(1),
    )
    .unwrap();
    let a = t.create(&t.root(), "a").unwrap();
    let ab = t.create(&a, "b").unwrap();
    t.add_with(Shard(0), &ab, ev, 60, &mut ()).unwrap();
    struct Between<'a> {
        t: &'a HierStats,
        ab: &'a Group,
        a: &'a Group,
        ev: ItemId,
        visits: u32,
        read: Option<hierstat::Bounded>,
    }
    impl WorkSink for Between<'_> {
        fn count(&mut self, work: Work, _: u64) {
            // The main pass visits `/a/b` first, then `/a`.
            if work == Work::GroupVisited {
                self.visits += 1;
                if self.visits == 2 {
                    self.t
                        .add_with(Shard(0), self.ab, self.ev, 60, &mut ())
                        .unwrap();
                    self.read = Some(self.t.read_bounded(self.a, self.ev).unwrap());
                }
            }
        }
    }
    let mut probe = Between {
        t: &t,
        ab: &ab,
        a: &a,
        ev,
        visits: 0,
        read: None,
    };
    t.flush_with(&a, FlushKind::Forced, &mut probe).unwrap();
    let r = probe.read.expect("the flush visited /a/b and /a");
    let bound = r.bound.expect("under the threshold: bounded");
    assert!(
        r.signed.abs_diff(120) <= bound,
        "read during the flush: {r:?}, exact 120"
    );
}

/// linux-6.17 (upstream early break), one shard: a leaf holds 100 events,
/// above `T` = 64, so updates stop counting it. While a forced flush of the
/// leaf runs, after it read the leaf's counters, add 345 more. Once the
/// flush returned, with nothing running, the leaf's count was reset but the
/// 345 are in no count and not flushed: the leaf must report no bound (it
/// reported 63 for an error of 345).
#[test]
fn a_leaf_reset_while_updates_skipped_it_reports_no_bound() {
    let mut b = Schema::builder();
    let ev = b.event("ev", Unit::Count);
    let t = HierStats::new(
        b.build().unwrap(),
        Config::preset(Preset::Linux6_17).shards(1),
    )
    .unwrap();
    let leaf = t.create(&t.root(), "leaf").unwrap();
    t.add_with(Shard(0), &leaf, ev, 100, &mut ()).unwrap();
    struct After<'a> {
        t: &'a HierStats,
        leaf: &'a Group,
        ev: ItemId,
        visited: bool,
        done: bool,
    }
    impl WorkSink for After<'_> {
        fn count(&mut self, work: Work, _: u64) {
            // `aggregate` reports the visit, then the counters, reads them,
            // then reports its atomics.
            match work {
                Work::GroupVisited => self.visited = true,
                Work::Atomic if self.visited && !self.done => {
                    self.done = true;
                    self.t
                        .add_with(Shard(0), self.leaf, self.ev, 345, &mut ())
                        .unwrap();
                }
                _ => {}
            }
        }
    }
    let mut probe = After {
        t: &t,
        leaf: &leaf,
        ev,
        visited: false,
        done: false,
    };
    t.flush_with(&leaf, FlushKind::Forced, &mut probe).unwrap();
    assert!(probe.done);
    let r = t.read_bounded(&leaf, ev).unwrap();
    if let Some(bound) = r.bound {
        assert!(r.signed.abs_diff(445) <= bound, "{r:?}, exact 445");
    }
    // The next flush carries the 345 and, run from below the break level,
    // certifies the count again.
    t.flush_forced(&leaf).unwrap();
    let r = t.read_bounded(&leaf, ev).unwrap();
    assert_eq!(r.signed, 445);
    assert_eq!(r.bound, Some(63), "certified again: {r:?}");
}

/// An item that would leave `i64` saturates, says so, and never wraps:
/// through the owner path, the shared path, a flush's sum of shards, and a
/// parent's sum of children, on every preset.
#[test]
fn a_counter_that_would_leave_i64_saturates_and_says_so() {
    for preset in Preset::ALL {
        for membarrier in [true, false] {
            let mut b = Schema::builder();
            let ev = b.event("ev", Unit::Count);
            let st = b.state("st", Unit::Bytes);
            let cfg = Config::preset(preset).shards(2).membarrier(membarrier);
            let t = HierStats::new(b.build().unwrap(), cfg).unwrap();
            let a = t.create(&t.root(), "a").unwrap();
            let x = t.create(&a, "x").unwrap();
            let y = t.create(&a, "y").unwrap();
            let other = t.create(&t.root(), "other").unwrap();
            let what = format!("{preset}, membarrier {membarrier}");
            // One thread's running sum: the update path sees it.
            t.add(&x, ev, i64::MAX).unwrap();
            t.add(&x, ev, 1).unwrap();
            // Two shards that each fit: the flush's sum does not.
            t.add_with(Shard(0), &y, st, i64::MAX - 5, &mut ()).unwrap();
            t.add_with(Shard(1), &y, st, i64::MAX - 5, &mut ()).unwrap();
            t.add(&other, ev, 7).unwrap();
            for g in [&x, &a, &t.root()] {
                let r = t.read_bounded(g, ev).unwrap();
                assert!(
                    r.saturated && r.bound.is_none(),
                    "{what} {}: {r:?}",
                    g.path()
                );
            }
            t.flush_forced(&t.root()).unwrap();
            for (g, item) in [(&x, ev), (&a, ev), (&t.root(), ev), (&y, st), (&a, st)] {
                let r = t.read_bounded(g, item).unwrap();
                assert!(r.saturated, "{what} {}: {r:?}", g.path());
                assert_eq!(r.bound, None, "{what} {}", g.path());
                assert_eq!(r.signed, i64::MAX, "{what} {}: pinned", g.path());
                assert_eq!(t.read_signed(g, item).unwrap(), i64::MAX, "{what}");
            }
            // Nothing else is touched.
            let r = t.read_bounded(&other, ev).unwrap();
            assert!(!r.saturated && r.signed == 7, "{what}: {r:?}");
            assert!(!t.read_bounded(&x, st).unwrap().saturated, "{what}");
            // More updates and flushes keep it pinned, never wrapped.
            t.add(&x, ev, i64::MAX).unwrap();
            t.add_with(Shard(1), &y, st, i64::MIN + 1, &mut ()).unwrap();
            t.flush_forced(&t.root()).unwrap();
            assert_eq!(t.read(&x, ev).unwrap(), i64::MAX as u64, "{what}");
            assert_eq!(t.read_signed(&t.root(), st).unwrap(), i64::MAX, "{what}");
            // The smallest delta has no magnitude in i64: refused? No:
            // counted as the largest fold; a gauge may go down by it once.
            let z = t.create(&t.root(), "z").unwrap();
            t.add(&z, st, i64::MIN).unwrap();
            t.flush_forced(&z).unwrap();
            let r = t.read_bounded(&z, st).unwrap();
            assert_eq!((r.signed, r.saturated), (i64::MIN, false), "{what}");
            t.add(&z, st, -1).unwrap();
            t.flush_forced(&z).unwrap();
            let r = t.read_bounded(&z, st).unwrap();
            assert_eq!((r.signed, r.saturated), (i64::MIN, true), "{what}");
        }
    }
}

/// Configuration ranges are checked where they are given, with typed
/// errors; a threshold never wraps.
#[test]
fn out_of_range_configurations_are_typed_errors() {
    let schema = || {
        let mut b = Schema::builder();
        b.event("ev", Unit::Count);
        b.build().unwrap()
    };
    let with = |f: &dyn Fn(&mut Policy)| {
        let mut p = Preset::Hierstat.policy();
        f(&mut p);
        HierStats::new(schema(), Config::with_policy(p).shards(64))
    };
    assert!(matches!(
        with(&|p| p.threshold_size = ThresholdSize::PagesPerShard(u64::MAX)),
        Err(Error::InvalidConfig(ConfigError::Threshold(_)))
    ));
    assert!(matches!(
        with(&|p| p.threshold_size = ThresholdSize::Fixed(u64::MAX)),
        Err(Error::InvalidConfig(ConfigError::Threshold(Some(_))))
    ));
    assert!(matches!(
        with(&|p| p.batch = 0),
        Err(Error::InvalidConfig(ConfigError::Batch(0)))
    ));
    assert!(matches!(
        with(&|p| p.period_ns = u64::MAX),
        Err(Error::InvalidConfig(ConfigError::Period(_)))
    ));
    assert!(with(&|p| p.threshold_size = ThresholdSize::Fixed(hierstat::MAX_THRESHOLD)).is_ok());
    let mut huge = Preset::Hierstat.policy();
    huge.threshold_size = ThresholdSize::PagesPerShard(u64::MAX);
    assert_eq!(
        Preset::Hierstat
            .policy()
            .threshold_pages(64)
            .min(huge.threshold_pages(64)),
        64 * 64,
        "threshold_pages saturates instead of wrapping"
    );
    let t = HierStats::new(schema(), Config::default()).unwrap();
    for period in [std::time::Duration::MAX, std::time::Duration::ZERO] {
        assert!(matches!(
            t.start_flusher(period),
            Err(Error::InvalidConfig(ConfigError::FlusherPeriod(_)))
        ));
    }
    // The longest period that fits waits (it does not flush back to back):
    // the thread goes to wait before any periodic flush. A deadline that
    // wrapped would flush at once and again after each flush, never
    // waiting.
    let f = t
        .start_flusher(std::time::Duration::from_nanos(u64::MAX))
        .unwrap();
    crate::wait_until("the flusher's first wait", || f.stats().waits > 0);
    assert_eq!(f.stop().periodic_flushes, 0);
}

/// Real threads: updaters on a few hundred groups (owner and shared paths,
/// states and events), the background flusher every millisecond, and a
/// thread racing async requests, forced, guarded and hot-path flushes of
/// random subtrees. Each round the updaters pause at a barrier and every
/// (group, item) bound is checked while the flushers keep running: no
/// update runs during the reads, so every bound must hold exactly.
///
/// CI runs a few rounds per policy; `HIERSTAT_BOUND_ROUNDS` and
/// `HIERSTAT_BOUND_SEEDS` scale it up (the closing figures: 1,000 rounds,
/// 20 seeds, release build, `--nocapture` prints them).
#[test]
fn bounds_hold_on_real_threads_with_the_background_flusher() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let rounds = env("HIERSTAT_BOUND_ROUNDS", 25);
    let seeds = env("HIERSTAT_BOUND_SEEDS", 2);
    let mut wait = Preset::Hierstat.policy();
    wait.concurrency = Concurrency::WaitOngoing { max_wait_ms: 1 };
    let mut policies: Vec<(String, Policy)> = Preset::ALL
        .iter()
        .filter(|p| **p != Preset::Linux5_13)
        .map(|p| (p.name().to_string(), p.policy()))
        .collect();
    policies.push(("hierstat wait-ongoing 1 ms".into(), wait));
    // A global threshold under a per-pass gate: overlapping root flushes
    // hold the global count's snapshot (no preset combines the two).
    let mut global_per_pass = Preset::Linux5_15.policy();
    global_per_pass.concurrency = Concurrency::Serialize;
    global_per_pass.lock_per_shard = true;
    policies.push(("linux-5.15, per-pass gate".into(), global_per_pass));
    for (name, policy) in policies {
        let (mut reads, mut bounded, mut groups) = (0u64, 0u64, 0);
        for seed in 0..seeds as u64 {
            let r = real_threads_round_trip(policy, seed, rounds);
            reads += r.0;
            bounded += r.1;
            groups = r.2;
        }
        eprintln!(
            "{name}: {rounds} rounds x {seeds} seeds, {groups} groups, {reads} reads, \
             {bounded} with a bound, 0 violations"
        );
        assert!(bounded > 0, "{name}: no bound was ever checked");
    }
}

/// One seed of [`bounds_hold_on_real_threads_with_the_background_flusher`]:
/// (reads, reads with a bound, groups). Panics at the first violation.
fn real_threads_round_trip(policy: Policy, seed: u64, rounds: usize) -> (u64, u64, usize) {
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9) + 1);
    let mut b = Schema::builder();
    let items = [b.event("ev", Unit::Count), b.state("st", Unit::Pages)];
    // Shards: 2 or 4; with 3 updaters, some take the shared path on 2.
    let shards = 2 + 2 * (seed % 2) as usize;
    let cfg = Config::with_policy(policy)
        .shards(shards)
        .membarrier(seed % 4 < 2);
    let t = HierStats::new(b.build().unwrap(), cfg).unwrap();
    let mut groups = vec![t.root()];
    let mut parent = vec![usize::MAX];
    for i in 0..300 {
        // A few top-level groups, then random parents: depths up to ~8.
        let p = if i < 12 {
            0
        } else {
            rng.below(groups.len() as u64) as usize
        };
        groups.push(t.create(&groups[p], &format!("r{i}")).unwrap());
        parent.push(p);
    }
    let n = groups.len();
    let exact: Vec<[AtomicI64; 2]> = (0..n)
        .map(|_| [AtomicI64::new(0), AtomicI64::new(0)])
        .collect();
    let flusher = t
        .start_flusher(std::time::Duration::from_millis(1))
        .unwrap();
    let stop = AtomicBool::new(false);
    let updaters = 3;
    let barrier = std::sync::Barrier::new(updaters + 1);
    let (mut reads, mut bounded) = (0u64, 0u64);
    let mut failure = None;
    std::thread::scope(|sc| {
        let (t, groups, stop) = (&t, &groups, &stop);
        sc.spawn(move || {
            let mut r = Rng(seed + 77);
            while !stop.load(Ordering::Relaxed) {
                let g = &groups[r.below(groups.len() as u64) as usize];
                match r.below(4) {
                    0 => t.request_async_flush(),
                    1 => drop(t.flush_forced(g).unwrap()),
                    2 => drop(t.flush(g).unwrap()),
                    _ => drop(t.flush_hot_path(g).unwrap()),
                }
            }
        });
        for th in 0..updaters {
            let (exact, barrier, items) = (&exact, &barrier, &items);
            sc.spawn(move || {
                let mut r = Rng(seed * 31 + th as u64 + 5);
                for _ in 0..rounds {
                    for _ in 0..300 {
                        let g = r.below(groups.len() as u64) as usize;
                        let k = r.below(2) as usize;
                        let mut d = match r.below(16) {
                            0 => 5_000 + r.below(5_000) as i64,
                            1..=3 => 64 + r.below(200) as i64,
                            _ => 1 + r.below(40) as i64,
                        };
                        if k == 1 && r.below(3) == 0 {
                            d = -d;
                        }
                        if r.below(4) == 0 {
                            let s = Shard(r.below(t.shards() as u64) as usize);
                            t.add_with(s, &groups[g], items[k], d, &mut ()).unwrap();
                        } else {
                            t.add(&groups[g], items[k], d).unwrap();
                        }
                        exact[g][k].fetch_add(d, Ordering::Relaxed);
                    }
                    barrier.wait(); // paused: the reads run
                    barrier.wait(); // resumed
                }
            });
        }
        for round in 0..rounds {
            barrier.wait();
            // A failed check must not leave the updaters waiting at the
            // barrier (the test would hang instead of failing): the first
            // failure is kept, the remaining rounds only pass the barriers,
            // and it is raised once every thread is done.
            if failure.is_none() {
                let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    check_round(t, &flusher, groups, &parent, &exact, &items, seed, round)
                }));
                match checked {
                    Ok((r, b)) => {
                        reads += r;
                        bounded += b;
                    }
                    Err(p) => failure = Some(p),
                }
            }
            barrier.wait();
        }
        stop.store(true, Ordering::Relaxed);
    });
    flusher.stop();
    if let Some(p) = failure {
        std::panic::resume_unwind(p);
    }
    (reads, bounded, n)
}

/// One round's checks of [`real_threads_round_trip`], the updaters paused:
/// every (group, item) bound against the exact sums, at once and after the
/// background flusher's next period; (reads, reads with a bound).
#[allow(clippy::too_many_arguments)]
fn check_round(
    t: &HierStats,
    flusher: &hierstat::BackgroundFlusher,
    groups: &[Group],
    parent: &[usize],
    exact: &[[std::sync::atomic::AtomicI64; 2]],
    items: &[ItemId; 2],
    seed: u64,
    round: usize,
) -> (u64, u64) {
    use std::sync::atomic::Ordering;
    let n = groups.len();
    let (mut reads, mut bounded) = (0u64, 0u64);
    let mut sum: Vec<[i64; 2]> = exact
        .iter()
        .map(|e| [e[0].load(Ordering::Relaxed), e[1].load(Ordering::Relaxed)])
        .collect();
    for g in (1..n).rev() {
        let child = sum[g];
        for (total, v) in sum[parent[g]].iter_mut().zip(child) {
            *total += v;
        }
    }
    // Twice: at once, while the updates' flushes run, and after the
    // background flusher's next period, when more groups (and a global
    // count) are back under their thresholds.
    for pass in 0..2 {
        if pass == 1 {
            // Two more background flushes: the second started after this
            // look (the first may have been running). Async requests count:
            // each one flushes at once and restarts the period, so a racing
            // thread that keeps requesting defers the periodic flushes for
            // as long as it keeps going (a wait for periodic flushes alone
            // took 17-67 s, once over 5 minutes).
            let done = || {
                let s = flusher.stats();
                s.periodic_flushes + s.async_flushes
            };
            let seen = done();
            crate::wait_until("the background flusher's next two flushes", || {
                done() >= seen + 2
            });
        }
        for (g, group) in groups.iter().enumerate() {
            for (k, &item) in items.iter().enumerate() {
                let b = t.read_bounded(group, item).unwrap();
                reads += 1;
                if let Some(bound) = b.bound {
                    bounded += 1;
                    assert!(
                        (b.signed - sum[g][k]).unsigned_abs() <= bound,
                        "seed {seed}, round {round}, {} item {k}: value {} exact {} \
                         bound {bound} (flushes running: {})",
                        group.path(),
                        b.signed,
                        sum[g][k],
                        t.flush_stats().running
                    );
                }
            }
        }
    }
    (reads, bounded)
}
