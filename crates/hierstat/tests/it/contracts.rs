//! The engine's promises, each tested where it was once broken: error
//! bounds per preset, handle identity, path syntax, reaping, and the lock
//! order under every flush kind racing `verify` and structure changes.

use crate::{schema, tree, Items};
use hierstat::sim::{Shard, Simulator, WorkCounters};
use hierstat::{Config, Error, FlushKind, HierStats, ItemId, Preset, Schema, Unit};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Asserts `|signed − exact| ≤ bound` whenever a bound is reported.
fn assert_within(t: &HierStats, g: &hierstat::Group, item: ItemId, exact: i64, what: &str) {
    let b = t.read_bounded(g, item).unwrap();
    assert_eq!(b.signed, t.read_signed(g, item).unwrap());
    assert_eq!(b.value, t.read(g, item).unwrap());
    if let Some(bound) = b.bound {
        let err = (b.signed - exact).unsigned_abs();
        assert!(
            err <= bound,
            "{what}: {} reads {} against exact {exact}: error {err} > bound {bound}",
            g.path(),
            b.signed
        );
        assert!(
            b.value.abs_diff(exact.max(0) as u64) <= bound,
            "{what}: clamped value outside the bound"
        );
    }
}

/// Repro 2 (linux-6.17): a child crossing the threshold stops the early-break
/// walk, so the parent's count stopped while its unflushed total grew.
#[test]
fn a_child_over_the_threshold_does_not_leave_its_parent_falsely_bounded() {
    for p in Preset::ALL {
        let (t, Items { file, .. }) = tree(p, 1);
        let g = t.create(&t.root(), "g").unwrap();
        let a = t.create(&g, "a").unwrap();
        let mut exact = 0;
        for (grp, d) in [(&g, 60), (&a, 4), (&a, 59), (&a, 2), (&a, 1000)] {
            t.add_with(Shard(0), grp, file, d, &mut ()).unwrap();
            exact += d;
            assert_within(&t, &g, file, exact, p.name());
            assert_within(&t, &t.root(), file, exact, p.name());
        }
    }
}

/// Repro 3 (linux-5.15): removed groups still hold residues, which the
/// global bound must count.
#[test]
fn the_global_bound_counts_removed_groups_kept_as_handles() {
    for p in Preset::ALL {
        let (t, Items { file, .. }) = tree(p, 1);
        let z = t.create(&t.root(), "z").unwrap();
        t.remove(z.clone()).unwrap();
        t.add_with(Shard(0), &t.root(), file, 31, &mut ()).unwrap();
        assert_within(&t, &t.root(), file, 31, p.name());
        t.add_with(Shard(0), &z, file, 31, &mut ()).unwrap();
        assert_within(&t, &t.root(), file, 62, p.name());
    }
}

/// Negative state totals: the signed read is bounded, the clamped one too.
#[test]
fn a_negative_gauge_is_bounded_signed_and_clamped() {
    for p in Preset::ALL {
        let (t, Items { file, .. }) = tree(p, 2);
        let g = t.create(&t.root(), "g").unwrap();
        t.add_with(Shard(0), &g, file, -5, &mut ()).unwrap();
        t.flush_forced(&t.root()).unwrap();
        let b = t.read_bounded(&g, file).unwrap();
        assert_eq!((b.value, b.signed), (0, -5), "{p}");
        t.add_with(Shard(1), &g, file, 3, &mut ()).unwrap();
        assert_within(&t, &g, file, -2, p.name());
    }
}

/// Repro 4: handles of another tree are refused everywhere, and nothing
/// changes in either tree.
#[test]
fn foreign_groups_are_refused_by_every_entry_point() {
    for p in Preset::ALL {
        let (a, Items { file, lru, .. }) = tree(p, 2);
        // B has another shard count: a foreign row index would overflow.
        let (b, _) = tree(p, 5);
        let mine = a.create(&a.root(), "x").unwrap();
        let theirs = b.create(&b.root(), "x").unwrap();
        let deep = b.create(&theirs, "y").unwrap();
        b.add(&deep, file, 7).unwrap();
        let foreign = |r: Result<(), Error>| {
            assert!(
                matches!(r, Err(Error::ForeignGroup(_))),
                "{p}: expected ForeignGroup, got {r:?}"
            );
        };
        for g in [&theirs, &deep, &b.root()] {
            foreign(a.add(g, file, 1));
            foreign(a.add_with(Shard(0), g, file, 1, &mut ()));
            foreign(a.add_node(g, lru, 0, 1));
            foreign(a.add_node_with(Shard(1), g, lru, 1, 1, &mut ()));
            foreign(a.read(g, file).map(drop));
            foreign(a.read_signed(g, file).map(drop));
            foreign(a.read_local(g, file).map(drop));
            foreign(a.read_node(g, lru, Some(0)).map(drop));
            foreign(a.read_node_local(g, lru, None).map(drop));
            foreign(a.read_bounded(g, file).map(drop));
            foreign(a.error_bound_pages(g).map(drop));
            foreign(a.needs_flush(g).map(drop));
            foreign(a.flush(g).map(drop));
            foreign(a.flush_forced(g).map(drop));
            foreign(a.flush_ratelimited(g).map(drop));
            foreign(a.flush_hot_path(g).map(drop));
            foreign(a.hot_path_decision(g).map(drop));
            foreign(a.hot_path_decision_with_flusher(g, true).map(drop));
            for kind in [
                FlushKind::Read,
                FlushKind::Forced,
                FlushKind::Ratelimited,
                FlushKind::HotPath,
                FlushKind::Periodic,
            ] {
                let mut w = WorkCounters::default();
                foreign(a.flush_with(g, kind, &mut w).map(drop));
                assert_eq!(
                    w,
                    WorkCounters::default(),
                    "{p}: work done for a foreign group"
                );
            }
            foreign(a.create(g, "child").map(drop));
            foreign(a.children(g).map(drop));
        }
        foreign(a.remove(theirs.clone()));
        foreign(a.remove(deep.clone()));
        // Nothing changed: A is empty, B has exactly its one update, and
        // both trees are clean once flushed.
        assert_eq!(a.len(), 2, "{p}");
        assert_eq!(b.len(), 3, "{p}");
        a.flush_forced(&a.root()).unwrap();
        b.flush_forced(&b.root()).unwrap();
        assert_eq!(a.read(&mine, file).unwrap(), 0, "{p}");
        assert_eq!(a.read(&a.root(), file).unwrap(), 0, "{p}");
        assert_eq!(b.read(&b.root(), file).unwrap(), 7, "{p}");
        // B's group is not stuck queued: later updates are flushed.
        b.add(&deep, file, 1).unwrap();
        b.flush_forced(&b.root()).unwrap();
        assert_eq!(b.read(&theirs, file).unwrap(), 8, "{p}");
        a.verify_clean().unwrap();
        b.verify_clean().unwrap();
        a.verify().unwrap();
        b.verify().unwrap();
    }
}

/// Item handles of a schema with other items are refused; handles of a
/// schema built by the same definitions are the same items.
#[test]
fn foreign_item_ids_are_refused_and_identical_schemas_share_ids() {
    let (t, Items { file, lru, .. }) = tree(Preset::Hierstat, 2);
    let g = t.create(&t.root(), "g").unwrap();
    // Same index (1) as `file`, another definition.
    let mut ob = Schema::builder();
    ob.state("anon", Unit::Bytes);
    let other_file = ob.state("file", Unit::Bytes);
    let other_lru = ob.node_state("lru", Unit::Pages);
    let far = (0..40)
        .map(|i| ob.event(&format!("e{i}"), Unit::Count))
        .last()
        .unwrap();
    let other = ob.build().unwrap();
    for id in [other_file, far] {
        for r in [
            t.add(&g, id, 1),
            t.read(&g, id).map(drop),
            t.read_local(&g, id).map(drop),
            t.read_signed(&g, id).map(drop),
            t.read_bounded(&g, id).map(drop),
            t.add_with(Shard(0), &g, id, 1, &mut ()),
            t.schema().info(id).map(drop),
        ] {
            assert!(matches!(r, Err(Error::ForeignItem(_))), "{r:?}");
        }
    }
    for r in [
        t.add_node(&g, other_lru, 0, 1),
        t.read_node(&g, other_lru, Some(0)).map(drop),
        t.read_node_local(&g, other_lru, None).map(drop),
        t.schema().node_info(other_lru).map(drop),
    ] {
        assert!(matches!(r, Err(Error::ForeignItem(_))), "{r:?}");
    }
    assert!(other.info(file).is_err());
    assert!(other.node_info(lru).is_err());
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read(&t.root(), file).unwrap(), 0, "nothing was added");
    // The same definitions give interchangeable ids.
    let (same, same_items) = schema();
    assert_eq!(same.item("file").unwrap(), file);
    assert_eq!(same_items.file, file);
    t.add(&g, same_items.file, 3).unwrap();
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read(&g, file).unwrap(), 3);
}

/// One group, one path: non-canonical spellings are errors, not aliases.
#[test]
fn lookup_accepts_canonical_paths_only() {
    let (t, _) = tree(Preset::Hierstat, 1);
    let a = t.create(&t.root(), "a").unwrap();
    let b = t.create(&a, "b").unwrap();
    assert!(t.lookup("/").unwrap().same(&t.root()));
    assert!(t.lookup("/a").unwrap().same(&a));
    assert!(t.lookup(b.path()).unwrap().same(&b));
    for bad in [
        "", "a", "//a", "/a/", "/a//b", "//", "/a/./b", "/a/../a", "/./a",
    ] {
        assert!(
            matches!(t.lookup(bad), Err(Error::InvalidName(_))),
            "{bad:?} gave {:?}",
            t.lookup(bad).map(|g| g.path().to_string())
        );
    }
    assert!(matches!(t.lookup("/a/c"), Err(Error::UnknownGroup(_))));
}

/// A removed parent whose removed child is recycled in the same reap is
/// recycled too: a root flush leaves no recyclable zombie behind.
#[test]
fn a_root_flush_reaps_removed_chains_completely() {
    for p in Preset::ALL {
        let (t, Items { file, .. }) = tree(p, 2);
        for i in 0..7 {
            let a = t.create(&t.root(), &format!("a{i}")).unwrap();
            let b = t.create(&a, "b").unwrap();
            let c = t.create(&b, "c").unwrap();
            t.add(&c, file, 5).unwrap();
            let keep = c.clone();
            t.remove(c).unwrap();
            t.remove(b).unwrap();
            t.remove(a).unwrap();
            // A late update through the kept handle queues the zombie.
            t.add(&keep, file, 1).unwrap();
        }
        assert!(t.zombies() > 0, "{p}: handles keep the chains alive");
        t.flush_forced(&t.root()).unwrap();
        assert_eq!(t.read(&t.root(), file).unwrap(), 42, "{p}");
        // The handles are gone now (dropped at the end of each iteration):
        // a root flush reaps every chain, leaves included.
        assert_eq!(t.zombies(), 0, "{p}: zombies left after a root flush");
        t.verify().unwrap();
    }
}

/// Every preset, several threads: updates, create/remove, every flush kind,
/// `verify` and `read_bounded` racing, under a timeout (a deadlock fails
/// the test instead of hanging it), ending with exact equality against
/// per-thread tallies. Debug builds also check the lock order at every
/// acquisition.
#[test]
fn every_preset_survives_everything_racing_and_ends_exact() {
    for p in Preset::ALL {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || {
            race(p);
            let _ = tx.send(());
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(()) => handle.join().unwrap(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                // The body panicked: surface its message.
                if let Err(e) = handle.join() {
                    std::panic::resume_unwind(e);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("{p}: no progress in 120 s (deadlock?)")
            }
        }
    }
}

fn race(p: Preset) {
    let (t, Items { file, pgfault, .. }) = tree(p, 2);
    let t = Arc::new(t);
    let tops: Vec<_> = (0..3)
        .map(|i| t.create(&t.root(), &format!("t{i}")).unwrap())
        .collect();
    let leaves: Vec<_> = tops
        .iter()
        .flat_map(|top| (0..2).map(|i| t.create(top, &format!("l{i}")).unwrap()))
        .collect();
    let updates: usize = if cfg!(debug_assertions) {
        20_000
    } else {
        200_000
    };
    // Per-leaf exact totals, and what went through churned groups.
    let exact: Vec<AtomicI64> = leaves.iter().map(|_| AtomicI64::new(0)).collect();
    let churned: Vec<AtomicI64> = tops.iter().map(|_| AtomicI64::new(0)).collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let (t, tops, leaves, stop) = (&t, &tops, &leaves, &stop);
        // Flushers of every kind, on overlapping subtrees.
        for f in 0..2usize {
            sc.spawn(move || {
                let kinds = [
                    FlushKind::Read,
                    FlushKind::Forced,
                    FlushKind::Ratelimited,
                    FlushKind::HotPath,
                    FlushKind::Periodic,
                ];
                let mut i = f;
                while !stop.load(Ordering::Relaxed) {
                    let g = match i % 3 {
                        0 => t.root(),
                        1 => tops[i % tops.len()].clone(),
                        _ => leaves[i % leaves.len()].clone(),
                    };
                    t.flush_with(&g, kinds[i % kinds.len()], &mut ()).unwrap();
                    i += 1;
                }
            });
        }
        // verify() and bounded reads.
        sc.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                t.verify().unwrap();
                for g in tops.iter().chain(leaves) {
                    t.read_bounded(g, file).unwrap();
                }
                std::thread::yield_now();
            }
        });
        // Structure churn: create, update, remove; keep some handles for
        // late updates.
        let churned = &churned;
        sc.spawn(move || {
            let mut i = 0usize;
            let mut kept = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let k = i % tops.len();
                let g = t.create(&tops[k], &format!("c{i}")).unwrap();
                let h = t.create(&g, "h").unwrap();
                t.add(&h, file, 3).unwrap();
                t.remove(h.clone()).unwrap();
                t.remove(g).unwrap();
                t.add(&h, file, 2).unwrap();
                churned[k].fetch_add(5, Ordering::Relaxed);
                if i % 4 == 0 {
                    kept.push((k, h));
                }
                if kept.len() > 8 {
                    let (k, h) = kept.remove(0);
                    t.add(&h, file, 1).unwrap();
                    churned[k].fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
        });
        std::thread::scope(|inner| {
            for th in 0..3usize {
                let exact = &exact;
                inner.spawn(move || {
                    for i in 0..updates {
                        let k = (i * 7 + th) % leaves.len();
                        let d = (i % 97) as i64 - 40;
                        t.add(&leaves[k], file, d).unwrap();
                        exact[k].fetch_add(d, Ordering::Relaxed);
                        if i % 8 == 0 {
                            t.add(&leaves[k], pgfault, 1).unwrap();
                        }
                    }
                });
            }
        });
        stop.store(true, Ordering::Relaxed);
    });
    t.flush_forced(&t.root()).unwrap();
    let leaf_total = |k: usize| exact[k].load(Ordering::Relaxed);
    for (k, l) in leaves.iter().enumerate() {
        assert_eq!(
            t.read_signed(l, file).unwrap(),
            leaf_total(k),
            "{p} {}",
            l.path()
        );
    }
    let mut all = 0;
    for (j, top) in tops.iter().enumerate() {
        let want = leaf_total(2 * j) + leaf_total(2 * j + 1) + churned[j].load(Ordering::Relaxed);
        assert_eq!(
            t.read_signed(top, file).unwrap(),
            want,
            "{p} {}",
            top.path()
        );
        all += want;
    }
    assert_eq!(t.read_signed(&t.root(), file).unwrap(), all, "{p}");
    let events = 3 * updates.div_ceil(8) as u64;
    assert_eq!(t.read(&t.root(), pgfault).unwrap(), events, "{p}");
    t.verify().unwrap();
    t.verify_clean().unwrap();
}

/// The configuration a user asks for is the one they get, and an invalid
/// one is an error, never a panic.
#[test]
fn invalid_configurations_are_errors() {
    let (s, _) = schema();
    for shards in [0, hierstat::MAX_SHARDS + 1] {
        let r = HierStats::new(s.clone(), Config::preset(Preset::Hierstat).shards(shards));
        assert!(matches!(r, Err(Error::InvalidConfig(_))));
    }
}

/// A bound counter is the same update as `add`, checked once: foreign
/// groups and items are refused when binding, negative events when adding,
/// and its updates are exact from owners and sharers alike.
#[test]
fn bound_counters_match_add_and_refuse_what_add_refuses() {
    for p in Preset::ALL {
        let (t, Items { file, pgfault, .. }) = tree(p, 2);
        let (other, _) = tree(p, 2);
        let g = t.create(&t.root(), "g").unwrap();
        assert!(matches!(
            other.counter(&g, file),
            Err(Error::ForeignGroup(_))
        ));
        let mut ob = Schema::builder();
        ob.state("zzz", Unit::Bytes);
        let foreign_item = ob.state("file", Unit::Count);
        assert!(matches!(
            t.counter(&g, foreign_item),
            Err(Error::ForeignItem(_))
        ));
        let c = t.counter(&g, file).unwrap();
        let e = t.counter(&g, pgfault).unwrap();
        assert!(c.group().same(&g));
        assert!(matches!(e.add(-1), Err(Error::NegativeEvent(..))));
        std::thread::scope(|sc| {
            for _ in 0..3 {
                sc.spawn(|| {
                    for i in 0..10_000 {
                        c.add(1).unwrap();
                        t.add(&g, file, 1).unwrap();
                        if i % 10 == 0 {
                            e.add(2).unwrap();
                        }
                    }
                });
            }
            sc.spawn(|| {
                for _ in 0..50 {
                    t.flush_forced(&t.root()).unwrap();
                }
            });
        });
        t.flush_forced(&t.root()).unwrap();
        assert_eq!(t.read(&g, file).unwrap(), 60_000, "{p}");
        assert_eq!(t.read(&t.root(), pgfault).unwrap(), 6_000, "{p}");
        t.verify_clean().unwrap();
    }
}
