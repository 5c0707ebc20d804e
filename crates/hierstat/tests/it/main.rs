//! hierstat integration tests (one binary).

mod basics;
mod bounds;
mod contracts;
mod edges;
mod invariants;
#[path = "../support/items.rs"]
mod items;
mod owner;
#[path = "../support/rng.rs"]
mod rng;
mod selftests;
mod sole;
mod stress;

use hierstat::{Config, HierStats, ItemId, NodeItemId, Policy, Preset, Schema, Unit};

/// A small schema: a byte gauge, a page gauge, an event, a per-node gauge.
#[derive(Debug)]
pub struct Items {
    pub anon: ItemId,
    pub file: ItemId,
    pub pgfault: ItemId,
    pub lru: NodeItemId,
}

pub fn schema() -> (Schema, Items) {
    let mut b = Schema::builder();
    let anon = b.state("anon", Unit::Bytes);
    let file = b.state("file", Unit::Pages);
    let pgfault = b.event("pgfault", Unit::Count);
    let lru = b.node_state("lru", Unit::Pages);
    let s = b.nodes(2).build().unwrap();
    (
        s,
        Items {
            anon,
            file,
            pgfault,
            lru,
        },
    )
}

pub fn tree(preset: Preset, shards: usize) -> (HierStats, Items) {
    let (s, items) = schema();
    (
        HierStats::new(s, Config::preset(preset).shards(shards)).unwrap(),
        items,
    )
}

pub fn tree_with(policy: Policy, shards: usize) -> (HierStats, Items) {
    let (s, items) = schema();
    (
        HierStats::new(s, Config::with_policy(policy).shards(shards)).unwrap(),
        items,
    )
}

/// Waits until `cond` holds, polling: the tests synchronize on what they
/// can observe, never on a sleep. Panics after a minute, naming `what` (a
/// condition that never comes is a failure, not a hang).
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited a minute for {what}"
        );
        std::thread::yield_now();
    }
}

/// An iteration count, cut down under Miri (every step of a test runs
/// thousands of times slower there; the interleavings it explores do not
/// need the volume).
pub fn scaled(n: usize) -> usize {
    if cfg!(miri) {
        (n / 1000).max(8)
    } else {
        n
    }
}
