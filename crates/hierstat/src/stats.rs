//! [`HierStats`], the engine's whole public API in one place (the
//! simulator's part aside).
//!
//! Every method here checks its handles (the group's tree, the item's
//! schema) and hands over to the part that does the work; the simulator's
//! methods are in `sim.rs` (the [`Simulator`](crate::sim::Simulator)
//! trait).

use crate::config::{Config, Params, MAX_SHARDS};
use crate::counter::Counter;
use crate::engine::{Core, CoreRef};
use crate::error::{ConfigError, Error};
use crate::flush::{FlushKind, FlushOutcome, FlushStats, HotPathDecision};
use crate::group::Group;
use crate::mode::Mode;
use crate::policy::Policy;
use crate::read::Bounded;
use crate::schema::{ItemId, NodeItemId, Schema, Slot};
use crate::state::GroupState;
use crate::update::writers::Writers;
use crate::within::{OnBusy, ReadItem, Req, Tolerance, Within, WithinFlush};

/// Hierarchical per-shard statistics for a tree of groups.
///
/// Updates write the caller's shard of the group and, at most once per
/// flush, queue the group on that shard's lock-free update list. Reads return
/// the last flushed hierarchical (or local) aggregate. Flushes visit only the
/// (group, shard) pairs updated since the last flush, children before
/// parents, under the configured [`Policy`].
///
/// ```
/// use hierstat::{Config, HierStats, Preset, Schema, Unit};
///
/// let mut b = Schema::builder();
/// let anon = b.state("anon", Unit::Bytes);
/// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(4))?;
/// let web = stats.create(&stats.root(), "web")?;
/// let api = stats.create(&web, "api")?;
/// stats.add(&api, anon, 8192)?;
/// stats.flush_forced(&web).unwrap();
/// assert_eq!(stats.read(&web, anon)?, 8192);
/// assert_eq!(stats.read_local(&web, anon)?, 0);
/// # Ok::<(), hierstat::Error>(())
/// ```
#[derive(Debug)]
pub struct HierStats {
    pub(crate) core: CoreRef,
}

impl Clone for HierStats {
    /// Another handle to the same tree.
    fn clone(&self) -> Self {
        HierStats {
            core: self.core.another(),
        }
    }
}

/// Construction and configuration.
impl HierStats {
    /// Creates a tree holding only its root.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for 0 or more than
    /// [`MAX_SHARDS`](crate::MAX_SHARDS) shards, or a policy knob out of
    /// range (see [`Policy::check`](crate::Policy::check)).
    pub fn new(schema: Schema, config: Config) -> Result<Self, Error> {
        let Config {
            shards,
            policy,
            clock,
            membarrier,
            per_cpu,
        } = config;
        if shards == 0 || shards > MAX_SHARDS {
            return Err(ConfigError::Shards(shards).into());
        }
        // The per-CPU mode's shards are the possible CPUs.
        let (rseq, shards, fallback) = crate::update::writers::choose(per_cpu, membarrier, shards);
        policy.check(shards)?;
        let writers = Writers::new(shards, membarrier, rseq, fallback);
        let core = Core::new(Params::new(schema, policy, shards, clock), writers);
        Ok(HierStats {
            core: CoreRef::new(core),
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.core.params.schema
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.core.params.policy
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.core.params.shards
    }

    /// The flush threshold `T` in pages of update magnitude.
    pub fn threshold_pages(&self) -> u64 {
        self.core.params.threshold
    }

    /// Whether a thread that owns its shard updates with plain loads and
    /// stores: the kernel offers private expedited `membarrier(2)` and the
    /// configuration allows it ([`Config::membarrier`]). Otherwise every
    /// update takes the shared (atomic) path.
    pub fn owner_path(&self) -> bool {
        self.core.writers.ownable() > 0
    }

    /// How implicit updates write, chosen at construction: per CPU in
    /// restartable sequences ([`Config::per_cpu`]), or per thread (the
    /// owner and shared paths), with the reason the per-CPU mode was not
    /// given if it was asked for.
    ///
    /// ```
    /// use hierstat::{Config, HierStats, Mode, Preset, Schema, Unit};
    ///
    /// let mut b = Schema::builder();
    /// let x = b.state("x", Unit::Pages);
    /// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).per_cpu(true))?;
    /// match stats.mode() {
    ///     // Linux with glibc 2.35+ on x86-64 or aarch64: one shard per possible CPU.
    ///     Mode::PerCpu => assert!(stats.shards() >= 1),
    ///     // Elsewhere: today's paths, and why.
    ///     other => println!("{other}"),
    /// }
    /// # Ok::<(), hierstat::Error>(())
    /// ```
    pub fn mode(&self) -> Mode {
        self.core.writers.mode()
    }

    /// The clock's current time in ns.
    pub fn now_ns(&self) -> u64 {
        self.core.params.clock.now_ns()
    }
}

/// Updates.
impl HierStats {
    /// Adds `delta` to a state item, or counts `delta` events, on the current
    /// thread's shard: each thread holds the lowest free seat of a
    /// process-wide pool while it lives, and seat `i` writes shard `i` with
    /// plain stores when `i < shards` (it owns the shard), else shard
    /// `i % shards` with atomic adds, so live threads share a shard only
    /// when there are more of them than shards.
    ///
    /// Every call checks that the group belongs to this tree and the item
    /// to its schema (two compares); a [`Counter`], checked once when it is
    /// made, is the fast path for code that updates the same statistic
    /// over and over.
    ///
    /// A sum that would leave `i64` is not applied: the item saturates (see
    /// [`Bounded::saturated`]).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`] for a group of another tree,
    /// [`Error::ForeignItem`] for an item of another schema,
    /// [`Error::WrongItemKind`] for a per-node item, [`Error::NegativeEvent`].
    /// Nothing is changed on error.
    #[inline(always)]
    pub fn add(&self, group: &Group, item: ItemId, delta: i64) -> Result<(), Error> {
        self.core.check(group)?;
        let (slot, mag) = self.core.params.schema.slot_for_update(item, delta)?;
        self.core.update_here(group, slot, delta, mag);
        Ok(())
    }

    /// Adds `delta` to a per-node state item on NUMA node `numa_node` (and
    /// to its total), on the current thread's shard.
    ///
    /// # Errors
    /// Group and item errors as [`add`](Self::add), [`Error::NodeOutOfRange`].
    pub fn add_node(
        &self,
        group: &Group,
        item: NodeItemId,
        numa_node: usize,
        delta: i64,
    ) -> Result<(), Error> {
        let (g, total, per_node) = self.node_update(group, item, numa_node, delta)?;
        self.core.update_node_here(g, total, per_node, delta);
        Ok(())
    }

    /// What a per-node update of `delta` to `item` of `group` on
    /// `numa_node` writes: the group's state, the total's slot and the
    /// node's, all checked.
    pub(crate) fn node_update<'g>(
        &self,
        group: &'g Group,
        item: NodeItemId,
        numa_node: usize,
        delta: i64,
    ) -> Result<(&'g GroupState, Slot, Slot), Error> {
        let g = self.core.own(group)?;
        let (total, per_node) = self
            .core
            .params
            .schema
            .node_slots_for_update(item, numa_node, delta)?;
        Ok((g, total, per_node))
    }

    /// Binds `item` of `group` into a [`Counter`], the fast path for code
    /// that updates the same statistic over and over.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`],
    /// [`Error::WrongItemKind`] for a per-node item.
    pub fn counter(&self, group: &Group, item: ItemId) -> Result<Counter, Error> {
        self.core.check(group)?;
        let (slot, kind) = self.core.params.schema.slot_and_kind(item)?;
        Ok(Counter::new(self.core.share(), group.clone(), slot, kind))
    }
}

/// Reads. They never flush: they return the last flushed aggregate with one
/// load. Flush first (or use the bound) when freshness matters. Signed
/// state aggregates can be transiently negative (an increment on one shard
/// not yet flushed while its decrement on another shard is): state reads
/// clamp them to 0, as every kernel reader does.
impl HierStats {
    /// Hierarchical value of an item (the group's whole subtree), as of the
    /// last flush that covered it.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    #[inline(always)]
    pub fn read(&self, group: &Group, item: ItemId) -> Result<u64, Error> {
        self.core.check(group)?;
        let (slot, kind) = self.core.params.schema.slot_and_kind(item)?;
        Ok(crate::read::clamp(kind, group.agg_relaxed(slot)))
    }

    /// Hierarchical value without clamping (may be transiently negative).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn read_signed(&self, group: &Group, item: ItemId) -> Result<i64, Error> {
        self.core.check(group)?;
        let slot = self.core.params.schema.slot_of(item)?;
        Ok(group.agg_relaxed(slot))
    }

    /// Local value: this group's own updates only, as of the last flush.
    /// A descendant's saturation does not affect it; if the group's own
    /// updates of the item left `i64`, it reads the limit they left at
    /// (`i64::MAX`, or for a state item below `i64::MIN`, 0), as
    /// [`read`](Self::read) does for a saturated subtree (see
    /// [`Bounded::saturated`]).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn read_local(&self, group: &Group, item: ItemId) -> Result<u64, Error> {
        let g = self.core.own(group)?;
        let (slot, kind) = self.core.params.schema.slot_and_kind(item)?;
        Ok(crate::read::clamp(
            kind,
            self.core.read_local(g, slot.get()),
        ))
    }

    /// Hierarchical value of a per-node item on NUMA node `numa_node`;
    /// `None` reads the total over nodes.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`],
    /// [`Error::NodeOutOfRange`].
    pub fn read_node(
        &self,
        group: &Group,
        item: NodeItemId,
        numa_node: Option<usize>,
    ) -> Result<u64, Error> {
        let g = self.core.own(group)?;
        let slot = self.core.params.schema.node_read_slot(item, numa_node)?;
        Ok(g.read_agg(slot.get()).max(0) as u64)
    }

    /// Local value of a per-node item on NUMA node `numa_node` (`None`:
    /// total).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`],
    /// [`Error::NodeOutOfRange`].
    pub fn read_node_local(
        &self,
        group: &Group,
        item: NodeItemId,
        numa_node: Option<usize>,
    ) -> Result<u64, Error> {
        let g = self.core.own(group)?;
        let slot = self.core.params.schema.node_read_slot(item, numa_node)?;
        Ok(self.core.read_local(g, slot.get()).max(0) as u64)
    }

    /// Hierarchical value with its error bound (see [`Bounded`] for the
    /// contract).
    ///
    /// The bound, in pages of update magnitude converted to the item's unit,
    /// by the policy's threshold accounting:
    /// * per group, kernel-exact (6.8): `count(g) + in_flight(g) + lanes ×
    ///   (batch − 1)` (the folded count, what a running flush took from the
    ///   group's residues and has not landed, and what each shard's
    ///   residues can hold; `lanes` is the number of shards, or more if some
    ///   shard was written both by its owner and through the shared path,
    ///   each keeping a residue);
    /// * per group, folded (ours): `count(g) + reserved(g)`;
    /// * global (5.15): `count + in_flight + lanes × (batch − 1) × groups`,
    ///   where groups counts every group whose rows still exist, removed
    ///   ones included (a removed group kept alive by a handle still takes
    ///   updates);
    /// * none once the group (or the tree, for a global threshold) is above
    ///   the threshold `T`;
    /// * none for 5.13 (no accounting);
    /// * with an early break (6.17's upstream one, or the margin rule),
    ///   none at any group that has ever had a child: once a child's count is
    ///   above the break level, walks stop at the child and the parent's
    ///   count stops growing while its unflushed total grows without limit
    ///   (the kernel has this gap too). A group that never had a child is
    ///   bounded as in 6.8, except after a flush that reset its count while
    ///   it was above the break level (updates skipped during that flush
    ///   are in no count): none until a flush resets it from below;
    /// * none for a saturated item ([`Bounded::saturated`]).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn read_bounded(&self, group: &Group, item: ItemId) -> Result<Bounded, Error> {
        let g = self.core.own(group)?;
        let (slot, kind) = self.core.params.schema.slot_and_kind(item)?;
        Ok(self.core.read_bounded(g, slot, kind))
    }

    /// The current error bound of `group`'s aggregates in pages (see
    /// [`read_bounded`](Self::read_bounded)).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn error_bound_pages(&self, group: &Group) -> Result<Option<u64>, Error> {
        let g = self.core.own(group)?;
        Ok(self.core.error_bound(g))
    }
}

/// Reads with an error budget: they flush what the budget needs, and only
/// that (see [`read_within`](HierStats::read_within)).
impl HierStats {
    /// Hierarchical value of `item` (an [`ItemId`], or a [`NodeItemId`]'s
    /// total) with an error bound within `tolerance`: if the group's bound
    /// already fits, a few loads; else a *partial* flush of the group,
    /// which leaves unflushed the child subtrees (the largest bounds opened
    /// first) whose bounds together fit the budget, then, if that was not
    /// enough, the whole subtree. Never more work than
    /// [`flush_forced`](Self::flush_forced) of the group, and with
    /// [`Tolerance::EXACT`] the same flush and an exact value (bound 0, up
    /// to updates racing the read).
    ///
    /// The result's `read` obeys [`Bounded`]'s contract at every instant,
    /// as [`read_bounded`](Self::read_bounded)'s; `met` says that its bound
    /// fits the budget, which it always does unless the item is saturated
    /// ([`Bounded::saturated`]: no bound). Waits for a conflicting flush,
    /// as a forced flush does; [`read_many_within`](Self::read_many_within)
    /// can return without waiting instead. The algorithm and why its bound
    /// holds are in the `within` module's source docs.
    ///
    /// ```
    /// use hierstat::{Config, HierStats, Preset, Schema, Tolerance, Unit, WithinFlush};
    ///
    /// let mut b = Schema::builder();
    /// let anon = b.state("anon", Unit::Pages);
    /// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(2))?;
    /// let web = stats.create(&stats.root(), "web")?;
    /// let (api, db) = (stats.create(&web, "api")?, stats.create(&web, "db")?);
    /// stats.add(&api, anon, 1_000_000)?;
    /// // The first read knows no value to take 1% of: it flushes /web whole.
    /// let r = stats.read_within(&web, anon, Tolerance::Relative(0.01))?;
    /// assert_eq!((r.read.value, r.read.bound, r.flush), (1_000_000, Some(0), WithinFlush::Full));
    /// stats.add(&api, anon, 100_000)?;
    /// stats.add(&db, anon, 10)?;
    /// // 1% of /web: /api's 100,000 pages must be flushed, /db's 10 need not.
    /// let r = stats.read_within(&web, anon, Tolerance::Relative(0.01))?;
    /// assert!(r.met && r.read.bound.unwrap() <= r.budget);
    /// assert!(matches!(r.flush, WithinFlush::Partial { left: 1, .. }));
    /// assert!(r.read.value >= 1_100_000);
    /// // Exact: the whole subtree, bound 0.
    /// let r = stats.read_within(&web, anon, Tolerance::EXACT)?;
    /// assert_eq!((r.read.value, r.read.bound, r.flush), (1_100_010, Some(0), WithinFlush::Full));
    /// # Ok::<(), hierstat::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`], [`Error::WrongItemKind`],
    /// [`Error::NodeOutOfRange`], [`Error::InvalidTolerance`].
    pub fn read_within(
        &self,
        group: &Group,
        item: impl Into<ReadItem>,
        tolerance: Tolerance,
    ) -> Result<Within, Error> {
        let g = self.core.own(group)?;
        let req = Req::new(&self.core.params.schema, item.into(), tolerance)?;
        let mut out = Vec::with_capacity(1);
        self.core
            .read_within(g, &[req], OnBusy::Wait, &mut out, &mut ());
        Ok(out[0])
    }

    /// [`read_within`](Self::read_within) of several items of one group
    /// (a `memory.stat` read), each with its own tolerance, with one
    /// flush planned for the tightest budget (every item of a group shares
    /// its bound); `out` receives one [`Within`] per read, in order. With
    /// [`OnBusy::ReturnBest`] a read that needs a flush while a
    /// conflicting one runs returns at once with the bounds as they are
    /// ([`WithinFlush::Busy`]). Returns what it flushed.
    ///
    /// # Errors
    /// As [`read_within`](Self::read_within), for the first bad item; then
    /// nothing is read or flushed.
    pub fn read_many_within(
        &self,
        group: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        out: &mut Vec<Within>,
    ) -> Result<WithinFlush, Error> {
        self.read_many_within_with(group, reads, on_busy, out, &mut ())
    }

    /// [`read_many_within`](Self::read_many_within) of every live group of
    /// `root`'s subtree, each with the same tolerances (each against its
    /// own values): a scrape. One partial flush of `root` serves every
    /// group: it leaves the subtrees whose groups all fit their budgets
    /// (and whose bounds together fit each budget above them), so a scrape
    /// flushes only what some group's budget needs, and scans the shards
    /// once instead of once per group; a group whose bound still does not
    /// fit is then read alone. `visit` gets each group, parents first
    /// (children by name, as [`groups`](Self::groups)), with one
    /// [`Within`] per read. Returns what the shared flush did.
    ///
    /// ```
    /// use hierstat::{Config, HierStats, OnBusy, Preset, ReadItem, Schema, Tolerance, Unit};
    ///
    /// let mut b = Schema::builder();
    /// let anon = b.state("anon", Unit::Pages);
    /// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(2))?;
    /// let web = stats.create(&stats.root(), "web")?;
    /// stats.add(&web, anon, 5_000)?;
    /// let one_percent = [(ReadItem::Item(anon), Tolerance::Relative(0.01))];
    /// let mut seen = Vec::new();
    /// stats.read_subtree_within(&stats.root(), &one_percent, OnBusy::Wait, |g, w| {
    ///     seen.push((g.path().to_string(), w[0].read.value, w[0].met));
    /// })?;
    /// assert_eq!(seen, [("/".to_string(), 5_000, true), ("/web".to_string(), 5_000, true)]);
    /// # Ok::<(), hierstat::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`read_many_within`](Self::read_many_within).
    pub fn read_subtree_within(
        &self,
        root: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        visit: impl FnMut(&Group, &[Within]),
    ) -> Result<WithinFlush, Error> {
        self.read_subtree_within_with(root, reads, on_busy, visit, &mut ())
    }

    /// [`read_subtree_within`](Self::read_subtree_within) reporting work.
    pub(crate) fn read_subtree_within_with<W: crate::work::WorkSink>(
        &self,
        root: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        mut visit: impl FnMut(&Group, &[Within]),
        work: &mut W,
    ) -> Result<WithinFlush, Error> {
        let g = self.core.own(root)?;
        let reqs = self.requests(reads)?;
        Ok(self.core.read_subtree_within(
            g,
            &reqs,
            on_busy,
            &mut |state, w| visit(&Group::new(state.clone()), w),
            work,
        ))
    }

    /// [`read_many_within`](Self::read_many_within) reporting work (the
    /// simulator's form, see [`Simulator`](crate::sim::Simulator)).
    pub(crate) fn read_many_within_with<W: crate::work::WorkSink>(
        &self,
        group: &Group,
        reads: &[(ReadItem, Tolerance)],
        on_busy: OnBusy,
        out: &mut Vec<Within>,
        work: &mut W,
    ) -> Result<WithinFlush, Error> {
        let g = self.core.own(group)?;
        let reqs = self.requests(reads)?;
        Ok(self.core.read_within(g, &reqs, on_busy, out, work))
    }

    /// The requests of a tolerance read, each item checked against the
    /// schema.
    fn requests(&self, reads: &[(ReadItem, Tolerance)]) -> Result<Vec<Req>, Error> {
        let schema = &self.core.params.schema;
        reads
            .iter()
            .map(|&(item, t)| Req::new(schema, item, t))
            .collect()
    }
}

/// Flushes. Every flush entry point fails only for a group of another tree
/// ([`Error::ForeignGroup`]), and then does nothing.
impl HierStats {
    /// The policy's read-side flush of `group` (threshold-guarded).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_kind(group, FlushKind::Read)
    }

    /// Flushes `group`'s subtree regardless of thresholds; waits for a
    /// running flush even under the skip policy.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush_forced(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_kind(group, FlushKind::Forced)
    }

    /// The ratelimited flush (see [`FlushKind::Ratelimited`]).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush_ratelimited(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_kind(group, FlushKind::Ratelimited)
    }

    /// The hot-path (refault/reclaim) flush of the policy.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn flush_hot_path(&self, group: &Group) -> Result<FlushOutcome, Error> {
        self.flush_kind(group, FlushKind::HotPath)
    }

    fn flush_kind(&self, group: &Group, kind: FlushKind) -> Result<FlushOutcome, Error> {
        let g = self.core.own(group)?;
        Ok(self.core.flush(g, kind, &mut ()))
    }

    /// What [`HierStats::flush_hot_path`] would do for `group` now, without
    /// doing it: the policy's hot-path rule applied to the group's
    /// threshold, the ratelimit and whether a background flusher runs.
    ///
    /// ```
    /// use hierstat::{Config, FlushScope, HierStats, HotPathDecision, Preset, Schema, Unit};
    ///
    /// let mut b = Schema::builder();
    /// let anon = b.state("anon", Unit::Pages);
    /// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat))?;
    /// let g = stats.create(&stats.root(), "g")?;
    /// assert_eq!(stats.hot_path_decision(&g)?, HotPathDecision::NotNeeded);
    /// stats.add(&g, anon, 1 << 20)?;
    /// // Async hot path, but no background flusher: flush synchronously.
    /// assert_eq!(stats.hot_path_decision(&g)?, HotPathDecision::Flush(FlushScope::Subtree));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn hot_path_decision(&self, group: &Group) -> Result<HotPathDecision, Error> {
        let g = self.core.own(group)?;
        Ok(self
            .core
            .hot_path_decision(g, self.core.requests.flusher_running()))
    }

    /// Whether a threshold-guarded read flush of `group` would flush.
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn needs_flush(&self, group: &Group) -> Result<bool, Error> {
        Ok(self.core.needs_flush(self.core.own(group)?))
    }

    /// Asks the background flusher to flush the root now; returns at once.
    pub fn request_async_flush(&self) {
        self.core.requests.request();
    }

    /// Clock time (ns) at which the last root flush started.
    pub fn last_root_flush_ns(&self) -> u64 {
        self.core.flushes.last_root_flush_ns()
    }

    /// Cumulative flush statistics.
    pub fn flush_stats(&self) -> FlushStats {
        self.core.flushes.stats()
    }

    /// Starts a background thread that force-flushes the root every
    /// `period` (the policy's `period_ns` is the kernel's 2 s) and serves
    /// async flush requests. The thread uses the host clock for sleeping;
    /// lags are measured with the tree's clock.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] ([`ConfigError::FlusherPeriod`]) for a zero
    /// period (it would flush back to back) or one whose nanoseconds do not
    /// fit 64 bits (about 584 years); [`Error::Spawn`] if the OS cannot
    /// start the thread.
    #[cfg(not(loom))]
    pub fn start_flusher(
        &self,
        period: std::time::Duration,
    ) -> Result<crate::flusher::BackgroundFlusher, Error> {
        crate::flusher::start(&self.core.share(), period)
    }
}

/// The tree: creation, removal, lookup, iteration, memory.
impl HierStats {
    /// The root group.
    pub fn root(&self) -> Group {
        Group::new(self.core.groups.root().clone())
    }

    /// Creates a group named `name` under `parent`.
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::DuplicateName`],
    /// [`Error::GroupRemoved`] if the parent was removed,
    /// [`Error::TooManyGroups`], [`Error::ForeignGroup`].
    pub fn create(&self, parent: &Group, name: &str) -> Result<Group, Error> {
        let p = self.core.own(parent)?;
        self.core.create(p, name).map(Group::new)
    }

    /// Removes a group. Its unflushed deltas are flushed into the parent
    /// first, so ancestors lose nothing and totals never go backwards. The
    /// group's handles stay valid (and keep counting: late updates still
    /// reach the ancestors); its memory is recycled once no handle is left.
    ///
    /// # Errors
    /// [`Error::RemoveRoot`], [`Error::NotEmpty`], [`Error::GroupRemoved`],
    /// [`Error::ForeignGroup`].
    pub fn remove(&self, group: Group) -> Result<(), Error> {
        self.core.own(&group)?;
        self.core.remove(group.state)
    }

    /// Recycles the rows of removed groups that no handle references any
    /// more and that no shard has queued or unflushed. Runs after each
    /// removal and each root flush; returns how many groups were recycled.
    pub fn reap(&self) -> usize {
        self.core.reap()
    }

    /// Looks up a group by its canonical path: `/` for the root, else `/`
    /// followed by names joined with single slashes (`/a`, `/a/b`), exactly
    /// as [`Group::path`] spells it.
    ///
    /// # Errors
    /// [`Error::InvalidName`] for anything else — no leading slash, an
    /// empty component (`//a`, `/a/`, `/a//b`), `.` or `..` — and
    /// [`Error::UnknownGroup`]. Paths are not canonicalised: one group has
    /// one path.
    pub fn lookup(&self, path: &str) -> Result<Group, Error> {
        self.core.lookup(path).map(Group::new)
    }

    /// The live children of a group, by name (none for a removed group).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    pub fn children(&self, group: &Group) -> Result<Vec<Group>, Error> {
        let g = self.core.own(group)?;
        Ok(self.core.children(g).into_iter().map(Group::new).collect())
    }

    /// Every live group, parents before children (pre-order, children by name).
    pub fn groups(&self) -> Vec<Group> {
        self.core.all_groups().into_iter().map(Group::new).collect()
    }

    /// Number of live groups, root included.
    pub fn len(&self) -> usize {
        self.core.groups.live() + 1
    }

    /// Always false: a tree has at least its root.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Removed groups whose rows are not recycled yet.
    pub fn zombies(&self) -> usize {
        self.core.groups.zombies()
    }

    /// Bytes of per-shard counter memory allocated (the rows of all groups,
    /// see [`memory_bytes`](Self::memory_bytes)).
    pub fn counter_bytes(&self) -> usize {
        self.core.counter_bytes()
    }

    /// Total bytes the tree holds: counter rows, group states, aggregate
    /// arrays, names and tables (excluding allocator overhead).
    pub fn memory_bytes(&self) -> usize {
        self.core.memory_bytes()
    }
}
