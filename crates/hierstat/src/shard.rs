//! Shard selection.
//!
//! A tree has a fixed number of shards. Explicit-shard calls (the simulator)
//! name one with [`Shard`]; implicit calls use the current thread's shard:
//! each thread gets an ordinal on first use, spread over `[0, 2^32)` by a
//! Weyl sequence, and maps it to a shard with one multiply (Lemire's range
//! reduction) instead of a division. Consecutive threads land on different
//! shards, so with no more threads than shards each shard has one writer and
//! its cache lines stay in that core's cache.
//!
//! This is the crate's only process-wide state: a counter handing out thread
//! ordinals. It carries no configuration and no data.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

/// An explicit shard index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard(pub usize);

// ORDERING: Relaxed; only uniqueness of the returned values matters.
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);

/// 2^32 / golden ratio: consecutive multiples are evenly spread mod 2^32.
const WEYL: u32 = 0x9E37_79B9;

thread_local! {
    static THREAD_HASH: Cell<u32> = const { Cell::new(0) };
    static THREAD_HASH_SET: Cell<bool> = const { Cell::new(false) };
}

#[cold]
fn assign_thread_hash() -> u32 {
    let ordinal = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    let h = ordinal.wrapping_mul(WEYL);
    THREAD_HASH.with(|c| c.set(h));
    THREAD_HASH_SET.with(|c| c.set(true));
    h
}

/// The current thread's shard among `shards`.
#[inline(always)]
pub(crate) fn current(shards: usize) -> usize {
    let h = if THREAD_HASH_SET.with(Cell::get) {
        THREAD_HASH.with(Cell::get)
    } else {
        assign_thread_hash()
    };
    ((h as u64 * shards as u64) >> 32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ordinals_spread_over_two_shards() {
        let shard = |o: u32| ((o.wrapping_mul(WEYL) as u64 * 2) >> 32) as usize;
        assert_ne!(shard(0), shard(1));
        assert_ne!(shard(1), shard(2));
    }

    #[test]
    fn current_shard_is_stable_and_in_range() {
        let a = current(7);
        assert!(a < 7);
        assert_eq!(a, current(7));
    }
}
