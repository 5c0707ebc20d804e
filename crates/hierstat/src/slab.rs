//! Per-shard counter rows, in shard-major slabs.
//!
//! Every group owns one *row* per shard: a header word, the owner's residue
//! word, then one 8-byte counter per schema slot. Rows of different groups
//! on the same shard are packed contiguously (the kernel's per-CPU areas do
//! the same): they are written by the same shard's updaters, so packing
//! them costs no false sharing and no padding per counter. Shard sections
//! are 128-byte aligned and padded, so two shards never share a cache line
//! (or an adjacent-line prefetch pair).
//!
//! Rows live in *buckets* of geometrically growing capacity (16, 32, ...,
//! 256 rows, then 256 each), so memory grows with the number of groups
//! (at most 255 rows of slack) and a row never moves.
//! A group caches its bucket and offsets, so the hot path reaches its row
//! without consulting any table.
//!
//! # Three sections per bucket
//!
//! * **owner cells** (`lines`): written with plain loads and stores by the
//!   one thread that owns the shard (see `shard.rs`); never written by
//!   anyone else;
//! * **shared cells** (`shared`, allocated on first use): atomic
//!   `fetch_add`s by every other writer of the shard — explicit-shard calls
//!   (the simulator) and threads beyond the shard count — which the flusher
//!   `swap`s to zero;
//! * **snapshots** (`prev`, allocated by the first flush that meets a
//!   non-zero owner cell): the owner cell's value at the last flush, owned
//!   by flushers (`delta = cur − prev`), so no flusher writes a line that
//!   an owner writes, as the kernel's rstat keeps `state_prev`.
//!
//! All three share one geometry, so a word's index is the same in each.
//!
//! The one `unsafe` block of the crate is here: a row's address cached as
//! a pointer (`RowRef::row`), so the update path reaches its row with one
//! bounds check instead of a walk and three.
//!
//! # Header word
//!
//! | bits | field | written by |
//! |---|---|---|
//! | 0..30 | shared `residue`: magnitude (pages) of shared-path updates not yet folded | shared writers (`fetch_add`), fold (reset) |
//! | 30 | `SHARED_RES`: a shared writer reserved this pair since its last drain | shared writers (claim), flusher (drain) |
//! | 31 | `OWNER_RES`: the owner reserved this pair since its last drain | owner (claim), flusher (drain) |
//! | 32..63 | `next`: link of the shard's lock-free update list (row + 1; 0 ends the list) | the pusher that won the claim, while `QUEUED` |
//! | 63 | `QUEUED`: the row is on the shard's update list | claimers, flusher (drain) |
//!
//! The owner's residue is the row's second word, written by the owner
//! alone (plain load and store).
//!
//! Shared writers put the residue and the claim bit in one word: the
//! updater's residue `fetch_add` (Release) and the flusher's drain are
//! read-modify-writes of the same location, so one of them is first —
//! either the flusher sees the update's counter write, or the updater sees
//! `QUEUED` clear and queues the row again. The owner's plain path closes
//! the same window with an asymmetric barrier (see `update.rs`).

use crate::sync::{Arc, AtomicU64, Ordering};
use std::ptr::NonNull;
use std::sync::OnceLock;

/// Mask of the shared residue field.
pub(crate) const RESIDUE_MASK: u64 = (1 << 30) - 1;
/// A shared writer reserved the pair (folded thresholds) since its drain.
pub(crate) const SHARED_RES: u64 = 1 << 30;
/// The owner reserved the pair (folded thresholds) since its drain.
pub(crate) const OWNER_RES: u64 = 1 << 31;
/// Word offset of the owner's residue in a row.
pub(crate) const OWNER_RESIDUE: usize = 1;
/// Word offset of the first counter in a row.
pub(crate) const CELLS: usize = 2;
/// Shift of the `next` field.
pub(crate) const NEXT_SHIFT: u32 = 32;
/// Mask of the `next` field.
pub(crate) const NEXT_MASK: u64 = ((1 << 31) - 1) << NEXT_SHIFT;
/// The claim bit.
pub(crate) const QUEUED: u64 = 1 << 63;
/// Largest number of rows (the `next` field holds row + 1 in 31 bits).
pub(crate) const MAX_ROWS: usize = (1 << 31) - 2;

/// Rows in the first bucket.
const FIRST_BUCKET_ROWS: usize = 16;
/// Buckets stop growing at this many rows.
const MAX_BUCKET_ROWS: usize = 256;
/// Index of the first bucket of `MAX_BUCKET_ROWS` rows (16 << 4 = 256).
const LAST_GROWING: usize = 4;
/// Rows in the growing buckets 0..=LAST_GROWING.
const GROWING_ROWS: usize = FIRST_BUCKET_ROWS * ((1 << (LAST_GROWING + 1)) - 1);
/// Shard sections are padded to this many words (128 bytes).
const SECTION_ALIGN_WORDS: usize = 16;

/// A zeroed array of words whose first word starts a 128-byte line pair,
/// so that shard sections (multiples of 16 words) start on their own pair.
/// The allocation is 15 words longer than asked and `start` skips to the
/// first aligned word: one contiguous slice, so a row is one slice too.
#[derive(Debug)]
pub(crate) struct Words {
    words: Box<[AtomicU64]>,
    start: usize,
}

impl Words {
    fn zeroed(len: usize) -> Self {
        let words: Box<[AtomicU64]> = (0..len + SECTION_ALIGN_WORDS - 1)
            .map(|_| AtomicU64::new(0))
            .collect();
        // Reading an address is safe; `AtomicU64` is 8-byte aligned, so the
        // skew to the next 128-byte boundary is a whole number of words.
        let addr = words.as_ptr() as usize;
        let start = (128 - addr % 128) % 128 / 8;
        Words { words, start }
    }

    /// Word `i`.
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> &AtomicU64 {
        &self.words[self.start + i]
    }

    fn len(&self) -> usize {
        self.words.len() + 1 - SECTION_ALIGN_WORDS
    }
}

/// One bucket: `shards` sections of `rows` rows each, in three parallel
/// sections (see the module docs).
#[derive(Debug)]
pub(crate) struct Bucket {
    /// Headers, owner residues and owner cells.
    pub(crate) lines: Words,
    /// Shared cells, allocated by the first shared-path write.
    shared: OnceLock<Words>,
    /// Flushers' snapshots of the owner cells, allocated by the first flush
    /// that meets a non-zero owner cell.
    prev: OnceLock<Words>,
}

impl Bucket {
    fn zeroed(words: usize) -> Self {
        let b = Bucket {
            lines: Words::zeroed(words),
            shared: OnceLock::new(),
            prev: OnceLock::new(),
        };
        // loom cannot see the synchronization inside std's `OnceLock`, and
        // would take the lazy creation of the sections' (loom) atomics for a
        // race: under loom they are created with the bucket.
        #[cfg(loom)]
        {
            let _ = b.shared.set(Words::zeroed(words));
            let _ = b.prev.set(Words::zeroed(words));
        }
        b
    }

    /// Word `i` of the owner section.
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> &AtomicU64 {
        self.lines.word(i)
    }

    /// Word `i` of the shared section, allocating it on first use.
    #[inline(always)]
    pub(crate) fn shared_word(&self, i: usize) -> &AtomicU64 {
        self.shared
            .get_or_init(|| Words::zeroed(self.len_words()))
            .word(i)
    }

    /// Word `i` of the shared section, if the section exists.
    #[inline(always)]
    pub(crate) fn shared_word_if_any(&self, i: usize) -> Option<&AtomicU64> {
        self.shared.get().map(|w| w.word(i))
    }

    /// Word `i` of the snapshots, if they exist.
    #[inline(always)]
    pub(crate) fn prev_word_if_any(&self, i: usize) -> Option<&AtomicU64> {
        self.prev.get().map(|w| w.word(i))
    }

    /// Word `i` of the snapshots, allocating them on first use (flushers).
    #[inline(always)]
    pub(crate) fn prev_word(&self, i: usize) -> &AtomicU64 {
        self.prev
            .get_or_init(|| Words::zeroed(self.len_words()))
            .word(i)
    }

    fn len_words(&self) -> usize {
        self.lines.len()
    }

    /// Bytes allocated, all sections.
    fn bytes(&self) -> usize {
        let sections =
            1 + self.shared.get().is_some() as usize + self.prev.get().is_some() as usize;
        sections * (self.len_words() + SECTION_ALIGN_WORDS - 1) * 8
    }
}

/// A row split into its parts, for the owner path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnerRow<'a> {
    /// The header word.
    pub(crate) header: &'a AtomicU64,
    /// The owner's residue word.
    pub(crate) residue: &'a AtomicU64,
    /// The owner cells, one per schema slot.
    pub(crate) cells: &'a [AtomicU64],
}

/// Where a group's rows are: shared by the group's handle and the flusher.
#[derive(Debug, Clone)]
pub(crate) struct RowRef {
    pub(crate) bucket: Arc<Bucket>,
    /// Word offset of the row inside a shard section.
    pub(crate) offset: usize,
    /// Words per shard section.
    pub(crate) stride: usize,
    /// Words per row.
    pub(crate) len: usize,
    /// Shards of the bucket (sections in each of its word arrays).
    shards: usize,
    /// Shards `0..owners` may be written by their owners' plain path: all
    /// of them, or none where the tree cannot use it (see `update.rs`).
    owners: usize,
    /// The row's header word on shard 0 of the owner section: the update
    /// path's row address is `row0 + shard × stride`, one multiply-add
    /// instead of a walk through `bucket` and two slice bounds checks.
    row0: NonNull<AtomicU64>,
}

// SAFETY: `row0` points into `bucket.lines`, a boxed slice of atomics that
// the `Arc` in the same struct keeps alive and never moves or shrinks; the
// pointer is only turned into shared references to `AtomicU64`, which is
// `Sync`. So sending or sharing a `RowRef` is as safe as sending or sharing
// the `Arc<Bucket>` it carries.
unsafe impl Send for RowRef {}
// SAFETY: as for `Send` above.
unsafe impl Sync for RowRef {}

impl RowRef {
    fn new(
        bucket: Arc<Bucket>,
        offset: usize,
        stride: usize,
        len: usize,
        (shards, owners): (usize, usize),
    ) -> Self {
        // Every row of the bucket on every shard lies inside the owner
        // section: `row` and `owner_row` rely on it.
        assert!(shards >= 1 && (shards - 1) * stride + offset + len <= bucket.lines.len());
        assert!(owners <= shards && len >= CELLS);
        let row0 = NonNull::from(bucket.lines.word(offset));
        RowRef {
            bucket,
            offset,
            stride,
            len,
            shards,
            owners,
            row0,
        }
    }

    /// The row on `slot`'s shard if `slot` is an owner slot of the tree
    /// (`slot` below the owner count, see `shard.rs`), else `None`: the
    /// owner path's one check, for both ownership and range.
    #[inline(always)]
    pub(crate) fn owner_row(&self, slot: usize) -> Option<OwnerRow<'_>> {
        if slot < self.owners {
            // SAFETY: as in `row`: `slot < owners <= shards`; the row is
            // `len >= CELLS` words (`new` asserts it).
            Some(unsafe { Self::split(self.row_unchecked(slot)) })
        } else {
            None
        }
    }

    /// The row on `shard`, split for the owner path.
    ///
    /// # Panics
    /// As [`row`](Self::row).
    #[inline(always)]
    pub(crate) fn owned_row(&self, shard: usize) -> OwnerRow<'_> {
        // SAFETY: `row` returns `len >= CELLS` words (`new` asserts it).
        unsafe { Self::split(self.row(shard)) }
    }

    /// Splits a row into header, residue and cells.
    ///
    /// # Safety
    /// `row.len() >= CELLS` (every row is: `new` asserts `len >= CELLS`).
    #[inline(always)]
    unsafe fn split(row: &[AtomicU64]) -> OwnerRow<'_> {
        debug_assert!(row.len() >= CELLS);
        // SAFETY: the caller guarantees `row.len() >= CELLS`.
        let (head, cells) = unsafe { row.split_at_unchecked(CELLS) };
        OwnerRow {
            header: &head[0],
            residue: &head[OWNER_RESIDUE],
            cells,
        }
    }

    /// # Safety
    /// `shard < self.shards`.
    #[inline(always)]
    unsafe fn row_unchecked(&self, shard: usize) -> &[AtomicU64] {
        debug_assert!(shard < self.shards);
        // SAFETY: `new` checked that the row on every shard below
        // `self.shards` lies inside `bucket.lines` (`(shards − 1) × stride +
        // offset + len` words from its start), and the caller guarantees
        // `shard` is below it; the words are initialised atomics, kept alive
        // and in place for `&self`'s lifetime by `self.bucket`, and only
        // ever accessed through shared references.
        unsafe { std::slice::from_raw_parts(self.row0.as_ptr().add(shard * self.stride), self.len) }
    }

    /// Index of the header word of this row on `shard`.
    #[inline(always)]
    pub(crate) fn base(&self, shard: usize) -> usize {
        shard * self.stride + self.offset
    }

    /// The whole row on `shard`: header, owner residue, owner cells.
    ///
    /// # Panics
    /// If `shard` is not below the tree's shard count (callers pass a lane
    /// or a checked [`Shard`](crate::Shard), so it never does).
    #[inline(always)]
    pub(crate) fn row(&self, shard: usize) -> &[AtomicU64] {
        assert!(shard < self.shards, "shard {shard} out of range");
        // SAFETY: `shard < self.shards`, checked above.
        unsafe { self.row_unchecked(shard) }
    }

    /// The header word on `shard`.
    #[inline(always)]
    pub(crate) fn header(&self, shard: usize) -> &AtomicU64 {
        self.bucket.word(self.base(shard))
    }

    /// The owner's residue word on `shard`.
    #[inline(always)]
    pub(crate) fn owner_residue(&self, shard: usize) -> &AtomicU64 {
        self.bucket.word(self.base(shard) + OWNER_RESIDUE)
    }

    /// Owner cell `slot` on `shard` (written by the shard's owner only).
    #[inline(always)]
    pub(crate) fn counter(&self, shard: usize, slot: usize) -> &AtomicU64 {
        self.bucket.word(self.base(shard) + CELLS + slot)
    }

    /// Shared cell `slot` on `shard` (atomic adds), allocated on first use.
    #[inline(always)]
    pub(crate) fn shared_counter(&self, shard: usize, slot: usize) -> &AtomicU64 {
        self.bucket.shared_word(self.base(shard) + CELLS + slot)
    }

    /// Shared cell `slot` on `shard`, if any shared write ever happened in
    /// this bucket.
    #[inline(always)]
    pub(crate) fn shared_counter_if_any(&self, shard: usize, slot: usize) -> Option<&AtomicU64> {
        self.bucket
            .shared_word_if_any(self.base(shard) + CELLS + slot)
    }

    /// The flushers' snapshot of owner cell `slot` on `shard`, if any.
    #[inline(always)]
    pub(crate) fn prev_if_any(&self, shard: usize, slot: usize) -> Option<&AtomicU64> {
        self.bucket
            .prev_word_if_any(self.base(shard) + CELLS + slot)
    }

    /// What slot `slot` on `shard` holds that no flush has carried yet:
    /// owner cell minus snapshot, plus the shared cell. For quiescent
    /// checks (verification, recycling), not for flushing.
    pub(crate) fn unflushed(&self, shard: usize, slot: usize) -> u64 {
        // ORDERING: Relaxed; callers hold the row quiescent.
        let cur = self.counter(shard, slot).load(Ordering::Relaxed);
        let prev = self
            .prev_if_any(shard, slot)
            .map_or(0, |p| p.load(Ordering::Relaxed));
        let shared = self
            .shared_counter_if_any(shard, slot)
            .map_or(0, |c| c.load(Ordering::Relaxed));
        cur.wrapping_sub(prev).wrapping_add(shared)
    }

    /// The flushers' snapshot of owner cell `slot` on `shard`, allocating
    /// the snapshots on first use.
    #[inline(always)]
    pub(crate) fn prev(&self, shard: usize, slot: usize) -> &AtomicU64 {
        self.bucket.prev_word(self.base(shard) + CELLS + slot)
    }
}

/// Allocator of rows.
#[derive(Debug)]
pub(crate) struct Slab {
    shards: usize,
    owners: usize,
    row_words: usize,
    buckets: Vec<Arc<Bucket>>,
    next_row: usize,
    free: Vec<u32>,
}

impl Slab {
    /// A slab of rows of `slots` counters on `shards` shards, of which the
    /// first `owners` (all or none) take owner-path writes.
    pub(crate) fn new(shards: usize, owners: usize, slots: usize) -> Self {
        Slab {
            shards,
            owners,
            row_words: CELLS + slots,
            buckets: Vec::new(),
            next_row: 0,
            free: Vec::new(),
        }
    }

    /// Words per row (header + counters).
    #[cfg(test)]
    pub(crate) fn row_words(&self) -> usize {
        self.row_words
    }

    fn bucket_rows(b: usize) -> usize {
        (FIRST_BUCKET_ROWS << b.min(LAST_GROWING)).min(MAX_BUCKET_ROWS)
    }

    fn section_words(&self, b: usize) -> usize {
        let w = Self::bucket_rows(b) * self.row_words;
        w.div_ceil(SECTION_ALIGN_WORDS) * SECTION_ALIGN_WORDS
    }

    /// (bucket, index in bucket) of `row`.
    fn locate(row: usize) -> (usize, usize) {
        if row >= GROWING_ROWS {
            let r = row - GROWING_ROWS;
            return (LAST_GROWING + 1 + r / MAX_BUCKET_ROWS, r % MAX_BUCKET_ROWS);
        }
        let q = row / FIRST_BUCKET_ROWS + 1;
        let b = (usize::BITS - 1 - q.leading_zeros()) as usize;
        let start = FIRST_BUCKET_ROWS * ((1 << b) - 1);
        (b, row - start)
    }

    /// Allocates a zeroed row: a recycled one if any, else a fresh one.
    pub(crate) fn alloc(&mut self) -> Option<(u32, RowRef)> {
        let row = match self.free.pop() {
            Some(r) => r as usize,
            None => {
                if self.next_row >= MAX_ROWS {
                    return None;
                }
                self.next_row += 1;
                self.next_row - 1
            }
        };
        let (b, idx) = Self::locate(row);
        while self.buckets.len() <= b {
            let n = self.shards * self.section_words(self.buckets.len());
            self.buckets.push(Arc::new(Bucket::zeroed(n)));
        }
        Some((
            row as u32,
            RowRef::new(
                self.buckets[b].clone(),
                idx * self.row_words,
                self.section_words(b),
                self.row_words,
                (self.shards, self.owners),
            ),
        ))
    }

    /// Returns a row whose words are all zero to the free list.
    pub(crate) fn free(&mut self, row: u32) {
        self.free.push(row);
    }

    /// Bytes of counter memory allocated so far.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.buckets.iter().map(|b| b.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_located_in_growing_buckets() {
        assert_eq!(Slab::locate(0), (0, 0));
        assert_eq!(Slab::locate(15), (0, 15));
        assert_eq!(Slab::locate(16), (1, 0));
        assert_eq!(Slab::locate(47), (1, 31));
        assert_eq!(Slab::locate(48), (2, 0));
        assert_eq!(Slab::locate(495), (4, 255));
        assert_eq!(Slab::locate(496), (5, 0));
        assert_eq!(Slab::locate(496 + 256), (6, 0));
        assert_eq!(Slab::bucket_rows(4), 256);
        assert_eq!(Slab::bucket_rows(9), 256);
    }

    #[test]
    fn shard_sections_never_share_a_cache_line() {
        let mut s = Slab::new(4, 4, 3);
        let mut rows = Vec::new();
        for _ in 0..100 {
            rows.push(s.alloc().unwrap().1);
        }
        for r in &rows {
            // Byte ranges of the same row on different shards are in
            // different 128-byte lines; rows only share lines within a shard.
            for sh in 0..3 {
                let end = (r.base(sh) + s.row_words() - 1) * 8 / 128;
                let next_start = r.base(sh + 1) * 8 / 128;
                assert!(end < next_start, "shard {sh} row overlaps shard {}", sh + 1);
            }
            assert_eq!(r.stride % SECTION_ALIGN_WORDS, 0);
        }
    }

    #[test]
    fn buckets_are_cache_line_pair_aligned() {
        let mut s = Slab::new(3, 3, 5);
        let (_, r) = s.alloc().unwrap();
        let p = r.header(1) as *const AtomicU64 as usize;
        assert_eq!(
            (p - r.offset * 8) % 128,
            0,
            "shard sections start on a 128-byte boundary"
        );
    }

    #[test]
    fn header_fields_do_not_overlap() {
        let fields = [RESIDUE_MASK, SHARED_RES, OWNER_RES, NEXT_MASK, QUEUED];
        for (i, a) in fields.iter().enumerate() {
            for b in &fields[i + 1..] {
                assert_eq!(a & b, 0);
            }
        }
        assert_eq!(fields.iter().fold(0, |acc, f| acc | f), u64::MAX);
        assert!(((MAX_ROWS as u64 + 1) << NEXT_SHIFT) & !NEXT_MASK == 0);
    }
}
