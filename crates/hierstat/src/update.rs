//! The update path: an owner's plain path and everyone else's atomic path.
//!
//! A thread that owns its shard (it holds the seat of the same number, see
//! `seat.rs`) is the only writer of that shard's *owner cells*. Its update
//! of `delta` to slot `k` of group `g` on shard `s` is:
//!
//! 1. `cell = cell + delta` and `residue = residue − magnitude` (it counts
//!    down to the next fold, see `header.rs`): plain
//!    loads and stores (no `lock` prefix) on lines only this thread writes;
//!    the cell's add is checked (a sum that would leave `i64` saturates the
//!    item instead, see `saturation.rs`);
//! 2. a compiler fence (the light half of an asymmetric barrier), then a
//!    Relaxed load of the row's header (`header.rs`);
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
//! * the row's address is one load from the group's row table, whose
//!   address the group handle carries (see `table.rs`), at the thread's
//!   seat: no load through the group's state. A row exists only once its
//!   shard writes the group: the first write allocates it (cold, under the
//!   shard's arena lock);
//! * the cell's index and the update's magnitude come from the item
//!   handle's bits (an item's slot is its index, its unit a flag); the
//!   schema's table load only decides the foreign-handle branch, beside
//!   the path;
//! * the cell is indexed with a checked [`Slot`], no
//!   bounds check;
//! * the residue counts down, so one subtraction both accounts the update
//!   and, by its sign, says whether to fold (see `header.rs`).
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
//! `SeqCst` fence after setting its shard's flag in [`Writers`], and the
//! flusher loads the flag after a `SeqCst` fence (see `Core::claim_owned`).
//!
//! # The shared path
//!
//! Threads beyond the shard count (they share a shard) and explicit-shard
//! calls (`hierstat::sim`) write the *shared cells* with atomic RMWs,
//! exactly as the engine always did:
//!
//! 1. `shared[g][s][k].fetch_add(delta)` (Relaxed; the value it replaced
//!    tells whether the sum left `i64`);
//! 2. `header[g][s].fetch_add(m)` (AcqRel), `m` the magnitude if under
//!    `batch` (larger ones fold directly). This one RMW both accounts the
//!    magnitude and orders the update against the flusher's drain of the
//!    same word (see `header.rs`);
//! 3. claim if not reserved by a shared writer since the drain; fold at
//!    `batch`.
//!
//! A *sole writer* (the simulator's
//! [`Simulator::add_with_mut`](crate::sim::Simulator::add_with_mut) through
//! the tree's only handle, see `CoreRef` in `engine.rs`) makes steps 1 and
//! 2 as a load and a store each: while it holds `&mut` of that handle no
//! other thread can run any operation of the tree, so the words end as the
//! RMWs would leave them, and the work reported is the same.
//!
//! With [`ThresholdScheme::PerAncestor`] (the kernel's exact accounting)
//! the residue step is repeated on every ancestor's row on shard `s`, until
//! the early-break rule stops the walk: plain on the owner path (the owner
//! is the only writer of the ancestors' owner residues on its shard),
//! `fetch_add` (Release) on the shared path: a flush takes an ancestor's
//! shared residue before its drain and must then find the rows whose
//! pages it took (see `flush.rs`, "What a flush hands over").
//!
//! # The per-CPU mode
//!
//! In the per-CPU mode ([`Config::per_cpu`](crate::Config::per_cpu)) the
//! shards are the CPUs and a group's row on CPU `c` is written, with plain
//! loads and stores, by whichever thread runs on `c`: any number of
//! threads, no seat, no shared path. An update is:
//!
//! 1. one restartable sequence (`rseq.rs`) on the current CPU `c`: the
//!    group's row on `c` from its row table, `residue −= magnitude` (not
//!    the commit: a restart subtracts again, an over-count), then `cell +=
//!    delta`, whose store commits. The kernel restarts the section if the
//!    thread is preempted, migrated or signalled inside it, so no two
//!    threads' load-add-store of a row interleave: every commit is made
//!    on the CPU whose row it writes, with no other section run there
//!    since it began;
//! 2. the claim check, after the commit (the section is an asm block that
//!    clobbers memory, so the compiler keeps the check after it: the light
//!    half of the barrier), an Acquire load (`Header::percpu_claimed`):
//!    another thread on `c` may have set the bit with its claim still in
//!    progress, and this thread then trusts it (see there). A claim
//!    (`claim_percpu`) reserves *before* it sets the bit, as a shared
//!    writer does (a thread that finds the bit set returns at once, its
//!    pages covered by that reservation only);
//! 3. kernel-exact accounting: each ancestor's residue on the current CPU,
//!    one section each (`walk_ancestors_percpu`);
//! 4. if the section left the residue below empty: the fold
//!    (`fold_percpu`), which *counts first*: it reads the residue, adds
//!    the pages it holds to the threshold counts, then gives them back to
//!    the residue in a section on `c` whose commit is the residue's store,
//!    at most up to empty. Pages two threads fold at once, or that a
//!    restarted section subtracted twice, are counted twice (until a flush
//!    resets the counts), never missed; a thread that has left `c` gives
//!    nothing back (the next update there folds again). So at every
//!    instant a residue holds at most `batch − 1` pages of updates that
//!    returned: the lane the bound counts per CPU, as per owner. The fold
//!    comes after this update's claim check, so the pages it may skip (an
//!    owner's skip of counts above `T`, see `add_up`) belong to a pair
//!    claimed since its last drain, committed on `c` before the fold read
//!    them: the owner path's argument (`FlushingGuard`).
//!
//! **The flushers' side.** A flusher never writes a per-CPU row: it reads
//! `cur` and keeps its own snapshot (`delta = cur − prev`), as for an
//! owner. The race to close is the owner path's store buffering — a commit
//! then the claim check, against the drain (clearing the claim) then the
//! read — now with any thread on `c` as the writer. The flusher's barrier
//! after its drain and before its read is
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)`: on return every
//! CPU running a thread of the process has executed a full barrier at some
//! point, with the critical section in progress there, if any, restarted.
//! A commit on `c` before that point is visible to the read after the
//! barrier; one after it is followed (program order, and the interrupt is
//! a full barrier) by a claim check that sees the drain, and queues the
//! row again; a section in progress at that point restarts and so commits
//! after it. A thread not running at the barrier was switched out, a full
//! barrier too, and its next commit comes after. The proof only needs the
//! barrier half of the command (the restart is what the plain
//! `PRIVATE_EXPEDITED` does not give: it makes every section either wholly
//! before the barrier point or wholly after, which the loom model states
//! and no step of the protocol contradicts). loom checks the protocol with
//! the sections modelled (`rseq.rs`, `model`): each store of a section is
//! made under its CPU's lock only if no commit or barrier happened there
//! since it armed, and the barrier visits every CPU under its lock
//! (`tests/loom.rs`, `percpu`).

pub(crate) mod writers;

use crate::count::COUNT_LIMIT;
use crate::engine::Core;
use crate::group::Group;
use crate::header::{Header, OwnerResidue, Writer};
use crate::policy::{ThresholdRule, ThresholdScheme};
use crate::rows::{cell_offset, OwnerRow};
use crate::rseq::{Outcome, Rseq, Status};
use crate::schema::Slot;
use crate::seat;
use crate::state::GroupState;
use crate::sync::Ordering;
use crate::table::CpuTable;
use crate::work::{Work, WorkSink};

impl Core {
    /// An update of `group` (one of this tree's) on the current thread's
    /// lane: the owner's plain path if the thread owns its shard, the
    /// shared path otherwise.
    #[inline(always)]
    pub(crate) fn update_here(&self, group: &Group, slot: Slot, delta: i64, mag: u64) {
        // One thread-local load and one compare decide both that the thread
        // owns its shard and that the row exists there; a thread without a
        // seat yet (`NO_SEAT`) or past its exit (`GONE`) fails the compare
        // and takes the general lane lookup, and so does every thread of a
        // per-CPU tree (no shard is ownable there): the owner's inlined
        // path has nothing of the per-CPU mode in it (a test of the mode
        // here, and the section's registers, cost it 5–15%).
        let here = seat::current_seat_raw() as usize;
        match group.owner_row(here) {
            Some(row) => self.update_owned_row(row, here, &group.state, slot, delta, mag, &mut ()),
            None => self.update_here_other(group, slot, delta, mag),
        }
    }

    /// [`update_here`](Self::update_here) in the per-CPU mode, or for a
    /// thread that does not own a shard (or has no seat yet).
    #[inline(never)]
    fn update_here_other(&self, group: &Group, slot: Slot, delta: i64, mag: u64) {
        if let Some(table) = group.per_cpu_table() {
            return self.update_percpu(0, table, &group.state, slot, delta, mag);
        }
        let g = &group.state;
        let lane = seat::current(self.params.shards, self.writers.ownable());
        if lane.owner {
            self.update_owned(lane.shard, g, slot, delta, mag, &mut ());
        } else {
            self.update_shared(lane.shard, g, slot, delta, mag, &mut ());
        }
    }

    /// A per-node update on the current thread's lane: the per-node slot's
    /// cell, then the total's update (which carries the magnitude).
    pub(crate) fn update_node_here(&self, g: &GroupState, total: Slot, per_node: Slot, delta: i64) {
        if self.writers.rseq().is_some() {
            let mag = self.params.schema.slot_unit(total).pages(delta);
            return self.update_node_percpu(0, g, total, per_node, delta, mag);
        }
        let lane = seat::current(self.params.shards, self.writers.ownable());
        if lane.owner {
            let row = g.hot.rows.owned_row_or_alloc(lane.shard);
            let c = row.cell(per_node);
            // ORDERING: Relaxed load and store; this thread is the cell's
            // only writer. Published with the total's update below.
            match (c.load(Ordering::Relaxed) as i64).checked_add(delta) {
                Some(v) => c.store(v as u64, Ordering::Relaxed),
                None => self.saturation.saturate(g, per_node.get(), delta),
            }
            let mag = self.params.schema.slot_unit(total).pages(delta);
            self.update_owned_row(row, lane.shard, g, total, delta, mag, &mut ());
        } else {
            self.update_node_shared(lane.shard, g, total, per_node, delta, &mut ());
        }
    }

    /// A per-node update on shard `s` through the shared path.
    pub(crate) fn update_node_shared<W: WorkSink>(
        &self,
        s: usize,
        g: &GroupState,
        total: Slot,
        per_node: Slot,
        delta: i64,
        work: &mut W,
    ) {
        // The total slot carries the magnitude; the per-node slot only needs
        // its counter written before the same Release header RMW.
        // ORDERING: Relaxed; published by the header RMW in `update_shared`.
        let old = g
            .hot
            .rows
            .row_or_alloc(s)
            .shared_cell(per_node)
            .fetch_add(delta as u64, Ordering::Relaxed);
        if (old as i64).checked_add(delta).is_none() {
            self.saturation.saturate(g, per_node.get(), delta);
        }
        work.count(Work::Atomic, 1);
        let mag = self.params.schema.slot_unit(total).pages(delta);
        self.update_shared(s, g, total, delta, mag, work);
    }

    /// The owner's plain path (see the module docs). Only the thread that
    /// owns shard `s` may call it.
    #[inline(always)]
    pub(crate) fn update_owned<W: WorkSink>(
        &self,
        s: usize,
        g: &GroupState,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        self.update_owned_row(
            g.hot.rows.owned_row_or_alloc(s),
            s,
            g,
            slot,
            delta,
            mag,
            work,
        );
    }

    /// [`update_owned`](Self::update_owned) on `g`'s row on shard `s`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn update_owned_row<W: WorkSink>(
        &self,
        row: OwnerRow<'_>,
        s: usize,
        g: &GroupState,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        let (hdr, res, cell) = (row.header(), row.residue(), row.cell(slot));
        // The residue counts down (see `header.rs`): one subtraction, and
        // its sign says whether it reached `batch`.
        let left = res.count_down(mag);
        // ORDERING: Relaxed load and store: this thread is the cell's only
        // writer (it owns shard `s`), so no update can be lost between them;
        // the flusher reads the cell after its heavy barrier. The cell is
        // the shard's running sum since the row was allocated; one that
        // would leave `i64` saturates the item instead (see `saturation.rs`).
        match (cell.load(Ordering::Relaxed) as i64).checked_add(delta) {
            Some(v) => cell.store(v as u64, Ordering::Relaxed),
            None => self.saturation.saturate(g, slot.get(), delta),
        }
        // The updater's side of the asymmetric barrier: a compiler fence
        // (the owner path runs only where the flushers have membarrier).
        crate::sync::std_only::compiler_fence(Ordering::SeqCst);
        // loom and Miri model the heavy barrier as a `SeqCst` fence on both
        // sides.
        #[cfg(any(loom, miri))]
        crate::sync::fence_seqcst();
        if !hdr.owner_claimed() {
            self.claim_owned(s, g, hdr, work);
        }
        if self.params.walks_ancestors
            // ORDERING: Relaxed; flush trigger only.
            && g.updates.pages() <= self.params.break_above
        {
            self.walk_ancestors_owned(s, g, mag, work);
        }
        if (left as i64) < 0 {
            self.fold_owned(res, left, g, work);
        }
    }

    /// Folds an owner residue that went negative, `left` (see
    /// `header.rs`), into the threshold counters, and empties it.
    #[cold]
    #[inline(never)]
    fn fold_owned<W: WorkSink>(
        &self,
        res: OwnerResidue<'_>,
        left: u64,
        g: &GroupState,
        work: &mut W,
    ) {
        let m = res.empty(left, self.params.batch);
        self.account(g, m, true, work);
    }

    /// The owner's claim: the first owner-path write to the pair since its
    /// last drain.
    ///
    /// The owner announces itself: it sets the flag the flusher checks
    /// before deciding whether it needs the heavy barrier (once per tree
    /// and shard), then issues a `SeqCst` fence (on every owner claim, a
    /// cold path: a thread that takes over a seat must not lean on its
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
    fn claim_owned<W: WorkSink>(&self, s: usize, g: &GroupState, hdr: Header<'_>, work: &mut W) {
        self.writers.announce_owner(s);
        crate::sync::fence_seqcst();
        self.claim(s, g, hdr, Writer::Owner, work);
        // After the push, before this update's fold reads the flush count:
        // pairs with the fence a flush issues after its snapshots (see
        // `FlushingGuard`).
        crate::sync::fence_seqcst();
    }

    /// The per-CPU mode's update (see the module docs, "The per-CPU
    /// mode"): the section on the current CPU's row of `table` (`g`'s),
    /// then the claim check, the ancestors' residues (kernel-exact) and
    /// the fold. `model_cpu`: the CPU a loom model runs the thread on
    /// (ignored by real sections).
    #[inline(always)]
    pub(crate) fn update_percpu(
        &self,
        model_cpu: usize,
        table: CpuTable<'_>,
        g: &GroupState,
        slot: Slot,
        delta: i64,
        mag: u64,
    ) {
        let Some(rseq) = self.writers.rseq() else {
            // A per-CPU table exists only in a per-CPU tree.
            return;
        };
        let out = rseq.add(model_cpu, table, cell_offset(slot), delta, mag);
        match (out.status, out.row) {
            (Status::Committed, Some(row)) => {
                self.after_percpu_commit(model_cpu, rseq, out.cpu, row, g, slot, mag, out.left)
            }
            _ => self.update_percpu_other(model_cpu, rseq, out, table, g, slot, delta, mag),
        }
    }

    /// What follows a per-CPU update's commit on `cpu`'s `row`, which left
    /// its residue at `left` (see the module docs, "The per-CPU mode").
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn after_percpu_commit(
        &self,
        model_cpu: usize,
        rseq: &Rseq,
        cpu: usize,
        row: OwnerRow<'_>,
        g: &GroupState,
        slot: Slot,
        mag: u64,
        left: u64,
    ) {
        // The section's commit is an asm block that clobbers memory: the
        // compiler keeps this load after it (the light half of the
        // barrier; the flushers' rseq membarrier is the heavy half).
        let hdr = row.header();
        if !hdr.percpu_claimed() {
            self.claim_percpu(cpu, g, hdr, &mut ());
        }
        if self.params.walks_ancestors
            // ORDERING: Relaxed; flush trigger only.
            && g.updates.pages() <= self.params.break_above
        {
            self.walk_ancestors_percpu(model_cpu, rseq, g, slot, mag);
        }
        if (left as i64) < 0 {
            self.fold_percpu(model_cpu, rseq, cpu, row, g, false);
        }
    }

    /// A per-CPU update whose section did not commit (`out`): the group
    /// has no row on the CPU yet (allocate it and try again), the CPU is
    /// beyond the table (the shared path on a shard of its number), or the
    /// cell's sum would leave `i64` (saturate the item, and check the
    /// claim).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn update_percpu_other<'t>(
        &self,
        model_cpu: usize,
        rseq: &Rseq,
        mut out: Outcome<'t>,
        table: CpuTable<'t>,
        g: &GroupState,
        slot: Slot,
        delta: i64,
        mag: u64,
    ) {
        loop {
            match (out.status, out.row) {
                (Status::Committed, Some(row)) => {
                    return self
                        .after_percpu_commit(model_cpu, rseq, out.cpu, row, g, slot, mag, out.left)
                }
                (Status::NoRow, _) => {
                    let _ = g.hot.rows.owned_row_or_alloc(out.cpu);
                }
                (Status::Overflow, Some(row)) => {
                    self.saturation.saturate(g, slot.get(), delta);
                    return self.after_percpu_commit(model_cpu, rseq, out.cpu, row, g, slot, 0, 0);
                }
                _ => {
                    let s = out.cpu % self.params.shards;
                    return self.update_shared(s, g, slot, delta, mag, &mut ());
                }
            }
            out = rseq.add(model_cpu, table, cell_offset(slot), delta, mag);
        }
    }

    /// The per-CPU mode's per-node update: the per-node cell in a section
    /// of its own (no magnitude), with its claim check, then the total's
    /// update, which carries the magnitude.
    pub(crate) fn update_node_percpu(
        &self,
        model_cpu: usize,
        g: &GroupState,
        total: Slot,
        per_node: Slot,
        delta: i64,
        mag: u64,
    ) {
        let table = g.hot.rows.per_cpu();
        self.update_percpu(model_cpu, table, g, per_node, delta, 0);
        self.update_percpu(model_cpu, table, g, total, delta, mag);
    }

    /// The per-CPU mode's claim: the first write of the pair by any thread
    /// on CPU `cpu` since its last drain, as the owner's (`claim_owned`),
    /// with the reservation made before the claim RMW (another thread on
    /// the CPU may find the bit set and return at once, see `Core::claim`).
    #[cold]
    #[inline(never)]
    fn claim_percpu<W: WorkSink>(&self, cpu: usize, g: &GroupState, hdr: Header<'_>, work: &mut W) {
        self.writers.announce_owner(cpu);
        crate::sync::fence_seqcst();
        self.claim(cpu, g, hdr, Writer::PerCpu, work);
        // As the owner's: before this update's fold reads the flush count.
        crate::sync::fence_seqcst();
    }

    /// Folds the residue of `row` (on CPU `cpu`), which an update took
    /// below empty, into the threshold counts (see the module docs, "The
    /// per-CPU mode"): *first* count the pages the residue holds, then
    /// give them back to the residue in a section on `cpu` (at most up to
    /// empty). Counting first only ever over-counts: pages another thread
    /// folded meanwhile, or that a restarted section subtracted twice,
    /// are counted twice until a flush resets the counts, never missed.
    /// If the thread no longer runs on `cpu`, nothing is given back (the
    /// next update there folds again): an over-count too. `ancestor`: a
    /// kernel-exact ancestor's residue (its own count only).
    #[cold]
    #[inline(never)]
    fn fold_percpu(
        &self,
        model_cpu: usize,
        rseq: &Rseq,
        cpu: usize,
        row: OwnerRow<'_>,
        g: &GroupState,
        ancestor: bool,
    ) {
        let batch = self.params.batch;
        let res = row.residue();
        let held = (batch - 1).wrapping_sub(res.peek()) as i64;
        if held <= 0 {
            // Another thread folded it meanwhile.
            return;
        }
        let held = held as u64;
        if ancestor {
            self.add_own(g, held, &mut ());
        } else {
            // After this update's claim check: an owner's fold, which may
            // skip counts above the threshold (see `add_up`): the residue
            // holds pages of sections committed on `cpu` before its read,
            // of a pair claimed since its last drain, as the owner's does.
            self.account(g, held, true, &mut ());
        }
        let _ = rseq.credit(model_cpu, cpu, res.word(), held, batch - 1);
    }

    /// Kernel-exact accounting, per-CPU mode: each ancestor's residue on
    /// the current CPU, in a section (the update's slot of the ancestor's
    /// row gets a zero delta: the section's commit), folded as the group's
    /// is.
    fn walk_ancestors_percpu(
        &self,
        model_cpu: usize,
        rseq: &Rseq,
        g: &GroupState,
        slot: Slot,
        mag: u64,
    ) {
        let first = cell_offset(slot);
        let mut a = g.hot.parent.as_deref();
        while let Some(n) = a {
            if n.updates.pages() > self.params.break_above {
                break;
            }
            let table = n.hot.rows.per_cpu();
            let out = loop {
                let out = rseq.add(model_cpu, table, first, 0, mag);
                match out.status {
                    Status::NoRow => {
                        let _ = n.hot.rows.owned_row_or_alloc(out.cpu);
                    }
                    _ => break out,
                }
            };
            match (out.status, out.row) {
                (Status::Committed, Some(row)) if (out.left as i64) < 0 => {
                    self.fold_percpu(model_cpu, rseq, out.cpu, row, n, true);
                }
                (Status::Committed, _) => {}
                // A CPU beyond the table: its shard's shared residue.
                _ => self.walk_ancestor_shared(out.cpu % self.params.shards, n, mag),
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// One ancestor's step of [`walk_ancestors`](Self::walk_ancestors) on
    /// shard `s` (the per-CPU mode, for a CPU beyond its table).
    #[cold]
    fn walk_ancestor_shared(&self, s: usize, n: &GroupState, mag: u64) {
        let batch = self.params.batch;
        let small = if mag < batch { mag } else { 0 };
        let hdr = n.hot.rows.row_or_alloc(s).header();
        let residue = hdr.add_ancestor_residue(small);
        if residue + small >= batch || small != mag {
            let m = self.take_residue(hdr, &mut ()) + (mag - small);
            self.add_own(n, m, &mut ());
        }
    }

    /// The shared (atomic) path on shard `s` (see the module docs).
    #[inline(always)]
    pub(crate) fn update_shared<W: WorkSink>(
        &self,
        s: usize,
        g: &GroupState,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        self.update_shared_by::<false, W>(s, g, slot, delta, mag, work);
    }

    /// The shared path by a *sole writer*: a caller that has the tree
    /// exclusively, so that no other thread runs any of its operations
    /// until this returns (`Simulator::add_with_mut`: the tree's only
    /// handle, borrowed `&mut`, see `CoreRef::exclusive`). The update's two
    /// read-modify-writes, the cell's add and the header's residue add,
    /// become a load and a store each: with no other thread to interleave,
    /// and no call of the work sink between a load and its store, the
    /// words, and so every later step, are what the RMWs would have made
    /// them. The work reported is the shared path's, unchanged: a
    /// simulator prices the update it models, not the instructions that
    /// ran. The cold steps (claim, fold) keep their RMWs.
    #[inline(always)]
    pub(crate) fn update_shared_sole<W: WorkSink>(
        &self,
        s: usize,
        g: &GroupState,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        self.update_shared_by::<true, W>(s, g, slot, delta, mag, work);
    }

    /// [`update_shared`](Self::update_shared), or with `SOLE`
    /// [`update_shared_sole`](Self::update_shared_sole).
    #[inline(always)]
    fn update_shared_by<const SOLE: bool, W: WorkSink>(
        &self,
        s: usize,
        g: &GroupState,
        slot: Slot,
        delta: i64,
        mag: u64,
        work: &mut W,
    ) {
        self.writers.announce_shared(s);
        let row = g.hot.rows.row_or_alloc(s);
        let cell = row.shared_cell(slot);
        let old = if SOLE {
            // ORDERING: Relaxed load and store: a sole writer's (see
            // `update_shared_sole`); nothing else reads or writes the cell
            // until the caller's exclusive borrow ends.
            let old = cell.load(Ordering::Relaxed);
            // ORDERING: Relaxed; as above.
            cell.store(old.wrapping_add(delta as u64), Ordering::Relaxed);
            old
        } else {
            // ORDERING: Relaxed; made visible to the flusher by the Release RMW
            // on the header below (same thread, sequenced before it). The cell
            // holds what the shard's shared writers added since its last flush;
            // a sum that leaves `i64` saturates the item (see `saturation.rs`).
            cell.fetch_add(delta as u64, Ordering::Relaxed)
        };
        if (old as i64).checked_add(delta).is_none() {
            self.saturation.saturate(g, slot.get(), delta);
        }
        let batch = self.params.batch;
        let small = if mag < batch { mag } else { 0 };
        let hdr = row.header();
        // The residue add orders this update against the flusher's drain
        // (see `Header::add_residue`); a sole writer has no drain to order
        // against.
        let seen = if SOLE {
            hdr.add_residue_sole(small)
        } else {
            hdr.add_residue(small)
        };
        work.count(Work::Atomic, 2);
        if !seen.claimed {
            self.claim(s, g, hdr, Writer::Shared, work);
        }
        if self.params.walks_ancestors
            // ORDERING: Relaxed; flush trigger only. A group already above
            // the break level stops the walk at itself, as the kernel does.
            && g.updates.pages() <= self.params.break_above
        {
            self.walk_ancestors(s, g, mag, work);
        }
        if seen.residue + small >= batch || small != mag {
            let m = self.take_residue(hdr, work) + (mag - small);
            self.account(g, m, false, work);
        }
    }

    /// Reserves the pair for writer kind `w` and queues the row on shard
    /// `s`'s update list unless it is queued already.
    #[cold]
    #[inline(never)]
    fn claim<W: WorkSink>(
        &self,
        s: usize,
        g: &GroupState,
        hdr: Header<'_>,
        w: Writer,
        work: &mut W,
    ) {
        let list = self.dirty.list(s);
        let token = list.begin_claim();
        let policy = &self.params.policy;
        let folded =
            policy.threshold == ThresholdRule::PerGroup && policy.scheme == ThresholdScheme::Folded;
        // A shared writer reserves *before* it sets the bit: another shared
        // writer that finds the bit set returns at once, its unfolded pages
        // covered by this reservation only, which must be in the count
        // before that writer's update completes (its residue RMW acquires
        // the claim RMW below). Reserved after the bit, a read between the
        // two saw the other writer's pages with a bound of 0 (loom:
        // `a_writer_finding_the_pair_claimed_is_covered_by_the_claim`). If
        // another writer set the bit first, this reservation is one pair's
        // worth too many until the next flush that resets the group. The
        // owner's bit covers only the owner's own updates, which wait for
        // their claim: it reserves after its push, as below. A per-CPU
        // claimer is a shared writer in this respect: other threads on its
        // CPU may find its bit set (see `claim_percpu`).
        if folded && w == Writer::PerCpu {
            self.reserve(g, work);
        }
        if folded && w == Writer::Shared {
            self.reserve(g, work);
        }
        let c = hdr.claim(w);
        work.count(Work::Atomic, 3);
        if c.push {
            list.push(g.hot.id, hdr, work);
        }
        if folded && c.reserve && w == Writer::Owner {
            self.reserve(g, work);
        }
        list.end_claim(token);
    }

    /// Reserves the most one writer kind's residue of a pair of `g` can
    /// hold before it folds (`batch − 1` pages) in `g` and each ancestor,
    /// so that counters plus reservations never under-count. No early
    /// break: reservations are not capped.
    ///
    /// ORDERING: Release, within the claim (after `begin_claim`; for the
    /// owner after its push, for a shared writer before its claim RMW). A
    /// flush whose snapshot counts this reservation resets it at its
    /// hand-over, so its drains must find the row: its `SeqCst` fence
    /// after the snapshots acquires this release (as for a fold, see
    /// `Count::add`; loom: Relaxed fails
    /// `a_reservation_counted_by_a_root_flush_is_drained_with_its_pair`),
    /// so the claim's `begin_claim` is visible to its drains' wait for
    /// claims in progress, and through the claim's end the push it made or
    /// acquired (see `ListHead::wait_for_claims`).
    fn reserve<W: WorkSink>(&self, g: &GroupState, work: &mut W) {
        let mut a = Some(g);
        while let Some(n) = a {
            n.reserved
                .fetch_add(self.params.batch - 1, Ordering::Release);
            work.count(Work::Atomic, 1);
            a = n.hot.parent.as_deref();
        }
    }

    /// Accounts `m` folded pages of `g`'s updates per the threshold rule;
    /// `owner`: the fold comes from the owner path (see `add_up`).
    fn account<W: WorkSink>(&self, g: &GroupState, m: u64, owner: bool, work: &mut W) {
        let policy = &self.params.policy;
        match policy.threshold {
            // No threshold to feed.
            ThresholdRule::None => {}
            ThresholdRule::Global => {
                if self.global.count().add_below(m, COUNT_LIMIT) {
                    work.count(Work::Atomic, 1);
                }
            }
            ThresholdRule::PerGroup => match policy.scheme {
                // Kernel-exact: the group's own counter; the ancestors
                // have their own residues.
                ThresholdScheme::PerAncestor => self.add_own(g, m, work),
                ThresholdScheme::Folded => self.add_up(g, m, owner, work),
            },
        }
    }

    /// Adds `m` to the threshold counters of `g` and its ancestors,
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
    fn add_up<W: WorkSink>(&self, g: &GroupState, m: u64, owner: bool, work: &mut W) {
        // After this update's cell writes and its pair's check or claim
        // (see `Flushes::running_for_skip`).
        let may_skip = owner && !self.flushes.running_for_skip();
        let (threshold, break_above) = (self.params.threshold, self.params.break_above);
        let mut a = Some(g);
        while let Some(n) = a {
            let u = n.updates.pages();
            if u > break_above {
                break;
            }
            if !(may_skip && u > threshold) {
                n.updates.add(m);
                work.count(Work::Atomic, 1);
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// Kernel-exact accounting, shared path: add the magnitude to every
    /// ancestor's shared residue on this shard, folding each at `batch`,
    /// stopping early per the policy.
    fn walk_ancestors<W: WorkSink>(&self, s: usize, g: &GroupState, mag: u64, work: &mut W) {
        let batch = self.params.batch;
        let mut a = g.hot.parent.as_deref();
        let small = if mag < batch { mag } else { 0 };
        while let Some(n) = a {
            if n.updates.pages() > self.params.break_above {
                break;
            }
            let hdr = n.hot.rows.row_or_alloc(s).header();
            let residue = hdr.add_ancestor_residue(small);
            work.count(Work::Atomic, 1);
            if residue + small >= batch || small != mag {
                let m = self.take_residue(hdr, work) + (mag - small);
                self.add_own(n, m, work);
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// Kernel-exact accounting, owner path: the same walk on the ancestors'
    /// owner residues, with plain loads and stores (the owner of shard `s`
    /// is their only writer).
    ///
    /// Inlined into the update, and each step is what the group's own
    /// update does: a check of the count, one load from the ancestor's row
    /// table (an owner's shard is a near one), the countdown; the first
    /// touch of an ancestor's row and its folds are out of line. (As a
    /// call through the general row lookup, with its far-table arithmetic,
    /// it cost linux-6.8's depth-1 `add` about half again its time; as a
    /// call of its own, `#[inline(never)]`, 1.5x what it costs inlined:
    /// linux-6.8's depth-1 `add` 3.32 against 2.20 times a `fetch_add`,
    /// depth 4 5.04 against 4.04, the hierstat preset's `add` unchanged,
    /// `update_path` example, 4 alternations of the two builds.)
    #[inline(always)]
    fn walk_ancestors_owned<W: WorkSink>(&self, s: usize, g: &GroupState, mag: u64, work: &mut W) {
        let break_above = self.params.break_above;
        let mut a = g.hot.parent.as_deref();
        while let Some(n) = a {
            if n.updates.pages() > break_above {
                break;
            }
            let res = match n.hot.rows.near_row(s) {
                Some(row) => row.residue(),
                None => n.hot.rows.owned_row_or_alloc_cold(s).residue(),
            };
            let left = res.count_down(mag);
            if (left as i64) < 0 {
                self.fold_ancestor_owned(res, left, n, work);
            }
            a = n.hot.parent.as_deref();
        }
    }

    /// An ancestor's owner residue that went negative (see
    /// `walk_ancestors_owned`): emptied into its own count.
    #[cold]
    #[inline(never)]
    fn fold_ancestor_owned<W: WorkSink>(
        &self,
        res: OwnerResidue<'_>,
        left: u64,
        n: &GroupState,
        work: &mut W,
    ) {
        let m = res.empty(left, self.params.batch);
        self.add_own(n, m, work);
    }

    /// Kernel-style fold into one group's own counter.
    fn add_own<W: WorkSink>(&self, g: &GroupState, m: u64, work: &mut W) {
        if g.updates.add_below(m, self.params.break_above) {
            work.count(Work::Atomic, 1);
        }
    }

    /// Atomically takes (zeroes) the shared residue in `hdr`.
    fn take_residue<W: WorkSink>(&self, hdr: Header<'_>, work: &mut W) -> u64 {
        work.count(Work::Atomic, 1);
        hdr.take_residue()
    }
}
