//! One lruvec: the four LRU lists of a (memcg, node) and its non-resident
//! age.
//!
//! Lists hold slot numbers with *lazy deletion*: each entry carries the
//! folio's list stamp at insertion, a folio that leaves a list bumps its
//! stamp, and stale entries are skipped when popped (and compacted away
//! when they outnumber live ones). Moves are O(1), sizes are exact.

use std::collections::VecDeque;

/// An LRU list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LruList {
    /// Inactive anonymous.
    InactiveAnon = 0,
    /// Active anonymous.
    ActiveAnon = 1,
    /// Inactive file.
    InactiveFile = 2,
    /// Active file.
    ActiveFile = 3,
}

impl LruList {
    /// All lists.
    pub const ALL: [LruList; 4] = [
        LruList::InactiveAnon,
        LruList::ActiveAnon,
        LruList::InactiveFile,
        LruList::ActiveFile,
    ];

    /// The list for a page of this type and activity.
    pub fn of(file: bool, active: bool) -> LruList {
        match (file, active) {
            (false, false) => LruList::InactiveAnon,
            (false, true) => LruList::ActiveAnon,
            (true, false) => LruList::InactiveFile,
            (true, true) => LruList::ActiveFile,
        }
    }

    /// File list?
    pub fn is_file(self) -> bool {
        matches!(self, LruList::InactiveFile | LruList::ActiveFile)
    }

    /// Active list?
    pub fn is_active(self) -> bool {
        matches!(self, LruList::ActiveAnon | LruList::ActiveFile)
    }

    /// The memcg statistic that counts this list's pages.
    pub fn stat(self) -> crate::memcg::Stat {
        crate::memcg::Stat::lru(self.is_active(), self.is_file())
    }
}

/// Sizes of the four lists in pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LruSizes {
    /// Inactive anonymous pages.
    pub inactive_anon: u64,
    /// Active anonymous pages.
    pub active_anon: u64,
    /// Inactive file pages.
    pub inactive_file: u64,
    /// Active file pages.
    pub active_file: u64,
}

impl LruSizes {
    /// Size of one list.
    pub fn get(&self, l: LruList) -> u64 {
        match l {
            LruList::InactiveAnon => self.inactive_anon,
            LruList::ActiveAnon => self.active_anon,
            LruList::InactiveFile => self.inactive_file,
            LruList::ActiveFile => self.active_file,
        }
    }

    /// Adds `other` list by list.
    pub fn add(&mut self, o: &LruSizes) {
        self.inactive_anon += o.inactive_anon;
        self.active_anon += o.active_anon;
        self.inactive_file += o.inactive_file;
        self.active_file += o.active_file;
    }

    /// Total pages.
    pub fn total(&self) -> u64 {
        self.inactive_anon + self.active_anon + self.inactive_file + self.active_file
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    slot: u32,
    stamp: u32,
}

/// The lists and age of one (memcg, node).
#[derive(Debug, Clone, Default)]
pub struct Lruvec {
    lists: [VecDeque<Entry>; 4],
    live: [usize; 4],
    pages: [u64; 4],
    /// Stale entries dominate the list: compact it at the next chance.
    stale: [bool; 4],
    /// Evictions plus activations so far (`nonresident_age`), hierarchical:
    /// aged on this lruvec and every ancestor's.
    pub nonresident_age: u64,
}

impl Lruvec {
    /// Exact list sizes in pages.
    pub fn sizes(&self) -> LruSizes {
        LruSizes {
            inactive_anon: self.pages[0],
            active_anon: self.pages[1],
            inactive_file: self.pages[2],
            active_file: self.pages[3],
        }
    }

    /// Pages on one list.
    pub fn len(&self, l: LruList) -> u64 {
        self.pages[l as usize]
    }

    /// Whether every list is empty.
    pub fn is_empty(&self) -> bool {
        self.live.iter().all(|&n| n == 0)
    }

    /// Adds a folio of `nr` pages at the head (most recent end).
    pub fn push_head(&mut self, l: LruList, slot: u32, stamp: u32, nr: u64) {
        self.lists[l as usize].push_front(Entry { slot, stamp });
        self.live[l as usize] += 1;
        self.pages[l as usize] += nr;
    }

    /// Adds a folio at the tail (oldest end; used when reparenting).
    pub fn push_tail(&mut self, l: LruList, slot: u32, stamp: u32, nr: u64) {
        self.lists[l as usize].push_back(Entry { slot, stamp });
        self.live[l as usize] += 1;
        self.pages[l as usize] += nr;
    }

    /// Records that a folio of `nr` pages left list `l` (its entry is now
    /// stale: the caller bumped the folio's stamp).
    pub fn note_removed(&mut self, l: LruList, nr: u64) {
        self.live[l as usize] -= 1;
        self.pages[l as usize] -= nr;
        let q = &mut self.lists[l as usize];
        if q.len() > 64 && q.len() > 2 * self.live[l as usize] {
            self.stale[l as usize] = true;
        }
    }

    /// Pops the oldest live entry of list `l`; `live(slot, stamp)` tells
    /// whether an entry is current. The caller accounts the removal with
    /// [`note_removed`](Self::note_removed).
    pub fn pop_tail(&mut self, l: LruList, mut live: impl FnMut(u32, u32) -> bool) -> Option<u32> {
        let q = &mut self.lists[l as usize];
        while let Some(e) = q.pop_back() {
            if live(e.slot, e.stamp) {
                return Some(e.slot);
            }
        }
        None
    }

    /// Drops stale entries of list `l` if they dominate it.
    pub fn compact(&mut self, l: LruList, mut live: impl FnMut(u32, u32) -> bool) {
        if std::mem::take(&mut self.stale[l as usize]) {
            self.lists[l as usize].retain(|e| live(e.slot, e.stamp));
        }
    }

    /// Live entries of list `l`, oldest first.
    pub fn drain_live(&mut self, l: LruList, mut live: impl FnMut(u32, u32) -> bool) -> Vec<u32> {
        let q = std::mem::take(&mut self.lists[l as usize]);
        self.live[l as usize] = 0;
        self.pages[l as usize] = 0;
        q.into_iter()
            .rev()
            .filter(|e| live(e.slot, e.stamp))
            .map(|e| e.slot)
            .collect()
    }
}
