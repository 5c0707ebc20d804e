//! The update, read and flush paths in fixed numbers of operations, for
//! instruction counting: unlike times on a shared 2-core host, instruction
//! counts do not move with the machine's load, so two builds compare
//! exactly (the project's hosts swing by 1.3x in time from run to run).
//!
//! ```sh
//! cargo build --release -p hierstat --example instructions
//! valgrind --tool=callgrind --callgrind-out-file=cg.out \
//!     target/release/examples/instructions hierstat
//! callgrind_annotate --inclusive=yes cg.out | grep instructions::
//! ```
//!
//! Each loop runs 100,000 operations (`flush_100`: 50 forced root flushes of
//! 100 dirty leaves in a 10k-group tree); divide its inclusive count by that.
//! The first argument names the preset (`hierstat` by default).
use hierstat::sim::{Shard, Simulator as _};
use hierstat::{Config, Counter, Group, HierStats, ItemId, Preset, Schema, Unit};
use std::hint::black_box;
const N: usize = 100_000;
#[inline(never)]
fn owner_add(s: &HierStats, g: &Group, items: &[ItemId; 16]) {
    for i in 0..N {
        s.add(black_box(g), items[i & 15], 1).unwrap();
    }
}
#[inline(never)]
fn owner_add_deep(s: &HierStats, g: &Group, items: &[ItemId; 16]) {
    for i in 0..N {
        s.add(black_box(g), items[i & 15], 1).unwrap();
    }
}
#[inline(never)]
fn counter_add(c: &[Counter; 16]) {
    for i in 0..N {
        black_box(&c[i & 15]).add(1).unwrap();
    }
}
#[inline(never)]
fn shared_add(s: &HierStats, g: &Group, items: &[ItemId; 16]) {
    for i in 0..N {
        s.add_with(Shard(0), black_box(g), items[i & 15], 1, &mut ())
            .unwrap();
    }
}
#[inline(never)]
fn read(s: &HierStats, g: &Group, items: &[ItemId; 16]) -> u64 {
    let mut t = 0;
    for i in 0..N {
        t += s.read(black_box(g), items[i & 15]).unwrap();
    }
    t
}
#[inline(never)]
fn read_bounded(s: &HierStats, g: &Group, items: &[ItemId; 16]) -> u64 {
    let mut t = 0;
    for i in 0..N {
        t += s.read_bounded(black_box(g), items[i & 15]).unwrap().value;
    }
    t
}
#[inline(never)]
fn flush_100(s: &HierStats, leaves: &[Group], items: &[ItemId; 16]) {
    for _ in 0..50 {
        for l in leaves {
            s.add(l, items[0], 1).unwrap();
        }
        s.flush_forced(&s.root()).unwrap();
    }
}
fn main() {
    let preset: Preset = std::env::args()
        .nth(1)
        .map_or("hierstat".into(), |s| s)
        .parse()
        .unwrap();
    let mut b = Schema::builder();
    let items: [ItemId; 16] = std::array::from_fn(|i| b.event(&format!("e{i}"), Unit::Count));
    let s = HierStats::new(b.build().unwrap(), Config::preset(preset).shards(2)).unwrap();
    let mut chain = vec![s.create(&s.root(), "c0").unwrap()];
    for d in 1..8 {
        let g = s.create(&chain[d - 1], &format!("c{d}")).unwrap();
        chain.push(g);
    }
    let counters: [Counter; 16] = std::array::from_fn(|i| s.counter(&chain[0], items[i]).unwrap());
    owner_add(&s, &chain[0], &items);
    owner_add_deep(&s, &chain[7], &items);
    counter_add(&counters);
    shared_add(&s, &chain[0], &items);
    black_box(read(&s, &chain[0], &items));
    black_box(read_bounded(&s, &chain[0], &items));
    let mut leaves = Vec::new();
    for i in 0..10_000 {
        leaves.push(s.create(&s.root(), &format!("l{i}")).unwrap());
    }
    let dirty: Vec<Group> = leaves.iter().step_by(100).cloned().collect();
    flush_100(&s, &dirty, &items);
    println!("owner path: {}", s.owner_path());
}
