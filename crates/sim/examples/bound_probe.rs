//! Probe: single-threaded random updates (explicit shards), threshold-guarded
//! read flushes of random groups, and after each step a check of every
//! group's `read_bounded` against an exact oracle: `|value − exact| ≤ bound`.
//! Prints the first violations.
//!
//! `cargo run -p sim --release --example bound_probe -- hierstat 2`
use hierstat::{Config, FlushKind, HierStats, Preset, Schema, Shard, Unit};
use sim::rng::SimRng;

fn main() {
    let mut args = std::env::args().skip(1);
    let preset: Preset = args.next().unwrap_or("hierstat".into()).parse().unwrap();
    let shards: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let mut b = Schema::builder();
    let items: Vec<_> = (0..8)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let stats = HierStats::new(b.build().unwrap(), Config::preset(preset).shards(shards)).unwrap();
    let root = stats.root();
    // root / 4 slices / 10 leaves each; parents[i] for the oracle.
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
    let mut exact = vec![0i64; groups.len() * 8];
    let mut rng = SimRng::new(1);
    let mut violations = 0;
    for step in 0..2_000_000u64 {
        let g = leaves[rng.below(leaves.len() as u64) as usize];
        let it = rng.below(8) as usize;
        let mut p = rng.range_inclusive(1, 8) as i64;
        if rng.chance(0.3) && exact[g * 8 + it] >= p {
            p = -p;
        }
        let shard = rng.below(shards as u64) as usize;
        stats
            .add_with(Shard(shard), &groups[g], items[it], p, &mut ())
            .unwrap();
        let mut cur = Some(g);
        while let Some(c) = cur {
            exact[c * 8 + it] += p;
            cur = parents[c];
        }
        if rng.chance(0.01) {
            let r = rng.below(groups.len() as u64) as usize;
            stats.flush_with(&groups[r], FlushKind::Read, &mut ());
        }
        if step % 97 == 0 {
            let r = rng.below(groups.len() as u64) as usize;
            for (k, &item) in items.iter().enumerate() {
                let v = stats.read_bounded(&groups[r], item).unwrap();
                let e = exact[r * 8 + k].max(0) as u64;
                if let Some(bd) = v.bound {
                    if v.value.abs_diff(e) > bd {
                        violations += 1;
                        if violations <= 5 {
                            println!(
                                "step {step}: {} item {k}: value {} exact {e} bound {bd}",
                                groups[r].path(),
                                v.value
                            );
                        }
                    }
                }
            }
        }
    }
    println!("{preset} with {shards} shards: {violations} bound violations");
}
