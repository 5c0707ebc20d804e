//! The owner path (plain stores by the thread that owns its shard) against
//! the shared path (atomic adds), on real threads: exact counts whether
//! threads own their shards or share them, across slot hand-overs, with
//! membarrier and with the fence fallback.

use crate::schema;
use hierstat::sim::{Shard, Simulator, WorkCounters};
use hierstat::{Config, FlushKind, HierStats, Preset};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

fn tree(preset: Preset, shards: usize, membarrier: bool) -> (HierStats, hierstat::ItemId) {
    let (s, items) = schema();
    let cfg = Config::preset(preset).shards(shards).membarrier(membarrier);
    (HierStats::new(s, cfg).unwrap(), items.file)
}

/// Updaters (owners when there are enough shards, sharers when not) race
/// flushers of every kind; the totals are exact at the end.
fn owners_and_sharers(preset: Preset, shards: usize, membarrier: bool) {
    let (t, file) = tree(preset, shards, membarrier);
    let a = t.create(&t.root(), "a").unwrap();
    let leaves: Vec<_> = (0..4)
        .map(|i| t.create(&a, &format!("l{i}")).unwrap())
        .collect();
    let exact: Vec<AtomicI64> = leaves.iter().map(|_| AtomicI64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let per_thread = crate::scaled(if cfg!(debug_assertions) {
        50_000
    } else {
        500_000
    });
    let barriers = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|sc| {
        let (t, a, leaves, stop, barriers) = (&t, &a, &leaves, &stop, &barriers);
        sc.spawn(move || {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let g = if i % 2 == 0 { t.root() } else { a.clone() };
                let kind = [FlushKind::Forced, FlushKind::Read, FlushKind::Periodic][i % 3];
                let mut w = WorkCounters::default();
                t.flush_with(&g, kind, &mut w).unwrap();
                barriers.fetch_add(w.barriers, Ordering::Relaxed);
                i += 1;
            }
        });
        std::thread::scope(|inner| {
            for th in 0..3usize {
                let exact = &exact;
                inner.spawn(move || {
                    for i in 0..per_thread {
                        let k = (i + th) % leaves.len();
                        let d = (i % 7) as i64 - 2;
                        t.add(&leaves[k], file, d).unwrap();
                        exact[k].fetch_add(d, Ordering::Relaxed);
                    }
                });
            }
        });
        stop.store(true, Ordering::Relaxed);
    });
    t.flush_forced(&t.root()).unwrap();
    let mut total = 0;
    for (k, l) in leaves.iter().enumerate() {
        let want = exact[k].load(Ordering::Relaxed);
        assert_eq!(
            t.read_signed(l, file).unwrap(),
            want,
            "{preset} {shards} shards"
        );
        total += want;
    }
    assert_eq!(t.read_signed(&t.root(), file).unwrap(), total);
    t.verify().unwrap();
    t.verify_clean().unwrap();
    // Under Miri owners keep their path whatever the setting (their
    // updates then fence, as under loom: `update.rs`), so that Miri checks
    // the owner path's pointers.
    assert!(
        membarrier || cfg!(miri) || !t.owner_path(),
        "membarrier(false) is obeyed"
    );
    if shards >= 64 && !t.owner_path() {
        eprintln!("owner path not available here (no private expedited membarrier): not asserting the barrier count");
    }
    if shards >= 64 && t.owner_path() {
        // Every live thread owns a shard: flushes took the heavy barrier.
        let mut w = WorkCounters::default();
        std::thread::scope(|sc| {
            sc.spawn(|| t.add(&leaves[0], file, 1).unwrap());
        });
        t.flush_with(&t.root(), FlushKind::Forced, &mut w).unwrap();
        assert!(
            w.barriers + barriers.load(Ordering::Relaxed) > 0,
            "the owner path was never taken"
        );
    }
}

#[test]
fn owners_with_membarrier_end_exact() {
    for p in Preset::ALL {
        owners_and_sharers(p, 64, true);
    }
}

/// Without membarrier owners take the shared path.
#[test]
fn fence_fallback_ends_exact() {
    for p in Preset::ALL {
        owners_and_sharers(p, 64, false);
    }
}

/// More threads than shards: most updates take the shared path, and the
/// owner of shard 0 (if any thread holds slot 0) writes beside them.
#[test]
fn sharers_beyond_the_shard_count_end_exact() {
    for p in Preset::ALL {
        owners_and_sharers(p, 1, true);
        owners_and_sharers(p, 2, true);
    }
}

/// Threads come and go one after another, so each new one takes the slot
/// the last one gave back and becomes the owner of its cells: the
/// hand-over through the slot pool loses nothing, while a flusher runs.
#[test]
fn slot_hand_overs_keep_counts_exact() {
    let (t, file) = tree(Preset::Hierstat, 64, true);
    let g = t.create(&t.root(), "g").unwrap();
    let stop = AtomicBool::new(false);
    let threads = crate::scaled(40) as u64;
    let per = crate::scaled(2_000) as u64;
    std::thread::scope(|sc| {
        let (t, g, stop) = (&t, &g, &stop);
        sc.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                t.flush_forced(g).unwrap();
            }
        });
        for _ in 0..threads {
            std::thread::scope(|one| {
                one.spawn(|| {
                    for _ in 0..per {
                        t.add(g, file, 1).unwrap();
                    }
                });
            });
        }
        stop.store(true, Ordering::Relaxed);
    });
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read(&g, file).unwrap(), threads * per);
    t.verify_clean().unwrap();
}

/// One thread writes the same (group, shard) through both paths: its owner
/// cells (`add`) and the shared cells (`add_with` on its own shard), with
/// flushes in between. Both are carried, and the bound covers both
/// residues.
#[test]
fn both_paths_on_one_shard_are_exact_and_bounded() {
    for p in Preset::ALL {
        both_paths_on_one_shard(p);
    }
}

fn both_paths_on_one_shard(preset: Preset) {
    let (t, file) = tree(preset, 64, true);
    let g = t.create(&t.root(), "g").unwrap();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut exact = 0i64;
            for i in 0..crate::scaled(64) {
                for s in 0..64 {
                    // Whichever shard this thread owns, one of these is it.
                    t.add_with(Shard(s), &g, file, 1, &mut ()).unwrap();
                }
                t.add(&g, file, 30).unwrap();
                exact += 64 + 30;
                let b = t.read_bounded(&g, file).unwrap();
                if let Some(bound) = b.bound {
                    assert!(
                        (b.signed - exact).unsigned_abs() <= bound,
                        "{preset} step {i}"
                    );
                }
                if i % 5 == 0 {
                    t.flush(&g).unwrap();
                }
            }
            t.flush_forced(&t.root()).unwrap();
            assert_eq!(t.read_signed(&g, file).unwrap(), exact);
        });
    });
    t.verify_clean().unwrap();
}

/// An owner's residue folds exactly what it holds, exactly when it reaches
/// `batch` (the residue counts down to the fold, see `slab.rs`): the
/// reported bound, which is the folded count plus a fixed allowance for the
/// residues, moves by the folded amounts only, for small and large deltas
/// of both signs, on every preset that accounts (per group, kernel-exact
/// and folded, and global).
#[test]
fn an_owners_residue_folds_exactly_at_batch() {
    for preset in Preset::ALL {
        let (t, file) = tree(preset, 64, true);
        if !t.owner_path() {
            eprintln!("skipped: no membarrier here, so no owner path");
            return;
        }
        let g = t.create(&t.root(), "g").unwrap();
        let batch = t.policy().batch as u64;
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let (mut held, mut folded) = (0u64, 0u64);
                // The allowance for the residues: fixed once this thread's
                // pair is queued (by its first update, too small to fold),
                // either from the start (kernel-exact: one residue per
                // shard) or reserved then (folded: `batch − 1` per pair).
                let Some(before) = t.read_bounded(&g, file).unwrap().bound else {
                    return; // no accounting to watch (5.13)
                };
                t.add(&g, file, 1).unwrap();
                held += 1;
                let allowance = t.read_bounded(&g, file).unwrap().bound.unwrap();
                assert!(
                    [before, before + batch - 1].contains(&allowance),
                    "{preset}: a first update of 1 folded ({before} → {allowance})"
                );
                let mut checked_folds = 0;
                for i in 1..400i64 {
                    let d = match i % 9 {
                        0 => 3 * batch as i64 + 1,
                        4 => -(batch as i64) + 1,
                        k => k - 4,
                    };
                    t.add(&g, file, d).unwrap();
                    held += d.unsigned_abs();
                    if held >= batch {
                        folded += held;
                        held = 0;
                    }
                    let b = t.read_bounded(&g, file).unwrap();
                    if b.bound.is_none() {
                        break; // above the threshold: no bound to compare
                    }
                    let now = b.bound.unwrap();
                    assert_eq!(now, allowance + folded, "{preset} step {i}, delta {d}");
                    checked_folds = folded / batch;
                }
                assert!(
                    checked_folds >= 8,
                    "{preset}: only {checked_folds} batches checked"
                );
            });
        });
    }
}
