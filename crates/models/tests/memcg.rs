//! memcg model: charging, limits, events, `memory.stat`, and the kernel
//! selftests' tolerance checks.

use models::memcg::stat_file::read_key;
use models::memcg::{
    Charge, MemcgConfig, MemcgError, MemcgId, MemcgTree, MemoryEvent, NoReclaim, Stat,
};
use models::workingset::{Lru, PolicyFlush, ShadowLayout};

const PAGE: u64 = 4096;

/// `values_close()` of `cgroup_util.h`: `|a − b| ≤ (a + b) / 100 × err`,
/// integer arithmetic, relative to the sum.
fn values_close(a: i64, b: i64, err: i64) -> bool {
    (a - b).abs() <= (a + b) / 100 * err
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
