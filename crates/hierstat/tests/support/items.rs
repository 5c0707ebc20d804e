//! The items the oracle tests update and check: one of each unit.
//! Included with `#[path]` by each test binary that uses them.

use hierstat::{ItemId, SchemaBuilder, Unit};

/// Adds an event (`ev`, counts), a page gauge (`pages`) and a byte gauge
/// (`bytes`) to `b`, in that order.
pub fn ev_pages_bytes(b: &mut SchemaBuilder) -> [ItemId; 3] {
    [
        b.event("ev", Unit::Count),
        b.state("pages", Unit::Pages),
        b.state("bytes", Unit::Bytes),
    ]
}
