//! The background (periodic) flusher: `flush_memcg_stats_dwork` as a thread.
//!
//! Every period it force-flushes the root. An async request
//! ([`HierStats::request_async_flush`]) makes it flush at once and restart
//! its period, as the 2022 async refault patch scheduled the periodic work
//! early. Its *lag* — how late each periodic flush started against its
//! schedule — is measured and exposed, because upstream saw it slip by tens
//! of seconds under load.

use crate::error::{ConfigError, Error};
use crate::flush::FlushKind;
use crate::stats::{Core, HierStats};
use crate::sync::{lock, Arc, Ordering};
use std::sync::atomic::AtomicU64;
use std::thread::JoinHandle;
use std::time::Duration;

/// Lag and activity of a background flusher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlusherStats {
    /// Periodic flushes run.
    pub periodic_flushes: u64,
    /// Flushes run because of an async request.
    pub async_flushes: u64,
    /// Lag of the last periodic flush, ns.
    pub last_lag_ns: u64,
    /// Largest lag seen, ns.
    pub max_lag_ns: u64,
    /// Sum of lags, ns (mean = total / periodic_flushes).
    pub total_lag_ns: u64,
}

#[derive(Debug, Default)]
struct Shared {
    // ORDERING: Relaxed for all; statistics written by the flusher thread.
    periodic: AtomicU64,
    asyncs: AtomicU64,
    last_lag: AtomicU64,
    max_lag: AtomicU64,
    total_lag: AtomicU64,
    stop: std::sync::atomic::AtomicBool,
}

/// A running background flusher. Stop it with [`stop`](Self::stop) (or by
/// dropping it); both wake the thread and join it.
#[derive(Debug)]
pub struct BackgroundFlusher {
    core: Arc<Core>,
    shared: std::sync::Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl HierStats {
    /// Starts a background thread that force-flushes the root every
    /// `period` (the policy's `period_ns` is the kernel's 2 s) and serves
    /// async flush requests. The thread uses the host clock for sleeping;
    /// lags are measured with the tree's clock.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] ([`ConfigError::FlusherPeriod`]) for a zero
    /// period (it would flush back to back) or one whose nanoseconds do not
    /// fit 64 bits (about 584 years); [`Error::Spawn`] if the OS cannot
    /// start the thread.
    pub fn start_flusher(&self, period: Duration) -> Result<BackgroundFlusher, Error> {
        let period_ns = match u64::try_from(period.as_nanos()) {
            Ok(ns) if ns > 0 => ns,
            _ => return Err(ConfigError::FlusherPeriod(period).into()),
        };
        let shared = std::sync::Arc::new(Shared::default());
        let core = self.core.clone();
        let stats = self.clone();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("hierstat-flusher".into())
            .spawn(move || run(stats, sh, period_ns))
            .map_err(|e| Error::Spawn(e.to_string()))?;
        // ORDERING: Relaxed; a mode hint for async hot paths (`flush_entry`).
        self.core.flushers.fetch_add(1, Ordering::Relaxed);
        Ok(BackgroundFlusher {
            core,
            shared,
            thread: Some(thread),
        })
    }
}

fn run(stats: HierStats, sh: std::sync::Arc<Shared>, period_ns: u64) {
    let core = &stats.core;
    let mut deadline = core.clock.now_ns().saturating_add(period_ns);
    let root = stats.root();
    loop {
        {
            let _leaf = crate::sync::ranked(crate::sync::Rank::Leaf);
            let mut g = lock(&core.wake);
            loop {
                if sh.stop.load(Ordering::Acquire) || core.async_requested.load(Ordering::Acquire) {
                    break;
                }
                let now = core.clock.now_ns();
                if now >= deadline {
                    break;
                }
                let wait = Duration::from_nanos((deadline - now).min(50_000_000));
                g = match core.wake_cv.wait_timeout(g, wait) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                };
            }
        }
        // ORDERING: Acquire pairs with the Release store in `stop`.
        if sh.stop.load(Ordering::Acquire) {
            return;
        }
        // ORDERING: Acquire pairs with `request_async`'s Release store.
        if core.async_requested.swap(false, Ordering::Acquire) {
            let _ = stats.flush_with(&root, FlushKind::Periodic, &mut ());
            sh.asyncs.fetch_add(1, Ordering::Relaxed);
            deadline = core.clock.now_ns().saturating_add(period_ns);
            continue;
        }
        let now = core.clock.now_ns();
        let lag = now.saturating_sub(deadline);
        let _ = stats.flush_with(&root, FlushKind::Periodic, &mut ());
        sh.periodic.fetch_add(1, Ordering::Relaxed);
        sh.last_lag.store(lag, Ordering::Relaxed);
        sh.max_lag.fetch_max(lag, Ordering::Relaxed);
        sh.total_lag.fetch_add(lag, Ordering::Relaxed);
        deadline = deadline.saturating_add(period_ns);
        if deadline <= now {
            deadline = now.saturating_add(period_ns);
        }
    }
}

impl BackgroundFlusher {
    /// Current lag and activity.
    pub fn stats(&self) -> FlusherStats {
        let s = &self.shared;
        // ORDERING: Relaxed; statistics.
        FlusherStats {
            periodic_flushes: s.periodic.load(Ordering::Relaxed),
            async_flushes: s.asyncs.load(Ordering::Relaxed),
            last_lag_ns: s.last_lag.load(Ordering::Relaxed),
            max_lag_ns: s.max_lag.load(Ordering::Relaxed),
            total_lag_ns: s.total_lag.load(Ordering::Relaxed),
        }
    }

    /// Stops the thread and waits for it; returns its final statistics.
    pub fn stop(mut self) -> FlusherStats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        // ORDERING: Release pairs with the thread's Acquire loads.
        self.shared.stop.store(true, Ordering::Release);
        {
            let _leaf = crate::sync::ranked(crate::sync::Rank::Leaf);
            let _g = lock(&self.core.wake);
            self.core.wake_cv.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            // ORDERING: Relaxed; see `start_flusher`.
            self.core.flushers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for BackgroundFlusher {
    fn drop(&mut self) {
        self.shutdown();
    }
}
