//! Reads with an error bound ([`Bounded`]): the contract, and the bound
//! each policy's accounting gives (the plain reads are one load each, in
//! `stats.rs`).

use crate::engine::Core;
use crate::policy::{EarlyBreak, ThresholdRule, ThresholdScheme};
use crate::schema::{ItemKind, Slot};
use crate::state::{Flags, GroupState};
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
/// [`HierStats::read_bounded`](crate::HierStats::read_bounded) reads the
/// bound *before* the value, so a
/// flush that lands between the two only makes the value fresher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bounded {
    /// The flushed value as [`HierStats::read`](crate::HierStats::read)
    /// returns it: clamped at 0 for state items, whose aggregate can be
    /// transiently negative.
    pub value: u64,
    /// The flushed aggregate before clamping
    /// ([`HierStats::read_signed`](crate::HierStats::read_signed)).
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
    /// [`HierStats::add`](crate::HierStats::add)). Never reset for the
    /// group's life.
    pub saturated: bool,
}

/// A flushed aggregate as reads return it: state items clamped at 0.
#[inline(always)]
pub(crate) fn clamp(kind: ItemKind, v: i64) -> u64 {
    match kind {
        ItemKind::Event => v as u64,
        _ => v.max(0) as u64,
    }
}

impl Core {
    /// See [`HierStats::read_bounded`](crate::HierStats::read_bounded).
    pub(crate) fn read_bounded(&self, g: &GroupState, slot: Slot, kind: ItemKind) -> Bounded {
        let unit = self.params.schema.slot_unit(slot);
        // The bound first (its loads acquire the flushes' hand-overs), then
        // the value: a flush that lands between them makes the value only
        // fresher than the bound assumes.
        let bound = self.error_bound(g).map(|p| unit.from_pages(p));
        // ORDERING: Acquire; pairs with a flush's Release pin of a
        // saturated aggregate, so that a pinned value comes with its flag
        // (read next).
        let signed = g.agg[slot.get()].load(Ordering::Acquire);
        if !g.flag(Flags::SATURATED) {
            return Bounded {
                value: clamp(kind, signed),
                signed,
                bound,
                saturated: false,
            };
        }
        self.read_saturated(g, slot, kind, signed, bound)
    }

    /// A group's local value of slot `k` (its own updates), as of the last
    /// flush; pinned at the limit its own updates saturated at, if they did
    /// (a descendant's saturation does not touch it: see `saturation.rs`).
    pub(crate) fn read_local(&self, g: &GroupState, k: usize) -> i64 {
        let v = g.read_local(k);
        if g.flag(Flags::SATURATED) {
            if let Some(dir) = self.saturation.local_of(g, k) {
                return dir.limit();
            }
        }
        v
    }

    /// [`read_bounded`](Self::read_bounded) of a group with a saturated
    /// item (not necessarily `slot`): out of the read's fast path.
    #[cold]
    #[inline(never)]
    fn read_saturated(
        &self,
        g: &GroupState,
        slot: Slot,
        kind: ItemKind,
        signed: i64,
        bound: Option<u64>,
    ) -> Bounded {
        match self.saturation.of(g, slot.get()) {
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
        }
    }

    /// The error bound of `n`'s aggregates in pages (see
    /// `HierStats::read_bounded`). Every load that a flush's hand-over
    /// writes is Acquire (pairs with its Release writes): a bound that sees
    /// a count or in-flight amount given back sees the aggregates landed
    /// before it, which the caller reads next.
    pub(crate) fn error_bound(&self, n: &GroupState) -> Option<u64> {
        let p = &self.params;
        // Every (group, shard) pair holds up to `batch − 1` unfolded pages
        // per writer kind that used the shard (the owner's residue and the
        // shared one): one per shard unless some shard had both.
        let lanes = self.writers.lanes(p.shards);
        let residue = lanes.saturating_mul(p.batch - 1);
        match p.policy.threshold {
            ThresholdRule::None => None,
            ThresholdRule::Global => {
                let g = self.global.count().for_bound();
                let in_flight = self.global.in_flight_for_bound();
                if g.uncounted() || g.pages() > p.threshold {
                    return None;
                }
                let rows = self.groups.rows_for_bound();
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
                let trigger = if p.policy.strict_bound {
                    u.pages().saturating_add(reserved)
                } else {
                    u.pages()
                };
                // `pending` is allocated with the first child.
                let stops_early = p.policy.early_break != EarlyBreak::Off && n.pending().is_some();
                if u.uncounted() || trigger > p.threshold || stops_early {
                    return None;
                }
                let counted = u.pages().saturating_add(in_flight);
                Some(match p.policy.scheme {
                    ThresholdScheme::PerAncestor => counted.saturating_add(residue),
                    ThresholdScheme::Folded => counted.saturating_add(reserved),
                })
            }
        }
    }
}
