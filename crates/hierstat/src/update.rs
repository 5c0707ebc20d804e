//! The update path.
//!
//! For an update of `delta` to counter slot `k` of group `g` on shard `s`:
//!
//! 1. `counter[g][s][k].fetch_add(delta)` (Relaxed): threads migrate and may
//!    share a shard, so the add is an atomic RMW, never load + store;
//! 2. `header[g][s].fetch_add(m)` (Release), where `m` is the update's
//!    magnitude in pages (0 if `m ≥ batch`, which folds directly). This one
//!    RMW both accounts the magnitude and *synchronizes with the flusher's
//!    drain*: it closes the race the kernel calls benign (see `slab.rs`);
//! 3. if the returned header had `QUEUED` clear: claim it (`fetch_or`) and,
//!    if this thread won, push the row on the shard's update list (cold);
//! 4. if the residue reached `batch`: fold it into the threshold counters
//!    (cold, once per `batch` pages).
//!
//! With [`ThresholdScheme::Folded`] that is two atomic RMWs whatever the
//! depth; the O(depth) walks happen once per `batch` pages (fold) and once
//! per (group, shard) per flush (claim, which reserves `batch − 1`: the most
//! the pair's residue can hold unfolded). With [`ThresholdScheme::PerAncestor`] (the kernel's exact
//! accounting) step 2 is repeated on every ancestor's header on shard `s`,
//! until the early-break rule stops the walk.

use crate::error::Error;
use crate::node::{Group, Node};
use crate::policy::{ThresholdRule, ThresholdScheme};
use crate::schema::{ItemId, NodeItemId};
use crate::shard::{self, Shard};
use crate::slab::{QUEUED, RESIDUE_MASK};
use crate::stats::{Core, HierStats};
use crate::sync::{AtomicU64, Ordering};
use crate::work::{Work, WorkSink};

impl HierStats {
    /// Adds `delta` to a state item, or counts `delta` events, on the current
    /// thread's shard: each thread holds the lowest free slot of a
    /// process-wide pool while it lives, and slot `i` writes shard
    /// `i % shards`, so live threads share a shard only when there are more
    /// of them than shards.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`] for a group of another tree,
    /// [`Error::ForeignItem`] for an item of another schema,
    /// [`Error::WrongItemKind`] for a per-node item, [`Error::NegativeEvent`].
    /// Nothing is changed on error.
    #[inline]
    pub fn add(&self, group: &Group, item: ItemId, delta: i64) -> Result<(), Error> {
        let node = self.core.own(group)?;
        let slot = self.core.schema.slot_for_update(item, delta)?;
        let s = shard::current(self.core.shards);
        self.core.update(s, node, slot, delta, &mut ());
        Ok(())
    }

    /// [`add`](Self::add) on an explicit shard, reporting work to `work`
    /// (pass `&mut ()` to report nothing).
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
        let slot = self.core.schema.slot_for_update(item, delta)?;
        let s = self.core.check_shard(shard)?;
        self.core.update(s, node, slot, delta, work);
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
        let s = shard::current(self.core.shards);
        self.add_node_on(s, group, item, node, delta, &mut ())
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
        let s = self.core.check_shard(shard)?;
        self.add_node_on(s, group, item, node, delta, work)
    }

    fn add_node_on<W: WorkSink>(
        &self,
        s: usize,
        group: &Group,
        item: NodeItemId,
        node: usize,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error> {
        let owned = self.core.own(group)?;
        let (total, per_node) = self.core.schema.node_slots(item, node)?;
        // The total slot carries the magnitude; the per-node slot only needs
        // its counter written before the same Release header RMW.
        // ORDERING: Relaxed; published by the header RMW in `update`.
        owned
            .hot
            .rows
            .counter(s, per_node)
            .fetch_add(delta as u64, Ordering::Relaxed);
        work.count(Work::Atomic, 1);
        self.core.update(s, owned, total, delta, work);
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

    /// The update path proper (see the module docs).
    #[inline(always)]
    pub(crate) fn update<W: WorkSink>(
        &self,
        s: usize,
        node: &Node,
        slot: usize,
        delta: i64,
        work: &mut W,
    ) {
        let rows = &node.hot.rows;
        let base = rows.base(s);
        // ORDERING: Relaxed; made visible to the flusher by the Release RMW
        // on the header below (same thread, sequenced before it).
        rows.bucket
            .word(base + 1 + slot)
            .fetch_add(delta as u64, Ordering::Relaxed);
        let mag = self.schema.slot_unit(slot).pages(delta);
        let small = if mag < self.batch { mag } else { 0 };
        let hdr = rows.bucket.word(base);
        // ORDERING: Release pairs with the flusher's Acquire `fetch_and` in
        // `updated::drain_next` (see there for the argument). Acquire pairs
        // with a claimer's Release `fetch_or` of `QUEUED`: if we find the row
        // queued, the claimer's `begin_claim` is visible to any flush we
        // start afterwards (see `ListHead`).
        let old = hdr.fetch_add(small, Ordering::AcqRel);
        work.count(Work::Atomic, 2);
        if old & QUEUED == 0 {
            self.claim(s, node, hdr, work);
        }
        if self.policy.threshold == ThresholdRule::PerGroup
            && self.policy.scheme == ThresholdScheme::PerAncestor
            // ORDERING: Relaxed; flush trigger only. A group already above
            // the break level stops the walk at itself, as the kernel does.
            && node.updates.load(Ordering::Relaxed) <= self.break_above
        {
            self.walk_ancestors(s, node, mag, work);
        }
        if (old & RESIDUE_MASK) + small >= self.batch || small != mag {
            self.fold(s, node, mag - small, work);
        }
    }

    /// Queues `node` on shard `s`'s update list, unless another updater won.
    #[cold]
    #[inline(never)]
    fn claim<W: WorkSink>(&self, s: usize, node: &Node, hdr: &AtomicU64, work: &mut W) {
        let list = &self.lists[s];
        let token = list.begin_claim();
        // ORDERING: Release publishes `begin_claim` to updaters that find
        // the row queued (their header RMW acquires). This update's counter
        // write was already ordered by its own RMW on the same word, and the
        // push below publishes the link with its own Release CAS. A real
        // RMW, never a plain store: the flusher clears the bit from another
        // thread (the kernel learned this in `3309b63a2281`).
        let old = hdr.fetch_or(QUEUED, Ordering::Release);
        work.count(Work::Atomic, 3);
        if old & QUEUED == 0 {
            list.push(node.hot.row, hdr, work);
            if self.policy.threshold == ThresholdRule::PerGroup
                && self.policy.scheme == ThresholdScheme::Folded
            {
                // Reserve the most this pair's residue can hold before it
                // folds, so that counters plus reservations never
                // under-count. No early break: reservations are not capped.
                let mut a = Some(node);
                while let Some(n) = a {
                    // ORDERING: Relaxed; flush trigger and bound only.
                    n.reserved.fetch_add(self.batch - 1, Ordering::Relaxed);
                    work.count(Work::Atomic, 1);
                    a = n.hot.parent.as_deref();
                }
            }
        }
        list.end_claim(token);
    }

    /// Adds `m` to the threshold counters of `node` and its ancestors,
    /// stopping at the first one above the break level (its ancestors are
    /// above it too: every amount added below reached them as well).
    fn add_up<W: WorkSink>(&self, node: &Node, m: u64, work: &mut W) {
        let mut a = Some(node);
        while let Some(n) = a {
            // ORDERING: Relaxed; flush trigger only.
            if n.updates.load(Ordering::Relaxed) > self.break_above {
                break;
            }
            n.updates.fetch_add(m, Ordering::Relaxed);
            work.count(Work::Atomic, 1);
            a = n.hot.parent.as_deref();
        }
    }

    /// Kernel-exact accounting: add the magnitude to every ancestor's
    /// residue on this shard, folding each at `batch`, stopping early per
    /// the policy.
    fn walk_ancestors<W: WorkSink>(&self, s: usize, node: &Node, mag: u64, work: &mut W) {
        let mut a = node.hot.parent.as_deref();
        let small = if mag < self.batch { mag } else { 0 };
        while let Some(n) = a {
            // ORDERING: Relaxed; the threshold counter publishes no data.
            if n.updates.load(Ordering::Relaxed) > self.break_above {
                break;
            }
            // ORDERING: Relaxed; an ancestor's residue is only a magnitude:
            // the update's data was published by its own group's header RMW.
            let old = n.hot.rows.header(s).fetch_add(small, Ordering::Relaxed);
            work.count(Work::Atomic, 1);
            if (old & RESIDUE_MASK) + small >= self.batch || small != mag {
                self.take_residue_into(s, n, mag - small, work);
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// Takes `node`'s residue on shard `s` (plus `extra`) and accounts it.
    #[cold]
    #[inline(never)]
    fn fold<W: WorkSink>(&self, s: usize, node: &Node, extra: u64, work: &mut W) {
        match self.policy.threshold {
            ThresholdRule::None => {
                // No threshold to feed: just keep the residue field bounded.
                self.take_residue(s, node, work);
            }
            ThresholdRule::Global => {
                let m = self.take_residue(s, node, work) + extra;
                // ORDERING: Relaxed; a flush trigger, no data.
                self.global_updates.fetch_add(m, Ordering::Relaxed);
                work.count(Work::Atomic, 1);
            }
            ThresholdRule::PerGroup => match self.policy.scheme {
                ThresholdScheme::PerAncestor => self.take_residue_into(s, node, extra, work),
                ThresholdScheme::Folded => {
                    let m = self.take_residue(s, node, work) + extra;
                    self.add_up(node, m, work);
                }
            },
        }
    }

    /// Kernel-style fold of one group's residue into its own counter.
    fn take_residue_into<W: WorkSink>(&self, s: usize, node: &Node, extra: u64, work: &mut W) {
        let m = self.take_residue(s, node, work) + extra;
        // ORDERING: Relaxed; flush trigger only.
        if node.updates.load(Ordering::Relaxed) <= self.break_above {
            node.updates.fetch_add(m, Ordering::Relaxed);
            work.count(Work::Atomic, 1);
        }
    }

    /// Atomically takes (zeroes) the residue field of `node` on shard `s`.
    fn take_residue<W: WorkSink>(&self, s: usize, node: &Node, work: &mut W) -> u64 {
        // ORDERING: Relaxed; the residue is a magnitude, and clearing it
        // must not disturb the claim bit or the link (hence an RMW).
        let old = node
            .hot
            .rows
            .header(s)
            .fetch_and(!RESIDUE_MASK, Ordering::Relaxed);
        work.count(Work::Atomic, 1);
        old & RESIDUE_MASK
    }
}
