//! What the engine is measured against, besides bare atomics and plain
//! adds: the eager-atomic tree (memcg before rstat) and a flat sharded
//! counter.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// A value on its own 128-byte block (two lines: x86's adjacent-line
/// prefetch pairs 64-byte lines), so two of them never share a line.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Padded<T>(pub T);

/// Items per counter block of [`EagerTree`].
const PER_BLOCK: usize = 16;

/// The pre-rstat design (memcg before 5.13's `2d146aa3aa84`, the lab's
/// `pre-rstat` policy): one shared counter per (group, item), and every
/// update adds to it and to each ancestor's with an atomic RMW. Laid out as
/// the simulator's `sim::baselines::EagerTree` is (16 counters to a
/// 128-byte block, a parent table), so the bench prices the same design the
/// lab simulates.
///
/// Counters are pure statistics: every access is `Relaxed`.
#[derive(Debug)]
pub struct EagerTree {
    parents: Vec<Option<u32>>,
    blocks_per_group: usize,
    blocks: Vec<Padded<[AtomicI64; PER_BLOCK]>>,
}

impl EagerTree {
    /// A chain of `depth + 1` groups (the root is group 0, the deepest
    /// group is `depth`) with `items` counters each.
    pub fn chain(depth: u32, items: usize) -> EagerTree {
        let blocks_per_group = items.div_ceil(PER_BLOCK).max(1);
        let groups = depth as usize + 1;
        let mut blocks = Vec::with_capacity(groups * blocks_per_group);
        blocks.resize_with(groups * blocks_per_group, Padded::default);
        EagerTree {
            parents: (0..=depth).map(|g| g.checked_sub(1)).collect(),
            blocks_per_group,
            blocks,
        }
    }

    fn counter(&self, group: u32, item: usize) -> &AtomicI64 {
        let b = group as usize * self.blocks_per_group + item / PER_BLOCK;
        &self.blocks[b].0[item % PER_BLOCK]
    }

    /// Adds `delta` to `item` of `group` and of every ancestor.
    #[inline]
    pub fn add(&self, group: u32, item: usize, delta: i64) {
        let mut cur = Some(group);
        while let Some(g) = cur {
            // ORDERING: Relaxed, a pure statistic.
            self.counter(g, item).fetch_add(delta, Ordering::Relaxed);
            cur = self.parents[g as usize];
        }
    }

    /// `item` of `group` (exact: every update reached it).
    pub fn read(&self, group: u32, item: usize) -> i64 {
        // ORDERING: Relaxed, a pure statistic.
        self.counter(group, item).load(Ordering::Relaxed)
    }
}

/// A flat sharded counter (LongAdder-style): each writer `fetch_add`s its
/// own cache-padded cell; a read sums them. No hierarchy, no bound.
#[derive(Debug)]
pub struct ShardedCounter {
    cells: Vec<Padded<AtomicU64>>,
}

impl ShardedCounter {
    /// A counter of `shards` cells.
    pub fn new(shards: usize) -> ShardedCounter {
        ShardedCounter {
            cells: (0..shards.max(1)).map(|_| Padded::default()).collect(),
        }
    }

    /// Adds `v` to cell `shard`.
    #[inline]
    pub fn add(&self, shard: usize, v: u64) {
        // ORDERING: Relaxed, a pure statistic.
        self.cells[shard].0.fetch_add(v, Ordering::Relaxed);
    }

    /// The sum of the cells.
    pub fn sum(&self) -> u64 {
        self.cells
            .iter()
            // ORDERING: Relaxed, a pure statistic.
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eager_tree_adds_to_every_ancestor() {
        let t = EagerTree::chain(3, 20);
        t.add(3, 17, 5);
        t.add(2, 17, 1);
        assert_eq!(t.read(0, 17), 6);
        assert_eq!(t.read(3, 17), 5);
        assert_eq!(t.read(3, 0), 0);
        assert_eq!(std::mem::size_of::<Padded<[AtomicI64; PER_BLOCK]>>(), 128);
    }

    #[test]
    fn the_sharded_counter_sums_its_cells() {
        let c = ShardedCounter::new(3);
        c.add(0, 2);
        c.add(2, 5);
        assert_eq!(c.sum(), 7);
    }
}
