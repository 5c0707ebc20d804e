//! Analogues of the kernel's selftests.
use crate::{tree, Items};
use hierstat::sim::{Shard, Simulator};
use hierstat::Preset;

/// BPF `cgroup_hierarchical_stats`: exact equality after a flush.
#[test]
fn three_level_exact_equality() {
    for p in Preset::ALL {
        let (t, Items { pgfault, .. }) = tree(p, 4);
        let test = t.create(&t.root(), "test").unwrap();
        let c1 = t.create(&test, "child1").unwrap();
        let c2 = t.create(&test, "child2").unwrap();
        let leaves = [
            t.create(&c1, "child1_1").unwrap(),
            t.create(&c1, "child1_2").unwrap(),
            t.create(&c2, "child2_1").unwrap(),
            t.create(&c2, "child2_2").unwrap(),
        ];
        for (i, l) in leaves.iter().enumerate() {
            for s in 0..4 {
                t.add_with(Shard(s), l, pgfault, (i * 10 + s + 1) as i64, &mut ())
                    .unwrap();
            }
        }
        t.flush_forced(&test).unwrap();
        let r = |g| t.read(g, pgfault).unwrap();
        assert_eq!(r(&c1), r(&leaves[0]) + r(&leaves[1]), "{p}");
        assert_eq!(r(&c2), r(&leaves[2]) + r(&leaves[3]), "{p}");
        assert_eq!(r(&test), r(&c1) + r(&c2), "{p}");
        t.flush_forced(&t.root()).unwrap();
        let root = t.root();
        assert!(r(&root) >= r(&test));
        for l in &leaves {
            assert!(r(l) > 0);
        }
    }
}

/// `test_kmem_memcg_deletion`: 100 children updated from several threads,
/// removed, then the parent equals the oracle.
#[test]
fn hundred_children_updated_then_removed() {
    let (t, Items { anon, file, .. }) = tree(Preset::Hierstat, 4);
    let parent = t.create(&t.root(), "parent").unwrap();
    let kids: Vec<_> = (0..100)
        .map(|i| t.create(&parent, &format!("c{i}")).unwrap())
        .collect();
    let threads = 4;
    std::thread::scope(|sc| {
        for th in 0..threads {
            let (t, kids) = (&t, &kids);
            sc.spawn(move || {
                for (i, k) in kids.iter().enumerate() {
                    for j in 0..50 {
                        t.add(k, anon, ((i + j + th) % 7) as i64 * 1000).unwrap();
                        t.add(k, file, 1).unwrap();
                    }
                }
            });
        }
    });
    let mut anon_oracle = 0u64;
    for i in 0..100 {
        for j in 0..50 {
            for th in 0..threads {
                anon_oracle += ((i + j + th) % 7) as u64 * 1000;
            }
        }
    }
    for k in kids {
        t.remove(k).unwrap();
    }
    t.flush_forced(&parent).unwrap();
    assert_eq!(t.read(&parent, anon).unwrap(), anon_oracle);
    assert_eq!(t.read(&parent, file).unwrap(), 100 * 50 * threads as u64);
    assert_eq!(t.zombies(), 0);
    t.verify().unwrap();
}
