//! Pre-bound counters: a (group, item) pair resolved once.

use crate::engine::Core;
use crate::error::Error;
use crate::group::Group;
use crate::schema::{ItemKind, Slot, Unit};
use crate::sync::Arc;

/// A (group, item) pair resolved once: the fast path for code that updates
/// the same statistic over and over (a request counter, a per-tenant
/// gauge).
///
/// [`HierStats::add`](crate::HierStats::add) checks on every call that the group belongs to the
/// tree and the item to the schema (the contract every entry point keeps:
/// a wrong handle is an error, never a wrong count); a `Counter` was
/// checked when [`HierStats::counter`](crate::HierStats::counter) made it, so its
/// [`add`](Counter::add) goes straight to the update path: the owner's
/// plain loads and stores when the calling thread owns its shard, the
/// shared atomic path otherwise. It keeps the group alive (like a [`Group`]
/// handle, it keeps counting after the group is removed).
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
    core: Arc<Core>,
    group: Group,
    slot: Slot,
    unit: Unit,
    event: bool,
}

impl Counter {
    /// The counter of `slot` (of kind `kind`) of `group`, both checked.
    pub(crate) fn new(core: Arc<Core>, group: Group, slot: Slot, kind: ItemKind) -> Self {
        Counter {
            unit: core.params.schema.slot_unit(slot),
            event: kind == ItemKind::Event,
            core,
            group,
            slot,
        }
    }

    /// Adds `delta` (see [`HierStats::add`](crate::HierStats::add)).
    ///
    /// # Errors
    /// [`Error::NegativeEvent`] for a negative delta to an event item;
    /// nothing is changed then.
    #[inline(always)]
    pub fn add(&self, delta: i64) -> Result<(), Error> {
        if self.event && delta < 0 {
            return Err(self.negative(delta));
        }
        self.core
            .update_here(&self.group, self.slot, delta, self.unit.pages(delta));
        Ok(())
    }

    /// The group the counter updates.
    pub fn group(&self) -> Group {
        self.group.clone()
    }

    #[cold]
    #[inline(never)]
    fn negative(&self, delta: i64) -> Error {
        let name = self
            .core
            .params
            .schema
            .items()
            .get(self.slot.get())
            .map_or_else(String::new, |i| i.name.clone());
        Error::NegativeEvent(name, delta)
    }
}
