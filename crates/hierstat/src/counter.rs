//! Pre-bound counters: a (group, item) pair resolved once.

use crate::error::Error;
use crate::node::{Group, Node};
use crate::schema::{ItemId, ItemKind, Unit};
use crate::stats::HierStats;
use crate::sync::Arc;

/// A (group, item) pair resolved once, for code that updates the same
/// statistic over and over (a request counter, a per-tenant gauge).
///
/// [`HierStats::add`] checks on every call that the group belongs to the
/// tree and the item to the schema; a `Counter` was checked when
/// [`HierStats::counter`] made it, so its [`add`](Counter::add) goes
/// straight to the update path: the owner's plain loads and stores when the
/// calling thread owns its shard, the shared atomic path otherwise. It
/// keeps the group alive (like a [`Group`] handle, it keeps counting after
/// the group is removed).
///
/// ```
/// use hierstat::{Config, HierStats, Preset, Schema, Unit};
///
/// let mut b = Schema::builder();
/// let requests = b.event("requests", Unit::Count);
/// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat))?;
/// let web = stats.create(&stats.root(), "web")?;
/// let hits = stats.counter(&web, requests)?;
/// for _ in 0..1000 {
///     hits.add(1)?;
/// }
/// stats.flush_forced(&stats.root())?;
/// assert_eq!(stats.read(&stats.root(), requests)?, 1000);
/// # Ok::<(), hierstat::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Counter {
    stats: HierStats,
    node: Arc<Node>,
    slot: usize,
    unit: Unit,
    event: bool,
}

impl HierStats {
    /// Binds `item` of `group` into a [`Counter`].
    ///
    /// # Errors
    /// [`Error::ForeignGroup`], [`Error::ForeignItem`],
    /// [`Error::WrongItemKind`] for a per-node item.
    pub fn counter(&self, group: &Group, item: ItemId) -> Result<Counter, Error> {
        let node = self.core.own(group)?.clone();
        let (slot, kind) = self.core.schema.slot_and_kind(item)?;
        Ok(Counter {
            stats: self.clone(),
            node,
            slot,
            unit: self.core.schema.slot_unit(slot),
            event: kind == ItemKind::Event,
        })
    }
}

impl Counter {
    /// Adds `delta` (see [`HierStats::add`]).
    ///
    /// # Errors
    /// [`Error::NegativeEvent`] for a negative delta to an event item;
    /// nothing is changed then.
    #[inline(always)]
    pub fn add(&self, delta: i64) -> Result<(), Error> {
        if self.event && delta < 0 {
            return Err(self.negative(delta));
        }
        self.stats
            .core
            .update_here(&self.node, self.slot, delta, self.unit.pages(delta));
        Ok(())
    }

    /// The group the counter updates.
    pub fn group(&self) -> Group {
        Group {
            node: self.node.clone(),
        }
    }

    #[cold]
    #[inline(never)]
    fn negative(&self, delta: i64) -> Error {
        let name = self
            .stats
            .core
            .schema
            .items()
            .iter()
            .find(|i| i.slot as usize == self.slot)
            .map_or_else(String::new, |i| i.name.clone());
        Error::NegativeEvent(name, delta)
    }
}
