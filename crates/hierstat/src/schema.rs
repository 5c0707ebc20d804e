//! The schema: which statistics every group carries.
//!
//! Three kinds of item, as in memcg:
//! * **state** items are signed gauges (`anon` bytes, `nr_active_file`
//!   pages); aggregates may be transiently negative and read as 0;
//! * **event** items are monotonic counts (`pgfault`);
//! * **per-node state** items are state items kept once per NUMA node plus a
//!   total (the lruvec statistics); an update to node `n` updates both.
//!
//! Each item has a [`Unit`], so that flush thresholds count update
//! *magnitude in pages*: a byte-sized update of less than a page counts as 1,
//! as the kernel's `memcg_state_val_in_pages()` does.
//!
//! Internally every item maps to dense *slots* (one per state/event item,
//! `1 + nodes` per per-node item); a slot is one 8-byte counter per shard.

use crate::error::{ConfigError, Error};
use std::collections::HashMap;

/// Bytes per page for [`Unit::Bytes`] magnitude normalization.
pub const PAGE_SIZE: u64 = 4096;

/// Unit of an item's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Values are pages; magnitude is `|v|`.
    Pages,
    /// Values are bytes; magnitude is `|v|` in pages rounded up. (The kernel
    /// rounds down, with a minimum of 1; rounding up keeps
    /// `magnitude × PAGE_SIZE ≥ |v|`, so error bounds hold in bytes too.)
    Bytes,
    /// Values are plain counts; magnitude is `|v|`.
    Count,
}

impl Unit {
    /// Magnitude of an update of `delta` in pages, the threshold currency;
    /// a non-zero sub-page update counts as 1.
    #[inline(always)]
    pub fn pages(self, delta: i64) -> u64 {
        let m = delta.unsigned_abs();
        match self {
            Unit::Pages | Unit::Count => m,
            Unit::Bytes => m.div_ceil(PAGE_SIZE),
        }
    }

    /// Converts a magnitude in pages back into this unit (for error bounds).
    pub fn from_pages(self, pages: u64) -> u64 {
        match self {
            Unit::Pages | Unit::Count => pages,
            Unit::Bytes => pages.saturating_mul(PAGE_SIZE),
        }
    }

    /// Short name (`pages`, `bytes`, `count`).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Pages => "pages",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
        }
    }
}

/// Kind of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// Signed gauge.
    State,
    /// Monotonic event count.
    Event,
    /// Signed gauge kept per NUMA node (plus a total).
    NodeState,
    /// Monotonic event count kept per NUMA node (plus a total), such as
    /// the kernel's `workingset_*` lruvec events.
    NodeEvent,
}

impl ItemKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ItemKind::State => "state",
            ItemKind::Event => "event",
            ItemKind::NodeState => "per-node state",
            ItemKind::NodeEvent => "per-node event",
        }
    }

    /// Whether the item is kept per NUMA node ([`NodeItemId`] handles).
    pub fn is_per_node(self) -> bool {
        matches!(self, ItemKind::NodeState | ItemKind::NodeEvent)
    }

    /// Whether the item only counts up (a counter, not a gauge).
    pub fn is_event(self) -> bool {
        matches!(self, ItemKind::Event | ItemKind::NodeEvent)
    }
}

/// Handle of a state or event item (cheap to copy).
///
/// A handle knows which item it names: its position, whether it is an
/// event, whether its unit is bytes, and a 46-bit fingerprint of the item's
/// definition (name, kind, unit) chained with every item defined before it.
/// A schema accepts a handle only if its own item at that position has the
/// same handle bits, so a handle of a schema with other items is an
/// [`Error::ForeignItem`], while schemas built by the same sequence of
/// definitions (a tree rebuilt per run) share handles.
///
/// The update path needs nothing else from the schema: an item's counter
/// slot is its position, and its kind and unit are in the bits, so the
/// address an update writes does not wait for the check's table load (the
/// check is one compare and a branch beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemId(pub(crate) u64);

/// A counter slot checked by a schema: below its [`Schema::slots`], so below
/// the cell count of every row of a tree built with it. Only the schema's
/// checks make one, and a tree uses only its own schema's, so the update
/// path indexes cells with it and no bounds check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot(usize);

impl Slot {
    /// The slot's index.
    #[inline(always)]
    pub(crate) fn get(self) -> usize {
        self.0
    }

    /// An unchecked slot, for unit tests of the row code.
    #[cfg(test)]
    pub(crate) fn for_tests(i: usize) -> Self {
        Slot(i)
    }
}

/// Handle of a per-node state item (identified as [`ItemId`] is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeItemId(pub(crate) u64);

/// Bits of a handle holding the index; the fingerprint is above them.
const INDEX_BITS: u32 = 16;

/// The handle bit set for event items.
const EVENT_BIT: u64 = 1 << 63;

/// The handle bit set for items counted in bytes (whose magnitude in pages
/// rounds up); the fingerprint is below it.
const BYTES_BIT: u64 = 1 << 62;

impl ItemId {
    /// Dense index of the item in its schema.
    pub fn index(self) -> usize {
        (self.0 & ((1 << INDEX_BITS) - 1)) as usize
    }

    fn tag(self) -> u64 {
        self.0 >> INDEX_BITS
    }

    /// The kind the handle was minted with (meaningful once the handle has
    /// matched its schema's).
    #[inline(always)]
    fn kind(self) -> ItemKind {
        if self.0 & EVENT_BIT != 0 {
            ItemKind::Event
        } else {
            ItemKind::State
        }
    }

    /// Magnitude of an update of `delta` in pages, by the unit the handle
    /// was minted with (see [`Unit::pages`]).
    #[inline(always)]
    pub(crate) fn pages(self, delta: i64) -> u64 {
        let unit = if self.0 & BYTES_BIT != 0 {
            Unit::Bytes
        } else {
            Unit::Pages
        };
        unit.pages(delta)
    }
}

impl NodeItemId {
    /// Dense index of the item in its schema.
    pub fn index(self) -> usize {
        (self.0 & ((1 << INDEX_BITS) - 1)) as usize
    }

    fn tag(self) -> u64 {
        self.0 >> INDEX_BITS
    }
}

/// Chains one item definition into a fingerprint (FNV-1a, 64-bit, folded
/// to 48 bits by the caller).
fn chain(mut h: u64, name: &str, kind: ItemKind, unit: Unit) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let bytes = name.bytes().chain([0xff, kind as u8, unit as u8, 0xfe]);
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(PRIME);
    }
    h
}

/// Fingerprint chain start (the FNV offset basis).
const CHAIN_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Packs an index, a chained fingerprint and the event and bytes flags into
/// handle bits.
fn handle(index: u16, chain: u64, kind: ItemKind, unit: Unit) -> u64 {
    let event = if kind == ItemKind::Event {
        EVENT_BIT
    } else {
        0
    };
    let bytes = if unit == Unit::Bytes { BYTES_BIT } else { 0 };
    (((chain ^ (chain >> 48)) << INDEX_BITS) & !(EVENT_BIT | BYTES_BIT))
        | event
        | bytes
        | index as u64
}

/// Description of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemInfo {
    /// Name, unique in the schema.
    pub name: String,
    /// Kind.
    pub kind: ItemKind,
    /// Unit.
    pub unit: Unit,
    /// First per-node counter slot of a per-node item (its total is at its
    /// index, as every item's one counter is); unused for other kinds.
    pub(crate) node_slots: u32,
}

/// The set of items every group of a tree carries. Build one with
/// [`Schema::builder`].
#[derive(Debug, Clone)]
pub struct Schema {
    items: Vec<ItemInfo>,
    nodes: usize,
    slots: usize,
    by_name: HashMap<String, u16>,
    /// Unit of each slot, for threshold magnitudes.
    slot_units: Vec<Unit>,
    /// Each item's handle bits, for the identity check: all the update path
    /// reads of the schema.
    handles: Box<[u64]>,
}

/// Builder for a [`Schema`].
#[derive(Debug)]
pub struct SchemaBuilder {
    items: Vec<(String, ItemKind, Unit)>,
    nodes: usize,
    /// Fingerprint of the items so far.
    chain: u64,
}

impl Default for SchemaBuilder {
    fn default() -> Self {
        SchemaBuilder {
            items: Vec::new(),
            nodes: 0,
            chain: CHAIN_START,
        }
    }
}

impl SchemaBuilder {
    /// Adds an item; returns its handle bits. Past 65535 items the index
    /// wraps, and `build` rejects the schema.
    fn push(&mut self, name: &str, kind: ItemKind, unit: Unit) -> u64 {
        self.chain = chain(self.chain, name, kind, unit);
        self.items.push((name.to_string(), kind, unit));
        handle((self.items.len() - 1) as u16, self.chain, kind, unit)
    }

    /// Adds a signed state item.
    pub fn state(&mut self, name: &str, unit: Unit) -> ItemId {
        ItemId(self.push(name, ItemKind::State, unit))
    }

    /// Adds a monotonic event item.
    pub fn event(&mut self, name: &str, unit: Unit) -> ItemId {
        ItemId(self.push(name, ItemKind::Event, unit))
    }

    /// Adds a per-node state item.
    pub fn node_state(&mut self, name: &str, unit: Unit) -> NodeItemId {
        NodeItemId(self.push(name, ItemKind::NodeState, unit))
    }

    /// Adds a per-node event item (monotonic: a negative update is
    /// [`Error::NegativeEvent`]).
    pub fn node_event(&mut self, name: &str, unit: Unit) -> NodeItemId {
        NodeItemId(self.push(name, ItemKind::NodeEvent, unit))
    }

    /// Sets the number of NUMA nodes for per-node items (default 1).
    pub fn nodes(&mut self, nodes: usize) -> &mut Self {
        self.nodes = nodes;
        self
    }

    /// Validates and builds the schema.
    ///
    /// # Errors
    /// [`Error::DuplicateItem`] if two items share a name,
    /// [`Error::InvalidConfig`] for more than 65535 items or 0/too many nodes.
    pub fn build(&self) -> Result<Schema, Error> {
        let nodes = if self.nodes == 0 { 1 } else { self.nodes };
        if nodes > 1024 {
            return Err(ConfigError::Nodes(nodes).into());
        }
        if self.items.len() > u16::MAX as usize {
            return Err(ConfigError::Items(self.items.len()).into());
        }
        // Slot layout: item `i`'s counter (a per-node item's total) is slot
        // `i`; the per-node counters of per-node items follow all of them.
        let mut by_name = HashMap::new();
        let mut items = Vec::with_capacity(self.items.len());
        let mut slot_units: Vec<Unit> = self.items.iter().map(|it| it.2).collect();
        let mut fp = CHAIN_START;
        let mut handles = Vec::with_capacity(self.items.len());
        for (i, (name, kind, unit)) in self.items.iter().enumerate() {
            fp = chain(fp, name, *kind, *unit);
            if by_name.insert(name.clone(), i as u16).is_some() {
                return Err(Error::DuplicateItem(name.clone()));
            }
            let node_slots = slot_units.len() as u32;
            if kind.is_per_node() {
                slot_units.extend(std::iter::repeat_n(*unit, nodes));
            }
            items.push(ItemInfo {
                name: name.clone(),
                kind: *kind,
                unit: *unit,
                node_slots,
            });
            handles.push(handle(i as u16, fp, *kind, *unit));
        }
        Ok(Schema {
            handles: handles.into_boxed_slice(),
            slots: slot_units.len(),
            items,
            nodes,
            by_name,
            slot_units,
        })
    }
}

impl Schema {
    /// Starts a schema.
    pub fn builder() -> SchemaBuilder {
        SchemaBuilder::default()
    }

    /// Looks up a state or event item by name.
    ///
    /// # Errors
    /// [`Error::UnknownItem`], or [`Error::WrongItemKind`] for a per-node item.
    pub fn item(&self, name: &str) -> Result<ItemId, Error> {
        let i = self.index_of(name)?;
        match self.items[i as usize].kind {
            ItemKind::NodeState | ItemKind::NodeEvent => Err(self.wrong_kind(i, "state or event")),
            ItemKind::State | ItemKind::Event => Ok(ItemId(self.handles[i as usize])),
        }
    }

    /// Looks up a per-node (state or event) item by name.
    ///
    /// # Errors
    /// [`Error::UnknownItem`], or [`Error::WrongItemKind`] for other kinds.
    pub fn node_item(&self, name: &str) -> Result<NodeItemId, Error> {
        let i = self.index_of(name)?;
        if self.items[i as usize].kind.is_per_node() {
            Ok(NodeItemId(self.handles[i as usize]))
        } else {
            Err(self.wrong_kind(i, "per-node state or event"))
        }
    }

    fn index_of(&self, name: &str) -> Result<u16, Error> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| Error::UnknownItem(name.to_string()))
    }

    fn wrong_kind(&self, i: u16, expected: &'static str) -> Error {
        let info = &self.items[i as usize];
        Error::WrongItemKind {
            item: info.name.clone(),
            expected,
            actual: info.kind.name(),
        }
    }

    /// All items, in definition order.
    pub fn items(&self) -> &[ItemInfo] {
        &self.items
    }

    /// Description of a state/event item.
    ///
    /// # Errors
    /// [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn info(&self, item: ItemId) -> Result<&ItemInfo, Error> {
        self.slot_of(item)?;
        Ok(&self.items[item.index()])
    }

    /// Description of a per-node item.
    ///
    /// # Errors
    /// [`Error::ForeignItem`], [`Error::WrongItemKind`].
    pub fn node_info(&self, item: NodeItemId) -> Result<&ItemInfo, Error> {
        self.node_slots(item, 0)?;
        Ok(&self.items[item.index()])
    }

    /// The schema's own definition of the item a handle names, if the
    /// handle is one of this schema's (see [`ItemId`]).
    #[inline(always)]
    fn own(&self, index: usize, tag: u64) -> Result<&ItemInfo, Error> {
        match self.handles.get(index) {
            Some(h) if h >> INDEX_BITS == tag => Ok(&self.items[index]),
            _ => Err(Error::ForeignItem(index)),
        }
    }

    /// Number of NUMA nodes of per-node items.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Number of 8-byte counters per (group, shard).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Unit of a counter slot.
    #[inline]
    pub(crate) fn slot_unit(&self, slot: Slot) -> Unit {
        self.slot_units[slot.get()]
    }

    /// Slot of a state/event item, checking the handle belongs here.
    #[inline]
    pub(crate) fn slot_of(&self, item: ItemId) -> Result<Slot, Error> {
        self.slot_and_kind(item).map(|(slot, _)| slot)
    }

    /// Slot and kind of a state/event item, checking the handle belongs here.
    #[inline(always)]
    pub(crate) fn slot_and_kind(&self, item: ItemId) -> Result<(Slot, ItemKind), Error> {
        // The handle table alone: one bounds check and one compare of the
        // whole handle, which also settles the kind (see `ItemId`).
        match self.handles.get(item.index()) {
            // A matching handle's index is an item's, below `slots`.
            Some(&h) if h == item.0 => Ok((Slot(item.index()), item.kind())),
            _ => Err(self.lookup_error(item)),
        }
    }

    #[cold]
    #[inline(never)]
    fn lookup_error(&self, item: ItemId) -> Error {
        match self.own(item.index(), item.tag()) {
            Err(e) => e,
            Ok(_) => self.wrong_kind(item.index() as u16, "state or event"),
        }
    }

    /// Slot of an item and the magnitude (pages) of an update of `delta`
    /// to it, checking the handle belongs here: events only count up. Both
    /// come from the handle's bits; the table load only decides the branch.
    #[inline(always)]
    pub(crate) fn slot_for_update(&self, item: ItemId, delta: i64) -> Result<(Slot, u64), Error> {
        // As `slot_and_kind`; an event must not go down.
        match self.handles.get(item.index()) {
            Some(&h) if h == item.0 && (delta >= 0 || item.kind() == ItemKind::State) => {
                Ok((Slot(item.index()), item.pages(delta)))
            }
            _ => Err(self.update_error(item, delta)),
        }
    }

    #[cold]
    #[inline(never)]
    fn update_error(&self, item: ItemId, delta: i64) -> Error {
        match self.own(item.index(), item.tag()) {
            Err(e) => e,
            Ok(info) if info.kind == ItemKind::Event => {
                Error::NegativeEvent(info.name.clone(), delta)
            }
            Ok(_) => self.wrong_kind(item.index() as u16, "state or event"),
        }
    }

    /// (total slot, node slot) of a per-node item on `node` for an update
    /// of `delta`: as [`node_slots`](Self::node_slots), and a per-node
    /// event must not go down.
    #[inline]
    pub(crate) fn node_slots_for_update(
        &self,
        item: NodeItemId,
        node: usize,
        delta: i64,
    ) -> Result<(Slot, Slot), Error> {
        let slots = self.node_slots(item, node)?;
        if delta < 0 {
            // `node_slots` checked the handle: the item is this schema's.
            let info = &self.items[item.index()];
            if info.kind == ItemKind::NodeEvent {
                return Err(Error::NegativeEvent(info.name.clone(), delta));
            }
        }
        Ok(slots)
    }

    /// The slot a read of a per-node item takes: its node `numa_node`'s,
    /// or with `None` its total over nodes.
    #[inline]
    pub(crate) fn node_read_slot(
        &self,
        item: NodeItemId,
        numa_node: Option<usize>,
    ) -> Result<Slot, Error> {
        let (total, per) = self.node_slots(item, numa_node.unwrap_or(0))?;
        Ok(if numa_node.is_some() { per } else { total })
    }

    /// (total slot, node slot) of a per-node item on `node`.
    #[inline]
    pub(crate) fn node_slots(&self, item: NodeItemId, node: usize) -> Result<(Slot, Slot), Error> {
        let info = self.own(item.index(), item.tag())?;
        if !info.kind.is_per_node() {
            return Err(self.wrong_kind(item.index() as u16, "per-node state or event"));
        }
        if node >= self.nodes {
            return Err(Error::NodeOutOfRange {
                node,
                nodes: self.nodes,
            });
        }
        // Both below `slots`: the item's own, and one of its `nodes`
        // per-node slots, all allocated by `build`.
        Ok((Slot(item.index()), Slot(info.node_slots as usize + node)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_page_byte_updates_count_as_one_page() {
        assert_eq!(Unit::Bytes.pages(512), 1);
        assert_eq!(Unit::Bytes.pages(-512), 1);
        assert_eq!(Unit::Bytes.pages(0), 0);
        assert_eq!(Unit::Bytes.pages(3 * 4096 + 5), 4);
        assert_eq!(Unit::Bytes.pages(3 * 4096), 3);
        assert_eq!(Unit::Pages.pages(-7), 7);
        assert_eq!(Unit::Count.pages(3), 3);
    }

    #[test]
    fn slots_are_dense_and_node_items_are_wide() {
        let mut b = Schema::builder();
        let a = b.state("anon", Unit::Bytes);
        let n = b.node_state("active_file", Unit::Pages);
        let e = b.event("pgfault", Unit::Count);
        let s = b.nodes(2).build().unwrap();
        // One slot per item, in definition order, then the per-node ones.
        assert_eq!(s.slots(), 3 + 2);
        assert_eq!(s.slot_of(a).unwrap(), Slot(0));
        assert_eq!(s.node_slots(n, 1).unwrap(), (Slot(1), Slot(4)));
        assert_eq!(s.slot_of(e).unwrap(), Slot(2));
        assert!(matches!(
            s.node_slots(n, 2),
            Err(Error::NodeOutOfRange { .. })
        ));
        assert_eq!(s.item("pgfault").unwrap(), e);
        assert!(matches!(
            s.item("active_file"),
            Err(Error::WrongItemKind { .. })
        ));
        assert!(matches!(s.item("nope"), Err(Error::UnknownItem(_))));
    }

    #[test]
    fn duplicate_names_are_rejected() {
        let mut b = Schema::builder();
        b.state("anon", Unit::Bytes);
        b.event("anon", Unit::Count);
        assert_eq!(b.build().unwrap_err(), Error::DuplicateItem("anon".into()));
    }
}
