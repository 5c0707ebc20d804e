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
/// **The contract.** Let `exact` be the sum of every update made to the
/// item in the group's subtree (removed descendants included) whose `add`
/// returned before the read began. Whenever `bound` is `Some(b)`:
///
/// `|signed − exact| ≤ b + c`
///
/// where `c` is the magnitude, in the item's unit, of the updates to the
/// subtree that run concurrently with the read (each counted whether or not
/// the read sees it). This holds at every instant a read can happen:
/// whatever flushes — forced, threshold-guarded, subtree, ratelimited,
/// periodic, async, wait-ongoing — run over the group, its ancestors or its
/// descendants meanwhile, and right after they return. Clamping at 0 never
/// widens a gap, so `|value − max(exact, 0)| ≤ b + c` too.
///
/// How it holds: the bound counts what no aggregate holds yet (threshold
/// counts, reservations, residues and what a running flush has taken out
/// of them but not landed: see `flush.rs`, "What a flush hands over"), and
/// [`HierStats::read_bounded`] reads the bound *before* the value, so a
/// flush that lands between the two only makes the value fresher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bounded {
    /// The flushed value as [`HierStats::read`] returns it: clamped at 0 for
    /// state items, whose aggregate can be transiently negative.
    pub value: u64,
    /// The flushed aggregate before clamping ([`HierStats::read_signed`]).
    pub signed: i64,
    /// Upper bound of `|signed − exact|` in the item's unit (see the
    /// contract above), or `None` when the engine cannot certify one
    /// without a flush: the group is above its threshold, the policy has
    /// no threshold accounting (5.13), its accounting stops counting
    /// (an early break, at any group that has had children, or at any group
    /// a flush reset while updates skipped it), or the item is saturated.
    pub bound: Option<u64>,
    /// The item left `i64`'s range in this group's subtree: `signed` is
    /// pinned at `i64::MAX` (or `i64::MIN`) and means only that (see
    /// [`HierStats::add`]). Never reset for the group's life.
    pub saturated: bool,
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

    /// Hierarchical value with its error bound (see [`Bounded`] for the
    /// contract).
    ///
    /// The bound, in pages of update magnitude converted to the item's unit,
    /// by the policy's threshold accounting:
    /// * per group, kernel-exact (6.8): `count(g) + in_flight(g) + lanes ×
    ///   (batch − 1)` (the folded count, what a running flush took from the
    ///   group's residues and has not landed, and what each shard's
    ///   residues can hold; `lanes` is the number of shards, or more if some
    ///   shard was written both by its owner and through the shared path,
    ///   each keeping a residue);
    /// * per group, folded (ours): `count(g) + reserved(g)`;
    /// * global (5.15): `count + in_flight + lanes × (batch − 1) × rows`,
    ///   where rows counts every group whose row still exists, removed ones
    ///   included (a removed group kept alive by a handle still takes
    ///   updates);
    /// * none once the group (or the tree, for a global threshold) is above
    ///   the threshold `T`;
    /// * none for 5.13 (no accounting);
    /// * with an early break (6.17's upstream one, or the margin rule),
    ///   none at any group that has ever had a child: once a child's count is
    ///   above the break level, walks stop at the child and the parent's
    ///   count stops growing while its unflushed total grows without limit
    ///   (the kernel has this gap too). A group that never had a child is
    ///   bounded as in 6.8, except after a flush that reset its count while
    ///   it was above the break level (updates skipped during that flush
    ///   are in no count): none until a flush resets it from below;
    /// * none for a saturated item ([`Bounded::saturated`]).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn read_bounded(&self, group: &Group, item: ItemId) -> Result<Bounded, Error> {
        let node = self.core.own(group)?;
        let (slot, kind) = self.core.schema.slot_and_kind(item)?;
        let unit = self.core.schema.slot_unit(slot);
        // The bound first (its loads acquire the flushes' hand-overs), then
        // the value: a flush that lands between them makes the value only
        // fresher than the bound assumes.
        let bound = self.core.error_bound(node).map(|p| unit.from_pages(p));
        // ORDERING: Acquire; pairs with a flush's Release pin of a
        // saturated aggregate, so that a pinned value comes with its flag
        // (read next).
        let signed = node.agg[slot.get()].load(Ordering::Acquire);
        Ok(match self.core.saturation(node, slot.get()) {
            None => Bounded {
                value: clamp(kind, signed),
                signed,
                bound,
                saturated: false,
            },
            Some(dir) => Bounded {
                value: clamp(kind, dir.limit()),
                signed: dir.limit(),
                bound: None,
                saturated: true,
            },
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
    /// See [`HierStats::read_bounded`]. Every load that a flush's hand-over
    /// writes is Acquire (pairs with its Release writes): a bound that sees
    /// a count or in-flight amount given back sees the aggregates landed
    /// before it, which the caller reads next.
    fn error_bound(&self, n: &Node) -> Option<u64> {
        // Every (group, shard) pair holds up to `batch − 1` unfolded pages
        // per writer kind that used the shard (the owner's residue and the
        // shared one): one per shard unless some shard had both.
        // ORDERING: Relaxed; a size for bounds.
        let lanes = (self.shards as u64).max(self.residue_lanes.load(Ordering::Relaxed));
        let residue = lanes.saturating_mul(self.batch - 1);
        match self.policy.threshold {
            ThresholdRule::None => None,
            ThresholdRule::Global => {
                let g = self.global_updates.for_bound();
                // ORDERING: Acquire; see the method's docs.
                let in_flight = self.global_in_flight.load(Ordering::Acquire);
                if g.uncounted() || g.pages() > self.threshold {
                    return None;
                }
                // ORDERING: Relaxed; sizes for bounds.
                let rows = self.root.subtree_size.load(Ordering::Relaxed)
                    + self.zombie_rows.load(Ordering::Relaxed);
                Some(
                    g.pages()
                        .saturating_add(in_flight)
                        .saturating_add(residue.saturating_mul(rows)),
                )
            }
            ThresholdRule::PerGroup => {
                let u = n.updates.for_bound();
                // ORDERING: Acquire; see the method's docs.
                let reserved = n.reserved.load(Ordering::Acquire);
                let in_flight = n.in_flight.load(Ordering::Acquire);
                let trigger = if self.policy.strict_bound {
                    u.pages().saturating_add(reserved)
                } else {
                    u.pages()
                };
                // `pending` is allocated with the first child.
                let stops_early =
                    self.policy.early_break != EarlyBreak::Off && n.pending().is_some();
                if u.uncounted() || trigger > self.threshold || stops_early {
                    return None;
                }
                let counted = u.pages().saturating_add(in_flight);
                Some(match self.policy.scheme {
                    ThresholdScheme::PerAncestor => counted.saturating_add(residue),
                    ThresholdScheme::Folded => counted.saturating_add(reserved),
                })
            }
        }
    }
}
