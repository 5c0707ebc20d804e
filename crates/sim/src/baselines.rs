//! Baselines the engine is compared with.
//!
//! [`EagerTree`] (`pre-rstat`) is the design memcg used before rstat (before
//! 5.13's `2d146aa3aa84`): one shared counter per (group, item), and every
//! update is propagated eagerly up the ancestors with an atomic add. Reads
//! are exact and free; updates cost one shared atomic RMW per level, and all
//! CPUs updating the same subtree fight over the same cache lines.

use crate::backend::{
    FlushReason, FlushRules, FlushScope, LineId, ReadValue, StatsBackend, Update,
};
use crate::cost::Work;
use crate::lock::LockMode;
use crate::workload::{GroupIdx, TreeShape};
use std::sync::atomic::{AtomicI64, Ordering};

/// Items per cache-line block.
const PER_BLOCK: usize = 16;

/// 16 counters on their own 128-byte block (two lines: adjacent-line
/// prefetch pairs lines on x86), so two groups never share a line.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Block([AtomicI64; PER_BLOCK]);

/// The pre-rstat eager-atomic hierarchy: policy name `pre-rstat`.
///
/// Counters are pure statistics: every access is `Relaxed`, since no other
/// memory is published through them and each add is a single RMW.
#[derive(Debug)]
pub struct EagerTree {
    parents: Vec<Option<GroupIdx>>,
    blocks_per_group: usize,
    blocks: Vec<Block>,
}

/// Line id of a group's counters block `b` in [`EagerTree`].
fn line_of(group: GroupIdx, block: usize) -> LineId {
    (u64::from(group) << 8) | block as u64
}

impl EagerTree {
    /// Policy name.
    pub const NAME: &'static str = lab::policy::PRE_RSTAT;

    /// A tree of `shape` with `items` counters per group.
    pub fn new(shape: &TreeShape, items: usize) -> Self {
        let blocks_per_group = items.div_ceil(PER_BLOCK).max(1);
        let mut blocks = Vec::with_capacity(shape.len() * blocks_per_group);
        blocks.resize_with(shape.len() * blocks_per_group, Block::default);
        EagerTree {
            parents: shape.groups().iter().map(|g| g.parent).collect(),
            blocks_per_group,
            blocks,
        }
    }

    fn counter(&self, group: GroupIdx, item: usize) -> &AtomicI64 {
        let b = group as usize * self.blocks_per_group + item / PER_BLOCK;
        &self.blocks[b].0[item % PER_BLOCK]
    }
}

impl StatsBackend for EagerTree {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn rules(&self) -> FlushRules {
        FlushRules {
            lock: LockMode::Serialize,
            scope: FlushScope::Subtree,
            periodic: false,
        }
    }

    #[inline]
    fn add(&self, group: GroupIdx, item: usize, delta: i64) {
        let mut cur = Some(group);
        while let Some(g) = cur {
            // ORDERING: Relaxed, pure statistic (see the type's docs).
            self.counter(g, item).fetch_add(delta, Ordering::Relaxed);
            cur = self.parents[g as usize];
        }
    }

    fn add_counted(&mut self, u: Update, work: &mut Work, lines: &mut Vec<LineId>) {
        let (group, item, delta) = (u.group, u.item, u.delta);
        work.calls += 1;
        let mut cur = Some(group);
        while let Some(g) = cur {
            // ORDERING: Relaxed, pure statistic (see the type's docs).
            self.counter(g, item).fetch_add(delta, Ordering::Relaxed);
            work.groups_visited += 1;
            lines.push(line_of(g, item / PER_BLOCK));
            cur = self.parents[g as usize];
        }
    }

    fn needs_flush(&self, _group: GroupIdx, _reason: FlushReason) -> bool {
        false
    }

    fn flush(&self, _group: GroupIdx, _reason: FlushReason, work: &mut Work) {
        work.calls += 1;
    }

    fn read(&self, group: GroupIdx, item: usize, work: &mut Work) -> ReadValue {
        work.items_read += 1;
        // ORDERING: Relaxed, pure statistic (see the type's docs).
        let v = self.counter(group, item).load(Ordering::Relaxed);
        ReadValue {
            value: v.max(0) as u64,
            bound: Some(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eager_tree_propagates_to_every_ancestor() {
        let shape = TreeShape::chain(3);
        let mut t = EagerTree::new(&shape, 20);
        t.add(3, 17, 5);
        t.add(2, 17, 1);
        let mut w = Work::default();
        assert_eq!(t.read(0, 17, &mut w).value, 6);
        assert_eq!(t.read(3, 17, &mut w).value, 5);
        assert_eq!(t.read(3, 0, &mut w).value, 0);
        let mut lines = Vec::new();
        let u = Update {
            shard: 0,
            group: 3,
            item: 1,
            delta: -100,
        };
        t.add_counted(u, &mut w, &mut lines);
        assert_eq!(lines.len(), 4);
        assert_eq!(w.groups_visited, 4);
        assert_eq!(t.read(1, 1, &mut w).value, 0, "negative reads clamp to 0");
    }

    #[test]
    fn blocks_are_line_aligned() {
        assert_eq!(std::mem::align_of::<Block>(), 128);
        assert_eq!(std::mem::size_of::<Block>(), 128);
    }
}
