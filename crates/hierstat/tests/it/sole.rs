//! The sole writer's update, `Simulator::add_with_mut`: through `&mut` of
//! a tree's only handle it makes the shared path's read-modify-writes as
//! plain loads and stores. It must leave the tree exactly as `add_with`
//! does and report the same work (the simulator's results depend on
//! both), and fall back to `add_with` while another handle exists.

use crate::rng::Rng;
use crate::{schema, Items};
use hierstat::sim::{ManualClock, Shard, Simulator, WorkCounters};
use hierstat::{Config, FlushKind, Group, HierStats, ItemId, Preset, Tolerance};

const SHARDS: usize = 5;

/// A tree of `preset` on a manual clock (the ratelimited and periodic
/// flushes read it) with groups `/a`, `/a/x`, `/b`, `/b/y`.
fn tree(preset: Preset, clock: &ManualClock) -> (HierStats, Vec<Group>, Items) {
    let (s, items) = schema();
    let config = Config::preset(preset).shards(SHARDS).clock(clock.clone());
    let stats = HierStats::new(s, config).unwrap();
    let root = stats.root();
    let a = stats.create(&root, "a").unwrap();
    let x = stats.create(&a, "x").unwrap();
    let b = stats.create(&root, "b").unwrap();
    let y = stats.create(&b, "y").unwrap();
    (stats, vec![root, a, x, b, y], items)
}

/// Every read of every group and item, with its bound.
fn snapshot(stats: &HierStats, groups: &[Group], items: &Items) -> Vec<String> {
    let mut out = Vec::new();
    for g in groups {
        for item in [items.anon, items.file, items.pgfault] {
            out.push(format!("{} {:?}", g.path(), stats.read_bounded(g, item)));
            out.push(format!("{} {:?}", g.path(), stats.read_local(g, item)));
        }
    }
    out
}

#[test]
fn add_with_mut_leaves_the_tree_and_the_work_of_add_with() {
    for preset in Preset::ALL {
        for seed in 1..=3u64 {
            let (ca, cb) = (ManualClock::new(0), ManualClock::new(0));
            let (atomic, ga, items) = tree(preset, &ca);
            let (mut sole, gb, _) = tree(preset, &cb);
            let state: [ItemId; 2] = [items.anon, items.file];
            let mut rng = Rng(seed);
            for step in 0..crate::scaled(4000) {
                let now = step as u64 * 1_000_000;
                ca.set(now);
                cb.set(now);
                let gi = rng.below(ga.len() as u64) as usize;
                match rng.below(16) {
                    0 => {
                        let kind = [
                            FlushKind::Read,
                            FlushKind::Forced,
                            FlushKind::Ratelimited,
                            FlushKind::HotPath,
                            FlushKind::Periodic,
                        ][rng.below(5) as usize];
                        let (mut wa, mut wb) = (WorkCounters::default(), WorkCounters::default());
                        let oa = atomic.flush_with(&ga[gi], kind, &mut wa).unwrap();
                        let ob = sole.flush_with(&gb[gi], kind, &mut wb).unwrap();
                        assert_eq!((oa, wa), (ob, wb), "{preset:?} seed {seed} step {step}");
                    }
                    1 => {
                        let t = Tolerance::Absolute(rng.below(64));
                        let ra = atomic.read_within(&ga[gi], items.file, t).unwrap();
                        let rb = sole.read_within(&gb[gi], items.file, t).unwrap();
                        assert_eq!(ra, rb, "{preset:?} seed {seed} step {step}");
                    }
                    _ => {
                        let shard = Shard(rng.below(SHARDS as u64) as usize);
                        let (item, delta) = match rng.below(8) {
                            // An event.
                            0 => (items.pgfault, 1 + rng.below(4) as i64),
                            // A large update (folds directly).
                            1 => (items.file, 500 + rng.below(5000) as i64),
                            // Down (a gauge may go transiently negative).
                            2 => (state[rng.below(2) as usize], -(rng.below(40) as i64)),
                            _ => (
                                state[rng.below(2) as usize],
                                1 + rng.below(40) as i64 * 4096,
                            ),
                        };
                        let (mut wa, mut wb) = (WorkCounters::default(), WorkCounters::default());
                        atomic
                            .add_with(shard, &ga[gi], item, delta, &mut wa)
                            .unwrap();
                        sole.add_with_mut(shard, &gb[gi], item, delta, &mut wb)
                            .unwrap();
                        assert_eq!(wa, wb, "{preset:?} seed {seed} step {step}");
                    }
                }
                if step % 97 == 0 {
                    assert_eq!(snapshot(&atomic, &ga, &items), snapshot(&sole, &gb, &items));
                    atomic.verify().unwrap();
                    sole.verify().unwrap();
                }
            }
            // A sum that leaves `i64` saturates the item on both.
            for _ in 0..2 {
                let (mut wa, mut wb) = (WorkCounters::default(), WorkCounters::default());
                atomic
                    .add_with(Shard(1), &ga[2], items.file, i64::MAX, &mut wa)
                    .unwrap();
                sole.add_with_mut(Shard(1), &gb[2], items.file, i64::MAX, &mut wb)
                    .unwrap();
                assert_eq!(wa, wb);
            }
            let (mut wa, mut wb) = (WorkCounters::default(), WorkCounters::default());
            atomic
                .flush_with(&ga[0], FlushKind::Forced, &mut wa)
                .unwrap();
            sole.flush_with(&gb[0], FlushKind::Forced, &mut wb).unwrap();
            assert_eq!(wa, wb);
            assert_eq!(snapshot(&atomic, &ga, &items), snapshot(&sole, &gb, &items));
            atomic.verify_clean().unwrap();
            sole.verify_clean().unwrap();
        }
    }
}

/// While another handle exists (a clone, a counter), `add_with_mut` takes
/// the atomic path: other threads update the same shard's shared cells
/// concurrently and nothing is lost. Once they are dropped it is the sole
/// writer again.
#[test]
fn add_with_mut_shares_with_other_handles() {
    let n = crate::scaled(50_000) as i64;
    let (mut stats, items) = crate::tree(Preset::Hierstat, 2);
    let g = stats.create(&stats.root(), "g").unwrap();
    let other = stats.clone();
    let counter = stats.counter(&g, items.file).unwrap();
    std::thread::scope(|s| {
        let g2 = g.clone();
        s.spawn(move || {
            for _ in 0..n {
                other
                    .add_with(Shard(0), &g2, items.file, 1, &mut ())
                    .unwrap();
            }
        });
        s.spawn(move || {
            for _ in 0..n {
                counter.add(1).unwrap();
            }
        });
        for _ in 0..n {
            stats
                .add_with_mut(Shard(0), &g, items.file, 1, &mut ())
                .unwrap();
        }
    });
    // The other handles were dropped with their threads: sole again.
    for _ in 0..n {
        stats
            .add_with_mut(Shard(1), &g, items.file, 1, &mut ())
            .unwrap();
    }
    stats.flush_forced(&stats.root()).unwrap();
    assert_eq!(stats.read(&g, items.file).unwrap(), 4 * n as u64);
    stats.verify_clean().unwrap();
}
