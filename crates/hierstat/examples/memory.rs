//! Prints hierstat's memory per group for a few schema sizes and shard
//! counts, against the target `16 B × items × shards + 512 B`: for a leaf
//! (most groups of a real tree) and for a group with children, which also
//! holds the `pending` deltas they push up (8 B × items).
//!
//! `cargo run --release -p hierstat --example memory`

use hierstat::{Config, HierStats, Schema, Unit};

fn main() {
    println!(
        "{:>6} {:>7} {:>10} {:>7} {:>10} {:>7} {:>10}",
        "items", "shards", "leaf B", "ratio", "parent B", "ratio", "target B"
    );
    for items in [1usize, 8, 50] {
        for shards in [2usize, 16, 96] {
            let mut b = Schema::builder();
            for i in 0..items {
                b.state(&format!("s{i}"), Unit::Pages);
            }
            let t = HierStats::new(b.build().unwrap(), Config::default().shards(shards)).unwrap();
            let root = t.root();
            let n = 4096;
            let m0 = t.memory_bytes();
            let groups: Vec<_> = (0..n)
                .map(|i| t.create(&root, &format!("g{i:05}")).unwrap())
                .collect();
            let m1 = t.memory_bytes();
            for g in &groups {
                t.create(g, "c").unwrap();
            }
            let m2 = t.memory_bytes();
            let leaf = (m1 - m0) as f64 / n as f64;
            // Adding n children added n leaves and turned n leaves into
            // parents.
            let parent = leaf + ((m2 - m1) as f64 - n as f64 * leaf) / n as f64;
            let target = (16 * items * shards + 512) as f64;
            println!(
                "{items:>6} {shards:>7} {leaf:>10.0} {:>7.2} {parent:>10.0} {:>7.2} {target:>10.0}",
                leaf / target,
                parent / target
            );
        }
    }
}
