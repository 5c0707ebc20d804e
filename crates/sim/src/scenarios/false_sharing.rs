//! The seed-002 false-sharing effect, with a bench-only layout variant.
//!
//! In 2026 a shrunk `struct vmpressure` moved `memory_events_local[SWAP_FAIL]`
//! (bumped ~20 M times a minute by stress-ng mremap) onto the cache line of
//! the hot, read-mostly `vmstats_percpu` pointer that every stat update
//! loads; mremap throughput fell 36%, and cache-line aligning the pointer
//! restored it (57311 → 36542 → 57089 ops/s).
//!
//! Here a group header holds a per-shard base (the "pointer": an index into
//! the per-shard counter slots, loaded by every stat update) and a write-hot
//! event counter, either on one cache line ([`SharedHeader`]) or on lines of
//! their own ([`SeparatedHeader`]). Updater threads do operations of
//! [`UPDATES_PER_OP`] stat updates, each loading the base and adding to their
//! own shard's slot; event threads bump the event counter back to back. The
//! throughput of the updaters is the measure.

use crate::runner::real::UpdateOutcome;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Stat updates per operation (an mremap touches several stats).
pub const UPDATES_PER_OP: usize = 4;

/// Layout names, as used for policies.
pub const LAYOUTS: [&str; 2] = ["separated", "shared"];

/// A group header: the hot per-shard base and the write-hot event counter.
pub trait Header: Sync + Default {
    /// The per-shard base, loaded by every stat update.
    fn base(&self) -> &AtomicUsize;
    /// The write-hot event counter.
    fn events(&self) -> &AtomicU64;
}

/// Base and event counter on the same cache line (the regression).
#[repr(C, align(128))]
#[derive(Debug, Default)]
pub struct SharedHeader {
    base: AtomicUsize,
    events: AtomicU64,
}

/// A 128-byte aligned cell (x86's adjacent-line prefetcher pairs lines).
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Padded<T>(pub T);

/// Base and event counter on separate cache lines (the fix).
#[repr(C)]
#[derive(Debug, Default)]
pub struct SeparatedHeader {
    base: Padded<AtomicUsize>,
    events: Padded<AtomicU64>,
}

impl Header for SharedHeader {
    fn base(&self) -> &AtomicUsize {
        &self.base
    }
    fn events(&self) -> &AtomicU64 {
        &self.events
    }
}

impl Header for SeparatedHeader {
    fn base(&self) -> &AtomicUsize {
        &self.base.0
    }
    fn events(&self) -> &AtomicU64 {
        &self.events.0
    }
}

/// Runs `updaters` updater threads and `eventers` event threads on a fresh
/// header of type `H` for `duration`; returns the updaters' operations.
pub fn run_layout<H: Header>(
    updaters: usize,
    eventers: usize,
    duration: Duration,
) -> UpdateOutcome {
    let header = H::default();
    // A power of two, so the slot index is a mask, not a division.
    let n_slots = updaters.max(1).next_power_of_two();
    let mask = n_slots - 1;
    let slots: Vec<Padded<AtomicU64>> = (0..n_slots).map(|_| Padded::default()).collect();
    // ORDERING: Relaxed everywhere: the base never changes during the run
    // (it is read-mostly, as the kernel's pointer), counters are statistics,
    // and `stop`/`ops` only end loops and are read after the threads join.
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let barrier = Barrier::new(updaters + eventers + 1);
    let mut elapsed = Duration::ZERO;
    std::thread::scope(|s| {
        for t in 0..updaters {
            let (header, slots, stop, ops, barrier) = (&header, &slots, &stop, &ops, &barrier);
            s.spawn(move || {
                let mut n = 0u64;
                barrier.wait();
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        for _ in 0..UPDATES_PER_OP {
                            let base = header.base().load(Ordering::Relaxed);
                            slots[(base + t) & mask].0.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    n += 64;
                }
                ops.fetch_add(n, Ordering::Relaxed);
            });
        }
        for _ in 0..eventers {
            let (header, stop, barrier) = (&header, &stop, &barrier);
            s.spawn(move || {
                barrier.wait();
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        header.events().fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        barrier.wait();
        let start = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        elapsed = start.elapsed();
    });
    UpdateOutcome {
        ops: ops.load(Ordering::Relaxed),
        elapsed,
    }
}

/// Runs the named layout (`shared` or `separated`); `None` for other names.
pub fn run_named(layout: &str, threads: usize, duration: Duration) -> Option<UpdateOutcome> {
    let updaters = (threads / 2).max(1);
    let eventers = threads.saturating_sub(updaters).max(1);
    match layout {
        "shared" => Some(run_layout::<SharedHeader>(updaters, eventers, duration)),
        "separated" => Some(run_layout::<SeparatedHeader>(updaters, eventers, duration)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn shared_layout_puts_both_fields_on_one_line() {
        assert_eq!(
            offset_of!(SharedHeader, base) / 64,
            offset_of!(SharedHeader, events) / 64
        );
        assert_eq!(align_of::<SharedHeader>(), 128);
    }

    #[test]
    fn separated_layout_puts_them_128_bytes_apart() {
        let d = offset_of!(SeparatedHeader, events) - offset_of!(SeparatedHeader, base);
        assert!(d >= 128, "{d}");
        assert_eq!(size_of::<SeparatedHeader>(), 256);
    }

    #[test]
    fn both_layouts_run() {
        for l in LAYOUTS {
            let o = run_named(l, 2, Duration::from_millis(10)).unwrap();
            assert!(o.ops > 0);
        }
        assert!(run_named("other", 2, Duration::from_millis(1)).is_none());
    }
}
