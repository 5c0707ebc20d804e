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
    /// The configuration is invalid (shard count, batch, ...).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
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
