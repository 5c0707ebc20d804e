//! Three edges of the overflow rules (issue #32): an update larger than the
//! largest threshold, a descendant's saturation against its ancestors'
//! local values, and a work sink that panics in the middle of a flush or
//! an update.

use hierstat::sim::{Shard, Simulator, Work, WorkSink};
use hierstat::{
    Config, FlushKind, Group, HierStats, ItemId, Policy, Preset, Schema, ThresholdSize, Unit,
    MAX_THRESHOLD,
};
use std::sync::mpsc;
use std::time::Duration;

/// Every preset that reports bounds.
fn bounding_presets() -> impl Iterator<Item = Preset> {
    Preset::ALL.into_iter().filter(|p| *p != Preset::Linux5_13)
}

/// A tree of `policy` on `shards` shards with one event item, and `/a`,
/// `/a/b`.
fn tree_ab(policy: Policy, shards: usize, membarrier: bool) -> (HierStats, ItemId, Group, Group) {
    let mut b = Schema::builder();
    let ev = b.event("ev", Unit::Count);
    let cfg = Config::with_policy(policy)
        .shards(shards)
        .membarrier(membarrier);
    let t = HierStats::new(b.build().unwrap(), cfg).unwrap();
    let a = t.create(&t.root(), "a").unwrap();
    let ab = t.create(&a, "b").unwrap();
    (t, ev, a, ab)
}

/// Edge 1: with `T = MAX_THRESHOLD`, one update of more than 2^52 pages
/// (here 2^60 events) must put its group and every ancestor over the
/// threshold: no bound (it said `Some(2^52 + 31)` for an error of 2^60,
/// the fold being capped at 2^52, exactly `T`) and `needs_flush` true; on
/// every bounding preset, through the owner path and the shared path. An
/// update of exactly 2^52 stays at the threshold, bounded.
#[test]
fn an_update_over_the_largest_threshold_is_never_bounded_below_it() {
    for preset in bounding_presets() {
        for shared in [false, true] {
            let mut p = preset.policy();
            p.threshold_size = ThresholdSize::Fixed(MAX_THRESHOLD);
            let (t, ev, a, ab) = tree_ab(p, 2, true);
            let what = format!("{preset}, shared path {shared}");
            let add = |d: i64| {
                if shared {
                    t.add_with(Shard(1), &ab, ev, d, &mut ()).unwrap();
                } else {
                    t.add(&ab, ev, d).unwrap();
                }
            };
            add(1 << 60);
            for g in [&ab, &a, &t.root()] {
                let r = t.read_bounded(g, ev).unwrap();
                if let Some(bound) = r.bound {
                    assert!(
                        r.signed.abs_diff(1 << 60) <= bound,
                        "{what} {}: value {}, bound {bound}, exact 2^60",
                        g.path(),
                        r.signed
                    );
                }
                assert!(t.needs_flush(g).unwrap(), "{what} {}", g.path());
            }
            t.flush_forced(&t.root()).unwrap();
            assert_eq!(t.read(&ab, ev).unwrap(), 1 << 60, "{what}");
            // Exactly the threshold: bounded, and the bound covers it.
            add(MAX_THRESHOLD as i64);
            let r = t.read_bounded(&ab, ev).unwrap();
            let bound = r.bound.unwrap_or(u64::MAX);
            assert!(
                r.signed.abs_diff((1 << 60) + MAX_THRESHOLD as i64) <= bound,
                "{what}: {r:?}"
            );
        }
    }
}

/// Edge 2: a descendant's saturation must not freeze its ancestors' local
/// values (`/a`'s own 10 read 0), and a group whose own updates left
/// `i64` reads its limit locally (it read its value from before the
/// saturation), on every preset, with the saturation coming from the
/// update path (one cell) and from a flush's sum of shards.
#[test]
fn saturation_below_leaves_local_values_counting() {
    for preset in Preset::ALL {
        for membarrier in [true, false] {
            let what = format!("{preset}, membarrier {membarrier}");
            let (t, ev, a, ab) = tree_ab(preset.policy(), 2, membarrier);
            let ac = t.create(&a, "c").unwrap();
            t.add(&ab, ev, 5).unwrap();
            t.add(&a, ev, 4).unwrap();
            t.flush_forced(&t.root()).unwrap();
            assert_eq!(t.read_local(&ab, ev).unwrap(), 5, "{what}");
            // `/a/b` leaves `i64` in one cell; `/a/c` through the sum of
            // two shards that each fit.
            t.add_with(Shard(0), &ab, ev, i64::MAX, &mut ()).unwrap();
            t.add_with(Shard(0), &ac, ev, i64::MAX - 1, &mut ())
                .unwrap();
            t.add_with(Shard(1), &ac, ev, i64::MAX - 1, &mut ())
                .unwrap();
            t.add(&a, ev, 6).unwrap();
            t.flush_forced(&t.root()).unwrap();
            for g in [&ab, &ac, &a, &t.root()] {
                assert!(
                    t.read_bounded(g, ev).unwrap().saturated,
                    "{what} {}",
                    g.path()
                );
            }
            assert_eq!(
                t.read_local(&a, ev).unwrap(),
                10,
                "{what}: /a's own updates"
            );
            for g in [&ab, &ac] {
                assert_eq!(
                    t.read_local(g, ev).unwrap(),
                    i64::MAX as u64,
                    "{what} {}: its own updates left i64",
                    g.path()
                );
            }
            // And the ancestor keeps counting; the root has no own updates.
            t.add_with(Shard(1), &a, ev, 7, &mut ()).unwrap();
            t.flush_forced(&a).unwrap();
            assert_eq!(t.read_local(&a, ev).unwrap(), 17, "{what}");
            assert_eq!(t.read_local(&t.root(), ev).unwrap(), 0, "{what}");
            assert_eq!(t.read(&a, ev).unwrap(), i64::MAX as u64, "{what}");
            t.verify().unwrap();
        }
    }
}

/// A sink that panics at its `at`-th call, or counts the calls.
struct PanicAt {
    at: u64,
    calls: u64,
}

impl WorkSink for PanicAt {
    fn count(&mut self, _: Work, _: u64) {
        self.calls += 1;
        if self.calls == self.at {
            panic!("the sink panics at call {}", self.at);
        }
    }
}

/// Runs `f` on another thread and waits for it at most 30 s: a flush that
/// waits forever for a registration or a claim a panic left behind fails
/// the test instead of hanging it.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(v) => v,
        Err(_) => panic!("{what}: hung (a panicking sink left the tree waiting)"),
    }
}

/// A tree with updates pending on both shards, in `/a/b`, `/a` and `/c`;
/// returns it with the exact subtree sums of `/a/b`, `/a`, `/c`, root.
fn pending_tree(preset: Preset) -> (HierStats, ItemId, [Group; 4], [i64; 4]) {
    let (t, ev, a, ab) = tree_ab(preset.policy(), 2, true);
    let c = t.create(&t.root(), "c").unwrap();
    for s in 0..2 {
        t.add_with(Shard(s), &ab, ev, 20_000 + s as i64, &mut ())
            .unwrap();
        t.add_with(Shard(s), &a, ev, 300, &mut ()).unwrap();
        t.add_with(Shard(s), &c, ev, 7, &mut ()).unwrap();
    }
    t.add(&ab, ev, 40).unwrap();
    let root = t.root();
    (t, ev, [ab, a, c, root], [40_041, 40_641, 14, 40_655])
}

/// Every bound holds against the exact sums, now.
fn bounds_hold(t: &HierStats, ev: ItemId, groups: &[Group; 4], exact: &[i64; 4], what: &str) {
    for (g, &e) in groups.iter().zip(exact) {
        let r = t.read_bounded(g, ev).unwrap();
        if let Some(bound) = r.bound {
            assert!(
                r.signed.abs_diff(e) <= bound,
                "{what} {}: value {}, bound {bound}, exact {e}",
                g.path(),
                r.signed
            );
        }
    }
}

/// Edge 3: a sink that panics at any point of a flush (subtree or root,
/// every event of it in turn) or of an update leaves the tree whole: the
/// panic reaches the caller, every bound holds right after, an
/// overlapping flush does not wait forever for the panicked one (on
/// hierstat it stayed registered), and the next root flush lands
/// everything, exactly, leaving nothing queued (rows the flush had taken
/// stayed queued on no list, and linux-5.15 read `Some(1240)` against an
/// error of 20,343). The same for every event of an update's claim.
#[test]
fn a_panicking_work_sink_leaves_the_tree_whole() {
    for preset in Preset::ALL {
        for (target, kind) in [(1, FlushKind::Forced), (3, FlushKind::Periodic)] {
            // How many calls the flush makes to its sink.
            let (t, _, groups, _) = pending_tree(preset);
            let mut count = PanicAt { at: 0, calls: 0 };
            t.flush_with(&groups[target], kind, &mut count).unwrap();
            assert!(count.calls > 5, "{preset}: {} calls", count.calls);
            for at in 1..=count.calls {
                let what = format!(
                    "{preset}, {kind:?} flush of {}, panic at call {at}",
                    groups[target].path()
                );
                let (t, ev, groups, exact) = pending_tree(preset);
                let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    t.flush_with(&groups[target], kind, &mut PanicAt { at, calls: 0 })
                }));
                assert!(panicked.is_err(), "{what}: the panic reached the caller");
                bounds_hold(&t, ev, &groups, &exact, &what);
                let t2 = t.clone();
                within(&what, move || t2.flush_forced(&t2.root()).unwrap());
                for (g, &e) in groups.iter().zip(&exact) {
                    assert_eq!(t.read_signed(g, ev).unwrap(), e, "{what} {}", g.path());
                }
                t.verify().unwrap();
                t.verify_clean().unwrap_or_else(|v| panic!("{what}: {v}"));
            }
        }
        // An update whose claim reports to a panicking sink.
        let mut count = PanicAt { at: 0, calls: 0 };
        let (t, ev, groups, _) = pending_tree(preset);
        t.flush_forced(&t.root()).unwrap();
        t.add_with(Shard(0), &groups[0], ev, 100, &mut count)
            .unwrap();
        for at in 1..=count.calls {
            let what = format!("{preset}, update, panic at call {at}");
            let (t, ev, groups, mut exact) = pending_tree(preset);
            t.flush_forced(&t.root()).unwrap();
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                t.add_with(Shard(0), &groups[0], ev, 100, &mut PanicAt { at, calls: 0 })
            }));
            assert!(panicked.is_err(), "{what}: the panic reached the caller");
            // The update completed before its panic was resumed.
            for i in [0, 1, 3] {
                exact[i] += 100;
            }
            bounds_hold(&t, ev, &groups, &exact, &what);
            let t2 = t.clone();
            within(&what, move || t2.flush_forced(&t2.root()).unwrap());
            for (g, &e) in groups.iter().zip(&exact) {
                assert_eq!(t.read_signed(g, ev).unwrap(), e, "{what} {}", g.path());
            }
            t.verify_clean().unwrap_or_else(|v| panic!("{what}: {v}"));
        }
    }
}
