//! Dirty tracking: which (group, shard) rows have unflushed updates.
//!
//! Two structures per shard, as in Linux 6.17 (whose "updated tree" is our
//! *dirty tree*):
//!
//! * a lock-free multi-producer **update list** (a Treiber stack of rows,
//!   linked through the `next` field of each row's header word, see
//!   `header.rs`). An updater whose claim finds the row not queued pushes
//!   it; the flusher, holding the shard's tree lock and hence the only
//!   consumer, takes the whole list with one `swap` and drains each row's
//!   claim. Pushers never race with a pop of a single element, so there is
//!   no ABA problem: a pusher's CAS on the head succeeds only if the head is
//!   unchanged, and whatever it links to is a valid list at that instant.
//! * a persistent **dirty tree** ([`DirtyTree`]), owned by flushers: a
//!   group on the tree has all its ancestors on the tree. Draining the list
//!   inserts each popped group and climbs until an ancestor already on the
//!   tree. A subtree flush extracts exactly the subtree of its root,
//!   children before parents, and leaves unrelated dirty groups in place for
//!   later.
//!
//! Lists and trees name groups by their id (`GroupState::id`): a row is
//! one group's on one shard, so (id, shard) names it.

use crate::header::Header;
use crate::sync::{lock_tree, AtomicU64, Mutex, MutexGuard, Ordering, Ranked};
use crate::work::{Work, WorkSink};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

mod partial;
pub(crate) use partial::Part;

/// Marks "no group" in tree links.
pub(crate) const NONE: u32 = u32::MAX;

/// Every shard's update list and dirty tree.
#[derive(Debug)]
pub(crate) struct Dirty {
    lists: Box<[ListHead]>,
    trees: Box<[Mutex<DirtyTree>]>,
}

impl Dirty {
    /// Empty lists and trees for `shards` shards.
    pub(crate) fn new(shards: usize) -> Self {
        Dirty {
            lists: (0..shards).map(|_| ListHead::default()).collect(),
            trees: (0..shards)
                .map(|_| Mutex::new(DirtyTree::default()))
                .collect(),
        }
    }

    /// Shard `s`'s update list.
    #[inline]
    pub(crate) fn list(&self, s: usize) -> &ListHead {
        &self.lists[s]
    }

    /// Locks shard `s`'s dirty tree (rank `DirtyTree`).
    pub(crate) fn tree(&self, s: usize) -> Ranked<MutexGuard<'_, DirtyTree>> {
        lock_tree(&self.trees[s])
    }

    /// Moves shard `s`'s update list into its dirty tree (`tree`, locked
    /// by the caller); with `wait_claims`, first waits for claims in
    /// progress to push (see [`ListHead`]), so that no update that
    /// completed before the flush began is missed because another thread's
    /// push of its row was preempted. `header` gives a listed group's row
    /// header on shard `s`, `parent` a group's parent id.
    #[inline]
    pub(crate) fn drain_into<'h, W: WorkSink>(
        &self,
        s: usize,
        tree: &mut DirtyTree,
        wait_claims: bool,
        header: impl Fn(u32) -> Header<'h>,
        parent: impl Fn(u32) -> u32,
        work: &mut W,
    ) {
        let list = &self.lists[s];
        if wait_claims {
            list.wait_for_claims();
        }
        let mut cur = list.take_all();
        work.count(Work::Atomic, 1);
        while cur != 0 {
            let id = (cur - 1) as u32;
            cur = header(id).drain(work);
            tree.insert(id, &parent);
        }
    }
}

/// Head of one shard's update list: group id + 1 of the first row, 0 if
/// empty.
///
/// Claims in progress are counted here too. An updater that finds its pair
/// already `QUEUED` returns at once, trusting the claimer to push it; if
/// that claimer is preempted between its claim and its push, a flush that
/// only took the list would miss the pair, and with it an update that
/// completed before the flush began. So a flush's drain first waits for
/// every claim that *began before the flush* to finish.
///
/// Claims that begin later need no wait (their updates are later than the
/// flush), and waiting for them could starve the flusher while claims keep
/// coming. So claims count in one of two parities, chosen by the shard's
/// claim `epoch` when they begin, and the flusher advances the epoch and
/// drains the parity it left, twice (userspace RCU's grace period):
///
/// * a claim that began before the flush read the epoch before the
///   flusher's first advance, so it read `E` or an older value; one of the
///   two waits (parity `E`, then parity `E + 1`) covers its parity, and its
///   increment, which happened before the flush began, is visible there;
/// * claims that read the epoch after the second advance count in parity
///   `E + 2 ≡ E`, already drained: new claims never extend a wait. Each
///   wait covers at most the claims in flight when it started.
///
/// A flush may also learn of a claim through another: it acquires a
/// reservation a shared claimer made before its claim RMW (see
/// `Core::reserve`), so that claimer's increment is visible to it; that
/// claimer may then have found the pair queued by a claim in progress of
/// the other writer kind, still to push, whose increment the flush sees
/// only once it has acquired the first claim's end. If the two count in
/// different parities, a look at the second parity before that
/// acquisition can miss it. So each parity is looked at again after the
/// other: the fast path reads parity 0, 1, then 0 again, and the slow
/// path waits a third time, on `E + 2 ≡ E` (a third bounded wait: it too
/// covers only the claims in flight when it starts). loom:
/// `a_claim_seen_through_another_is_waited_for` (`tests` below).
#[derive(Debug, Default)]
#[repr(C, align(128))]
pub(crate) struct ListHead {
    head: AtomicU64,
    epoch: AtomicU64,
    claiming: [AtomicU64; 2],
}

/// A claim in progress; pass it back to [`ListHead::end_claim`].
#[must_use]
pub(crate) struct ClaimToken(usize);

impl ListHead {
    /// Announces a claim attempt; call before the header's claim.
    pub(crate) fn begin_claim(&self) -> ClaimToken {
        // ORDERING: Relaxed for both. The epoch only picks a parity (see
        // the type's docs: any value read before the flusher's first
        // advance is covered). The increment is published by the
        // claimer's Release claim RMW on the header, which any updater
        // that then sees `QUEUED` acquires, so it happens before any flush
        // that updater starts afterwards.
        let p = (self.epoch.load(Ordering::Relaxed) & 1) as usize;
        self.claiming[p].fetch_add(1, Ordering::Relaxed);
        ClaimToken(p)
    }

    /// Ends a claim attempt; call after the push (if any).
    pub(crate) fn end_claim(&self, t: ClaimToken) {
        // ORDERING: Release; pairs with the Acquire load in
        // `wait_for_claims`, making the push visible to the flusher's
        // `take_all` that follows it.
        self.claiming[t.0].fetch_sub(1, Ordering::Release);
    }

    /// Waits until every claim that began before this call has ended.
    /// Call with the shard's tree lock held (one flusher per shard).
    ///
    /// Most passes find no claim in progress: both parities read 0 and the
    /// epoch is left alone (three loads, no RMW: parity 0 is read again
    /// after parity 1, see the type's docs). That is enough: a claim
    /// that began before the flush has its increment visible to these
    /// loads, and a parity that reads 0 has had, in its modification
    /// order, the end of every claim whose increment precedes the value
    /// read (each claim's decrement follows its own increment). All of the
    /// parity's modifications are RMWs, so the Acquire load synchronizes
    /// with each of those Release ends, and their pushes are visible to
    /// `take_all`.
    fn wait_for_claims(&self) {
        if self.no_claims(0) && self.no_claims(1) && self.no_claims(0) {
            return;
        }
        for _ in 0..3 {
            // ORDERING: Relaxed; the advance only steers new claims to the
            // other parity. The load below is what synchronizes.
            let old = self.epoch.fetch_add(1, Ordering::Relaxed);
            let p = (old & 1) as usize;
            while !self.no_claims(p) {
                crate::sync::yield_now();
            }
        }
    }

    /// Whether parity `p` counts no claim in progress.
    #[inline(always)]
    fn no_claims(&self, p: usize) -> bool {
        // ORDERING: Acquire; pairs with `end_claim`, so that the pushes of
        // the claims waited for are visible to `take_all` (loom: Relaxed
        // fails the racing-claimer models).
        self.claiming[p].load(Ordering::Acquire) == 0
    }

    /// Pushes the row of group `id` on this shard, whose header is `hdr`
    /// and whose claim the caller won.
    pub(crate) fn push<W: WorkSink>(&self, id: u32, hdr: Header<'_>, work: &mut W) {
        let me = id as u64 + 1;
        // ORDERING: Relaxed; the CAS below re-checks the value.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            hdr.set_next(head, work);
            // ORDERING: Release publishes the `next` field written above to
            // the flusher's Acquire swap in `take_all`.
            match self
                .head
                .compare_exchange_weak(head, me, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
        work.count(Work::Atomic, 2);
    }

    /// Whether the list is empty, for quiescent checks.
    pub(crate) fn is_empty_quiescent(&self) -> bool {
        // ORDERING: Relaxed; a diagnostic read.
        self.head.load(Ordering::Relaxed) == 0
    }

    /// Takes the whole list; returns the first group id + 1 (0 if empty).
    /// Follow it with [`Header::drain`] on each row.
    ///
    /// An empty list costs one load and leaves the line shared: most of a
    /// wide tree's shards have nothing queued at a given flush.
    fn take_all(&self) -> u64 {
        // ORDERING: Relaxed; a hint. After `wait_for_claims` (whose Acquire
        // load synchronizes with every earlier claimer's `end_claim`, which
        // follows its push), coherence makes this load see every push of a
        // claim that began before the flush; a push it misses belongs to a
        // claim that began later, whose update the flush need not carry.
        // (loom: weakening that Acquire lets this load miss such a push and
        // fails `update_seen_queued_is_flushed_by_a_later_flush_on_the_same_thread`.)
        if self.head.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        // ORDERING: Acquire pairs with the Release CAS in `push`, making each
        // pushed row's `next` field visible.
        self.head.swap(0, Ordering::Acquire)
    }
}

/// Links of a group on a shard's updated tree.
#[derive(Debug, Clone, Default)]
struct Links {
    /// Updated children on this shard.
    children: Vec<u32>,
}

/// FxHash-style hasher for dense `u32` group ids.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(5) ^ *b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Group-id-keyed map with a cheap hasher.
pub(crate) type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

/// One shard's persistent dirty tree. Invariant: a group on the tree has its
/// parent on the tree (the root is the top).
///
/// The same groups come and go flush after flush, so the tree keeps what
/// they allocate: child lists of extracted groups wait in `spare` for the
/// next group that gets a child, and the walks reuse one stack. A flush
/// then allocates nothing here once the tree has seen its working set.
#[derive(Debug, Default)]
pub(crate) struct DirtyTree {
    nodes: IdMap<Links>,
    /// Emptied child lists, kept with their capacity (at most
    /// `MAX_SPARE`).
    spare: Vec<Vec<u32>>,
    /// The walks' stack, kept between walks.
    stack: Vec<u32>,
}

/// Most emptied child lists a tree keeps for reuse.
const MAX_SPARE: usize = 256;

impl DirtyTree {
    /// Number of groups on the tree.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether `id` is on the tree.
    pub(crate) fn contains(&self, id: u32) -> bool {
        self.nodes.contains_key(&id)
    }

    /// Inserts `id` and climbs `parent_of` until an ancestor already on the
    /// tree (or the root).
    pub(crate) fn insert(&mut self, id: u32, parent_of: impl Fn(u32) -> u32) {
        let mut child = NONE;
        let mut cur = id;
        loop {
            if let Some(l) = self.nodes.get_mut(&cur) {
                if child != NONE {
                    if l.children.capacity() == 0 {
                        l.children = self.spare.pop().unwrap_or_default();
                    }
                    l.children.push(child);
                }
                return;
            }
            let mut l = Links::default();
            if child != NONE {
                l.children = self.spare.pop().unwrap_or_default();
                l.children.push(child);
            }
            self.nodes.insert(cur, l);
            let p = parent_of(cur);
            if p == NONE {
                return;
            }
            child = cur;
            cur = p;
        }
    }

    /// Removes the subtree of `root` from the tree and appends its groups to
    /// `out`, every child before its parent. `parent` is the parent id of
    /// `root` (`NONE` for the tree's root).
    #[inline]
    pub(crate) fn extract(&mut self, root: u32, parent: u32, out: &mut Vec<u32>) {
        // Most shards' trees are empty at most flushes: no call then.
        if !self.nodes.is_empty() {
            self.extract_from(root, parent, out);
        }
    }

    /// [`extract`](Self::extract) from a tree with nodes.
    fn extract_from(&mut self, root: u32, parent: u32, out: &mut Vec<u32>) {
        let Some(links) = self.nodes.remove(&root) else {
            return;
        };
        if parent != NONE {
            if let Some(p) = self.nodes.get_mut(&parent) {
                if let Some(i) = p.children.iter().position(|&c| c == root) {
                    p.children.swap_remove(i);
                }
            }
        }
        // Pre-order (parent first) with an explicit stack, then reversed:
        // every child ends up before its parent.
        let start = out.len();
        out.push(root);
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        self.recycle(links.children, &mut stack);
        while let Some(r) = stack.pop() {
            out.push(r);
            if let Some(l) = self.nodes.remove(&r) {
                self.recycle(l.children, &mut stack);
            }
        }
        self.stack = stack;
        out[start..].reverse();
    }

    /// Moves an extracted group's children onto `stack` and keeps the emptied
    /// list for reuse.
    fn recycle(&mut self, mut children: Vec<u32>, stack: &mut Vec<u32>) {
        if children.capacity() == 0 {
            return;
        }
        stack.append(&mut children);
        if self.spare.len() < MAX_SPARE {
            self.spare.push(children);
        }
    }

    /// Appends the groups of `root`'s subtree that are on the tree to `out`,
    /// leaving the tree unchanged.
    pub(crate) fn collect(&mut self, root: u32, out: &mut Vec<u32>) {
        if self.nodes.is_empty() || !self.nodes.contains_key(&root) {
            return;
        }
        let stack = &mut self.stack;
        stack.clear();
        stack.push(root);
        while let Some(r) = stack.pop() {
            out.push(r);
            if let Some(l) = self.nodes.get(&r) {
                stack.extend(l.children.iter().copied());
            }
        }
    }

    /// Checks the tree-shape invariant; returns the first violation.
    pub(crate) fn check_shape(&self, parent_of: impl Fn(u32) -> u32) -> Result<(), String> {
        for (&id, links) in &self.nodes {
            let p = parent_of(id);
            if p != NONE {
                match self.nodes.get(&p) {
                    None => return Err(format!("id {id} on tree without its parent {p}")),
                    Some(pl) if !pl.children.contains(&id) => {
                        return Err(format!("id {id} missing from its parent's child list"))
                    }
                    _ => {}
                }
            }
            for &c in &links.children {
                if parent_of(c) != id {
                    return Err(format!("id {c} linked under {id}, not its parent"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::{Arc, AtomicBool};

    /// The tests' tree (here and in `partial`): 0 <- 1 <- {2, 3};
    /// 0 <- 4 <- 5; 2 <- 6.
    pub(super) fn parent(r: u32) -> u32 {
        match r {
            0 => NONE,
            1 | 4 => 0,
            2 | 3 => 1,
            5 => 4,
            6 => 2,
            _ => unreachable!(),
        }
    }

    #[test]
    fn insert_climbs_and_extract_is_child_before_parent() {
        let mut t = DirtyTree::default();
        t.insert(2, parent);
        t.insert(3, parent);
        t.insert(4, parent);
        assert_eq!(t.len(), 5);
        t.check_shape(parent).unwrap();
        let mut out = Vec::new();
        t.extract(1, 0, &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(*out.last().unwrap(), 1);
        // 0 and 4 stay: unrelated dirty groups are left for later.
        assert!(t.contains(0) && t.contains(4) && !t.contains(2));
        t.check_shape(parent).unwrap();
        out.clear();
        t.extract(0, NONE, &mut out);
        let pos = |r| out.iter().position(|&x| x == r).unwrap();
        assert!(pos(4) < pos(0));
        assert_eq!(t.len(), 0);
    }

    /// Child lists and the stack are reused from flush to flush: over many
    /// insert/extract cycles the tree extracts exactly the rows of the
    /// subtree that are on it (an oracle set of inserted rows and their
    /// ancestors), child before parent, and keeps its shape.
    #[test]
    fn reused_lists_extract_exactly_the_dirty_subtree() {
        // A ternary tree of 121 rows: row r's parent is (r − 1) / 3.
        let parent = |r: u32| if r == 0 { NONE } else { (r - 1) / 3 };
        let under = |r: u32, root: u32| {
            let mut c = r;
            while c != root && c != NONE {
                c = parent(c);
            }
            c == root
        };
        let mut t = DirtyTree::default();
        let mut on = std::collections::BTreeSet::new();
        let mut x = 12345u64;
        let mut next = |n: u32| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u32 % n
        };
        let mut out = Vec::new();
        for _ in 0..if cfg!(miri) { 25 } else { 500 } {
            let rows: Vec<u32> = (0..1 + next(40)).map(|_| next(121)).collect();
            for &r in &rows {
                t.insert(r, parent);
                let mut c = r;
                while c != NONE {
                    on.insert(c);
                    c = parent(c);
                }
            }
            t.check_shape(parent).unwrap();
            assert_eq!(t.len(), on.len());
            // One row's subtree, or the whole tree, as a flush takes it.
            let root = if next(3) == 0 { 0 } else { rows[0] };
            out.clear();
            t.extract(root, parent(root), &mut out);
            let pos = |r: u32| out.iter().position(|&y| y == r);
            for &r in &out {
                if r != root {
                    assert!(pos(r) < pos(parent(r)), "child {r} after its parent");
                }
            }
            let want: Vec<u32> = on.iter().copied().filter(|&r| under(r, root)).collect();
            let mut got = out.clone();
            got.sort_unstable();
            assert_eq!(got, want);
            on.retain(|&r| !under(r, root));
            t.check_shape(parent).unwrap();
        }
    }

    /// The state an earlier flush can leave: a claimer read the epoch
    /// between that flush's two advances (1), and counted itself in parity
    /// 1 after the flush's second wait had passed, so the epoch (2) names
    /// the other parity. Its claim is in progress.
    fn claim_in_the_other_parity() -> ListHead {
        let list = ListHead::default();
        list.epoch.store(2, Ordering::Relaxed);
        list.claiming[1].store(1, Ordering::Relaxed);
        list
    }

    /// A claim counted in the parity the epoch does not name is still
    /// waited for: the fast path must look at both parities (a fast path
    /// that reads one returns at once here).
    #[cfg(loom)]
    #[test]
    fn a_claim_in_the_other_parity_is_waited_for() {
        loom::model(|| {
            let list = Arc::new(claim_in_the_other_parity());
            let ended = Arc::new(AtomicBool::new(false));
            let (l2, e2) = (list.clone(), ended.clone());
            let claimer = loom::thread::spawn(move || {
                // ORDERING: Relaxed; published by `end_claim`'s Release.
                e2.store(true, Ordering::Relaxed);
                l2.end_claim(ClaimToken(1));
            });
            list.wait_for_claims();
            assert!(
                ended.load(Ordering::Relaxed),
                "the wait returned while the claim was in progress"
            );
            claimer.join().unwrap();
        });
    }

    /// A flush that learns of a claim only through another (see
    /// [`ListHead`]). The epoch moved between two claims' starts, so the
    /// owner's claim counts in parity 0 and a shared writer's in parity 1.
    /// The sharer reserves (Release) before its claim RMW, which finds the
    /// pair queued by the owner, still to push; the flush counts the
    /// reservation (its snapshot, then its `SeqCst` fence), waits for
    /// claims, and must then see the owner's push. A wait that reads
    /// parity 0 once, before acquiring the sharer's end, can miss the
    /// owner's claim and return before its push (loom: the fast path
    /// without its second look at parity 0 fails here; the slow path's
    /// third wait is the same look after a wait).
    #[cfg(loom)]
    #[test]
    fn a_claim_seen_through_another_is_waited_for() {
        use crate::sync::{fence_seqcst, AtomicU64};
        loom::model(|| {
            let list = Arc::new(ListHead::default());
            // Bit 0: the pair is queued.
            let header = Arc::new(AtomicU64::new(0));
            let reserved = Arc::new(AtomicU64::new(0));
            let pushed = Arc::new(AtomicBool::new(false));
            let (l, h, p) = (list.clone(), header.clone(), pushed.clone());
            let owner = loom::thread::spawn(move || {
                // ORDERING (the model's): as `begin_claim`, `Header::claim`,
                // the push (published by `end_claim`), `end_claim`.
                l.claiming[0].fetch_add(1, Ordering::Relaxed);
                h.fetch_or(1, Ordering::AcqRel);
                p.store(true, Ordering::Relaxed);
                l.end_claim(ClaimToken(0));
            });
            let (l, h, r, p) = (
                list.clone(),
                header.clone(),
                reserved.clone(),
                pushed.clone(),
            );
            let sharer = loom::thread::spawn(move || {
                l.claiming[1].fetch_add(1, Ordering::Relaxed);
                r.fetch_add(31, Ordering::Release);
                if h.fetch_or(1, Ordering::AcqRel) & 1 == 0 {
                    // Not queued yet: this claimer pushes.
                    p.store(true, Ordering::Relaxed);
                }
                l.end_claim(ClaimToken(1));
            });
            // The flush: its snapshot, its fence, its drain's wait.
            let counted = reserved.load(Ordering::Relaxed);
            fence_seqcst();
            list.wait_for_claims();
            let seen = pushed.load(Ordering::Relaxed);
            owner.join().unwrap();
            sharer.join().unwrap();
            assert!(
                counted == 0 || seen,
                "the flush counted a reservation and missed its pair's push"
            );
        });
    }

    /// The claim RMW's Acquire half (`Header::claim`): a writer whose claim
    /// finds the pair queued by a claim still in progress trusts that
    /// claimer to push, so the claimer's `begin_claim` must be visible to
    /// the drain of any flush the writer starts, which then waits for it.
    /// A global threshold's flush has no fence before its drain: only the
    /// claim RMW acquires. The owner claims in parity 0; it read the epoch
    /// (2) before an earlier flush's last advance (to 3), so the shared
    /// writer, which finds the pair queued by the owner's claim, counts in
    /// parity 1 and learns of the owner's claim only through its own claim
    /// RMW. (The integration models reach this state only with four
    /// threads: two claims and two flushes. loom: the claim as Release
    /// fails here; the shared writer's `add_residue`, AcqRel, would
    /// acquire the owner's claim too had it come after it, so the model
    /// starts at the claim.)
    #[cfg(loom)]
    #[test]
    fn a_claim_found_in_progress_is_waited_for_by_the_finders_flush() {
        use crate::header::Writer;
        use crate::sync::AtomicU64;
        loom::model(|| {
            let list = Arc::new(ListHead::default());
            list.epoch.store(3, Ordering::Relaxed);
            let header = Arc::new(AtomicU64::new(0));
            let pushed = Arc::new(AtomicBool::new(false));
            let (l, h, p) = (list.clone(), header.clone(), pushed.clone());
            let owner = loom::thread::spawn(move || {
                // ORDERING (the model's): `begin_claim` at epoch 2.
                l.claiming[0].fetch_add(1, Ordering::Relaxed);
                if Header::new(&h).claim(Writer::Owner).push {
                    // ORDERING: Relaxed; published by `end_claim`.
                    p.store(true, Ordering::Relaxed);
                }
                l.end_claim(ClaimToken(0));
            });
            let t = list.begin_claim();
            let found_queued = !Header::new(&header).claim(Writer::Shared).push;
            if !found_queued {
                pushed.store(true, Ordering::Relaxed);
            }
            list.end_claim(t);
            // The shared writer's flush: its drain's wait, then the list.
            list.wait_for_claims();
            assert!(
                pushed.load(Ordering::Relaxed),
                "the flush's drain did not wait for the claim its writer found in progress"
            );
            owner.join().unwrap();
        });
    }

    /// [`a_claim_in_the_other_parity_is_waited_for`] on real threads. The
    /// waiter's epoch advances say where it is: from 2, the first (to 3)
    /// waits on parity 0 (empty), the second (to 4) on parity 1, which
    /// holds the claim. At 4 it cannot return (nor advance again) before
    /// the claim ends; a fast path that missed the claim returns without
    /// advancing (the wait for 4 then fails), and a grace wait that did not
    /// wait would advance past 4 or return while the claim is in progress.
    #[cfg(not(loom))]
    #[test]
    fn a_claim_in_the_other_parity_is_waited_for() {
        let list = Arc::new(claim_in_the_other_parity());
        let done = Arc::new(AtomicBool::new(false));
        let (l2, d2) = (list.clone(), done.clone());
        let waiter = std::thread::spawn(move || {
            l2.wait_for_claims();
            // ORDERING: Release; pairs with the Acquire loads below.
            d2.store(true, Ordering::Release);
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        // ORDERING: Relaxed; the epoch is only observed.
        while list.epoch.load(Ordering::Relaxed) < 4 {
            assert!(
                std::time::Instant::now() < deadline && !done.load(Ordering::Acquire),
                "the wait returned (or stalled) before it waited on the claimed parity"
            );
            std::thread::yield_now();
        }
        assert!(
            !done.load(Ordering::Acquire) && list.epoch.load(Ordering::Relaxed) == 4,
            "the wait went past the claimed parity while the claim was in progress"
        );
        list.end_claim(ClaimToken(1));
        waiter.join().unwrap();
        assert!(done.load(Ordering::Acquire));
        assert_eq!(list.epoch.load(Ordering::Relaxed), 5);
    }
}
