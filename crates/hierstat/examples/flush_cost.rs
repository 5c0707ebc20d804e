//! What a forced root flush costs, one thread, on its CPU time:
//!
//! 1. 100 leaves dirtied by their shard's owner (4 items each), in a
//!    10,000- and a 100,000-group tree (fan-out 100), the machine's CPU
//!    count of shards: the flush visits only the updated rows, so both
//!    should cost the same (`mmlab bench`'s `hierstat_flush_100_dirty_*`);
//! 2. one dirty leaf in a 1,000-group tree of 64, 1,024 and 4,096 shards:
//!    what each shard's pass adds even when it has nothing queued.
//!
//! Medians of `REPS` flushes (default 300), the two tree sizes alternating.
//!
//! `cargo run --release -p hierstat --example flush_cost [REPS]`

use hierstat::{Config, Group, HierStats, ItemId, Preset, Schema, Unit};

#[path = "common/cpu_clock.rs"]
mod cpu_clock;
use cpu_clock::thread_cpu_ns;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A tree of about `groups` groups (fan-out 100) on `shards` shards, with 4
/// items; its leaves.
fn wide(groups: usize, shards: usize) -> (HierStats, Vec<ItemId>, Vec<Group>) {
    let mut b = Schema::builder();
    let items: Vec<_> = (0..4)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let t = HierStats::new(
        b.build().expect("4 items"),
        Config::preset(Preset::Hierstat).shards(shards),
    )
    .expect("a valid configuration");
    let root = t.root();
    let mut leaves = Vec::new();
    for s in 0..groups.div_ceil(100).max(1) {
        let sl = t.create(&root, &format!("s{s}")).expect("a fresh name");
        for c in 0..100.min(groups) {
            leaves.push(t.create(&sl, &format!("c{c}")).expect("a fresh name"));
        }
    }
    (t, items, leaves)
}

/// ns of one forced root flush after `dirty` leaves (spread evenly) were
/// updated by this thread.
fn flush_once(t: &HierStats, items: &[ItemId], leaves: &[Group], dirty: usize, r: usize) -> f64 {
    let step = (leaves.len() / dirty).max(1);
    for (k, g) in leaves.iter().step_by(step).take(dirty).enumerate() {
        for &it in items {
            t.add(g, it, 1 + ((k + r) % 3) as i64).expect("own handles");
        }
    }
    let t0 = thread_cpu_ns();
    t.flush_forced(&t.root()).expect("own handle");
    (thread_cpu_ns() - t0) as f64
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let small = wide(10_000, cpus);
    let large = wide(100_000, cpus);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for r in 0..reps {
        a.push(flush_once(&small.0, &small.1, &small.2, 100, r));
        b.push(flush_once(&large.0, &large.1, &large.2, 100, r));
    }
    let (ma, mb) = (median(a), median(b));
    println!(
        "forced root flush, 100 owner-dirtied leaves, {cpus} shards, median of {reps}: \
         10k groups {:.1} µs, 100k groups {:.1} µs, ratio {:.2}",
        ma / 1e3,
        mb / 1e3,
        mb / ma
    );
    for shards in [64usize, 1024, 4096] {
        let (t, items, leaves) = wide(1000, shards);
        let v: Vec<f64> = (0..reps.min(100))
            .map(|r| flush_once(&t, &items, &leaves, 1, r))
            .collect();
        let m = median(v);
        println!(
            "forced root flush, 1 dirty leaf, 1,000 groups, {shards} shards: {:.1} µs ({:.0} ns per shard)",
            m / 1e3,
            m / shards as f64
        );
    }
}
