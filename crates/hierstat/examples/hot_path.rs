//! The update paths side by side, one thread: an uncontended `fetch_add`,
//! `add` on the owner's plain path (the thread owns its shard), and the
//! shared path (`add_with` on the same shard). Median of 7 runs.
//!
//! `cargo run --release -p hierstat --example hot_path`

use hierstat::{Config, HierStats, Preset, Schema, Shard, Unit};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn median(mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..7).map(|_| f()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[3]
}

#[inline(never)]
fn read_loop(stats: &HierStats, g: &hierstat::Group, items: &[hierstat::ItemId], n: u64) -> f64 {
    let t = Instant::now();
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(stats.read(black_box(g), items[(i & 15) as usize]).unwrap());
    }
    black_box(acc);
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn counter_loop(counters: &[hierstat::Counter], n: u64) -> f64 {
    let t = Instant::now();
    for i in 0..n {
        black_box(&counters[(i & 15) as usize]).add(1).unwrap();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn owner_loop(stats: &HierStats, g: &hierstat::Group, items: &[hierstat::ItemId], n: u64) -> f64 {
    let t = Instant::now();
    for i in 0..n {
        stats
            .add(black_box(g), items[(i & 15) as usize], 1)
            .unwrap();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const N: u64 = 20_000_000;
    let mut b = Schema::builder();
    let items: Vec<_> = (0..16)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(4))?;
    let mut g = stats.root();
    let mut chain = Vec::new();
    for d in 0..8 {
        g = stats.create(&g, &format!("d{d}"))?;
        chain.push(g.clone());
    }
    let atomic = AtomicU64::new(0);
    let fetch_add = median(|| {
        let t = Instant::now();
        for _ in 0..N {
            black_box(&atomic).fetch_add(1, Ordering::Relaxed);
        }
        t.elapsed().as_nanos() as f64 / N as f64
    });
    let mut plain = [0u64; 16];
    let plain_add = median(|| {
        let t = Instant::now();
        for i in 0..N {
            black_box(&mut plain)[(i & 15) as usize] += 1;
        }
        t.elapsed().as_nanos() as f64 / N as f64
    });
    let time = |d: usize, owner: bool| {
        let g = &chain[d - 1];
        median(|| {
            let t = Instant::now();
            for i in 0..N {
                let it = items[(i & 15) as usize];
                if owner {
                    return owner_loop(&stats, g, &items, N);
                } else {
                    stats
                        .add_with(Shard(0), black_box(g), it, 1, &mut ())
                        .unwrap();
                }
            }
            t.elapsed().as_nanos() as f64 / N as f64
        })
    };
    if let Ok(only) = std::env::var("ONLY") {
        // For `perf stat`: one variant only.
        let ns = time(1, only == "owner");
        println!("{only}: {ns:.2} ns");
        return Ok(());
    }
    let g1 = &chain[0];
    let read1 = median(|| read_loop(&stats, g1, &items, N));
    println!("read (checks + load)   {read1:6.2} ns");
    let owner1 = time(1, true);
    let counters: Vec<_> = items
        .iter()
        .map(|&it| stats.counter(&chain[0], it))
        .collect::<Result<_, _>>()?;
    let counter1 = median(|| counter_loop(&counters, N));
    let owner8 = time(8, true);
    let shared1 = time(1, false);
    println!("plain add (array)      {plain_add:6.2} ns");
    println!("fetch_add              {fetch_add:6.2} ns");
    println!(
        "add, owner, depth 1    {owner1:6.2} ns  ({:.2}x fetch_add)",
        owner1 / fetch_add
    );
    println!(
        "add, owner, depth 8    {owner8:6.2} ns  ({:.2}x depth 1)",
        owner8 / owner1
    );
    println!(
        "Counter::add, owner, 1 {counter1:6.2} ns  ({:.2}x fetch_add)",
        counter1 / fetch_add
    );
    println!("add_with (shared), d 1 {shared1:6.2} ns");
    Ok(())
}
