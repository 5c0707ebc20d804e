//! hierstat: hierarchical per-shard statistics for a tree of groups.
//!
//! The design is the Linux memory cgroup's (memcg vmstats + cgroup rstat),
//! rebuilt for userspace:
//!
//! * **updates** write the caller's *shard* of a group's counters: a thread
//!   that owns its shard uses plain loads and stores on lines only it
//!   writes; threads beyond the shard count, and explicit-shard calls, use
//!   two atomic RMWs. Either queues the group on the shard's lock-free
//!   update list once per flush ([`HierStats::add`]);
//! * **flushes** visit only the (group, shard) pairs updated since the last
//!   flush, children before parents, with the `delta` / `pending` scheme, for
//!   any subtree ([`HierStats::flush`], [`FlushKind`]);
//! * **thresholds** count unflushed update magnitude per group so that a
//!   reader flushes only when the error could exceed `T`
//!   ([`HierStats::read_bounded`] returns the value with a bound that holds
//!   at every instant, flushes running included: see [`Bounded`]);
//! * **policies** reproduce each kernel era's choices ([`Preset`]) and ours;
//! * a **background flusher** bounds staleness in time
//!   ([`HierStats::start_flusher`]);
//! * **work counters** report what every operation did, for simulation
//!   ([`WorkCounters`]), at no cost when not asked for;
//! * **nothing wraps**: a counter that would leave `i64` saturates and says
//!   so ([`Bounded::saturated`]), and configurations are range-checked
//!   ([`ConfigError`]).
//!
//! Module map:
//!
//! | module | what it holds |
//! |---|---|
//! | `stats` | [`HierStats`] and the shared core |
//! | `config`, `policy`, `clock` | [`Config`], [`Policy`] and its [`Preset`]s, the clock |
//! | `schema` | items, units, slots ([`Schema`]) |
//! | `node`, `group` | a group's shared state and its handle ([`Group`]) |
//! | `tree` | create, remove, lookup, iterate, reap |
//! | `slab` | shard-major counter rows and the row header word |
//! | `shard` | which shard a thread writes (the slot pool) |
//! | `update`, `counter` | the update path, and a pre-resolved [`Counter`] |
//! | `updated` | lock-free update lists, persistent updated trees |
//! | `count` | the threshold count word |
//! | `flush`, `flusher` | flushes and their hand-over; the background flusher |
//! | `read` | reads and [`Bounded`] |
//! | `saturation` | counters that left `i64` |
//! | `work` | work counters for the simulator |
//! | `verify` | invariant checks |
//! | `sync` | the one import point of atomics and locks (loom or std), the lock order |
//! | `error` | [`Error`], [`ConfigError`] |
//!
//! ```
//! use hierstat::{Config, HierStats, Preset, Schema, Unit};
//!
//! let mut b = Schema::builder();
//! let anon = b.state("anon", Unit::Bytes);
//! let pgfault = b.event("pgfault", Unit::Count);
//! let stats = HierStats::new(b.build()?, Config::preset(Preset::Linux6_8).shards(2))?;
//! let slice = stats.create(&stats.root(), "system.slice")?;
//! let svc = stats.create(&slice, "nginx.service")?;
//! stats.add(&svc, anon, 1 << 20)?;
//! stats.add(&svc, pgfault, 256)?;
//! stats.flush_forced(&stats.root()).unwrap();
//! assert_eq!(stats.read(&slice, anon)?, 1 << 20);
//! assert_eq!(stats.read(&stats.root(), pgfault)?, 256);
//! # Ok::<(), hierstat::Error>(())
//! ```

#![warn(
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks
)]
#![deny(unsafe_code)]

mod clock;
mod config;
mod count;
mod counter;
mod error;
mod flush;
#[cfg(not(loom))]
mod flusher;
#[allow(unsafe_code)] // the handle's cached pointers (see the module docs)
mod group;
mod node;
mod policy;
mod read;
mod saturation;
mod schema;
mod shard;
#[allow(unsafe_code)] // the row pointers of the update path (see the module docs)
mod slab;
mod stats;
mod sync;
mod tree;
mod update;
mod updated;
mod verify;
mod work;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use config::{Config, MAX_SHARDS};
pub use count::MAX_THRESHOLD;
pub use counter::Counter;
pub use error::{ConfigError, Error};
pub use flush::{FlushKind, FlushOutcome, FlushStats, HotPathDecision};
#[cfg(not(loom))]
pub use flusher::{BackgroundFlusher, FlusherStats};
pub use group::Group;
pub use policy::{
    Concurrency, EarlyBreak, FlushScope, HotPathFlush, Policy, Preset, ThresholdRule,
    ThresholdScheme, ThresholdSize, UnknownPreset,
};
pub use read::Bounded;
pub use schema::{ItemId, ItemInfo, ItemKind, NodeItemId, Schema, SchemaBuilder, Unit, PAGE_SIZE};
pub use shard::Shard;
pub use stats::HierStats;
pub use verify::Violation;
pub use work::{Work, WorkCounters, WorkSink};
