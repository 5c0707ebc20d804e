//! Stats flushes in virtual time: the hot-path plan of each policy, the
//! flush lock as a resource, and the price of a flush.
//!
//! The engine cannot know that another logical CPU holds the flush lock in
//! virtual time (the host runs one thing at a time), so the refault path
//! asks the engine what its hot path would do
//! ([`HierStats::hot_path_decision_with_flusher`], the rule
//! `FlushKind::HotPath` itself follows) and only a flush that gets the
//! virtual lock runs on the engine (as a forced flush of the chosen
//! subtree, with the policy's threshold and ratelimit already checked):
//!
//! | hot path | plan |
//! |---|---|
//! | none | no flush |
//! | sync | threshold-guarded flush of the root (5.15) or the eviction group's subtree |
//! | ratelimited | as sync, only if the last root flush is older than 2 periods |
//! | async | if over the threshold, queue the periodic flush now on a kworker |
//!
//! A refault whose policy reads otherwise (`read_tolerance`: forced, or a
//! tolerance whose budget needs a flush) applies its flush to the engine
//! first and then takes the lock as a forced flush does
//! ([`FlushCtl::read_flush`]: waiting, never skipping).
//!
//! A flusher that finds a conflicting flush holding the lock skips (5.15
//! trylock), waits for it (6.8 serialize; ours for overlapping subtrees),
//! or, when the lock is dropped between shards (6.17), waits for at most one
//! shard pass of the holder. A waiting refault's flush is applied to the
//! engine when it is requested and priced as wait + duration; the stats it
//! reads can therefore be fresher by the updates made during the wait than
//! they would be. Waits only happen behind the periodic flush here and are
//! counted (`flush_waits`).

use crate::cost::{CostModel, Work};
use crate::lock::{Acquire, FlushLock, LockMode, Scope};
use hierstat::sim::Simulator as _;
use hierstat::{
    sim::WorkCounters, FlushKind, FlushOutcome, FlushScope, Group, HierStats, HotPathDecision,
};
use simcore::time::SimTime;
use std::collections::HashMap;

/// What the refault path should do about the stats.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Nothing.
    None,
    /// Flush this subtree synchronously.
    Flush(Group),
    /// Queue the periodic flush now.
    Async,
}

impl Plan {
    /// The policy's hot-path decision for a refault evicted by `g`, at the
    /// engine clock's current time: the engine's own rule
    /// ([`HierStats::hot_path_decision_with_flusher`]). The storm always
    /// runs the periodic flusher (in virtual time), so an async policy asks
    /// it rather than flushing synchronously.
    pub fn hot_path(stats: &HierStats, g: &Group) -> Plan {
        match stats.hot_path_decision_with_flusher(g, true) {
            Err(_) => Plan::None,
            Ok(HotPathDecision::Flush(FlushScope::Root)) => Plan::Flush(stats.root()),
            Ok(HotPathDecision::Flush(FlushScope::Subtree)) => Plan::Flush(g.clone()),
            Ok(HotPathDecision::RequestAsync) => Plan::Async,
            // No flush, not needed, ratelimited, or a decision this
            // simulator does not know (the enum is non-exhaustive).
            Ok(_) => Plan::None,
        }
    }
}

/// Virtual-time pricing of engine work.
#[derive(Debug, Clone)]
pub struct Pricing {
    /// Per-unit costs.
    pub costs: CostModel,
    /// Counters per cache line of a per-CPU row.
    pub counters_per_line: u32,
    /// Whether a flush pays a line transfer per remote row line it reads.
    pub remote_flush_lines: bool,
}

impl Pricing {
    /// Duration of an update path's work.
    pub fn update_ns(&self, wc: &WorkCounters) -> u64 {
        self.costs.cost_ns(&Work::from_engine(wc, 0))
    }

    /// Duration of a flush: its work, plus (optionally) one line transfer
    /// per `counters_per_line` counters read: the per-CPU rows it reads
    /// were last written by their own CPUs.
    pub fn flush_ns(&self, wc: &WorkCounters) -> u64 {
        let mut ns = self.costs.cost_ns(&Work::from_engine(wc, 1));
        if self.remote_flush_lines {
            let lines = wc
                .counters_aggregated
                .div_ceil(u64::from(self.counters_per_line));
            ns += lines * self.costs.line_transfer();
        }
        ns
    }
}

/// A flush that waits for the lock.
#[derive(Debug, Clone)]
enum Waiting {
    /// A refault flush already applied; hold the lock for `duration`.
    Applied { duration: SimTime },
    /// A periodic flush, applied when granted.
    Periodic,
}

/// One flush as seen by its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushRecord {
    /// Time from the request to the end of the flush.
    pub latency: SimTime,
    /// Of which waiting for the lock.
    pub wait: SimTime,
    /// Counters the flush aggregated (0 if it did not flush).
    pub counters: u64,
}

/// The flush lock and the flushes in flight.
#[derive(Debug)]
pub struct FlushCtl {
    lock: FlushLock,
    per_shard: bool,
    shards: u64,
    next_req: u32,
    waiting: HashMap<u32, Waiting>,
    /// Hold duration of each holder (for per-shard waits).
    holding: HashMap<u32, SimTime>,
    /// Release events to schedule: (time, request).
    pub releases: Vec<(SimTime, u32)>,
    /// Flushes (all kinds) with their latencies.
    pub records: Vec<FlushRecord>,
    /// Flushes that waited.
    pub waits: u64,
    /// Refault flushes skipped because the lock was busy.
    pub skipped: u64,
    pricing: Pricing,
}

impl FlushCtl {
    /// A free lock for `stats`' policy.
    pub fn new(stats: &HierStats, pricing: Pricing) -> Self {
        let p = stats.policy();
        let mode = LockMode::for_policy(p.concurrency);
        FlushCtl {
            lock: FlushLock::new(mode),
            per_shard: p.lock_per_shard && mode == LockMode::Serialize,
            shards: stats.shards() as u64,
            next_req: 0,
            waiting: HashMap::new(),
            holding: HashMap::new(),
            releases: Vec::new(),
            records: Vec::new(),
            waits: 0,
            skipped: 0,
            pricing,
        }
    }

    /// The pricing in use.
    pub fn pricing(&self) -> &Pricing {
        &self.pricing
    }

    fn run(stats: &HierStats, g: &Group, kind: FlushKind) -> WorkCounters {
        let mut wc = WorkCounters::default();
        let r = stats.flush_with(g, kind, &mut wc);
        debug_assert!(r.is_ok(), "the storm's groups are its tree's own");
        wc
    }

    fn hold(&mut self, req: u32, now: SimTime, duration: SimTime) {
        self.lock.set_until(req, now + duration);
        self.holding.insert(req, duration);
        self.releases.push((now + duration, req));
    }

    /// A synchronous flush of `g` (scope `scope`) requested at `now` by a
    /// refault: what became of it, and the time it cost the refault
    /// (`None`: none, it skipped at once).
    pub fn refault_flush(
        &mut self,
        stats: &HierStats,
        g: &Group,
        scope: Scope,
        now: SimTime,
    ) -> (FlushOutcome, Option<FlushRecord>) {
        if let LockMode::WaitOngoing { max_wait } = self.lock.mode() {
            if let Some(until) = self.lock.busy_until(scope).filter(|&u| u > now) {
                return self.refault_flush_waiting(stats, g, scope, now, until - now, max_wait);
            }
        }
        match self.refault_flush_at_once(stats, g, scope, now) {
            Some(r) => (
                FlushOutcome::Flushed {
                    root: stats.root().same(g),
                },
                Some(r),
            ),
            None => (FlushOutcome::Skipped, None),
        }
    }

    /// [`LockMode::WaitOngoing`] with the lock busy for `wait` more: past
    /// `max_wait` the refault gives up (skipped, after waiting); otherwise
    /// it waits for the running flush, then flushes only if its group is
    /// still over the threshold.
    fn refault_flush_waiting(
        &mut self,
        stats: &HierStats,
        g: &Group,
        scope: Scope,
        now: SimTime,
        wait: SimTime,
        max_wait: SimTime,
    ) -> (FlushOutcome, Option<FlushRecord>) {
        self.waits += 1;
        if wait > max_wait {
            self.skipped += 1;
            let r = FlushRecord {
                latency: max_wait,
                wait: max_wait,
                counters: 0,
            };
            return (FlushOutcome::Skipped, Some(r));
        }
        // The running flush's effect is already applied (flushes apply at
        // request time in this model), so the threshold check sees it.
        let mut wc = WorkCounters::default();
        let outcome = stats.flush_with(g, FlushKind::Read, &mut wc);
        debug_assert!(outcome.is_ok(), "the storm's groups are its tree's own");
        match outcome {
            Ok(o @ FlushOutcome::Flushed { .. }) => {
                let d = self.pricing.flush_ns(&wc);
                let req = self.next_req;
                self.next_req += 1;
                if self.lock.request(now, req, scope) == Acquire::Queued {
                    self.waiting.insert(req, Waiting::Applied { duration: d });
                }
                let r = FlushRecord {
                    latency: wait + d,
                    wait,
                    counters: wc.counters_aggregated,
                };
                self.records.push(r);
                (o, Some(r))
            }
            _ => (
                FlushOutcome::NotNeeded,
                Some(FlushRecord {
                    latency: wait,
                    wait,
                    counters: 0,
                }),
            ),
        }
    }

    /// [`refault_flush`](Self::refault_flush) under the other rules (or
    /// with the lock free); `None` if it was skipped.
    fn refault_flush_at_once(
        &mut self,
        stats: &HierStats,
        g: &Group,
        scope: Scope,
        now: SimTime,
    ) -> Option<FlushRecord> {
        if self.per_shard {
            let wc = Self::run(stats, g, FlushKind::Forced);
            return Some(self.per_shard_flush(&wc, scope, now));
        }
        let req = self.next_req;
        self.next_req += 1;
        match self.lock.request(now, req, scope) {
            Acquire::Granted => {
                let wc = Self::run(stats, g, FlushKind::Forced);
                Some(self.granted(req, &wc, now))
            }
            Acquire::Queued => {
                let wc = Self::run(stats, g, FlushKind::Forced);
                Some(self.queued(req, &wc, scope, now))
            }
            Acquire::Skipped => {
                self.skipped += 1;
                None
            }
        }
    }

    /// A flush under a lock dropped per shard pass, already applied to
    /// the engine with work `wc`: it waits for at most one pass of a
    /// holder, then runs interleaved with it.
    fn per_shard_flush(&mut self, wc: &WorkCounters, scope: Scope, now: SimTime) -> FlushRecord {
        let wait = match self.lock.busy_until(scope) {
            Some(until) if until > now => {
                let pass = self.holding.values().copied().max().unwrap_or(0) / self.shards;
                (until - now).min(pass.max(1))
            }
            _ => 0,
        };
        let d = self.pricing.flush_ns(wc);
        self.waits += u64::from(wait > 0);
        let r = FlushRecord {
            latency: wait + d,
            wait,
            counters: wc.counters_aggregated,
        };
        self.records.push(r);
        r
    }

    /// Request `req`, granted at `now`, made a flush of work `wc`: it
    /// holds the lock for the flush's duration.
    fn granted(&mut self, req: u32, wc: &WorkCounters, now: SimTime) -> FlushRecord {
        let d = self.pricing.flush_ns(wc);
        self.hold(req, now, d);
        let r = FlushRecord {
            latency: d,
            wait: 0,
            counters: wc.counters_aggregated,
        };
        self.records.push(r);
        r
    }

    /// Request `req`, queued at `now`, made a flush of work `wc`, already
    /// applied: it holds the lock for the flush's duration once granted,
    /// and its caller pays the wait too.
    fn queued(&mut self, req: u32, wc: &WorkCounters, scope: Scope, now: SimTime) -> FlushRecord {
        let d = self.pricing.flush_ns(wc);
        let wait = self
            .lock
            .busy_until(scope)
            .map_or(0, |u| u.saturating_sub(now));
        self.waiting.insert(req, Waiting::Applied { duration: d });
        self.waits += 1;
        let r = FlushRecord {
            latency: wait + d,
            wait,
            counters: wc.counters_aggregated,
        };
        self.records.push(r);
        r
    }

    /// A flush a refault's read makes whatever the policy's rule (a forced
    /// read, or a tolerance read whose budget needed one,
    /// [`lab::reader::ReadMode`]), already applied to the engine with work
    /// `wc`: it takes the lock for `scope` at `now` waiting for a
    /// conflicting holder, never skipping (as the `stats` kind's forced and
    /// tolerance readers do), and the refault pays the wait and the flush.
    pub fn read_flush(&mut self, wc: &WorkCounters, scope: Scope, now: SimTime) -> FlushRecord {
        if self.per_shard {
            return self.per_shard_flush(wc, scope, now);
        }
        let req = self.next_req;
        self.next_req += 1;
        match self.lock.request_waiting(now, req, scope) {
            Acquire::Granted => self.granted(req, wc, now),
            _ => self.queued(req, wc, scope, now),
        }
    }

    /// The periodic (or kworker-queued) forced root flush at `now`.
    pub fn periodic_flush(&mut self, stats: &HierStats, now: SimTime) {
        let root = stats.root();
        let req = self.next_req;
        self.next_req += 1;
        let scope = Scope {
            lo: 0,
            hi: u32::MAX,
        };
        match self.lock.request(now, req, scope) {
            Acquire::Granted => {
                let wc = Self::run(stats, &root, FlushKind::Periodic);
                self.granted(req, &wc, now);
            }
            Acquire::Queued => {
                self.waits += 1;
                self.waiting.insert(req, Waiting::Periodic);
            }
            // 5.15's dwork trylocks too: a busy lock means a flush is
            // running, and this one is dropped.
            Acquire::Skipped => self.skipped += 1,
        }
    }

    /// The holder `req` releases the lock at `now`; grants waiters.
    pub fn release(&mut self, stats: &HierStats, req: u32, now: SimTime) {
        self.holding.remove(&req);
        for g in self.lock.release(req, now) {
            match self.waiting.remove(&g.request) {
                Some(Waiting::Applied { duration }) => self.hold(g.request, now, duration),
                Some(Waiting::Periodic) => {
                    let wc = Self::run(stats, &stats.root(), FlushKind::Periodic);
                    let d = self.pricing.flush_ns(&wc);
                    self.hold(g.request, now, d);
                    self.records.push(FlushRecord {
                        latency: now - g.since + d,
                        wait: now - g.since,
                        counters: wc.counters_aggregated,
                    });
                }
                None => {}
            }
        }
    }
}
