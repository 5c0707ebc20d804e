//! Tree configuration: what a user asks for ([`Config`]) and what the engine
//! derives from it once (`Params`).

use crate::clock::{Clock, MonotonicClock};
use crate::count::COUNT_LIMIT;
use crate::policy::{Policy, Preset, ThresholdRule, ThresholdScheme};
use crate::schema::Schema;
use crate::sync::std_only::StdArc as Arc;

/// Largest shard count: enough for a shard per updater thread of a large
/// service (see [`Config::shards`]).
pub const MAX_SHARDS: usize = 4096;

/// Configuration of a [`HierStats`](crate::HierStats) tree.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) shards: usize,
    pub(crate) policy: Policy,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) membarrier: bool,
    pub(crate) per_cpu: bool,
}

impl Default for Config {
    /// The `hierstat` preset with one shard per available CPU.
    fn default() -> Self {
        Config::preset(Preset::Hierstat)
    }
}

impl Config {
    /// A preset's policy, one shard per available CPU, the monotonic clock.
    pub fn preset(preset: Preset) -> Self {
        Config::with_policy(preset.policy())
    }

    /// A custom policy, one shard per available CPU, the monotonic clock.
    pub fn with_policy(policy: Policy) -> Self {
        let shards = std::thread::available_parallelism().map_or(1, |n| n.get());
        Config {
            shards: shards.min(MAX_SHARDS),
            policy,
            clock: Arc::new(MonotonicClock::new()),
            membarrier: true,
            per_cpu: false,
        }
    }

    /// Sets the number of shards (1..=[`MAX_SHARDS`]); the default is one
    /// per available CPU.
    ///
    /// # How many
    ///
    /// **As many as the threads that update at once.** A thread takes the
    /// lowest free *seat* of a process-wide pool at its first update and
    /// gives it back when it exits; seat `i` owns shard `i` while
    /// `i < shards` and updates it with plain loads and stores (about a
    /// plain add's cost), while threads beyond the shard count share shards
    /// through atomic adds (2–3× the cost, and contended). So with `shards`
    /// at least the number of threads alive at once (the main thread
    /// included, if it updates), every update takes the owner's path,
    /// however many threads come and go. Hundreds to a few thousand shards
    /// are fine: memory follows what is written, not the shard count.
    ///
    /// # What it costs
    ///
    /// * **Memory**: a (group, shard) *row* exists only once that shard
    ///   writes the group: `8 B × (slots + 2)` of control words and owner
    ///   cells, plus `8 B × slots` of flushers' snapshots once an owner
    ///   wrote it, plus `8 B × slots` of shared cells once the shared path
    ///   wrote it (`slots`: one per item, `1 + nodes` per per-node item).
    ///   Each group also has a row table of `9 B × min(shards, 64)` (a
    ///   row's address and its index byte per shard), plus, once a shard at
    ///   or above 64 writes it, `24 B` per 16 shards above 64 and `144 B`
    ///   per such 16-shard block written. A group of 16
    ///   items written from 4 shards of 64 costs about 2.3 KB in all; from
    ///   all 64, about 18.7 KB.
    /// * **Flush time**: a flush visits only the rows updated since the last
    ///   one, but passes over every shard (a lock, a few loads: about
    ///   0.1 µs a shard), so a flush of a 4,096-shard tree costs a few
    ///   hundred µs more than one of a 64-shard tree. Reads flush only past
    ///   their threshold (or per policy), and the threshold grows with the
    ///   shard count.
    /// * **Error bounds and thresholds** scale with the shard count (the
    ///   kernel's `batch × CPUs`), per the policy's
    ///   [`ThresholdSize`](crate::ThresholdSize): `BatchSqrtShards` grows
    ///   more slowly.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// Replaces the policy.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Whether flushes may use `membarrier(2)` (the default, where the
    /// kernel offers `MEMBARRIER_CMD_PRIVATE_EXPEDITED`) so that a thread
    /// that owns its shard updates with plain stores and a compiler fence.
    /// With `false`, or where membarrier is unavailable, both sides use
    /// `SeqCst` fences instead: correct everywhere, and the update path
    /// then costs one fence (an `mfence`-class instruction) more.
    pub fn membarrier(mut self, allow: bool) -> Self {
        self.membarrier = allow;
        self
    }

    /// Whether implicit updates write per CPU, in restartable sequences
    /// (default: `false`, per-thread shards).
    ///
    /// With `true`, where the process can (Linux with glibc 2.35 or later,
    /// which registers every thread's `rseq(2)` area, on x86-64 or aarch64,
    /// a kernel with `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` (5.10), and
    /// membarrier allowed, see [`membarrier`](Self::membarrier)), the tree
    /// has one shard per possible CPU, whatever [`shards`](Self::shards)
    /// says: any number of threads update with plain loads and stores in a
    /// critical section the kernel restarts if the thread is preempted,
    /// migrated or signalled in it, no thread needs a seat, and a group has
    /// a row per CPU that wrote it. Elsewhere the tree runs in today's
    /// per-thread mode with the shards asked for;
    /// [`HierStats::mode`](crate::HierStats::mode) says which, and why.
    pub fn per_cpu(mut self, on: bool) -> Self {
        self.per_cpu = on;
        self
    }

    /// Sets the clock (use a [`ManualClock`](crate::sim::ManualClock) for virtual time).
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }
}

/// The configuration a tree runs with, derived once at construction.
///
/// Immutable after [`Params::new`] (no interior mutability), so every part
/// of the engine reads its fields directly.
#[derive(Debug)]
pub(crate) struct Params {
    pub(crate) schema: Schema,
    pub(crate) policy: Policy,
    pub(crate) shards: usize,
    /// Threshold `T` in pages.
    pub(crate) threshold: u64,
    /// Updates stop counting a group above this: the policy's early break
    /// (see `EarlyBreak`), at most `COUNT_LIMIT` (see `count.rs`).
    pub(crate) break_above: u64,
    /// The residue batch in pages.
    pub(crate) batch: u64,
    pub(crate) clock: Arc<dyn Clock>,
    /// The threshold accounting walks the ancestors' residues on every
    /// update (kernel-exact per-group accounting).
    pub(crate) walks_ancestors: bool,
}

impl Params {
    /// The parameters of a tree of `schema` under `policy` on `shards`
    /// shards (already checked).
    pub(crate) fn new(
        schema: Schema,
        policy: Policy,
        shards: usize,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Params {
            threshold: policy.threshold_pages(shards),
            break_above: policy.break_above(shards).min(COUNT_LIMIT),
            batch: u64::from(policy.batch),
            walks_ancestors: policy.threshold == ThresholdRule::PerGroup
                && policy.scheme == ThresholdScheme::PerAncestor,
            schema,
            policy,
            shards,
            clock,
        }
    }
}
