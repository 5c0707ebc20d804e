//! The update paths side by side, one thread, interleaved: an uncontended
//! `fetch_add`, a plain array add, `add` on the owner's plain path (the
//! thread owns its shard) at depth 1 and 8, a bound [`Counter`], the shared
//! path (`add_with` on the same shard) and a clean read.
//!
//! Every round runs every variant once for `N` operations, in turn, so a
//! burst of load from other processes hits all of them alike; each ratio is
//! computed within a round (paired) and the median over the rounds is
//! printed with its interquartile range. Times are the thread's own CPU
//! time, so preemption by other processes is not counted.
//!
//! `cargo run --release -p hierstat --example hot_path [ROUNDS]`
//!
//! [`Counter`]: hierstat::Counter

use hierstat::{Config, Counter, Group, HierStats, ItemId, Preset, Schema, Shard, Unit};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// A stopwatch on the calling thread's own CPU time (wall time elsewhere),
/// so time spent descheduled by other processes' load is not counted.
struct Stopwatch(u64);

fn now_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

impl Stopwatch {
    fn start() -> Self {
        Stopwatch(now_ns())
    }
    /// Nanoseconds per operation since `start`, over `N` operations.
    fn per_op(&self) -> f64 {
        (now_ns() - self.0) as f64 / N as f64
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
    t.per_op()
}

#[inline(never)]
fn plain_loop(cells: &mut [u64; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        black_box(&mut *cells)[(i & 15) as usize] += 1;
    }
    t.per_op()
}

#[inline(never)]
fn read_loop(stats: &HierStats, g: &Group, items: &[ItemId; 16]) -> f64 {
    let t = Stopwatch::start();
    let mut acc = 0u64;
    for i in 0..N {
        acc = acc.wrapping_add(stats.read(black_box(g), items[(i & 15) as usize]).unwrap());
    }
    black_box(acc);
    t.per_op()
}

#[inline(never)]
fn counter_loop(counters: &[Counter; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        black_box(&counters[(i & 15) as usize]).add(1).unwrap();
    }
    t.per_op()
}

#[inline(never)]
fn owner_loop(stats: &HierStats, g: &Group, items: &[ItemId; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        stats
            .add(black_box(g), items[(i & 15) as usize], 1)
            .unwrap();
    }
    t.per_op()
}

#[inline(never)]
fn shared_loop(stats: &HierStats, g: &Group, items: &[ItemId; 16]) -> f64 {
    let t = Stopwatch::start();
    for i in 0..N {
        stats
            .add_with(Shard(0), black_box(g), items[(i & 15) as usize], 1, &mut ())
            .unwrap();
    }
    t.per_op()
}

/// (median, first quartile, third quartile).
fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(41);
    let mut b = Schema::builder();
    let items: [ItemId; 16] = std::array::from_fn(|i| b.state(&format!("s{i}"), Unit::Pages));
    let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(4))?;
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
    stats.flush_forced(&stats.root())?;
    let atomic = AtomicU64::new(0);
    let mut plain = [0u64; 16];

    const NAMES: [&str; 7] = [
        "fetch_add",
        "plain add (array)",
        "add, owner, depth 1",
        "add, owner, depth 8",
        "Counter::add, owner",
        "add_with (shared), d 1",
        "read, clean",
    ];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); NAMES.len()];
    for _ in 0..rounds {
        let row = [
            fetch_add_loop(&atomic),
            plain_loop(&mut plain),
            owner_loop(&stats, &chain[0], &items),
            owner_loop(&stats, &chain[7], &items),
            counter_loop(&counters),
            shared_loop(&stats, &chain[0], &items),
            read_loop(&stats, &chain[0], &items),
        ];
        for (v, x) in ns.iter_mut().zip(row) {
            v.push(x);
        }
    }
    let ratio =
        |a: usize, b: usize| quartiles(ns[a].iter().zip(&ns[b]).map(|(x, y)| x / y).collect());
    println!("{rounds} rounds of {N} ops per variant, interleaved; median [IQR]");
    for (name, v) in NAMES.iter().zip(&ns) {
        let (m, lo, hi) = quartiles(v.clone());
        println!("{name:<24} {m:6.2} ns  [{lo:.2}–{hi:.2}]");
    }
    for (what, a, b) in [
        ("add depth 1 / fetch_add", 2, 0),
        ("add depth 8 / depth 1", 3, 2),
        ("Counter::add / fetch_add", 4, 0),
        ("shared path / fetch_add", 5, 0),
        ("clean read / fetch_add", 6, 0),
    ] {
        let (m, lo, hi) = ratio(a, b);
        println!("{what:<26} {m:5.2}x  [{lo:.2}–{hi:.2}]");
    }
    Ok(())
}
