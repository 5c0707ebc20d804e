//! What a forced root flush costs, through the harness's flush cases
//! (`hierstat_bench::flush`), in interleaved rounds on the thread CPU
//! clock:
//!
//! 1. 100 leaves dirtied by their shard's owner (4 items each) in a 10k-
//!    and a 100k-group tree, the machine's CPU count of shards, warm and
//!    cold (`mmlab bench`'s `hierstat_flush_100_dirty_*`): the flush visits
//!    only the updated rows, so warm both cost the same;
//! 2. one dirty leaf in a 1,011-group tree of 64, 1,024 and 4,096 shards:
//!    what each shard's pass adds even when it has nothing queued.
//!
//! Medians and ranges over `ROUNDS` rounds (default 15), each a mean of
//! 20 warm flushes (5 cold) per case; the 100k/10k ratio is taken within
//! each round.
//!
//! `cargo run --release -p hierstat-bench --example flush_cost [ROUNDS]`

use hierstat_bench::flush::{flush_cold, flush_per_shard, flush_warm, Evictor};
use hierstat_bench::{run_rounds, BenchError};
use std::rc::Rc;

fn main() -> Result<(), BenchError> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(15);
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let evict = Rc::new(Evictor::default());
    let mut cases = vec![
        flush_warm(10_000, cpus, 20)?,
        flush_warm(100_000, cpus, 20)?,
        flush_cold(10_000, cpus, 5, evict.clone())?,
        flush_cold(100_000, cpus, 5, evict)?,
    ];
    let shard_counts = [64usize, 1024, 4096];
    for &s in &shard_counts {
        cases.push(flush_per_shard(s, 20)?);
    }
    let s = run_rounds(&mut cases, rounds, &mut |_| {})?;
    println!("forced root flush, {cpus} shards, median [range] of {rounds} rounds:");
    for (what, small, large) in [
        (
            "100 owner-dirtied leaves, warm",
            "hierstat_flush_100_dirty_10k",
            "hierstat_flush_100_dirty_100k",
        ),
        (
            "100 owner-dirtied leaves, cold",
            "hierstat_flush_100_dirty_10k_cold",
            "hierstat_flush_100_dirty_100k_cold",
        ),
    ] {
        let (a, b, r) = (s.figure(small), s.figure(large), s.ratio(large, small));
        println!(
            "  {what}: 10k groups {:.1} µs [{:.1}–{:.1}], 100k groups {:.1} µs [{:.1}–{:.1}], \
             ratio {:.2} [{:.2}–{:.2}]",
            a.median / 1e3,
            a.min / 1e3,
            a.max / 1e3,
            b.median / 1e3,
            b.min / 1e3,
            b.max / 1e3,
            r.median,
            r.min,
            r.max
        );
    }
    for shards in shard_counts {
        let f = s.figure(&format!("hierstat_flush_1_dirty_1k_{shards}shards"));
        println!(
            "  1 dirty leaf, 1,011 groups, {shards} shards: {:.1} µs [{:.1}–{:.1}] ({:.0} ns per shard)",
            f.median / 1e3,
            f.min / 1e3,
            f.max / 1e3,
            f.median / shards as f64
        );
    }
    Ok(())
}
