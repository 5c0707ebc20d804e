//! Property tests against a sequential oracle (kernel-rstat.md §6.5).

use crate::{tree, Items};
use hierstat::sim::{Shard, Simulator};
use hierstat::{FlushKind, Group, HierStats, ItemId, Preset};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Create(usize),
    Remove(usize),
    Update {
        g: usize,
        shard: usize,
        item: usize,
        delta: i64,
    },
    Flush {
        g: usize,
        kind: u8,
    },
}

/// Mostly small updates, so that groups stay under their thresholds for a
/// while and the reported bounds are exercised (a child crossing the
/// threshold before its parent, residues building up on every shard), with
/// occasional large ones.
fn op(shards: usize) -> impl Strategy<Value = Op> {
    // Magnitudes around the batch sizes (32, 64) make folds land just
    // under or just over the thresholds, where accounting gaps show.
    let edges = prop::sample::select(vec![1i64, 2, 4, 31, 32, 33, 59, 60, 63, 64, 65, 127, 128]);
    let delta = prop_oneof![6 => 0i64..70, 4 => edges, 2 => -70i64..0, 1 => -5000i64..5000];
    prop_oneof![
        2 => (0usize..64).prop_map(Op::Create),
        2 => (0usize..64).prop_map(Op::Remove),
        16 => (0usize..64, 0..shards, 0usize..3, delta)
            .prop_map(|(g, shard, item, delta)| Op::Update { g, shard, item, delta }),
        1 => (0usize..64, 0u8..5).prop_map(|(g, kind)| Op::Flush { g, kind }),
    ]
}

/// The oracle: every group ever created, with its exact local sums.
struct Model {
    groups: Vec<Group>,
    parent: Vec<Option<usize>>,
    removed: Vec<bool>,
    local: Vec<[i64; 3]>,
    created: usize,
}

impl Model {
    fn exact(&self, g: usize, k: usize) -> i64 {
        // Subtree sum, removed descendants included (their deltas were
        // folded into the ancestors).
        (0..self.groups.len())
            .filter(|&m| self.is_in_subtree(m, g))
            .map(|m| self.local[m][k])
            .sum()
    }
    fn is_in_subtree(&self, mut m: usize, g: usize) -> bool {
        loop {
            if m == g {
                return true;
            }
            match self.parent[m] {
                Some(p) => m = p,
                None => return false,
            }
        }
    }
    fn live(&self) -> Vec<usize> {
        (0..self.groups.len())
            .filter(|&i| !self.removed[i])
            .collect()
    }
}

/// `|value − exact| ≤ bound` for every group, removed ones (still held as
/// handles) included.
fn check_bounds(t: &HierStats, m: &Model, items: &[ItemId; 3]) {
    for g in 0..m.groups.len() {
        for (k, &it) in items.iter().enumerate() {
            let b = t.read_bounded(&m.groups[g], it).unwrap();
            if let Some(bound) = b.bound {
                let got = t.read_signed(&m.groups[g], it).unwrap();
                let err = (got - m.exact(g, k)).unsigned_abs();
                assert!(
                    err <= bound,
                    "{}: item {k}: error {err} exceeds bound {bound}",
                    m.groups[g].path()
                );
            }
        }
    }
}

fn run(preset: Preset, shards: usize, ops: Vec<Op>) {
    let (
        t,
        Items {
            anon,
            file,
            pgfault,
            ..
        },
    ) = tree(preset, shards);
    let items = [anon, file, pgfault];
    let mut m = Model {
        groups: vec![t.root()],
        parent: vec![None],
        removed: vec![false],
        local: vec![[0; 3]],
        created: 0,
    };
    for o in ops {
        match o {
            Op::Create(p) => {
                let live = m.live();
                let p = live[p % live.len()];
                m.created += 1;
                let g = t.create(&m.groups[p], &format!("g{}", m.created)).unwrap();
                m.groups.push(g);
                m.parent.push(Some(p));
                m.removed.push(false);
                m.local.push([0; 3]);
            }
            Op::Remove(g) => {
                let live = m.live();
                let g = live[g % live.len()];
                let has_kids = m.live().iter().any(|&c| m.parent[c] == Some(g));
                let r = t.remove(m.groups[g].clone());
                if g == 0 || has_kids {
                    assert!(r.is_err());
                } else {
                    r.unwrap();
                    m.removed[g] = true;
                    t.verify().unwrap();
                }
            }
            Op::Update {
                g,
                shard,
                item,
                delta,
            } => {
                // Updates go to live and removed groups alike (a handle
                // survives removal).
                let g = g % m.groups.len();
                let delta = if item == 2 { delta.abs() } else { delta };
                t.add_with(Shard(shard), &m.groups[g], items[item], delta, &mut ())
                    .unwrap();
                m.local[g][item] += delta;
            }
            Op::Flush { g, kind } => {
                let live = m.live();
                let g = live[g % live.len()];
                let kind = [
                    FlushKind::Read,
                    FlushKind::Forced,
                    FlushKind::HotPath,
                    FlushKind::Ratelimited,
                    FlushKind::Periodic,
                ][kind as usize];
                t.flush_with(&m.groups[g], kind, &mut ()).unwrap();
                // Conservation and tree shape after every flush step.
                t.verify().unwrap();
                if kind == FlushKind::Forced {
                    // Exact subtree sums after a flush with no concurrent updates.
                    for n in m.live() {
                        if m.is_in_subtree(n, g) {
                            for (k, &it) in items.iter().enumerate() {
                                assert_eq!(
                                    t.read_signed(&m.groups[n], it).unwrap(),
                                    m.exact(n, k),
                                    "{} after forced flush of {}",
                                    m.groups[n].path(),
                                    m.groups[g].path()
                                );
                            }
                        }
                    }
                    // Idempotence: flushing again changes nothing.
                    let before: Vec<i64> = m
                        .live()
                        .iter()
                        .map(|&n| t.read_signed(&m.groups[n], file).unwrap())
                        .collect();
                    t.flush_forced(&m.groups[g]).unwrap();
                    let after: Vec<i64> = m
                        .live()
                        .iter()
                        .map(|&n| t.read_signed(&m.groups[n], file).unwrap())
                        .collect();
                    assert_eq!(before, after);
                }
            }
        }
        check_bounds(&t, &m, &items);
    }
    // No lost updates after quiescence and a forced root flush.
    t.flush_forced(&t.root()).unwrap();
    for g in m.live() {
        for (k, &it) in items.iter().enumerate() {
            assert_eq!(t.read_signed(&m.groups[g], it).unwrap(), m.exact(g, k));
            let v = t.read(&m.groups[g], it).unwrap();
            assert_eq!(v, m.exact(g, k).max(0) as u64, "clamped read");
        }
    }
    t.verify().unwrap();
    t.verify_clean().unwrap();
}

/// One model-based property test per preset, so that each gets its cases.
macro_rules! oracle {
    ($($name:ident => $preset:expr),* $(,)?) => {
        proptest! {
            // 100 cases each in CI (300 found the 6.17 bound gap when it was
            // reinstated); PROPTEST_CASES=N for longer runs.
            #![proptest_config(ProptestConfig { cases: cases(), .. ProptestConfig::default() })]
            $(
                #[test]
                fn $name(shards in 1usize..4, ops in proptest::collection::vec(op(3), 1..160)) {
                    let ops = ops.into_iter().map(|o| clamp_shard(o, shards)).collect();
                    run($preset, shards, ops);
                }
            )*
        }
    };
}

oracle! {
    oracle_linux_5_13 => Preset::Linux5_13,
    oracle_linux_5_15 => Preset::Linux5_15,
    oracle_linux_5_15_async => Preset::Linux5_15Async,
    oracle_linux_5_15_ratelimited => Preset::Linux5_15Ratelimited,
    oracle_linux_6_8 => Preset::Linux6_8,
    oracle_linux_6_17 => Preset::Linux6_17,
    oracle_hierstat => Preset::Hierstat,
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

fn clamp_shard(o: Op, shards: usize) -> Op {
    match o {
        Op::Update {
            g,
            shard,
            item,
            delta,
        } => Op::Update {
            g,
            shard: shard % shards,
            item,
            delta,
        },
        o => o,
    }
}
