//! The update path: an owner's plain path and everyone else's atomic path.
//!
//! A thread that owns its shard (it holds the slot of the same number, see
//! `shard.rs`) is the only writer of that shard's *owner cells*. Its update
//! of `delta` to slot `k` of group `g` on shard `s` is:
//!
//! 1. `cell = cell + delta` and `residue = residue − magnitude` (it counts
//!    down to the next fold, see `slab.rs`): plain
//!    loads and stores (no `lock` prefix) on lines only this thread writes;
//!    the cell's add is checked (a sum that would leave `i64` saturates the
//!    item instead, see `saturation.rs`);
//! 2. a compiler fence (the light half of an asymmetric barrier), then a
//!    Relaxed load of the row's header;
//! 3. if the header shows the pair not yet reserved by the owner since its
//!    last drain: claim it (`fetch_or`, cold) — push the row on the shard's
//!    update list if it was not queued, reserve thresholds;
//! 4. if the residue reached `batch`: fold it into the threshold counters
//!    (cold, once per `batch` pages), as the kernel's `stats_updates` does,
//!    skipping (as the kernel does since 6.8) the counters of groups
//!    already above the threshold while no flush runs (see `add_up`).
//!
//! The common case is two plain loads, two plain stores and one load:
//! no read-modify-write, whatever the depth.
//!
//! # What an update waits for
//!
//! On a core where an uncontended `lock add` costs a few cycles, what an
//! update costs is mostly the instructions around those stores and the
//! chain of loads each store's address waits for. So the path keeps both
//! short:
//!
//! * the row's address comes from the group handle itself (its
//!   `RowCursor`: row, stride, owner count) and the thread's slot, with no
//!   load through the group's node;
//! * the cell's index and the update's magnitude come from the item
//!   handle's bits (an item's slot is its index, its unit a flag); the
//!   schema's table load only decides the foreign-handle branch, beside
//!   the path;
//! * the cell is indexed with a checked [`Slot`], no
//!   bounds check;
//! * the residue counts down, so one subtraction both accounts the update
//!   and, by its sign, says whether to fold (see `slab.rs`).
//!
//! # Why the barrier
//!
//! The updater's "write the cell, then check the pair is still queued"
//! against the flusher's "dequeue (clear `QUEUED`), then read the cell" is
//! the store-buffering pattern: with only plain accesses both sides can
//! read stale values, and the update is left neither queued nor flushed
//! (the loom model `owner_protocol_without_barrier_loses_an_update` finds
//! that interleaving). It needs a full barrier on both sides, or an
//! asymmetric one: the updater's compiler fence paired with a process-wide
//! barrier the flusher issues after its dequeues (`membarrier(2)`
//! `PRIVATE_EXPEDITED`, through `rustix`), as userspace RCU does. Where
//! the process cannot use membarrier (old kernels, seccomp sandboxes,
//! [`Config::membarrier(false)`](crate::Config::membarrier)) owners take the
//! shared path instead: a `SeqCst` fence per update would cost as much as
//! its two RMWs. The flusher's barrier makes every other running thread execute a
//! full barrier: an update whose cell write is not visible to the flusher's
//! read had not executed that write at the barrier point, so its later
//! header load observes the dequeue and queues the row again.
//!
//! The flusher pays the heavy barrier only on shards that an owner has ever
//! written: the owner announces itself once per (tree, shard) with a
//! `SeqCst` fence after setting `Core::owned[s]`, and the flusher loads the
//! flag after a `SeqCst` fence (see `Core::claim_owned`).
//!
//! # The shared path
//!
//! Threads beyond the shard count (they share a shard) and explicit-shard
//! calls (`add_with`, the simulator) write the *shared cells* with atomic
//! RMWs, exactly as the engine always did:
//!
//! 1. `shared[g][s][k].fetch_add(delta)` (Relaxed; the value it replaced
//!    tells whether the sum left `i64`);
//! 2. `header[g][s].fetch_add(m)` (AcqRel), `m` the magnitude if under
//!    `batch` (larger ones fold directly). This one RMW both accounts the
//!    magnitude and orders the update against the flusher's drain of the
//!    same word (see `slab.rs`);
//! 3. claim if not reserved by a shared writer since the drain; fold at
//!    `batch`.
//!
//! With [`ThresholdScheme::PerAncestor`] (the kernel's exact accounting)
//! the residue step is repeated on every ancestor's row on shard `s`, until
//! the early-break rule stops the walk: plain on the owner path (the owner
//! is the only writer of the ancestors' owner residues on its shard),
//! `fetch_add` (Release) on the shared path: a flush takes an ancestor's
//! shared residue before its drain and must then find the rows whose
//! pages it took (see `flush.rs`, "What a flush hands over").

use crate::count::COUNT_LIMIT;
use crate::error::Error;
use crate::group::Group;
use crate::node::Node;
use crate::policy::{ThresholdRule, ThresholdScheme};
use crate::schema::{ItemId, NodeItemId, Slot};
use crate::shard::{self, Shard};
use crate::slab::{OwnerRow, OWNER_RES, QUEUED, RESIDUE_MASK, SHARED_RES};
use crate::stats::{Core, HierStats};
use crate::sync::{AtomicU64, Ordering};
use crate::work::{Work, WorkSink};

impl HierStats {
    /// Adds `delta` to a state item, or counts `delta` events, on the current
    /// thread's shard: each thread holds the lowest free slot of a
    /// process-wide pool while it lives, and slot `i` writes shard `i` with
    /// plain stores when `i < shards` (it owns the shard), else shard
    /// `i % shards` with atomic adds, so live threads share a shard only
    /// when there are more of them than shards.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`] for a group of another tree,
    /// [`Error::ForeignItem`] for an item of another schema,
    /// [`Error::WrongItemKind`] for a per-node item, [`Error::NegativeEvent`].
    /// Nothing is changed on error.
    #[inline(always)]
    pub fn add(&self, group: &Group, item: ItemId, delta: i64) -> Result<(), Error> {
        self.core.check(group)?;
        let (slot, mag) = self.core.schema.slot_for_update(item, delta)?;
        self.core.update_here(group, slot, delta, mag);
        Ok(())
    }

    /// [`add`](Self::add) on an explicit shard, reporting work to `work`
    /// (pass `&mut ()` to report nothing). Explicit-shard updates take the
    /// shared (atomic) path: any thread may name any shard.
    ///
    /// # Errors
    /// As [`add`](Self::add), plus [`Error::ShardOutOfRange`].
    #[inline]
    pub fn add_with<W: WorkSink>(
        &self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error> {
        let node = self.core.own(group)?;
        let (slot, mag) = self.core.schema.slot_for_update(item, delta)?;
        let s = self.core.check_shard(shard)?;
        self.core.update(s, node, slot, delta, mag, work);
        Ok(())
    }

    /// loom only: [`add`](Self::add) through the owner path of `shard`, as
    /// the thread that owns it. (Model threads share the OS thread whose
    /// slot `add` would look up.) The caller must be the only thread that
    /// uses this for `shard`.
    ///
    /// # Errors
    /// As [`add_with`](Self::add_with).
    #[cfg(loom)]
    pub fn add_owned_with(
        &self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
    ) -> Result<(), Error> {
        let node = self.core.own(group)?;
        let (slot, mag) = self.core.schema.slot_for_update(item, delta)?;
        let s = self.core.check_shard(shard)?;
        self.core.update_owned(s, node, slot, delta, mag, &mut ());
        Ok(())
    }

    /// Adds `delta` to a per-node state item on `node` (and to its total), on
    /// the current thread's shard.
    ///
    /// # Errors
    /// Group and item errors as [`add`](Self::add), [`Error::NodeOutOfRange`].
    pub fn add_node(
        &self,
        group: &Group,
        item: NodeItemId,
        node: usize,
        delta: i64,
    ) -> Result<(), Error> {
        let owned = self.core.own(group)?;
        let (total, per_node) = self.core.schema.node_slots_for_update(item, node, delta)?;
        let lane = shard::current(self.core.shards, self.core.ownable);
        if lane.owner {
            let row = owned.hot.rows.owned_row(lane.shard);
            let c = row.cell(per_node);
            // ORDERING: Relaxed load and store; this thread is the cell's
            // only writer. Published with the total's update below.
            match (c.load(Ordering::Relaxed) as i64).checked_add(delta) {
                Some(v) => c.store(v as u64, Ordering::Relaxed),
                None => self.core.saturate(owned, per_node.get(), delta),
            }
            let mag = self.core.schema.slot_unit(total).pages(delta);
            self.core
                .update_owned_row(row, lane.shard, owned, total, delta, mag, &mut ());
        } else {
            self.core
                .update_node_shared(lane.shard, owned, total, per_node, delta, &mut ());
        }
        Ok(())
    }

    /// [`add_node`](Self::add_node) on an explicit shard, reporting work.
    ///
    /// # Errors
    /// Item errors, [`Error::NodeOutOfRange`], [`Error::ShardOutOfRange`].
    pub fn add_node_with<W: WorkSink>(
        &self,
        shard: Shard,
        group: &Group,
        item: NodeItemId,
        node: usize,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error> {
        let owned = self.core.own(group)?;
        let (total, per_node) = self.core.schema.node_slots_for_update(item, node, delta)?;
        let s = self.core.check_shard(shard)?;
        self.core
            .update_node_shared(s, owned, total, per_node, delta, work);
        Ok(())
    }
}

impl Core {
    pub(crate) fn check_shard(&self, shard: Shard) -> Result<usize, Error> {
        if shard.0 < self.shards {
            Ok(shard.0)
        } else {
            Err(Error::ShardOutOfRange {
                shard: shard.0,
                shards: self.shards,
            })
        }
    }

    /// An update of `group` (one of this tree's) on the current thread's
    /// lane: the owner's plain path if the thread owns its shard, the
    /// shared path otherwise.
    #[inline(always)]
    pub(crate) fn update_here(&self, group: &Group, slot: Slot, delta: i64, mag: u64) {
        // One thread-local load and one compare decide both that the thread
        // owns its shard and that the row exists there; a thread without a
        // slot yet (`NO_SLOT`) or past its exit (`GONE`) fails the compare
        // and takes the general lane lookup.
        let here = shard::current_slot_raw() as usize;
        match group.owner_row(here) {
            Some(row) => self.update_owned_row(row, here, &group.node, slot, delta, mag, &mut ()),
            None => self.update_here_other(&group.node, slot, delta, mag),
        }
    }

    /// [`update_here`](Self::update_here) for a thread that does not own a
    /// shard (or has no slot yet).
    #[inline(never)]
    fn update_here_other(&self, node: &Node, slot: Slot, delta: i64, mag: u64) {
        let lane = shard::current(self.shards, self.ownable);
        if lane.owner {
            self.update_owned(lane.shard, node, slot, delta, mag, &mut ());
        } else {
            self.update(lane.shard, node, slot, delta, mag, &mut ());
        }
    }

    fn update_node_shared<W: WorkSink>(
        &self,
        s: usize,
        node: &Node,
        total: Slot,
        per_node: Slot,
        delta: i64,
        work: &mut W,
    ) {
        // The total slot carries the magnitude; the per-node slot only needs
        // its counter written before the same Release header RMW.
        // ORDERING: Relaxed; published by the header RMW in `update`.
        let old = node
            .hot
            .rows
            .shared_counter(s, per_node.get())
            .fetch_add(delta as u64, Ordering::Relaxed);
        if (old as i64).checked_add(delta).is_none() {
            self.saturate(node, per_node.get(), delta);
        }
        work.count(Work::Atomic, 1);
        let mag = self.schema.slot_unit(total).pages(delta);
        self.update(s, node, total, delta, mag, work);
    }

    /// The owner's plain path (see the module docs). Only the thread that
    /// owns shard `s` may call it.
    #[inline(always)]
    pub(crate) fn update_owned<W: WorkSink>(
        &self,
        s: usize,
        node: &Node,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        self.update_owned_row(node.hot.rows.owned_row(s), s, node, slot, delta, mag, work);
    }

    /// [`update_owned`](Self::update_owned) on `node`'s row on shard `s`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn update_owned_row<W: WorkSink>(
        &self,
        row: OwnerRow<'_>,
        s: usize,
        node: &Node,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        let (hdr, res, cell) = (row.header(), row.residue(), row.cell(slot));
        // The residue counts down (see `slab.rs`): one subtraction, and its
        // sign says whether it reached `batch`.
        // ORDERING: Relaxed load and store; the owner's own magnitude
        // counter (this thread is its only writer, nobody else reads it).
        let left = res.load(Ordering::Relaxed).wrapping_sub(mag);
        res.store(left, Ordering::Relaxed);
        // ORDERING: Relaxed load and store: this thread is the cell's only
        // writer (it owns shard `s`), so no update can be lost between them;
        // the flusher reads the cell after its heavy barrier. The cell is
        // the shard's running sum since the row was allocated; one that
        // would leave `i64` saturates the item instead (see `saturation.rs`).
        match (cell.load(Ordering::Relaxed) as i64).checked_add(delta) {
            Some(v) => cell.store(v as u64, Ordering::Relaxed),
            None => self.saturate(node, slot.get(), delta),
        }
        // The updater's side of the asymmetric barrier: a compiler fence
        // (the owner path runs only where the flushers have membarrier).
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        // loom and Miri model the heavy barrier as a `SeqCst` fence on both
        // sides.
        #[cfg(any(loom, miri))]
        crate::sync::fence_seqcst();
        // ORDERING: Relaxed. `OWNER_RES` is set only by this thread's own
        // claims: finding it set means this thread queued the row (or found
        // it queued, acquiring that claimer's announcement in its own claim
        // RMW) since the last drain. (loom: Acquire here caught nothing.)
        if hdr.load(Ordering::Relaxed) & OWNER_RES == 0 {
            self.claim_owned(s, node, hdr, work);
        }
        if self.walks_ancestors
            // ORDERING: Relaxed; flush trigger only.
            && node.updates.pages() <= self.break_above
        {
            self.walk_ancestors_owned(s, node, mag, work);
        }
        if (left as i64) < 0 {
            self.fold_owned(res, left, node, work);
        }
    }

    /// Folds an owner residue that went negative, `left` (see `slab.rs`),
    /// into the threshold counters, and empties it.
    #[cold]
    #[inline(never)]
    fn fold_owned<W: WorkSink>(&self, res: &AtomicU64, left: u64, node: &Node, work: &mut W) {
        let m = self.empty_owner_residue(res, left);
        self.account(node, m, true, work);
    }

    /// Empties an owner residue that an update took to `left` (negative:
    /// it reached `batch`, see `slab.rs`) and returns the pages it held: it
    /// started at `batch − 1` when empty and lost one per page.
    fn empty_owner_residue(&self, res: &AtomicU64, left: u64) -> u64 {
        // ORDERING: Relaxed; the owner's own word.
        res.store(self.batch - 1, Ordering::Relaxed);
        (self.batch - 1).wrapping_sub(left)
    }

    /// The owner's claim: the first owner-path write to the pair since its
    /// last drain.
    ///
    /// The owner announces itself: it sets the flag the flusher checks
    /// before deciding whether it needs the heavy barrier (once per tree
    /// and shard), then issues a `SeqCst` fence (on every owner claim, a
    /// cold path: a thread that takes over a slot must not lean on its
    /// predecessor's fence). Every owner update of a pair follows one of
    /// the owner's own claims of it, so for each later update either the
    /// flusher's `SeqCst` fence (after its dequeues) precedes the claim's
    /// in the fences' total order — then the update's header load observes
    /// the dequeue and claims again — or the claim's precedes it, and the
    /// flusher's flag load sees the flag and issues the heavy barrier. The
    /// claiming update itself is published by the claim's Release RMW,
    /// which the flusher's pass fence acquires (or, if the claim comes
    /// after the dequeue, it queues the row again).
    #[cold]
    #[inline(never)]
    fn claim_owned<W: WorkSink>(&self, s: usize, node: &Node, hdr: &AtomicU64, work: &mut W) {
        // ORDERING: Relaxed; set once per (tree, shard), ordered by the
        // fence that follows.
        if !self.owned[s].load(Ordering::Relaxed) && !self.owned[s].swap(true, Ordering::Relaxed) {
            // ORDERING: Relaxed; a count for error bounds.
            self.residue_lanes.fetch_add(1, Ordering::Relaxed);
        }
        crate::sync::fence_seqcst();
        self.claim(s, node, hdr, OWNER_RES, work);
        // After the push, before this update's fold reads the flush count:
        // pairs with the fence a flush issues after its snapshots (see
        // `FlushingGuard`).
        crate::sync::fence_seqcst();
    }

    /// The shared (atomic) path (see the module docs).
    #[inline(always)]
    pub(crate) fn update<W: WorkSink>(
        &self,
        s: usize,
        node: &Node,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        // ORDERING: Relaxed; a flag set once per (tree, shard), read only
        // for error bounds.
        if !self.shared_used[s].load(Ordering::Relaxed)
            && !self.shared_used[s].swap(true, Ordering::Relaxed)
        {
            self.residue_lanes.fetch_add(1, Ordering::Relaxed);
        }
        let rows = &node.hot.rows;
        // ORDERING: Relaxed; made visible to the flusher by the Release RMW
        // on the header below (same thread, sequenced before it). The cell
        // holds what the shard's shared writers added since its last flush;
        // a sum that leaves `i64` saturates the item (see `saturation.rs`).
        let old = rows
            .shared_counter(s, slot.get())
            .fetch_add(delta as u64, Ordering::Relaxed);
        if (old as i64).checked_add(delta).is_none() {
            self.saturate(node, slot.get(), delta);
        }
        let small = if mag < self.batch { mag } else { 0 };
        let hdr = rows.header(s);
        // ORDERING: AcqRel. (Acquire also makes visible the in-flight count
        // of a flush that took from this residue: `Core::take_residues`.)
        // Release: the flusher's drain clears this word
        // after it (release sequences continue through RMWs), and the
        // pass's `SeqCst` fence after the drain acquires it
        // (`flush_subtree`). Acquire: if we find the pair claimed by a
        // claimer still in progress, its `begin_claim` (published by its
        // Release `fetch_or`) must be visible to any flush that sees what
        // this thread does next: a flush this thread starts (its drain must
        // wait for that claim), and,
        // under the kernel-exact scheme, a flush on another thread that
        // takes an ancestor residue this update then adds to (see
        // `walk_ancestors`): that flush must wait for the claim's push.
        let old = hdr.fetch_add(small, Ordering::AcqRel);
        work.count(Work::Atomic, 2);
        if old & SHARED_RES == 0 {
            self.claim(s, node, hdr, SHARED_RES, work);
        }
        if self.walks_ancestors
            // ORDERING: Relaxed; flush trigger only. A group already above
            // the break level stops the walk at itself, as the kernel does.
            && node.updates.pages() <= self.break_above
        {
            self.walk_ancestors(s, node, mag, work);
        }
        if (old & RESIDUE_MASK) + small >= self.batch || small != mag {
            let m = self.take_residue(s, node, work) + (mag - small);
            self.account(node, m, false, work);
        }
    }

    /// Reserves the pair for the writer kind `res` (`OWNER_RES` or
    /// `SHARED_RES`) and queues the row on shard `s`'s update list unless
    /// it is queued already.
    #[cold]
    #[inline(never)]
    fn claim<W: WorkSink>(&self, s: usize, node: &Node, hdr: &AtomicU64, res: u64, work: &mut W) {
        let list = &self.lists[s];
        let token = list.begin_claim();
        // ORDERING: AcqRel. Release publishes `begin_claim` to updaters
        // that find the row queued, and the owner's cell writes to the
        // flusher (its pass's `SeqCst` fence after the drain acquires this
        // word's release sequence). Acquire: if the row is queued by a
        // claimer still in progress, this thread trusts it to push, and the
        // claimer's `begin_claim` must be visible to any flush this thread
        // starts (so that its drain waits for that claim), whatever the
        // policy (a global threshold's flushes have no fence before their
        // drain).
        // A real RMW, never a plain store: the flusher clears the bits from
        // another thread (the kernel learned this in `3309b63a2281`).
        let old = hdr.fetch_or(QUEUED | res, Ordering::AcqRel);
        work.count(Work::Atomic, 3);
        if old & QUEUED == 0 {
            list.push(node.hot.row, hdr, work);
        }
        if old & res == 0
            && self.policy.threshold == ThresholdRule::PerGroup
            && self.policy.scheme == ThresholdScheme::Folded
        {
            // Reserve the most this writer kind's residue of the pair can
            // hold before it folds, so that counters plus reservations never
            // under-count. No early break: reservations are not capped.
            let mut a = Some(node);
            while let Some(n) = a {
                // ORDERING: Relaxed; flush trigger and bound only.
                n.reserved.fetch_add(self.batch - 1, Ordering::Relaxed);
                work.count(Work::Atomic, 1);
                a = n.hot.parent.as_deref();
            }
        }
        list.end_claim(token);
    }

    /// Accounts `m` folded pages of `node`'s updates per the threshold rule;
    /// `owner`: the fold comes from the owner path (see `add_up`).
    fn account<W: WorkSink>(&self, node: &Node, m: u64, owner: bool, work: &mut W) {
        match self.policy.threshold {
            // No threshold to feed.
            ThresholdRule::None => {}
            ThresholdRule::Global => {
                if self.global_updates.add_below(m, COUNT_LIMIT) {
                    work.count(Work::Atomic, 1);
                }
            }
            ThresholdRule::PerGroup => match self.policy.scheme {
                // Kernel-exact: the group's own counter; the ancestors
                // have their own residues.
                ThresholdScheme::PerAncestor => self.add_own(node, m, work),
                ThresholdScheme::Folded => self.add_up(node, m, owner, work),
            },
        }
    }

    /// Adds `m` to the threshold counters of `node` and its ancestors,
    /// stopping at the first one above the break level (its ancestors are
    /// above it too: every amount added below reached them as well).
    ///
    /// An owner's fold (`owner`) that finds no flush in progress skips the
    /// counters already above the threshold `T`, as the kernel (6.8+) skips
    /// `stats_updates` of a memcg that is already flushable: those groups
    /// report no bound and need a flush whatever is added, and the next
    /// flush of each carries the skipped pages (see `FlushingGuard`). With
    /// a flush running, every fold is counted: the flush's reset removes
    /// only what it snapshotted. This keeps the counters of the root and of
    /// busy groups (written by every thread's folds) out of the hot path
    /// between flushes. The shared path keeps its RMW-ordered protocol and
    /// always counts.
    fn add_up<W: WorkSink>(&self, node: &Node, m: u64, owner: bool, work: &mut W) {
        // ORDERING: Acquire, after this update's cell writes and its pair's
        // check or claim; pairs with `FlushingGuard` (read before the
        // threshold counters below, so that a flush that has left is seen
        // with its reset).
        let may_skip = owner && self.flushing.0.load(Ordering::Acquire) == 0;
        let mut a = Some(node);
        while let Some(n) = a {
            let u = n.updates.pages();
            if u > self.break_above {
                break;
            }
            if !(may_skip && u > self.threshold) {
                n.updates.add(m);
                work.count(Work::Atomic, 1);
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// Kernel-exact accounting, shared path: add the magnitude to every
    /// ancestor's shared residue on this shard, folding each at `batch`,
    /// stopping early per the policy.
    fn walk_ancestors<W: WorkSink>(&self, s: usize, node: &Node, mag: u64, work: &mut W) {
        let mut a = node.hot.parent.as_deref();
        let small = if mag < self.batch { mag } else { 0 };
        while let Some(n) = a {
            if n.updates.pages() > self.break_above {
                break;
            }
            // ORDERING: AcqRel. The residue is only a magnitude, but a flush
            // that takes it (before its drain, see `flush_subtree`) must
            // then find this update's row queued: the row's push (or the
            // claim this update found in progress, acquired by the header
            // RMW in `update`) happens before this RMW, and the flush
            // acquires it after taking the residue (Release). And if a
            // flush took from this residue before, its in-flight count of
            // what it took is visible from here on (Acquire, see
            // `Core::take_residues`).
            let old = n.hot.rows.header(s).fetch_add(small, Ordering::AcqRel);
            work.count(Work::Atomic, 1);
            if (old & RESIDUE_MASK) + small >= self.batch || small != mag {
                let m = self.take_residue(s, n, work) + (mag - small);
                self.add_own(n, m, work);
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// Kernel-exact accounting, owner path: the same walk on the ancestors'
    /// owner residues, with plain loads and stores (the owner of shard `s`
    /// is their only writer).
    fn walk_ancestors_owned<W: WorkSink>(&self, s: usize, node: &Node, mag: u64, work: &mut W) {
        let mut a = node.hot.parent.as_deref();
        while let Some(n) = a {
            if n.updates.pages() > self.break_above {
                break;
            }
            let res = n.hot.rows.owned_row(s).residue();
            // ORDERING: Relaxed load and store; this thread's own word,
            // counting down (see `slab.rs`).
            let left = res.load(Ordering::Relaxed).wrapping_sub(mag);
            res.store(left, Ordering::Relaxed);
            if (left as i64) < 0 {
                let m = self.empty_owner_residue(res, left);
                self.add_own(n, m, work);
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// Kernel-style fold into one group's own counter.
    fn add_own<W: WorkSink>(&self, node: &Node, m: u64, work: &mut W) {
        if node.updates.add_below(m, self.break_above) {
            work.count(Work::Atomic, 1);
        }
    }

    /// Atomically takes (zeroes) the shared residue of `node` on shard `s`.
    fn take_residue<W: WorkSink>(&self, s: usize, node: &Node, work: &mut W) -> u64 {
        // ORDERING: Acquire; the residue is a magnitude, and clearing it
        // must not disturb the claim bits or the link (hence an RMW). If a
        // flush took the pages this fold meant to count, its in-flight
        // count of them must be visible to this thread's later reads (see
        // `Core::take_residues`; loom: Relaxed fails
        // `a_read_during_a_flush_is_bounded_kernel_exact`).
        let old = node
            .hot
            .rows
            .header(s)
            .fetch_and(!RESIDUE_MASK, Ordering::Acquire);
        work.count(Work::Atomic, 1);
        old & RESIDUE_MASK
    }
}
