//! The update paths' machine code, each in a function of its own, for a
//! disassembler (what `docs/bench.md` quotes):
//!
//! ```text
//! cargo build --release -p hierstat --example asm_probe
//! objdump -d --no-show-raw-insn -C target/release/examples/asm_probe | \
//!     awk '/<asm_probe::probe_/,/^$/'
//! ```
//!
//! Run, it times each probe (ns per call, a loop of 4 items in turn, 200 M
//! calls, one thread owning its shard; `percpu` as the first argument
//! builds the tree in the per-CPU mode).

use hierstat::{Config, Counter, Group, HierStats, ItemId, Preset, Schema, Unit};
use std::hint::black_box;
use std::time::Instant;

/// `Counter::add(1)`.
#[inline(never)]
pub fn probe_counter_add(c: &Counter) {
    let _ = c.add(1);
}

/// `HierStats::add(g, item, 1)`.
#[inline(never)]
pub fn probe_stats_add(s: &HierStats, g: &Group, item: ItemId) {
    let _ = s.add(g, item, 1);
}

/// A plain add to a per-thread cell.
#[inline(never)]
pub fn probe_plain_add(cells: &mut [u64; 4], i: usize) {
    cells[i & 3] += 1;
}

fn main() {
    let mut b = Schema::builder();
    let items: Vec<_> = (0..4)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let per_cpu = std::env::args().nth(1).as_deref() == Some("percpu");
    let cfg = Config::preset(Preset::Hierstat).shards(8).per_cpu(per_cpu);
    let s = HierStats::new(b.build().expect("schema"), cfg).expect("tree");
    let g = s.create(&s.root(), "g").expect("group");
    let counters: Vec<Counter> = items
        .iter()
        .map(|&i| s.counter(&g, i).expect("counter"))
        .collect();
    let mut cells = [0u64; 4];
    let n = 200_000_000usize;
    let time = |what: &str, f: &mut dyn FnMut(usize)| {
        let t = Instant::now();
        for i in 0..n {
            f(i);
        }
        println!(
            "{what:<20} {:.2} ns",
            t.elapsed().as_nanos() as f64 / n as f64
        );
    };
    time("plain add", &mut |i| {
        probe_plain_add(black_box(&mut cells), i)
    });
    time("Counter::add", &mut |i| {
        probe_counter_add(black_box(&counters[i & 3]))
    });
    time("HierStats::add", &mut |i| {
        probe_stats_add(&s, black_box(&g), items[i & 3])
    });
}
