//! The refault recency test and its activation rule.
//!
//! On a refault the distance `R − E` (non-resident age now minus at
//! eviction) is the least number of accesses the page missed while it was
//! out. It is worth activating if that distance fits in the memory the
//! page competes with, the *workingset size* of the eviction lruvec:
//!
//! | refault | always | with swap |
//! |---|---|---|
//! | file | `active_file` | `+ active_anon + inactive_anon` |
//! | anon | `active_file + inactive_file` | `+ active_anon` |
//!
//! Anonymous lists count only when the eviction group can swap. The sizes
//! come from the group's hierarchical per-node statistics, which are stale
//! until flushed: hence the stats flush in this path, whose policy
//! ([`RefaultFlush`]) is what seed 003 is about.

use super::lruvec::{LruList, LruSizes};
use crate::memcg::{MemcgId, MemcgTree};
use hierstat::sim::Simulator as _;
use hierstat::{sim::WorkCounters, FlushKind, FlushOutcome};

/// The workingset size a refault is compared with (see the module table).
pub fn workingset_size(sizes: &LruSizes, file: bool, swap: bool) -> u64 {
    let mut ws = sizes.active_file;
    if !file {
        ws += sizes.inactive_file;
    }
    if swap {
        ws += sizes.active_anon;
        if file {
            ws += sizes.inactive_anon;
        }
    }
    ws
}

/// The lists [`workingset_size`] sums, in [`LruList::ALL`]'s order: the
/// statistics a refault reads.
pub fn workingset_lists(file: bool, swap: bool) -> impl Iterator<Item = LruList> {
    LruList::ALL.into_iter().filter(move |l| match l {
        LruList::ActiveFile => true,
        LruList::InactiveFile => !file,
        LruList::ActiveAnon => swap,
        LruList::InactiveAnon => swap && file,
    })
}

/// Whether a refault at `distance` is recent enough to activate.
pub fn is_recent(distance: u64, sizes: &LruSizes, file: bool, swap: bool) -> bool {
    distance <= workingset_size(sizes, file, swap)
}

/// The stats flush a refault makes before reading the workingset size.
pub trait RefaultFlush {
    /// Flushes (or not) for a refault whose shadow names `eviction`;
    /// returns what the flush did (`None`: no flush was attempted).
    fn flush(&mut self, tree: &mut MemcgTree, eviction: MemcgId) -> Option<FlushOutcome>;

    /// The flush before the refault reads `lists` of the eviction lruvec
    /// (`eviction` on `node`; the lists its workingset size sums,
    /// [`workingset_lists`]): a reader that states an error budget reads
    /// them here ([`MemcgTree::lruvec_within`]), flushing only what the
    /// budget needs. By default, [`flush`](Self::flush).
    fn flush_lruvec(
        &mut self,
        tree: &mut MemcgTree,
        eviction: MemcgId,
        node: usize,
        lists: &[LruList],
    ) -> Option<FlushOutcome> {
        let _ = (node, lists);
        self.flush(tree, eviction)
    }
}

/// The policy's hot-path flush ([`FlushKind::HotPath`] on the eviction
/// group), accumulating the engine's work.
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyFlush {
    /// Engine work of the flushes made so far.
    pub work: WorkCounters,
}

impl RefaultFlush for PolicyFlush {
    fn flush(&mut self, tree: &mut MemcgTree, eviction: MemcgId) -> Option<FlushOutcome> {
        let g = tree.group(eviction).ok()?.clone();
        tree.stats()
            .flush_with(&g, FlushKind::HotPath, &mut self.work)
            .ok()
    }
}

/// No flush: read whatever the statistics say.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFlush;

impl RefaultFlush for NoFlush {
    fn flush(&mut self, _: &mut MemcgTree, _: MemcgId) -> Option<FlushOutcome> {
        None
    }
}

impl<F: FnMut(&mut MemcgTree, MemcgId) -> Option<FlushOutcome>> RefaultFlush for F {
    fn flush(&mut self, tree: &mut MemcgTree, eviction: MemcgId) -> Option<FlushOutcome> {
        self(tree, eviction)
    }
}

/// What one refault did and what it would have done with exact statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefaultInfo {
    /// A file page (else anonymous).
    pub file: bool,
    /// Pages in the folio.
    pub nr: u64,
    /// The group the page is charged to.
    pub memcg: MemcgId,
    /// The group named by the shadow entry, if it still exists.
    pub eviction_memcg: Option<MemcgId>,
    /// What the flush did.
    pub flush: Option<FlushOutcome>,
    /// Refault distance in pages.
    pub distance: u64,
    /// Workingset size from the statistics, after the flush.
    pub workingset_size: u64,
    /// Workingset size from the exact list sizes.
    pub exact_workingset_size: u64,
    /// The eviction lruvec's list sizes from the statistics, after the
    /// flush (those [`workingset_size`] sums are the ones it read; zero
    /// without an eviction group).
    pub sizes: LruSizes,
    /// The same from the exact list sizes, at the same instant.
    pub exact_sizes: LruSizes,
    /// Swap was available to the eviction group.
    pub swap: bool,
    /// The decision made: activate.
    pub activate: bool,
    /// The decision exact statistics give.
    pub exact_activate: bool,
    /// The page was in the workingset when evicted (a restore if activated).
    pub workingset: bool,
    /// Engine work of the statistics updates of this refault (not the flush).
    pub update_work: WorkCounters,
}

impl RefaultInfo {
    /// The decision differs from the exact one.
    pub fn mismatch(&self) -> bool {
        self.activate != self.exact_activate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workingset_size_terms() {
        let s = LruSizes {
            inactive_anon: 1,
            active_anon: 10,
            inactive_file: 100,
            active_file: 1000,
        };
        assert_eq!(workingset_size(&s, true, false), 1000);
        assert_eq!(workingset_size(&s, true, true), 1011);
        assert_eq!(workingset_size(&s, false, false), 1100);
        assert_eq!(workingset_size(&s, false, true), 1110);
        // The lists a refault reads are the ones the size sums.
        for (file, swap) in [(true, false), (true, true), (false, false), (false, true)] {
            let read: u64 = workingset_lists(file, swap).map(|l| s.get(l)).sum();
            assert_eq!(read, workingset_size(&s, file, swap), "{file} {swap}");
        }
    }
}
