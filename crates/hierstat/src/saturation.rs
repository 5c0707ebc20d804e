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

    fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(Direction::Above),
            2 => Some(Direction::Below),
            _ => None,
        }
    }
}

/// The tree's saturated items: per group id, one byte per slot: 0, or the
/// [`Direction`] it saturated in. Rank `Leaf`.
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
    /// The direction slot `k` saturated in, if it did.
    #[inline]
    pub(crate) fn get(&self, k: usize) -> Option<Direction> {
        Direction::from_byte(self.0[k])
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

    /// Marks slot `slot` of `g` and of each of its ancestors saturated in
    /// the direction of `delta`.
    #[cold]
    #[inline(never)]
    pub(crate) fn saturate(&self, g: &GroupState, slot: usize, delta: i64) {
        self.saturate_towards(g, slot, Direction::of(i128::from(delta)));
    }

    /// Marks slot `slot` of `g` and of each of its ancestors saturated in
    /// direction `dir` (a slot keeps the first direction it saturated in).
    #[cold]
    #[inline(never)]
    pub(crate) fn saturate_towards(&self, g: &GroupState, slot: usize, dir: Direction) {
        let slots = self.slots;
        let _leaf = ranked(Rank::Leaf);
        let mut table = lock(&self.table);
        let mut a = Some(g);
        while let Some(n) = a {
            let row = table
                .entry(n.hot.id)
                .or_insert_with(|| vec![0; slots].into_boxed_slice());
            if row[slot] == 0 {
                row[slot] = dir as u8;
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

    /// The direction slot `slot` of `g` saturated in, if it did.
    #[inline]
    pub(crate) fn of(&self, g: &GroupState, slot: usize) -> Option<Direction> {
        self.slots_of(g).and_then(|s| s.get(slot))
    }

    /// Forgets the saturation of a group being recycled (no handle is
    /// left).
    pub(crate) fn forget(&self, id: u32) {
        let _leaf = ranked(Rank::Leaf);
        lock(&self.table).remove(&id);
    }
}
