//! Replicas of the kernel's own per-unit work, timed on this host: what
//! the `[kernel]` table's `rstat_level_ns`, `charge_level_ns` and
//! `stat_update_ns` price.

use simcore::clock::CpuTimer;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// One level of the rstat walk, replicated: per level a dependent load of
/// the parent pointer and of the per-CPU counter, an add and a compare;
/// each walk starts from the previous one's result (latency, not
/// throughput). Depth 8 minus depth 0, per level: the median of 9.
pub fn rstat_level_ns(n: u64) -> f64 {
    #[repr(align(64))]
    struct Level {
        parent: usize,
        residue: std::cell::Cell<u64>,
        _pad: [u64; 6],
    }
    let levels: Vec<Level> = (0..9usize)
        .map(|i| Level {
            parent: i.saturating_sub(1),
            residue: std::cell::Cell::new(0),
            _pad: [0; 6],
        })
        .collect();
    let walk = |start: usize| -> u64 {
        let mut at = start;
        let mut acc = 0u64;
        loop {
            let l = &levels[black_box(at)];
            let x = l.residue.get() + 1;
            l.residue.set(if x >= 64 { 0 } else { x });
            acc = acc.wrapping_add(x);
            if at == 0 {
                return acc;
            }
            at = l.parent;
        }
    };
    let time = |depth: usize| {
        let t = CpuTimer::start();
        let mut acc = 0u64;
        for _ in 0..n {
            // The next walk's start depends on this one's result (its top
            // bit, always 0, which the compiler cannot know).
            acc = walk(depth + (acc >> 63) as usize);
        }
        black_box(acc);
        t.elapsed_ns() / n as f64
    };
    let mut diffs: Vec<f64> = (0..9).map(|_| time(8) - time(0)).collect();
    diffs.sort_by(f64::total_cmp);
    (diffs[diffs.len() / 2] / 8.0).max(0.1)
}

/// One page-counter level, replicated: an atomic add to `usage`, loads of
/// `max` and `watermark` and their compares.
pub fn charge_level_ns(n: u64) -> f64 {
    #[repr(align(64))]
    struct Counter {
        usage: AtomicU64,
        max: u64,
        watermark: AtomicU64,
    }
    let c = Counter {
        usage: AtomicU64::new(0),
        max: u64::MAX,
        watermark: AtomicU64::new(0),
    };
    let t = CpuTimer::start();
    for _ in 0..n {
        // ORDERING: Relaxed; a single thread, timing only.
        let new = black_box(&c).usage.fetch_add(1, Ordering::Relaxed) + 1;
        if new > black_box(c.max) {
            break;
        }
        if new > c.watermark.load(Ordering::Relaxed) {
            c.watermark.store(new, Ordering::Relaxed);
        }
    }
    t.elapsed_ns() / n as f64
}

/// A stat update's own per-CPU adds, replicated: the memcg's and the
/// lruvec's counters of an item, each at an index looked up in a table.
pub fn stat_update_ns(n: u64) -> f64 {
    let index: Vec<u8> = (0..64).map(|i| (i * 7 % 64) as u8).collect();
    let mut memcg = vec![0i64; 64];
    let mut lruvec = vec![0i64; 64];
    let t = CpuTimer::start();
    for i in 0..n {
        let item = index[black_box(i as usize) & 63] as usize;
        memcg[item] += 1;
        lruvec[item] += 1;
    }
    black_box((&memcg, &lruvec));
    t.elapsed_ns() / n as f64
}
