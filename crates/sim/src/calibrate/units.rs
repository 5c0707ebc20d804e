//! The machine's own per-unit costs: an uncontended atomic, an
//! uncontended lock, a cache line's transfer between two threads.

use simcore::clock::CpuTimer;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Smallest of `reps` measurements: on a shared, noisy host the minimum is
/// the best estimate of an uncontended per-unit cost.
pub fn min_of(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..reps.max(1)).map(|_| f()).fold(f64::INFINITY, f64::min)
}

/// A measured line transfer above this (ns) means the two threads were not
/// running at the same time (an overloaded host); the default is kept.
pub const MAX_PLAUSIBLE_TRANSFER_NS: f64 = 2_000.0;

/// ns per uncontended `AtomicU64::fetch_add` (Relaxed) over `n`, on the
/// thread CPU clock.
#[inline(never)]
pub fn atomic_ns(n: u64) -> f64 {
    // ORDERING: Relaxed; a benchmark counter.
    let a = AtomicU64::new(0);
    let t = CpuTimer::start();
    for _ in 0..n {
        black_box(&a).fetch_add(1, Ordering::Relaxed);
    }
    t.elapsed_ns() / n as f64
}

/// ns per uncontended `Mutex` lock, add and unlock over `n`.
pub fn lock_ns(n: u64) -> f64 {
    let m = Mutex::new(0u64);
    let t = CpuTimer::start();
    for _ in 0..n {
        *black_box(&m).lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }
    t.elapsed_ns() / n as f64
}

/// Half a ping-pong round trip of one word between two threads (wall
/// clock), over `rounds` round trips; `None` on a single-CPU host or when
/// the second thread cannot start.
pub fn line_transfer_ns(rounds: u64) -> Option<f64> {
    if std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        < 2
    {
        return None;
    }
    // ORDERING: Acquire/Release pairs between the two threads' stores and
    // loads of the ping-pong word (each side waits for the other's value).
    let word = AtomicU64::new(0);
    let start = Instant::now();
    let ran = std::thread::scope(|s| {
        let w = &word;
        let other = simcore::thread::spawn_scoped(s, "mmlab-calibrate", move || {
            for i in 0..rounds {
                while w.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                w.store(2 * i + 2, Ordering::Release);
            }
        });
        if other.is_err() {
            return false;
        }
        for i in 0..rounds {
            w.store(2 * i + 1, Ordering::Release);
            while w.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        true
    });
    ran.then(|| start.elapsed().as_nanos() as f64 / (2 * rounds) as f64)
}
