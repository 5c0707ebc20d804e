//! Edges of the overflow rules (issue #32): an update larger than the
//! largest threshold, and a descendant's saturation against its
//! ancestors' local values.

use hierstat::sim::{Shard, Simulator};
use hierstat::{
    Config, Group, HierStats, ItemId, Policy, Preset, Schema, ThresholdSize, Unit, MAX_THRESHOLD,
};

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
