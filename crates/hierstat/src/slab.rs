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
//! A group's node caches its bucket and offsets, and every handle of the
//! group a copy of its row's address (`RowCursor`), so the hot path
//! reaches its row without consulting any table.
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
//! Most of the crate's `unsafe` code is here (the rest is the group
//! handle's, `group.rs`): a row's address cached as a pointer
//! (`RowRef::row0`, copied into every group handle as a `RowCursor`), so
//! the update path reaches its row with one multiply-add and one compare,
//! and its cells with a checked [`Slot`] and no bounds check.
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
//! alone (plain load and store). It counts *down*: it holds the pages the
//! owner may still add before it folds, minus one (`batch − 1` when empty,
//! which [`Slab::alloc`] writes), so that one subtraction both accounts an
//! update and, by going negative, says that the residue reached `batch`:
//! the owner's update tests the result's sign and compares with nothing.
//!
//! Shared writers put the residue and the claim bit in one word: the
//! updater's residue `fetch_add` (Release) and the flusher's drain are
//! read-modify-writes of the same location, so one of them is first —
//! either the flusher sees the update's counter write, or the updater sees
//! `QUEUED` clear and queues the row again. The owner's plain path closes
//! the same window with an asymmetric barrier (see `update.rs`).

use crate::schema::Slot;
use crate::sync::{Arc, AtomicU64, Ordering};
use std::marker::PhantomData;
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

    /// Words `i..i + len`.
    #[inline(always)]
    fn slice(&self, i: usize, len: usize) -> &[AtomicU64] {
        &self.words[self.start + i..self.start + i + len]
    }

    /// A pointer to word `i` that may address every word of the array (a
    /// pointer made from [`word`](Self::word)'s reference may address only
    /// that word).
    ///
    /// # Panics
    /// If `i` is out of range.
    fn ptr(&self, i: usize) -> NonNull<AtomicU64> {
        assert!(self.start + i < self.words.len(), "word {i} out of range");
        let base = NonNull::from(&*self.words).cast::<AtomicU64>();
        // SAFETY: `start + i` is in bounds (asserted above), so the offset
        // stays inside the allocation the pointer came from.
        unsafe { base.add(self.start + i) }
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

    /// The snapshots, allocated on first use.
    fn prev_words(&self) -> &Words {
        self.prev.get_or_init(|| Words::zeroed(self.len_words()))
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

/// One group's row on one shard, for the owner path: its header, the
/// owner's residue and the owner cells, reached from the row's address
/// with no bounds check (a [`Slot`] is below every row's cell count).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnerRow<'a> {
    /// The header word; `CELLS + slots` words of the owner section start
    /// here.
    row: NonNull<AtomicU64>,
    _words: PhantomData<&'a [AtomicU64]>,
}

impl<'a> OwnerRow<'a> {
    /// # Safety
    /// `row` points at the header of a row of `CELLS + slots` words of a
    /// bucket's owner section (`slots` the tree's schema's), the bucket
    /// alive and in place for `'a`.
    #[inline(always)]
    unsafe fn new(row: NonNull<AtomicU64>) -> Self {
        OwnerRow {
            row,
            _words: PhantomData,
        }
    }

    /// The header word.
    #[inline(always)]
    pub(crate) fn header(self) -> &'a AtomicU64 {
        // SAFETY: word 0 of the row (see `new`); initialised atomics, only
        // ever accessed through shared references.
        unsafe { self.row.as_ref() }
    }

    /// The owner's residue word.
    #[inline(always)]
    pub(crate) fn residue(self) -> &'a AtomicU64 {
        // SAFETY: word `OWNER_RESIDUE < CELLS` of the row (see `new`).
        unsafe { self.row.add(OWNER_RESIDUE).as_ref() }
    }

    /// Owner cell `slot`.
    #[inline(always)]
    pub(crate) fn cell(self, slot: Slot) -> &'a AtomicU64 {
        // SAFETY: a `Slot` is below the schema's slot count (see `Slot`),
        // and the row has `CELLS + slots` words (see `new`); only one
        // schema's slots reach a tree's rows.
        unsafe { self.row.add(CELLS + slot.get()).as_ref() }
    }
}

/// A row's words on one shard as a flush reads them (see
/// [`RowRef::flush_view`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlushView<'a> {
    /// The owner cells.
    pub(crate) cells: &'a [AtomicU64],
    /// The flushers' snapshots of them, if the bucket has any yet.
    pub(crate) prev: Option<&'a [AtomicU64]>,
    /// The shared cells, if the bucket has any yet.
    pub(crate) shared: Option<&'a [AtomicU64]>,
}

/// What a group handle carries of the group's rows for the owner path: the
/// row's header on shard 0 of the owner section, the words between shards
/// and the owner count. An update reaches its row from the handle with one
/// multiply-add, loading nothing through the group's node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowCursor {
    row0: NonNull<AtomicU64>,
    stride: u32,
    owners: u32,
}

impl RowCursor {
    /// The row on `slot`'s shard if `slot` is an owner slot of the tree
    /// (`slot` below the owner count, see `shard.rs`), else `None`: the
    /// owner path's one check, for both ownership and range.
    ///
    /// # Safety
    /// The cursor comes from [`RowRef::cursor`] of a `RowRef` that lives
    /// for `'a` (its `Arc<Bucket>` keeps the words in place).
    #[inline(always)]
    pub(crate) unsafe fn owner_row<'a>(&self, slot: usize) -> Option<OwnerRow<'a>> {
        if slot < self.owners as usize {
            // SAFETY: `RowRef::new` checked that the row on every shard
            // below `shards >= owners` lies inside the owner section, so the
            // offset stays in the allocation; the caller keeps it alive.
            Some(unsafe { OwnerRow::new(self.row0.add(slot * self.stride as usize)) })
        } else {
            None
        }
    }
}

/// Where a group's rows are: shared by the group's handle and the flusher.
#[derive(Debug, Clone)]
pub(crate) struct RowRef {
    pub(crate) bucket: Arc<Bucket>,
    /// Word offset of the row inside a shard section.
    pub(crate) offset: usize,
    /// Words per shard section.
    pub(crate) stride: usize,
    /// Counter cells per row (the schema's slots).
    cells: usize,
    /// Shards of the bucket (sections in each of its word arrays).
    shards: usize,
    /// Shards `0..owners` may be written by their owners' plain path: all
    /// of them, or none where the tree cannot use it (see `update.rs`).
    owners: usize,
    /// The row's header word on shard 0 of the owner section: the update
    /// path's row address is `row0 + shard × stride`, one multiply-add
    /// instead of a walk through `bucket` and two slice bounds checks. Made
    /// from the whole owner section, so it may address any of its words.
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
        // section: `owned_row` and `RowCursor::owner_row` rely on it.
        assert!(shards >= 1 && (shards - 1) * stride + offset + len <= bucket.lines.len());
        assert!(owners <= shards && len >= CELLS);
        // The cursor packs the stride and the owner count in 32 bits each.
        assert!(stride <= u32::MAX as usize && owners <= u32::MAX as usize);
        let row0 = bucket.lines.ptr(offset);
        RowRef {
            bucket,
            offset,
            stride,
            cells: len - CELLS,
            shards,
            owners,
            row0,
        }
    }

    /// The owner path's copy of where the row is (see [`RowCursor`]).
    pub(crate) fn cursor(&self) -> RowCursor {
        RowCursor {
            row0: self.row0,
            stride: self.stride as u32,
            owners: self.owners as u32,
        }
    }

    /// The row on `shard`, for the owner path.
    ///
    /// # Panics
    /// If `shard` is not below the tree's shard count (callers pass a lane
    /// or a checked [`Shard`](crate::Shard), so it never does).
    #[inline(always)]
    pub(crate) fn owned_row(&self, shard: usize) -> OwnerRow<'_> {
        assert!(shard < self.shards, "shard {shard} out of range");
        // SAFETY: `new` checked that the row on every shard below
        // `self.shards` lies inside `bucket.lines`, and `shard` is below it;
        // `self.bucket` keeps the words alive and in place for `&self`.
        unsafe { OwnerRow::new(self.row0.add(shard * self.stride)) }
    }

    /// Index of the header word of this row on `shard`.
    #[inline(always)]
    pub(crate) fn base(&self, shard: usize) -> usize {
        shard * self.stride + self.offset
    }

    /// The header word on `shard`.
    #[inline(always)]
    pub(crate) fn header(&self, shard: usize) -> &AtomicU64 {
        self.bucket.word(self.base(shard))
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

    /// The flusher's view of the row on `shard`: its owner cells, their
    /// snapshots and its shared cells (the last two if allocated), one
    /// word per slot each.
    #[inline]
    pub(crate) fn flush_view(&self, shard: usize) -> FlushView<'_> {
        let i = self.base(shard) + CELLS;
        FlushView {
            cells: self.bucket.lines.slice(i, self.cells),
            prev: self.bucket.prev.get().map(|w| w.slice(i, self.cells)),
            shared: self.bucket.shared.get().map(|w| w.slice(i, self.cells)),
        }
    }

    /// The snapshots of the owner cells on `shard`, allocating the
    /// bucket's snapshots on first use.
    pub(crate) fn prev_cells(&self, shard: usize) -> &[AtomicU64] {
        self.bucket
            .prev_words()
            .slice(self.base(shard) + CELLS, self.cells)
    }
}

/// Allocator of rows.
#[derive(Debug)]
pub(crate) struct Slab {
    shards: usize,
    owners: usize,
    /// An empty owner residue: `batch − 1` (see the module docs).
    empty_residue: u64,
    row_words: usize,
    buckets: Vec<Arc<Bucket>>,
    next_row: usize,
    free: Vec<u32>,
}

impl Slab {
    /// A slab of rows of `slots` counters on `shards` shards, of which the
    /// first `owners` (all or none) take owner-path writes, whose residues
    /// fold at `batch` pages.
    pub(crate) fn new(shards: usize, owners: usize, slots: usize, batch: u64) -> Self {
        assert!(batch >= 1, "a residue folds at one page or more");
        Slab {
            shards,
            owners,
            empty_residue: batch - 1,
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

    /// Allocates a row, zeroed but for its empty owner residues: a recycled
    /// one if any, else a fresh one.
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
        let rows = RowRef::new(
            self.buckets[b].clone(),
            idx * self.row_words,
            self.section_words(b),
            self.row_words,
            (self.shards, self.owners),
        );
        for s in 0..self.shards {
            // ORDERING: Relaxed; the row has no handle yet, and the one that
            // will reach an owner is published with the group it names.
            rows.owned_row(s)
                .residue()
                .store(self.empty_residue, Ordering::Relaxed);
        }
        Some((row as u32, rows))
    }

    /// Returns a row whose headers are zero and whose owner cells match
    /// their snapshots to the free list (`alloc` resets its residues).
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
        let mut s = Slab::new(4, 4, 3, 32);
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
        let mut s = Slab::new(3, 3, 5, 32);
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
