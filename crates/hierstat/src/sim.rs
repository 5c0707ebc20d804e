//! The simulator's API: explicit shards, work counters, virtual time and
//! invariant checks.
//!
//! A program that counts its own statistics needs none of this: it calls
//! [`HierStats::add`] (or a [`Counter`](crate::Counter)) on the thread that
//! updates, and the engine picks the thread's shard. A simulator of the
//! kernel's per-CPU statistics (the `sim` crate) instead plays many CPUs on
//! one thread, prices what each operation did, and runs in virtual time:
//!
//! * [`Simulator::add_with`] and [`Simulator::add_node_with`] update an
//!   explicit [`Shard`] (always through the shared, atomic path: any thread
//!   may name any shard) and report their [`Work`];
//! * [`Simulator::add_with_mut`] is `add_with` for a simulator that drives
//!   the whole tree from one thread: through `&mut` of the tree's only
//!   handle, the shared path's read-modify-writes are plain loads and
//!   stores, with the same results and work;
//! * [`Simulator::flush_with`] runs any [`FlushKind`] and reports its work;
//! * [`Simulator::hot_path_decision_with_flusher`] applies the hot-path rule
//!   for a flusher the caller runs itself (in virtual time);
//! * [`ManualClock`] is a clock set by hand;
//! * [`Simulator::verify`] and [`Simulator::verify_clean`] check the
//!   engine's invariants (tests, audits).
//!
//! The methods are a trait's, so a program uses them only by naming it:
//!
//! ```
//! use hierstat::sim::{Shard, Simulator, WorkCounters};
//! use hierstat::{Config, FlushKind, HierStats, Preset, Schema, Unit};
//!
//! let mut b = Schema::builder();
//! let pgfault = b.event("pgfault", Unit::Count);
//! let stats = HierStats::new(b.build()?, Config::preset(Preset::Linux6_8).shards(4))?;
//! let g = stats.create(&stats.root(), "g")?;
//! let mut work = WorkCounters::default();
//! stats.add_with(Shard(3), &g, pgfault, 10, &mut work)?;
//! stats.flush_with(&stats.root(), FlushKind::Forced, &mut work)?;
//! assert_eq!(stats.read(&g, pgfault)?, 10);
//! assert!(work.atomics > 0 && work.groups_visited >= 2);
//! stats.verify_clean()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::clock::ManualClock;
pub use crate::verify::Violation;
pub use crate::work::{Work, WorkCounters, WorkSink};

use crate::error::Error;
use crate::flush::{FlushKind, FlushOutcome, HotPathDecision};
use crate::group::Group;
use crate::schema::{ItemId, NodeItemId};
use crate::stats::HierStats;
use crate::within::{OnBusy, ReadItem, Tolerance, Within, WithinFlush};
use crate::work::Guarded;

/// Which shards have been written, and how (see
/// [`Simulator::shards_written`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardsWritten {
    /// Shards written by the thread that owns them (plain stores).
    pub by_owners: usize,
    /// Shards written through the shared path (atomic adds): threads
    /// beyond the shard count, explicit-shard calls.
    pub shared: usize,
}

/// An explicit shard index (`0..shards`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard(pub usize);

impl Shard {
    /// The shard's index, checked against `stats`' shard count.
    ///
    /// # Errors
    /// [`Error::ShardOutOfRange`].
    fn index(self, stats: &HierStats) -> Result<usize, Error> {
        let shards = stats.shards();
        if self.0 < shards {
            Ok(self.0)
        } else {
            Err(Error::ShardOutOfRange {
                shard: self.0,
                shards,
            })
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::HierStats {}
}

/// The simulator's methods of [`HierStats`] (see the module docs). Sealed:
/// only `HierStats` implements it.
pub trait Simulator: sealed::Sealed {
    /// [`HierStats::add`] on an explicit shard, reporting work to `work`
    /// (pass `&mut ()` to report nothing). Explicit-shard updates take the
    /// shared (atomic) path: any thread may name any shard. A panic in
    /// `work` reaches the caller once the update has completed (see
    /// [`WorkSink`]).
    ///
    /// # Errors
    /// As [`HierStats::add`], plus [`Error::ShardOutOfRange`].
    fn add_with<W: WorkSink>(
        &self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error>;

    /// [`add_with`](Self::add_with) through `&mut`, for a simulator that
    /// drives the whole tree from one thread: the same update, leaving the
    /// tree in the same state and reporting the same work, bit for bit.
    /// When this handle is the tree's only one (no clone of it, no
    /// [`Counter`](crate::Counter), no background flusher alive), nothing
    /// else can run any of the tree's operations while `&mut self` is
    /// borrowed, and the shared path's two read-modify-writes per update
    /// are made as plain loads and stores; otherwise this is
    /// [`add_with`](Self::add_with). The work reported is the shared
    /// path's either way (it prices the update being modelled).
    ///
    /// ```
    /// use hierstat::sim::{Shard, Simulator, WorkCounters};
    /// use hierstat::{Config, FlushKind, HierStats, Preset, Schema, Unit};
    ///
    /// let mut b = Schema::builder();
    /// let anon = b.state("anon", Unit::Pages);
    /// let mut stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(4))?;
    /// let g = stats.create(&stats.root(), "g")?;
    /// let mut work = WorkCounters::default();
    /// // The tree's only handle: plain loads and stores.
    /// stats.add_with_mut(Shard(3), &g, anon, 10, &mut work)?;
    /// // Another handle lives: the atomic path, as `add_with`.
    /// let other = stats.clone();
    /// stats.add_with_mut(Shard(3), &g, anon, 10, &mut work)?;
    /// drop(other);
    /// // Either way the work of the shared path: two RMWs, and a claim.
    /// assert!(work.atomics > 4);
    /// stats.flush_with(&stats.root(), FlushKind::Forced, &mut ())?;
    /// assert_eq!(stats.read(&g, anon)?, 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`add_with`](Self::add_with).
    fn add_with_mut<W: WorkSink>(
        &mut self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error>;

    /// [`HierStats::add_node`] on an explicit shard, reporting work.
    ///
    /// # Errors
    /// Item errors, [`Error::NodeOutOfRange`], [`Error::ShardOutOfRange`].
    fn add_node_with<W: WorkSink>(
        &self,
        shard: Shard,
        group: &Group,
        item: NodeItemId,
        numa_node: usize,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error>;

    /// [`HierStats::read_many_within`], reporting the work of its flush
    /// (and of its plan: one structure lock and one reference count per
    /// child group it looked at). A panic in `work` reaches the caller once
    /// the read has completed (see [`WorkSink`]).
    ///
    /// # Errors
    /// As [`HierStats::read_many_within`].
    fn read_many_within_with<W: WorkSink>(
        &self,
        group: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        out: &mut Vec<Within>,
        work: &mut W,
    ) -> Result<WithinFlush, Error>;

    /// [`HierStats::read_subtree_within`], reporting work as
    /// [`read_many_within_with`](Self::read_many_within_with).
    ///
    /// # Errors
    /// As [`HierStats::read_subtree_within`].
    fn read_subtree_within_with<W: WorkSink>(
        &self,
        root: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        visit: impl FnMut(&Group, &[Within]),
        work: &mut W,
    ) -> Result<WithinFlush, Error>;

    /// Any flush entry point, reporting work. A panic in `work` reaches
    /// the caller once the flush has completed (see [`WorkSink`]).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    fn flush_with<W: WorkSink>(
        &self,
        group: &Group,
        kind: FlushKind,
        work: &mut W,
    ) -> Result<FlushOutcome, Error>;

    /// [`HierStats::hot_path_decision`] for a caller that runs the periodic
    /// flush itself (a simulator's flusher in virtual time) and so says
    /// whether one is running instead of the engine's own flusher thread.
    ///
    /// ```
    /// use hierstat::sim::Simulator;
    /// use hierstat::{Config, FlushScope, HierStats, HotPathDecision, Preset, Schema, Unit};
    ///
    /// let mut b = Schema::builder();
    /// let anon = b.state("anon", Unit::Pages);
    /// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat))?;
    /// let g = stats.create(&stats.root(), "g")?;
    /// stats.add(&g, anon, 1 << 20)?;
    /// // Async hot path, but no background flusher: flush synchronously.
    /// assert_eq!(stats.hot_path_decision(&g)?, HotPathDecision::Flush(FlushScope::Subtree));
    /// assert_eq!(
    ///     stats.hot_path_decision_with_flusher(&g, true)?,
    ///     HotPathDecision::RequestAsync
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    fn hot_path_decision_with_flusher(
        &self,
        group: &Group,
        flusher_running: bool,
    ) -> Result<HotPathDecision, Error>;

    /// Checks, while excluding flushes:
    /// * conservation `A[n] + P[n] == F[n] + Σ A[children(n)]` for every
    ///   group (removed groups count as children of their parent) and slot
    ///   that is not saturated (`A` the hierarchical aggregate, `P` the
    ///   deltas pushed up by children and not absorbed yet, `F` the group's
    ///   own flushed updates);
    /// * the dirty trees' shape on every shard: on a tree ⇒ parent on it.
    ///
    /// # Errors
    /// The first violation found.
    fn verify(&self) -> Result<(), Violation>;

    /// After quiescence and a forced root flush: every claim is clear,
    /// every update list and dirty tree is empty and every counter is
    /// flushed.
    ///
    /// # Errors
    /// The first (group, shard) that is not clean.
    fn verify_clean(&self) -> Result<(), Violation>;

    /// Which shards have been written since the tree was built, and by
    /// which path: a program whose shards cover its live threads (see
    /// [`Config::shards`](crate::Config::shards)) has `shared == 0`.
    fn shards_written(&self) -> ShardsWritten;

    /// The rows `group` has: one per shard (per CPU, in the per-CPU mode)
    /// that ever wrote it, until it is reaped.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    fn rows_of(&self, group: &Group) -> Result<usize, Error>;

    /// loom only: [`HierStats::add`] through the owner path of `shard`, as
    /// the thread that owns it. (Model threads share the OS thread whose
    /// seat `add` would look up.) The caller must be the only thread that
    /// uses this for `shard`.
    ///
    /// # Errors
    /// As [`add_with`](Self::add_with).
    #[cfg(loom)]
    fn add_owned_with(
        &self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
    ) -> Result<(), Error>;

    /// loom only: [`HierStats::add`] of a per-CPU tree
    /// ([`Mode::PerCpu`](crate::Mode::PerCpu)) by a thread running on
    /// modelled CPU `cpu` (see `rseq.rs`): any number of model threads may
    /// use one CPU, as real threads do. On a tree of the other modes, the
    /// owner path (as [`add_owned_with`](Self::add_owned_with)).
    ///
    /// # Errors
    /// As [`add_with`](Self::add_with).
    #[cfg(loom)]
    fn add_on_cpu_with(
        &self,
        cpu: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
    ) -> Result<(), Error>;
}

/// An explicit-shard update through the shared path: `add_with`, or with
/// `sole` (the tree's only handle, borrowed `&mut`) its plain-store form.
#[inline(always)]
fn add_shared<W: WorkSink>(
    t: &HierStats,
    sole: bool,
    shard: Shard,
    group: &Group,
    item: ItemId,
    delta: i64,
    work: &mut W,
) -> Result<(), Error> {
    let g = t.core.own(group)?;
    let (slot, mag) = t.core.params.schema.slot_for_update(item, delta)?;
    let s = shard.index(t)?;
    // A panicking sink does not interrupt the update (see `WorkSink`).
    Guarded::run(work, |w| {
        if sole {
            t.core.update_shared_sole(s, g, slot, delta, mag, w);
        } else {
            t.core.update_shared(s, g, slot, delta, mag, w);
        }
    });
    Ok(())
}

impl Simulator for HierStats {
    #[inline]
    fn add_with<W: WorkSink>(
        &self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error> {
        add_shared(self, false, shard, group, item, delta, work)
    }

    #[inline]
    fn add_with_mut<W: WorkSink>(
        &mut self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error> {
        let sole = self.core.exclusive();
        add_shared(self, sole, shard, group, item, delta, work)
    }

    fn add_node_with<W: WorkSink>(
        &self,
        shard: Shard,
        group: &Group,
        item: NodeItemId,
        numa_node: usize,
        delta: i64,
        work: &mut W,
    ) -> Result<(), Error> {
        let (g, total, per_node) = self.node_update(group, item, numa_node, delta)?;
        let s = shard.index(self)?;
        Guarded::run(work, |w| {
            self.core
                .update_node_shared(s, g, total, per_node, delta, w)
        });
        Ok(())
    }

    fn read_many_within_with<W: WorkSink>(
        &self,
        group: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        out: &mut Vec<Within>,
        work: &mut W,
    ) -> Result<WithinFlush, Error> {
        Guarded::run(work, |w| {
            HierStats::read_many_within_with(self, group, reads, on_busy, out, w)
        })
    }

    fn read_subtree_within_with<W: WorkSink>(
        &self,
        root: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        visit: impl FnMut(&Group, &[Within]),
        work: &mut W,
    ) -> Result<WithinFlush, Error> {
        Guarded::run(work, |w| {
            HierStats::read_subtree_within_with(self, root, reads, on_busy, visit, w)
        })
    }

    fn flush_with<W: WorkSink>(
        &self,
        group: &Group,
        kind: FlushKind,
        work: &mut W,
    ) -> Result<FlushOutcome, Error> {
        let g = self.core.own(group)?;
        // A panicking sink does not interrupt the flush (see `WorkSink`).
        Ok(Guarded::run(work, |w| self.core.flush(g, kind, w)))
    }

    fn hot_path_decision_with_flusher(
        &self,
        group: &Group,
        flusher_running: bool,
    ) -> Result<HotPathDecision, Error> {
        let g = self.core.own(group)?;
        Ok(self.core.hot_path_decision(g, flusher_running))
    }

    fn verify(&self) -> Result<(), Violation> {
        self.core.verify()
    }

    fn verify_clean(&self) -> Result<(), Violation> {
        self.core.verify_clean()
    }

    fn shards_written(&self) -> ShardsWritten {
        let (by_owners, shared) = self.core.writers.written();
        ShardsWritten { by_owners, shared }
    }

    fn rows_of(&self, group: &Group) -> Result<usize, Error> {
        Ok(self.core.own(group)?.hot.rows.rows().count())
    }

    #[cfg(loom)]
    fn add_owned_with(
        &self,
        shard: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
    ) -> Result<(), Error> {
        let g = self.core.own(group)?;
        let (slot, mag) = self.core.params.schema.slot_for_update(item, delta)?;
        let s = shard.index(self)?;
        self.core.update_owned(s, g, slot, delta, mag, &mut ());
        Ok(())
    }

    #[cfg(loom)]
    fn add_on_cpu_with(
        &self,
        cpu: Shard,
        group: &Group,
        item: ItemId,
        delta: i64,
    ) -> Result<(), Error> {
        self.core.check(group)?;
        let (slot, mag) = self.core.params.schema.slot_for_update(item, delta)?;
        let c = cpu.index(self)?;
        match group.per_cpu_table() {
            Some(table) => self
                .core
                .update_percpu(c, table, &group.state, slot, delta, mag),
            None => self
                .core
                .update_owned(c, &group.state, slot, delta, mag, &mut ()),
        }
        Ok(())
    }
}
