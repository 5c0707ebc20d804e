//! memcg model: charging, limits, events, `memory.stat`, and the kernel
//! selftests' tolerance checks.

mod common;

use common::values_close;
use models::memcg::stat_file::read_key;
use models::memcg::{
    Charge, MemcgConfig, MemcgError, MemcgId, MemcgTree, MemoryEvent, NoReclaim, Stat,
};
use models::workingset::{Lru, PolicyFlush, ShadowLayout, SlotState};

const PAGE: u64 = 4096;

/// A one-CPU, one-node tree with `swap_pages` pages of swap, an LRU for
/// it, and one group `g` under the root.
fn tree_with_one_group(swap_pages: u64) -> (MemcgTree, Lru, MemcgId) {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1).swap_pages(swap_pages)).unwrap();
    let lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "g").unwrap();
    (t, lru, g)
}

/// A tiny deterministic generator for the tests (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn values_close_is_relative_to_the_sum_with_integer_division() {
    assert!(values_close(100, 103, 3)); // 3 <= 203/100*3 = 6
    assert!(values_close(100, 106, 3)); // 6 <= 6
    assert!(!values_close(100, 107, 3));
    assert!(!values_close(1, 2, 3)); // (3/100)*3 = 0
}

#[test]
fn charge_uncharge_conservation() {
    let cpus = 8;
    let mut t = MemcgTree::new(MemcgConfig::new(cpus, 2)).unwrap();
    let root = t.root();
    let a = t.create(root, "a").unwrap();
    let b = t.create(a, "b").unwrap();
    let c = t.create(a, "c").unwrap();
    let d = t.create(root, "d").unwrap();
    let groups = [a, b, c, d];
    let kinds = [
        Charge::Anon,
        Charge::File,
        Charge::SlabUnreclaimable,
        Charge::Sock,
    ];
    // Outstanding charges per (group, kind, node), in pages.
    let mut out = std::collections::HashMap::<(MemcgId, usize, usize), u64>::new();
    let mut rng = Rng(7);
    for _ in 0..20_000 {
        let g = groups[rng.below(4) as usize];
        let k = rng.below(4) as usize;
        let node = rng.below(2) as usize;
        let cpu = rng.below(cpus as u64) as usize;
        let have = out.entry((g, k, node)).or_default();
        if rng.below(3) == 0 && *have > 0 {
            let n = 1 + rng.below(*have);
            t.uncharge_kind(cpu, g, node, kinds[k], n).unwrap();
            *have -= n;
        } else {
            let n = [1, 1, 2, 8, 512][rng.below(5) as usize];
            t.charge(cpu, g, node, kinds[k], n, &mut NoReclaim).unwrap();
            *have += n;
        }
    }
    let own = |g: MemcgId, out: &std::collections::HashMap<(MemcgId, usize, usize), u64>| -> u64 {
        out.iter()
            .filter(|((x, _, _), _)| *x == g)
            .map(|(_, v)| v)
            .sum()
    };
    // Usage = own charges + children + stock held for the group.
    for g in [root, a, b, c, d] {
        let kids: u64 = t
            .children(g)
            .unwrap()
            .iter()
            .map(|&k| t.memory(k).unwrap().usage())
            .sum();
        let usage = t.memory(g).unwrap().usage();
        assert_eq!(usage, own(g, &out) + kids + t.stock_pages(g), "group {g}");
        assert!(t.stock_pages(g) <= cpus as u64 * t.batch());
    }
    t.drain_all_stocks().unwrap();
    for g in groups {
        assert_eq!(t.stock_pages(g), 0);
    }
    assert_eq!(t.memory(b).unwrap().usage(), own(b, &out));
    // Exact statistics after a forced flush: per kind and node.
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let anon_b: u64 = (0..2)
        .map(|n| out.get(&(b, 0, n)).copied().unwrap_or(0))
        .sum();
    assert_eq!(t.stat_value(b, Stat::Anon).unwrap(), anon_b * PAGE);
    let n1 = out.get(&(c, 1, 1)).copied().unwrap_or(0);
    assert_eq!(
        t.stat_value_node(c, Stat::File, Some(1)).unwrap(),
        n1 * PAGE
    );
    // Uncharge everything: all counters and stats back to zero.
    for (&(g, k, node), &n) in &out {
        if n > 0 {
            t.uncharge_kind(0, g, node, kinds[k], n).unwrap();
        }
    }
    // Kernel and socket pages went back through the charge stocks
    // (`refill_stock`): they stay charged until the stocks drain.
    for g in [a, b, c, d] {
        assert_eq!(
            t.memory(g).unwrap().usage(),
            t.children(g)
                .unwrap()
                .iter()
                .map(|&k| t.memory(k).unwrap().usage())
                .sum::<u64>()
                + t.stock_pages(g),
            "group {g}"
        );
    }
    t.drain_all_stocks().unwrap();
    for g in [root, a, b, c, d] {
        assert_eq!(t.memory(g).unwrap().usage(), 0, "group {g}");
    }
    t.stats().flush_forced(&t.stats().root()).unwrap();
    for s in [
        Stat::Anon,
        Stat::File,
        Stat::Kernel,
        Stat::Sock,
        Stat::SlabUnreclaimable,
    ] {
        assert_eq!(t.stat_value(root, s).unwrap(), 0, "{s:?}");
    }
    // Uncharging more than charged is an error and changes nothing.
    let e = t.uncharge_kind(0, b, 0, Charge::Anon, 1).unwrap_err();
    assert!(matches!(e, MemcgError::Underflow { .. }), "{e}");
    assert_eq!(t.memory(b).unwrap().usage(), 0);
}

#[test]
fn max_without_reclaimable_memory_fails_with_oom_never_silently() {
    let mut t = MemcgTree::new(MemcgConfig::new(4, 1)).unwrap();
    let p = t.create(t.root(), "p").unwrap();
    let c1 = t.create(p, "c1").unwrap();
    let c2 = t.create(p, "c2").unwrap();
    t.set_max(p, 1000).unwrap();
    for i in 0..900 {
        t.charge(i % 4, c1, 0, Charge::Anon, 1, &mut NoReclaim)
            .unwrap();
    }
    // Stocks may hold pages for c1: a charge of c2 drains them first.
    let before = t.memory(p).unwrap().usage();
    assert!(before <= 1000);
    t.charge(0, c2, 0, Charge::Anon, 100, &mut NoReclaim)
        .unwrap();
    assert!(t.memory(p).unwrap().usage() <= 1000);
    let usage = t.memory(p).unwrap().usage();
    // A THP-sized charge fails without invoking the OOM killer (no `oom`
    // event: the fault falls back to small pages)...
    let err = t
        .charge(1, c2, 0, Charge::Anon, 512, &mut NoReclaim)
        .unwrap_err();
    assert!(matches!(err, MemcgError::Oom { nr: 512, .. }), "{err}");
    assert_eq!(t.events(p).unwrap().get(MemoryEvent::Oom), 0);
    // ... a small one invokes it.
    let err = t
        .charge(1, c2, 0, Charge::Anon, 8, &mut NoReclaim)
        .unwrap_err();
    assert_eq!(
        err,
        MemcgError::Oom {
            memcg: c2,
            over: p,
            nr: 8
        }
    );
    assert_eq!(
        t.memory(p).unwrap().usage(),
        usage,
        "a failed charge charges nothing"
    );
    assert!(t.memory(p).unwrap().failcnt() > 0);
    let ev = t.events(p).unwrap();
    assert_eq!(ev.get(MemoryEvent::Oom), 1);
    assert!(ev.get(MemoryEvent::Max) >= 1);
    // Hierarchical events reach the root's children only; local stays local.
    assert_eq!(t.events_local(c2).unwrap().get(MemoryEvent::Oom), 0);
    t.oom_kill(c2);
    assert_eq!(t.events(p).unwrap().get(MemoryEvent::OomKill), 1);
    assert_eq!(t.events_local(p).unwrap().get(MemoryEvent::OomKill), 0);
    assert_eq!(read_key(&t.memory_events(p).unwrap(), "oom_kill"), Some(1));
    // The statistics never saw the failed charges.
    t.stats().flush_forced(&t.stats().root()).unwrap();
    assert_eq!(t.stat_value(p, Stat::Anon).unwrap(), 1000 * PAGE);
}

#[test]
fn charge_over_max_reclaims_from_the_subtree() {
    let mut t = MemcgTree::new(MemcgConfig::new(4, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let p = t.create(t.root(), "p").unwrap();
    let c = t.create(p, "c").unwrap();
    t.set_max(p, 1000).unwrap();
    let first = lru.add_mapping(c, 0, true, 5000, 1).unwrap();
    let mut flush = PolicyFlush::default();
    for i in 0..5000 {
        lru.access(&mut t, i as usize % 4, first + i, &mut flush)
            .unwrap();
        assert!(t.memory(p).unwrap().usage() <= 1000);
    }
    assert!(lru.counters().evictions >= 4000);
    let ev = t.events(p).unwrap();
    assert!(ev.get(MemoryEvent::Max) > 0);
    assert_eq!(ev.get(MemoryEvent::Oom), 0);
    let stat = t.memory_stat(p).unwrap();
    assert!(read_key(&stat, "pgsteal").unwrap() >= 4000);
    assert!(read_key(&stat, "pgscan").unwrap() >= read_key(&stat, "pgsteal").unwrap());
    // Anonymous memory without swap cannot be reclaimed: OOM.
    let anon = lru.add_mapping(c, 0, false, 2000, 1).unwrap();
    let mut oom = None;
    for i in 0..2000 {
        if let Err(e) = lru.access(&mut t, 0, anon + i, &mut flush) {
            oom = Some(e);
            break;
        }
    }
    assert!(oom.is_some(), "anon beyond max without swap must OOM");
    assert_eq!(t.events(p).unwrap().get(MemoryEvent::Oom), 1);
}

#[test]
fn memory_high_counts_events_and_reclaims_back_under_it() {
    let mut t = MemcgTree::new(MemcgConfig::new(2, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "g").unwrap();
    t.set_high(g, 500).unwrap();
    let first = lru.add_mapping(g, 0, true, 2000, 1).unwrap();
    for i in 0..2000 {
        lru.access(&mut t, 0, first + i, &mut PolicyFlush::default())
            .unwrap();
    }
    assert!(t.memory(g).unwrap().usage() <= 500 + t.batch());
    assert!(t.events(g).unwrap().get(MemoryEvent::High) > 0);
}

#[test]
fn memory_low_protects_until_nothing_else_is_reclaimable() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let p = t.create(t.root(), "p").unwrap();
    let prot = t.create(p, "protected").unwrap();
    let other = t.create(p, "other").unwrap();
    t.set_low(prot, 400).unwrap();
    t.set_max(p, 1000).unwrap();
    let mp = lru.add_mapping(prot, 0, true, 300, 1).unwrap();
    let mo = lru.add_mapping(other, 0, true, 3000, 1).unwrap();
    let mut f = PolicyFlush::default();
    for i in 0..300 {
        lru.access(&mut t, 0, mp + i, &mut f).unwrap();
    }
    t.drain_all_stocks().unwrap();
    let protected_usage = t.memory(prot).unwrap().usage();
    for i in 0..3000 {
        lru.access(&mut t, 0, mo + i, &mut f).unwrap();
    }
    assert_eq!(t.memory(prot).unwrap().usage(), protected_usage);
    assert_eq!(t.events(prot).unwrap().get(MemoryEvent::Low), 0);
    // Now the other group fills the rest with anonymous memory (no swap:
    // unreclaimable); the next charge can only reclaim the protected group.
    for i in 0..3000 {
        lru.free(&mut t, 0, mo + i).unwrap();
    }
    let room = 1000 - t.memory(p).unwrap().usage();
    t.charge(0, other, 0, Charge::Anon, room, &mut lru).unwrap();
    t.charge(0, other, 0, Charge::Anon, 10, &mut lru).unwrap();
    assert!(t.memory(prot).unwrap().usage() < protected_usage);
    assert!(t.events(prot).unwrap().get(MemoryEvent::Low) > 0);
}

/// `alloc_anon_50M_check` and `alloc_pagecache_50M_check` of
/// `test_memcontrol.c`: anon within 3% of memory.current, file within 10%.
#[test]
fn selftest_anon_and_pagecache_50m_values_close() {
    let cpus = 16;
    let mut t = MemcgTree::new(MemcgConfig::new(cpus, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "memcg_test").unwrap();
    let pages = (50 << 20) / PAGE;
    let mut rng = Rng(3);
    for _ in 0..pages {
        let cpu = rng.below(cpus as u64) as usize;
        t.charge(cpu, g, 0, Charge::Anon, 1, &mut NoReclaim)
            .unwrap();
    }
    let current = t.memory_current(g).unwrap();
    assert!(current >= 50 << 20);
    assert!(values_close(50 << 20, current as i64, 3));
    let anon = read_key(&t.memory_stat(g).unwrap(), "anon").unwrap();
    assert!(
        values_close(anon as i64, current as i64, 3),
        "anon {anon} current {current}"
    );

    let f = t.create(t.root(), "memcg_file").unwrap();
    let m = lru.add_mapping(f, 0, true, pages as u32, 1).unwrap();
    for i in 0..pages as u32 {
        let cpu = rng.below(cpus as u64) as usize;
        lru.access(&mut t, cpu, m + i, &mut PolicyFlush::default())
            .unwrap();
    }
    let current = t.memory_current(f).unwrap();
    assert!(current >= 50 << 20);
    let file = read_key(&t.memory_stat(f).unwrap(), "file").unwrap();
    assert!(
        values_close(file as i64, current as i64, 10),
        "file {file} current {current}"
    );
}

/// `test_kmem_memcg_deletion`: 100 populated children removed; the parent's
/// anon + file + kernel + sock stays within `nr_cpus × 64` pages of
/// memory.current.
#[test]
fn selftest_kmem_memcg_deletion_within_stock_error() {
    let cpus = 8;
    let mut t = MemcgTree::new(MemcgConfig::new(cpus, 2)).unwrap();
    let parent = t.create(t.root(), "parent").unwrap();
    let kids: Vec<_> = (0..100)
        .map(|i| t.create(parent, &format!("child{i}")).unwrap())
        .collect();
    let mut rng = Rng(11);
    let kinds = [
        Charge::Anon,
        Charge::File,
        Charge::SlabReclaimable,
        Charge::SlabUnreclaimable,
        Charge::KernelStack,
        Charge::Sock,
    ];
    for &k in &kids {
        for _ in 0..200 {
            let cpu = rng.below(cpus as u64) as usize;
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            let node = rng.below(2) as usize;
            t.charge(cpu, k, node, kind, 1 + rng.below(4), &mut NoReclaim)
                .unwrap();
        }
    }
    // The parent charges too, so its own stock holds pages.
    for i in 0..cpus {
        t.charge(i, parent, 0, Charge::Anon, 3, &mut NoReclaim)
            .unwrap();
    }
    for k in kids {
        t.remove(k).unwrap();
    }
    let stat = t.memory_stat(parent).unwrap();
    let sum: u64 = ["anon", "file", "kernel", "sock"]
        .iter()
        .map(|k| read_key(&stat, k).unwrap())
        .sum();
    let current = t.memory_current(parent).unwrap();
    let max_err = PAGE * 64 * cpus as u64;
    let diff = current.abs_diff(sum);
    assert!(diff < max_err, "current {current} sum {sum} diff {diff}");
    assert!(
        current > max_err,
        "the test must charge more than its tolerance"
    );
    // The stock is the only difference once the threshold flush has run.
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let stat = t.format_memory_stat(parent).unwrap();
    let sum: u64 = ["anon", "file", "kernel", "sock"]
        .iter()
        .map(|k| read_key(&stat, k).unwrap())
        .sum();
    assert_eq!(current - sum, t.stock_pages(parent) * PAGE);
}

#[test]
fn memory_stat_and_numa_stat_formats() {
    let mut t = MemcgTree::new(MemcgConfig::new(2, 2)).unwrap();
    let s = t.create(t.root(), "system.slice").unwrap();
    let g = t.create(s, "nginx.service").unwrap();
    t.charge(0, g, 0, Charge::Anon, 100, &mut NoReclaim)
        .unwrap();
    t.charge(1, g, 1, Charge::File, 50, &mut NoReclaim).unwrap();
    t.charge(0, g, 1, Charge::SlabReclaimable, 2, &mut NoReclaim)
        .unwrap();
    t.charge(0, g, 0, Charge::SlabUnreclaimable, 1, &mut NoReclaim)
        .unwrap();
    t.mod_stat(0, g, 0, Stat::Pgfault, 150).unwrap();
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let text = t.format_memory_stat(s).unwrap();
    let keys: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(&keys[..4], ["anon", "file", "kernel", "kernel_stack"]);
    let pos = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert_eq!(pos("slab"), pos("slab_unreclaimable") + 1);
    assert_eq!(pos("pgscan") + 1, pos("pgsteal"));
    assert!(pos("workingset_refault_anon") < pos("pgfault"));
    assert_eq!(read_key(&text, "anon"), Some(100 * PAGE));
    assert_eq!(read_key(&text, "file"), Some(50 * PAGE));
    assert_eq!(read_key(&text, "kernel"), Some(3 * PAGE));
    assert_eq!(read_key(&text, "slab"), Some(3 * PAGE));
    assert_eq!(read_key(&text, "pgfault"), Some(150));
    let numa = t.memory_numa_stat(s).unwrap();
    assert!(numa
        .lines()
        .any(|l| l == format!("anon N0={} N1=0", 100 * PAGE)));
    assert!(numa
        .lines()
        .any(|l| l == format!("file N0=0 N1={}", 50 * PAGE)));
    assert!(numa
        .lines()
        .any(|l| l == format!("slab_reclaimable N0=0 N1={}", 2 * PAGE)));
    assert!(
        !numa.contains("kernel "),
        "memcg-wide items have no node split"
    );
    assert!(!numa.contains("pgfault"));
}

#[test]
fn ids_are_16_bit_and_recycled_lowest_first() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1)).unwrap();
    let a = t.create(t.root(), "a").unwrap();
    let b = t.create(t.root(), "b").unwrap();
    assert_eq!((a, b), (MemcgId(2), MemcgId(3)));
    t.remove(a).unwrap();
    assert!(!t.exists(a));
    let c = t.create(t.root(), "c").unwrap();
    assert_eq!(c, MemcgId(2));
    assert_eq!(t.lookup("/c").unwrap(), c);
    assert_eq!(t.remove(t.root()), Err(MemcgError::RemoveRoot));
}

/// A small systemd-like tree with page cache, anon, slab and sockets; the
/// parent's `memory.stat` is the sum of its children's after a flush
/// (printed with `--nocapture` for the README).
#[test]
fn memory_stat_sample_of_a_small_tree() {
    // Ours: the refault path flushes when the stats could be off by more
    // than the threshold (6.8's ratelimited path would wait for a periodic
    // flusher, which this test does not run).
    let cfg = MemcgConfig::new(4, 2)
        .swap_pages(1 << 18)
        .preset(hierstat::Preset::Hierstat);
    let mut t = MemcgTree::new(cfg).unwrap();
    let mut lru = Lru::new(2, ShadowLayout::default());
    let system = t.create(t.root(), "system.slice").unwrap();
    let nginx = t.create(system, "nginx.service").unwrap();
    let pg = t.create(system, "postgres.service").unwrap();
    t.set_max(pg, 6000).unwrap();
    let web = lru.add_mapping(nginx, 0, true, 2000, 1).unwrap();
    let db = lru.add_mapping(pg, 1, true, 8000, 1).unwrap();
    let heap = lru.add_mapping(pg, 1, false, 8, 512).unwrap();
    let mut f = PolicyFlush::default();
    let mut rng = Rng(5);
    for i in 0..8 {
        lru.access(&mut t, 1, heap + i, &mut f).unwrap();
    }
    for _ in 0..30_000 {
        let cpu = rng.below(4) as usize;
        let page = rng.below(2000) as u32;
        lru.access(&mut t, cpu, web + page.min(rng.below(2000) as u32), &mut f)
            .unwrap();
        let hot = rng.below(10) < 7;
        let p = if hot {
            rng.below(2000)
        } else {
            rng.below(8000)
        } as u32;
        lru.access(&mut t, cpu, db + p, &mut f).unwrap();
    }
    t.charge(0, nginx, 0, Charge::Sock, 40, &mut NoReclaim)
        .unwrap();
    t.charge(1, nginx, 0, Charge::SlabReclaimable, 25, &mut NoReclaim)
        .unwrap();
    t.charge(2, pg, 1, Charge::KernelStack, 4, &mut NoReclaim)
        .unwrap();
    t.charge(3, pg, 1, Charge::Pagetables, 12, &mut NoReclaim)
        .unwrap();
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let text = t.format_memory_stat(system).unwrap();
    let a = t.format_memory_stat(nginx).unwrap();
    let b = t.format_memory_stat(pg).unwrap();
    for line in text.lines() {
        let key = line.split(' ').next().unwrap();
        let sum = read_key(&a, key).unwrap() + read_key(&b, key).unwrap();
        assert_eq!(read_key(&text, key), Some(sum), "{key}");
    }
    assert!(read_key(&text, "workingset_refault_file").unwrap() > 0);
    assert!(read_key(&text, "workingset_activate_file").unwrap() > 0);
    assert!(read_key(&text, "anon_thp").unwrap() > 0);
    println!("$ cat /sys/fs/cgroup/system.slice/memory.stat\n{text}");
    println!(
        "$ cat /sys/fs/cgroup/system.slice/memory.numa_stat\n{}",
        t.memory_numa_stat(system).unwrap()
    );
    println!(
        "$ cat /sys/fs/cgroup/system.slice/postgres.service/memory.events\n{}",
        t.memory_events(pg).unwrap()
    );
    println!(
        "memory.current: system.slice {} postgres {} nginx {}",
        t.memory_current(system).unwrap(),
        t.memory_current(pg).unwrap(),
        t.memory_current(nginx).unwrap()
    );
}

/// Kernel objects through the object stock: at every point, the bytes a
/// group has charged (its usage minus what the page stock holds) are its
/// live objects plus the object stocks' bytes and its leftover; after a
/// flush and a drain, the slab statistics are exactly the live objects.
#[test]
fn object_stock_accounting_is_exact() {
    use models::memcg::{ChargeContext, ObjKind};
    let cpus = 4;
    let mut t = MemcgTree::new(MemcgConfig::new(cpus, 2)).unwrap();
    let a = t.create(t.root(), "a").unwrap();
    let b = t.create(a, "b").unwrap();
    let kinds = [
        ObjKind::SlabReclaimable,
        ObjKind::SlabUnreclaimable,
        ObjKind::Percpu,
    ];
    let mut live: Vec<(MemcgId, usize, ObjKind, u64)> = Vec::new();
    let mut rng = Rng(17);
    let mut ctx = ChargeContext::default();
    let check = |t: &MemcgTree, live: &[(MemcgId, usize, ObjKind, u64)]| {
        for g in [a, b] {
            let own: u64 = live.iter().filter(|o| o.0 == g).map(|o| o.3).sum();
            let kids: u64 = t
                .children(g)
                .unwrap()
                .iter()
                .map(|&k| t.memory(k).unwrap().usage())
                .sum();
            let charged = (t.memory(g).unwrap().usage() - kids - t.stock_pages(g)) * PAGE;
            assert_eq!(charged, own + t.obj_stock_bytes(g), "group {g}");
        }
    };
    for i in 0..5000 {
        let cpu = rng.below(cpus as u64) as usize;
        if rng.below(3) == 0 && !live.is_empty() {
            let o = live.swap_remove(rng.below(live.len() as u64) as usize);
            t.uncharge_obj(cpu, o.0, o.1, o.2, o.3).unwrap();
        } else {
            let g = [a, b][rng.below(2) as usize];
            let node = rng.below(2) as usize;
            let kind = kinds[rng.below(3) as usize];
            let bytes = [8, 192, 700, 4096, 5896, 20000][rng.below(6) as usize];
            t.charge_obj(cpu, g, node, kind, bytes, &mut NoReclaim, &mut ctx)
                .unwrap();
            live.push((g, node, kind, bytes));
        }
        if i % 97 == 0 {
            check(&t, &live);
        }
    }
    check(&t, &live);
    t.drain_all_stocks().unwrap();
    check(&t, &live);
    t.stats().flush_forced(&t.stats().root()).unwrap();
    for g in [a, b] {
        for (kind, stat) in [
            (ObjKind::SlabReclaimable, Stat::SlabReclaimable),
            (ObjKind::SlabUnreclaimable, Stat::SlabUnreclaimable),
            (ObjKind::Percpu, Stat::Percpu),
        ] {
            let sub = t.subtree(g);
            let want: u64 = live
                .iter()
                .filter(|o| sub.contains(&o.0) && o.2 == kind)
                .map(|o| o.3)
                .sum();
            assert_eq!(t.stat_value(g, stat).unwrap(), want, "{g} {stat:?}");
        }
    }
}

/// Kernel pages freed go to the freeing CPU's stock (`refill_stock`), user
/// pages leave the counters at once.
#[test]
fn kernel_pages_uncharge_through_the_stock() {
    let mut t = MemcgTree::new(MemcgConfig::new(2, 1)).unwrap();
    let g = t.create(t.root(), "g").unwrap();
    t.charge(0, g, 0, Charge::Pagetables, 50, &mut NoReclaim)
        .unwrap();
    t.charge(0, g, 0, Charge::Anon, 50, &mut NoReclaim).unwrap();
    t.drain_all_stocks().unwrap();
    assert_eq!(t.memory(g).unwrap().usage(), 100);
    t.uncharge_kind(1, g, 0, Charge::Anon, 50).unwrap();
    assert_eq!(t.memory(g).unwrap().usage(), 50);
    t.uncharge_kind(1, g, 0, Charge::Pagetables, 50).unwrap();
    assert_eq!(t.memory(g).unwrap().usage(), 50, "held by CPU 1's stock");
    assert_eq!(t.stock_pages(g), 50);
    // More than a batch in a stock drains it: CPU 1's 50 + 30 go, CPU 0
    // keeps the 34 pages its batch charge left over.
    t.charge(0, g, 0, Charge::Sock, 30, &mut NoReclaim).unwrap();
    t.uncharge_kind(1, g, 0, Charge::Sock, 30).unwrap();
    assert_eq!(t.stock_pages(g), 64 - 30);
    assert_eq!(t.memory(g).unwrap().usage(), t.stock_pages(g));
}

/// memory.peak descriptors against an oracle: each reads the highest usage
/// since its own reset, or since creation if never reset.
#[test]
fn peak_descriptors_read_the_peak_since_their_reset() {
    use models::memcg::PeakResource;
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1).batch(1)).unwrap();
    let g = t.create(t.root(), "g").unwrap();
    let fds: Vec<_> = (0..4)
        .map(|_| t.open_peak(g, PeakResource::Memory).unwrap())
        .collect();
    let mut oracle: Vec<Option<u64>> = vec![None; 4];
    let mut global = 0u64;
    let mut usage = 0u64;
    let mut rng = Rng(23);
    for _ in 0..3000 {
        match rng.below(4) {
            0 | 1 => {
                let n = 1 + rng.below(20);
                t.charge(0, g, 0, Charge::Anon, n, &mut NoReclaim).unwrap();
                usage += n;
            }
            2 if usage > 0 => {
                let n = 1 + rng.below(usage);
                t.uncharge_kind(0, g, 0, Charge::Anon, n).unwrap();
                usage -= n;
            }
            _ => {
                let i = rng.below(4) as usize;
                t.reset_peak(fds[i]).unwrap();
                oracle[i] = Some(usage);
            }
        }
        global = global.max(usage);
        for o in oracle.iter_mut().flatten() {
            *o = (*o).max(usage);
        }
        for (i, &fd) in fds.iter().enumerate() {
            let want = oracle[i].unwrap_or(global) * PAGE;
            assert_eq!(t.read_peak(fd).unwrap(), want, "fd {i}");
        }
    }
    t.close_peak(fds[0]).unwrap();
    assert!(t.read_peak(fds[0]).is_err());
}

/// memory.reclaim with swappiness=0 reclaims page cache only; with 200 it
/// takes anonymous pages too; it fails with EAGAIN when it cannot reclaim
/// what was asked.
#[test]
fn memory_reclaim_swappiness() {
    let (mut t, mut lru, g) = tree_with_one_group(1 << 20);
    let file = lru.add_mapping(g, 0, true, 2000, 1).unwrap();
    let anon = lru.add_mapping(g, 0, false, 2000, 1).unwrap();
    let mut f = PolicyFlush::default();
    for i in 0..2000 {
        lru.access(&mut t, 0, file + i, &mut f).unwrap();
        lru.access(&mut t, 0, anon + i, &mut f).unwrap();
    }
    t.memory_reclaim(0, g, 1000, Some(0), &mut lru).unwrap();
    assert_eq!(t.swap_current(g).unwrap(), 0, "swappiness=0 swapped");
    t.memory_reclaim(0, g, 1000, Some(200), &mut lru).unwrap();
    assert!(
        t.swap_current(g).unwrap() > 0,
        "swappiness=200 did not swap"
    );
    let e = t
        .memory_reclaim(0, g, 1000, Some(201), &mut lru)
        .unwrap_err();
    assert!(matches!(e, MemcgError::InvalidValue(_)), "{e}");
    // Nothing but unswappable anon left: EAGAIN.
    t.set_swap_max(g, t.swap_current(g).unwrap()).unwrap();
    let left = t.memory(g).unwrap().usage();
    assert_eq!(
        t.memory_reclaim(0, g, left, None, &mut lru).unwrap_err(),
        MemcgError::Again
    );
}

/// memory.swap.events: a swap-out refused by memory.swap.max counts `max`
/// and `fail` on the group whose limit refused, hierarchically.
#[test]
fn swap_max_refusals_count_swap_events() {
    use models::memcg::SwapEvent;
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1).swap_pages(1000)).unwrap();
    let p = t.create(t.root(), "p").unwrap();
    let c = t.create(p, "c").unwrap();
    t.set_swap_max(p, 10).unwrap();
    assert!(t.try_charge_swap(c, 8));
    assert!(!t.try_charge_swap(c, 8));
    assert_eq!(t.swap_events(p).unwrap().get(SwapEvent::Max), 1);
    assert_eq!(t.swap_events(c).unwrap().get(SwapEvent::Max), 0);
    assert_eq!(t.swap_events(p).unwrap().get(SwapEvent::Fail), 1);
    // Out of swap space: `fail` only, on the group swapping.
    t.set_swap_max(p, u64::MAX).unwrap();
    assert!(!t.try_charge_swap(c, 1000));
    assert_eq!(t.swap_events(c).unwrap().get(SwapEvent::Fail), 1);
    assert_eq!(t.memory_swap_events(p).unwrap(), "high 0\nmax 1\nfail 2\n");
}

/// memory.swap.high never reclaims: it throttles the group's allocations
/// once its swap usage is above it, counting swap `high` events.
#[test]
fn swap_high_throttles() {
    use models::machine::{Machine, MachineConfig};
    use models::memcg::SwapEvent;
    let mut m = Machine::new(MachineConfig::new(2)).unwrap();
    m.write("/", "cgroup.subtree_control", "+memory").unwrap();
    m.mkdir("/g").unwrap();
    m.write("/g", "memory.max", "8M").unwrap();
    m.write("/g", "memory.swap.high", "4M").unwrap();
    let p = m.spawn("/g").unwrap();
    let t0 = m.now_ns();
    assert!(m.alloc_anon(p, 20 << 20).is_done());
    let id = m.memcg("/g").unwrap().unwrap();
    assert!(
        m.tree().swap_current(id).unwrap() > 1024,
        "swapped past swap.high"
    );
    assert!(m.tree().swap_events(id).unwrap().get(SwapEvent::High) > 0);
    assert!(m.now_ns() > t0, "the allocating task was not throttled");
    assert_eq!(m.tree().events(id).unwrap().get(MemoryEvent::High), 0);
}

/// Writing memory.max below usage reclaims down to it; with nothing
/// reclaimable the write counts an `oom` event and reports it.
#[test]
fn writing_max_reclaims_down_to_it() {
    let (mut t, mut lru, g) = tree_with_one_group(0);
    let file = lru.add_mapping(g, 0, true, 1000, 1).unwrap();
    let mut f = PolicyFlush::default();
    for i in 0..1000 {
        lru.access(&mut t, 0, file + i, &mut f).unwrap();
    }
    t.charge(0, g, 0, Charge::Anon, 100, &mut NoReclaim)
        .unwrap();
    assert!(t.write_max(0, g, 500, &mut lru).unwrap());
    assert!(t.memory(g).unwrap().usage() <= 500);
    assert!(!t.write_max(0, g, 50, &mut lru).unwrap());
    assert_eq!(t.events(g).unwrap().get(MemoryEvent::Oom), 1);
    assert!(t.memory(g).unwrap().usage() >= 100);
}

/// The selftest's shape on the tree alone: reclaiming A spreads over B's
/// children by their protected scan targets; C and D keep about their
/// effective low (33 and 16 of 50), E gives everything.
#[test]
fn overcommitted_low_is_shared_by_the_children() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let a = t.create(t.root(), "a").unwrap();
    let b = t.create(a, "b").unwrap();
    let kids: Vec<_> = (0..3)
        .map(|i| t.create(b, &format!("c{i}")).unwrap())
        .collect();
    let mut f = PolicyFlush::default();
    for &k in &kids {
        let m = lru.add_mapping(k, 0, true, 5000, 1).unwrap();
        for i in 0..5000 {
            lru.access(&mut t, 0, m + i, &mut f).unwrap();
        }
    }
    t.drain_all_stocks().unwrap();
    t.set_low(b, 5000).unwrap();
    t.set_low(kids[0], 7500).unwrap();
    t.set_low(kids[1], 2500).unwrap();
    let e = t.effective_protection(a);
    assert_eq!(e[&kids[0]].low, 3333);
    assert_eq!(e[&kids[1]].low, 1666);
    assert_eq!(e[&kids[2]].low, 0);
    // Reclaim 10,000 pages from A in the kernel's 32-page steps.
    let mut got = 0;
    while got < 10_000 {
        got += t.try_to_free_pages(0, a, 32, &Default::default(), &mut lru);
    }
    let u: Vec<u64> = kids.iter().map(|&k| t.memory(k).unwrap().usage()).collect();
    assert!(u[2] < 200, "{u:?}");
    assert!((2500..=3700).contains(&u[0]), "{u:?}");
    assert!((1500..=2700).contains(&u[1]), "{u:?}");
    assert_eq!(t.events(kids[0]).unwrap().get(MemoryEvent::Low), 0);
}

/// A THP swapped out whole counts `thp_swpout`; small pages do not.
#[test]
fn whole_thp_swap_out_counts_thp_swpout() {
    let (mut t, mut lru, g) = tree_with_one_group(1 << 16);
    let heap = lru.add_mapping(g, 0, false, 4, 512).unwrap();
    let small = lru.add_mapping(g, 0, false, 512, 1).unwrap();
    let mut f = PolicyFlush::default();
    for i in 0..4 {
        lru.access(&mut t, 0, heap + i, &mut f).unwrap();
    }
    for i in 0..512 {
        lru.access(&mut t, 0, small + i, &mut f).unwrap();
    }
    let sc = models::memcg::ScanControl::default();
    let usage = t.memory(g).unwrap().usage();
    while t.memory(g).unwrap().usage() > usage / 4 {
        assert!(t.try_to_free_pages(0, g, 512, &sc, &mut lru) > 0);
    }
    let stat = t.memory_stat(g).unwrap();
    let swapped_thps = (0..4)
        .filter(|&i| !matches!(lru.state(heap + i).unwrap(), SlotState::Resident))
        .count() as u64;
    assert!(swapped_thps > 0);
    assert_eq!(read_key(&stat, "thp_swpout"), Some(swapped_thps));
}
