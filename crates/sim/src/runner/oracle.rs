//! The exact oracle of the simulated runner: what every read should have
//! returned, and the rules that judge the values the engine did return.
//!
//! The oracle applies every update the workload makes, as it makes it, to
//! exact hierarchical and local sums per (group, item). The scheduler
//! ([`super::sim`]) decides *when* things happen; the oracle says whether a
//! read was right:
//!
//! * a read is **stale** ([`is_stale`]) when its value is further than the
//!   engine's reported bound from the exact value both when its flush ran
//!   and when it returned (updates may land while it is in progress);
//! * a spike read **misses** the spike ([`misses_spike`]) when it lacks more
//!   than half of it;
//! * a parent read that follows a child read shows **child > parent**
//!   ([`child_gt_parent`]) when it is below the child's value while the
//!   exact values were not.

use crate::workload::{GroupIdx, TreeShape};

/// Exact hierarchical and local sums of every update, per (group, item).
#[derive(Debug, Clone)]
pub struct Oracle {
    items: usize,
    parents: Vec<Option<GroupIdx>>,
    /// Exact hierarchical value per (group, item).
    exact: Vec<i64>,
    /// Exact local value per (group, item).
    local: Vec<i64>,
}

impl Oracle {
    /// All zero, over `shape` with `items` items per group.
    pub fn new(shape: &TreeShape, items: usize) -> Oracle {
        Oracle {
            items,
            parents: shape.groups().iter().map(|g| g.parent).collect(),
            exact: vec![0; shape.len() * items],
            local: vec![0; shape.len() * items],
        }
    }

    /// Applies an update of `delta` to `item` of group `g`: its local value
    /// and the hierarchical value of `g` and every ancestor.
    pub fn apply(&mut self, g: GroupIdx, item: usize, delta: i64) {
        self.local[g as usize * self.items + item] += delta;
        let mut cur = Some(g);
        while let Some(c) = cur {
            self.exact[c as usize * self.items + item] += delta;
            cur = self.parents[c as usize];
        }
    }

    /// The exact hierarchical value of `item` of group `g`.
    pub fn exact(&self, g: GroupIdx, item: usize) -> i64 {
        self.exact[g as usize * self.items + item]
    }

    /// The exact hierarchical values of the first `n` items of group `g`.
    pub fn exact_items(&self, g: GroupIdx, n: usize) -> &[i64] {
        let base = g as usize * self.items;
        &self.exact[base..base + n]
    }

    /// The exact local value of `item` of group `g`.
    pub fn local(&self, g: GroupIdx, item: usize) -> i64 {
        self.local[g as usize * self.items + item]
    }

    /// The parent of group `g`.
    pub fn parent(&self, g: GroupIdx) -> Option<GroupIdx> {
        self.parents[g as usize]
    }
}

/// Whether a read that returned `value` with error `bound` is stale: off by
/// more than the bound from the exact value both when it returned
/// (`exact_now`) and when its flush ran (`exact_at_flush`), both clamped at
/// 0 as reads are.
pub fn is_stale(value: u64, bound: u64, exact_now: i64, exact_at_flush: i64) -> bool {
    let (now, at_flush) = (exact_now.max(0) as u64, exact_at_flush.max(0) as u64);
    value.abs_diff(now) > bound && value.abs_diff(at_flush) > bound
}

/// Whether a read of `value` after a spike of `pages` missed it: it lacks
/// more than half of the spike against the exact value.
pub fn misses_spike(value: u64, exact: i64, pages: u64) -> bool {
    (exact.max(0) as u64).saturating_sub(value) > pages / 2
}

/// Whether a parent read of `parent_value` after a child read of
/// `child_value` shows child > parent while the exact values did not.
pub fn child_gt_parent(
    child_value: u64,
    child_exact: i64,
    parent_value: u64,
    parent_exact: i64,
) -> bool {
    parent_value < child_value && parent_exact >= child_exact
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_is_stale_only_if_off_at_both_instants() {
        assert!(!is_stale(100, 10, 105, 200));
        assert!(!is_stale(100, 10, 300, 95));
        assert!(is_stale(100, 10, 300, 200));
        assert!(!is_stale(0, 0, -5, -1), "negative exact values read as 0");
    }

    #[test]
    fn spike_and_inconsistency_rules() {
        assert!(misses_spike(10, 100, 64));
        assert!(!misses_spike(70, 100, 64));
        assert!(child_gt_parent(50, 50, 40, 60));
        assert!(!child_gt_parent(50, 50, 40, 40 - 1));
    }
}
