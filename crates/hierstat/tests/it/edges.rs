//! Edges of the overflow rules (issue #32): an update larger than the
//! largest threshold.

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
