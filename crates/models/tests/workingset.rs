//! workingset model: shadow entries, refault distance, the activation rule
//! table, refaults through the LRU with stats flushes, shadow nodes.

use hierstat::sim::Simulator as _;
use hierstat::{FlushKind, FlushOutcome, Preset};
use models::memcg::stat_file::read_key;
use models::memcg::{MemcgConfig, MemcgId, MemcgTree, Stat};
use models::workingset::{
    is_recent, workingset_lists, workingset_size, Access, Lru, LruList, LruSizes, NoFlush,
    PolicyFlush, RefaultFlush, RefaultInfo, ShadowLayout, SlotState,
};
use proptest::prelude::*;

proptest! {
    #[test]
    fn shadow_pack_unpack_round_trips(
        nodes_shift in 0u32..=10,
        bucket_order in 0u32..8,
        memcg in any::<u16>(),
        node in any::<u32>(),
        age in any::<u64>(),
        ws in any::<bool>(),
    ) {
        let l = ShadowLayout::new(nodes_shift, bucket_order);
        let node = node & ((1u32 << nodes_shift) - 1);
        let sh = l.pack(memcg, node, age, ws);
        prop_assert!(sh.is_value());
        let u = l.unpack(sh).unwrap();
        prop_assert_eq!(u.memcg, memcg);
        prop_assert_eq!(u.node, node);
        prop_assert_eq!(u.workingset, ws);
        // The timestamp keeps the bucketed, masked age.
        let b = l.bucket_order();
        prop_assert_eq!(u.eviction, ((age >> b) & l.eviction_mask()) << b);
        // A distance that fits is recovered whatever the wrap.
        let d = age % (1 << 30);
        let refault = age.wrapping_add(d);
        let got = l.refault_distance(refault, u.eviction);
        prop_assert!(got.abs_diff(d) < (1 << b), "d {} got {}", d, got);
    }
}

#[test]
fn non_value_entries_do_not_unpack() {
    let l = ShadowLayout::default();
    assert!(l.unpack(models::workingset::Shadow(0x1000)).is_none());
}

#[test]
fn refault_distance_across_counter_wrap() {
    let l = ShadowLayout::default();
    let mask = l.eviction_mask();
    assert_eq!(mask, (1 << 36) - 1);
    let evict_age = mask - 4; // 5 before the wrap of the 36-bit timestamp
    let u = l.unpack(l.pack(7, 0, evict_age, false)).unwrap();
    assert_eq!(l.refault_distance(mask + 11, u.eviction), 15);
    // The full 64-bit counter wrapping is handled the same way.
    let u = l.unpack(l.pack(7, 0, u64::MAX - 2, false)).unwrap();
    assert_eq!(l.refault_distance(4, u.eviction), 7);
}

#[test]
fn refault_distance_across_wrap_through_the_lru() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "g").unwrap();
    t.set_max(g, 64).unwrap();
    let mask = lru.layout().eviction_mask();
    lru.set_nonresident_age(g, 0, mask - 9);
    let m = lru.add_mapping(g, 0, true, 200, 1).unwrap();
    for i in 0..200 {
        lru.access(&mut t, 0, m + i, &mut NoFlush).unwrap();
    }
    assert!(lru.nonresident_age(g, 0) > mask, "the age crossed the mask");
    // Slot 0 was evicted first; every later eviction advanced the age.
    let SlotState::Shadow(sh) = lru.state(m).unwrap() else {
        panic!("slot 0 must be a shadow")
    };
    let u = lru.layout().unpack(sh).unwrap();
    // No reclaim during the refault's own charge.
    t.set_max(g, u64::MAX).unwrap();
    let age_now = lru.nonresident_age(g, 0);
    let expect = age_now - (mask - 9);
    match lru.access(&mut t, 0, m, &mut NoFlush).unwrap() {
        Access::Refault(info) => {
            assert_eq!(info.distance, expect);
            assert_eq!(
                info.distance,
                lru.layout().refault_distance(age_now, u.eviction)
            );
        }
        other => panic!("expected a refault, got {other:?}"),
    }
}

#[test]
fn activation_rule_table() {
    // active_file = 100, inactive_file = 40, active_anon = 30, inactive_anon = 20.
    let s = LruSizes {
        inactive_anon: 20,
        active_anon: 30,
        inactive_file: 40,
        active_file: 100,
    };
    // (file, swap, workingset size)
    let table = [
        (true, false, 100),
        (true, true, 150),
        (false, false, 140),
        (false, true, 170),
    ];
    for (file, swap, ws) in table {
        assert_eq!(
            workingset_size(&s, file, swap),
            ws,
            "file={file} swap={swap}"
        );
        assert!(is_recent(ws, &s, file, swap));
        assert!(!is_recent(ws + 1, &s, file, swap));
    }
}

/// A group `g` with a child `w` holding file and anon LRU lists and a
/// child `v` holding one victim page, evicted by `g`'s limit; then the
/// victim refaults with a forced flush, so that the activation rule is
/// checked against real lists.
fn refault_with(swap: bool, file: bool) -> (RefaultInfo, LruSizes) {
    let mut t =
        MemcgTree::new(MemcgConfig::new(2, 1).swap_pages(if swap { 1 << 20 } else { 0 })).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "g").unwrap();
    let v = t.create(g, "v").unwrap();
    let w = t.create(g, "w").unwrap();
    let anon = lru.add_mapping(w, 0, false, 300, 1).unwrap();
    let files = lru.add_mapping(w, 0, true, 300, 1).unwrap();
    let victim = lru.add_mapping(v, 0, file, 1, 1).unwrap();
    let mut forced = |t: &mut MemcgTree, e: MemcgId| {
        let g = t.group(e).unwrap().clone();
        Some(
            t.stats()
                .flush_with(&g, FlushKind::Forced, &mut ())
                .unwrap(),
        )
    };
    lru.access(&mut t, 0, victim, &mut forced).unwrap();
    for i in 0..300 {
        lru.access(&mut t, 0, anon + i, &mut forced).unwrap();
        lru.access(&mut t, 1, files + i, &mut forced).unwrap();
    }
    // A second touch activates the first 120 file pages; anon pages are
    // referenced, which activates them when reclaim scans them.
    for i in 0..120 {
        lru.access(&mut t, 0, files + i, &mut forced).unwrap();
    }
    // g at its limit; the next charge reclaims, v first (preorder).
    t.drain_all_stocks().unwrap();
    let usage = t.memory(g).unwrap().usage();
    t.set_max(g, usage).unwrap();
    t.charge(0, v, 0, models::memcg::Charge::Sock, 1, &mut lru)
        .unwrap();
    assert!(
        matches!(lru.state(victim).unwrap(), SlotState::Shadow(_)),
        "victim evicted"
    );
    t.set_max(g, u64::MAX).unwrap();
    let exact = lru.exact_sizes(&t, g, 0);
    match lru.access(&mut t, 0, victim, &mut forced).unwrap() {
        Access::Refault(info) => {
            assert_eq!(info.eviction_memcg, Some(g));
            (info, exact)
        }
        other => panic!("expected a refault, got {other:?}"),
    }
}

#[test]
fn refaults_follow_the_rule_with_exact_stats() {
    for (swap, file) in [(false, true), (true, true), (true, false)] {
        let (info, exact) = refault_with(swap, file);
        assert_eq!(info.swap, swap);
        assert_eq!(info.workingset_size, workingset_size(&exact, file, swap));
        assert_eq!(info.workingset_size, info.exact_workingset_size);
        assert_eq!(info.activate, info.distance <= info.workingset_size);
        assert!(!info.mismatch(), "forced flush: stats are exact");
        assert!(matches!(info.flush, Some(FlushOutcome::Flushed { .. })));
    }
    // File refault: anon counts only with swap.
    let (no_swap, _) = refault_with(false, true);
    let (with_swap, _) = refault_with(true, true);
    assert!(with_swap.workingset_size > no_swap.workingset_size);
}

#[test]
fn stale_stats_change_decisions_and_the_oracle_sees_it() {
    // linux-5.15-ratelimited: the hot path does not flush while the
    // periodic flush is on time, so the refault reads stale sizes.
    let clock = hierstat::sim::ManualClock::new(0);
    let mut t = MemcgTree::new(
        MemcgConfig::new(4, 1)
            .preset(Preset::Linux5_15Ratelimited)
            .clock(clock.clone()),
    )
    .unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "g").unwrap();
    t.set_max(g, 1000).unwrap();
    let m = lru.add_mapping(g, 0, true, 1500, 1).unwrap();
    let mut f = PolicyFlush::default();
    // Fill 1000 pages and activate them all, then stream 500 more: those
    // evict part of the workingset.
    for round in 0..2 {
        for i in 0..1000 {
            lru.access(&mut t, (i % 4) as usize, m + i, &mut f).unwrap();
        }
        let _ = round;
    }
    t.stats().flush_forced(&t.stats().root()).unwrap();
    for i in 1000..1500 {
        lru.access(&mut t, 0, m + i, &mut f).unwrap();
    }
    let mut mismatches = 0;
    let mut refaults = 0;
    for i in 0..1500 {
        if let Access::Refault(info) = lru.access(&mut t, 1, m + i, &mut f).unwrap() {
            refaults += 1;
            assert_eq!(info.flush, Some(FlushOutcome::Ratelimited));
            mismatches += u32::from(info.mismatch());
        }
    }
    assert!(refaults > 0);
    assert!(mismatches > 0, "stale sizes must flip some decisions");
    assert_eq!(lru.counters().mismatches, mismatches as u64);
    // After the ratelimit expires the hot path flushes again.
    clock.advance(5_000_000_000);
    let mut flushed = false;
    for i in 0..1500 {
        if let Access::Refault(info) = lru.access(&mut t, 1, m + i, &mut f).unwrap() {
            flushed |= matches!(info.flush, Some(FlushOutcome::Flushed { .. }));
        }
    }
    assert!(flushed);
}

#[test]
fn activation_and_restore_statistics() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "g").unwrap();
    let m = lru.add_mapping(g, 0, true, 320, 1).unwrap();
    let mut f = PolicyFlush::default();
    // 300 pages accessed twice: active. 20 once: inactive.
    for i in 0..300 {
        lru.access(&mut t, 0, m + i, &mut f).unwrap();
        lru.access(&mut t, 0, m + i, &mut f).unwrap();
    }
    for i in 300..320 {
        lru.access(&mut t, 0, m + i, &mut f).unwrap();
    }
    // Squeeze by 40 pages: the inactive list refills from the active tail
    // (workingset bit set) and some of those are evicted too.
    t.drain_all_stocks().unwrap();
    let usage = t.memory(g).unwrap().usage();
    t.set_max(g, usage - 40).unwrap();
    let extra = lru.add_mapping(g, 0, true, 1, 1).unwrap();
    lru.access(&mut t, 0, extra, &mut f).unwrap();
    assert!(lru.counters().evictions > 20);
    t.set_max(g, u64::MAX).unwrap();
    // The periodic flush has run: the refaults see current sizes.
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let mut restores = 0;
    let mut activations = 0;
    for i in 0..320 {
        if let Access::Refault(info) = lru.access(&mut t, 0, m + i, &mut f).unwrap() {
            activations += u64::from(info.activate);
            restores += u64::from(info.activate && info.workingset);
        }
    }
    assert!(activations > 0 && restores > 0, "{activations} {restores}");
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let stat = t.memory_stat(g).unwrap();
    assert_eq!(
        read_key(&stat, "workingset_activate_file"),
        Some(activations)
    );
    assert_eq!(read_key(&stat, "workingset_restore_file"), Some(restores));
    assert_eq!(
        read_key(&stat, "workingset_refault_file"),
        Some(lru.counters().refaults)
    );
    assert!(read_key(&stat, "pgdeactivate").unwrap() > 0);
    // Exact lists equal the statistics after a flush.
    let exact = lru.exact_sizes(&t, g, 0);
    assert_eq!(
        t.stat_pages(g, Stat::ActiveFile, Some(0)).unwrap(),
        exact.active_file
    );
    assert_eq!(
        t.stat_pages(g, Stat::InactiveFile, Some(0)).unwrap(),
        exact.inactive_file
    );
}

#[test]
fn eviction_names_the_reclaim_target_and_ages_ancestors() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 2)).unwrap();
    let mut lru = Lru::new(2, ShadowLayout::default());
    let p = t.create(t.root(), "p").unwrap();
    let c = t.create(p, "c").unwrap();
    t.set_max(p, 100).unwrap();
    let m = lru.add_mapping(c, 1, true, 300, 1).unwrap();
    for i in 0..300 {
        lru.access(&mut t, 0, m + i, &mut NoFlush).unwrap();
    }
    let SlotState::Shadow(sh) = lru.state(m).unwrap() else {
        panic!("evicted")
    };
    let u = lru.layout().unpack(sh).unwrap();
    assert_eq!(MemcgId(u.memcg), p, "the limit hit was p's");
    assert_eq!(u.node, 1);
    assert!(lru.nonresident_age(p, 1) >= 200);
    assert_eq!(lru.nonresident_age(t.root(), 1), lru.nonresident_age(p, 1));
    assert_eq!(lru.nonresident_age(c, 1), 0, "c was not the target");
    assert_eq!(lru.nonresident_age(p, 0), 0, "node 0 untouched");
}

#[test]
fn shadow_nodes_counted_and_shrunk() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let g = t.create(t.root(), "g").unwrap();
    t.set_max(g, 64).unwrap();
    let m = lru.add_mapping(g, 0, true, 64 * 40, 1).unwrap();
    for i in 0..64 * 40 {
        lru.access(&mut t, 0, m + i, &mut NoFlush).unwrap();
    }
    // ~64 pages resident, the rest shadows: 38+ shadow-only nodes.
    let nodes = lru.shadow_nodes(g, 0);
    assert!(nodes >= 38, "{nodes}");
    assert_eq!(nodes, lru.total_shadow_nodes());
    // With ~64 pages the shrinker allows 64 >> 3 = 8 nodes.
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let excess = lru.count_shadow_nodes(&mut t, g, 0).unwrap();
    let pages = lru.exact_sizes(&t, g, 0).total();
    assert_eq!(excess, nodes - (pages >> 3));
    let freed = lru.scan_shadow_nodes(&mut t, 0, g, 0, excess).unwrap();
    assert_eq!(freed, excess);
    assert_eq!(lru.shadow_nodes(g, 0), nodes - excess);
    t.stats().flush_forced(&t.stats().root()).unwrap();
    assert_eq!(
        read_key(&t.memory_stat(g).unwrap(), "workingset_nodereclaim"),
        Some(excess)
    );
    // A dropped shadow turns the next access into a plain miss.
    assert_eq!(lru.state(m).unwrap(), SlotState::Empty);
    assert_eq!(
        lru.access(&mut t, 0, m, &mut NoFlush).unwrap(),
        Access::Miss
    );
}

#[test]
fn removed_memcg_reparents_pages_and_stale_ids_do_not_activate() {
    let mut t = MemcgTree::new(MemcgConfig::new(1, 1)).unwrap();
    let mut lru = Lru::new(1, ShadowLayout::default());
    let p = t.create(t.root(), "p").unwrap();
    let c = t.create(p, "c").unwrap();
    t.set_max(c, 50).unwrap();
    let m = lru.add_mapping(c, 0, true, 100, 1).unwrap();
    for i in 0..100 {
        lru.access(&mut t, 0, m + i, &mut NoFlush).unwrap();
    }
    lru.remove_memcg(&mut t, c).unwrap();
    assert_eq!(lru.mapping_of(m).unwrap().owner, p);
    t.stats().flush_forced(&t.stats().root()).unwrap();
    let exact = lru.exact_sizes(&t, p, 0);
    assert_eq!(
        t.stat_pages(p, Stat::InactiveFile, Some(0)).unwrap()
            + t.stat_pages(p, Stat::ActiveFile, Some(0)).unwrap(),
        exact.inactive_file + exact.active_file
    );
    assert_eq!(
        t.memory(p).unwrap().usage(),
        exact.total() + t.stock_pages(p)
    );
    // Slot 0's shadow names the removed group: no activation.
    match lru
        .access(&mut t, 0, m, &mut PolicyFlush::default())
        .unwrap()
    {
        Access::Refault(info) => {
            assert_eq!(info.eviction_memcg, None);
            assert!(!info.activate);
        }
        other => panic!("{other:?}"),
    }
}

/// A refault that reads the eviction lruvec within a tolerance (issue 37):
/// what [`RefaultFlush::flush_lruvec`] was asked and what
/// [`MemcgTree::lruvec_within`] returned.
struct WithinReader {
    tolerance: hierstat::Tolerance,
    asked: Vec<(MemcgId, usize, Vec<LruList>)>,
    reads: Vec<Vec<hierstat::Within>>,
    flushes: Vec<hierstat::WithinFlush>,
}

impl RefaultFlush for WithinReader {
    fn flush(&mut self, _: &mut MemcgTree, _: MemcgId) -> Option<FlushOutcome> {
        panic!("a tolerance read is made by flush_lruvec");
    }

    fn flush_lruvec(
        &mut self,
        t: &mut MemcgTree,
        ev: MemcgId,
        node: usize,
        lists: &[LruList],
    ) -> Option<FlushOutcome> {
        let stats: Vec<Stat> = lists.iter().map(|l| l.stat()).collect();
        let mut out = Vec::new();
        let mut work = hierstat::sim::WorkCounters::default();
        let done = t
            .lruvec_within(ev, node, &stats, self.tolerance, &mut out, &mut work)
            .unwrap();
        self.asked.push((ev, node, lists.to_vec()));
        self.reads.push(out);
        self.flushes.push(done);
        Some(FlushOutcome::NotNeeded)
    }
}

/// Refaults of a slice's services (the slice reclaims: its shadows name
/// it) on two nodes, reading within 0, 1% and 10% of each list: each
/// refault reads the lists its workingset size sums, on its node, and each
/// list it read is within its bound of the exact list size, the bound
/// within its budget; an exact read is the exact size; a loose budget
/// leaves some services unflushed.
#[test]
fn a_refault_reads_its_lists_within_its_tolerance() {
    use hierstat::{Tolerance, WithinFlush};
    let cpus = 4;
    // No swap: a file refault reads active_file alone (with swap, the
    // anon lists, empty here, would allow no error at all).
    let mut t = MemcgTree::new(MemcgConfig::new(cpus, 2).preset(Preset::Hierstat)).unwrap();
    let mut lru = Lru::new(2, ShadowLayout::default());
    let slice = t.create(t.root(), "system.slice").unwrap();
    t.set_max(slice, 3_000).unwrap();
    let maps: Vec<u32> = (0..6)
        .map(|i| {
            let g = t.create(slice, &format!("s{i}.service")).unwrap();
            lru.add_mapping(g, i % 2, true, [6_000, 1_000][usize::from(i > 0)], 1)
                .unwrap()
        })
        .collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for (relative, absolute) in [(0.0, 0), (0.01, 0), (0.1, 8)] {
        let mut r = WithinReader {
            tolerance: Tolerance::Either { relative, absolute },
            asked: Vec::new(),
            reads: Vec::new(),
            flushes: Vec::new(),
        };
        let mut infos = Vec::new();
        for _ in 0..20_000 {
            // One busy service reading a file twice the slice's memory,
            // five quiet ones.
            let i = if next(10) < 8 {
                0
            } else {
                next(maps.len() as u64)
            };
            let len = if i == 0 { 6_000 } else { 1_000 };
            let slot = maps[i as usize] + next(len) as u32;
            let cpu = next(cpus as u64) as usize;
            if let Access::Refault(info) = lru.access(&mut t, cpu, slot, &mut r).unwrap() {
                infos.push(info);
            }
        }
        assert!(infos.len() > 1_000, "{relative}: {} refaults", infos.len());
        assert_eq!(infos.len(), r.reads.len());
        for ((info, (ev, node, lists)), reads) in infos.iter().zip(&r.asked).zip(&r.reads) {
            assert_eq!((Some(*ev), *ev), (info.eviction_memcg, slice));
            let want: Vec<LruList> = workingset_lists(info.file, info.swap).collect();
            assert_eq!(lists, &want);
            assert_eq!(reads.len(), lists.len());
            for (l, w) in lists.iter().zip(reads) {
                let (got, exact) = (info.sizes.get(*l), info.exact_sizes.get(*l));
                assert_eq!(got, w.read.value, "{l:?}: the value the refault used");
                let b = w.read.bound.unwrap();
                assert!(
                    w.met && b <= w.budget,
                    "{l:?}: bound {b} budget {}",
                    w.budget
                );
                assert!(
                    got.abs_diff(exact) <= b,
                    "{l:?} on node {node}: {got} exact {exact} bound {b}"
                );
                if relative == 0.0 {
                    assert_eq!(got, exact);
                }
            }
        }
        if relative == 0.1 {
            assert!(
                r.flushes
                    .iter()
                    .any(|f| matches!(f, WithinFlush::Partial { .. })),
                "10%: some read leaves a quiet service"
            );
            assert!(
                r.flushes.contains(&WithinFlush::None),
                "10%: some read flushes nothing"
            );
        }
    }
}
