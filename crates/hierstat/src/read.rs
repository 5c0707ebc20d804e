//! Reads: hierarchical, local, per-node, and value-with-error-bound.
//!
//! Reads never flush: they return the last flushed aggregate with one
//! relaxed load. Flush first (or use the bound) when freshness matters.
//! Signed state aggregates can be transiently negative (an increment on one
//! shard not yet flushed while its decrement on another shard is): state
//! reads clamp them to 0, as every kernel reader does.

use crate::error::Error;
use crate::node::{Group, Node};
use crate::policy::{ThresholdRule, ThresholdScheme};
use crate::schema::{ItemId, ItemKind, NodeItemId};
use crate::stats::HierStats;
use crate::sync::Ordering;

/// A value with its current error bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounded {
    /// The flushed value (clamped at 0 for state items).
    pub value: u64,
    /// Upper bound of `|value − exact|` in the item's unit, or `None` when
    /// the policy gives no bound without a flush (the group is above its
    /// threshold, or the policy has no threshold accounting).
    pub bound: Option<u64>,
}

fn clamp(kind: ItemKind, v: i64) -> u64 {
    match kind {
        ItemKind::Event => v as u64,
        _ => v.max(0) as u64,
    }
}

impl HierStats {
    /// Hierarchical value of an item (the group's whole subtree), as of the
    /// last flush that covered it.
    ///
    /// # Errors
    /// Item errors.
    #[inline]
    pub fn read(&self, group: &Group, item: ItemId) -> Result<u64, Error> {
        let slot = self.core.schema.slot_of(item)?;
        let kind = self.core.schema.info(item).kind;
        // ORDERING: Relaxed; a statistic, consistent per counter only.
        Ok(clamp(kind, group.node.agg[slot].load(Ordering::Relaxed)))
    }

    /// Hierarchical value without clamping (may be transiently negative).
    ///
    /// # Errors
    /// Item errors.
    pub fn read_signed(&self, group: &Group, item: ItemId) -> Result<i64, Error> {
        let slot = self.core.schema.slot_of(item)?;
        // ORDERING: Relaxed; a statistic.
        Ok(group.node.agg[slot].load(Ordering::Relaxed))
    }

    /// Local value: this group's own updates only, as of the last flush.
    ///
    /// # Errors
    /// Item errors.
    pub fn read_local(&self, group: &Group, item: ItemId) -> Result<u64, Error> {
        let slot = self.core.schema.slot_of(item)?;
        let kind = self.core.schema.info(item).kind;
        // ORDERING: Relaxed; a statistic.
        Ok(clamp(kind, group.node.local[slot].load(Ordering::Relaxed)))
    }

    /// Hierarchical value of a per-node item on `node`; `None` as node reads
    /// the total over nodes.
    ///
    /// # Errors
    /// Item errors, [`Error::NodeOutOfRange`].
    pub fn read_node(
        &self,
        group: &Group,
        item: NodeItemId,
        node: Option<usize>,
    ) -> Result<u64, Error> {
        let (total, per) = self.core.schema.node_slots(item, node.unwrap_or(0))?;
        let slot = if node.is_some() { per } else { total };
        // ORDERING: Relaxed; a statistic.
        Ok(group.node.agg[slot].load(Ordering::Relaxed).max(0) as u64)
    }

    /// Local value of a per-node item on `node` (`None`: total).
    ///
    /// # Errors
    /// Item errors, [`Error::NodeOutOfRange`].
    pub fn read_node_local(
        &self,
        group: &Group,
        item: NodeItemId,
        node: Option<usize>,
    ) -> Result<u64, Error> {
        let (total, per) = self.core.schema.node_slots(item, node.unwrap_or(0))?;
        let slot = if node.is_some() { per } else { total };
        // ORDERING: Relaxed; a statistic.
        Ok(group.node.local[slot].load(Ordering::Relaxed).max(0) as u64)
    }

    /// Hierarchical value with its error bound (see [`Bounded`]).
    ///
    /// The bound, in pages of update magnitude converted to the item's unit:
    /// * per-group, kernel-exact accounting: `updates(g) + shards × (batch − 1)`;
    /// * per-group, folded accounting: `updates(g) + reserved(g)`;
    /// * global threshold: `global + shards × (batch − 1) × groups`;
    /// * none once the group (or the tree, for a global threshold) is above
    ///   the threshold `T`, since early-break and skipped flushes stop the
    ///   accounting there; and none for policies without a threshold.
    ///
    /// With no concurrent updates the bound is exact; under concurrency a
    /// residue reset racing an update can make it optimistic by that
    /// update's magnitude, as in the kernel.
    ///
    /// # Errors
    /// Item errors.
    pub fn read_bounded(&self, group: &Group, item: ItemId) -> Result<Bounded, Error> {
        let value = self.read(group, item)?;
        let unit = self.core.schema.info(item).unit;
        let bound = self.error_bound_pages(group).map(|p| unit.from_pages(p));
        Ok(Bounded { value, bound })
    }

    /// The current error bound of `group`'s aggregates in pages (see
    /// [`read_bounded`](Self::read_bounded)).
    pub fn error_bound_pages(&self, group: &Group) -> Option<u64> {
        let c = &self.core;
        let n: &Node = &group.node;
        let residue = c.shards as u64 * (c.batch - 1);
        // ORDERING: Relaxed; the bound is a statistic like the values.
        match c.policy.threshold {
            ThresholdRule::None => None,
            ThresholdRule::Global => {
                let g = c.global_updates.load(Ordering::Relaxed);
                let groups = c.root.subtree_size.load(Ordering::Relaxed);
                (g <= c.threshold).then(|| g + residue * groups)
            }
            ThresholdRule::PerGroup => {
                if c.needs_flush(n) {
                    return None;
                }
                let u = n.updates.load(Ordering::Relaxed);
                Some(match c.policy.scheme {
                    ThresholdScheme::PerAncestor => u + residue,
                    ThresholdScheme::Folded => u + n.reserved.load(Ordering::Relaxed),
                })
            }
        }
    }
}
