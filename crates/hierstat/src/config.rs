//! Tree configuration.

use crate::clock::{Clock, MonotonicClock};
use crate::policy::{Policy, Preset};
use std::sync::Arc;

/// Largest shard count (the simulator runs up to 1024 logical CPUs).
pub const MAX_SHARDS: usize = 1024;

/// Configuration of a [`HierStats`](crate::HierStats) tree.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) shards: usize,
    pub(crate) policy: Policy,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) membarrier: bool,
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
        }
    }

    /// Sets the number of shards (1..=1024).
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

    /// Sets the clock (use a [`ManualClock`](crate::ManualClock) for virtual time).
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }
}
