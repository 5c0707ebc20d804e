//! The seed's full stat-readers shape on the engine alone: 50,000 cgroups,
//! 1,024 CPUs (shards), writers on every CPU and 250,000 `memory.stat`
//! readers every 100 ms, for one second of virtual time, `hierstat` preset.
//! Measures what the engine costs in memory and time for that shape
//! (run it under `/usr/bin/time -v` for the peak resident set).
//!
//! The workload follows `scenarios/stat-readers.toml` and the simulator's
//! readers runner (`crates/sim/src/runner/sim.rs`), scaled to the seed's
//! size: 10 slices of 5,000 leaves; 20% of the leaves take writes; each CPU
//! writes 2,000 times a second in bursts of 4, each update 1–8 pages (2%
//! of them a 512-page THP) to one of 8 items of a random hot leaf on its
//! CPU's shard (the simulator's explicit-shard path), 30% of them
//! uncharges when the leaf holds that much; every reader, once per 100 ms,
//! picks any group, flushes it if its threshold says so, and reads its 16
//! items with their bounds. Events are spread evenly over each virtual
//! millisecond.
//!
//! `cargo run --release -p hierstat --example stat_readers_shape [LEAVES_PER_SLICE CPUS READERS]`

use hierstat::sim::{ManualClock, Shard, Simulator};
use hierstat::{Config, Group, HierStats, ItemId, Preset, Schema, Unit};
use std::time::Instant;

#[path = "../tests/support/rng.rs"]
mod rng;
use rng::Rng;

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let per_slice = arg(1, 5000);
    let cpus = arg(2, 1024);
    let readers = arg(3, 250_000);
    let slices = 10;
    let duration_ms = 1000u64;
    let writes_per_cpu_per_s = 2000u64;
    let started = Instant::now();

    let mut b = Schema::builder();
    let items: Vec<ItemId> = (0..16)
        .map(|i| b.state(&format!("item{i}"), Unit::Pages))
        .collect();
    let clock = ManualClock::new(0);
    let t = HierStats::new(
        b.build()?,
        Config::preset(Preset::Hierstat)
            .shards(cpus)
            .clock(clock.clone()),
    )?;
    let mut all: Vec<Group> = vec![t.root()];
    let mut leaves = Vec::new();
    for s in 0..slices {
        let slice = t.create(&t.root(), &format!("slice{s}"))?;
        all.push(slice.clone());
        for l in 0..per_slice {
            let g = t.create(&slice, &format!("leaf{l}"))?;
            all.push(g.clone());
            leaves.push(g);
        }
    }
    let mut rng = Rng(1);
    // 20% of the leaves take writes.
    let hot_n = (leaves.len() / 5).max(1);
    for i in 0..hot_n {
        let j = i + rng.below((leaves.len() - i) as u64) as usize;
        leaves.swap(i, j);
    }
    let hot = &leaves[..hot_n];
    // What each hot leaf holds per written item, for uncharges.
    let mut held = vec![0i64; hot_n * 8];
    let built = started.elapsed();

    let writes_per_ms = (cpus as u64 * writes_per_cpu_per_s / 1000).max(1);
    let reads_per_ms = (readers as u64 / 100).max(1);
    let (mut updates, mut reads, mut flushes, mut unbounded) = (0u64, 0u64, 0u64, 0u64);
    for ms in 0..duration_ms {
        clock.set(ms * 1_000_000);
        let (mut w, mut r) = (0u64, 0u64);
        // Interleave writes (bursts of 4 on one CPU) and reads evenly.
        while w < writes_per_ms || r < reads_per_ms {
            if w * reads_per_ms <= r * writes_per_ms && w < writes_per_ms {
                let cpu = rng.below(cpus as u64) as usize;
                for _ in 0..4 {
                    let h = rng.below(hot_n as u64) as usize;
                    let k = rng.below(8) as usize;
                    let mut pages = if rng.below(50) == 0 {
                        512
                    } else {
                        1 + rng.below(8) as i64
                    };
                    if rng.below(10) < 3 && held[h * 8 + k] >= pages {
                        pages = -pages;
                    }
                    held[h * 8 + k] += pages;
                    t.add_with(Shard(cpu), &hot[h], items[k], pages, &mut ())?;
                    updates += 1;
                }
                w += 4;
            } else {
                let g = &all[rng.below(all.len() as u64) as usize];
                if t.needs_flush(g)? {
                    t.flush(g)?;
                    flushes += 1;
                }
                for &it in &items {
                    if t.read_bounded(g, it)?.bound.is_none() {
                        unbounded += 1;
                    }
                }
                reads += 1;
                r += 1;
            }
        }
    }
    let ran = started.elapsed() - built;
    let written = t.shards_written();
    println!(
        "{} groups, {cpus} shards, {hot_n} hot leaves; {updates} updates, {reads} reads ({flushes} flushed, {unbounded} item reads without a bound)",
        all.len()
    );
    println!(
        "built in {:.2} s, ran in {:.2} s; memory_bytes {:.1} MiB ({:.0} B per group); rows on {} shards",
        built.as_secs_f64(),
        ran.as_secs_f64(),
        t.memory_bytes() as f64 / (1 << 20) as f64,
        t.memory_bytes() as f64 / all.len() as f64,
        written.shared,
    );
    Ok(())
}
