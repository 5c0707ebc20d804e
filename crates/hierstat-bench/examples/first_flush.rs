//! The forced root flush of 100 dirty leaves through the public API, in a
//! 10k- and a 100k-group tree of 16-slot groups (100-leaf slices under the
//! root, one item of the first leaf of 100 slices spread over the tree
//! updated by its shard's owner): the *first* flush of a freshly built
//! tree, then the same 100 leaves dirtied and flushed again (warm), on the
//! thread CPU clock. The two sizes alternate, one fresh pair of trees a
//! round; the ratio is taken within each round.
//!
//! `cargo run --release -p hierstat-bench --example first_flush [ROUNDS]`

use hierstat::{Config, Group, HierStats, ItemId, Preset, Schema, Unit};
use simcore::clock::CpuTimer;

struct Tree {
    stats: HierStats,
    item: ItemId,
    dirty: Vec<Group>,
}

fn build(groups: usize) -> Result<Tree, hierstat::Error> {
    let mut b = Schema::builder();
    let items: Vec<ItemId> = (0..16)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(cpus))?;
    let root = stats.root();
    let slices = groups / 100;
    let step = slices / 100;
    let mut dirty = Vec::new();
    for s in 0..slices {
        let sl = stats.create(&root, &format!("s{s}"))?;
        for c in 0..100 {
            let leaf = stats.create(&sl, &format!("c{c}"))?;
            if c == 0 && s % step == 0 && dirty.len() < 100 {
                dirty.push(leaf);
            }
        }
    }
    Ok(Tree {
        stats,
        item: items[3],
        dirty,
    })
}

/// Dirties the 100 leaves, then times one forced root flush (ns).
fn flush(t: &Tree) -> f64 {
    for g in &t.dirty {
        let _ = t.stats.add(g, t.item, 1);
    }
    let c = CpuTimer::start();
    let _ = t.stats.flush_forced(&t.stats.root());
    c.elapsed_ns()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), hierstat::Error> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let (mut first, mut warm) = ([vec![], vec![]], [vec![], vec![]]);
    let (mut rf, mut rw) = (vec![], vec![]);
    for r in 0..rounds {
        let mut f = [0.0; 2];
        let mut w = [0.0; 2];
        // Alternate which size goes first.
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let t = build([10_000, 100_000][i])?;
            f[i] = flush(&t);
            w[i] = (0..20).map(|_| flush(&t)).sum::<f64>() / 20.0;
            first[i].push(f[i]);
            warm[i].push(w[i]);
        }
        rf.push(f[1] / f[0]);
        rw.push(w[1] / w[0]);
    }
    let show = |what: &str, v: &mut [Vec<f64>; 2], r: &mut Vec<f64>| {
        let (a, b) = (median(&mut v[0]), median(&mut v[1]));
        let (lo, hi) = (
            r.iter().cloned().fold(f64::MAX, f64::min),
            r.iter().cloned().fold(0.0, f64::max),
        );
        println!(
            "  {what}: 10k {:.1} µs, 100k {:.1} µs; 100k/10k median {:.2} [{lo:.2}–{hi:.2}]",
            a / 1e3,
            b / 1e3,
            median(r)
        );
    };
    println!("forced root flush of 100 dirty leaves, 16-slot groups, {rounds} rounds:");
    show("first flush of a fresh tree", &mut first, &mut rf);
    show("warm (mean of the next 20)", &mut warm, &mut rw);
    Ok(())
}
