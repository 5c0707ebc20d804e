//! Time source for ratelimiting and the periodic flusher, injected so the
//! simulator can run the engine in virtual time.

use crate::sync::std_only::{StdArc as Arc, StdAtomicU64 as AtomicU64};
use crate::sync::Ordering;
use std::fmt::Debug;
use std::time::Instant;

/// A monotonic nanosecond clock.
pub trait Clock: Send + Sync + Debug {
    /// Nanoseconds since an arbitrary fixed origin.
    fn now_ns(&self) -> u64;
}

/// The host's monotonic clock.
#[derive(Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}

/// A clock set by hand (virtual time); clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    // ORDERING: Relaxed; the time is a plain value with no data published
    // through it (the simulator sets it from one thread).
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `ns`.
    pub fn new(ns: u64) -> Self {
        ManualClock {
            now: Arc::new(AtomicU64::new(ns)),
        }
    }

    /// Sets the time.
    #[inline]
    pub fn set(&self, ns: u64) {
        self.now.store(ns, Ordering::Relaxed);
    }

    /// Advances the time by `ns`.
    pub fn advance(&self, ns: u64) {
        self.now.fetch_add(ns, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
}
