//! Which shard the current thread writes: its *seat*.
//!
//! A tree has a fixed number of shards. Explicit-shard calls (the simulator,
//! `hierstat::sim`) name one; implicit calls use the current thread's.
//!
//! Each thread takes the lowest free *seat* of a process-wide pool on first
//! use and gives it back when it exits, so the live threads always hold
//! seats `0..n`. A tree with `shards` shards maps seat `i` to shard `i` when
//! `i < shards` (a compare, no division) and to `i % shards` otherwise. With no more live threads
//! than shards every shard therefore has at most one writer and its cache
//! lines stay in that core's cache, however many threads came and went
//! before. (Hashing an ever-growing thread ordinal, as this module once
//! did, let two of two threads share a shard: the real-mode update-path
//! benchmark swung 4x between runs on that.)
//!
//! This is the crate's only process-wide state: the pool of free seats. It
//! carries no configuration and no data.

use crate::sync::std_only::{StdMutex, StdMutexGuard};
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Seats handed out so far, and the ones given back.
struct SeatPool {
    next: u32,
    free: BinaryHeap<Reverse<u32>>,
}

static POOL: StdMutex<SeatPool> = StdMutex::new(SeatPool {
    next: 0,
    free: BinaryHeap::new(),
});

fn pool() -> StdMutexGuard<'static, SeatPool> {
    // A panic while holding the lock cannot leave the pool inconsistent
    // (each update is one push or pop), so a poisoned lock is still good.
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// `FAST` before the thread's first update.
const NO_SEAT: u32 = u32::MAX;
/// `FAST` once the thread has given its seat back (it is exiting).
const GONE: u32 = u32::MAX - 1;

thread_local! {
    /// The thread's seat, `NO_SEAT` or `GONE`: a plain `Cell` with no
    /// destructor, so the hot path's lookup is one thread-local load and a
    /// compare, with no lazy-registration state to check.
    static FAST: Cell<u32> = const { Cell::new(NO_SEAT) };
    /// Gives the seat back when the thread exits; touched once, on first
    /// use, to register its destructor.
    static GUARD: SeatGuard = const { SeatGuard };
}

/// Returns the thread's seat to the pool when the thread exits.
struct SeatGuard;

impl Drop for SeatGuard {
    fn drop(&mut self) {
        let seat = FAST.with(|f| f.replace(GONE));
        if seat < GONE {
            pool().free.push(Reverse(seat));
        }
    }
}

#[cold]
#[inline(never)]
fn take_seat() -> Option<u32> {
    if FAST.with(Cell::get) == GONE {
        return None;
    }
    // Register the guard's destructor first; a thread already tearing
    // down its thread-locals gets no seat.
    GUARD.try_with(|_| ()).ok()?;
    let mut p = pool();
    let seat = match p.free.pop() {
        Some(Reverse(s)) => s,
        None => {
            let s = p.next;
            p.next += 1;
            s
        }
    };
    FAST.with(|f| f.set(seat));
    Some(seat)
}

/// The current thread's seat (see the module docs); `None` for a thread
/// that has given its seat back (its thread-locals are being torn down).
#[inline(always)]
fn current_seat() -> Option<u32> {
    let seat = FAST.with(Cell::get);
    if seat < GONE {
        Some(seat)
    } else {
        take_seat()
    }
}

/// The current thread's seat as stored: `NO_SEAT` (`u32::MAX`) before its
/// first update and `GONE` after it gave the seat back, so any bound check
/// against a shard count sends those to [`current`].
#[inline(always)]
pub(crate) fn current_seat_raw() -> u32 {
    FAST.with(Cell::get)
}

/// Where the current thread writes in a tree of `shards` shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lane {
    /// The shard.
    pub(crate) shard: usize,
    /// Whether this thread is the shard's *owner*: it holds seat `shard`,
    /// and no other live thread holds that seat, so it may write the
    /// shard's owner cells with plain loads and stores. A seat changes
    /// hands only through the pool's mutex, which orders the previous
    /// holder's last writes before the next holder's first.
    pub(crate) owner: bool,
}

/// The current thread's lane among `shards`, of which the first
/// `ownable` (all, or none where the tree cannot use the owner path) may be
/// written by their owners.
#[inline(always)]
pub(crate) fn current(shards: usize, ownable: usize) -> Lane {
    match current_seat() {
        Some(seat) if (seat as usize) < ownable => Lane {
            shard: seat as usize,
            owner: true,
        },
        Some(seat) if (seat as usize) < shards => Lane {
            shard: seat as usize,
            owner: false,
        },
        Some(seat) => Lane {
            // One subtraction for the first `shards` seats beyond the
            // shards (a division costs tens of cycles).
            shard: match seat as usize - shards {
                s if s < shards => s,
                _ => seat as usize % shards,
            },
            owner: false,
        },
        None => Lane {
            shard: 0,
            owner: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_shard_is_stable_and_in_range() {
        let a = current(7, 7);
        assert!(a.shard < 7);
        assert_eq!(a, current(7, 7));
        assert!(!current(7, 0).owner);
    }

    #[test]
    fn live_threads_get_distinct_slots_and_exited_ones_are_reused() {
        // Other tests in this binary take seats too, so check relations,
        // not absolute values.
        let pair = || {
            let (tx, rx) = std::sync::mpsc::channel();
            let hold = std::sync::Arc::new(std::sync::Barrier::new(2));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let tx = tx.clone();
                    let hold = hold.clone();
                    std::thread::spawn(move || {
                        tx.send(current_seat().unwrap()).unwrap();
                        // Both alive at once: their seats must differ.
                        hold.wait();
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            let mut v: Vec<u32> = rx.try_iter().collect();
            v.sort_unstable();
            v
        };
        let first = pair();
        assert_eq!(first.len(), 2);
        assert_ne!(first[0], first[1]);
        // Their seats were given back: 20 more pairs take the lowest free
        // seats instead of 40 new ones (tests running alongside may take a
        // few).
        let pool_next = pool().next;
        for _ in 0..20 {
            let p = pair();
            assert_ne!(p[0], p[1]);
        }
        assert!(pool().next <= pool_next + 8, "seats are reused");
    }
}
