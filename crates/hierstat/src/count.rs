//! The threshold count: folded update magnitude since the last flush, in one
//! word with the flag that says whether the count can still be trusted.
//!
//! A group's count (and, for a global threshold, the tree's) grows by the
//! updaters' folds and shrinks only by the flush that resets it. Updates
//! stop adding to it above a *break level* `L`: the policy's early break
//! (the kernel's "already flushable" walk break) or, for every policy,
//! [`COUNT_LIMIT`], far above any threshold, so that the word cannot wrap.
//! While the count is above `L` the group is above its threshold and
//! reports no bound; the danger is the reset. A flush that resets the
//! count while it is above `L` may leave updates it did not carry in no
//! count at all: an update that ran after the flush read its counters and
//! was skipped. So the reset sets [`UNCOUNTED`] in the same atomic write
//! when the count was above `L` at the flush's snapshot or at its reset
//! (it only grows in between), and clears it otherwise; a flagged count
//! reports no bound until a flush resets it from below `L`. Updates skipped
//! before the flush's snapshot are carried by the flush (see
//! `Core::flush_subtree`); updates skipped after its reset are carried by
//! the next.

use crate::sync::{AtomicBool, AtomicU64, Ordering};

/// Updates stop adding to a count at this many pages (2^62): no threshold
/// is anywhere near (see [`MAX_THRESHOLD`]), and folds of at most
/// [`MAX_FOLD`] pages each that pass the check at once would have to be
/// more than a thousand (2^62 / (2^52 + 1)) to carry it into the flag bit.
pub(crate) const COUNT_LIMIT: u64 = 1 << 62;

/// The largest threshold a configuration may ask for (2^52 pages, 16 EiB
/// of 4 KiB pages).
pub const MAX_THRESHOLD: u64 = 1 << 52;

/// The most one fold adds to a count: a single update of more pages counts
/// as this many. One more than the largest threshold, so that a capped
/// fold puts its group (and the tree, for a global threshold) above any
/// threshold: no bound is reported and a guarded read flushes until a
/// flush carries the update. (At `MAX_THRESHOLD` itself, a cap of 2^52
/// left the count *at* the threshold: an update of 2^60 pages read 0 with
/// a bound of 2^52 + 31 and `needs_flush` false.)
pub(crate) const MAX_FOLD: u64 = MAX_THRESHOLD + 1;

/// The count's flag bit: the last reset found the count above the break
/// level (see the module docs).
pub(crate) const UNCOUNTED: u64 = 1 << 63;

/// Mask of the count itself.
const COUNT_MASK: u64 = !UNCOUNTED;

/// A threshold count word (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Count(AtomicU64);

/// A count as one load saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CountValue(u64);

impl CountValue {
    /// Pages counted.
    #[inline(always)]
    pub(crate) fn pages(self) -> u64 {
        self.0 & COUNT_MASK
    }

    /// Whether the last reset left updates in no count (see the module
    /// docs): the count bounds nothing.
    #[inline(always)]
    pub(crate) fn uncounted(self) -> bool {
        self.0 & UNCOUNTED != 0
    }
}

impl Count {
    /// A zero count.
    pub(crate) fn new() -> Self {
        Count(AtomicU64::new(0))
    }

    /// The pages counted, for flush triggers and the update path's break
    /// test. ORDERING: Relaxed; a trigger publishes no data.
    #[inline(always)]
    pub(crate) fn pages(&self) -> u64 {
        self.0.load(Ordering::Relaxed) & COUNT_MASK
    }

    /// The count for an error bound. ORDERING: Acquire, pairs with the
    /// Release reset: a bound read that sees a reset sees the aggregates
    /// that flush landed before it.
    #[inline(always)]
    pub(crate) fn for_bound(&self) -> CountValue {
        CountValue(self.0.load(Ordering::Acquire))
    }

    /// The count for a per-group flush's snapshot. ORDERING: Relaxed; the
    /// `SeqCst` fence the flush issues after its snapshots acquires the
    /// folds this load read (see [`add`](Self::add) and
    /// `Core::flush_subtree`).
    pub(crate) fn snapshot(&self) -> u64 {
        self.0.load(Ordering::Relaxed) & COUNT_MASK
    }

    /// The count with its flag, for a partial flush's snapshots of its
    /// opened groups and of the subtrees it leaves. ORDERING: Relaxed, as
    /// [`snapshot`](Self::snapshot) (see `Core::flush_subtree`).
    pub(crate) fn snapshot_value(&self) -> CountValue {
        CountValue(self.0.load(Ordering::Relaxed))
    }

    /// Adds `m` pages unless the count is above `level` (the caller's
    /// break level, at most [`COUNT_LIMIT`]); returns whether it added.
    #[inline]
    pub(crate) fn add_below(&self, m: u64, level: u64) -> bool {
        if self.pages() > level {
            return false;
        }
        self.add(m);
        true
    }

    /// Adds `m` pages (at most [`MAX_FOLD`] of them). The caller checked
    /// the break level.
    ///
    /// ORDERING: Release. A flush that counts this fold in its snapshot
    /// resets the count by it, so its drains must find the row the fold
    /// came from, whose push (or the claim this thread found in progress,
    /// acquired by its header RMW) is sequenced before the fold (see
    /// `Core::claim`). The snapshot's group may be on the flush's trees for
    /// another row's sake, and the row may be on no tree yet (a subtree
    /// flush took it off), so only this pairing makes the drains see the
    /// push: a per-group flush reads its snapshots, then issues a `SeqCst`
    /// fence, which acquires this release (see `Core::flush_subtree`); a
    /// global threshold's root flush reads the tree's count Acquire
    /// ([`snapshot_acquire`](Self::snapshot_acquire)). loom: Relaxed fails
    /// `a_fold_counted_by_a_root_flush_is_drained_with_its_pair` and
    /// `a_fold_racing_a_root_flush_under_a_global_threshold`.
    #[inline]
    pub(crate) fn add(&self, m: u64) {
        self.0.fetch_add(m.min(MAX_FOLD), Ordering::Release);
    }

    /// The count for a global threshold's root flush snapshot. ORDERING:
    /// Acquire; pairs with the fold's Release ([`add`](Self::add)): a
    /// global root flush has no fence between its snapshot and its drains.
    pub(crate) fn snapshot_acquire(&self) -> u64 {
        self.0.load(Ordering::Acquire) & COUNT_MASK
    }

    /// A flush's reset, after it landed what it carried: subtracts its
    /// snapshot `snap` and sets or clears [`UNCOUNTED`] by whether the
    /// count was above `level` at the snapshot or now. Returns the count
    /// it replaced.
    ///
    /// ORDERING: Release; pairs with [`for_bound`](Self::for_bound).
    pub(crate) fn reset(&self, snap: u64, level: u64) -> u64 {
        let flag = |v: u64| {
            if snap > level || v & COUNT_MASK > level {
                UNCOUNTED
            } else {
                0
            }
        };
        let r = self
            .0
            .fetch_update(Ordering::Release, Ordering::Relaxed, |v| {
                Some(((v & COUNT_MASK).saturating_sub(snap)) | flag(v))
            });
        match r {
            Ok(v) | Err(v) => v & COUNT_MASK,
        }
    }
}

/// The tree-wide accounting of a global threshold
/// ([`ThresholdRule::Global`](crate::ThresholdRule::Global)).
#[derive(Debug, Default)]
pub(crate) struct GlobalCount {
    /// Folded magnitude since the last root flush.
    count: crate::sync::CachePadded<Count>,
    /// Pages flushes took out of residues whose data has not reached the
    /// root's aggregates yet (a root flush lands them; a subtree flush
    /// leaves them in its parent's `pending`). Bound only. ORDERING: as
    /// `GroupState::in_flight`.
    in_flight: AtomicU64,
    /// A running root flush holds the count's snapshot (as
    /// `GroupState::hold_snapshot`, for root flushes that overlap under a
    /// per-pass gate).
    held: AtomicBool,
}

impl GlobalCount {
    /// Takes the count's snapshot for one root flush: `false` if another
    /// running flush holds it (see `GroupState::hold_snapshot`).
    /// ORDERING: Acquire; pairs with the previous holder's
    /// [`release_snapshot`](Self::release_snapshot), so that this snapshot
    /// reads the count after that holder's reset. No Release half: a flush
    /// that finds the snapshot held takes nothing from the holder, and a
    /// swap that finds it free reads a holder's Release store directly.
    /// (loom: Relaxed fails
    /// `overlapping_root_flushes_subtract_one_global_snapshot`; when this
    /// was AcqRel, dropping its Release half failed no model.)
    pub(crate) fn hold_snapshot(&self) -> bool {
        !self.held.swap(true, Ordering::Acquire)
    }

    /// Gives back the snapshot. ORDERING: Release; after the hand-over.
    pub(crate) fn release_snapshot(&self) {
        self.held.store(false, Ordering::Release);
    }

    /// The tree-wide count.
    #[inline]
    pub(crate) fn count(&self) -> &Count {
        &self.count
    }

    /// Pages in flight, for a bound. ORDERING: Acquire, pairs with the
    /// hand-over's Release release (see `flush.rs`).
    pub(crate) fn in_flight_for_bound(&self) -> u64 {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Pages in flight at a root flush's start. ORDERING: Relaxed; the
    /// hand-over releases.
    pub(crate) fn in_flight_snapshot(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Announces `pages` a flush took from residues. ORDERING: Relaxed,
    /// published by the Release residue takes that follow (see
    /// `Core::take_residues`).
    pub(crate) fn announce(&self, pages: u64) {
        self.in_flight.fetch_add(pages, Ordering::Relaxed);
    }

    /// A root flush's hand-over: resets the count by its snapshot `snap`
    /// and lands `landed` pages in flight. ORDERING: Release (see
    /// `flush.rs`, "What a flush hands over").
    pub(crate) fn hand_over(&self, snap: u64, landed: u64) {
        self.count.reset(snap, COUNT_LIMIT);
        self.in_flight.fetch_sub(landed, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_reset_from_above_the_level_flags_the_count() {
        let c = Count::new();
        c.add(10);
        assert_eq!(c.reset(10, 64), 10);
        assert!(!c.for_bound().uncounted());
        c.add(100);
        c.reset(100, 64);
        assert!(c.for_bound().uncounted(), "snapshot above the level");
        c.add(5);
        assert!(c.for_bound().uncounted(), "adds keep the flag");
        assert_eq!(c.pages(), 5);
        c.reset(5, 64);
        assert!(!c.for_bound().uncounted(), "a reset from below clears it");
        c.add(60);
        c.add(60);
        c.reset(10, 64);
        assert!(c.for_bound().uncounted(), "above the level at the reset");
        assert_eq!(c.pages(), 110);
    }

    #[test]
    fn adds_stop_above_the_level_and_folds_are_capped() {
        let c = Count::new();
        assert!(c.add_below(u64::MAX, COUNT_LIMIT));
        assert_eq!(c.pages(), MAX_FOLD);
        for _ in 0..2048 {
            c.add_below(u64::MAX, COUNT_LIMIT);
        }
        assert!(c.pages() <= COUNT_LIMIT + MAX_FOLD);
        assert!(!c.for_bound().uncounted());
    }
}
