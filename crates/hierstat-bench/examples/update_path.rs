//! The update path's one-thread cases alone, for builds compared side by
//! side (run this example of each build in alternation; compare the
//! ratios, each taken within a round): the owner's `add` (hierstat and
//! linux-6.8, depth 1 and 4), `Counter::add`, a clean read, and their
//! floors. Only cases every build since the harness has, so the same file
//! builds against an older tree.
//!
//! ```text
//! cargo run --release -p hierstat-bench --example update_path -- [REPS]
//! ```

use hierstat::sim::{Shard, Simulator as _, WorkCounters};
use hierstat::Preset;
use hierstat_bench::{cases, run_rounds, Case};
use std::hint::black_box;

/// The engine's part of one simulated update as `mmlab bench`'s
/// `sim_engine_update` makes it (sim's `EngineBackend::add_counted`): an
/// explicit-shard `add_with` on 22 shards, the leaf of a chain of depth 2,
/// 4 items, work counted into fresh `WorkCounters`.
fn sim_update(n: u64) -> Result<Case<'static>, Box<dyn std::error::Error>> {
    let (stats, g, items) = cases::chain_tree(Preset::Hierstat, 2, 22)?;
    Ok(Case::new("sim_add_counted", n, move |n| {
        let mut acc = 0u64;
        let ns = cases::timed(n, |i| {
            let mut wc = WorkCounters::default();
            let _ = stats.add_with(
                Shard((i % 22) as usize),
                black_box(&g),
                items[(i & 3) as usize],
                1,
                &mut wc,
            );
            acc = acc.wrapping_add(wc.atomics);
        });
        black_box(acc);
        Ok(ns)
    }))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9);
    let (n, shards) = (1_000_000, 8);
    let mut cs = vec![
        cases::atomic_fetch_add(n),
        cases::plain_add(n),
        cases::update(Preset::Hierstat, 1, shards, n)?,
        cases::update(Preset::Linux6_8, 1, shards, n)?,
        cases::update(Preset::Linux6_8, 4, shards, n)?,
        cases::counter_add(shards, n)?,
        cases::read_clean(shards, n)?,
        sim_update(n)?,
    ];
    let s = run_rounds(&mut cs, reps, &mut |_| {})?;
    for c in &cs {
        let f = s.figure(c.name());
        println!(
            "{:<32} {:>6.2} ns  [{:.2}-{:.2}]  {:>5.2}x atomic [{:.2}-{:.2}]  {:>5.2}x plain",
            c.name(),
            f.median,
            f.min,
            f.max,
            s.ratio(c.name(), "atomic_fetch_add").median,
            s.ratio(c.name(), "atomic_fetch_add").min,
            s.ratio(c.name(), "atomic_fetch_add").max,
            s.ratio(c.name(), "plain_add").median,
        );
    }
    Ok(())
}
