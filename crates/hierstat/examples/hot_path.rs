//! The update paths side by side in one run, against the two floors every
//! figure is quoted against: a plain per-thread array add (what a
//! thread-local counter costs: the physical floor) and a bare uncontended
//! `fetch_add` (what any migration-safe per-shard counter costs; its price
//! differs threefold between AMD and Intel cores).
//!
//! One thread, interleaved: every round runs every variant once for `N`
//! operations, in turn, so a burst of load from other processes hits all
//! of them alike; each ratio is computed within a round (paired) and the
//! median over the rounds is printed with its interquartile range. Times
//! are each thread's own CPU time, so preemption by other processes is not
//! counted.
//!
//! * `add`, owner: [`HierStats::add`] by the thread that owns its shard
//!   (plain stores), on a group at depth 1 and 8;
//! * `Counter::add`, owner: the same through a [`Counter`] (the documented
//!   fast path: the handle checks done once);
//! * `add`, thread beyond the shards: [`HierStats::add`] by a thread whose
//!   seat is past the shard count (the shared path: atomic adds);
//! * `add_with`, explicit shard: the simulator's shared path
//!   ([`hierstat::sim::Simulator::add_with`]);
//! * a clean read;
//! * two `fetch_add`s on two cache lines: the shared path's floor (its two
//!   RMWs, without anything else), printed against the shared path.
//!
//! Then two threads: the main thread updates first (taking seat 0), then
//! two workers update one group; each worker's cost per update against one
//! owner thread's alone, with shards covering the three threads (3) and
//! not (2: one worker shares the main thread's shard).
//!
//! `cargo run --release -p hierstat --example hot_path [ROUNDS]`

use hierstat::sim::{Shard, Simulator};
use hierstat::{Config, Counter, Group, HierStats, ItemId, Preset, Schema, Unit};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

#[path = "common/cpu_clock.rs"]
mod cpu_clock;
use cpu_clock::thread_cpu_ns;

/// A stopwatch on the calling thread's own CPU time (wall time elsewhere),
/// so time spent descheduled by other processes' load is not counted.
struct Stopwatch(u64);

impl Stopwatch {
    fn start() -> Self {
        Stopwatch(thread_cpu_ns())
    }
    /// Nanoseconds per operation since `start`, over `n` operations.
    fn per_op(&self, n: u64) -> f64 {
        (thread_cpu_ns() - self.0) as f64 / n as f64
    }
}

/// Operations per variant per round.
const N: u64 = 400_000;

#[inline(never)]
fn fetch_add_loop(a: &AtomicU64) -> f64 {
    let t = Stopwatch::start();
    for _ in 0..N {
        black_box(a).fetch_add(1, Ordering::Relaxed);
    }
    t.per_op(N)
}

/// Two uncontended `fetch_add`s per operation, on two cache lines: the
/// floor of a shared-path update, which adds to its cell and to its row
/// header (the header's RMW orders the update against the flusher's drain
/// and carries the threshold residue: see `update.rs`).
#[inline(never)]
fn two_fetch_adds_loop(a: &AtomicU64, b: &AtomicU64) -> f64 {
    let t = Stopwatch::start();
    for _ in 0..N {
        black_box(a).fetch_add(1, Ordering::Relaxed);
        black_box(b).fetch_add(1, Ordering::Relaxed);
    }
    t.per_op(N)
}

#[inline(never)]
fn plain_loop(cells: &mut [u64; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        black_box(&mut *cells)[(i & 15) as usize] += 1;
    }
    t.per_op(N)
}

#[inline(never)]
fn read_loop(stats: &HierStats, g: &Group, items: &[ItemId; 16]) -> f64 {
    let t = Stopwatch::start();
    let mut acc = 0u64;
    for i in 0..N {
        acc = acc.wrapping_add(stats.read(black_box(g), items[(i & 15) as usize]).unwrap());
    }
    black_box(acc);
    t.per_op(N)
}

#[inline(never)]
fn counter_loop(counters: &[Counter; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        black_box(&counters[(i & 15) as usize]).add(1).unwrap();
    }
    t.per_op(N)
}

#[inline(never)]
fn add_loop(stats: &HierStats, g: &Group, items: &[ItemId; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        stats
            .add(black_box(g), items[(i & 15) as usize], 1)
            .unwrap();
    }
    t.per_op(N)
}

#[inline(never)]
fn add_with_loop(stats: &HierStats, g: &Group, items: &[ItemId; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        stats
            .add_with(Shard(0), black_box(g), items[(i & 15) as usize], 1, &mut ())
            .unwrap();
    }
    t.per_op(N)
}

/// (median, first quartile, third quartile).
fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn schema() -> (Schema, [ItemId; 16]) {
    let mut b = Schema::builder();
    let items: [ItemId; 16] = std::array::from_fn(|i| b.state(&format!("s{i}"), Unit::Pages));
    (b.build().expect("16 items"), items)
}

/// Per-op CPU time of each of `threads` threads adding to `g` for about
/// `ms` milliseconds, started together.
fn per_thread(stats: &HierStats, g: &Group, item: ItemId, threads: usize, ms: u64) -> Vec<f64> {
    let stop = AtomicBool::new(false);
    let start = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (stop, start) = (&stop, &start);
                s.spawn(move || {
                    // Take the seat before the clock starts.
                    stats.add(g, item, 1).unwrap();
                    start.wait();
                    let t = Stopwatch::start();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..256 {
                            stats.add(black_box(g), item, 1).unwrap();
                        }
                        n += 256;
                    }
                    t.per_op(n)
                })
            })
            .collect();
        start.wait();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        stop.store(true, Ordering::Relaxed);
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(41);
    let (schema16, items) = schema();
    let stats = HierStats::new(schema16.clone(), Config::preset(Preset::Hierstat).shards(4))?;
    let mut g = stats.root();
    let mut chain = Vec::new();
    for d in 0..8 {
        g = stats.create(&g, &format!("d{d}"))?;
        chain.push(g.clone());
    }
    let counters: Vec<_> = items
        .iter()
        .map(|&it| stats.counter(&chain[0], it))
        .collect::<Result<_, _>>()?;
    let counters: [Counter; 16] = counters.try_into().expect("16 counters");
    // The main thread takes seat 0 here: it owns shard 0 of every tree.
    stats.add(&chain[0], items[0], 1)?;
    stats.flush_forced(&stats.root())?;
    // A one-shard tree for a thread beyond the shard count: a worker whose
    // seat is past 0 (the main thread holds seat 0) runs its loop on
    // request, so the rounds still interleave it with the others.
    let beyond = HierStats::new(schema16, Config::preset(Preset::Hierstat).shards(1))?;
    let beyond_g = beyond.create(&beyond.root(), "d0")?;
    let (ask, asked) = mpsc::channel::<()>();
    let (tell, told) = mpsc::channel::<f64>();
    let worker = {
        let (beyond, beyond_g) = (beyond.clone(), beyond_g.clone());
        std::thread::spawn(move || {
            for () in asked {
                let _ = tell.send(add_loop(&beyond, &beyond_g, &items));
            }
        })
    };
    let atomic = AtomicU64::new(0);
    // Two lines apart (128 bytes: adjacent-line prefetch pairs 64-byte lines).
    let pair: [AtomicU64; 32] = std::array::from_fn(|_| AtomicU64::new(0));
    let mut plain = [0u64; 16];

    const NAMES: [&str; 9] = [
        "fetch_add",
        "two fetch_adds (2 lines)",
        "plain add (array)",
        "add, owner, depth 1",
        "add, owner, depth 8",
        "Counter::add, owner",
        "add, beyond the shards",
        "add_with, explicit shard",
        "read, clean",
    ];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); NAMES.len()];
    for _ in 0..rounds {
        ask.send(())?;
        let row = [
            fetch_add_loop(&atomic),
            two_fetch_adds_loop(&pair[0], &pair[16]),
            plain_loop(&mut plain),
            add_loop(&stats, &chain[0], &items),
            add_loop(&stats, &chain[7], &items),
            counter_loop(&counters),
            told.recv()?,
            add_with_loop(&stats, &chain[0], &items),
            read_loop(&stats, &chain[0], &items),
        ];
        for (v, x) in ns.iter_mut().zip(row) {
            v.push(x);
        }
    }
    drop(ask);
    worker.join().expect("the worker ran");
    let w = beyond.shards_written();
    assert!(
        w.shared == 1 || !beyond.owner_path(),
        "the worker shared: {w:?}"
    );
    let ratio =
        |a: usize, b: usize| quartiles(ns[a].iter().zip(&ns[b]).map(|(x, y)| x / y).collect());
    println!("{rounds} rounds of {N} ops per variant, interleaved; median [IQR]");
    println!(
        "{:<26} {:>8} {:>16} {:>22}",
        "variant", "ns", "/ plain add", "/ fetch_add"
    );
    for (i, (name, v)) in NAMES.iter().zip(&ns).enumerate() {
        let (m, lo, hi) = quartiles(v.clone());
        let (p, plo, phi) = ratio(i, 2);
        let (f, flo, fhi) = ratio(i, 0);
        println!(
            "{name:<26} {m:6.2}  [{lo:.2}–{hi:.2}]  {p:5.2}x [{plo:.2}–{phi:.2}]  {f:5.2}x [{flo:.2}–{fhi:.2}]"
        );
    }
    let (m, lo, hi) = ratio(4, 3);
    println!("add depth 8 / depth 1      {m:5.2}x  [{lo:.2}–{hi:.2}]");
    let (m, lo, hi) = ratio(6, 1);
    println!("beyond the shards / two fetch_adds {m:5.2}x  [{lo:.2}–{hi:.2}]");

    // Two workers after the main thread, per shard count; each figure is
    // a worker's per-op cost over one owner thread's, alone, in the same
    // run (medians of 5 repetitions, each 150 ms).
    println!();
    println!("2 workers after the main thread updated: worker / one owner alone, median of 5");
    for shards in [3usize, 2] {
        let (s, it) = schema();
        let t = HierStats::new(s, Config::preset(Preset::Hierstat).shards(shards))?;
        let g = t.create(&t.root(), "g")?;
        // The main thread updates first: it holds seat 0.
        t.add(&g, it[0], 1)?;
        let (mut alone, mut pair) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            alone.push(per_thread(&t, &g, it[1], 1, 150)[0]);
            pair.push(per_thread(&t, &g, it[1], 2, 150));
        }
        let (a, _, _) = quartiles(alone.clone());
        let worst: Vec<f64> = pair
            .iter()
            .zip(&alone)
            .map(|(p, a)| p.iter().cloned().fold(0.0, f64::max) / a)
            .collect();
        let best: Vec<f64> = pair
            .iter()
            .zip(&alone)
            .map(|(p, a)| p.iter().cloned().fold(f64::MAX, f64::min) / a)
            .collect();
        let (wm, wlo, whi) = quartiles(worst);
        let (bm, blo, bhi) = quartiles(best);
        let w = t.shards_written();
        println!(
            "{shards} shards: one owner alone {a:.2} ns; slower worker {wm:.2}x [{wlo:.2}–{whi:.2}], faster {bm:.2}x [{blo:.2}–{bhi:.2}]; shards written by owners {}, shared {}",
            w.by_owners, w.shared
        );
    }
    Ok(())
}
