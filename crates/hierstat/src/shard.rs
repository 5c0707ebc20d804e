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

/// The current thread's slot; given back to the pool when the thread exits.
struct ThreadSlot {
    slot: Cell<u32>,
    taken: Cell<bool>,
}

impl Drop for ThreadSlot {
    fn drop(&mut self) {
        if self.taken.get() {
            pool().free.push(Reverse(self.slot.get()));
        }
    }
}

thread_local! {
    static SLOT: ThreadSlot = const {
        ThreadSlot {
            slot: Cell::new(0),
            taken: Cell::new(false),
        }
    };
}

#[cold]
fn take_slot(t: &ThreadSlot) -> u32 {
    let mut p = pool();
    let slot = match p.free.pop() {
        Some(Reverse(s)) => s,
        None => {
            let s = p.next;
            p.next += 1;
            s
        }
    };
    t.slot.set(slot);
    t.taken.set(true);
    slot
}

/// The current thread's slot (see the module docs). A thread whose
/// thread-locals are being torn down uses slot 0.
#[inline(always)]
fn current_slot() -> u32 {
    SLOT.try_with(|t| {
        if t.taken.get() {
            t.slot.get()
        } else {
            take_slot(t)
        }
    })
    .unwrap_or(0)
}

/// The current thread's shard among `shards`.
#[inline(always)]
pub(crate) fn current(shards: usize) -> usize {
    let slot = current_slot() as usize;
    if slot < shards {
        slot
    } else {
        slot % shards
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_shard_is_stable_and_in_range() {
        let a = current(7);
        assert!(a < 7);
        assert_eq!(a, current(7));
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
                        tx.send(current_slot()).unwrap();
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
