//! Shard selection.
//!
//! A tree has a fixed number of shards. Explicit-shard calls (the simulator)
//! name one with [`Shard`]; implicit calls use the current thread's shard.
//!
//! Each thread takes the lowest free *slot* on first use and gives it back
//! when it exits, so the live threads always hold slots `0..n`. A tree with
//! `shards` shards maps slot `i` to shard `i` when `i < shards` (a compare,
//! no division) and to `i % shards` otherwise. With no more live threads
//! than shards every shard therefore has at most one writer and its cache
//! lines stay in that core's cache, however many threads came and went
//! before. (Hashing an ever-growing thread ordinal, as this module once
//! did, let two of two threads share a shard: the real-mode update-path
//! benchmark swung 4x between runs on that.)
//!
//! This is the crate's only process-wide state: the pool of free slots. It
//! carries no configuration and no data.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;

/// An explicit shard index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard(pub usize);

/// Slots handed out so far, and the ones given back.
struct SlotPool {
    next: u32,
    free: BinaryHeap<Reverse<u32>>,
}

static POOL: Mutex<SlotPool> = Mutex::new(SlotPool {
    next: 0,
    free: BinaryHeap::new(),
});

fn pool() -> std::sync::MutexGuard<'static, SlotPool> {
    // A panic while holding the lock cannot leave the pool inconsistent
    // (each update is one push or pop), so a poisoned lock is still good.
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// `FAST` before the thread's first update.
const NO_SLOT: u32 = u32::MAX;
/// `FAST` once the thread has given its slot back (it is exiting).
const GONE: u32 = u32::MAX - 1;

thread_local! {
    /// The thread's slot, `NO_SLOT` or `GONE`: a plain `Cell` with no
    /// destructor, so the hot path's lookup is one thread-local load and a
    /// compare, with no lazy-registration state to check.
    static FAST: Cell<u32> = const { Cell::new(NO_SLOT) };
    /// Gives the slot back when the thread exits; touched once, on first
    /// use, to register its destructor.
    static GUARD: SlotGuard = const { SlotGuard };
}

/// Returns the thread's slot to the pool when the thread exits.
struct SlotGuard;

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let slot = FAST.with(|f| f.replace(GONE));
        if slot < GONE {
            pool().free.push(Reverse(slot));
        }
    }
}

#[cold]
#[inline(never)]
fn take_slot() -> Option<u32> {
    if FAST.with(Cell::get) == GONE {
        return None;
    }
    // Register the guard's destructor first; a thread already tearing
    // down its thread-locals gets no slot.
    GUARD.try_with(|_| ()).ok()?;
    let mut p = pool();
    let slot = match p.free.pop() {
        Some(Reverse(s)) => s,
        None => {
            let s = p.next;
            p.next += 1;
            s
        }
    };
    FAST.with(|f| f.set(slot));
    Some(slot)
}

/// The current thread's slot (see the module docs); `None` for a thread
/// that has given its slot back (its thread-locals are being torn down).
#[inline(always)]
fn current_slot() -> Option<u32> {
    let slot = FAST.with(Cell::get);
    if slot < GONE {
        Some(slot)
    } else {
        take_slot()
    }
}

/// The current thread's slot as stored: `NO_SLOT` (`u32::MAX`) before its
/// first update and `GONE` after it gave the slot back, so any bound check
/// against a shard count sends those to [`current`].
#[inline(always)]
pub(crate) fn current_slot_raw() -> u32 {
    FAST.with(Cell::get)
}

/// Where the current thread writes in a tree of `shards` shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lane {
    /// The shard.
    pub(crate) shard: usize,
    /// Whether this thread is the shard's *owner*: it holds slot `shard`,
    /// and no other live thread holds that slot, so it may write the
    /// shard's owner cells with plain loads and stores. A slot changes
    /// hands only through the pool's mutex, which orders the previous
    /// holder's last writes before the next holder's first.
    pub(crate) owner: bool,
}

/// The current thread's lane among `shards`, of which the first
/// `ownable` (all, or none where the tree cannot use the owner path) may be
/// written by their owners.
#[inline(always)]
pub(crate) fn current(shards: usize, ownable: usize) -> Lane {
    match current_slot() {
        Some(slot) if (slot as usize) < ownable => Lane {
            shard: slot as usize,
            owner: true,
        },
        Some(slot) if (slot as usize) < shards => Lane {
            shard: slot as usize,
            owner: false,
        },
        Some(slot) => Lane {
            shard: slot as usize % shards,
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
        // Other tests in this binary take slots too, so check relations,
        // not absolute values.
        let pair = || {
            let (tx, rx) = std::sync::mpsc::channel();
            let hold = std::sync::Arc::new(std::sync::Barrier::new(2));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let tx = tx.clone();
                    let hold = hold.clone();
                    std::thread::spawn(move || {
                        tx.send(current_slot().unwrap()).unwrap();
                        // Both alive at once: their slots must differ.
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
        // Their slots were given back: 20 more pairs take the lowest free
        // slots instead of 40 new ones (tests running alongside may take a
        // few).
        let pool_next = pool().next;
        for _ in 0..20 {
            let p = pair();
            assert_ne!(p[0], p[1]);
        }
        assert!(pool().next <= pool_next + 8, "slots are reused");
    }
}
