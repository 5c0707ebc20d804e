//! Counter rows, allocated on first touch from per-shard arenas.
//!
//! A *row* is one group's counters on one shard: a header word and the
//! owner's residue word (both in `header.rs`), then one 8-byte *owner
//! cell* per schema slot. A (group, shard) row exists
//! only once that shard writes the group: a group written from 4 of 1,024
//! shards has 4 rows. The group's row table (`table.rs`) says where they
//! are.
//!
//! # Arenas and chunks
//!
//! Each shard has its own arena ([`RowStore`]): chunks of geometrically
//! growing capacity (16, 32, ..., 256 rows, then 256 each), so an arena's
//! slack is at most 255 rows and a row never moves. Rows written by one
//! shard are packed together (the kernel's per-CPU areas do the same: they
//! are written by the same shard's updaters, so packing them costs no false
//! sharing and no padding per counter); chunks are 128-byte aligned and
//! padded, so rows of different shards never share a cache line (or an
//! adjacent-line prefetch pair). A reaped group's rows go back to their
//! shards' free lists.
//!
//! # Three sections per chunk
//!
//! * **owner cells** (`lines`, with the row's control words): written with
//!   plain loads and stores by the one thread that owns the shard (see
//!   `seat.rs`); never written by anyone else;
//! * **shared cells** (`shared`, allocated by the chunk's first shared-path
//!   write): atomic `fetch_add`s by every other writer of the shard —
//!   explicit-shard calls (the simulator) and threads beyond the shard
//!   count — which the flusher `swap`s to zero;
//! * **snapshots** (`prev`, allocated by the first flush that meets a
//!   non-zero owner cell in the chunk): the owner cell's value at the last
//!   flush, owned by flushers (`delta = cur − prev`), so no flusher writes a
//!   line that an owner writes, as the kernel's rstat keeps `state_prev`.
//!
//! The chunk's `lines` start with a 128-byte head holding the chunk's
//! address and those of its other two sections once they exist, then its
//! rows; the other two sections hold one word per slot
//! per row, in the same order. The group's row table keeps, beside each
//! row's address, its place in its chunk (its *index*, one byte), from
//! which the shared path and the flusher find the head, hence the chunk,
//! hence the row's shared cells and snapshots: no word per row spent on
//! it, and nothing added to the owner's path.
//!
//! # Unsafe code
//!
//! Rows are reached through raw pointers: the update path holds a row's
//! address (from the group's row table) and reaches its words with offsets
//! below the row's length, checked once by the schema ([`Slot`]); the
//! chunk's address is stored in its head as an exposed address. All of it
//! rests on one invariant, established by [`ArenaGuard::alloc`] (the only
//! maker of row addresses, which it returns with their index): *a row
//! address points at the header of row `index` of `CELLS + slots` words in
//! the `lines` section of a chunk of a [`RowStore`], `HEAD + index ×
//! (CELLS + slots)` words after the section's start, whose first word holds
//! that chunk's exposed address; the chunk lives, in place, as long as the
//! store*.
//! Chunks are owned through raw pointers (`OwnedChunk`: a moved `Box`
//! would invalidate its exposed address) and never freed before the store;
//! rows are recycled but never unmapped.

use crate::header::{Header, OwnerResidue};
use crate::schema::Slot;
use crate::sync::std_only::OnceLock;
use crate::sync::{lock, AtomicU64, Mutex, MutexGuard, Ordering, Rank, Ranked};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Word offset of the owner's residue in a row.
const OWNER_RESIDUE: usize = 1;
/// Word offset of the first counter in a row.
const CELLS: usize = 2;
/// Words of a chunk's head, before its first row (one line pair).
const HEAD: usize = 16;
/// Head word: the chunk's exposed address.
const HEAD_CHUNK: usize = 0;
/// Head word: the exposed address of the shared section's first word, 0
/// until it exists.
const HEAD_SHARED: usize = 1;
/// Head word: the same for the snapshots.
const HEAD_PREV: usize = 2;

/// Rows in an arena's first chunk.
const FIRST_CHUNK_ROWS: usize = 16;
/// Chunks stop growing at this many rows.
const MAX_CHUNK_ROWS: usize = 256;
/// Index of the first chunk of `MAX_CHUNK_ROWS` rows (16 << 4 = 256).
const LAST_GROWING: usize = 4;
/// Rows in the growing chunks 0..=LAST_GROWING.
const GROWING_ROWS: usize = FIRST_CHUNK_ROWS * ((1 << (LAST_GROWING + 1)) - 1);
/// Sections are padded to this many words (128 bytes).
const SECTION_ALIGN_WORDS: usize = 16;

/// A zeroed array of words whose first word starts a 128-byte line pair.
/// The allocation is 15 words longer than asked and `start` skips to the
/// first aligned word: one contiguous slice, so a row is one slice too.
#[derive(Debug)]
struct Words {
    words: Box<[AtomicU64]>,
    start: usize,
}

impl Words {
    /// `len` words (rounded up to whole line pairs, so that nothing else
    /// shares the last one).
    fn zeroed(len: usize) -> Self {
        let len = len.div_ceil(SECTION_ALIGN_WORDS) * SECTION_ALIGN_WORDS;
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
    fn word(&self, i: usize) -> &AtomicU64 {
        &self.words[self.start + i]
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

    /// Bytes allocated.
    fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// One chunk of a shard's arena: `rows` rows in three sections (see the
/// module docs).
#[derive(Debug)]
struct Chunk {
    /// The head, then each row's control words and owner cells.
    lines: Words,
    /// Shared cells (a row's `slots` words at `index × slots`), allocated
    /// by the chunk's first shared-path write.
    shared: OnceLock<Words>,
    /// Flushers' snapshots of the owner cells (laid out as `shared`),
    /// allocated by the first flush that meets a non-zero owner cell in the
    /// chunk.
    prev: OnceLock<Words>,
    /// Words of `shared` and `prev`: `rows × slots`.
    cells_len: usize,
    /// The arena's number of the chunk's first row.
    first_row: usize,
}

impl Chunk {
    /// A chunk of `rows` rows of `slots` cells; its head holds its
    /// address once it is in place (see `ArenaGuard::alloc`).
    fn new(rows: usize, slots: usize, first_row: usize) -> Self {
        let cells_len = rows * slots;
        let c = Chunk {
            lines: Words::zeroed(HEAD + rows * (CELLS + slots)),
            shared: OnceLock::new(),
            prev: OnceLock::new(),
            cells_len,
            first_row,
        };
        // loom cannot see the synchronization inside std's `OnceLock`, and
        // would take the lazy creation of the sections' (loom) atomics for a
        // race: under loom they are created with the chunk.
        #[cfg(loom)]
        {
            let _ = c.shared.set(Words::zeroed(cells_len));
            let _ = c.prev.set(Words::zeroed(cells_len));
        }
        c
    }

    /// The shared cells, allocated on first use; their address goes to the
    /// head (`HEAD_SHARED`).
    fn shared(&self) -> &Words {
        let w = self.shared.get_or_init(|| Words::zeroed(self.cells_len));
        publish(self.lines.word(HEAD_SHARED), w);
        w
    }

    /// The snapshots, allocated on first use; their address goes to the
    /// head (`HEAD_PREV`).
    fn prev(&self) -> &Words {
        let w = self.prev.get_or_init(|| Words::zeroed(self.cells_len));
        publish(self.lines.word(HEAD_PREV), w);
        w
    }

    fn bytes(&self) -> usize {
        self.lines.bytes()
            + self.shared.get().map_or(0, Words::bytes)
            + self.prev.get().map_or(0, Words::bytes)
    }
}

/// Writes the exposed address of `w`'s first word into the head word
/// `word` (every caller writes the same value).
fn publish(word: &AtomicU64, w: &Words) {
    let addr = w.ptr(0).as_ptr().expose_provenance() as u64;
    // ORDERING: Relaxed load (a hint), Release store: publishes the
    // section's zeroed words to every reader that loads the address
    // (`section`, Acquire).
    if word.load(Ordering::Relaxed) != addr {
        word.store(addr, Ordering::Release);
    }
}

/// A chunk owned through the raw pointer its box was turned into, so that
/// the address its head holds keeps the allocation's own permission: a
/// `Box` is a unique pointer, and moving it (into the arena's vector, or
/// when the vector grows) would invalidate every pointer derived from it
/// before the move, the exposed address included (Miri's Stacked Borrows
/// reports exactly that). Read-only after its creation but for its atomics
/// and its sections' one-time initialisation, and dropped with the arena.
#[derive(Debug)]
struct OwnedChunk(NonNull<Chunk>);

// SAFETY: an `OwnedChunk` owns its `Chunk` as a `Box` would, and hands out
// only shared references to it; `Chunk` is `Send` and `Sync` (atomics,
// `OnceLock`s of them, integers).
unsafe impl Send for OwnedChunk {}
// SAFETY: as for `Send`: shared access goes through `&Chunk`, which is
// `Sync`.
unsafe impl Sync for OwnedChunk {}

impl OwnedChunk {
    fn new(chunk: Chunk) -> Self {
        OwnedChunk(NonNull::from(Box::leak(Box::new(chunk))))
    }

    /// The chunk's address with the allocation's permission, exposed (its
    /// head holds it; `Row::chunk` takes it back).
    fn exposed_addr(&self) -> usize {
        self.0.as_ptr().expose_provenance()
    }
}

impl std::ops::Deref for OwnedChunk {
    type Target = Chunk;

    fn deref(&self) -> &Chunk {
        // SAFETY: the pointer came from a leaked box that only `drop`
        // frees; until then the chunk is only ever shared.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for OwnedChunk {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::leak` in `new` and is freed
        // only here, once; the arena (and so every row of the chunk) is
        // being dropped with the store.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// One shard's rows (behind the arena's lock, rank `Row`).
#[derive(Debug, Default)]
struct Arena {
    /// Chunks in place: a chunk's head holds its address, so it must not
    /// move when the vector grows.
    chunks: Vec<OwnedChunk>,
    /// Rows handed out so far (fresh ones are numbered in order).
    next: usize,
    /// Recycled rows, by number.
    free: Vec<u32>,
}

/// Every shard's arena of rows, for one tree.
#[derive(Debug)]
pub(crate) struct RowStore {
    arenas: Box<[Mutex<Arena>]>,
    /// Cells per row: the schema's slots.
    slots: usize,
    /// The residue batch (an empty owner residue holds `batch − 1`).
    batch: u64,
}

impl RowStore {
    /// Empty arenas for `shards` shards, rows of `slots` cells, residues
    /// folding at `batch` pages.
    pub(crate) fn new(shards: usize, slots: usize, batch: u64) -> Self {
        assert!(batch >= 1, "a residue folds at one page or more");
        RowStore {
            arenas: (0..shards).map(|_| Mutex::new(Arena::default())).collect(),
            slots,
            batch,
        }
    }

    /// Shard `s`'s arena, locked (rank `Row`: a leaf that takes nothing
    /// else, see `sync::Rank`).
    pub(crate) fn arena(&self, s: usize) -> ArenaGuard<'_> {
        ArenaGuard {
            guard: Ranked::take(Rank::Row, || lock(&self.arenas[s])),
            store: self,
        }
    }

    fn chunk_rows(c: usize) -> usize {
        // A row's index is one byte.
        const { assert!(MAX_CHUNK_ROWS <= 1 << 8) };
        (FIRST_CHUNK_ROWS << c.min(LAST_GROWING)).min(MAX_CHUNK_ROWS)
    }

    /// (chunk, index in chunk) of row number `r`.
    fn locate(r: usize) -> (usize, usize) {
        if r >= GROWING_ROWS {
            let r = r - GROWING_ROWS;
            return (LAST_GROWING + 1 + r / MAX_CHUNK_ROWS, r % MAX_CHUNK_ROWS);
        }
        let q = r / FIRST_CHUNK_ROWS + 1;
        let c = (usize::BITS - 1 - q.leading_zeros()) as usize;
        let start = FIRST_CHUNK_ROWS * ((1 << c) - 1);
        (c, r - start)
    }

    /// Cells per row.
    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    /// Bytes of rows allocated, all sections, all shards.
    pub(crate) fn bytes(&self) -> usize {
        (0..self.arenas.len())
            .map(|s| {
                self.arena(s)
                    .guard
                    .chunks
                    .iter()
                    .map(|c| c.bytes())
                    .sum::<usize>()
            })
            .sum()
    }
}

/// A locked arena.
pub(crate) struct ArenaGuard<'a> {
    guard: Ranked<MutexGuard<'a, Arena>>,
    store: &'a RowStore,
}

impl ArenaGuard<'_> {
    /// A row, zeroed but for its empty owner residue, and its index in its
    /// chunk: a recycled one if any, else a fresh one. The only maker of
    /// row addresses (see the module docs).
    pub(crate) fn alloc(&mut self) -> (RowAddr, u8) {
        let (slots, batch) = (self.store.slots, self.store.batch);
        let row_words = CELLS + slots;
        let a = &mut *self.guard;
        let r = match a.free.pop() {
            Some(r) => r as usize,
            None => {
                a.next += 1;
                a.next - 1
            }
        };
        let (c, i) = RowStore::locate(r);
        while a.chunks.len() <= c {
            let n = a.chunks.len();
            let first = a
                .chunks
                .last()
                .map_or(0, |l| l.first_row + RowStore::chunk_rows(n - 1));
            let chunk = OwnedChunk::new(Chunk::new(RowStore::chunk_rows(n), slots, first));
            // The head's word: the chunk's address, now that it is in
            // place. ORDERING: Relaxed; published with every row of the
            // chunk (the table entries' Release stores).
            chunk
                .lines
                .word(HEAD_CHUNK)
                .store(chunk.exposed_addr() as u64, Ordering::Relaxed);
            // Under loom the other sections exist from the start (see
            // `Chunk::new`): their addresses too.
            #[cfg(loom)]
            {
                let _ = (chunk.shared(), chunk.prev());
            }
            a.chunks.push(chunk);
        }
        let chunk: &Chunk = &a.chunks[c];
        let at = HEAD + i * row_words;
        let row = chunk.lines.ptr(at);
        // The row's last word is inside the section, as `Row` and
        // `OwnerRow` rely on (`Words::word` panics otherwise).
        let _ = chunk.lines.word(at + row_words - 1);
        OwnerResidue::new(chunk.lines.word(at + OWNER_RESIDUE)).set_empty(batch);
        (RowAddr(row), i as u8)
    }

    /// Returns a row, reset by [`Row::reset`], to the free list.
    pub(crate) fn free(&mut self, row: Row<'_>) {
        self.guard
            .free
            .push((row.chunk().first_row + row.index) as u32);
    }
}

/// A row's address: its header word (see the module docs for what it
/// guarantees). Only [`ArenaGuard::alloc`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowAddr(NonNull<AtomicU64>);

impl RowAddr {
    /// The address as a pointer, for a row table entry.
    pub(crate) fn as_ptr(self) -> *mut AtomicU64 {
        self.0.as_ptr()
    }

    /// The address a row table entry holds, back as a row address.
    ///
    /// # Safety
    /// `p` came from [`as_ptr`](Self::as_ptr) of a row of a [`RowStore`]
    /// that is alive.
    pub(crate) unsafe fn from_ptr(p: NonNull<AtomicU64>) -> Self {
        RowAddr(p)
    }
}

/// Byte offset of cell `slot` in a row (the per-CPU mode's sections
/// address it from the row's address, see `rseq.rs`).
#[inline(always)]
pub(crate) fn cell_offset(slot: Slot) -> usize {
    (CELLS + slot.get()) * 8
}

/// Byte offset of the owner's residue in a row (loom's modelled sections).
#[cfg(loom)]
pub(crate) const RESIDUE_OFFSET: usize = OWNER_RESIDUE * 8;

/// A row address from the per-CPU mode's section, which loaded it from a
/// row table entry (see `rseq.rs`).
///
/// # Safety
/// `p` was loaded from an entry of a [`RowTable`](crate::table::RowTable)
/// whose store lives for `'a`.
#[inline(always)]
pub(crate) unsafe fn owner_row_at<'a>(p: NonNull<AtomicU64>) -> OwnerRow<'a> {
    // SAFETY: the caller's guarantee: an entry holds a row address made by
    // `ArenaGuard::alloc` (see `RowAddr::from_ptr`, `OwnerRow::new`).
    unsafe { OwnerRow::new(RowAddr(p)) }
}

/// One group's row on one shard, for the owner path: its header, the
/// owner's residue and the owner cells, reached from the row's address
/// with no bounds check (a [`Slot`] is below every row's cell count).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnerRow<'a> {
    row: NonNull<AtomicU64>,
    _words: PhantomData<&'a [AtomicU64]>,
}

impl<'a> OwnerRow<'a> {
    /// The owner's view of the row at `row`.
    ///
    /// # Safety
    /// The row's store lives for `'a` (see the module docs).
    #[inline(always)]
    pub(crate) unsafe fn new(row: RowAddr) -> Self {
        OwnerRow {
            row: row.0,
            _words: PhantomData,
        }
    }

    /// The header word.
    #[inline(always)]
    pub(crate) fn header(self) -> Header<'a> {
        // SAFETY: word 0 of the row (see `new`); initialised atomics, only
        // ever accessed through shared references.
        Header::new(unsafe { self.row.as_ref() })
    }

    /// The owner's residue word.
    #[inline(always)]
    pub(crate) fn residue(self) -> OwnerResidue<'a> {
        // SAFETY: word `OWNER_RESIDUE < CELLS` of the row (see `new`).
        OwnerResidue::new(unsafe { self.row.add(OWNER_RESIDUE).as_ref() })
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

/// A row with its place in its chunk, for the shared path, the flushers
/// and recycling.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row<'a> {
    /// The row's header.
    row: NonNull<AtomicU64>,
    /// The row's index in its chunk.
    index: usize,
    /// Cells per row.
    slots: usize,
    _chunk: PhantomData<&'a Chunk>,
}

/// A row's words as a flush reads them (see [`Row::flush_view`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlushView<'a> {
    /// The owner cells.
    pub(crate) cells: &'a [AtomicU64],
    /// The flushers' snapshots of them, if the chunk has any yet.
    pub(crate) prev: Option<&'a [AtomicU64]>,
    /// The shared cells, if the chunk has any yet.
    pub(crate) shared: Option<&'a [AtomicU64]>,
}

impl<'a> Row<'a> {
    /// The row at `row`, index `index` in its chunk, of `slots` cells.
    ///
    /// # Safety
    /// `row` and `index` came together from [`ArenaGuard::alloc`] of a
    /// store whose rows have `slots` cells and that lives for `'a` (see the
    /// module docs).
    #[inline]
    pub(crate) unsafe fn new(row: RowAddr, index: u8, slots: usize) -> Self {
        Row {
            row: row.0,
            index: index as usize,
            slots,
            _chunk: PhantomData,
        }
    }

    /// Head word `w` of the row's chunk.
    #[inline]
    fn head(self, w: usize) -> &'a AtomicU64 {
        // SAFETY: the row is row `index` of its chunk, `HEAD + index ×
        // (CELLS + slots)` words after the head's first word, in the same
        // allocation (see `new`); `w < HEAD`.
        unsafe {
            self.row
                .sub(HEAD + self.index * (CELLS + self.slots) - w)
                .as_ref()
        }
    }

    /// The first word of the chunk's section whose address head word `w`
    /// holds, if the section exists.
    #[inline]
    fn section(self, w: usize) -> Option<*const AtomicU64> {
        // Set once, from 0, by `publish` (Release), before or after the row
        // was published (see `sync::load_published`).
        let addr = crate::sync::load_published(self.head(w)) as usize;
        (addr != 0).then(|| std::ptr::with_exposed_provenance::<AtomicU64>(addr))
    }

    /// `slots` words of a section from `base`, at the row's cells.
    #[inline]
    fn section_cells(self, base: *const AtomicU64) -> &'a [AtomicU64] {
        // SAFETY: `base` is the first word of a section of `rows × slots`
        // words of the row's chunk (head words `HEAD_SHARED`, `HEAD_PREV`),
        // alive as long as the chunk, and the row's cells are words
        // `index × slots..(index + 1) × slots` of it.
        unsafe { std::slice::from_raw_parts(base.add(self.cells_at()), self.slots) }
    }

    /// The row's chunk.
    #[inline]
    fn chunk(self) -> &'a Chunk {
        // Written before any row of the chunk was published, which the
        // caller's load of the row's address acquired, and never changed.
        let addr = crate::sync::load_immutable(self.head(HEAD_CHUNK)) as usize;
        // SAFETY: the head holds the exposed address of its chunk, which
        // lives in place as long as its store (see `new`), shared only by
        // shared references.
        let chunk: &'a Chunk = unsafe { &*std::ptr::with_exposed_provenance::<Chunk>(addr) };
        debug_assert_eq!(
            chunk.lines.ptr(HEAD + self.index * (CELLS + self.slots)),
            self.row,
            "a row lies in its chunk"
        );
        chunk
    }

    /// Word index of the row's first cell in `shared` and `prev`.
    #[inline]
    fn cells_at(self) -> usize {
        self.index * self.slots
    }

    /// The header word.
    #[inline]
    pub(crate) fn header(self) -> Header<'a> {
        // SAFETY: word 0 of the row (see `new`); initialised atomics, only
        // ever accessed through shared references.
        Header::new(unsafe { self.row.as_ref() })
    }

    /// The owner cells.
    #[inline]
    fn cells(self) -> &'a [AtomicU64] {
        // SAFETY: the row's words `CELLS..CELLS + slots` (see `new`).
        unsafe { std::slice::from_raw_parts(self.row.add(CELLS).as_ptr(), self.slots) }
    }

    /// Shared cell `slot`, allocating the chunk's shared cells on first use.
    #[inline]
    pub(crate) fn shared_cell(self, slot: Slot) -> &'a AtomicU64 {
        let base = match self.section(HEAD_SHARED) {
            Some(b) => b,
            None => self.chunk().shared().ptr(0).as_ptr(),
        };
        &self.section_cells(base)[slot.get()]
    }

    /// The flusher's view of the row: its owner cells, their snapshots and
    /// its shared cells (the last two if allocated).
    #[inline]
    pub(crate) fn flush_view(self) -> FlushView<'a> {
        FlushView {
            cells: self.cells(),
            prev: self.section(HEAD_PREV).map(|b| self.section_cells(b)),
            shared: self.section(HEAD_SHARED).map(|b| self.section_cells(b)),
        }
    }

    /// The snapshots of the row's owner cells, allocating the chunk's
    /// snapshots on first use.
    pub(crate) fn prev_cells(self) -> &'a [AtomicU64] {
        let base = match self.section(HEAD_PREV) {
            Some(b) => b,
            None => self.chunk().prev().ptr(0).as_ptr(),
        };
        self.section_cells(base)
    }

    /// What slot `k` holds that no flush has carried yet: owner cell minus
    /// snapshot, plus the shared cell. For quiescent checks (verification,
    /// recycling), not for flushing.
    pub(crate) fn unflushed(self, k: usize) -> u64 {
        let v = self.flush_view();
        // ORDERING: Relaxed; callers hold the row quiescent.
        let cur = v.cells[k].load(Ordering::Relaxed);
        let prev = v.prev.map_or(0, |w| w[k].load(Ordering::Relaxed));
        let shared = v.shared.map_or(0, |w| w[k].load(Ordering::Relaxed));
        cur.wrapping_sub(prev).wrapping_add(shared)
    }

    /// Zeroes the row for its next group: the header (the shared residue
    /// the next group must not inherit; `alloc` resets the owner's), the
    /// owner cells with their snapshots (equal, the row is idle: an owner
    /// cell is the running sum of one group's updates, kept within `i64`,
    /// see `saturation.rs`) and the shared cells. Call with no handle of
    /// the group left and flushers excluded.
    pub(crate) fn reset(self) {
        self.header().reset();
        let v = self.flush_view();
        // ORDERING: Relaxed; nobody else touches the row.
        let zero = |w: &[AtomicU64]| w.iter().for_each(|c| c.store(0, Ordering::Relaxed));
        zero(v.cells);
        if let Some(w) = v.prev {
            zero(w);
        }
        if let Some(w) = v.shared {
            zero(w);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn rows_are_located_in_growing_chunks() {
        assert_eq!(RowStore::locate(0), (0, 0));
        assert_eq!(RowStore::locate(15), (0, 15));
        assert_eq!(RowStore::locate(16), (1, 0));
        assert_eq!(RowStore::locate(47), (1, 31));
        assert_eq!(RowStore::locate(48), (2, 0));
        assert_eq!(RowStore::locate(495), (4, 255));
        assert_eq!(RowStore::locate(496), (5, 0));
        assert_eq!(RowStore::locate(496 + 256), (6, 0));
        assert_eq!(RowStore::chunk_rows(4), 256);
        assert_eq!(RowStore::chunk_rows(9), 256);
    }

    /// Rows of different shards never share a 128-byte line pair; rows of
    /// one shard are packed (consecutive rows are `row_words` apart).
    #[test]
    fn shards_never_share_a_line_pair_and_rows_are_packed() {
        const CELLS_PLUS: usize = CELLS;
        let store = RowStore::new(3, 5, 32);
        let mut lines: Vec<Vec<usize>> = vec![Vec::new(); 3];
        // 300 rows a shard span five chunks (16 + 32 + 64 + 128 < 300); under
        // Miri, 60 span three, at a fifth of the time.
        for _ in 0..if cfg!(miri) { 60 } else { 300 } {
            for (s, l) in lines.iter_mut().enumerate() {
                let r = store.arena(s).alloc().0;
                let first = r.as_ptr() as usize;
                l.push(first / 128);
                l.push((first + (CELLS_PLUS + 5) * 8 - 1) / 128);
            }
        }
        // Sets, not a scan per line: Miri runs this test too, and 600 x 600
        // comparisons per pair took it 15 minutes.
        let sets: Vec<std::collections::HashSet<usize>> =
            lines.iter().map(|l| l.iter().copied().collect()).collect();
        for a in 0..3 {
            for b in a + 1..3 {
                assert!(
                    sets[a].is_disjoint(&sets[b]),
                    "shards {a} and {b} share a line pair"
                );
            }
        }
        let mut a = store.arena(0);
        let (x, y) = (a.alloc().0, a.alloc().0);
        assert_eq!(
            y.as_ptr() as usize - x.as_ptr() as usize,
            (CELLS_PLUS + 5) * 8
        );
    }

    #[test]
    fn a_row_knows_its_chunk_and_is_recycled_zeroed() {
        let store = RowStore::new(2, 3, 32);
        let (addr, index) = store.arena(1).alloc();
        // SAFETY: `store` lives for the test; the address comes with its
        // index.
        let (row, owner) = unsafe { (Row::new(addr, index, 3), OwnerRow::new(addr)) };
        assert_eq!(
            row.header().word() as *const _,
            owner.header().word() as *const _
        );
        assert_eq!(owner.residue().count_down(0), 31, "an empty residue");
        let slot = crate::schema::Slot::for_tests(2);
        owner.cell(slot).store(5, Ordering::Relaxed);
        row.shared_cell(slot).fetch_add(2, Ordering::Relaxed);
        assert_eq!(row.unflushed(2), 7);
        row.prev_cells()[2].store(5, Ordering::Relaxed);
        assert_eq!(row.unflushed(2), 2);
        row.reset();
        assert_eq!(row.unflushed(2), 0);
        store.arena(1).free(row);
        let again = store.arena(1).alloc();
        assert_eq!(again, (addr, index), "the freed row is reused");
        assert!(store.bytes() > 0);
    }
}
