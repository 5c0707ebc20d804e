//! The simulated-mode runner: writers, readers, a periodic flusher and
//! spikes on N logical CPUs in deterministic virtual time.
//!
//! Every engine call runs for real (on the shard of its logical CPU), and
//! its virtual duration is its [`Work`] priced by the [`CostModel`]. Three
//! resources make time interact:
//!
//! * **CPUs**: a writer's bursts run back to back on its CPU;
//! * **the flush lock** ([`FlushLock`]): read-side and periodic flushes hold
//!   it for their duration; per the policy a flusher that finds it held
//!   waits (its wait is part of its latency), skips, or runs in parallel
//!   on a disjoint subtree;
//! * **shared cache lines**: an atomic RMW on a line last written by another
//!   CPU waits until the line is free and pays a line transfer; on the line
//!   its owner last wrote it pays one uncontended atomic.
//!
//! A `memory.stat` read is priced whole: its flush (the engine's work, each
//! aggregated counter standing for the kernel counters of a visited group
//! it represents: the file's `stat_items` over the schema's items), then
//! the syscalls and the formatting of every line of the file
//! ([`crate::priced::read_ns`]).
//!
//! An exact oracle ([`super::oracle`]: hierarchical sums of every update,
//! kept alongside the engine) judges every read: stale reads, missed
//! spikes and child > parent inconsistencies.
//!
//! The readers read as their [`ReadMode`] says (`[readers] tolerance`):
//! `guarded` is the policy's threshold-guarded flush; `clean` never
//! flushes; `forced` flushes the group's subtree every time, waiting for
//! the lock whatever the policy's rule; a tolerance (`1%`, `64`) reads the
//! bounds first and, only when one does not fit its budget, takes the lock
//! as a forced flush would and makes `read_within`'s partial flush. A
//! tolerance read's values are those of its engine call, so it is judged
//! strictly: every item within its bound of the exact value at that
//! instant, or the read is stale.
//!
//! A flush's effect is applied when it is granted (the engine call runs at
//! that instant) and its lock is held for its virtual duration; a read's
//! value is taken when its flush (or wait, or skip) is over. Readers that
//! skip because a flush holds the lock thus still see the effect of that
//! in-progress flush: the simulator is, if anything, kind to skipping
//! policies.

use crate::backend::{
    FlushReason, FlushScope, LineId, ReadFlush, StatsBackend, Update, WithinValue,
};
use crate::cost::{CostModel, CostTable, Work};
use crate::cpu::Cpus;
use crate::event::{Event, EventQueue};
use crate::lock::{Acquire, FlushLock, LockMode};
use crate::runner::oracle::{self, Oracle};
use crate::workload::{GroupIdx, TreeShape};
use crate::workload::{ReadersSpec, SpikeSpec, Targets, WritersSpec};
use lab::reader::ReadMode;
use simcore::time::{SimTime, MILLIS, SECONDS};
use simcore::Rng;
use std::collections::HashMap;

/// Everything a simulated run needs besides the backend.
#[derive(Debug, Clone)]
pub struct SimSetup {
    /// Logical CPUs (= engine shards).
    pub cpus: usize,
    /// Measured duration.
    pub duration: SimTime,
    /// The run's seed.
    pub seed: u64,
    /// Per-unit costs.
    pub costs: CostModel,
    /// Stat items in the schema.
    pub items: usize,
    /// Writers.
    pub writers: WritersSpec,
    /// Readers (none when `None`).
    pub readers: Option<ReadersSpec>,
    /// Periodic flusher period (none when `None` or the policy has none).
    pub flush_period: Option<SimTime>,
    /// Spikes followed by reads (none when `None`).
    pub spikes: Option<SpikeSpec>,
}

/// What one simulated run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimOutcome {
    /// Updates completed within the measured duration.
    pub updates: u64,
    /// The measured duration in ns.
    pub duration: SimTime,
    /// Latency of every completed `memory.stat` read, in completion order.
    pub read_latencies: Vec<u64>,
    /// Reads whose value was outside the reported bound.
    pub stale_reads: u64,
    /// Spike reads done.
    pub spike_reads: u64,
    /// Spike reads that missed more than half of the spike.
    pub missed_spikes: u64,
    /// Parent reads checked against the preceding child read.
    pub parent_checks: u64,
    /// Parent reads below the child read while the exact values were not.
    pub child_gt_parent: u64,
    /// Flushes executed (read-side and periodic).
    pub flushes: u64,
    /// Read-side flushes skipped because the lock was busy.
    pub skipped_flushes: u64,
    /// Total virtual time readers spent waiting for the flush lock.
    pub lock_wait: SimTime,
    /// Longest flush-lock hold.
    pub max_hold: SimTime,
    /// Virtual duration of every flush (read-side and periodic).
    pub flush_durations: Vec<u64>,
    /// Work of all flushes together.
    pub flush_work: Work,
    /// Events processed.
    pub events: u64,
    /// Engine calls made.
    pub engine_calls: u64,
    /// The first few stale reads, for diagnosis.
    pub stale_examples: Vec<StaleExample>,
    /// Per reader read: the largest distance of an item from its exact
    /// value (pages; for a tolerance read at its engine call, otherwise
    /// the smaller of those at its flush and at its return).
    pub read_errors: Vec<u64>,
    /// Per reader read: the largest bound reported over its items (pages;
    /// reads with an item without a bound are left out).
    pub read_bounds: Vec<u64>,
    /// Reader reads that flushed (or, as tolerance reads, flushed part).
    pub reads_flushed: u64,
    /// Tolerance reads that flushed only part of the subtree.
    pub partial_flushes: u64,
    /// Tolerance reads with an item whose bound did not fit its budget.
    pub unmet_reads: u64,
    /// Work of the reader reads' flushes (not the periodic flusher's).
    pub read_flush_work: Work,
    /// Per reader read: the virtual duration of its flush (0 if none).
    pub read_flush_ns: Vec<u64>,
}

/// A stale read, as observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleExample {
    /// Virtual time of the read.
    pub time: SimTime,
    /// Group read.
    pub group: GroupIdx,
    /// Item read.
    pub item: usize,
    /// Value returned.
    pub value: u64,
    /// Exact value (clamped at 0).
    pub exact: u64,
    /// Bound reported.
    pub bound: u64,
    /// Whether this read flushed (or waited for a flush).
    pub flushed: bool,
}

#[derive(Debug, Clone, Copy)]
enum Purpose {
    /// A reader's periodic read.
    Reader { reader: u32 },
    /// The read of the leaf that took a spike.
    SpikeChild { spike: u32 },
    /// The read of that leaf's parent right after.
    SpikeParent { spike: u32 },
    /// The periodic background flush.
    Periodic,
}

#[derive(Debug, Clone, Copy)]
struct Request {
    purpose: Purpose,
    /// How it reads (the readers' mode; spike reads are guarded).
    how: ReadMode,
    group: GroupIdx,
    started: SimTime,
    free: bool,
    flushed: bool,
    /// Its flush's virtual duration.
    flush_ns: SimTime,
}

#[derive(Debug, Clone, Copy, Default)]
struct SpikeState {
    group: GroupIdx,
    pages: u64,
    child_value: u64,
    /// The largest exact child value the child read may reflect: the exact
    /// value at its flush (or start) or at its return, whichever is larger.
    child_exact_hi: i64,
    /// The child read's error bound (`None`: unbounded).
    child_bound: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct LineState {
    owner: u32,
    free_at: SimTime,
}

/// The simulation state of one run.
struct StatsSim<'a, B: StatsBackend + ?Sized> {
    backend: &'a mut B,
    shape: &'a TreeShape,
    setup: &'a SimSetup,
    costs: CostTable,
    transfer: SimTime,
    atomic: SimTime,
    /// What a read costs besides its flush.
    read_ns: SimTime,
    /// Kernel counters each aggregated engine counter stands for.
    counters_per_item: u64,
    now: SimTime,
    queue: EventQueue,
    rng: Rng,
    cpus: Cpus,
    lock: FlushLock,
    lines: HashMap<LineId, LineState>,
    line_buf: Vec<LineId>,
    /// The exact sums every read is judged against.
    oracle: Oracle,
    writer_targets: Vec<GroupIdx>,
    reader_targets: Vec<GroupIdx>,
    spike_targets: Vec<GroupIdx>,
    requests: Vec<Request>,
    /// Exact values of the items a request reads, when its flush ran (or
    /// when it started, if it did not flush).
    snapshots: Vec<Vec<i64>>,
    /// A tolerance read's values, from its engine call.
    results: Vec<Vec<WithinValue>>,
    free_requests: Vec<u32>,
    spikes: Vec<SpikeState>,
    stopped: bool,
    out: SimOutcome,
}

/// The simulator's engine-update probe (`mmlab bench`'s
/// `sim_engine_updates_per_sec`, the `sim_speed` example): 22 logical
/// CPUs updating the leaf of a chain of depth 2, 4 items, the `hierstat`
/// preset, default writers, for `virtual_ms` of virtual time. Returns the
/// run's outcome and the CPU nanoseconds it took.
///
/// # Errors
/// Building the engine's tree (none for this fixed shape).
pub fn update_probe(virtual_ms: u64) -> Result<(SimOutcome, f64), crate::error::SimError> {
    let shape = TreeShape::chain(2);
    let mut b = crate::engine::EngineBackend::new(hierstat::Preset::Hierstat, &shape, 4, 22)?;
    let setup = SimSetup {
        cpus: 22,
        duration: virtual_ms * 1_000_000,
        seed: 1,
        costs: CostModel::defaults(),
        items: 4,
        writers: WritersSpec::default(),
        readers: None,
        flush_period: None,
        spikes: None,
    };
    let t = simcore::clock::CpuTimer::start();
    let o = run(&mut b, &shape, &setup);
    Ok((o, t.elapsed_ns()))
}

/// Runs one simulated run of the workload on `backend` over `shape`.
pub fn run<B: StatsBackend + ?Sized>(
    backend: &mut B,
    shape: &TreeShape,
    setup: &SimSetup,
) -> SimOutcome {
    let mut rng = Rng::new(setup.seed);
    let items = setup.items;
    let mut writer_targets = shape.targets(setup.writers.targets);
    // The hot set: a seeded sample of the targets.
    if setup.writers.hot_fraction < 1.0 {
        let keep =
            ((writer_targets.len() as f64 * setup.writers.hot_fraction).ceil() as usize).max(1);
        for i in 0..keep.min(writer_targets.len()) {
            let j = i + rng.below((writer_targets.len() - i) as u64) as usize;
            writer_targets.swap(i, j);
        }
        writer_targets.truncate(keep);
    }
    let reader_targets = setup
        .readers
        .as_ref()
        .map(|r| shape.targets(r.targets))
        .unwrap_or_default();
    let spike_targets = shape.targets(Targets::Leaves);
    let lock = FlushLock::new(backend.rules().lock);
    let mut sim = StatsSim {
        backend,
        shape,
        setup,
        costs: setup.costs.table(),
        transfer: setup.costs.line_transfer(),
        atomic: setup.costs.cost_ns(&Work {
            atomics: 1,
            ..Work::default()
        }),
        read_ns: crate::priced::read_ns(&setup.costs.kernel),
        counters_per_item: (u64::from(setup.costs.kernel.stat_items) / items.max(1) as u64).max(1),
        now: 0,
        queue: EventQueue::new(),
        rng,
        cpus: Cpus::new(setup.cpus),
        lock,
        lines: HashMap::new(),
        line_buf: Vec::with_capacity(16),
        oracle: Oracle::new(shape, items),
        writer_targets,
        reader_targets,
        spike_targets,
        requests: Vec::new(),
        snapshots: Vec::new(),
        results: Vec::new(),
        free_requests: Vec::new(),
        spikes: Vec::new(),
        stopped: false,
        out: SimOutcome {
            duration: setup.duration,
            ..SimOutcome::default()
        },
    };
    sim.start();
    sim.run_loop();
    sim.out
}

impl<B: StatsBackend + ?Sized> StatsSim<'_, B> {
    /// Fills every leaf with `initial_pages` in each written item and
    /// flushes the tree whole, before time starts (none of it is counted).
    fn preload(&mut self) {
        let w = &self.setup.writers;
        if w.initial_pages == 0 {
            return;
        }
        let items = (w.items as usize).min(self.setup.items);
        let pages = i64::try_from(w.initial_pages).unwrap_or(i64::MAX);
        let (mut work, mut lines) = (Work::default(), Vec::new());
        self.backend.set_time(0);
        for g in self.shape.targets(Targets::Leaves) {
            for item in 0..items {
                let shard = g as usize % self.setup.cpus.max(1);
                self.backend.add_counted(
                    Update {
                        shard,
                        group: g,
                        item,
                        delta: pages,
                    },
                    &mut work,
                    &mut lines,
                );
                lines.clear();
                self.oracle.apply(g, item, pages);
            }
        }
        self.backend.flush(0, FlushReason::Forced, &mut work);
    }

    fn start(&mut self) {
        self.preload();
        let writers = self
            .setup
            .writers
            .cpus
            .map(|c| c as usize)
            .unwrap_or(self.setup.cpus);
        let writers = writers.min(self.setup.cpus);
        if !self.writer_targets.is_empty() {
            for cpu in 0..writers {
                // Stagger the first bursts so CPUs do not start in lockstep.
                let t = self.rng.below(1000);
                self.queue.push(t, Event::WriterBurst { cpu: cpu as u32 });
            }
        }
        if let Some(r) = &self.setup.readers {
            let period = period_ns(r.period_ms);
            if !self.reader_targets.is_empty() {
                for reader in 0..r.count {
                    let t = if r.aligned { 0 } else { self.rng.below(period) };
                    self.queue.push(t, Event::ReaderWake { reader });
                }
            }
        }
        if let Some(p) = self.setup.flush_period {
            if self.backend.rules().periodic {
                self.queue.push(p, Event::PeriodicFlush);
            }
        }
        if let Some(s) = &self.setup.spikes {
            if !self.spike_targets.is_empty() {
                let t = self.rng.exp_ns(period_ns(s.every_ms));
                self.queue.push(t, Event::Spike { spike: 0 });
            }
        }
        self.queue.push(self.setup.duration, Event::Stop);
    }

    fn run_loop(&mut self) {
        while let Some(s) = self.queue.pop() {
            self.now = s.time;
            self.out.events += 1;
            match s.event {
                Event::WriterBurst { cpu } => self.writer_burst(cpu),
                Event::ReaderWake { reader } => self.reader_wake(reader),
                Event::LockRelease { request } => self.lock_release(request),
                Event::ReadDone { request } => self.read_done(request),
                Event::WaitTimeout { request, since } => self.wait_timeout(request, since),
                Event::PeriodicFlush => self.periodic(),
                Event::Spike { spike } => self.spike(spike),
                Event::SpikeRead { spike } => {
                    let g = self.spikes[spike as usize].group;
                    self.start_read(Purpose::SpikeChild { spike }, g);
                }
                Event::Stop => self.stopped = true,
            }
        }
    }

    // ---- writers -------------------------------------------------------

    fn writer_burst(&mut self, cpu: u32) {
        if self.stopped {
            return;
        }
        let w = &self.setup.writers;
        let items = self.setup.items;
        let start = self.cpus.start_time(cpu as usize, self.now);
        let mut t = start;
        let mut arrivals = self.now;
        let mean_gap = if w.rate_per_cpu > 0.0 {
            Some((SECONDS as f64 / w.rate_per_cpu).max(1.0) as u64)
        } else {
            None
        };
        for _ in 0..w.burst {
            let g = self.writer_targets[self.rng.below(self.writer_targets.len() as u64) as usize];
            let item = self.rng.below(w.items.min(items as u32) as u64) as usize;
            let mut pages = if w.thp_fraction > 0.0 && self.rng.chance(w.thp_fraction) {
                512
            } else {
                self.rng.range_inclusive(w.pages[0], w.pages[1])
            } as i64;
            if w.uncharge_fraction > 0.0
                && self.rng.chance(w.uncharge_fraction)
                && self.oracle.local(g, item) >= pages
            {
                pages = -pages;
            }
            t = self.update(cpu, t, g, item, pages);
            if t <= self.setup.duration {
                self.out.updates += 1;
            }
            if let Some(gap) = mean_gap {
                arrivals += self.rng.exp_ns(gap);
            }
        }
        self.cpus.occupy(cpu as usize, start, t - start);
        let next = match mean_gap {
            Some(_) => arrivals.max(t),
            None => t,
        };
        self.queue.push(next, Event::WriterBurst { cpu });
    }

    /// One engine update at virtual time `t` on `cpu`; returns its end.
    fn update(&mut self, cpu: u32, t: SimTime, g: GroupIdx, item: usize, delta: i64) -> SimTime {
        self.line_buf.clear();
        let mut lines = std::mem::take(&mut self.line_buf);
        self.backend.set_time(t);
        let ps = self.backend.add_priced(
            Update {
                shard: cpu as usize,
                group: g,
                item,
                delta,
            },
            &self.costs,
            &mut lines,
        );
        self.out.engine_calls += 1;
        // `CostTable::cost_ns` of the update's work.
        let mut t = t + ps.div_ceil(1000);
        let (transfer, atomic) = (self.transfer, self.atomic);
        for &l in &lines {
            match self.lines.get_mut(&l) {
                Some(st) if st.owner == cpu => {
                    t = t.max(st.free_at) + atomic;
                    st.free_at = t;
                }
                Some(st) => {
                    t = t.max(st.free_at) + transfer;
                    st.free_at = t;
                    st.owner = cpu;
                }
                None => {
                    t += atomic;
                    self.lines.insert(
                        l,
                        LineState {
                            owner: cpu,
                            free_at: t,
                        },
                    );
                }
            }
        }
        self.line_buf = lines;
        self.oracle.apply(g, item, delta);
        t
    }

    // ---- readers and flushes --------------------------------------------

    fn alloc_request(&mut self, purpose: Purpose, group: GroupIdx) -> u32 {
        let how = match purpose {
            Purpose::Reader { .. } => self
                .setup
                .readers
                .as_ref()
                .map(|r| r.tolerance)
                .unwrap_or_default(),
            _ => ReadMode::Guarded,
        };
        let r = Request {
            purpose,
            how,
            group,
            started: self.now,
            free: false,
            flushed: false,
            flush_ns: 0,
        };
        let id = if let Some(id) = self.free_requests.pop() {
            self.requests[id as usize] = r;
            id
        } else {
            self.requests.push(r);
            self.snapshots.push(Vec::new());
            self.results.push(Vec::new());
            (self.requests.len() - 1) as u32
        };
        self.snapshot(id);
        id
    }

    /// Items a request reads.
    fn items_read(&self, purpose: Purpose) -> usize {
        let items = self.setup.items;
        match purpose {
            Purpose::Reader { .. } => self
                .setup
                .readers
                .as_ref()
                .and_then(|r| r.items)
                .map(|n| n as usize)
                .unwrap_or(items)
                .min(items),
            Purpose::Periodic => 0,
            _ => 1,
        }
    }

    /// Records the exact values the request `id` will be judged against.
    fn snapshot(&mut self, id: u32) {
        let req = self.requests[id as usize];
        let n = self.items_read(req.purpose);
        let snap = &mut self.snapshots[id as usize];
        snap.clear();
        snap.extend_from_slice(self.oracle.exact_items(req.group, n));
    }

    fn reader_wake(&mut self, reader: u32) {
        if self.stopped {
            return;
        }
        let g = self.reader_targets[self.rng.below(self.reader_targets.len() as u64) as usize];
        self.start_read(Purpose::Reader { reader }, g);
    }

    fn flush_scope_group(&self, g: GroupIdx) -> GroupIdx {
        match self.backend.rules().scope {
            FlushScope::Root => 0,
            FlushScope::Subtree => g,
        }
    }

    /// Why a request's flush runs.
    fn reason(&self, id: u32) -> FlushReason {
        let r = &self.requests[id as usize];
        match (r.purpose, r.how) {
            (Purpose::Periodic, _) => FlushReason::Periodic,
            (_, ReadMode::Forced) => FlushReason::Forced,
            _ => FlushReason::Read,
        }
    }

    fn start_read(&mut self, purpose: Purpose, g: GroupIdx) {
        let id = self.alloc_request(purpose, g);
        self.backend.set_time(self.now);
        let how = self.requests[id as usize].how;
        let flush = match how {
            ReadMode::Guarded => self.backend.needs_flush(g, FlushReason::Read),
            ReadMode::Forced => true,
            ReadMode::Within { .. } | ReadMode::Clean => {
                // A clean read takes the bounds as they are, none certified
                // included (no budget it could miss).
                let tolerance = how
                    .tolerance()
                    .unwrap_or(hierstat::Tolerance::Absolute(u64::MAX));
                let n = self.items_read(purpose);
                let mut out = std::mem::take(&mut self.results[id as usize]);
                let mut work = Work::default();
                let r = self
                    .backend
                    .read_within(g, n, tolerance, false, &mut out, &mut work);
                self.results[id as usize] = out;
                self.out.engine_calls += 1;
                how != ReadMode::Clean && r != ReadFlush::None
            }
        };
        if !flush {
            self.queue.push(self.now, Event::ReadDone { request: id });
            return;
        }
        let scope = self.shape.scope(self.flush_scope_group(g));
        let got = if how.is_guarded() {
            self.lock.request(self.now, id, scope)
        } else {
            self.lock.request_waiting(self.now, id, scope)
        };
        match got {
            Acquire::Granted => self.run_flush(id, self.reason(id)),
            Acquire::Queued => {
                if let (LockMode::WaitOngoing { max_wait }, true) =
                    (self.lock.mode(), how.is_guarded())
                {
                    let since = self.now;
                    self.queue
                        .push(since + max_wait, Event::WaitTimeout { request: id, since });
                }
            }
            Acquire::Skipped => self.skip_read(id),
        }
    }

    /// A read that does not flush (the lock was busy and the policy
    /// skips): the failed trylock costs one lock attempt.
    fn skip_read(&mut self, id: u32) {
        self.out.skipped_flushes += 1;
        let d = self.costs.cost_ns(&Work {
            locks: 1,
            ..Work::default()
        });
        self.queue
            .push(self.now + d, Event::ReadDone { request: id });
    }

    /// A read's bounded wait ran out: it skips unless granted meanwhile.
    fn wait_timeout(&mut self, id: u32, since: SimTime) {
        if self.lock.withdraw(id, since) {
            self.out.lock_wait += self.now - since;
            self.skip_read(id);
        }
    }

    /// Runs the flush of granted request `id` now; schedules its release
    /// and, for reads, its completion.
    fn run_flush(&mut self, id: u32, reason: FlushReason) {
        let req = self.requests[id as usize];
        let g = req.group;
        self.requests[id as usize].flushed = true;
        self.snapshot(id);
        let mut work = Work {
            locks: 1,
            ..Work::default()
        };
        self.backend.set_time(self.now);
        let flushed = match (req.purpose, req.how.tolerance()) {
            (Purpose::Reader { .. }, Some(tolerance)) => {
                let n = self.items_read(req.purpose);
                let mut out = std::mem::take(&mut self.results[id as usize]);
                let r = self
                    .backend
                    .read_within(g, n, tolerance, true, &mut out, &mut work);
                self.results[id as usize] = out;
                // Its items are priced with the read (`read_done`).
                work.items_read = 0;
                if r == ReadFlush::Partial {
                    self.out.partial_flushes += 1;
                }
                matches!(r, ReadFlush::Partial | ReadFlush::Full)
            }
            _ => {
                self.backend.flush(g, reason, &mut work);
                true
            }
        };
        self.out.engine_calls += 1;
        let priced = Work {
            counters_aggregated: work.counters_aggregated * self.counters_per_item,
            ..work
        };
        let d = self.costs.cost_ns(&priced);
        if flushed {
            self.requests[id as usize].flush_ns = d;
            self.out.flushes += 1;
            self.out.max_hold = self.out.max_hold.max(d);
            self.out.flush_durations.push(d);
            self.out.flush_work.merge(&work);
            if matches!(req.purpose, Purpose::Reader { .. }) {
                self.out.reads_flushed += 1;
                self.out.read_flush_work.merge(&work);
            }
        }
        let end = self.now + d;
        self.lock.set_until(id, end);
        self.queue.push(end, Event::LockRelease { request: id });
        if !matches!(self.requests[id as usize].purpose, Purpose::Periodic) {
            self.queue.push(end, Event::ReadDone { request: id });
        }
    }

    fn lock_release(&mut self, id: u32) {
        let grants = self.lock.release(id, self.now);
        if matches!(self.requests[id as usize].purpose, Purpose::Periodic) {
            self.free(id);
        }
        for gr in grants {
            self.out.lock_wait += self.now - gr.since;
            let reason = self.reason(gr.request);
            let g = self.requests[gr.request as usize].group;
            let recheck = matches!(self.lock.mode(), LockMode::WaitOngoing { .. })
                && reason == FlushReason::Read
                && self.requests[gr.request as usize].how.is_guarded();
            self.backend.set_time(self.now);
            if recheck && !self.backend.needs_flush(g, reason) {
                // The flush it waited for did its work: release at once
                // and read.
                self.lock.set_until(gr.request, self.now);
                self.queue.push(
                    self.now,
                    Event::LockRelease {
                        request: gr.request,
                    },
                );
                self.queue.push(
                    self.now,
                    Event::ReadDone {
                        request: gr.request,
                    },
                );
                continue;
            }
            self.run_flush(gr.request, reason);
        }
    }

    fn free(&mut self, id: u32) {
        let r = &mut self.requests[id as usize];
        if !r.free {
            r.free = true;
            self.free_requests.push(id);
        }
    }

    fn read_done(&mut self, id: u32) {
        let req = self.requests[id as usize];
        let n_read = self.items_read(req.purpose);
        let mut work = Work {
            calls: 1,
            ..Work::default()
        };
        let mut stale = false;
        let mut first = 0u64;
        let mut first_bound = None;
        let mut first_at_flush = 0i64;
        // A tolerance or clean read's values are its engine call's.
        let within = (req.how.tolerance().is_some() || req.how == ReadMode::Clean)
            && matches!(req.purpose, Purpose::Reader { .. });
        let (mut max_error, mut max_bound, mut bounded, mut met) = (0u64, 0u64, true, true);
        self.backend.set_time(self.now);
        for item in 0..n_read {
            let rv = if within {
                work.items_read += 1;
                let w = self.results[id as usize][item];
                met &= w.met();
                w.read
            } else {
                self.backend.read(req.group, item, &mut work)
            };
            let exact = self.oracle.exact(req.group, item);
            if item == 0 {
                first = rv.value;
                first_bound = rv.bound;
                first_at_flush = self.snapshots[id as usize][0];
            }
            let at_flush = self.snapshots[id as usize][item];
            let off = |e: i64| rv.value.abs_diff(e.max(0) as u64);
            max_error = max_error.max(if within {
                off(at_flush)
            } else {
                off(at_flush).min(off(exact))
            });
            match rv.bound {
                Some(b) => max_bound = max_bound.max(b),
                None => bounded = false,
            }
            if let Some(b) = rv.bound {
                let out_of_bound = if within {
                    off(at_flush) > b
                } else {
                    oracle::is_stale(rv.value, b, exact, at_flush)
                };
                if out_of_bound {
                    stale = true;
                    if self.out.stale_examples.len() < 8 {
                        self.out.stale_examples.push(StaleExample {
                            time: self.now,
                            group: req.group,
                            item,
                            value: rv.value,
                            exact: exact.max(0) as u64,
                            bound: b,
                            flushed: req.flushed,
                        });
                    }
                }
            }
        }
        self.out.engine_calls += 1;
        let end = self.now + self.costs.cost_ns(&work) + self.read_ns;
        if stale {
            self.out.stale_reads += 1;
        }
        self.free(id);
        match req.purpose {
            Purpose::Reader { reader } => {
                self.out.read_latencies.push(end - req.started);
                self.out.read_errors.push(max_error);
                if bounded {
                    self.out.read_bounds.push(max_bound);
                }
                self.out.read_flush_ns.push(req.flush_ns);
                if req.how.tolerance().is_some() && !met {
                    self.out.unmet_reads += 1;
                }
                if !self.stopped {
                    let period = period_ns(
                        self.setup
                            .readers
                            .as_ref()
                            .map(|r| r.period_ms)
                            .unwrap_or(100.0),
                    );
                    let next = (req.started + period).max(end);
                    self.queue.push(next, Event::ReaderWake { reader });
                }
            }
            Purpose::SpikeChild { spike } => {
                self.out.spike_reads += 1;
                let exact = self.oracle.exact(req.group, 0);
                let s = &mut self.spikes[spike as usize];
                if oracle::misses_spike(first, exact, s.pages) {
                    self.out.missed_spikes += 1;
                }
                s.child_value = first;
                s.child_exact_hi = exact.max(first_at_flush);
                s.child_bound = first_bound;
                if let Some(p) = self.oracle.parent(req.group) {
                    self.start_read(Purpose::SpikeParent { spike }, p);
                }
            }
            Purpose::SpikeParent { spike } => {
                self.out.parent_checks += 1;
                let s = self.spikes[spike as usize];
                let parent_exact = self.oracle.exact(req.group, 0);
                let child = oracle::PairRead {
                    value: s.child_value,
                    bound: s.child_bound,
                    exact: s.child_exact_hi,
                };
                let parent = oracle::PairRead {
                    value: first,
                    bound: first_bound,
                    exact: parent_exact.min(first_at_flush),
                };
                if oracle::child_gt_parent(child, parent) {
                    self.out.child_gt_parent += 1;
                }
                // The spike is reclaimed once observed.
                let cpu = self.rng.below(self.setup.cpus as u64) as u32;
                self.update(cpu, self.now, s.group, 0, -(s.pages as i64));
            }
            Purpose::Periodic => {}
        }
    }

    fn periodic(&mut self) {
        if self.stopped {
            return;
        }
        let id = self.alloc_request(Purpose::Periodic, 0);
        match self.lock.request(self.now, id, self.shape.scope(0)) {
            Acquire::Granted => self.run_flush(id, FlushReason::Periodic),
            Acquire::Queued => {}
            Acquire::Skipped => self.free(id),
        }
        if let Some(p) = self.setup.flush_period {
            self.queue.push(self.now + p, Event::PeriodicFlush);
        }
    }

    fn spike(&mut self, k: u32) {
        if self.stopped {
            return;
        }
        let s = self.setup.spikes.clone().expect("spikes configured");
        let g = self.spike_targets[self.rng.below(self.spike_targets.len() as u64) as usize];
        let cpu = self.rng.below(self.setup.cpus as u64) as u32;
        let end = self.update(cpu, self.now, g, 0, s.pages as i64);
        self.spikes.push(SpikeState {
            group: g,
            pages: s.pages,
            ..SpikeState::default()
        });
        self.queue
            .push(end + s.read_after_us * 1000, Event::SpikeRead { spike: k });
        let next = self.now + self.rng.exp_ns(period_ns(s.every_ms));
        self.queue.push(next, Event::Spike { spike: k + 1 });
    }
}

fn period_ns(ms: f64) -> SimTime {
    ((ms * MILLIS as f64) as SimTime).max(1)
}
