//! One simulated run of the refault storm under one policy.
//!
//! * **Tree**: `/init.scope`, `/user.slice`, `/system.slice` with
//!   `svc0.service` … and `workload.service`; one hierstat tree with one
//!   shard per logical CPU, the engine clock set to virtual time.
//! * **Background**: every CPU makes bursts of stat updates (page faults,
//!   anon map/unmap, dirtying and writeback, slab, socket buffers) in the
//!   services whose tasks run on it, at Poisson times.
//! * **Workload**: the first `workload.cpus` CPUs read a file with a hot
//!   set through the LRU model under `memory.max`; an anonymous heap of
//!   THPs grows and shrinks (and is touched) on a cycle, with swap. Misses
//!   on shadow entries are refaults: each runs the workingset test with the
//!   policy's hot-path flush ([`super::flush`]) and is timed.
//! * **Periodic flush**: a forced root flush every `flush_period_ms`, on a
//!   kworker (the async policy pulls it forward).
//!
//! A refault's latency is the rest of `workingset_refault` (a log-uniform
//! draw, [`super::spec::LatencySpec::base_ns`]), plus its stats updates
//! priced by the cost model, plus its flush (lock wait and duration).
//!
//! **How a refault reads** the eviction lruvec's sizes is the policy's
//! [`ReadMode`] (its `read_tolerance`, issue 37): `guarded`, the policy's
//! hot-path flush above (what each kernel does); `forced`, a forced flush
//! of the eviction group's subtree on every refault; `clean`, no flush;
//! or a tolerance (`1%`, `64` pages, `1%+64`): hierstat's `read_within` of
//! the lists the workingset size sums ([`models::workingset::workingset_lists`],
//! each within its budget), which flushes only what could break a budget.
//! A forced or tolerance read's flush takes the lock waiting whatever the
//! policy's rule ([`FlushCtl::read_flush`]). Every refault's read is then
//! judged against the exact list sizes at its engine call: each list within
//! the bound the engine reported for it ([`StormOutcome::stale_reads`]),
//! and for a tolerance read each bound within its budget
//! ([`StormOutcome::unmet_reads`]).

use super::flush::{FlushCtl, FlushRecord, Plan, Pricing};
use super::spec::RefaultSpec;
use super::world::{mb_pages, World, THP};
use crate::cost::CostModel;
use crate::error::SimError;
use crate::lock::Scope;
use hierstat::sim::Simulator as _;
use hierstat::{
    sim::{ManualClock, WorkCounters},
    FlushKind, FlushOutcome, Policy, Preset, Within, WithinFlush, PAGE_SIZE,
};
use lab::reader::ReadMode;
use models::memcg::{MemcgError, MemcgId, MemcgTree, Stat};
use models::workingset::{
    workingset_lists, Access, Lru, LruList, RefaultFlush, RefaultInfo, WorkingsetError,
};
use simcore::time::{SimTime, MILLIS, SECONDS};
use simcore::{EventQueue, Rng, Scheduled};
use std::collections::HashMap;

/// What one run measured (after the warm-up).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StormOutcome {
    /// Latency of every refault, in ns.
    pub refault_latencies: Vec<u64>,
    /// Latency (wait + duration) of every flush: refault path, periodic and
    /// kworker flushes.
    pub flush_latencies: Vec<u64>,
    /// Refaults.
    pub refaults: u64,
    /// Of which anonymous (swap-ins of THPs).
    pub anon_refaults: u64,
    /// Refaults whose decision differed from the exact-stats decision.
    pub mismatches: u64,
    /// Refaults activated.
    pub activations: u64,
    /// Refaults exact statistics would activate.
    pub exact_activations: u64,
    /// Refaults that flushed synchronously.
    pub refault_flushes: u64,
    /// Refault flushes skipped (lock busy).
    pub skipped_flushes: u64,
    /// Flushes that waited for the lock.
    pub flush_waits: u64,
    /// Total time flushes waited for the lock, in ns.
    pub flush_wait_ns: u64,
    /// Async flush requests queued.
    pub async_requests: u64,
    /// Evictions.
    pub evictions: u64,
    /// Background stat updates.
    pub background_updates: u64,
    /// Charges that failed with OOM (the workload is not killed).
    pub ooms: u64,
    /// Measured virtual duration.
    pub duration: SimTime,
    /// Per refault with an eviction group: the largest distance of a list
    /// it read from the exact list size (pages).
    pub read_errors: Vec<u64>,
    /// Per such refault: the largest bound the engine reported for a list
    /// it read (refaults with a list without one left out).
    pub read_bounds: Vec<u64>,
    /// Per such refault: its flush's time (wait and duration; 0 if it did
    /// not flush).
    pub read_flush_ns: Vec<u64>,
    /// Counters the refaults' flushes aggregated.
    pub read_counters: u64,
    /// Refaults whose tolerance read flushed part of the subtree.
    pub partial_flushes: u64,
    /// Refaults with a list further from its exact size than its bound.
    pub stale_reads: u64,
    /// Tolerance reads with a list whose bound missed its budget.
    pub unmet_reads: u64,
}

impl StormOutcome {
    /// Fraction of refaults whose decision differs from the exact one.
    pub fn mismatch_rate(&self) -> f64 {
        ratio(self.mismatches, self.refaults)
    }

    /// Mean refault latency in ns.
    pub fn mean_refault_ns(&self) -> f64 {
        mean(&self.refault_latencies)
    }
}

pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

pub(crate) fn mean(v: &[u64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Background { cpu: u32 },
    Access { cpu: u32 },
    AnonTick { tick: u64 },
    AnonOp { cpu: u32 },
    Periodic { gen: u64 },
    Release { req: u32 },
    WarmupEnd,
    Stop,
}

/// Background operations: (stat, pages-to-unit factor).
const BG_OPS: [(Stat, i64); 6] = [
    (Stat::Anon, 1),
    (Stat::FileDirty, 1),
    (Stat::FileWriteback, 1),
    (Stat::SlabReclaimable, PAGE_SIZE as i64),
    (Stat::Sock, 1),
    (Stat::FileMapped, 1),
];

const TICK: SimTime = 10 * MILLIS;
/// CPU time between two heap operations of a tick.
const OP_GAP: SimTime = 200;

/// Per-run state besides the models.
struct Run<'a> {
    spec: &'a RefaultSpec,
    read: ReadMode,
    clock: ManualClock,
    rng: Rng,
    queue: EventQueue<Ev>,
    ctl: FlushCtl,
    scopes: HashMap<MemcgId, Scope>,
    gen: u64,
    async_pending: bool,
    measuring: bool,
    out: StormOutcome,
}

impl Run<'_> {
    /// One page access on `cpu` at `now`; returns the CPU time it took
    /// (the refault latency for a refault).
    fn access(
        &mut self,
        tree: &mut MemcgTree,
        lru: &mut Lru,
        cpu: usize,
        slot: u32,
        now: SimTime,
    ) -> Result<SimTime, SimError> {
        self.clock.set(now);
        let mut flush = Reader {
            mode: self.read,
            scopes: &self.scopes,
            ctl: &mut self.ctl,
            now,
            record: None,
            async_now: false,
            seen: None,
            within: Vec::new(),
        };
        let res = lru.access(tree, cpu, slot, &mut flush);
        let (record, async_now, seen) = (flush.record, flush.async_now, flush.seen);
        tree.take_work();
        for (t, req) in self.ctl.releases.drain(..) {
            self.queue.push(t, Ev::Release { req });
        }
        if async_now && !self.async_pending {
            self.async_pending = true;
            self.gen += 1;
            let at = now + self.spec.latency.kworker_delay_us * 1000;
            self.queue.push(at, Ev::Periodic { gen: self.gen });
            self.out.async_requests += u64::from(self.measuring);
        }
        let info = match res {
            Ok(Access::Refault(info)) => info,
            Ok(_) => return Ok(0),
            Err(WorkingsetError::Memcg(MemcgError::Oom { .. })) => {
                self.out.ooms += 1;
                return Ok(0);
            }
            Err(e) => return Err(e.into()),
        };
        let [lo, hi] = self.spec.latency.base_ns;
        let base = log_uniform(&mut self.rng, lo, hi);
        let flush_ns = record.map_or(0, |r| r.latency);
        let latency = base + self.ctl.pricing().update_ns(&info.update_work) + flush_ns;
        if self.measuring {
            let o = &mut self.out;
            o.refaults += 1;
            o.anon_refaults += u64::from(!info.file);
            o.refault_latencies.push(latency);
            o.mismatches += u64::from(info.mismatch());
            o.activations += u64::from(info.activate);
            o.exact_activations += u64::from(info.exact_activate);
            o.refault_flushes +=
                u64::from(matches!(info.flush, Some(FlushOutcome::Flushed { .. })));
            o.skipped_flushes += u64::from(info.flush == Some(FlushOutcome::Skipped));
            if let Some(seen) = seen {
                o.judge(&info, &seen, flush_ns, record.map_or(0, |r| r.counters));
            }
        }
        Ok(latency)
    }
}

/// What a refault's read saw of the lists it read: each one's bound.
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// Per list read ([`LruList`] as index): its bound, `None` if the
    /// engine certified none; lists not read are `Some(0)`.
    bounds: [Option<u64>; 4],
    /// A tolerance read: whether every bound fit its budget.
    met: Option<bool>,
    /// A tolerance read that flushed part of the subtree.
    partial: bool,
}

impl StormOutcome {
    /// Judges a measured refault's read against the exact list sizes at
    /// its engine call.
    fn judge(&mut self, info: &RefaultInfo, seen: &Seen, flush_ns: u64, counters: u64) {
        let (mut error, mut bound, mut bounded, mut stale) = (0u64, 0u64, true, false);
        for l in workingset_lists(info.file, info.swap) {
            let off = info.sizes.get(l).abs_diff(info.exact_sizes.get(l));
            error = error.max(off);
            match seen.bounds[l as usize] {
                Some(b) => {
                    bound = bound.max(b);
                    stale |= off > b;
                }
                None => bounded = false,
            }
        }
        self.read_errors.push(error);
        if bounded {
            self.read_bounds.push(bound);
        }
        self.read_flush_ns.push(flush_ns);
        self.read_counters += counters;
        self.partial_flushes += u64::from(seen.partial);
        self.stale_reads += u64::from(stale);
        self.unmet_reads += u64::from(seen.met == Some(false));
    }
}

/// A refault's read of the eviction lruvec, as its [`ReadMode`] says (see
/// the module docs).
struct Reader<'a> {
    mode: ReadMode,
    scopes: &'a HashMap<MemcgId, Scope>,
    ctl: &'a mut FlushCtl,
    now: SimTime,
    /// The refault's flush, if it made one.
    record: Option<FlushRecord>,
    /// The policy's hot path asked for the background flush.
    async_now: bool,
    /// What the read saw (`None`: the refault had no eviction group).
    seen: Option<Seen>,
    within: Vec<Within>,
}

impl Reader<'_> {
    /// The engine's bound of `ev`, for every list.
    fn bounds(tree: &MemcgTree, ev: MemcgId) -> Seen {
        let b = tree
            .group(ev)
            .ok()
            .and_then(|g| tree.stats().error_bound_pages(g).ok().flatten());
        Seen {
            bounds: [b; 4],
            met: None,
            partial: false,
        }
    }
}

impl RefaultFlush for Reader<'_> {
    /// The policy's hot-path flush (`guarded`).
    fn flush(&mut self, t: &mut MemcgTree, ev: MemcgId) -> Option<FlushOutcome> {
        let g = t.group(ev).ok()?.clone();
        match Plan::hot_path(t.stats(), &g) {
            Plan::None => Some(FlushOutcome::NotNeeded),
            Plan::Async => {
                self.async_now = true;
                Some(FlushOutcome::AsyncRequested)
            }
            Plan::Flush(target) => {
                let id = if target.same(&t.stats().root()) {
                    t.root()
                } else {
                    ev
                };
                let scope = *self.scopes.get(&id)?;
                let (outcome, r) = self.ctl.refault_flush(t.stats(), &target, scope, self.now);
                self.record = r;
                Some(outcome)
            }
        }
    }

    fn flush_lruvec(
        &mut self,
        t: &mut MemcgTree,
        ev: MemcgId,
        node: usize,
        lists: &[LruList],
    ) -> Option<FlushOutcome> {
        let flushed = FlushOutcome::Flushed {
            root: ev == t.root(),
        };
        let outcome = match self.mode {
            ReadMode::Guarded => self.flush(t, ev),
            ReadMode::Clean => None,
            ReadMode::Forced => {
                let g = t.group(ev).ok()?.clone();
                let scope = *self.scopes.get(&ev)?;
                let mut wc = WorkCounters::default();
                t.stats().flush_with(&g, FlushKind::Forced, &mut wc).ok()?;
                self.record = Some(self.ctl.read_flush(&wc, scope, self.now));
                Some(flushed)
            }
            ReadMode::Within { .. } => {
                let tolerance = self.mode.tolerance()?;
                let scope = *self.scopes.get(&ev)?;
                let stats: Vec<Stat> = lists.iter().map(|l| l.stat()).collect();
                let mut wc = WorkCounters::default();
                let done = t
                    .lruvec_within(ev, node, &stats, tolerance, &mut self.within, &mut wc)
                    .ok()?;
                let mut seen = Seen {
                    bounds: [Some(0); 4],
                    met: Some(self.within.iter().all(|w| w.met)),
                    partial: matches!(done, WithinFlush::Partial { .. }),
                };
                for (l, w) in lists.iter().zip(&self.within) {
                    seen.bounds[*l as usize] = w.read.bound;
                }
                self.seen = Some(seen);
                return match done {
                    WithinFlush::None => Some(FlushOutcome::NotNeeded),
                    _ => {
                        self.record = Some(self.ctl.read_flush(&wc, scope, self.now));
                        Some(flushed)
                    }
                };
            }
        };
        self.seen = Some(Self::bounds(t, ev));
        outcome
    }
}

fn log_uniform(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
    (a + (b - a) * rng.unit_f64()).exp() as u64
}

/// Runs the storm once under `preset` with `seed`.
///
/// # Errors
/// Engine or model errors (bugs), never a policy's behaviour.
pub fn run_once(
    spec: &RefaultSpec,
    preset: Preset,
    seed: u64,
    costs: &CostModel,
) -> Result<StormOutcome, SimError> {
    run_once_policy(spec, preset.policy(), seed, costs)
}

/// [`run_once`] under a custom policy (experiments with single knobs).
///
/// # Errors
/// As [`run_once`].
pub fn run_once_policy(
    spec: &RefaultSpec,
    policy: Policy,
    seed: u64,
    costs: &CostModel,
) -> Result<StormOutcome, SimError> {
    run_once_read(spec, policy, ReadMode::Guarded, seed, costs)
}

/// [`run_once_policy`] with the refaults reading as `read` says (see the
/// module docs).
///
/// # Errors
/// As [`run_once`].
pub fn run_once_read(
    spec: &RefaultSpec,
    policy: Policy,
    read: ReadMode,
    seed: u64,
    costs: &CostModel,
) -> Result<StormOutcome, SimError> {
    let cpus = spec.cpus as usize;
    let nodes = spec.nodes as usize;
    let w = &spec.workload;
    let World {
        clock,
        mut tree,
        mut lru,
        wl,
        services,
        scopes,
        mut wk,
    } = World::build(spec, policy)?;
    let pricing = Pricing {
        costs: costs.clone(),
        counters_per_line: spec.latency.counters_per_line,
        remote_flush_lines: spec.latency.remote_flush_lines,
    };
    let mut run = Run {
        spec,
        read,
        clock: clock.clone(),
        rng: Rng::new(seed),
        queue: EventQueue::new(),
        ctl: FlushCtl::new(tree.stats(), pricing),
        scopes,
        gen: 0,
        async_pending: false,
        measuring: false,
        out: StormOutcome::default(),
    };
    let wcpus = w.cpus as usize;
    // Prefill (before time 0): the heap at its minimum, then the file read
    // hot part first until memory is full; then the stats settle.
    let heap_min = (mb_pages(w.anon_min_mb) / THP) as usize;
    while wk.live.len() < heap_min {
        let Some(s) = wk.free.pop() else { break };
        run.access(
            &mut tree,
            &mut lru,
            wk.live.len() % wcpus,
            wk.heap_first + s,
            0,
        )?;
        wk.live.push(s);
    }
    let room = mb_pages(w.memory_max_mb).saturating_sub(tree.memory(wl)?.usage());
    for i in 0..(room as u32).min(wk.file_len) {
        run.access(
            &mut tree,
            &mut lru,
            i as usize % wcpus,
            wk.file_first + i,
            0,
        )?;
    }
    tree.stats().flush_forced(&tree.stats().root())?;
    tree.take_work();
    run.ctl.records.clear();
    // Services running on each CPU.
    let per_cpu = (spec.background.services_per_cpu as usize).min(services.len());
    let cpu_services: Vec<Vec<MemcgId>> = (0..cpus)
        .map(|_| {
            (0..per_cpu)
                .map(|_| services[run.rng.below(services.len() as u64) as usize])
                .collect()
        })
        .collect();
    let mut tally: HashMap<(MemcgId, usize, usize), i64> = HashMap::new();
    let warmup = spec.warmup_ms * MILLIS;
    let stop = warmup + spec.duration_ms * MILLIS;
    let bg_mean = if spec.background.updates_per_sec_per_cpu > 0.0 {
        (f64::from(spec.background.burst) * SECONDS as f64
            / spec.background.updates_per_sec_per_cpu) as u64
    } else {
        0
    };
    let acc_mean = (SECONDS as f64 / w.accesses_per_sec_per_cpu) as u64;
    if bg_mean > 0 {
        for c in 0..cpus {
            let t = run.rng.exp_ns(bg_mean);
            run.queue.push(t, Ev::Background { cpu: c as u32 });
        }
    }
    for c in 0..wcpus {
        let t = run.rng.exp_ns(acc_mean);
        run.queue.push(t, Ev::Access { cpu: c as u32 });
    }
    run.queue.push(TICK, Ev::AnonTick { tick: 1 });
    let period = spec.flush_period_ms * MILLIS;
    run.queue.push(period, Ev::Periodic { gen: 0 });
    run.queue.push(warmup, Ev::WarmupEnd);
    run.queue.push(stop, Ev::Stop);
    let evictions_at_start = lru.counters().evictions;
    let mut evictions_at_warmup = evictions_at_start;
    while let Some(Scheduled {
        time: now,
        event: ev,
        ..
    }) = run.queue.pop()
    {
        run.clock.set(now);
        match ev {
            Ev::Stop => break,
            Ev::WarmupEnd => {
                run.measuring = true;
                run.ctl.records.clear();
                run.ctl.waits = 0;
                run.ctl.skipped = 0;
                evictions_at_warmup = lru.counters().evictions;
            }
            Ev::Background { cpu } => {
                let c = cpu as usize;
                let node = c * nodes / cpus;
                let [lo, hi] = spec.background.pages;
                for _ in 0..spec.background.burst {
                    let svc = cpu_services[c][run.rng.below(per_cpu as u64) as usize];
                    let op = run.rng.below(BG_OPS.len() as u64) as usize;
                    let (stat, unit) = BG_OPS[op];
                    let pages = run.rng.range_inclusive(lo, hi) as i64;
                    let cur = tally.entry((svc, op, node)).or_default();
                    let sign = if *cur < pages || run.rng.chance(0.5) {
                        1
                    } else {
                        -1
                    };
                    *cur += sign * pages;
                    tree.mod_stat(c, svc, node, stat, sign * pages * unit)?;
                    if stat == Stat::Anon && sign > 0 {
                        tree.mod_stat(c, svc, node, Stat::Pgfault, pages)?;
                    }
                }
                tree.take_work();
                run.out.background_updates +=
                    u64::from(spec.background.burst) * u64::from(run.measuring);
                let next = now + run.rng.exp_ns(bg_mean);
                run.queue.push(next, Ev::Background { cpu });
            }
            Ev::Access { cpu } => {
                let slot = if run.rng.chance(w.hot_access) {
                    wk.file_first + run.rng.below(u64::from(wk.hot_len)) as u32
                } else {
                    wk.file_first + run.rng.below(u64::from(wk.file_len)) as u32
                };
                let busy = run.access(&mut tree, &mut lru, cpu as usize, slot, now)?;
                let next = now + busy + run.rng.exp_ns(acc_mean);
                run.queue.push(next, Ev::Access { cpu });
            }
            Ev::AnonTick { tick } => {
                let cpu = (tick % wcpus as u64) as usize;
                let span = (mb_pages(w.anon_max_mb) - mb_pages(w.anon_min_mb)) / THP;
                let phase =
                    (now % (w.anon_period_ms * MILLIS)) as f64 / (w.anon_period_ms * MILLIS) as f64;
                let tri = if phase < 0.5 {
                    2.0 * phase
                } else {
                    2.0 - 2.0 * phase
                };
                let target = (heap_min as f64 + span as f64 * tri) as usize;
                let target = target.min(wk.heap_len as usize);
                // Frees are immediate; faults and touches run one after
                // another on the tick's CPU (`AnonOp` events).
                while wk.live.len() + wk.allocating > target && !wk.live.is_empty() {
                    let i = run.rng.below(wk.live.len() as u64) as usize;
                    let s = wk.live.swap_remove(i);
                    lru.free(&mut tree, cpu, wk.heap_first + s)?;
                    tree.take_work();
                    wk.free.push(s);
                }
                let idle = wk.ops.is_empty();
                while wk.live.len() + wk.allocating < target {
                    let Some(s) = wk.free.pop() else { break };
                    wk.ops.push_back((s, true));
                    wk.allocating += 1;
                }
                for _ in 0..w.anon_touch_per_tick {
                    if wk.live.is_empty() {
                        break;
                    }
                    let s = wk.live[run.rng.below(wk.live.len() as u64) as usize];
                    wk.ops.push_back((s, false));
                }
                if idle && !wk.ops.is_empty() {
                    run.queue.push(now, Ev::AnonOp { cpu: cpu as u32 });
                }
                run.queue.push(now + TICK, Ev::AnonTick { tick: tick + 1 });
            }
            Ev::AnonOp { cpu } => {
                let Some((s, alloc)) = wk.ops.pop_front() else {
                    continue;
                };
                // A touched folio may have been freed since it was queued.
                let live = alloc || wk.live.contains(&s);
                let mut busy = 0;
                if live {
                    busy = run.access(&mut tree, &mut lru, cpu as usize, wk.heap_first + s, now)?;
                }
                if alloc {
                    wk.allocating -= 1;
                    wk.live.push(s);
                }
                if !wk.ops.is_empty() {
                    run.queue.push(now + busy + OP_GAP, Ev::AnonOp { cpu });
                }
            }
            Ev::Periodic { gen } => {
                if gen == run.gen {
                    run.async_pending = false;
                    run.ctl.periodic_flush(tree.stats(), now);
                    run.queue.push(now + period, Ev::Periodic { gen });
                }
            }
            Ev::Release { req } => run.ctl.release(tree.stats(), req, now),
        }
        for (t, req) in run.ctl.releases.drain(..) {
            run.queue.push(t, Ev::Release { req });
        }
    }
    let mut out = run.out;
    out.flush_latencies = run.ctl.records.iter().map(|r| r.latency).collect();
    out.flush_waits = run.ctl.waits;
    out.flush_wait_ns = run.ctl.records.iter().map(|r| r.wait).sum();
    out.evictions = lru.counters().evictions - evictions_at_warmup;
    out.duration = spec.duration_ms * MILLIS;
    Ok(out)
}
