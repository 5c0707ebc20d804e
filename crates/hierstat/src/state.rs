//! A group's shared state ([`GroupState`]): what handles, updaters and
//! flushers share of one group (the handle itself is in `group.rs`).
//!
//! # Layout
//!
//! Seed 002 (a 36% stress-ng regression) came from a read-mostly per-CPU
//! pointer sharing a cache line with write-hot event counters. A group's
//! state keeps three kinds of field apart:
//!
//! * [`Hot`]: what every update reads (row table, parent link) —
//!   written once at creation, on its own 128-byte line pair;
//! * `updates`: the threshold counter, written by folds from every shard —
//!   on its own line pair;
//! * the aggregates (`agg`, `local`, `pending`), written by flushers and read
//!   by readers — separate heap allocations.
//!
//! The per-shard counters themselves are not in the group's state at all:
//! they are rows in per-shard arenas (see `rows.rs`); the state holds the
//! group's row table (`table.rs`).

use crate::count::Count;
use crate::dirty::NONE;
use crate::sync::std_only::{OnceLock, StdArc};
use crate::sync::{Arc, AtomicBool, AtomicI64, AtomicU64, AtomicU8, CachePadded, Ordering};
use crate::table::RowTable;

/// Read-mostly fields of a group's state: everything the update path
/// reads.
#[derive(Debug)]
pub(crate) struct Hot {
    /// The group's id: its index in the tree's group table, its key in the
    /// dirty trees and its link in the update lists.
    pub(crate) id: u32,
    /// Depth (root = 0).
    pub(crate) depth: u32,
    /// Where the group's per-shard rows are.
    pub(crate) rows: RowTable,
    /// The parent's state, `None` for the root.
    pub(crate) parent: Option<Arc<GroupState>>,
    /// The tree the group belongs to: compared with the tree's own tag on
    /// every entry point, so a handle of another tree is an error.
    pub(crate) tree: TreeTag,
}

/// Identity of one [`HierStats`](crate::HierStats) tree. Every group's state
/// holds a clone, so the allocation (and with it the identity) cannot be reused by
/// another tree while any handle of this one lives; comparing two tags is
/// one pointer compare.
#[derive(Debug, Clone)]
pub(crate) struct TreeTag {
    /// Held so that no other tree gets the same address while this one
    /// lives.
    _alive: StdArc<()>,
    /// The allocation's address, kept beside it so a compare loads one
    /// word.
    id: usize,
}

impl TreeTag {
    /// A tag no other live tree has.
    pub(crate) fn new() -> Self {
        let tag = StdArc::new(());
        let id = StdArc::as_ptr(&tag) as usize;
        TreeTag { _alive: tag, id }
    }

    /// The tag as a number: equal for two tags exactly when they name the
    /// same tree, while either lives (see `Group`'s copy).
    #[inline(always)]
    pub(crate) fn id(&self) -> usize {
        self.id
    }
}

/// A group's shared state.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct GroupState {
    /// Read-mostly hot fields, alone on the first line pair.
    pub(crate) hot: CachePadded<Hot>,
    /// Threshold count: folded update magnitude (pages) of this group's
    /// subtree since its last flush (see `count.rs`). Written by updaters'
    /// folds (any shard) and reset by flushes. It starts the second line
    /// pair, which it shares only with fields updaters never touch.
    pub(crate) updates: Count,
    /// Folded scheme: `batch − 1` pages reserved per (group, shard) pair of
    /// this subtree queued since the last flush that covered it: the most
    /// those pairs' unfolded residues can hold. ORDERING: added Release
    /// (see `Core::claim`), as `updates` (see `Count::add`).
    pub(crate) reserved: AtomicU64,
    /// Kernel-exact scheme: pages a running flush took out of this group's
    /// residues and has not landed in its aggregates yet. The flush adds
    /// what it takes before it reads the counters those pages stand for,
    /// and subtracts it once they are in `agg` (see `flush.rs`, "What a
    /// flush hands over"), so the bound never loses sight of them.
    /// ORDERING: see the flush's hand-over and `Core::error_bound`.
    pub(crate) in_flight: AtomicU64,
    /// Hierarchical aggregate per slot (subtree total, flushed).
    pub(crate) agg: Box<[AtomicI64]>,
    /// Local aggregate per slot (this group only, flushed).
    pub(crate) local: Box<[AtomicI64]>,
    /// Deltas pushed up by flushed children, not yet absorbed. Allocated
    /// when the group gets its first child: leaves, most groups of a real
    /// tree, never receive any (8 B × slots each saved).
    pending: OnceLock<Box<[AtomicI64]>>,
    /// Groups in this subtree, including itself (for error bounds).
    pub(crate) subtree_size: AtomicU64,
    /// Set once the group is removed.
    pub(crate) removed: AtomicBool,
    /// Full path (`/` for the root).
    pub(crate) path: String,
    /// Where the name (the last path component) starts in `path`: one
    /// string instead of two keeps the state within two line pairs.
    name_at: u32,
    /// [`Flags`] bits. ORDERING: see each flag.
    pub(crate) flags: AtomicU8,
}

/// Bits of [`GroupState::flags`].
pub(crate) struct Flags;

impl Flags {
    /// Some counter of this group left `i64`'s range: the tree's
    /// saturation table says which (see `Core::saturated`). Set, never
    /// cleared, before the table entry is readable.
    pub(crate) const SATURATED: u8 = 1;
    /// A running flush holds the group's threshold snapshot, which its
    /// hand-over will subtract (see [`GroupState::hold_snapshot`]).
    pub(crate) const SNAPSHOT_HELD: u8 = 2;
}

fn zeroed(n: usize) -> Box<[AtomicI64]> {
    (0..n).map(|_| AtomicI64::new(0)).collect()
}

impl GroupState {
    pub(crate) fn new(
        id: u32,
        rows: RowTable,
        parent: Option<Arc<GroupState>>,
        slots: usize,
        name: String,
        tree: TreeTag,
    ) -> Self {
        let (depth, path) = match &parent {
            None => (0, "/".to_string()),
            Some(p) if p.hot.parent.is_none() => (1, format!("/{name}")),
            Some(p) => (p.hot.depth + 1, format!("{}/{name}", p.path)),
        };
        GroupState {
            hot: CachePadded(Hot {
                id,
                depth,
                rows,
                parent,
                tree,
            }),
            updates: Count::new(),
            reserved: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            flags: AtomicU8::new(0),
            agg: zeroed(slots),
            local: zeroed(slots),
            pending: OnceLock::new(),
            subtree_size: AtomicU64::new(1),
            removed: AtomicBool::new(false),
            name_at: (path.len() - name.len()) as u32,
            path,
        }
    }

    /// Name (last path component; empty for the root).
    pub(crate) fn name(&self) -> &str {
        &self.path[self.name_at as usize..]
    }

    /// The hierarchical aggregate of slot `k`, as of the last flush.
    #[inline]
    pub(crate) fn read_agg(&self, k: usize) -> i64 {
        // ORDERING: Relaxed; a statistic, consistent per counter only.
        self.agg[k].load(Ordering::Relaxed)
    }

    /// The local aggregate of slot `k`, as of the last flush.
    #[inline]
    pub(crate) fn read_local(&self, k: usize) -> i64 {
        // ORDERING: Relaxed; a statistic.
        self.local[k].load(Ordering::Relaxed)
    }

    /// Pending deltas, if the group ever had a child (else all zero).
    pub(crate) fn pending(&self) -> Option<&[AtomicI64]> {
        self.pending.get().map(|b| &b[..])
    }

    /// Pending deltas, allocated on first use: called when a child is
    /// created, before the child is visible, and by flushes pushing a
    /// child's delta up (a no-op load by then).
    pub(crate) fn pending_for_children(&self, slots: usize) -> &[AtomicI64] {
        self.pending.get_or_init(|| zeroed(slots))
    }

    /// Whether flag `f` ([`Flags`]) is set.
    #[inline]
    pub(crate) fn flag(&self, f: u8) -> bool {
        // ORDERING: Acquire; pairs with the Release `fetch_or` of whoever
        // set it (see `NodeFlags`).
        self.flags.load(Ordering::Acquire) & f != 0
    }

    /// Sets flag `f`.
    pub(crate) fn set_flag(&self, f: u8) {
        // ORDERING: Release; publishes what the setter wrote before (the
        // saturation table entry) to `flag`'s Acquire load.
        self.flags.fetch_or(f, Ordering::Release);
    }

    /// Takes the group's threshold snapshot for one flush: `false` if
    /// another running flush holds it. Flushes that overlap (only under a
    /// per-pass gate, `lock_per_shard`) would otherwise each subtract a
    /// snapshot of the same pages, and the count would lose pages not yet
    /// landed (a real-thread test found linux-6.17 leaves under their bound
    /// by up to 9,700 pages). The holder's snapshot covers every page
    /// counted before it (see `flush.rs`, "What a flush hands over");
    /// whichever flush carries them, they land before the holder's reset.
    ///
    /// ORDERING: AcqRel; the Acquire half pairs with the previous holder's
    /// [`release_snapshot`](Self::release_snapshot), so this snapshot reads
    /// the count after that holder's reset.
    pub(crate) fn hold_snapshot(&self) -> bool {
        self.flags.fetch_or(Flags::SNAPSHOT_HELD, Ordering::AcqRel) & Flags::SNAPSHOT_HELD == 0
    }

    /// Gives back the snapshot [`hold_snapshot`](Self::hold_snapshot)
    /// took. ORDERING: Release; after the hand-over's reset.
    pub(crate) fn release_snapshot(&self) {
        self.flags
            .fetch_and(!Flags::SNAPSHOT_HELD, Ordering::Release);
    }

    /// Id of the parent, or `NONE`.
    pub(crate) fn parent_id(&self) -> u32 {
        self.hot.parent.as_ref().map_or(NONE, |p| p.hot.id)
    }

    /// Whether `self` is `other` or one of its ancestors.
    pub(crate) fn is_ancestor_or_self_of(&self, other: &GroupState) -> bool {
        let mut cur = Some(other);
        while let Some(n) = cur {
            if n.hot.depth < self.hot.depth {
                return false;
            }
            if std::ptr::eq(n, self) {
                return true;
            }
            cur = n.hot.parent.as_deref();
        }
        false
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn hot_and_write_hot_fields_are_on_separate_line_pairs() {
        assert_eq!(align_of::<CachePadded<Hot>>(), 128);
        assert!(size_of::<Hot>() <= 128, "Hot must fit one line pair");
        let hot = offset_of!(GroupState, hot);
        let upd = offset_of!(GroupState, updates);
        assert_eq!(hot % 128, 0);
        assert_eq!(upd % 128, 0);
        assert!(
            upd >= hot + 128,
            "updates must not share the hot fields' lines"
        );
        // `updates` shares its line pair only with fields the update path
        // never reads (aggregate pointers, flags, names), and the state
        // stays within two line pairs.
        assert_eq!(size_of::<GroupState>(), 256);
    }
}
