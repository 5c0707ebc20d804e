//! The row header word and the owner's residue word: every bit of the
//! update/flush handshake, and every transition of it, in one place.
//!
//! Each (group, shard) row starts with two control words (see `rows.rs`):
//! the [`Header`], which every writer of the row and the flushers modify
//! with atomic read-modify-writes, and the [`OwnerResidue`], which only the
//! shard's owner thread writes. No other file reads or writes their bits.
//!
//! # Header bits
//!
//! | bits | field | written by |
//! |---|---|---|
//! | 0..30 | `residue`: magnitude (pages) of shared-path updates not yet folded (under `2 × batch ≤ 2^21`) | shared writers ([`Header::add_residue`]), their folds ([`Header::take_residue`]), flushes ([`Header::take_at_most`], [`Header::clear_residue`]) |
//! | 30 | `SHARED_RES`: a shared writer reserved the pair since its last drain | shared writers' claims ([`Header::claim`]), flushes ([`Header::drain`]) |
//! | 31 | `OWNER_RES`: the owner reserved the pair since its last drain | the owner's claims, flushes |
//! | 32..63 | `next`: link of the shard's lock-free update list (group id + 1; 0 ends the list) | the claimer that queued the row, while `QUEUED` ([`Header::set_next`]) |
//! | 63 | `QUEUED`: the row is on the shard's update list | claims, flushes ([`Header::drain`]) |
//!
//! # Transitions
//!
//! * **claim**: the first write of a writer kind since the pair's last
//!   drain sets `QUEUED` and its reservation bit in one AcqRel RMW
//!   ([`Header::claim`]); the claimer that found `QUEUED` clear pushes the
//!   row (see `dirty.rs`);
//! * **residue add**: a shared writer adds its update's magnitude with an
//!   AcqRel RMW, which also orders its cell write against the flusher's
//!   drain of the same word (either the flush sees the write, or the
//!   writer sees `QUEUED` clear and queues the row again);
//! * **residue take**: a fold (Acquire) or a flush (Release, at most what
//!   it announced in flight; Relaxed where nothing is in flight) zeroes the
//!   residue, never touching the other bits;
//! * **drain**: the flusher that took the list reads the link, then clears
//!   `QUEUED`, both reservation bits and the link in one RMW;
//! * **queue**: the pusher writes the link (a CAS loop, the residue may
//!   change meanwhile) before publishing the row on the list head.
//!
//! # The owner's residue
//!
//! The owner's residue is the row's second word, written by the owner
//! alone (plain load and store). It counts *down*: it holds the pages the
//! owner may still add before it folds, minus one (`batch − 1` when empty),
//! so that one subtraction both accounts an update and, by going negative,
//! says that the residue reached `batch`: the owner's update tests the
//! result's sign and compares with nothing.

use crate::sync::{AtomicU64, Ordering};
use crate::work::{Work, WorkSink};

/// Mask of the shared residue field: a residue holds less than `batch`
/// pages before an add of less than `batch` (`Policy::check` caps `batch`
/// at 2^20), so it never carries into the next field.
const RESIDUE_MASK: u64 = (1 << 30) - 1;
/// A shared writer reserved the pair (folded thresholds) since its drain.
const SHARED_RES: u64 = 1 << 30;
/// The owner reserved the pair (folded thresholds) since its drain.
const OWNER_RES: u64 = 1 << 31;
/// Shift of the `next` field.
const NEXT_SHIFT: u32 = 32;
/// Mask of the `next` field.
const NEXT_MASK: u64 = ((1 << 31) - 1) << NEXT_SHIFT;
/// The row is on its shard's update list.
const QUEUED: u64 = 1 << 63;

/// Largest number of groups a tree can hold: the `next` field holds a
/// group id + 1 in 31 bits.
pub(crate) const MAX_GROUPS: usize = (1 << 31) - 2;

/// Which kind of writer claims a pair: each keeps its own residue, and,
/// under the folded scheme, its own reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writer {
    /// The thread that owns the shard (plain stores).
    Owner,
    /// Any other writer of the shard (atomic adds).
    Shared,
    /// A thread on the row's CPU (the per-CPU mode: plain stores in
    /// restartable sequences, any number of threads): it keeps the owner's
    /// residue and bit, but reserves as a shared writer does, before its
    /// claim RMW (see `Core::claim`).
    PerCpu,
}

impl Writer {
    fn bit(self) -> u64 {
        match self {
            Writer::Owner | Writer::PerCpu => OWNER_RES,
            Writer::Shared => SHARED_RES,
        }
    }
}

/// A row's header word (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header<'a>(&'a AtomicU64);

/// What a claim found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Claimed {
    /// The row was not queued: the claimer must push it.
    pub(crate) push: bool,
    /// The writer kind had not reserved the pair since its drain: the
    /// owner then reserves (folded scheme; a shared claimer reserved before
    /// its claim RMW, see `Core::claim`).
    pub(crate) reserve: bool,
}

/// What a shared writer's residue add found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Added {
    /// The residue before the add.
    pub(crate) residue: u64,
    /// A shared writer has claimed the pair since its drain.
    pub(crate) claimed: bool,
}

impl<'a> Header<'a> {
    /// The header in `word`.
    #[inline(always)]
    pub(crate) fn new(word: &'a AtomicU64) -> Self {
        Header(word)
    }

    /// The word itself (tests: its address).
    #[cfg(test)]
    pub(crate) fn word(self) -> &'a AtomicU64 {
        self.0
    }

    /// The owner path's check: whether the owner claimed the pair since
    /// its last drain. ORDERING: Relaxed. `OWNER_RES` is set only by this
    /// thread's own claims: finding it set means this thread queued the
    /// row (or found it queued, acquiring that claimer's announcement in
    /// its own claim RMW) since the last drain. (loom: Acquire here caught
    /// nothing.)
    #[inline(always)]
    pub(crate) fn owner_claimed(self) -> bool {
        self.0.load(Ordering::Relaxed) & OWNER_RES != 0
    }

    /// The per-CPU mode's check, after an update's commit: whether a
    /// thread on the row's CPU claimed the pair since its last drain.
    ///
    /// ORDERING: Acquire. Unlike the owner's bit, this one may have been
    /// set by *another* thread (any thread on the CPU), whose claim may
    /// still be pushing the row: this thread then trusts it, so that
    /// claim's `begin_claim` (published by its Release claim RMW) must be
    /// visible to any flush this thread starts afterwards (whose drain must
    /// wait for that claim), and its reservation (made before its claim
    /// RMW, see `Core::claim`) to any read this thread makes. loom:
    /// Relaxed fails `percpu_update_seen_claimed_is_flushed_by_a_later_flush`.
    #[inline(always)]
    pub(crate) fn percpu_claimed(self) -> bool {
        self.0.load(Ordering::Acquire) & OWNER_RES != 0
    }

    /// A claim by writer kind `w`: sets `QUEUED` and `w`'s reservation bit.
    ///
    /// ORDERING: AcqRel. Release publishes the claimer's `begin_claim`
    /// (see `dirty.rs`) to updaters that find the row queued, and the
    /// owner's cell writes to the flusher (its pass's `SeqCst` fence after
    /// the drain acquires this word's release sequence). Acquire: if the
    /// row is queued by a claimer still in progress, this thread trusts it
    /// to push, and the claimer's `begin_claim` must be visible to any
    /// flush this thread starts (so that its drain waits for that claim),
    /// whatever the policy (a global threshold's flushes have no fence
    /// before their drain). A real RMW, never a plain store: the flusher
    /// clears the bits from another thread (the kernel learned this in
    /// `3309b63a2281`).
    #[inline]
    pub(crate) fn claim(self, w: Writer) -> Claimed {
        let old = self.0.fetch_or(QUEUED | w.bit(), Ordering::AcqRel);
        Claimed {
            push: old & QUEUED == 0,
            reserve: old & w.bit() == 0,
        }
    }

    /// A shared writer's residue add of `small` pages (under `batch`).
    ///
    /// ORDERING: AcqRel. Release: the flusher's drain clears this word
    /// after it (release sequences continue through RMWs), and the pass's
    /// `SeqCst` fence after the drain acquires it (`flush_subtree`), so the
    /// writer's cell write, sequenced before, is visible to the pass.
    /// Acquire: if the pair is claimed by a claimer still in progress, its
    /// `begin_claim` (published by its Release claim) must be visible to
    /// any flush that sees what this thread does next: a flush this thread
    /// starts (its drain must wait for that claim) and, under the kernel-exact scheme, a flush on another thread
    /// that takes an ancestor residue this update then adds to (that flush
    /// must wait for the claim's push); and if a flush took from this
    /// residue before, its in-flight count of what it took is visible from
    /// here on (see [`take_at_most`](Self::take_at_most)).
    #[inline(always)]
    pub(crate) fn add_residue(self, small: u64) -> Added {
        let old = self.0.fetch_add(small, Ordering::AcqRel);
        Added {
            residue: old & RESIDUE_MASK,
            claimed: old & SHARED_RES != 0,
        }
    }

    /// [`add_residue`](Self::add_residue) by a sole writer: the same
    /// change of the word and the same result, as a load and a store.
    ///
    /// ORDERING: Relaxed load and store, no RMW: the caller has the tree
    /// exclusively (`Core::update_shared_sole`: the tree's only handle,
    /// borrowed `&mut`), so no other thread writes this word between them
    /// (no writer, no flusher's drain) or reads it before the borrow ends,
    /// which happens-before any later operation of the tree elsewhere.
    #[inline(always)]
    pub(crate) fn add_residue_sole(self, small: u64) -> Added {
        let old = self.0.load(Ordering::Relaxed);
        // ORDERING: Relaxed; as above.
        self.0.store(old.wrapping_add(small), Ordering::Relaxed);
        Added {
            residue: old & RESIDUE_MASK,
            claimed: old & SHARED_RES != 0,
        }
    }

    /// Kernel-exact accounting: a shared writer's add of `small` pages to
    /// an *ancestor's* shared residue on its shard (see
    /// `Core::walk_ancestors`).
    ///
    /// ORDERING: AcqRel. The residue is only a magnitude, but a flush that
    /// takes it (before its drain, see `flush_subtree`) must then find the
    /// writer's own row queued: the row's push (or the claim the writer
    /// found in progress, acquired by its own row's
    /// [`add_residue`](Self::add_residue)) happens before this RMW
    /// (Release), and the flush acquires it after taking the residue. And
    /// if a flush took from this residue before, its in-flight count of
    /// what it took is visible from here on (Acquire; see
    /// [`take_at_most`](Self::take_at_most)).
    #[inline]
    pub(crate) fn add_ancestor_residue(self, small: u64) -> u64 {
        self.0.fetch_add(small, Ordering::AcqRel) & RESIDUE_MASK
    }

    /// A fold's take: zeroes the shared residue, keeping the other bits
    /// (hence an RMW); returns what it held.
    ///
    /// ORDERING: Acquire. If a flush took the pages this fold meant to
    /// count, its in-flight count of them must be visible to this thread's
    /// later reads (see [`take_at_most`](Self::take_at_most); loom: Relaxed
    /// fails `a_read_during_a_flush_is_bounded_kernel_exact`).
    #[inline]
    pub(crate) fn take_residue(self) -> u64 {
        self.0.fetch_and(!RESIDUE_MASK, Ordering::Acquire) & RESIDUE_MASK
    }

    /// The shared residue, for a flush that announces it in flight before
    /// taking it. ORDERING: Relaxed; the fence that follows the flush's
    /// takes acquires the release sequence it read (see `flush.rs`).
    #[inline]
    pub(crate) fn residue(self) -> u64 {
        self.0.load(Ordering::Relaxed) & RESIDUE_MASK
    }

    /// A flush's take of at most `r` pages (`r` was announced in flight,
    /// see `Core::take_residues`): the residue may have been folded
    /// meanwhile, and it never goes below zero.
    ///
    /// ORDERING: Release publishes the in-flight add sequenced before it
    /// to every updater whose residue RMW reads this value (they acquire).
    pub(crate) fn take_at_most(self, r: u64) {
        let _ = self
            .0
            .fetch_update(Ordering::Release, Ordering::Relaxed, |h| {
                Some(h - (h & RESIDUE_MASK).min(r))
            });
    }

    /// A flush's take where nothing is announced in flight (the folded
    /// scheme: the pair's reservation covers what the residue held until
    /// the flush's hand-over).
    ///
    /// ORDERING: Relaxed. The pass's fence after this RMW
    /// (`barrier_before_reading`) acquires the release sequence it reads
    /// (every writer's Release header RMW before it), so their counter
    /// writes are visible to the pass's reads, including the `load() != 0`
    /// guards, which could otherwise skip a non-zero counter (loom:
    /// removing the fence fails
    /// `an_update_after_the_push_on_another_slot_is_flushed`).
    pub(crate) fn clear_residue(self) {
        self.0.fetch_and(!RESIDUE_MASK, Ordering::Relaxed);
    }

    /// Writes the `next` field (`next`: group id + 1 of the row below, 0
    /// for none), keeping the other bits (a writer may be adding to the
    /// residue concurrently).
    pub(crate) fn set_next<W: WorkSink>(self, next: u64, work: &mut W) {
        // ORDERING: Relaxed; published by the Release CAS on the list head.
        let mut old = self.0.load(Ordering::Relaxed);
        loop {
            let new = (old & !NEXT_MASK) | (next << NEXT_SHIFT);
            match self
                .0
                .compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(v) => old = v,
            }
            work.count(Work::Atomic, 1);
        }
    }

    /// The drain of a popped row: clears the claim, both reservations and
    /// the link; returns the link (group id + 1 of the next row, 0 at the
    /// end).
    ///
    /// This RMW and every shared writer's residue add modify the same
    /// word, so they are totally ordered: an update ordered after this
    /// clear sees `QUEUED` clear and queues the row again; an update
    /// ordered before it must be carried by this flush (if the row is in
    /// the flushed subtree) or by a later one (it stays on the shard's
    /// dirty tree).
    ///
    /// ORDERING: Relaxed. The visibility of such an update's counter write
    /// is not this RMW's job: every pass that reads the row's counters
    /// first takes the row's residue with an RMW of this same word and then
    /// issues a `SeqCst` fence (`flush_subtree`), which acquires every
    /// writer's Release RMW before it (release sequences continue through
    /// RMWs). loom: weakening *that* fence's acquire fails
    /// `an_update_after_the_push_on_another_slot_is_flushed`; this one
    /// passes all models as Relaxed, so it is Relaxed.
    ///
    /// The link is read with a plain load before the clear: once the list
    /// is taken the chain belongs to the flusher, and only the pusher that
    /// won the row's claim ever wrote the link, before its push. Reading it
    /// from the RMW's result would be as good on hardware, but a model
    /// checker gives an RMW the latest value whatever the orderings; the
    /// load is what lets loom check the list's Release/Acquire publication
    /// (weakening either fails
    /// `two_rows_pushed_by_another_thread_are_both_flushed`).
    pub(crate) fn drain<W: WorkSink>(self, work: &mut W) -> u64 {
        // ORDERING: Relaxed; the link was published by the pusher's Release
        // CAS on the list head, which `take_all`'s Acquire swap synchronized
        // with.
        let next = (self.0.load(Ordering::Relaxed) & NEXT_MASK) >> NEXT_SHIFT;
        self.0.fetch_and(
            !(QUEUED | OWNER_RES | SHARED_RES | NEXT_MASK),
            Ordering::Relaxed,
        );
        work.count(Work::Atomic, 1);
        work.count(Work::ListPop, 1);
        next
    }

    /// Whether the row is queued, for quiescent checks (reaping,
    /// verification). ORDERING: Relaxed; callers hold the row quiescent.
    pub(crate) fn queued_quiescent(self) -> bool {
        self.0.load(Ordering::Relaxed) & QUEUED != 0
    }

    /// Clears the word of a row being recycled (idle, no handle left).
    /// ORDERING: Relaxed; nobody else touches the row.
    pub(crate) fn reset(self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// The owner's residue word of a row (see the module docs): written by the
/// shard's owner thread alone, with plain loads and stores.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnerResidue<'a>(&'a AtomicU64);

impl<'a> OwnerResidue<'a> {
    /// The residue in `word`.
    #[inline(always)]
    pub(crate) fn new(word: &'a AtomicU64) -> Self {
        OwnerResidue(word)
    }

    /// Accounts `mag` pages; returns the residue left, which is negative
    /// (as `i64`) once the residue reached `batch`: fold it with
    /// [`empty`](Self::empty).
    ///
    /// ORDERING: Relaxed load and store; the owner's own word (this thread
    /// is its only writer, nobody else reads it but a quiescent recycler).
    #[inline(always)]
    pub(crate) fn count_down(self, mag: u64) -> u64 {
        let left = self.0.load(Ordering::Relaxed).wrapping_sub(mag);
        self.0.store(left, Ordering::Relaxed);
        left
    }

    /// Empties a residue that [`count_down`](Self::count_down) took to
    /// `left` (negative) and returns the pages it held: it started at
    /// `batch − 1` when empty and lost one per page.
    #[inline]
    pub(crate) fn empty(self, left: u64, batch: u64) -> u64 {
        self.set_empty(batch);
        (batch - 1).wrapping_sub(left)
    }

    /// The residue word itself (the per-CPU mode's fold section writes it).
    #[inline(always)]
    pub(crate) fn word(self) -> &'a AtomicU64 {
        self.0
    }

    /// The per-CPU mode's look at a residue that threads on the row's CPU
    /// write (in sections), for a fold. ORDERING: Relaxed; any value it
    /// reads is one of the residue's, and the fold only ever over-counts
    /// from a stale one (see `Core::fold_percpu`).
    #[inline]
    pub(crate) fn peek(self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the residue empty (`batch − 1`). ORDERING: Relaxed; the owner's
    /// own word, or a row no handle reaches yet (allocation).
    #[inline]
    pub(crate) fn set_empty(self, batch: u64) {
        self.0.store(batch - 1, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn header_fields_do_not_overlap() {
        let fields = [RESIDUE_MASK, SHARED_RES, OWNER_RES, NEXT_MASK, QUEUED];
        for (i, a) in fields.iter().enumerate() {
            for b in &fields[i + 1..] {
                assert_eq!(a & b, 0);
            }
        }
        assert_eq!(fields.iter().fold(0, |acc, f| acc | f), u64::MAX);
        assert!(((MAX_GROUPS as u64 + 1) << NEXT_SHIFT) & !NEXT_MASK == 0);
        // Two residues' worth at the largest batch fit the field.
        const { assert!(2 * (1u64 << 20) - 2 <= RESIDUE_MASK) };
    }

    #[test]
    fn transitions_keep_each_others_bits() {
        let w = AtomicU64::new(0);
        let h = Header::new(&w);
        let c = h.claim(Writer::Shared);
        assert!(c.push && c.reserve);
        let c = h.claim(Writer::Owner);
        assert!(!c.push && c.reserve);
        assert!(h.owner_claimed());
        h.set_next(7, &mut ());
        let a = h.add_residue(5);
        assert_eq!(a.residue, 0);
        assert!(a.claimed);
        assert_eq!(h.residue(), 5);
        h.take_at_most(3);
        assert_eq!(h.residue(), 2);
        assert_eq!(h.take_residue(), 2);
        assert!(h.queued_quiescent());
        assert_eq!(h.drain(&mut ()), 7);
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_owner_residue_counts_down_to_a_fold() {
        let w = AtomicU64::new(0);
        let r = OwnerResidue::new(&w);
        r.set_empty(32);
        assert!((r.count_down(31) as i64) >= 0);
        let left = r.count_down(3);
        assert!((left as i64) < 0);
        assert_eq!(r.empty(left, 32), 34);
        assert_eq!(w.load(Ordering::Relaxed), 31);
    }
}
