//! Reads: hierarchical, local, per-node, and value-with-error-bound.
//!
//! Reads never flush: they return the last flushed aggregate with one
//! relaxed load. Flush first (or use the bound) when freshness matters.
//! Signed state aggregates can be transiently negative (an increment on one
//! shard not yet flushed while its decrement on another shard is): state
//! reads clamp them to 0, as every kernel reader does.

use crate::error::Error;
use crate::group::Group;
use crate::node::Node;
use crate::policy::{EarlyBreak, ThresholdRule, ThresholdScheme};
use crate::schema::{ItemId, ItemKind, NodeItemId};
use crate::stats::HierStats;
use crate::sync::Ordering;

/// A value with its current error bound.
///
/// Let `exact` be the sum of every update ever made to the item in the
/// group's subtree (removed descendants included). Then, whenever `bound`
/// is `Some(b)` and no update runs concurrently with the read:
/// `|signed − exact| ≤ b`, and so `|value − max(exact, 0)| ≤ b` too
/// (clamping at 0 never widens a gap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounded {
    /// The flushed value as [`HierStats::read`] returns it: clamped at 0 for
    /// state items, whose aggregate can be transiently negative.
    pub value: u64,
    /// The flushed aggregate before clamping ([`HierStats::read_signed`]).
    pub signed: i64,
    /// Upper bound of `|signed − exact|` in the item's unit, or `None` when
    /// the policy cannot bound the gap without a flush: the group is above
    /// its threshold, the policy has no threshold accounting (5.13), or
    /// its accounting stops counting (6.17's early break, at any group
    /// that has had children).
    pub bound: Option<u64>,
}

#[inline(always)]
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
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    #[inline(always)]
    pub fn read(&self, group: &Group, item: ItemId) -> Result<u64, Error> {
        self.core.check(group)?;
        let (slot, kind) = self.core.schema.slot_and_kind(item)?;
        // ORDERING: Relaxed; a statistic, consistent per counter only.
        Ok(clamp(kind, group.agg(slot).load(Ordering::Relaxed)))
    }

    /// Hierarchical value without clamping (may be transiently negative).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn read_signed(&self, group: &Group, item: ItemId) -> Result<i64, Error> {
        self.core.check(group)?;
        let slot = self.core.schema.slot_of(item)?;
        // ORDERING: Relaxed; a statistic.
        Ok(group.agg(slot).load(Ordering::Relaxed))
    }

    /// Local value: this group's own updates only, as of the last flush.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn read_local(&self, group: &Group, item: ItemId) -> Result<u64, Error> {
        let node = self.core.own(group)?;
        let (slot, kind) = self.core.schema.slot_and_kind(item)?;
        // ORDERING: Relaxed; a statistic.
        Ok(clamp(kind, node.local[slot.get()].load(Ordering::Relaxed)))
    }

    /// Hierarchical value of a per-node item on `node`; `None` as node reads
    /// the total over nodes.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`],
    /// [`Error::NodeOutOfRange`].
    pub fn read_node(
        &self,
        group: &Group,
        item: NodeItemId,
        node: Option<usize>,
    ) -> Result<u64, Error> {
        let owned = self.core.own(group)?;
        let (total, per) = self.core.schema.node_slots(item, node.unwrap_or(0))?;
        let slot = if node.is_some() { per } else { total };
        // ORDERING: Relaxed; a statistic.
        Ok(owned.agg[slot.get()].load(Ordering::Relaxed).max(0) as u64)
    }

    /// Local value of a per-node item on `node` (`None`: total).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`],
    /// [`Error::NodeOutOfRange`].
    pub fn read_node_local(
        &self,
        group: &Group,
        item: NodeItemId,
        node: Option<usize>,
    ) -> Result<u64, Error> {
        let owned = self.core.own(group)?;
        let (total, per) = self.core.schema.node_slots(item, node.unwrap_or(0))?;
        let slot = if node.is_some() { per } else { total };
        // ORDERING: Relaxed; a statistic.
        Ok(owned.local[slot.get()].load(Ordering::Relaxed).max(0) as u64)
    }

    /// Hierarchical value with its error bound (see [`Bounded`]).
    ///
    /// The bound, in pages of update magnitude converted to the item's unit,
    /// by the policy's threshold accounting:
    /// * per group, kernel-exact (6.8): `updates(g) + lanes × (batch − 1)`
    ///   (the folded count plus what each shard's residues can hold; `lanes`
    ///   is the number of shards, or more if some shard was written both by
    ///   its owner and through the shared path, each keeping a residue);
    /// * per group, folded (ours): `updates(g) + reserved(g)`;
    /// * global (5.15): `global + lanes × (batch − 1) × rows`, where rows
    ///   counts every group whose row still exists, removed ones included
    ///   (a removed group kept alive by a handle still takes updates);
    /// * none once the group (or the tree, for a global threshold) is above
    ///   the threshold `T`: skipped and early-broken accounting stops there;
    /// * none for 5.13 (no accounting);
    /// * with the upstream early break (6.17), none at any group that has
    ///   ever had a child: once a child's count is above `T`, the walk stops
    ///   at the child and the parent's count stops growing while its
    ///   unflushed total grows without limit (the kernel has this gap too).
    ///   A group that never had a child is bounded as in 6.8.
    ///
    /// With no concurrent updates the bound holds exactly (property-tested
    /// on every preset); under concurrency a residue reset racing an update
    /// can make it optimistic by that update's magnitude, as in the kernel.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn read_bounded(&self, group: &Group, item: ItemId) -> Result<Bounded, Error> {
        let node = self.core.own(group)?;
        let (slot, kind) = self.core.schema.slot_and_kind(item)?;
        let unit = self.core.schema.slot_unit(slot);
        // ORDERING: Relaxed; a statistic.
        let signed = node.agg[slot.get()].load(Ordering::Relaxed);
        let bound = self.core.error_bound(node).map(|p| unit.from_pages(p));
        Ok(Bounded {
            value: clamp(kind, signed),
            signed,
            bound,
        })
    }

    /// The current error bound of `group`'s aggregates in pages (see
    /// [`read_bounded`](Self::read_bounded)).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn error_bound_pages(&self, group: &Group) -> Result<Option<u64>, Error> {
        let node = self.core.own(group)?;
        Ok(self.core.error_bound(node))
    }
}

impl crate::stats::Core {
    /// See [`HierStats::read_bounded`].
    fn error_bound(&self, n: &Node) -> Option<u64> {
        // Every (group, shard) pair holds up to `batch − 1` unfolded pages
        // per writer kind that used the shard (the owner's residue and the
        // shared one): one per shard unless some shard had both.
        // ORDERING: Relaxed; a size for bounds.
        let lanes = (self.shards as u64).max(self.residue_lanes.load(Ordering::Relaxed));
        let residue = lanes * (self.batch - 1);
        // ORDERING: Relaxed; the bound is a statistic like the values.
        match self.policy.threshold {
            ThresholdRule::None => None,
            ThresholdRule::Global => {
                let g = self.global_updates.load(Ordering::Relaxed);
                let rows = self.root.subtree_size.load(Ordering::Relaxed)
                    + self.zombie_rows.load(Ordering::Relaxed);
                (g <= self.threshold).then(|| g + residue * rows)
            }
            ThresholdRule::PerGroup => {
                if self.needs_flush(n) {
                    return None;
                }
                let u = n.updates.load(Ordering::Relaxed);
                match self.policy.scheme {
                    ThresholdScheme::PerAncestor => {
                        let stops_early = self.policy.early_break == EarlyBreak::Upstream;
                        // `pending` is allocated with the first child.
                        (!stops_early || n.pending().is_none()).then_some(u + residue)
                    }
                    ThresholdScheme::Folded => Some(u + n.reserved.load(Ordering::Relaxed)),
                }
            }
        }
    }
}
