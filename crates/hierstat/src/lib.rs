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
//!   at every instant, flushes running included: see [`Bounded`]), and a
//!   reader that states the error it accepts flushes only what could
//!   break it ([`HierStats::read_within`], [`Tolerance`]);
//! * **policies** reproduce each kernel era's choices ([`Preset`]) and ours;
//! * a **background flusher** bounds staleness in time
//!   ([`HierStats::start_flusher`]);
//! * a **simulator's API** ([`sim`]): explicit shards, work counters that
//!   report what every operation did (at no cost when not asked for),
//!   virtual time, invariant checks;
//! * **nothing wraps**: a counter that would leave `i64` saturates and says
//!   so ([`Bounded::saturated`]), and configurations are range-checked
//!   ([`ConfigError`]).
//!
//! Module map:
//!
//! | module | what it holds |
//! |---|---|
//! | `stats` | [`HierStats`]: the whole public API (the simulator's part is in `sim`) |
//! | `engine` | `Core`, the state every handle shares: one part per module below, built from their leaf types |
//! | `config`, `policy`, `clock` | [`Config`] and the derived parameters, [`Policy`] and its [`Preset`]s, the clock |
//! | `schema` | items, units, counter slots ([`Schema`]) |
//! | `state`, `group` | a group's shared state, and its handle ([`Group`]) |
//! | `tree` | create, remove, lookup, iterate, reap; `tree::groups`: the groups and the structure lock |
//! | `rows`, `table` | counter rows, allocated on first touch from per-shard arenas; a group's table of its rows |
//! | `header` | the row header word and the owner's residue: every bit and transition of the update/flush handshake |
//! | `seat` | which shard a thread writes (the process-wide seat pool) |
//! | `mode`, `rseq` | per-CPU or per-thread ([`Mode`]); the per-CPU mode's restartable sequences (assembly; modelled under loom) |
//! | `update`, `counter` | the update paths (`update::writers`: who writes each shard); a pre-resolved [`Counter`] |
//! | `dirty` | lock-free update lists, persistent dirty trees |
//! | `count` | the threshold count word |
//! | `flush`, `flusher` | flushes and their hand-over (`flush::state`: exclusion, running count, statistics, async requests; `flush::outcome`: the public result types); the background flusher |
//! | `read` | the bound and [`Bounded`] |
//! | `within` | reads with an error budget ([`HierStats::read_within`]): the planner of partial flushes (`flush::partial`, `dirty::partial` carry them out) |
//! | `saturation` | counters that left `i64` |
//! | `sim`, `work`, `verify` | the simulator's API ([`sim`]): explicit shards, work counters, invariant checks |
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
mod dirty;
mod engine;
mod error;
mod flush;
#[cfg(not(loom))]
mod flusher;
#[allow(unsafe_code)] // the handle's cached pointers (see the module docs)
mod group;
mod header;
mod mode;
mod policy;
mod read;
#[allow(unsafe_code)] // the row addresses of the update path (see the module docs)
mod rows;
#[allow(unsafe_code)] // the restartable sequences' assembly (see the module docs)
mod rseq;
mod saturation;
mod schema;
mod seat;
pub mod sim;
mod state;
mod stats;
mod sync;
#[allow(unsafe_code)] // row addresses back from the table (see `rows.rs`)
mod table;
mod tree;
mod update;
mod verify;
mod within;
mod work;

pub use clock::{Clock, MonotonicClock};
pub use config::{Config, MAX_SHARDS};
pub use count::MAX_THRESHOLD;
pub use counter::Counter;
pub use error::{ConfigError, Error};
pub use flush::{FlushKind, FlushOutcome, FlushStats, HotPathDecision};
#[cfg(not(loom))]
pub use flusher::{BackgroundFlusher, FlusherStats};
pub use group::Group;
pub use mode::{Fallback, Mode};
pub use policy::{
    BadThresholdSize, Concurrency, EarlyBreak, FlushScope, HotPathFlush, Policy, Preset,
    ThresholdRule, ThresholdScheme, ThresholdSize, UnknownPreset,
};
pub use read::Bounded;
pub use schema::{ItemId, ItemInfo, ItemKind, NodeItemId, Schema, SchemaBuilder, Unit, PAGE_SIZE};
pub use stats::HierStats;
pub use within::{OnBusy, ReadItem, Tolerance, Within, WithinFlush};

/// Restartable sequences the calling thread has restarted so far (aborted
/// by preemption, migration, a signal or a flusher's barrier, and run
/// again) in trees of the per-CPU mode ([`Mode::PerCpu`]): a diagnostic.
pub fn thread_restarts() -> u64 {
    rseq::restarts()
}
