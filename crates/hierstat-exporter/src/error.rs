//! The crate's error type.

/// Errors of the exporter, the recorder builder and the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A metric name prefix that is not `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    #[error("invalid metric name prefix {0:?} (must match [a-zA-Z_:][a-zA-Z0-9_:]*)")]
    InvalidPrefix(String),
    /// A label name that is not `[a-zA-Z_][a-zA-Z0-9_]*`, starts with `__`,
    /// or is used twice.
    #[error("invalid label name {0:?}")]
    InvalidLabel(String),
    /// Two metric families (or a family and a sample) would get the same
    /// name after sanitizing the schema's item names.
    #[error("metric name {name:?} is produced by both {first:?} and {second:?}")]
    NameCollision {
        /// The colliding exposition name.
        name: String,
        /// What produced it first.
        first: String,
        /// What produced it again.
        second: String,
    },
    /// A help text, an alias, a rename or an exact allow/deny pattern names
    /// an item the schema does not have.
    #[error("unknown item {0:?}")]
    UnknownItem(String),
    /// An allow/deny prefix pattern (`name*`) that matches no item of the
    /// schema.
    #[error("item pattern {0:?} matches no item of the schema")]
    UnmatchedPattern(String),
    /// An engine error.
    #[error(transparent)]
    Hierstat(#[from] hierstat::Error),
    /// Binding the listening socket failed.
    #[error("binding the metrics listener: {0}")]
    Io(#[from] std::io::Error),
    /// The HTTP server could not be started on the bound socket.
    #[error("starting the HTTP server: {0}")]
    Server(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}
