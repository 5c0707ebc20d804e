//! Counters that left `i64`'s range: saturated, and said so.
//!
//! An item's value is an `i64` (an event's, `0..=i64::MAX`). The engine
//! keeps every sum it can overflow inside that range or notices when it
//! would leave it:
//!
//! * an owner cell is the shard's running sum of the item since the row was
//!   allocated, and the update that would take it out of `i64` is not
//!   applied;
//! * a shared cell holds what the shard's shared writers added since its
//!   last flush, and the writer whose add takes it out of `i64` sees it in
//!   the value it replaced;
//! * a flush adds each shard's change to the aggregates with checked
//!   arithmetic (a change that does not fit `i64` is itself out of range).
//!
//! Any of these marks the item *saturated* in the group and in every
//! ancestor (their sums contain it): the aggregate is pinned at `i64::MAX`
//! (or `i64::MIN`, by the direction it left in) from the next flush of the
//! group on, [`Bounded::saturated`](crate::Bounded::saturated) says so and
//! [`Bounded::bound`](crate::Bounded::bound) is `None`. A saturated item
//! stays saturated for the life of the group. Nothing wraps silently.
//!
//! A group's *local* value (its own updates, `read_local`) is another sum:
//! it saturates only when the group's own updates leave `i64` (a cell, or
//! the flushed local sum), not when a descendant's do. So each slot keeps
//! two marks: the subtree's (the aggregate, set in the group and every
//! ancestor) and the group's own (the local value, set in that group
//! only). A flush pins what is marked and keeps summing the rest: an
//! ancestor of a saturated group still counts its own updates locally
//! (before, a descendant's saturation froze its ancestors' local values,
//! and a saturated group's own local value stayed at what it was before).
//!
//! Saturation is a rare, cold event, so the table lives beside the tree,
//! behind one lock, keyed by group id; a group flag ([`Flags::SATURATED`])
//! keeps every other group's reads and flushes from looking at it.

use crate::dirty::IdMap;
use crate::state::{Flags, GroupState};
use crate::sync::{lock, ranked, Mutex, Rank};

/// The direction a saturated item left `i64` in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Past `i64::MAX`.
    Above = 1,
    /// Past `i64::MIN`.
    Below = 2,
}

impl Direction {
    /// The direction an out-of-range change of sign `delta` leaves in.
    pub(crate) fn of(delta: i128) -> Self {
        if delta >= 0 {
            Direction::Above
        } else {
            Direction::Below
        }
    }

    /// The value an aggregate saturated in this direction is pinned at.
    pub(crate) fn limit(self) -> i64 {
        match self {
            Direction::Above => i64::MAX,
            Direction::Below => i64::MIN,
        }
    }

    fn from_bits(b: u8) -> Option<Self> {
        match b & 3 {
            1 => Some(Direction::Above),
            2 => Some(Direction::Below),
            _ => None,
        }
    }
}

/// What a saturation marks (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A subtree sum: the aggregate of the group and of every ancestor.
    Subtree,
    /// The group's own updates: its local value too, and the aggregates of
    /// the group and of every ancestor.
    Own,
}

/// Shift of the local mark in a slot's byte (the aggregate's is bits 0..2).
const LOCAL_SHIFT: u8 = 2;

/// The tree's saturated items: per group id, one byte per slot: the
/// [`Direction`] the aggregate saturated in (bits 0..2, 0 if it did not),
/// and the one the local value saturated in (bits 2..4). Rank `Leaf`.
#[derive(Debug)]
pub(crate) struct Saturation {
    table: Mutex<IdMap<Box<[u8]>>>,
    /// Slots per group (the schema's).
    slots: usize,
}

/// One group's saturated slots, as a flush reads them once per row.
#[derive(Debug, Clone)]
pub(crate) struct SaturatedSlots(Box<[u8]>);

impl SaturatedSlots {
    /// The direction slot `k`'s aggregate saturated in, if it did (set
    /// whenever its local value's is).
    #[inline]
    pub(crate) fn get(&self, k: usize) -> Option<Direction> {
        Direction::from_bits(self.0[k])
    }

    /// The direction slot `k`'s local value saturated in, if it did.
    #[inline]
    pub(crate) fn local(&self, k: usize) -> Option<Direction> {
        Direction::from_bits(self.0[k] >> LOCAL_SHIFT)
    }
}

impl Saturation {
    /// No item saturated, in groups of `slots` slots.
    pub(crate) fn new(slots: usize) -> Self {
        Saturation {
            table: Mutex::new(IdMap::default()),
            slots,
        }
    }

    /// An update of `delta` to `g`'s own cell of slot `slot` left `i64`:
    /// marks the slot saturated in `g`'s own updates ([`Scope::Own`]) in
    /// the direction of `delta`.
    #[cold]
    #[inline(never)]
    pub(crate) fn saturate(&self, g: &GroupState, slot: usize, delta: i64) {
        self.saturate_towards(g, slot, Direction::of(i128::from(delta)), Scope::Own);
    }

    /// Marks slot `slot` saturated in direction `dir`: the aggregate of `g`
    /// and of each of its ancestors, and with [`Scope::Own`] `g`'s local
    /// value (each mark keeps the first direction it was set in).
    #[cold]
    #[inline(never)]
    pub(crate) fn saturate_towards(
        &self,
        g: &GroupState,
        slot: usize,
        dir: Direction,
        scope: Scope,
    ) {
        let slots = self.slots;
        let _leaf = ranked(Rank::Leaf);
        let mut table = lock(&self.table);
        let mut a = Some(g);
        let mut own = scope == Scope::Own;
        while let Some(n) = a {
            let row = table
                .entry(n.hot.id)
                .or_insert_with(|| vec![0; slots].into_boxed_slice());
            if row[slot] & 3 == 0 {
                row[slot] |= dir as u8;
            }
            if std::mem::take(&mut own) && row[slot] >> LOCAL_SHIFT == 0 {
                row[slot] |= (dir as u8) << LOCAL_SHIFT;
            }
            // After the entry: `flag`'s Acquire load then finds it.
            n.set_flag(Flags::SATURATED);
            a = n.hot.parent.as_deref();
        }
    }

    /// Every saturated slot of `g`, if it has any.
    #[inline]
    pub(crate) fn slots_of(&self, g: &GroupState) -> Option<SaturatedSlots> {
        if !g.flag(Flags::SATURATED) {
            return None;
        }
        let _leaf = ranked(Rank::Leaf);
        let table = lock(&self.table);
        table.get(&g.hot.id).cloned().map(SaturatedSlots)
    }

    /// The direction slot `slot` of `g`'s aggregate saturated in, if it
    /// did.
    #[inline]
    pub(crate) fn of(&self, g: &GroupState, slot: usize) -> Option<Direction> {
        self.slots_of(g).and_then(|s| s.get(slot))
    }

    /// The direction slot `slot` of `g`'s local value saturated in, if it
    /// did.
    #[inline]
    pub(crate) fn local_of(&self, g: &GroupState, slot: usize) -> Option<Direction> {
        self.slots_of(g).and_then(|s| s.local(slot))
    }

    /// Forgets the saturation of a group being recycled (no handle is
    /// left).
    pub(crate) fn forget(&self, id: u32) {
        let _leaf = ranked(Rank::Leaf);
        lock(&self.table).remove(&id);
    }
}
