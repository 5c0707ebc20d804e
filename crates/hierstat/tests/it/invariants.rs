//! Property tests against a sequential oracle (kernel-rstat.md §6.5).

use crate::{tree, Items};
use hierstat::{FlushKind, Group, HierStats, ItemId, Preset, Shard};
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

fn op(shards: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0usize..64).prop_map(Op::Create),
        1 => (0usize..64).prop_map(Op::Remove),
        8 => (0usize..64, 0..shards, 0usize..3, -5000i64..5000)
            .prop_map(|(g, shard, item, delta)| Op::Update { g, shard, item, delta }),
        2 => (0usize..64, 0u8..4).prop_map(|(g, kind)| Op::Flush { g, kind }),
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

fn check_bounds(t: &HierStats, m: &Model, items: &[ItemId; 3]) {
    for g in m.live() {
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
                ][kind as usize];
                t.flush_with(&m.groups[g], kind, &mut ());
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
                    t.flush_forced(&m.groups[g]);
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
    t.flush_forced(&t.root());
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

proptest! {
    // 40 cases in CI; PROPTEST_CASES=N for longer runs.
    #![proptest_config(ProptestConfig { cases: cases(), .. ProptestConfig::default() })]

    #[test]
    fn oracle_hierstat(shards in 1usize..5, ops in proptest::collection::vec(op(4), 1..120)) {
        let ops = ops.into_iter().map(|o| clamp_shard(o, shards)).collect();
        run(Preset::Hierstat, shards, ops);
    }

    #[test]
    fn oracle_every_preset(p in 0usize..7, shards in 1usize..4, ops in proptest::collection::vec(op(3), 1..80)) {
        let ops = ops.into_iter().map(|o| clamp_shard(o, shards)).collect();
        run(Preset::ALL[p], shards, ops);
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
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
