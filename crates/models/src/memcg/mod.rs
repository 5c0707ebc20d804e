//! Memory cgroups on top of hierstat.
//!
//! * [`schema`]: the cgroup v2 `memory.stat` items as a hierstat schema
//!   with per-node (lruvec) items;
//! * [`counter`]: a page counter per group (`memory.current`, `max`,
//!   `high`, `low`, failcnt);
//! * [`stock`]: the per-CPU charge stock of BATCH pages;
//! * [`charge`]: hierarchical charging: stock, counters of every ancestor,
//!   reclaim from the subtree over its limit, `memory.high` reclaim, OOM;
//! * [`events`]: `memory.events` (low, high, max, oom, oom_kill);
//! * [`stat_file`]: `memory.stat` and `memory.numa_stat` text in the
//!   kernel's format.
//!
//! Who holds the pages is not this module's business: a charge that hits a
//! limit asks a [`Reclaim`] implementation (the LRU lists of
//! [`crate::workingset`], or [`NoReclaim`]) to free pages of the groups in
//! the subtree over its limit.
//!
//! ```
//! use models::memcg::{Charge, MemcgConfig, MemcgTree, NoReclaim};
//!
//! let mut t = MemcgTree::new(MemcgConfig::new(4, 1))?;
//! let slice = t.create(t.root(), "system.slice")?;
//! let svc = t.create(slice, "nginx.service")?;
//! t.charge(0, svc, 0, Charge::Anon, 256, &mut NoReclaim)?;
//! let stat = t.memory_stat(slice)?;
//! assert!(stat.starts_with("anon 1048576\n"));
//! assert_eq!(t.memory_current(svc)?, 256 * 4096);
//! # Ok::<(), models::memcg::MemcgError>(())
//! ```

pub mod charge;
pub mod counter;
mod error;
pub mod events;
pub mod schema;
pub mod stat_file;
pub mod stock;

pub use charge::{Charge, NoReclaim, Reclaim};
pub use counter::{PageCounter, UNLIMITED};
pub use error::MemcgError;
pub use events::{EventCounts, MemoryEvent};
pub use schema::{Class, MemcgSchema, Slot, Stat};
pub use stock::Stocks;

use hierstat::{
    Config, Group, HierStats, ManualClock, Policy, Preset, Shard, WorkCounters, WorkSink, PAGE_SIZE,
};
use std::collections::BTreeSet;
use std::fmt;

/// A memory cgroup's 16-bit id (`mem_cgroup_id`), as stored in shadow
/// entries. Ids of removed groups are recycled, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemcgId(pub u16);

impl fmt::Display for MemcgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Configuration of a [`MemcgTree`].
#[derive(Debug, Clone)]
pub struct MemcgConfig {
    /// CPUs: engine shards and charge stocks.
    pub cpus: usize,
    /// NUMA nodes of the per-node items.
    pub nodes: usize,
    /// The stats flush policy.
    pub preset: Preset,
    /// A custom policy replacing the preset's knobs (experiments).
    pub policy: Option<Policy>,
    /// Charge batch in pages (`MEMCG_CHARGE_BATCH`); `None`: the preset's
    /// batch (32 before 6.1, 64 after).
    pub batch: Option<u64>,
    /// Swap space in pages (0: no swap).
    pub swap_pages: u64,
    /// Clock of the engine (virtual time); `None`: the host's monotonic clock.
    pub clock: Option<ManualClock>,
}

impl MemcgConfig {
    /// `cpus` CPUs, `nodes` nodes, the `linux-6.8` preset, no swap.
    pub fn new(cpus: usize, nodes: usize) -> Self {
        MemcgConfig {
            cpus,
            nodes,
            preset: Preset::Linux6_8,
            policy: None,
            batch: None,
            swap_pages: 0,
            clock: None,
        }
    }

    /// Sets the flush policy.
    pub fn preset(mut self, preset: Preset) -> Self {
        self.preset = preset;
        self
    }

    /// Replaces the preset's knobs by a custom policy.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Sets the swap space in pages.
    pub fn swap_pages(mut self, pages: u64) -> Self {
        self.swap_pages = pages;
        self
    }

    /// Uses a virtual clock.
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Sets the charge batch.
    pub fn batch(mut self, pages: u64) -> Self {
        self.batch = Some(pages);
        self
    }
}

/// One group.
#[derive(Debug)]
pub(crate) struct MemcgNode {
    pub(crate) group: Group,
    pub(crate) parent: Option<MemcgId>,
    pub(crate) children: Vec<MemcgId>,
    pub(crate) memory: PageCounter,
    pub(crate) swap: PageCounter,
    pub(crate) events: EventCounts,
    pub(crate) events_local: EventCounts,
}

/// A tree of memory cgroups: statistics in a hierstat tree, page counters,
/// charge stocks, swap accounting and `memory.events`.
#[derive(Debug)]
pub struct MemcgTree {
    stats: HierStats,
    schema: MemcgSchema,
    /// Indexed by id; `None` for free ids (index 0 is never used).
    nodes: Vec<Option<MemcgNode>>,
    free_ids: BTreeSet<u16>,
    pub(crate) stocks: Stocks,
    swap_total: u64,
    swap_used: u64,
    cpus: usize,
    nr_nodes: usize,
    pub(crate) work: WorkCounters,
}

/// The root's id (id 0 means "no memcg" in shadow entries).
pub const ROOT_ID: MemcgId = MemcgId(1);

impl MemcgTree {
    /// A tree holding only the root.
    ///
    /// # Errors
    /// Engine errors for a bad CPU or node count.
    pub fn new(config: MemcgConfig) -> Result<Self, MemcgError> {
        let schema = MemcgSchema::new(config.nodes)?;
        let policy = config.policy.unwrap_or_else(|| config.preset.policy());
        let mut hc = Config::with_policy(policy).shards(config.cpus);
        if let Some(c) = config.clock {
            hc = hc.clock(c);
        }
        let stats = HierStats::new(schema.schema().clone(), hc)?;
        let batch = config.batch.unwrap_or(u64::from(policy.batch));
        let root = MemcgNode {
            group: stats.root(),
            parent: None,
            children: Vec::new(),
            memory: PageCounter::new(),
            swap: PageCounter::new(),
            events: EventCounts::default(),
            events_local: EventCounts::default(),
        };
        Ok(MemcgTree {
            stats,
            schema,
            nodes: vec![None, Some(root)],
            free_ids: BTreeSet::new(),
            stocks: Stocks::new(config.cpus, batch.max(1)),
            swap_total: config.swap_pages,
            swap_used: 0,
            cpus: config.cpus,
            nr_nodes: config.nodes.max(1),
            work: WorkCounters::default(),
        })
    }

    /// The root group.
    pub fn root(&self) -> MemcgId {
        ROOT_ID
    }

    /// Number of CPUs.
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// Number of NUMA nodes.
    pub fn nr_nodes(&self) -> usize {
        self.nr_nodes
    }

    /// The charge batch in pages.
    pub fn batch(&self) -> u64 {
        self.stocks.batch()
    }

    /// The statistics engine.
    pub fn stats(&self) -> &HierStats {
        &self.stats
    }

    /// The schema.
    pub fn schema(&self) -> &MemcgSchema {
        &self.schema
    }

    pub(crate) fn node(&self, id: MemcgId) -> Result<&MemcgNode, MemcgError> {
        self.nodes
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(MemcgError::UnknownMemcg(id))
    }

    pub(crate) fn node_mut(&mut self, id: MemcgId) -> Result<&mut MemcgNode, MemcgError> {
        self.nodes
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(MemcgError::UnknownMemcg(id))
    }

    pub(crate) fn check_cpu(&self, cpu: usize) -> Result<(), MemcgError> {
        if cpu < self.cpus {
            Ok(())
        } else {
            Err(MemcgError::CpuOutOfRange {
                cpu,
                cpus: self.cpus,
            })
        }
    }

    /// Whether `id` names a live group.
    pub fn exists(&self, id: MemcgId) -> bool {
        self.node(id).is_ok()
    }

    /// The engine group of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn group(&self, id: MemcgId) -> Result<&Group, MemcgError> {
        Ok(&self.node(id)?.group)
    }

    /// The parent of `id` (`None` for the root).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn parent(&self, id: MemcgId) -> Result<Option<MemcgId>, MemcgError> {
        Ok(self.node(id)?.parent)
    }

    /// The children of `id`, in creation order.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn children(&self, id: MemcgId) -> Result<&[MemcgId], MemcgError> {
        Ok(&self.node(id)?.children)
    }

    /// The group's path (`/`, `/system.slice`, ...).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn path(&self, id: MemcgId) -> Result<&str, MemcgError> {
        Ok(self.node(id)?.group.path())
    }

    /// `id` and its ancestors, from `id` up to the root.
    pub fn ancestors(&self, id: MemcgId) -> impl Iterator<Item = MemcgId> + '_ {
        std::iter::successors(Some(id), move |&i| self.node(i).ok().and_then(|n| n.parent))
            .filter(move |&i| self.exists(i))
    }

    /// Whether `a` is `b` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, a: MemcgId, b: MemcgId) -> bool {
        self.ancestors(b).any(|x| x == a)
    }

    /// `id`'s subtree in preorder (parents before children).
    pub fn subtree(&self, id: MemcgId) -> Vec<MemcgId> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(i) = stack.pop() {
            if let Ok(n) = self.node(i) {
                out.push(i);
                stack.extend(n.children.iter().rev());
            }
        }
        out
    }

    /// Every live group in preorder.
    pub fn ids(&self) -> Vec<MemcgId> {
        self.subtree(ROOT_ID)
    }

    /// Looks a group up by path.
    ///
    /// # Errors
    /// Engine errors for an unknown or malformed path.
    pub fn lookup(&self, path: &str) -> Result<MemcgId, MemcgError> {
        let g = self.stats.lookup(path)?;
        self.ids()
            .into_iter()
            .find(|&i| {
                self.nodes[i.0 as usize]
                    .as_ref()
                    .is_some_and(|n| n.group.same(&g))
            })
            .ok_or_else(|| MemcgError::Engine(hierstat::Error::UnknownGroup(path.to_string())))
    }

    /// Creates a group `name` under `parent`; it gets the lowest free id.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`], [`MemcgError::TooManyGroups`], engine
    /// errors for a bad or duplicate name.
    pub fn create(&mut self, parent: MemcgId, name: &str) -> Result<MemcgId, MemcgError> {
        let pg = self.node(parent)?.group.clone();
        let id = match self.free_ids.first().copied() {
            Some(i) => i,
            None if self.nodes.len() <= u16::MAX as usize => self.nodes.len() as u16,
            None => return Err(MemcgError::TooManyGroups),
        };
        let group = self.stats.create(&pg, name)?;
        self.free_ids.remove(&id);
        let id = MemcgId(id);
        if self.nodes.len() <= id.0 as usize {
            self.nodes.resize_with(id.0 as usize + 1, || None);
        }
        self.nodes[id.0 as usize] = Some(MemcgNode {
            group,
            parent: Some(parent),
            children: Vec::new(),
            memory: PageCounter::new(),
            swap: PageCounter::new(),
            events: EventCounts::default(),
            events_local: EventCounts::default(),
        });
        self.node_mut(parent)?.children.push(id);
        Ok(id)
    }

    /// Removes a group without children. Its charge stocks are drained;
    /// pages still charged to it stay charged to its ancestors (whose
    /// counters include them) and its statistics are folded into the parent
    /// (nothing lost). Its id becomes free for reuse: stale shadow entries
    /// may then name another group, as in the kernel.
    ///
    /// Owners of pages charged to the group must move them to the parent
    /// first (see `workingset::Lru::remove_memcg`); later uncharges then go
    /// to the parent.
    ///
    /// # Errors
    /// [`MemcgError::RemoveRoot`], [`MemcgError::NotEmpty`],
    /// [`MemcgError::UnknownMemcg`].
    pub fn remove(&mut self, id: MemcgId) -> Result<(), MemcgError> {
        let n = self.node(id)?;
        let Some(parent) = n.parent else {
            return Err(MemcgError::RemoveRoot);
        };
        if !n.children.is_empty() {
            return Err(MemcgError::NotEmpty(id));
        }
        for d in self.stocks.drain_where(|m| m == id) {
            self.counters_uncharge(d.memcg, d.nr_pages)?;
        }
        // The group's remaining usage becomes the parent's own.
        let n = self.nodes[id.0 as usize]
            .take()
            .ok_or(MemcgError::UnknownMemcg(id))?;
        self.free_ids.insert(id.0);
        let p = self.node_mut(parent)?;
        p.children.retain(|&c| c != id);
        self.stats.remove(n.group)?;
        Ok(())
    }

    /// Records a statistics update of `delta` (in the item's unit) on
    /// `cpu`'s shard; `node` is used by per-node items.
    ///
    /// # Errors
    /// Unknown group, CPU or node.
    pub fn mod_stat(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        stat: Stat,
        delta: i64,
    ) -> Result<(), MemcgError> {
        if delta == 0 {
            return Ok(());
        }
        self.check_cpu(cpu)?;
        let n = self.nodes.get(id.0 as usize).and_then(Option::as_ref);
        let g = &n.ok_or(MemcgError::UnknownMemcg(id))?.group;
        match self.schema.slot(stat) {
            Slot::Node(item) => {
                self.stats
                    .add_node_with(Shard(cpu), g, item, node, delta, &mut self.work)?
            }
            Slot::Plain(item) => self
                .stats
                .add_with(Shard(cpu), g, item, delta, &mut self.work)?,
        }
        Ok(())
    }

    /// Engine work done by statistics updates since the last call (for the
    /// simulator's cost model); resets it.
    pub fn take_work(&mut self) -> WorkCounters {
        std::mem::take(&mut self.work)
    }

    /// Adds engine work done on behalf of the tree (flushes made by callers).
    pub fn sink(&mut self) -> &mut impl WorkSink {
        &mut self.work
    }

    /// The page counter of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory(&self, id: MemcgId) -> Result<&PageCounter, MemcgError> {
        Ok(&self.node(id)?.memory)
    }

    /// `memory.current` in bytes.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_current(&self, id: MemcgId) -> Result<u64, MemcgError> {
        Ok(self.node(id)?.memory.usage() * PAGE_SIZE)
    }

    /// Sets `memory.max` in pages. Usage above it is reclaimed by the next
    /// charge (see [`MemcgTree::try_charge`]).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_max(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_max(pages);
        Ok(())
    }

    /// Sets `memory.high` in pages.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_high(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_high(pages);
        Ok(())
    }

    /// Sets `memory.low` in pages.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_low(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_low(pages);
        Ok(())
    }

    /// Sets `memory.swap.max` in pages.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_swap_max(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.swap.set_max(pages);
        Ok(())
    }

    /// Swap pages `id` may still use: the free swap space, capped by
    /// `swap.max − swap.current` of the group and every ancestor below the
    /// root (`mem_cgroup_get_nr_swap_pages`).
    pub fn nr_swap_pages(&self, id: MemcgId) -> u64 {
        let mut n = self.swap_total.saturating_sub(self.swap_used);
        for a in self.ancestors(id) {
            if a == ROOT_ID {
                break;
            }
            if let Ok(node) = self.node(a) {
                n = n.min(node.swap.margin());
            }
        }
        n
    }

    /// Charges `nr` swap pages to `id` and its ancestors (an anonymous page
    /// swapped out); `false` if the space or a `swap.max` does not allow it.
    pub fn try_charge_swap(&mut self, id: MemcgId, nr: u64) -> bool {
        if self.nr_swap_pages(id) < nr {
            return false;
        }
        let chain: Vec<_> = self.ancestors(id).collect();
        for a in chain {
            if let Ok(n) = self.node_mut(a) {
                n.swap.force_charge(nr);
            }
        }
        self.swap_used += nr;
        true
    }

    /// Releases `nr` swap pages of `id` (a page swapped in or freed).
    ///
    /// # Errors
    /// [`MemcgError::Underflow`] if `id` has fewer swap pages charged.
    pub fn uncharge_swap(&mut self, id: MemcgId, nr: u64) -> Result<(), MemcgError> {
        let usage = self.node(id)?.swap.usage();
        if usage < nr {
            return Err(MemcgError::Underflow {
                memcg: id,
                nr,
                usage,
            });
        }
        let chain: Vec<_> = self.ancestors(id).collect();
        for a in chain {
            if let Ok(n) = self.node_mut(a) {
                n.swap.uncharge(nr);
            }
        }
        self.swap_used -= nr;
        Ok(())
    }

    /// Swap pages charged to `id` (`memory.swap.current` / `PAGE_SIZE`).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn swap_current(&self, id: MemcgId) -> Result<u64, MemcgError> {
        Ok(self.node(id)?.swap.usage())
    }

    /// Counts `event` on `id` (local) and on `id` and its ancestors below the
    /// root (hierarchical).
    pub fn record_event(&mut self, id: MemcgId, event: MemoryEvent) {
        if let Ok(n) = self.node_mut(id) {
            n.events_local.inc(event);
        }
        let chain: Vec<_> = self.ancestors(id).collect();
        for a in chain {
            if a == ROOT_ID && a != id {
                break;
            }
            if let Ok(n) = self.node_mut(a) {
                n.events.inc(event);
            }
        }
    }

    /// Records that the OOM killer killed a task of `id` (`oom_kill`).
    pub fn oom_kill(&mut self, id: MemcgId) {
        self.record_event(id, MemoryEvent::OomKill);
    }

    /// `memory.events` counts of `id` (hierarchical).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn events(&self, id: MemcgId) -> Result<EventCounts, MemcgError> {
        Ok(self.node(id)?.events)
    }

    /// `memory.events.local` counts of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn events_local(&self, id: MemcgId) -> Result<EventCounts, MemcgError> {
        Ok(self.node(id)?.events_local)
    }

    /// Pages held in charge stocks for `id`.
    pub fn stock_pages(&self, id: MemcgId) -> u64 {
        self.stocks.held(id)
    }
}
