//! Model checking of the update/flush races with loom.
//!
//! Run with: `RUSTFLAGS="--cfg loom" cargo test -p hierstat --test loom --release`
//! (`LOOM_MAX_PREEMPTIONS` defaults to 2 below; 3 multiplies the run time by
//! about 20 for no new interleaving class in these small models).
//!
//! Two kinds of model:
//! * a **protocol model** of the claim handshake alone, in three variants:
//!   the kernel's (a racy "already queued?" load, no fences) must lose an
//!   update in some interleaving — kept as a negative test — while the
//!   kernel's with `smp_mb()` on both sides, and ours (one RMW word for the
//!   residue and the claim), never do;
//! * the **real engine** under loom's atomics and locks: update vs flush on
//!   the same (group, shard), two updaters racing to claim, and two flushers
//!   of overlapping subtrees.

#![cfg(loom)]

use hierstat::sim::{Shard, Simulator};
use hierstat::{
    Concurrency, Config, Group, HierStats, ItemId, Policy, Schema, ThresholdSize, Unit,
};
use loom::sync::atomic::{fence, AtomicU64, Ordering::*};
use loom::sync::Arc;
use loom::thread;

/// Runs `f` under loom at 2 preemptions (unless `LOOM_MAX_PREEMPTIONS`
/// says), and fails a model that loom ran in one interleaving only: it
/// checked no race (a read on the spawning thread with nothing before it
/// ran once, after the whole of the spawned thread's flush).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    // Counted outside loom (a std atomic: not a modelled location).
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    b.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    let runs = runs.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        runs > 1,
        "loom ran this model in {runs} interleaving: it checks no race"
    );
}

/// A tree under `cfg` whose schema is one event item, `x`.
fn tree_x(cfg: Config) -> (HierStats, ItemId) {
    let mut b = Schema::builder();
    let x = b.event("x", Unit::Count);
    (HierStats::new(b.build().unwrap(), cfg).unwrap(), x)
}

/// A tree under `cfg` whose schema is two event items, `x` and `y`.
fn tree_xy(cfg: Config) -> (HierStats, ItemId, ItemId) {
    let mut b = Schema::builder();
    let x = b.event("x", Unit::Count);
    let y = b.event("y", Unit::Count);
    (HierStats::new(b.build().unwrap(), cfg).unwrap(), x, y)
}

/// `p` with a fixed threshold of `pages` (1000: nothing here crosses it).
fn with_threshold(mut p: Policy, pages: u64) -> Policy {
    p.threshold_size = ThresholdSize::Fixed(pages);
    p
}

/// `p` with a fold every `batch` pages and a fixed threshold of `pages`.
fn sized(mut p: Policy, batch: u32, pages: u64) -> Policy {
    p.batch = batch;
    with_threshold(p, pages)
}

/// `p` under a per-pass gate (flushes of overlapping subtrees interleave
/// by pass).
fn per_pass_gate(mut p: Policy) -> Policy {
    p.concurrency = Concurrency::Serialize;
    p.lock_per_shard = true;
    p
}

/// Runs `f` on a new loom thread with clones of the tree and of `g`.
fn spawn_with<T: Send + 'static>(
    t: &HierStats,
    g: &Group,
    f: impl FnOnce(HierStats, Group) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let (t2, g2) = (t.clone(), g.clone());
    thread::spawn(move || f(t2, g2))
}

/// A loom thread that runs a forced flush of `g`.
fn spawn_flush(t: &HierStats, g: &Group) -> thread::JoinHandle<()> {
    spawn_with(t, g, |t2, g2| {
        t2.flush_forced(&g2).unwrap();
    })
}

/// A loom thread that runs a forced flush of the root.
fn spawn_root_flush(t: &HierStats) -> thread::JoinHandle<()> {
    let t2 = t.clone();
    thread::spawn(move || {
        t2.flush_forced(&t2.root()).unwrap();
    })
}

/// A loom thread that adds `v` to `g`'s `item` on shard 0 (the shared
/// path).
fn spawn_add(t: &HierStats, g: &Group, item: ItemId, v: i64) -> thread::JoinHandle<()> {
    spawn_with(t, g, move |t2, g2| {
        t2.add_with(Shard(0), &g2, item, v, &mut ()).unwrap();
    })
}

/// A loom thread on modelled CPU 0 that adds `v` to `g`'s `item` (the
/// per-CPU mode's path).
fn spawn_add_on_cpu(t: &HierStats, g: &Group, item: ItemId, v: i64) -> thread::JoinHandle<()> {
    spawn_with(t, g, move |t2, g2| {
        t2.add_on_cpu_with(Shard(0), &g2, item, v).unwrap();
    })
}

/// A read's bound against an exact value known only to lie in `lo..=hi`
/// (an update of `hi − lo` may run concurrently with the read: the
/// contract allows its magnitude on top of the bound); `what` names the
/// read.
fn within_range(what: &dyn std::fmt::Display, signed: i64, bound: Option<u64>, lo: i64, hi: i64) {
    if let Some(bound) = bound {
        let off = (lo - signed)
            .unsigned_abs()
            .min((hi - signed).unsigned_abs());
        let inside = (lo..=hi).contains(&signed);
        assert!(
            inside || off <= bound + (hi - lo) as u64,
            "{what}: bound {bound} (+{}) misses: read {signed} of {lo}..={hi}",
            hi - lo
        );
    }
}

/// [`within_range`] for `g`'s `read_bounded` of `x`.
fn assert_bounded_within(t: &HierStats, g: &Group, x: ItemId, lo: i64, hi: i64) {
    let b = t.read_bounded(g, x).unwrap();
    let what = format_args!("read_bounded {}", g.path());
    within_range(&what, b.signed, b.bound, lo, hi);
}

/// [`assert_bounded_within`] for `g`, then for the root.
fn assert_bounded_with_root(t: &HierStats, g: &Group, x: ItemId, lo: i64, hi: i64) {
    assert_bounded_within(t, g, x, lo, hi);
    assert_bounded_within(t, &t.root(), x, lo, hi);
}

/// This thread's forced flush of `g` after its own update of `own` to
/// `x`: the read after it must carry that update, whatever a racing
/// claimer did (`whose` names the update).
fn assert_own_update_flushed(t: &HierStats, g: &Group, x: ItemId, own: u64, whose: &str) {
    t.flush_forced(g).unwrap();
    let seen = t.read(g, x).unwrap();
    assert!(seen >= own, "{whose} own update is missing: {seen}");
}

/// A forced root flush, after which every (group, item, value) of
/// `expect` reads exactly and the tree is clean (no update was left both
/// unqueued and unflushed).
fn assert_exact_after_a_root_flush(t: &HierStats, expect: &[(&Group, ItemId, u64)]) {
    t.flush_forced(&t.root()).unwrap();
    for &(g, x, v) in expect {
        assert_eq!(
            t.read(g, x).unwrap(),
            v,
            "{} {x:?}: an update was lost",
            g.path()
        );
    }
    t.verify_clean().unwrap();
}

/// Creates `/a` and its child `/a/b`.
fn a_and_b(t: &HierStats) -> (Group, Group) {
    let a = t.create(&t.root(), "a").unwrap();
    let b = t.create(&a, "b").unwrap();
    (a, b)
}

/// A forced flush of `g` on another thread while this one runs
/// `meanwhile` and reads `g`'s `x`, then again after the flush: both
/// bounded at `exact`.
fn read_during_a_flush_of(
    t: &HierStats,
    g: &Group,
    x: ItemId,
    exact: i64,
    meanwhile: impl FnOnce(),
) {
    let flusher = spawn_flush(t, g);
    meanwhile();
    assert_bounded_within(t, g, x, exact, exact);
    flusher.join().unwrap();
    assert_bounded_within(t, g, x, exact, exact);
}

/// Forced root flushes after a race: `updates` (given clones of the tree
/// and of `g`) on another thread against
/// one flush, then [`assert_exact_after_a_root_flush`].
fn updates_vs_root_flush(
    t: &HierStats,
    g: &Group,
    updates: impl FnOnce(HierStats, Group) + Send + 'static,
    expect: &[(&Group, ItemId, u64)],
) {
    let u = spawn_with(t, g, updates);
    t.flush_forced(&t.root()).unwrap();
    u.join().unwrap();
    assert_exact_after_a_root_flush(t, expect);
}

/// The protocol variants. `counter` is the per-(group, shard) stat,
/// `flag` the claim (1 = queued), `queue` counts pushes not yet drained.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    KernelNoFence,
    KernelFenced,
    CombinedRmw,
}

/// One update racing one flush of a row that is already queued. Afterwards
/// the update must be either flushed by that flush or queued again.
fn protocol(v: Variant) {
    model(move || {
        let counter = Arc::new(AtomicU64::new(0));
        let flag = Arc::new(AtomicU64::new(1)); // queued by an earlier update
        let requeued = Arc::new(AtomicU64::new(0));
        let (c2, f2, r2) = (counter.clone(), flag.clone(), requeued.clone());
        let updater = thread::spawn(move || {
            c2.fetch_add(1, Relaxed);
            let queued = match v {
                Variant::KernelNoFence => f2.load(Relaxed) == 1,
                Variant::KernelFenced => {
                    fence(SeqCst);
                    f2.load(Relaxed) == 1
                }
                // Ours: the residue add is an RMW on the claim word.
                Variant::CombinedRmw => f2.fetch_add(0, AcqRel) == 1,
            };
            if !queued && f2.swap(1, Relaxed) == 0 {
                r2.store(1, Relaxed);
            }
        });
        // The flusher pops the row: clear the claim, then read the counter.
        let flushed = match v {
            Variant::KernelNoFence => {
                flag.store(0, Relaxed);
                counter.swap(0, Relaxed)
            }
            Variant::KernelFenced => {
                flag.store(0, Relaxed);
                fence(SeqCst);
                counter.swap(0, Relaxed)
            }
            Variant::CombinedRmw => {
                flag.fetch_and(0, Acquire);
                counter.swap(0, Relaxed)
            }
        };
        updater.join().unwrap();
        let left = counter.load(Relaxed);
        assert!(
            flushed == 1 || (left == 1 && requeued.load(Relaxed) == 1),
            "update neither flushed nor queued (flushed {flushed}, left {left})"
        );
    });
}

/// The owner path's protocol: the owner writes its cell with a plain store
/// and checks the claim with a plain load; the flusher clears the claim and
/// reads the cell. `barrier` puts the asymmetric barrier in: loom cannot
/// run `membarrier(2)`, so the model has a `SeqCst` fence on both sides
/// (what the heavy barrier guarantees: the owner's accesses cannot be
/// reordered across the flusher's barrier point).
fn owner_protocol(barrier: bool) {
    model(move || {
        let cell = Arc::new(AtomicU64::new(0));
        let flag = Arc::new(AtomicU64::new(1)); // queued by an earlier update
        let requeued = Arc::new(AtomicU64::new(0));
        let (c2, f2, r2) = (cell.clone(), flag.clone(), requeued.clone());
        let owner = thread::spawn(move || {
            // Plain read-modify-write: the owner is the only writer.
            c2.store(c2.load(Relaxed) + 1, Relaxed);
            if barrier {
                fence(SeqCst);
            }
            let queued = f2.load(Acquire) == 1;
            if !queued && f2.swap(1, Relaxed) == 0 {
                r2.store(1, Relaxed);
            }
        });
        flag.fetch_and(0, Relaxed);
        if barrier {
            fence(SeqCst);
        }
        let seen = cell.load(Relaxed);
        owner.join().unwrap();
        assert!(
            seen == 1 || requeued.load(Relaxed) == 1,
            "update neither flushed nor queued (seen {seen})"
        );
    });
}

#[test]
#[should_panic(expected = "update neither flushed nor queued")]
fn owner_protocol_without_barrier_loses_an_update() {
    owner_protocol(false);
}

#[test]
fn owner_protocol_with_the_asymmetric_barrier_is_safe() {
    owner_protocol(true);
}

#[test]
#[should_panic(expected = "update neither flushed nor queued")]
fn kernel_protocol_without_fences_loses_an_update() {
    protocol(Variant::KernelNoFence);
}

#[test]
fn kernel_protocol_with_fences_on_both_sides_is_safe() {
    protocol(Variant::KernelFenced);
}

#[test]
fn combined_rmw_protocol_is_safe() {
    protocol(Variant::CombinedRmw);
}

/// A reader racing a flush's hand-over. The flush lands 10 units in the
/// aggregate, then gives back the 10 pages its count held for them (a
/// Release reset); the reader reads the bound and the value. Read in that
/// order, with the bound's load acquiring the reset, the value is never
/// older than the bound assumes; read value first (the order before the
/// bound issue), an interleaving reads the old value and the new bound.
fn read_racing_a_hand_over(bound_first: bool) {
    model(move || {
        let agg = Arc::new(AtomicU64::new(0));
        let count = Arc::new(AtomicU64::new(10));
        let (a2, c2) = (agg.clone(), count.clone());
        let flusher = thread::spawn(move || {
            a2.store(10, Relaxed);
            c2.fetch_sub(10, Release);
        });
        let (value, bound) = if bound_first {
            let b = count.load(Acquire);
            (agg.load(Relaxed), b)
        } else {
            let v = agg.load(Relaxed);
            (v, count.load(Acquire))
        };
        flusher.join().unwrap();
        assert!(
            10 - value <= bound,
            "bound {bound} misses: read {value} of 10"
        );
    });
}

#[test]
#[should_panic(expected = "bound")]
fn reading_the_value_before_the_bound_misses() {
    read_racing_a_hand_over(false);
}

#[test]
fn reading_the_bound_before_the_value_holds() {
    read_racing_a_hand_over(true);
}

/// The kernel-exact scheme: an ancestor's residue counts its descendants'
/// updates. An updater queues its row (`list`) and then adds its pages to
/// the ancestor's residue (a Release RMW); the flusher takes the residue
/// and drains the list. Whatever it took must belong to rows it drains
/// (it will not count those pages again): taking before draining, with an
/// acquire fence between, guarantees it; draining first (the order before
/// the bound issue) takes pages of a row pushed after the drain.
fn residue_taken_vs_drain(take_first: bool) {
    model(move || {
        let list = Arc::new(AtomicU64::new(0));
        let residue = Arc::new(AtomicU64::new(0));
        let (l2, r2) = (list.clone(), residue.clone());
        let updater = thread::spawn(move || {
            l2.store(1, Release);
            r2.fetch_add(30, Release);
        });
        let (taken, drained) = if take_first {
            let t = residue.swap(0, Relaxed);
            fence(Acquire);
            (t, list.swap(0, Acquire))
        } else {
            let d = list.swap(0, Acquire);
            (residue.swap(0, Relaxed), d)
        };
        updater.join().unwrap();
        assert!(
            taken == 0 || drained == 1,
            "took {taken} pages of a row it did not drain"
        );
    });
}

#[test]
#[should_panic(expected = "did not drain")]
fn draining_before_taking_an_ancestor_residue_drops_pages() {
    residue_taken_vs_drain(false);
}

#[test]
fn taking_an_ancestor_residue_before_draining_keeps_pages() {
    residue_taken_vs_drain(true);
}

mod engine {
    use super::{
        a_and_b, assert_bounded_with_root, assert_bounded_within, assert_exact_after_a_root_flush,
        assert_own_update_flushed, model, per_pass_gate, read_during_a_flush_of, sized, spawn_add,
        spawn_flush, spawn_root_flush, spawn_with, tree_x, tree_xy, updates_vs_root_flush,
        with_threshold,
    };
    use hierstat::sim::{Shard, Simulator};
    use hierstat::{Config, Group, HierStats, ItemId, Policy, Preset};
    use loom::thread;

    fn tree(preset: Preset) -> (HierStats, ItemId) {
        let (t, x, _) = tree2(preset);
        (t, x)
    }

    /// A tree of `shards` shards; the protocol models write shard 0, whose
    /// rows exist from the start under loom (see `table.rs`), and the
    /// first-touch models shard 1.
    fn tree_on(preset: Preset, shards: usize) -> (HierStats, ItemId) {
        tree_x(Config::preset(preset).shards(shards))
    }

    /// A tree of one shard under `p`, with the item `x`.
    fn policy_tree(p: Policy) -> (HierStats, ItemId) {
        tree_x(Config::with_policy(p).shards(1))
    }

    /// Two writers' first touches of one (group, shard) race each other and
    /// a flush: one row is allocated (under the shard's arena lock, the
    /// table entry published Release and read Acquire), both updates land
    /// in it, and a second flush finds whatever the first missed.
    #[test]
    fn first_touches_of_one_row_race_a_flush() {
        model(|| {
            let (t, x) = tree_on(Preset::Hierstat, 2);
            let g = t.create(&t.root(), "g").unwrap();
            let owner = spawn_with(&t, &g, move |t2, g2| {
                t2.add_owned_with(Shard(1), &g2, x, 2).unwrap()
            });
            let sharer = spawn_with(&t, &g, move |t3, g3| {
                t3.add_with(Shard(1), &g3, x, 1, &mut ()).unwrap()
            });
            t.flush_forced(&t.root()).unwrap();
            owner.join().unwrap();
            sharer.join().unwrap();
            assert_exact_after_a_root_flush(&t, &[(&g, x, 3)]);
        });
    }

    /// Kernel-exact accounting: a shared writer of a child first-touches
    /// the parent's row on its shard (the ancestor walk), while a flush
    /// visits the parent on that shard's dirty tree, where it may have no
    /// row yet: the bound holds at the read after both.
    #[test]
    fn an_ancestor_row_first_touched_during_a_flush() {
        model(|| {
            let (t, x) = tree_on(Preset::Linux6_8, 2);
            let (a, b) = a_and_b(&t);
            let u = spawn_with(&t, &b, move |t2, b2| {
                t2.add_with(Shard(1), &b2, x, 30, &mut ()).unwrap();
            });
            t.flush_forced(&a).unwrap();
            u.join().unwrap();
            assert_bounded_within(&t, &a, x, 30, 30);
            assert_exact_after_a_root_flush(&t, &[(&a, x, 30)]);
        });
    }

    fn tree2(preset: Preset) -> (HierStats, ItemId, ItemId) {
        tree_xy(Config::preset(preset).shards(1))
    }

    /// The owner's plain path against a flush of the same (group, shard),
    /// the engine's real code (heavy barrier modelled as `SeqCst` fences):
    /// no update is lost, whatever the interleaving.
    #[test]
    fn owner_updates_vs_flush() {
        model(|| {
            let (t, x, y) = tree2(Preset::Hierstat);
            let g = t.create(&t.root(), "g").unwrap();
            let add = move |t2: HierStats, g2: Group| {
                t2.add_owned_with(Shard(0), &g2, x, 1).unwrap();
                t2.add_owned_with(Shard(0), &g2, y, 1).unwrap();
            };
            updates_vs_root_flush(&t, &g, add, &[(&g, x, 1), (&g, y, 1)]);
        });
    }

    /// A shared-path writer claims the pair while the owner updates it and
    /// then flushes: the owner's later flush must carry its own update
    /// (the owner's Acquire header load sees the claimer's announcement).
    #[test]
    fn owner_update_survives_a_racing_shared_claimer() {
        model(|| {
            let (t, x) = tree(Preset::Hierstat);
            let g = t.create(&t.root(), "g").unwrap();
            let claimer = spawn_add(&t, &g, x, 1);
            t.add_owned_with(Shard(0), &g, x, 10).unwrap();
            assert_own_update_flushed(&t, &g, x, 10, "the owner's");
            claimer.join().unwrap();
            assert_exact_after_a_root_flush(&t, &[(&g, x, 11)]);
        });
    }

    /// The owner finds the pair queued by a shared claimer that has not
    /// pushed yet, while a third thread's flush moves the claim epoch: the
    /// owner's claim RMW must acquire the claimer's announcement (its own
    /// claim may count in the other parity), or the owner's flush misses
    /// its own update.
    #[test]
    fn owner_claim_across_a_concurrent_flush() {
        model(|| {
            let (t, x) = tree(Preset::Hierstat);
            let g = t.create(&t.root(), "g").unwrap();
            let claimer = spawn_add(&t, &g, x, 1);
            let flusher = spawn_root_flush(&t);
            t.add_owned_with(Shard(0), &g, x, 10).unwrap();
            assert_own_update_flushed(&t, &g, x, 10, "the owner's");
            claimer.join().unwrap();
            flusher.join().unwrap();
        });
    }

    /// One thread pushes two rows on the same shard's list while the flusher
    /// drains it: the second row's link to the first must be visible to the
    /// flusher (Release CAS in `push`, Acquire swap in `take_all`), or the
    /// first row is dropped from the chain while still claimed, and never
    /// flushed again.
    #[test]
    fn two_rows_pushed_by_another_thread_are_both_flushed() {
        model(|| {
            let (t, x) = tree(Preset::Hierstat);
            let a = t.create(&t.root(), "a").unwrap();
            let b = t.create(&t.root(), "b").unwrap();
            let (t2, a2, b2) = (t.clone(), a.clone(), b.clone());
            let u = thread::spawn(move || {
                t2.add_with(Shard(0), &a2, x, 1, &mut ()).unwrap();
                t2.add_with(Shard(0), &b2, x, 1, &mut ()).unwrap();
            });
            t.flush_forced(&t.root()).unwrap();
            u.join().unwrap();
            // A row dropped from the chain is lost.
            assert_exact_after_a_root_flush(&t, &[(&a, x, 1), (&b, x, 1)]);
        });
    }

    /// The updater queues the row with an update of one slot, then updates
    /// another slot and finds the row queued. The flusher synchronizes with
    /// the push, which covers only the first write: the second is visible
    /// to it only through the header's release sequence, which the pass's
    /// `SeqCst` fence after the drain acquires (without it the `load() != 0` guard reads a stale 0 and the update
    /// is neither flushed nor queued).
    #[test]
    fn an_update_after_the_push_on_another_slot_is_flushed() {
        model(|| {
            let (t, x, y) = tree2(Preset::Hierstat);
            let g = t.create(&t.root(), "g").unwrap();
            let add = move |t2: HierStats, g2: Group| {
                t2.add_with(Shard(0), &g2, y, 1, &mut ()).unwrap();
                t2.add_with(Shard(0), &g2, x, 1, &mut ()).unwrap();
            };
            updates_vs_root_flush(&t, &g, add, &[(&g, y, 1), (&g, x, 1)]);
        });
    }

    #[test]
    fn update_vs_flush_same_group_and_shard() {
        model(|| {
            let (t, x) = tree(Preset::Hierstat);
            let g = t.create(&t.root(), "g").unwrap();
            // Queue g once, so the racing update may see it queued.
            t.add_with(Shard(0), &g, x, 1, &mut ()).unwrap();
            let add = move |t2: HierStats, g2: Group| {
                t2.add_with(Shard(0), &g2, x, 1, &mut ()).unwrap();
            };
            updates_vs_root_flush(&t, &g, add, &[(&t.root(), x, 2)]);
        });
    }

    /// A claimer races this thread's update on the same (group, shard);
    /// after `flushes_before` flushes, the update, then a forced flush,
    /// this thread must read its own update whatever the claimer did.
    fn own_update_survives_a_racing_claimer(preset: Preset, flushes_before: usize) {
        model(move || {
            let (t, x) = tree(preset);
            let g = t.create(&t.root(), "g").unwrap();
            let claimer = spawn_add(&t, &g, x, 1);
            for _ in 0..flushes_before {
                t.flush_forced(&g).unwrap();
            }
            t.add_with(Shard(0), &g, x, 10, &mut ()).unwrap();
            assert_own_update_flushed(&t, &g, x, 10, "our");
            claimer.join().unwrap();
        });
    }

    /// Regression: an updater that finds its row already `QUEUED` trusts the
    /// claimer to push it. If the claimer is preempted between its claim
    /// and its push, a flush that only took the list missed the row, and
    /// with it an update that completed before the flush began (found in
    /// real mode by the stale-read scenario: a 50,000-page spike missed).
    #[test]
    fn update_seen_queued_is_flushed_by_a_later_flush_on_the_same_thread() {
        own_update_survives_a_racing_claimer(Preset::Hierstat, 0);
        // A global threshold: no snapshot phase, so no fence before the
        // flush's drain; the claim's own Acquire carries the handshake.
        own_update_survives_a_racing_claimer(Preset::Linux5_15, 0);
    }

    /// A claim that straddles an earlier flush: the claimer picks its
    /// parity, is preempted while a whole flush runs, then claims and is
    /// preempted again before pushing; an updater that finds the row
    /// queued returns, and the next flush must still wait for that claim
    /// (it catches a flusher that advances the claim epoch only once).
    #[test]
    fn a_claim_straddling_an_earlier_flush_is_still_waited_for() {
        own_update_survives_a_racing_claimer(Preset::Hierstat, 1);
        own_update_survives_a_racing_claimer(Preset::Linux5_15, 1);
    }

    #[test]
    fn two_updaters_race_to_claim() {
        model(|| {
            let (t, x) = tree(Preset::Hierstat);
            let g = t.create(&t.root(), "g").unwrap();
            let u = spawn_add(&t, &g, x, 1);
            t.add_with(Shard(0), &g, x, 1, &mut ()).unwrap();
            u.join().unwrap();
            let mut w = hierstat::sim::WorkCounters::default();
            t.flush_with(&t.root(), hierstat::FlushKind::Forced, &mut w)
                .unwrap();
            assert_eq!(w.list_pops, 1, "the row was pushed exactly once");
            assert_eq!(t.read(&g, x).unwrap(), 2);
            t.verify_clean().unwrap();
        });
    }

    /// A tree whose groups pass the threshold after one fold: `batch` 2
    /// pages, `T` = 1 page (a fold of 2 lands above it).
    fn tight_tree() -> (HierStats, ItemId) {
        policy_tree(sized(Preset::Hierstat.policy(), 2, 1))
    }

    /// One owner update of 2 to `g` (a fold) racing a forced root flush.
    fn owner_add_racing_a_root_flush(t: &HierStats, g: &Group, x: ItemId) {
        let u = spawn_with(t, g, move |t2, g2| {
            t2.add_owned_with(Shard(0), &g2, x, 2).unwrap();
        });
        t.flush_forced(&t.root()).unwrap();
        u.join().unwrap();
    }

    /// An owner's fold into a group already above the threshold may skip
    /// its counter when it sees no flush in progress. Against a flush of
    /// the group (its pair queued before): the flush carries the skipped
    /// pages, or the fold sees the flush and counts, so the bound holds
    /// afterwards (loom: skipping without looking at the flush count
    /// fails here).
    #[test]
    fn a_skipped_fold_is_carried_by_the_racing_flush() {
        model(|| {
            let (t, x) = tight_tree();
            let g = t.create(&t.root(), "g").unwrap();
            t.add_owned_with(Shard(0), &g, x, 2).unwrap();
            t.add_owned_with(Shard(0), &g, x, 2).unwrap();
            owner_add_racing_a_root_flush(&t, &g, x);
            assert_bounded_with_root(&t, &g, x, 6, 6);
        });
    }

    /// As above, with the owner's pair drained before (its update claims
    /// and pushes the pair while the flush runs): above the threshold
    /// through a child's folds, whose own flush left the parent's count.
    #[test]
    fn a_skipped_fold_with_a_claim_is_carried_by_the_racing_flush() {
        model(|| {
            let (t, x) = tight_tree();
            let g = t.create(&t.root(), "g").unwrap();
            let c = t.create(&g, "c").unwrap();
            t.add_owned_with(Shard(0), &c, x, 2).unwrap();
            t.flush_forced(&c).unwrap();
            owner_add_racing_a_root_flush(&t, &g, x);
            assert_bounded_with_root(&t, &g, x, 4, 4);
        });
    }

    /// The fold skips the root, which a sibling's queued pair puts in the
    /// flush; the owner claims its own pair during the flush, possibly
    /// after the flush took the list. Such a claim read the flush's claim
    /// epoch advance, so it sees the flush counted and does not skip
    /// (loom: a Relaxed epoch fails here).
    #[test]
    fn a_fold_whose_claim_follows_the_flushs_drain_is_counted() {
        model(|| {
            let (t, x) = tight_tree();
            let a = t.create(&t.root(), "a").unwrap();
            let g = t.create(&t.root(), "g").unwrap();
            t.add_owned_with(Shard(0), &a, x, 2).unwrap();
            owner_add_racing_a_root_flush(&t, &g, x);
            assert_bounded_within(&t, &g, x, 2, 2);
            assert_bounded_within(&t, &t.root(), x, 4, 4);
        });
    }

    #[test]
    fn two_flushers_of_overlapping_subtrees() {
        for preset in [Preset::Hierstat, Preset::Linux6_17] {
            model(move || {
                let (t, x) = tree(preset);
                let (a, b) = a_and_b(&t);
                t.add_with(Shard(0), &b, x, 1, &mut ()).unwrap();
                t.add_with(Shard(0), &a, x, 1, &mut ()).unwrap();
                let f = spawn_flush(&t, &a);
                t.flush_forced(&b).unwrap();
                f.join().unwrap();
                // a's flush covered b; whichever ran first, a is exact now.
                assert_eq!(t.read(&a, x).unwrap(), 2);
                t.verify().unwrap();
            });
        }
    }

    /// A forced flush of `/a` races a thread that adds 60 more to `/a/b`
    /// (60 already there) and then reads `/a`: the add returned before the
    /// read, so the bound must cover all 120, wherever the flush is (it may
    /// have taken `/a`'s residue and not landed it yet).
    fn a_read_during_a_flush_after_an_update(preset: Preset) {
        model(move || {
            let (t, x) = tree(preset);
            let (a, b) = a_and_b(&t);
            t.add_with(Shard(0), &b, x, 60, &mut ()).unwrap();
            read_during_a_flush_of(&t, &a, x, 120, || {
                t.add_with(Shard(0), &b, x, 60, &mut ()).unwrap();
            });
        });
    }

    #[test]
    fn a_read_during_a_flush_is_bounded_folded() {
        a_read_during_a_flush_after_an_update(Preset::Hierstat);
    }

    /// Folded scheme: an update of 10 pages (under the batch) is counted
    /// only by its pair's reservation (31 pages). A forced flush of `/g`
    /// carries it and then gives the reservation back (a Release RMW, its
    /// count unchanged: nothing folded); a read racing the flush that sees
    /// the reservation given back (Acquire) must see the aggregate that
    /// landed before it (loom: Relaxed on either side reads 0 of 10 with a
    /// bound of 0). The reader is the spawned thread: with the read on the
    /// spawning thread and nothing else before it, loom ran one
    /// interleaving only (the read after the whole flush), and both
    /// mutants survived; this way it runs 44 and fails both.
    #[test]
    fn a_reservation_given_back_comes_with_the_landed_value() {
        model(|| {
            let (t, x, g) = folding_tree(Preset::Hierstat.policy(), 32);
            t.add_with(Shard(0), &g, x, 10, &mut ()).unwrap();
            let reader = spawn_with(&t, &g, move |t2, g2| {
                assert_bounded_within(&t2, &g2, x, 10, 10);
            });
            t.flush_forced(&g).unwrap();
            reader.join().unwrap();
            assert_bounded_within(&t, &g, x, 10, 10);
        });
    }

    #[test]
    fn a_read_during_a_flush_is_bounded_kernel_exact() {
        a_read_during_a_flush_after_an_update(Preset::Linux6_8);
    }

    /// A global threshold (batch 32, one shard, two rows: the root and
    /// `g`, each holding a full residue of 31): a root flush races a thread
    /// that fills both residues again and reads the root. The residue
    /// allowance covers one fill per row; what the flush took and has not
    /// landed must be counted besides.
    #[test]
    fn a_read_during_a_root_flush_is_bounded_global() {
        model(|| {
            let (t, x) = tree(Preset::Linux5_15);
            let g = t.create(&t.root(), "g").unwrap();
            let root = t.root();
            t.add_with(Shard(0), &root, x, 31, &mut ()).unwrap();
            t.add_with(Shard(0), &g, x, 31, &mut ()).unwrap();
            let flusher = spawn_root_flush(&t);
            t.add_with(Shard(0), &root, x, 31, &mut ()).unwrap();
            t.add_with(Shard(0), &g, x, 31, &mut ()).unwrap();
            assert_bounded_within(&t, &root, x, 124, 124);
            flusher.join().unwrap();
        });
    }

    /// A reader of `/a`, a forced flush of `/a` and an updater of `/a/b`, all
    /// racing: the bound holds at the read up to the racing update's
    /// magnitude (the contract's allowance).
    #[test]
    fn a_read_racing_a_flush_and_an_update_is_bounded() {
        model(|| {
            let (t, x) = tree(Preset::Hierstat);
            let (a, b) = a_and_b(&t);
            t.add_with(Shard(0), &b, x, 20, &mut ()).unwrap();
            let flusher = spawn_flush(&t, &a);
            let updater = spawn_add(&t, &b, x, 20);
            assert_bounded_within(&t, &a, x, 20, 40);
            flusher.join().unwrap();
            updater.join().unwrap();
            assert_bounded_within(&t, &a, x, 40, 40);
        });
    }

    /// Kernel-exact: `/a` is queued (1 page), then an update of 60 to
    /// `/a/b` races a flush of `/a`, which takes `/a`'s residue. If it took
    /// the update's pages (the walk adds them to `/a`'s residue after
    /// queueing `/a/b`), it must have flushed the update too: a flush that
    /// drains before taking can take them from a row it never drained.
    /// Another 60 afterwards fill the residue again: `/a`'s bound must still
    /// cover all 121.
    #[test]
    fn an_ancestor_residue_a_flush_takes_is_flushed_with_it() {
        model(|| {
            let (t, x) = tree(Preset::Linux6_8);
            let (a, b) = a_and_b(&t);
            t.add_with(Shard(0), &a, x, 1, &mut ()).unwrap();
            let u = spawn_add(&t, &b, x, 60);
            t.flush_forced(&a).unwrap();
            u.join().unwrap();
            t.add_with(Shard(0), &b, x, 60, &mut ()).unwrap();
            assert_bounded_within(&t, &a, x, 121, 121);
            assert_bounded_within(&t, &b, x, 120, 120);
        });
    }

    /// linux-6.17 (upstream early break): a leaf above the threshold stops
    /// being counted. An update racing a flush of the leaf is either carried
    /// by it or left in no count; after the flush the bound must hold or be
    /// `None`.
    #[test]
    fn a_leaf_reset_above_the_break_level_is_never_falsely_bounded() {
        model(|| {
            let (t, x) = tree(Preset::Linux6_17);
            let leaf = t.create(&t.root(), "leaf").unwrap();
            t.add_with(Shard(0), &leaf, x, 100, &mut ()).unwrap();
            let u = spawn_add(&t, &leaf, x, 345);
            t.flush_forced(&leaf).unwrap();
            u.join().unwrap();
            assert_bounded_within(&t, &leaf, x, 445, 445);
        });
    }

    /// linux-6.17's per-pass gate lets two flushes of one group overlap,
    /// and each would snapshot the group's threshold count. If both
    /// subtracted it, the count would lose pages counted after the first
    /// reset and not yet landed: here flush A snapshots 100 pages, flush B
    /// carries and resets them, its thread adds 100 more, and A's reset
    /// would take those 100 from the count, leaving a bound of a few pages
    /// on an error of 100. One flush holds the snapshot and subtracts it
    /// (loom: without the hold this fails).
    #[test]
    fn overlapping_flushes_subtract_one_snapshot() {
        overlapping_flushes_of(Preset::Linux6_17.policy(), false);
    }

    /// The same for the global threshold's count under a per-pass gate (no
    /// preset combines the two; a policy may): two root flushes overlap,
    /// one holds the tree's snapshot.
    #[test]
    fn overlapping_root_flushes_subtract_one_global_snapshot() {
        overlapping_flushes_of(per_pass_gate(Preset::Linux5_15.policy()), true);
    }

    /// The per-group hold's Acquire half (`GroupState::hold_snapshot`): a
    /// flush that takes a group's snapshot after another flush gave it back
    /// must read the count that flush's reset left. Folded, per group, a
    /// per-pass gate (no early break: `/g` has a child and keeps its
    /// bound), batch 4: `/g` holds 100 pages. The main thread's flush of
    /// `/g` carries and resets them, then it adds 100 more to `/g`; the
    /// other thread adds 1 to `/g/c` and flushes `/g`, which is on its
    /// tree for `/g/c`'s sake (not for the main thread's push, which would
    /// carry the reset with it). Holding after the first flush's release
    /// without acquiring it, that flush reads the count as it was before
    /// the reset (100), misses the second push (its drains ran first) and
    /// its reset takes the second 100 pages from the count: `/g` read 101
    /// of 201 with a bound of 3. (The overlapping model below holds the
    /// snapshot only for the main thread's own push.)
    #[test]
    fn a_snapshot_held_after_another_flush_reads_its_reset() {
        model(|| {
            let (t, x, g) = folding_tree(per_pass_gate(Preset::Hierstat.policy()), 4);
            let c = t.create(&g, "c").unwrap();
            t.add_with(Shard(0), &g, x, 100, &mut ()).unwrap();
            let (t2, g2, c2) = (t.clone(), g.clone(), c.clone());
            let a = thread::spawn(move || {
                t2.add_with(Shard(0), &c2, x, 1, &mut ()).unwrap();
                t2.flush_forced(&g2).unwrap();
            });
            t.flush_forced(&g).unwrap();
            t.add_with(Shard(0), &g, x, 100, &mut ()).unwrap();
            a.join().unwrap();
            assert_bounded_within(&t, &g, x, 201, 201);
        });
    }

    /// A fold of 100 pages (over the batch, so it reaches the threshold
    /// count at once) races a forced root flush. Under a global threshold
    /// the flush snapshots the tree's count before its drains: if it counts
    /// the fold it must find the row the fold came from, or its reset takes
    /// 100 pages from the count that no aggregate holds (loom: a Relaxed
    /// fold and snapshot read 0 of 100 with a bound of 6 after both ended).
    #[test]
    fn a_fold_racing_a_root_flush_under_a_global_threshold() {
        fold_racing_a_root_flush(Preset::Linux5_15.policy());
    }

    /// The same per group (the group's row is on the flush's tree here;
    /// [`a_fold_counted_by_a_root_flush_is_drained_with_its_pair`] has it
    /// taken off by a subtree flush first).
    #[test]
    fn a_fold_racing_a_root_flush_per_group() {
        for preset in [Preset::Linux6_8, Preset::Linux6_17, Preset::Hierstat] {
            fold_racing_a_root_flush(preset.policy());
        }
    }

    /// One shard, batch 4 (an update of 100 folds at once) unless said,
    /// `T` = 1000 (nothing crosses it), and a group `/g` under the root.
    fn folding_tree(p: Policy, batch: u32) -> (HierStats, ItemId, Group) {
        let (t, x) = policy_tree(sized(p, batch, 1000));
        let g = t.create(&t.root(), "g").unwrap();
        (t, x, g)
    }

    fn fold_racing_a_root_flush(p: Policy) {
        model(move || {
            let (t, x, g) = folding_tree(p, 4);
            let a = spawn_root_flush(&t);
            t.add_with(Shard(0), &g, x, 100, &mut ()).unwrap();
            a.join().unwrap();
            assert_bounded_with_root(&t, &g, x, 100, 100);
        });
    }

    /// Issue #32's `Some(0)`. A flush resets each group's threshold count
    /// and reservations by the snapshot it took before its drains, so every
    /// fold or reservation its snapshot counts must come from a pair its
    /// drains then find. Here a forced flush of `/a/b` has drained and
    /// extracted the pair (so `/a/b` is on no dirty tree); an update of
    /// `add` to `/a/b` claims the pair again (push, then the reservation
    /// and, at or over the batch, the fold, into `/a/b`, `/a` and the root)
    /// while a root flush runs. If the root flush's snapshot counts the
    /// update's reservation or fold but its drains miss the push, its
    /// hand-over takes the update's accounting away while the pair stays
    /// queued and unflushed: `/a` read 1 of 11 with a bound of 0 after both
    /// ended, until a later flush drains the pair (the engine's report:
    /// `Some(0)` while completed adds are missing). The reservation and the
    /// fold are Release and the flush's `SeqCst` fence after its snapshots
    /// acquires what they published (loom: a Relaxed reservation fails the
    /// unfolded case, a Relaxed fold the folded one; x86's ordering hides
    /// both).
    fn a_claim_counted_by_a_root_flush_after_a_subtree_flush(batch: u32, add: i64) {
        model(move || {
            let (t, x) = policy_tree(sized(Preset::Hierstat.policy(), batch, 1000));
            let (a, ab) = a_and_b(&t);
            t.add_with(Shard(0), &ab, x, 1, &mut ()).unwrap();
            t.flush_forced(&ab).unwrap();
            let u = spawn_add(&t, &ab, x, add);
            t.flush_forced(&t.root()).unwrap();
            u.join().unwrap();
            let exact = 1 + add;
            assert_bounded_within(&t, &ab, x, exact, exact);
            assert_bounded_within(&t, &a, x, exact, exact);
            assert_bounded_within(&t, &t.root(), x, exact, exact);
        });
    }

    /// [`a_claim_counted_by_a_root_flush_after_a_subtree_flush`] with an
    /// update under the batch: only its reservation counts it.
    #[test]
    fn a_reservation_counted_by_a_root_flush_is_drained_with_its_pair() {
        a_claim_counted_by_a_root_flush_after_a_subtree_flush(1 << 20, 10);
    }

    /// The same with an update over the batch (4): it also folds.
    #[test]
    fn a_fold_counted_by_a_root_flush_is_drained_with_its_pair() {
        a_claim_counted_by_a_root_flush_after_a_subtree_flush(4, 10);
    }

    /// Issue #32's `Some(0)` on any host. Two shared writers of `/g`'s
    /// pair (on one shard: more writers than shards), the pair unclaimed
    /// (never written here; or drained, and its reservations given back by
    /// a flush): the first writer claims the
    /// pair for an update of item `y` (sets the shared reservation bit);
    /// the second adds 20 to item `x`, finds the bit set and returns, then
    /// reads `/g`'s `x`. Nothing of `x` is in flight, and its 20 pages
    /// (under the batch: no fold) are covered only by the first writer's
    /// reservation, which must be in the count by then: reserved after the
    /// bit was set, the read saw 0 of 20 with a bound of 0 for as long as
    /// the first writer stayed preempted in its claim, until it resumed or
    /// a flush's drain (which waits for the claim) carried the pair.
    #[test]
    fn a_writer_finding_the_pair_claimed_is_covered_by_the_claim() {
        model(|| {
            let p = with_threshold(Preset::Hierstat.policy(), 1000);
            let (t, x, y) = tree_xy(Config::with_policy(p).shards(1));
            let g = t.create(&t.root(), "g").unwrap();
            let claimer = spawn_add(&t, &g, y, 1);
            t.add_with(Shard(0), &g, x, 20, &mut ()).unwrap();
            assert_bounded_with_root(&t, &g, x, 20, 20);
            claimer.join().unwrap();
        });
    }

    /// The owner and a shared writer claim `/g`'s pair (30 pages each,
    /// under the batch) while a root flush runs. The shared writer reserves
    /// before its claim RMW (see
    /// [`a_writer_finding_the_pair_claimed_is_covered_by_the_claim`]) and
    /// may find the pair queued by the owner's claim, still pushing: a
    /// flush that counts the shared reservation learns of the shared
    /// claim, and of the owner's only through the shared claim's end. Its
    /// drain must still wait for the owner's push, or its hand-over takes
    /// the shared reservation while the pair is not drained, leaving 60
    /// pages under a bound of 31.
    #[test]
    fn a_claim_acquired_through_another_claim_is_waited_for() {
        model(|| {
            let (t, x, g) = folding_tree(Preset::Hierstat.policy(), 32);
            let owner = spawn_with(&t, &g, move |t2, g2| {
                t2.add_owned_with(Shard(0), &g2, x, 30).unwrap()
            });
            let sharer = spawn_add(&t, &g, x, 30);
            t.flush_forced(&t.root()).unwrap();
            owner.join().unwrap();
            sharer.join().unwrap();
            assert_bounded_with_root(&t, &g, x, 60, 60);
        });
    }

    /// Two forced flushes, of `/g` or of the root, overlap; the main
    /// thread adds 100 to `/g` after its own flush, before the other's
    /// ends: `/g` and the root must stay bounded at 200.
    fn overlapping_flushes_of(p: Policy, root: bool) {
        model(move || {
            let (t, x, g) = folding_tree(p, 4);
            let target = if root { t.root() } else { g.clone() };
            t.add_with(Shard(0), &g, x, 100, &mut ()).unwrap();
            let a = spawn_flush(&t, &target);
            t.flush_forced(&target).unwrap();
            t.add_with(Shard(0), &g, x, 100, &mut ()).unwrap();
            a.join().unwrap();
            assert_bounded_with_root(&t, &g, x, 200, 200);
        });
    }

    /// A flush that finds a sum past `i64::MAX` pins the aggregate and marks
    /// the item saturated; a racing reader that sees the pinned value must
    /// see the mark (the pin is a Release store after the mark, the read's
    /// load of the aggregate Acquire and the mark read after it). The bound
    /// cannot tell (it covers the unflushed pages either way): the read
    /// must never say `i64::MAX`, unsaturated.
    #[test]
    fn a_pinned_aggregate_is_never_read_without_its_saturation() {
        model(|| {
            let (t, x) = tree(Preset::Linux6_8);
            let g = t.create(&t.root(), "g").unwrap();
            t.add_with(Shard(0), &g, x, i64::MAX - 10, &mut ()).unwrap();
            t.flush_forced(&g).unwrap();
            t.add_with(Shard(0), &g, x, 50, &mut ()).unwrap();
            let flusher = spawn_flush(&t, &g);
            let b = t.read_bounded(&g, x).unwrap();
            assert!(
                b.saturated || b.signed == i64::MAX - 10,
                "read {b:?}: pinned without its saturation"
            );
            flusher.join().unwrap();
            assert!(t.read_bounded(&g, x).unwrap().saturated);
        });
    }
}

/// The per-CPU mode ([`hierstat::Mode::PerCpu`]) on the engine's real code,
/// its restartable sequences modelled (see `rseq.rs`'s `model`): a model
/// thread runs on the CPU it names, a section restarts when another
/// section committed on its CPU or a flusher's membarrier passed since it
/// armed, and the membarrier is an operation of the flusher that visits
/// every CPU (restarting the section in progress there).
mod percpu {
    use super::{
        assert_bounded_with_root, assert_exact_after_a_root_flush, assert_own_update_flushed,
        model, sized, spawn_add_on_cpu, spawn_root_flush, tree_xy, updates_vs_root_flush,
        with_threshold,
    };
    use hierstat::sim::{Shard, Simulator};
    use hierstat::{Config, Group, HierStats, ItemId, Mode, Policy, Preset};

    /// A per-CPU tree of `cpus` modelled CPUs under `p`, with two event
    /// items and a group `/g`.
    fn tree(p: Policy, cpus: usize) -> (HierStats, ItemId, ItemId, Group) {
        let (t, x, y) = tree_xy(Config::with_policy(p).shards(cpus).per_cpu(true));
        assert_eq!(t.mode(), Mode::PerCpu);
        let g = t.create(&t.root(), "g").unwrap();
        (t, x, y, g)
    }

    /// Updates on CPU 0 (two slots, the second after the first's claim)
    /// against a flush: every commit is either read by the flush or
    /// followed by a claim the next flush drains. Without the flushers'
    /// membarrier between their drain and their read, the commit and the
    /// claim check race the drain and the read (store buffering), and an
    /// update is lost.
    #[test]
    fn percpu_updates_vs_flush() {
        model(|| {
            let (t, x, y, g) = tree(Preset::Hierstat.policy(), 1);
            let add = move |t2: HierStats, g2: Group| {
                t2.add_on_cpu_with(Shard(0), &g2, x, 1).unwrap();
                t2.add_on_cpu_with(Shard(0), &g2, y, 1).unwrap();
            };
            updates_vs_root_flush(&t, &g, add, &[(&g, x, 1), (&g, y, 1)]);
        });
    }

    /// Two threads on one CPU add to the same cell: each section either
    /// commits with no other commit on the CPU since it armed, or restarts,
    /// so neither add is lost (a plain load-add-store without the restart
    /// loses one).
    #[test]
    fn percpu_two_threads_on_one_cpu_lose_nothing() {
        model(|| {
            let (t, x, _, g) = tree(Preset::Hierstat.policy(), 1);
            let u = spawn_add_on_cpu(&t, &g, x, 1);
            t.add_on_cpu_with(Shard(0), &g, x, 2).unwrap();
            u.join().unwrap();
            assert_exact_after_a_root_flush(&t, &[(&g, x, 3)]);
        });
    }

    /// A thread migrates (CPU 0, then CPU 1) while a flush runs: both rows
    /// are claimed and carried.
    #[test]
    fn percpu_migration_vs_flush() {
        model(|| {
            let (t, x, _, g) = tree(Preset::Hierstat.policy(), 2);
            let add = move |t2: HierStats, g2: Group| {
                t2.add_on_cpu_with(Shard(0), &g2, x, 1).unwrap();
                t2.add_on_cpu_with(Shard(1), &g2, x, 1).unwrap();
            };
            updates_vs_root_flush(&t, &g, add, &[(&g, x, 2)]);
        });
    }

    /// Another thread on the CPU claims the pair and may be preempted
    /// before it pushes the row; this thread's update finds the pair
    /// claimed and returns, and its own flush must still carry it: its
    /// check must acquire the claim (whose `begin_claim` the flush's drain
    /// then waits for). Under a global threshold no snapshot fence hides a
    /// Relaxed check.
    #[test]
    fn percpu_update_seen_claimed_is_flushed_by_a_later_flush() {
        for preset in [Preset::Hierstat, Preset::Linux5_15] {
            model(move || {
                let (t, x, _, g) = tree(preset.policy(), 1);
                let claimer = spawn_add_on_cpu(&t, &g, x, 1);
                t.add_on_cpu_with(Shard(0), &g, x, 10).unwrap();
                assert_own_update_flushed(&t, &g, x, 10, "our");
                claimer.join().unwrap();
            });
        }
    }

    /// Folded thresholds: this thread's 20 pages land while another thread
    /// on the CPU is claiming the pair (it set the bit first): the
    /// reservation that covers them must be in the count before the bit,
    /// as a shared writer's is (the owner's order, reserving after the
    /// push, leaves a read here with a bound of 0 for 20 unflushed).
    #[test]
    fn percpu_writer_finding_the_pair_claimed_is_covered() {
        model(|| {
            let (t, x, y, g) = tree(with_threshold(Preset::Hierstat.policy(), 1000), 1);
            let claimer = spawn_add_on_cpu(&t, &g, y, 1);
            t.add_on_cpu_with(Shard(0), &g, x, 20).unwrap();
            assert_bounded_with_root(&t, &g, x, 20, 20);
            claimer.join().unwrap();
        });
    }

    /// A fold of pages another thread on the CPU added (batch 4: the
    /// second 3-page add takes the residue below empty, whichever thread
    /// makes it): this thread's 3 pages, returned, stay bounded while the
    /// other thread's fold counts them and gives them back to the residue,
    /// for the folded and the kernel-exact schemes.
    #[test]
    fn percpu_a_fold_of_another_threads_pages() {
        for preset in [Preset::Hierstat, Preset::Linux6_8] {
            model(move || {
                let (t, x, _, g) = tree(sized(preset.policy(), 4, 1000), 1);
                let u = spawn_add_on_cpu(&t, &g, x, 3);
                t.add_on_cpu_with(Shard(0), &g, x, 3).unwrap();
                assert_bounded_with_root(&t, &g, x, 3, 6);
                u.join().unwrap();
                t.flush_forced(&t.root()).unwrap();
                assert_eq!(t.read(&g, x).unwrap(), 6);
            });
        }
    }

    /// As the owner's `a_skipped_fold_with_a_claim_is_carried_by_the_racing_flush`,
    /// per CPU: `batch` 2 and `T` = 1, so one 10-page add folds into a
    /// group already above the threshold (10 pages: more than the one
    /// residue lane's `batch − 1` in the bound could hide), and its claim
    /// (a new row) pushes the row while a root flush runs. The fold may
    /// skip the count only if it sees no flush. (It passes with the
    /// claim's fence after the push removed: see that mutant's `survives`
    /// line in `scripts/loom-mutants.sh`.)
    #[test]
    fn percpu_a_skipped_fold_with_a_claim_is_carried_by_the_racing_flush() {
        model(|| {
            let (t, x, _, g) = tree(sized(Preset::Hierstat.policy(), 2, 1), 1);
            let c = t.create(&g, "c").unwrap();
            t.add_on_cpu_with(Shard(0), &c, x, 2).unwrap();
            t.flush_forced(&c).unwrap();
            let f = spawn_root_flush(&t);
            t.add_on_cpu_with(Shard(0), &g, x, 10).unwrap();
            f.join().unwrap();
            assert_bounded_with_root(&t, &g, x, 12, 12);
        });
    }

    /// A fold (the second of two 3-page adds, batch 4) races a root flush:
    /// the bound holds after both, for both schemes.
    #[test]
    fn percpu_a_fold_racing_a_root_flush() {
        for preset in [Preset::Hierstat, Preset::Linux6_8] {
            model(move || {
                let (t, x, _, g) = tree(sized(preset.policy(), 4, 1000), 1);
                let f = spawn_root_flush(&t);
                t.add_on_cpu_with(Shard(0), &g, x, 3).unwrap();
                t.add_on_cpu_with(Shard(0), &g, x, 3).unwrap();
                f.join().unwrap();
                assert_bounded_with_root(&t, &g, x, 6, 6);
            });
        }
    }
}

/// Tolerance reads (`HierStats::read_within`): a partial flush, which
/// leaves a child subtree unflushed and reports the sum of the left bounds,
/// racing an updater, a plain bounded reader and another flush.
mod within {
    use super::{
        a_and_b, assert_bounded_within, model, per_pass_gate, spawn_add, spawn_flush, spawn_with,
        tree_x, with_threshold, within_range,
    };
    use hierstat::sim::{Shard, Simulator};
    use hierstat::{
        Config, EarlyBreak, Group, HierStats, ItemId, Policy, Preset, Tolerance, WithinFlush,
    };

    /// `/a` with two leaves on one shard: `/a/c` holds 200 (over the
    /// threshold: no bound), `/a/b` 25 (unfolded: its bound is a
    /// reservation, 31, or the kernel-exact residue allowance, 63). A read
    /// of `/a` within 70 leaves `/a/b` and carries `/a/c`; a racing update
    /// adds 5 to `/a/b`, less than what a read that lost `/a/b` would
    /// miss.
    fn tree(p: Policy) -> (HierStats, ItemId, [Group; 3]) {
        let (t, x) = tree_x(Config::with_policy(p).shards(1));
        let (a, b) = a_and_b(&t);
        let c = t.create(&a, "c").unwrap();
        t.add_with(Shard(0), &c, x, 200, &mut ()).unwrap();
        t.add_with(Shard(0), &b, x, 25, &mut ()).unwrap();
        (t, x, [a, b, c])
    }

    /// The tolerance read of `/a` within `tol` pages, checked against
    /// `lo..=hi`.
    fn read_a_within(
        t: &HierStats,
        a: &Group,
        x: ItemId,
        tol: u64,
        lo: i64,
        hi: i64,
    ) -> WithinFlush {
        let w = t.read_within(a, x, Tolerance::Absolute(tol)).unwrap();
        assert!(w.met, "not met: {w:?}");
        assert!(w.read.bound.unwrap() <= tol, "{w:?}");
        within_range(&"read_within /a", w.read.signed, w.read.bound, lo, hi);
        w.flush
    }

    /// After everything: every bound holds, a root flush is exact, and the
    /// trees are clean.
    fn settle(t: &HierStats, x: ItemId, [a, b, c]: &[Group; 3], b_total: i64) {
        assert_bounded_within(t, a, x, 200 + b_total, 200 + b_total);
        assert_bounded_within(t, b, x, b_total, b_total);
        assert_bounded_within(t, c, x, 200, 200);
        t.flush_forced(&t.root()).unwrap();
        assert_eq!(t.read_signed(a, x).unwrap(), 200 + b_total);
        t.verify_clean().unwrap();
    }

    /// A partial flush of `/a` within `tol` pages (on another thread)
    /// racing an update of `add` to `/a/b` (on a third) while this thread
    /// runs `reads`: after both, the flush must have left `/a/b` and
    /// opened `/a`, and read `/a` within its bound of 225 up to the update.
    fn a_partial_flush_vs_an_update(
        t: &HierStats,
        x: ItemId,
        [a, b]: [&Group; 2],
        tol: u64,
        add: i64,
        reads: impl FnOnce(),
    ) {
        let within = spawn_with(t, a, move |t2, a2| {
            read_a_within(&t2, &a2, x, tol, 225, 225 + add)
        });
        let updater = spawn_add(t, b, x, add);
        reads();
        let flush = within.join().unwrap();
        updater.join().unwrap();
        assert!(
            matches!(flush, WithinFlush::Partial { left: 1, opened: 1 }),
            "{flush:?}"
        );
    }

    /// The partial flush of `/a` (leaving `/a/b`) races an update of the
    /// left leaf and a reader of `/a` and `/a/c`: the tolerance read is
    /// within its bound (the left bound) of the exact value up to the
    /// racing update, the plain reads hold their contract whatever the
    /// partial flush has done (it resets `/a/c`, and `/a` by what it carried
    /// only), and so do all
    /// afterwards.
    fn partial_flush_racing_an_updater_and_a_reader(p: Policy) {
        model(move || {
            let (t, x, groups) = tree(p);
            let [a, b, c] = groups.clone();
            a_partial_flush_vs_an_update(&t, x, [&a, &b], 70, 5, || {
                assert_bounded_within(&t, &a, x, 225, 230);
                assert_bounded_within(&t, &c, x, 200, 200);
            });
            settle(&t, x, &groups, 30);
        });
    }

    /// Ours without the early break, so that `/a` has a bound a wrong
    /// reset would show (folded thresholds: the left leaf's bound is its
    /// reservation).
    fn folded() -> Policy {
        let mut p = Preset::Hierstat.policy();
        p.early_break = EarlyBreak::Off;
        p
    }

    #[test]
    fn a_partial_flush_racing_an_updater_and_a_reader_folded() {
        partial_flush_racing_an_updater_and_a_reader(folded());
    }

    /// The partial flush of `/a` (leaving `/a/b`) resets `/a`'s count and
    /// reservations by its snapshot less what `/a/b` holds (see `flush.rs`,
    /// "A partial flush's opened groups"), racing an update of `/a/b` that
    /// folds 32 pages into `/a/b` then `/a` (its residue reaches the batch)
    /// and claims the pair again, and a reader of `/a`: every read of `/a`
    /// holds its contract, and afterwards `/a`'s bound is at most `/a/b`'s
    /// plus the racing fold and reservation (counted twice when they land
    /// between `/a`'s snapshot and `/a/b`'s loads); without the reset it
    /// keeps `/a/c`'s 200 pages and the reservations of the carried pairs.
    #[test]
    fn a_partial_flush_resets_its_opened_group_by_what_it_carried() {
        // A threshold of 256 pages: the planner keeps the left counts
        // within it (see `Core::plan`), and `/a/b`'s bound after the
        // update (its fold and a second reservation: 94 pages) fits.
        let p = with_threshold(folded(), 256);
        model(move || {
            let (t, x, groups) = tree(p);
            let [a, b, c] = groups.clone();
            // 100 pages: `/a/b` is left whatever the update did first.
            a_partial_flush_vs_an_update(&t, x, [&a, &b], 100, 7, || {
                assert_bounded_within(&t, &a, x, 225, 232);
            });
            let bound_a = t.error_bound_pages(&a).unwrap();
            let bound_b = t.error_bound_pages(&b).unwrap().unwrap();
            assert!(
                bound_a.is_some_and(|p| p <= bound_b + 32 + 31),
                "/a bound {bound_a:?} after the partial flush, /a/b {bound_b}"
            );
            assert_bounded_within(&t, &c, x, 200, 200);
            settle(&t, x, &groups, 32);
        });
    }

    /// Kernel-exact (6.8): `/a`'s residue counts the left leaf's updates;
    /// the partial flush must not take it (its pages are not carried).
    #[test]
    fn a_partial_flush_racing_an_updater_and_a_reader_kernel_exact() {
        partial_flush_racing_an_updater_and_a_reader(Preset::Linux6_8.policy());
    }

    /// Under a per-pass gate (flushes of overlapping subtrees interleave by
    /// pass), a flush of the left leaf races the partial flush of `/a`.
    /// If the planner sees the leaf's flush landed (its bound 0), what that
    /// flush pushed into `/a`'s pending must reach `/a`'s aggregate through
    /// the partial flush; if not, the leaf's bound covers it.
    #[test]
    fn a_partial_flush_racing_a_flush_of_the_left_subtree() {
        let p = per_pass_gate(folded());
        model(move || {
            let (t, x, groups) = tree(p);
            let [a, b, _] = groups.clone();
            let flusher = spawn_flush(&t, &b);
            read_a_within(&t, &a, x, 70, 225, 225);
            flusher.join().unwrap();
            settle(&t, x, &groups, 25);
        });
    }

    /// A scrape of `/a` within 70 pages per group (`read_subtree_within`):
    /// one partial flush leaves `/a/b` (clean: its 25 pages are within its
    /// own budget) and carries `/a/c`; racing an update of `/a/b`, every
    /// group's result is within its bound of its exact value and its bound
    /// within budget.
    #[test]
    fn a_subtree_read_racing_an_updater() {
        model(|| {
            let (t, x, groups) = tree(folded());
            let [a, b, c] = groups.clone();
            let updater = spawn_add(&t, &b, x, 5);
            let reads = [(hierstat::ReadItem::Item(x), Tolerance::Absolute(70))];
            let mut seen = Vec::new();
            let flush = t
                .read_subtree_within(&a, &reads, hierstat::OnBusy::Wait, |g, w| {
                    seen.push((g.clone(), w[0]))
                })
                .unwrap();
            updater.join().unwrap();
            assert!(
                matches!(flush, WithinFlush::Partial { left: 1, .. }),
                "{flush:?}"
            );
            assert_eq!(seen.len(), 3);
            for (g, w) in seen {
                let (lo, hi) = if g.same(&a) {
                    (225, 230)
                } else if g.same(&b) {
                    (25, 30)
                } else {
                    assert!(g.same(&c));
                    (200, 200)
                };
                assert!(w.met && w.read.bound.unwrap() <= 70, "{}: {w:?}", g.path());
                within_range(&g.path(), w.read.signed, w.read.bound, lo, hi);
            }
            settle(&t, x, &groups, 30);
        });
    }

    /// A tolerance read that needs no flush reads the aggregate after the
    /// bound, as `read_bounded`: a value pinned by a racing flush comes
    /// with its saturation (see
    /// `a_pinned_aggregate_is_never_read_without_its_saturation`).
    #[test]
    fn a_tolerance_read_never_sees_a_pin_without_its_saturation() {
        model(|| {
            let (t, x) = tree_x(Config::preset(Preset::Linux6_8).shards(1));
            let g = t.create(&t.root(), "g").unwrap();
            t.add_with(Shard(0), &g, x, i64::MAX - 10, &mut ()).unwrap();
            t.flush_forced(&g).unwrap();
            t.add_with(Shard(0), &g, x, 50, &mut ()).unwrap();
            let flusher = spawn_flush(&t, &g);
            let w = t.read_within(&g, x, Tolerance::Absolute(u64::MAX)).unwrap();
            assert!(
                w.read.saturated || w.read.signed == i64::MAX - 10,
                "read {w:?}: pinned without its saturation"
            );
            flusher.join().unwrap();
        });
    }
}
