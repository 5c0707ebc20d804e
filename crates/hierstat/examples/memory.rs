//! Prints hierstat's memory per group for a few schema sizes and shard
//! counts, against the target `16 B × items × shards + 512 B`.
//!
//! `cargo run --release -p hierstat --example memory`

use hierstat::{Config, HierStats, Schema, Unit};

fn main() {
    println!(
        "{:>6} {:>7} {:>12} {:>12} {:>7}",
        "items", "shards", "B/group", "target", "ratio"
    );
    for items in [1usize, 8, 50] {
        for shards in [2usize, 16, 96] {
            let mut b = Schema::builder();
            for i in 0..items {
                b.state(&format!("s{i}"), Unit::Pages);
            }
            let t = HierStats::new(b.build().unwrap(), Config::default().shards(shards)).unwrap();
            let before = t.memory_bytes();
            let root = t.root();
            let n = 4096;
            for i in 0..n {
                t.create(&root, &format!("g{i:05}")).unwrap();
            }
            let per = (t.memory_bytes() - before) as f64 / n as f64;
            let target = (16 * items * shards + 512) as f64;
            println!(
                "{items:>6} {shards:>7} {per:>12.0} {target:>12.0} {:>7.2}",
                per / target
            );
        }
    }
}
