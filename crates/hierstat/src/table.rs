//! A group's row table: where its row on each shard is, if it has one.
//!
//! Rows exist only on shards that wrote the group (see `rows.rs`), so the
//! table maps a shard to a row address or to nothing. It is the update
//! path's one extra dependent load: the group handle caches the table's
//! address, and the entry for the thread's shard gives the row.
//!
//! # Two levels, and why
//!
//! A dense table of 8-byte addresses costs `8 B × shards` per group
//! whether or not the shards write it: 512 B at 64 shards, 8 KB at 1,024,
//! 32 KB at 4,096 (100,000 groups: 51 MB, 819 MB, 3.3 GB). So the table
//! has two parts:
//!
//! * the **near** part, dense, for shards `0..min(shards, 64)`, allocated
//!   with the group (at most 512 B): the shards of the first 64 seats, the
//!   threads a program runs at once in the common case. The group handle
//!   caches its address, so an owner among them reaches its row with one
//!   load from the table (cache-hot whenever the group is) and one compare;
//! * the **far** part, for shards 64 and up: a directory of one entry per
//!   block of 16 shards, allocated with the group's first far row (24 B
//!   per block: 1,440 B at 1,024 shards, 6 KB at 4,096), and 16-entry
//!   blocks (128 B, one line pair) allocated with their first row. A far
//!   shard's lookup is two more dependent loads (directory, block), off
//!   the inlined path.
//!
//! Beside each address, one byte holds the row's index in its chunk (see
//! `rows.rs`), for the shared path and the flushers: 64 B in the near part,
//! 16 B per far block.
//!
//! A group written from 4 shards of 1,024 thus costs 576 B of near table,
//! plus, if any of the 4 is far, 1,440 B of directory and 144 B per block
//! touched — against 8 KB dense. With 64 shards or fewer there is no far
//! part at all. (`u32` indices into the arenas would halve the entries but
//! put a second load, the arena's chunk, on the owner's path.)
//!
//! An entry is written once per row's life: set (Release) by the thread
//! that allocated the row, under its shard's arena lock, so that two first
//! writers of one (group, shard) allocate one row; cleared when the group is
//! reaped (no handle left, flushers excluded).

use crate::header::Header;
use crate::rows::{OwnerRow, Row, RowAddr, RowStore};
use crate::sync::std_only::OnceLock;
use crate::sync::{Arc, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::ptr::NonNull;

/// Shards in the near part (at most).
pub(crate) const NEAR: usize = 64;
/// Shards per block of the far part.
const FAR_BLOCK: usize = 16;

/// One entry: a row's address, or null.
pub(crate) type Entry = AtomicPtr<AtomicU64>;

/// A run of entries with their rows' indexes (the near part, or a block of
/// the far part).
#[derive(Debug)]
struct Entries {
    rows: Box<[Entry]>,
    /// Each row's index in its chunk: written before its entry (Release),
    /// read after it (Acquire), never changed while the row lives.
    index: Box<[AtomicU8]>,
}

impl Entries {
    fn new(n: usize) -> Self {
        Entries {
            rows: (0..n)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            index: (0..n).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    fn bytes(&self) -> usize {
        self.rows.len() * 9
    }
}

/// The row address in entry `e`, if any: the one place an entry is read
/// (the group handle's owner path reads its near entries through it too).
///
/// ORDERING: Acquire; pairs with the Release store that published the row
/// (`RowTable::alloc`): the row's words, and its index, were written before.
///
/// # Safety
/// `e` is an entry of a [`RowTable`] whose store is alive.
#[inline(always)]
pub(crate) unsafe fn load_entry(e: &Entry) -> Option<RowAddr> {
    // SAFETY: a non-null entry holds a row address stored by
    // `RowTable::alloc` from its store, alive (the caller's guarantee).
    NonNull::new(e.load(Ordering::Acquire)).map(|p| unsafe { RowAddr::from_ptr(p) })
}

/// The per-CPU mode's view of a row table: its entries, one per CPU, for
/// the update's section (`rseq.rs`), valid as long as the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuTable<'a> {
    /// The first entry.
    pub(crate) entries: NonNull<Entry>,
    /// Entries (CPUs).
    pub(crate) len: usize,
    _table: std::marker::PhantomData<&'a RowTable>,
}

impl CpuTable<'_> {
    /// The table of `len` entries from `entries`.
    ///
    /// # Safety
    /// `entries` is the first of `len` entries of a [`RowTable`] that
    /// lives, in place, for the returned lifetime.
    #[inline(always)]
    pub(crate) unsafe fn new(entries: NonNull<Entry>, len: usize) -> Self {
        CpuTable {
            entries,
            len,
            _table: std::marker::PhantomData,
        }
    }
}

/// A group's row table (see the module docs).
#[derive(Debug)]
pub(crate) struct RowTable {
    near: Entries,
    /// Near entries an owner's plain path may use: all of them where the
    /// tree's owners take it, none where they cannot (`Writers::ownable`).
    owned_near: u32,
    /// The per-CPU mode's table: the near part covers every shard.
    dense: bool,
    far: OnceLock<Box<[OnceLock<Entries>]>>,
    shards: usize,
    /// Cells per row (the store's).
    slots: usize,
    /// The rows' store: kept alive as long as any group's table is, so
    /// that every address in the table stays valid.
    store: Arc<RowStore>,
}

/// One entry of a table: a row's address, and where its index is.
#[derive(Clone, Copy)]
struct Place<'a> {
    row: &'a Entry,
    index: &'a AtomicU8,
}

impl RowTable {
    /// An empty table for a tree of `shards` shards, of which the first
    /// `ownable` (all or none) may be written by their owners, whose rows
    /// live in `store`; `dense`: the near part covers every shard (the
    /// per-CPU mode, whose section looks its CPU's row up in one array:
    /// `9 B` per possible CPU).
    pub(crate) fn new(shards: usize, ownable: usize, dense: bool, store: Arc<RowStore>) -> Self {
        let near = if dense { shards } else { shards.min(NEAR) };
        let t = RowTable {
            near: Entries::new(near),
            owned_near: near.min(ownable) as u32,
            dense,
            far: OnceLock::new(),
            shards,
            slots: store.slots(),
            store,
        };
        // Under loom, the row on shard 0 exists from the start, so that the
        // protocol models (all on shard 0) do not explore the arena's lock
        // at every first touch; the first-touch models write shard 1
        // (`tests/loom.rs`). And the far part, if any, exists from the
        // start: loom does not see inside std's `OnceLock` (see `rows.rs`).
        #[cfg(loom)]
        {
            let _ = t.addr_or_alloc(0);
            for s in near..shards {
                let _ = t.slot_or_make(s);
            }
        }
        t
    }

    /// The near part's first entry, how many entries of it an owner's
    /// plain path may use, and, in the per-CPU mode, how many it has (0
    /// otherwise), for the group handle.
    pub(crate) fn near(&self) -> (NonNull<Entry>, u32, u32) {
        (
            NonNull::from(&*self.near.rows).cast(),
            self.owned_near,
            if self.dense {
                self.near_len() as u32
            } else {
                0
            },
        )
    }

    /// The per-CPU mode's view of the table (a dense one), for an
    /// ancestor's update (the group itself is reached through its handle's
    /// copy, see `Group::per_cpu_table`).
    pub(crate) fn per_cpu(&self) -> CpuTable<'_> {
        // SAFETY: the near part's entries, alive and in place as long as
        // `self`.
        unsafe { CpuTable::new(NonNull::from(&*self.near.rows).cast(), self.near_len()) }
    }

    /// Entries in the near part.
    #[inline(always)]
    fn near_len(&self) -> usize {
        self.near.rows.len()
    }

    /// Shard `s`'s entry, if its block exists.
    #[inline]
    fn slot(&self, s: usize) -> Option<Place<'_>> {
        // `s < NEAR` first: a constant compare decides the common case (a
        // dense table is near beyond it too).
        let (e, i) = if s < NEAR || s < self.near_len() {
            (&self.near, s)
        } else {
            let far = self.far.get()?;
            (far[(s - NEAR) / FAR_BLOCK].get()?, (s - NEAR) % FAR_BLOCK)
        };
        Some(Place {
            row: e.rows.get(i)?,
            index: &e.index[i],
        })
    }

    /// Shard `s`'s entry, making its block if needed.
    fn slot_or_make(&self, s: usize) -> Place<'_> {
        let (e, i) = if s < NEAR || s < self.near_len() {
            (&self.near, s)
        } else {
            let blocks = (self.shards - NEAR).div_ceil(FAR_BLOCK);
            let far = self
                .far
                .get_or_init(|| (0..blocks).map(|_| OnceLock::new()).collect());
            let block = far[(s - NEAR) / FAR_BLOCK].get_or_init(|| Entries::new(FAR_BLOCK));
            (block, (s - NEAR) % FAR_BLOCK)
        };
        Place {
            row: &e.rows[i],
            index: &e.index[i],
        }
    }

    /// The address in `e`, if any (see [`load_entry`]).
    #[inline(always)]
    fn load(e: &Entry) -> Option<RowAddr> {
        // SAFETY: `e` is one of this table's entries, and `self.store`
        // outlives `self`.
        unsafe { load_entry(e) }
    }

    /// The row in `slot`, whose address `a` was loaded from it.
    #[inline]
    fn row_at(&self, slot: Place<'_>, a: RowAddr) -> Row<'_> {
        // Written before the entry that published the row, which the load
        // of `a` acquired; never changed while the row lives.
        let index = crate::sync::load_immutable_u8(slot.index);
        // SAFETY: `a` and `index` were stored together by `alloc` from the
        // store's `alloc`; `self.store` keeps the row's chunk alive for
        // `&self`, and its rows have its `slots` cells.
        unsafe { Row::new(a, index, self.slots) }
    }

    /// The group's row on shard `s`, if the shard ever wrote it.
    #[inline]
    pub(crate) fn row(&self, s: usize) -> Option<Row<'_>> {
        let slot = self.slot(s)?;
        let a = Self::load(slot.row)?;
        Some(self.row_at(slot, a))
    }

    /// The header of the group's row on shard `s`, if the shard ever wrote
    /// it (no look at the row's chunk).
    #[inline]
    pub(crate) fn header(&self, s: usize) -> Option<Header<'_>> {
        let a = Self::load(self.slot(s)?.row)?;
        // SAFETY: `self.store` keeps the row alive for `&self`.
        Some(unsafe { OwnerRow::new(a) }.header())
    }

    /// The group's row on shard `s`, allocated from the shard's arena on
    /// first touch.
    #[inline]
    pub(crate) fn row_or_alloc(&self, s: usize) -> Row<'_> {
        if let Some(slot) = self.slot(s) {
            if let Some(a) = Self::load(slot.row) {
                return self.row_at(slot, a);
            }
        }
        let (slot, a) = self.alloc(s);
        self.row_at(slot, a)
    }

    /// The group's row on near shard `s` if it exists (`None` for a far
    /// shard too): one load from the near part, for the owner's ancestor
    /// walk (see `Core::walk_ancestors_owned`).
    #[inline(always)]
    pub(crate) fn near_row(&self, s: usize) -> Option<OwnerRow<'_>> {
        let a = Self::load(self.near.rows.get(s)?)?;
        // SAFETY: `self.store` keeps the row's chunk alive for `&self`.
        Some(unsafe { OwnerRow::new(a) })
    }

    /// [`owned_row_or_alloc`](Self::owned_row_or_alloc) out of line, for
    /// a caller whose common case is [`near_row`](Self::near_row).
    #[cold]
    #[inline(never)]
    pub(crate) fn owned_row_or_alloc_cold(&self, s: usize) -> OwnerRow<'_> {
        self.owned_row_or_alloc(s)
    }

    /// [`row_or_alloc`](Self::row_or_alloc) for the shard's owner.
    #[inline]
    pub(crate) fn owned_row_or_alloc(&self, s: usize) -> OwnerRow<'_> {
        let a = self.addr_or_alloc(s);
        // SAFETY: `self.store` keeps the row's chunk alive for `&self`.
        unsafe { OwnerRow::new(a) }
    }

    #[inline]
    fn addr_or_alloc(&self, s: usize) -> RowAddr {
        match self.slot(s).and_then(|slot| Self::load(slot.row)) {
            Some(a) => a,
            None => self.alloc(s).1,
        }
    }

    /// First touch: allocates the row under the arena's lock, so that two
    /// first writers of one (group, shard) allocate one row.
    #[cold]
    #[inline(never)]
    fn alloc(&self, s: usize) -> (Place<'_>, RowAddr) {
        let slot = self.slot_or_make(s);
        let mut arena = self.store.arena(s);
        if let Some(a) = Self::load(slot.row) {
            return (slot, a);
        }
        let (a, index) = arena.alloc();
        // ORDERING: Relaxed; published by the Release store that follows.
        slot.index.store(index, Ordering::Relaxed);
        // ORDERING: Release publishes the row's initialised words and its
        // index to every later `load` (Acquire).
        slot.row.store(a.as_ptr(), Ordering::Release);
        (slot, a)
    }

    /// Every row of the group, with its shard.
    pub(crate) fn rows(&self) -> impl Iterator<Item = (usize, Row<'_>)> + '_ {
        (0..self.shards).filter_map(|s| self.row(s).map(|r| (s, r)))
    }

    /// Resets every row of the group and returns it to its shard's arena,
    /// emptying the table. Call with no handle of the group left and
    /// flushers excluded (a reap).
    pub(crate) fn recycle(&self) {
        for s in 0..self.shards {
            let Some(slot) = self.slot(s) else { continue };
            let Some(a) = Self::load(slot.row) else {
                continue;
            };
            let row = self.row_at(slot, a);
            row.reset();
            // ORDERING: Relaxed; nobody else reaches the table any more.
            slot.row.store(std::ptr::null_mut(), Ordering::Relaxed);
            self.store.arena(s).free(row);
        }
    }

    /// Bytes of the table itself (not its rows).
    pub(crate) fn bytes(&self) -> usize {
        let far = self.far.get().map_or(0, |f| {
            f.len() * std::mem::size_of::<OnceLock<Entries>>()
                + f.iter()
                    .flat_map(|b| b.get())
                    .map(Entries::bytes)
                    .sum::<usize>()
        });
        self.near.bytes() + far
    }
}
