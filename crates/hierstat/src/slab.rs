//! Per-shard counter rows, in shard-major slabs.
//!
//! Every group owns one *row* per shard: a header word followed by one
//! 8-byte counter per schema slot. Rows of different groups on the same
//! shard are packed contiguously (the kernel's per-CPU areas do the same):
//! they are written by the same shard's updaters, so packing them costs no
//! false sharing and no padding per counter. Shard sections are 128-byte
//! aligned and padded, so two shards never share a cache line (or an
//! adjacent-line prefetch pair).
//!
//! Rows live in *buckets* of geometrically growing capacity (16, 32, ...,
//! 256 rows, then 256 each), so memory grows with the number of groups
//! (at most 255 rows of slack) and a row never moves.
//! A group caches its bucket and offsets, so the hot path reaches its row
//! without consulting any table.
//!
//! # Header word
//!
//! | bits | field | written by |
//! |---|---|---|
//! | 0..32 | `residue`: update magnitude (pages) not yet folded into the group's threshold counter | updaters (`fetch_add`), flusher (reset) |
//! | 32..63 | `next`: link of the shard's lock-free update list (row + 1; 0 ends the list) | the pusher that won the claim, while `QUEUED` |
//! | 63 | `QUEUED`: the row is on the shard's update list | updater (claim), flusher (drain) |
//!
//! Putting the residue and the claim bit in one word is what closes the
//! kernel's "benign" lost-update window: the updater's residue `fetch_add`
//! (Release) and the flusher's drain `fetch_and` (Acquire) are read-modify-
//! writes of the same location, so one of them is first: either the flusher
//! sees the update's counter write, or the updater sees `QUEUED` clear and
//! queues the row again. See `update.rs` and the loom tests.

use crate::sync::{Arc, AtomicU64};

/// Mask of the residue field.
pub(crate) const RESIDUE_MASK: u64 = (1 << 32) - 1;
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

/// A 128-byte aligned group of words, so that shard sections (multiples of
/// 16 words) start on their own cache-line pair.
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct Line(pub(crate) [AtomicU64; SECTION_ALIGN_WORDS]);

/// One bucket: `shards` sections of `rows` rows each.
#[derive(Debug)]
pub(crate) struct Bucket {
    pub(crate) lines: Box<[Line]>,
}

impl Bucket {
    fn zeroed(words: usize) -> Self {
        let lines = (0..words / SECTION_ALIGN_WORDS)
            .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        Bucket { lines }
    }

    /// Word `i` of the bucket.
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> &AtomicU64 {
        &self.lines[i / SECTION_ALIGN_WORDS].0[i % SECTION_ALIGN_WORDS]
    }

    fn len_words(&self) -> usize {
        self.lines.len() * SECTION_ALIGN_WORDS
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
}

impl RowRef {
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

    /// Counter `slot` on `shard`.
    #[inline(always)]
    pub(crate) fn counter(&self, shard: usize, slot: usize) -> &AtomicU64 {
        self.bucket.word(self.base(shard) + 1 + slot)
    }
}

/// Allocator of rows.
#[derive(Debug)]
pub(crate) struct Slab {
    shards: usize,
    row_words: usize,
    buckets: Vec<Arc<Bucket>>,
    next_row: usize,
    free: Vec<u32>,
}

impl Slab {
    pub(crate) fn new(shards: usize, slots: usize) -> Self {
        Slab {
            shards,
            row_words: 1 + slots,
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
            RowRef {
                bucket: self.buckets[b].clone(),
                offset: idx * self.row_words,
                stride: self.section_words(b),
            },
        ))
    }

    /// Returns a row whose words are all zero to the free list.
    pub(crate) fn free(&mut self, row: u32) {
        self.free.push(row);
    }

    /// Bytes of counter memory allocated so far.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.buckets.iter().map(|b| b.len_words() * 8).sum()
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
        let mut s = Slab::new(4, 3);
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
        assert_eq!(std::mem::align_of::<Line>(), 128);
        assert_eq!(std::mem::size_of::<Line>(), 128);
        let mut s = Slab::new(3, 5);
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
        assert_eq!(RESIDUE_MASK & NEXT_MASK, 0);
        assert_eq!(NEXT_MASK & QUEUED, 0);
        assert_eq!(RESIDUE_MASK | NEXT_MASK | QUEUED, u64::MAX);
        assert!(((MAX_ROWS as u64 + 1) << NEXT_SHIFT) & !NEXT_MASK == 0);
    }
}
