//! The background (periodic) flusher: `flush_memcg_stats_dwork` as a thread.
//!
//! Every period it force-flushes the root. An async request
//! ([`HierStats::request_async_flush`](crate::HierStats::request_async_flush))
//! makes it flush at once and restart
//! its period, as the 2022 async refault patch scheduled the periodic work
//! early. Requests that come faster than the period therefore replace the
//! periodic flushes (each is the same root flush, counted in
//! [`FlusherStats::async_flushes`]): count both to wait for "the next
//! flush". Its *lag* — how late each periodic flush started against its
//! schedule — is measured and exposed, because upstream saw it slip by tens
//! of seconds under load.

use crate::engine::Core;
use crate::error::{ConfigError, Error};
use crate::flush::FlushKind;
use crate::sync::std_only::{StdArc, StdAtomicBool, StdAtomicU64 as AtomicU64};
use crate::sync::{Arc, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Lag and activity of a background flusher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Times the thread went to wait for its next deadline or a request
    /// (a flusher that never waits flushes back to back).
    pub waits: u64,
}

#[derive(Debug, Default)]
struct Shared {
    // ORDERING: Relaxed for all; statistics written by the flusher thread.
    periodic: AtomicU64,
    asyncs: AtomicU64,
    last_lag: AtomicU64,
    max_lag: AtomicU64,
    total_lag: AtomicU64,
    waits: AtomicU64,
    stop: StdAtomicBool,
}

/// A running background flusher. Stop it with [`stop`](Self::stop) (or by
/// dropping it); both wake the thread and join it.
#[derive(Debug)]
pub struct BackgroundFlusher {
    core: Arc<Core>,
    shared: StdArc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the background flusher of the tree whose state is `core` (see
/// [`HierStats::start_flusher`](crate::HierStats::start_flusher)).
pub(crate) fn start(core: &Arc<Core>, period: Duration) -> Result<BackgroundFlusher, Error> {
    let period_ns = match u64::try_from(period.as_nanos()) {
        Ok(ns) if ns > 0 => ns,
        _ => return Err(ConfigError::FlusherPeriod(period).into()),
    };
    let shared = StdArc::new(Shared::default());
    let thread_core = core.clone();
    let sh = shared.clone();
    let thread = std::thread::Builder::new()
        .name("hierstat-flusher".into())
        .spawn(move || run(&thread_core, sh, period_ns))
        .map_err(|e| Error::Spawn(e.to_string()))?;
    core.requests.flusher_started(true);
    Ok(BackgroundFlusher {
        core: core.clone(),
        shared,
        thread: Some(thread),
    })
}

fn run(core: &Core, sh: StdArc<Shared>, period_ns: u64) {
    let clock = &core.params.clock;
    let mut deadline = clock.now_ns().saturating_add(period_ns);
    let root = core.groups.root().clone();
    // ORDERING: Acquire pairs with the Release store in `shutdown`; nothing
    // rides on it (`shutdown` joins the thread), and no loom model runs
    // this real thread (see `scripts/loom-mutants.sh`, `unmutated`).
    let stopped = || sh.stop.load(Ordering::Acquire);
    loop {
        loop {
            if stopped() || core.requests.pending() {
                break;
            }
            let now = clock.now_ns();
            if now >= deadline {
                break;
            }
            let wait = Duration::from_nanos((deadline - now).min(50_000_000));
            // ORDERING: Relaxed; a statistic (see `Shared`).
            sh.waits.fetch_add(1, Ordering::Relaxed);
            core.requests
                .wait(wait, || stopped() || core.requests.pending());
        }
        if stopped() {
            return;
        }
        if core.requests.take() {
            core.flush(&root, FlushKind::Periodic, &mut ());
            sh.asyncs.fetch_add(1, Ordering::Relaxed);
            deadline = clock.now_ns().saturating_add(period_ns);
            continue;
        }
        let now = clock.now_ns();
        let lag = now.saturating_sub(deadline);
        core.flush(&root, FlushKind::Periodic, &mut ());
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
            waits: s.waits.load(Ordering::Relaxed),
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
        self.core.requests.wake_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            self.core.requests.flusher_started(false);
        }
    }
}

impl Drop for BackgroundFlusher {
    fn drop(&mut self) {
        self.shutdown();
    }
}
