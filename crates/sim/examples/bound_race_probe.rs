//! Probe: is the error bound kept when flushes race with updates?
//!
//! Two writer threads update the leaves of `root / 4 slices / 10 leaves`
//! while a flusher thread runs threshold-guarded read flushes of random
//! groups. After the threads stop (quiescence, no flush since), every
//! group's `read_bounded` is checked against the exact totals:
//! `|value − exact| ≤ bound`. A violation means some update's magnitude was
//! lost while its value stayed unflushed (the bound under-reports).
//!
//! `cargo run -p sim --release --example bound_race_probe -- hierstat 2`
use hierstat::{Config, FlushKind, HierStats, Preset, Schema, Unit};
use simcore::Rng;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

fn main() {
    let mut args = std::env::args().skip(1);
    let preset: Preset = args.next().unwrap_or("hierstat".into()).parse().unwrap();
    let shards: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let mut total = 0;
    for round in 0..20u64 {
        let mut b = Schema::builder();
        let items: Vec<_> = (0..8)
            .map(|i| b.state(&format!("s{i}"), Unit::Pages))
            .collect();
        let stats =
            HierStats::new(b.build().unwrap(), Config::preset(preset).shards(shards)).unwrap();
        let root = stats.root();
        let mut groups = vec![root.clone()];
        let mut parents: Vec<Option<usize>> = vec![None];
        for s in 0..4 {
            let sl = stats.create(&root, &format!("g{s}")).unwrap();
            let si = groups.len();
            groups.push(sl.clone());
            parents.push(Some(0));
            for c in 0..10 {
                groups.push(stats.create(&sl, &format!("c{c}")).unwrap());
                parents.push(Some(si));
            }
        }
        let leaves: Vec<usize> = (0..groups.len())
            .filter(|&i| i > 0 && (i - 1) % 11 != 0)
            .collect();
        // ORDERING: Relaxed; totals read after the threads join.
        let exact: Vec<AtomicI64> = (0..groups.len() * 8).map(|_| AtomicI64::new(0)).collect();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for w in 0..2u64 {
                let (stats, groups, parents, leaves, exact, items, stop) =
                    (&stats, &groups, &parents, &leaves, &exact, &items, &stop);
                s.spawn(move || {
                    let mut rng = Rng::new(round * 10 + w);
                    while !stop.load(Ordering::Relaxed) {
                        let g = leaves[rng.below(leaves.len() as u64) as usize];
                        let it = rng.below(8) as usize;
                        let p = rng.range_inclusive(1, 8) as i64;
                        stats.add(&groups[g], items[it], p).unwrap();
                        let mut cur = Some(g);
                        while let Some(c) = cur {
                            exact[c * 8 + it].fetch_add(p, Ordering::Relaxed);
                            cur = parents[c];
                        }
                    }
                });
            }
            let mut rng = Rng::new(round + 1000);
            let t = std::time::Instant::now();
            while t.elapsed().as_millis() < 100 {
                let r = rng.below(groups.len() as u64) as usize;
                stats.flush_with(&groups[r], FlushKind::Read, &mut ());
            }
            stop.store(true, Ordering::Relaxed);
        });
        for (gi, g) in groups.iter().enumerate() {
            for (k, &item) in items.iter().enumerate() {
                let v = stats.read_bounded(g, item).unwrap();
                let e = exact[gi * 8 + k].load(Ordering::Relaxed).max(0) as u64;
                if let Some(bd) = v.bound {
                    if v.value.abs_diff(e) > bd {
                        total += 1;
                        if total <= 5 {
                            println!(
                                "round {round}: {} item {k}: value {} exact {e} bound {bd}",
                                g.path(),
                                v.value
                            );
                        }
                    }
                }
            }
        }
    }
    println!("{preset} with {shards} shards: {total} bound violations at quiescence");
}
