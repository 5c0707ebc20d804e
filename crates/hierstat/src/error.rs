//! The engine's error type: every user mistake is reported, never panics.

use thiserror::Error;

/// Errors returned by hierstat.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// No item of that name exists in the schema.
    #[error("unknown stat item {0:?}")]
    UnknownItem(String),
    /// The item exists but has another kind (e.g. an event passed where a
    /// per-node state item is expected).
    #[error("item {item:?} is a {actual} item, expected {expected}")]
    WrongItemKind {
        /// Item name.
        item: String,
        /// Kind the call needs.
        expected: &'static str,
        /// Kind the item has.
        actual: &'static str,
    },
    /// An event item was given a negative delta (events only count up).
    #[error("event item {0:?} cannot go down (delta {1})")]
    NegativeEvent(String, i64),
    /// Two schema items share a name.
    #[error("duplicate stat item {0:?}")]
    DuplicateItem(String),
    /// A path does not name an existing group.
    #[error("no group at path {0:?}")]
    UnknownGroup(String),
    /// A path or group name is malformed (empty component, contains '/', ...).
    #[error("invalid group name or path {0:?}")]
    InvalidName(String),
    /// A sibling with that name already exists.
    #[error("group {parent:?} already has a child named {name:?}")]
    DuplicateName {
        /// Path of the parent.
        parent: String,
        /// The clashing name.
        name: String,
    },
    /// The root group cannot be removed.
    #[error("the root group cannot be removed")]
    RemoveRoot,
    /// A group with children cannot be removed.
    #[error("group {0:?} still has children")]
    NotEmpty(String),
    /// The group was removed; it cannot get children or be removed again.
    #[error("group {0:?} has been removed")]
    GroupRemoved(String),
    /// An explicit shard index is out of range.
    #[error("shard {shard} out of range (the tree has {shards} shards)")]
    ShardOutOfRange {
        /// Requested shard.
        shard: usize,
        /// Number of shards.
        shards: usize,
    },
    /// A NUMA node index is out of range.
    #[error("node {node} out of range (the schema has {nodes} nodes)")]
    NodeOutOfRange {
        /// Requested node.
        node: usize,
        /// Number of nodes.
        nodes: usize,
    },
    /// The configuration is out of range (see [`ConfigError`]).
    #[error("invalid configuration: {0}")]
    InvalidConfig(#[from] ConfigError),
    /// A relative tolerance that is negative, infinite or NaN (see
    /// [`Tolerance`](crate::Tolerance)).
    #[error("invalid tolerance: relative {0} (a finite fraction >= 0)")]
    InvalidTolerance(String),
    /// The background flusher's thread could not be started.
    #[error("cannot start the background flusher: {0}")]
    Spawn(String),
    /// A group handle of another tree was passed to this one.
    #[error("group {0:?} belongs to another tree")]
    ForeignGroup(String),
    /// An item handle of another schema was passed (a schema with other
    /// items: handles of structurally identical schemas are interchangeable).
    #[error("item handle #{0} belongs to another schema")]
    ForeignItem(usize),
    /// The tree cannot hold more groups.
    #[error("too many groups (limit {0})")]
    TooManyGroups(usize),
}

/// A configuration value out of range: found by [`HierStats::new`]
/// (shards, policy) or [`HierStats::start_flusher`] (period), before
/// anything is built.
///
/// [`HierStats::new`]: crate::HierStats::new
/// [`HierStats::start_flusher`]: crate::HierStats::start_flusher
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The shard count is 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS).
    #[error("{0} shards (must be 1..={max})", max = crate::MAX_SHARDS)]
    Shards(usize),
    /// A schema with more than 1024 NUMA nodes.
    #[error("{0} nodes (at most 1024)")]
    Nodes(usize),
    /// A schema with more than 65535 items.
    #[error("{0} items (at most 65535)")]
    Items(usize),
    /// The residue batch is 0 or above 2^20 pages.
    #[error("batch {0} (must be 1..=2^20 pages)")]
    Batch(u32),
    /// The threshold the policy asks for exceeds
    /// [`MAX_THRESHOLD`](crate::MAX_THRESHOLD) pages (or does not fit a
    /// 64-bit page count at all: `None`).
    #[error("a threshold of {} pages (must be at most 2^52)", .0.map_or("over 2^64".to_string(), |t| t.to_string()))]
    Threshold(Option<u128>),
    /// The ratelimit period is longer than 2^63 ns (the ratelimit waits
    /// two periods).
    #[error("a period of {0} ns (must be at most 2^63 ns)")]
    Period(u64),
    /// The background flusher's period is zero (it would flush back to
    /// back) or does not fit the clock's 64-bit nanoseconds (about 584
    /// years).
    #[error("a flusher period of {0:?} (must be 1 ns ..= 2^64 − 1 ns)")]
    FlusherPeriod(std::time::Duration),
}
