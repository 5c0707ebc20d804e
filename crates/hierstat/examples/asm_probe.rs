//! The update paths' machine code, each in a function of its own, for a
//! disassembler (what `docs/bench.md` quotes):
//!
//! ```text
//! cargo build --release -p hierstat --example asm_probe
//! objdump -d --no-show-raw-insn -C target/release/examples/asm_probe | \
//!     awk '/<asm_probe::probe_/,/^$/'
//! ```
//!
//! Run, it times each probe on the thread's CPU clock (ns per call, 200 M
//! calls, one thread owning its shard; `percpu` as the first argument
//! builds the tree in the per-CPU mode): a plain add to 4 cells in turn
//! and to one cell, `Counter::add` to 4 items of one group in turn (one
//! row: each update's residue countdown waits for the previous one's
//! store) and to one item of each of 4 groups (4 rows), and
//! `HierStats::add`.

use hierstat::{Config, Counter, Group, HierStats, ItemId, Preset, Schema, Unit};
use std::hint::black_box;

/// The calling thread's CPU time (ns).
#[allow(unsafe_code)]
fn cpu_ns() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
}

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
    let spread: Vec<Counter> = (0..4)
        .map(|k| {
            let h = s.create(&s.root(), &format!("h{k}")).expect("group");
            s.counter(&h, items[0]).expect("counter")
        })
        .collect();
    let mut cells = [0u64; 4];
    let n = 200_000_000usize;
    let time = |what: &str, f: &mut dyn FnMut(usize)| {
        let t = cpu_ns();
        for i in 0..n {
            f(i);
        }
        println!("{what:<36} {:.2} ns", (cpu_ns() - t) / n as f64);
    };
    time("plain add, 4 cells", &mut |i| {
        probe_plain_add(black_box(&mut cells), i)
    });
    time("plain add, 1 cell", &mut |_| {
        probe_plain_add(black_box(&mut cells), 0)
    });
    time("Counter::add, 4 items of 1 group", &mut |i| {
        probe_counter_add(black_box(&counters[i & 3]))
    });
    time("Counter::add, 1 item of 4 groups", &mut |i| {
        probe_counter_add(black_box(&spread[i & 3]))
    });
    time("HierStats::add", &mut |i| {
        probe_stats_add(&s, black_box(&g), items[i & 3])
    });
}
