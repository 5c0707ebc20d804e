//! The real-mode runner: real threads on real cores, wall-clock timing.
//!
//! The same workloads as the simulator, without virtual time: writer
//! threads call the backend's hot path (`add` on the current thread's
//! shard), reader threads flush (with the engine's own locking) and read,
//! and latencies are wall-clock `Instant` differences recorded in an
//! hdrhistogram.
//!
//! An exact oracle judges reads: per (group, item) the writers keep the
//! cumulative sums of their charges and of their uncharges (shared atomics,
//! updated after each engine update). A flush that runs while writers
//! update reads each (group, shard) counter at its own instant, so it may
//! include any subset of the updates made during the read: with `exact`
//! the oracle's value before the read and `+Δ`/`−Δ` the charges and
//! uncharges made during it, a read is stale when its value lies outside
//! `[exact − Δuncharged − bound − slack, exact + Δcharged + bound + slack]`,
//! `slack` being the largest update times the number of writers (a writer
//! may be preempted between its engine update and its oracle update).

use super::{spawn_scoped, Gate};
use crate::backend::{FlushReason, ReadFlush, StatsBackend};
use crate::cost::Work;
use crate::error::SimError;
use crate::workload::{GroupIdx, TreeShape};
use crate::workload::{ReadersSpec, WritersSpec};
use hdrhistogram::Histogram;
use lab::reader::ReadMode;
use simcore::Rng;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use simcore::clock::thread_cpu_ns;

/// The values a read may return given the oracle's cumulative
/// `(charged, uncharged)` sums before and after it: any subset of the
/// updates made during the read may be included (clamped at 0).
pub fn allowed_range(before: (i64, i64), after: (i64, i64)) -> (u64, u64) {
    let (c0, u0) = before;
    let (c1, u1) = after;
    let exact = c0 - u0;
    let lo = (exact - (u1 - u0)).max(0) as u64;
    let hi = (exact + (c1 - c0)).max(0) as u64;
    (lo, hi)
}

/// `true` when `value` is further than `bound` from every value in
/// `[lo, hi]`.
pub fn is_stale_read(value: u64, bound: u64, lo: u64, hi: u64) -> bool {
    value.saturating_add(bound) < lo || value > hi.saturating_add(bound)
}

/// Result of an update-throughput run.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateOutcome {
    /// Updates done by all threads.
    pub ops: u64,
    /// Wall-clock time from the start barrier to the stop.
    pub elapsed: Duration,
    /// Per thread: (updates, CPU time in ns, when measurable).
    pub per_thread: Vec<(u64, Option<u64>)>,
}

impl UpdateOutcome {
    /// Updates per second of wall-clock time.
    pub fn ops_per_sec_wall(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The smallest share of the run's wall time any thread spent on a CPU
    /// (its CPU time over the run's): near 1 when the host gave every
    /// thread a CPU of its own, low on a busy host, where the threads took
    /// turns and contended lines stop moving between CPUs. `None` where
    /// thread CPU time is unavailable.
    pub fn cpu_share(&self) -> Option<f64> {
        let wall = self.elapsed.as_nanos().max(1) as f64;
        self.per_thread
            .iter()
            .map(|&(_, cpu)| cpu.map(|ns| (ns as f64 / wall).min(1.0)))
            .try_fold(f64::INFINITY, |m, s| s.map(|s| m.min(s)))
            .filter(|m| m.is_finite())
    }

    /// Updates per second if every thread had a CPU of its own: the sum of
    /// each thread's updates per second of its own CPU time. On a shared
    /// host this removes the time slices other processes take; it falls
    /// back to the wall-clock rate where thread CPU time is unavailable.
    pub fn ops_per_sec(&self) -> f64 {
        let mut sum = 0.0;
        for &(ops, cpu) in &self.per_thread {
            match cpu {
                Some(ns) if ns > 0 => sum += ops as f64 * 1e9 / ns as f64,
                _ => return self.ops_per_sec_wall(),
            }
        }
        if self.per_thread.is_empty() {
            self.ops_per_sec_wall()
        } else {
            sum
        }
    }
}

/// Updates between two checks of the stop flag.
const CHUNK: u64 = 256;

/// `threads` threads update `group` (round robin over `items` items,
/// `pages` each) back to back for `duration`.
pub fn run_updates<B: StatsBackend + ?Sized>(
    backend: &B,
    group: GroupIdx,
    items: usize,
    pages: i64,
    threads: usize,
    duration: Duration,
) -> Result<UpdateOutcome, SimError> {
    // ORDERING: Relaxed for `stop` and `ops`: the flag only ends the loops
    // and the counts are read after the scope joins the threads (join
    // synchronizes).
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let barrier = Gate::default();
    let items = items.max(1);
    let mut elapsed = Duration::ZERO;
    let mut per_thread = Vec::with_capacity(threads);
    std::thread::scope(|s| -> Result<(), SimError> {
        let mut handles = Vec::with_capacity(threads);
        let mut failed = None;
        for t in 0..threads {
            let (stop, ops, barrier) = (&stop, &ops, &barrier);
            let h = spawn_scoped(s, "mmlab-updater", move || {
                let mut item = t % items;
                let mut n = 0u64;
                barrier.wait();
                let cpu0 = thread_cpu_ns();
                // At least one chunk, even if the stop comes first.
                loop {
                    for _ in 0..CHUNK {
                        backend.add(group, item, pages);
                        item += 1;
                        if item == items {
                            item = 0;
                        }
                    }
                    n += CHUNK;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                let cpu = match (cpu0, thread_cpu_ns()) {
                    (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                    _ => None,
                };
                ops.fetch_add(n, Ordering::Relaxed);
                (n, cpu)
            });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        barrier.start(&stop, failed)?;
        let start = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        elapsed = start.elapsed();
        for h in handles {
            per_thread.push(h.join().expect("update threads do not panic"));
        }
        Ok(())
    })?;
    Ok(UpdateOutcome {
        ops: ops.load(Ordering::Relaxed),
        elapsed,
        per_thread,
    })
}

/// Setup of a real readers run.
#[derive(Debug, Clone)]
pub struct ReadersSetup {
    /// Writer threads.
    pub writers: usize,
    /// Writers' update mix.
    pub writer_spec: WritersSpec,
    /// Readers.
    pub readers: ReadersSpec,
    /// Items in the schema.
    pub items: usize,
    /// Measured duration.
    pub duration: Duration,
    /// Seed of the writers' and reader's choices.
    pub seed: u64,
}

/// Result of a real readers run.
#[derive(Debug, Clone)]
pub struct ReadersOutcome {
    /// Read latencies in ns.
    pub latency: Histogram<u64>,
    /// Every read latency in ns, in order.
    pub latencies: Vec<u64>,
    /// Reads outside the bound.
    pub stale_reads: u64,
    /// The first few stale reads: (group, item, value, lowest and highest
    /// value the updates during the read allow, bound with slack, flushed).
    pub stale_examples: Vec<(GroupIdx, usize, u64, i64, i64, u64, bool)>,
    /// Updates done.
    pub updates: u64,
    /// Wall-clock duration.
    pub elapsed: Duration,
}

/// Writers update the target groups back to back while one reader thread
/// performs `readers.count` reads per `readers.period_ms`, each a
/// threshold-guarded flush (per the policy) and a read of the items.
pub fn run_readers<B: StatsBackend + ?Sized>(
    backend: &B,
    shape: &TreeShape,
    setup: &ReadersSetup,
) -> Result<ReadersOutcome, SimError> {
    let items = setup.items;
    let parents: Vec<Option<GroupIdx>> = shape.groups().iter().map(|g| g.parent).collect();
    // ORDERING: the oracle cells are Relaxed statistics; the reader only
    // needs each cell's own modification order (before/after brackets).
    // `charged` and `uncharged` are cumulative (both only grow).
    let charged: Vec<AtomicI64> = (0..shape.len() * items)
        .map(|_| AtomicI64::new(0))
        .collect();
    let uncharged: Vec<AtomicI64> = (0..shape.len() * items)
        .map(|_| AtomicI64::new(0))
        .collect();
    let mut targets = shape.targets(setup.writer_spec.targets);
    let mut rng = Rng::new(setup.seed);
    if setup.writer_spec.hot_fraction < 1.0 {
        let keep = ((targets.len() as f64 * setup.writer_spec.hot_fraction).ceil() as usize).max(1);
        for i in 0..keep.min(targets.len()) {
            let j = i + rng.below((targets.len() - i) as u64) as usize;
            targets.swap(i, j);
        }
        targets.truncate(keep);
    }
    let read_targets = shape.targets(setup.readers.targets);
    let n_read = setup
        .readers
        .items
        .map(|n| n as usize)
        .unwrap_or(items)
        .min(items);
    // ORDERING: Relaxed, see `run_updates`.
    let stop = AtomicBool::new(false);
    let updates = AtomicU64::new(0);
    let barrier = Gate::default();
    let mut out = ReadersOutcome {
        latency: Histogram::new(3).expect("3 significant figures is valid"),
        latencies: Vec::new(),
        stale_reads: 0,
        stale_examples: Vec::new(),
        updates: 0,
        elapsed: Duration::ZERO,
    };
    std::thread::scope(|s| -> Result<(), SimError> {
        let mut failed = None;
        for t in 0..setup.writers {
            let (stop, updates, barrier, charged, uncharged, targets, parents) = (
                &stop, &updates, &barrier, &charged, &uncharged, &targets, &parents,
            );
            let w = &setup.writer_spec;
            let seed = setup.seed.wrapping_add(1 + t as u64);
            if let Err(e) = spawn_scoped(s, "mmlab-writer", move || {
                let mut rng = Rng::new(seed);
                let mut n = 0u64;
                barrier.wait();
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let g = targets[rng.below(targets.len() as u64) as usize];
                        let item = rng.below(u64::from(w.items).min(items as u64)) as usize;
                        let mut pages = if w.thp_fraction > 0.0 && rng.chance(w.thp_fraction) {
                            512
                        } else {
                            rng.range_inclusive(w.pages[0], w.pages[1])
                        } as i64;
                        let cell = g as usize * items + item;
                        if w.uncharge_fraction > 0.0
                            && rng.chance(w.uncharge_fraction)
                            && charged[cell].load(Ordering::Relaxed)
                                - uncharged[cell].load(Ordering::Relaxed)
                                >= pages
                        {
                            pages = -pages;
                        }
                        backend.add(g, item, pages);
                        let sums = if pages > 0 { charged } else { uncharged };
                        let mut cur = Some(g);
                        while let Some(c) = cur {
                            sums[c as usize * items + item]
                                .fetch_add(pages.abs(), Ordering::Relaxed);
                            cur = parents[c as usize];
                        }
                    }
                    n += 64;
                }
                updates.fetch_add(n, Ordering::Relaxed);
            }) {
                failed = Some(e);
                break;
            }
        }
        // The reader thread.
        let (stop_r, barrier_r, charged_r, uncharged_r) = (&stop, &barrier, &charged, &uncharged);
        let readers = &setup.readers;
        let duration = setup.duration;
        let seed = setup.seed;
        let reader = spawn_scoped(s, "mmlab-reader", move || {
            let mut rng = Rng::new(seed ^ 0x5EAD);
            let mut hist = Histogram::<u64>::new(3).expect("valid");
            let mut lat = Vec::new();
            let mut stale = 0u64;
            let mut examples = Vec::new();
            let w = &setup.writer_spec;
            let slack =
                setup.writers as u64 * w.pages[1].max(if w.thp_fraction > 0.0 { 512 } else { 0 });
            let period = Duration::from_secs_f64(readers.period_ms / 1000.0);
            let gap = period / readers.count.max(1);
            barrier_r.wait();
            let start = Instant::now();
            let mut due = start;
            while !stop_r.load(Ordering::Relaxed) && start.elapsed() < duration {
                let now = Instant::now();
                if now < due {
                    // Never past the run's end: a reader period longer
                    // than the run held the run for the whole gap (a
                    // fuzzed 65,536 ms period in a 20 ms run).
                    let left = duration.saturating_sub(start.elapsed());
                    std::thread::sleep((due - now).min(left));
                    if stop_r.load(Ordering::Relaxed) || start.elapsed() >= duration {
                        break;
                    }
                }
                due += gap;
                let g = read_targets[rng.below(read_targets.len() as u64) as usize];
                let sums = |i: usize| {
                    let c = g as usize * items + i;
                    (
                        charged_r[c].load(Ordering::Relaxed),
                        uncharged_r[c].load(Ordering::Relaxed),
                    )
                };
                let before: Vec<(i64, i64)> = (0..n_read).map(sums).collect();
                let t0 = Instant::now();
                let mut work = Work::default();
                let how = readers.tolerance;
                let (flushed, vals): (bool, Vec<_>) = match how.tolerance() {
                    Some(t) => {
                        let mut got = Vec::with_capacity(n_read);
                        let r = backend.read_within(g, n_read, t, true, &mut got, &mut work);
                        (
                            matches!(r, ReadFlush::Partial | ReadFlush::Full),
                            got.iter().map(|w| w.read).collect(),
                        )
                    }
                    None => {
                        let flushed = match how {
                            ReadMode::Clean => false,
                            ReadMode::Forced => {
                                backend.flush(g, FlushReason::Forced, &mut work);
                                true
                            }
                            _ => backend.needs_flush(g, FlushReason::Read),
                        };
                        if flushed && how.is_guarded() {
                            backend.flush(g, FlushReason::Read, &mut work);
                        }
                        (
                            flushed,
                            (0..n_read).map(|i| backend.read(g, i, &mut work)).collect(),
                        )
                    }
                };
                let ns = t0.elapsed().as_nanos() as u64;
                let mut is_stale = false;
                for (i, rv) in vals.iter().enumerate() {
                    let (lo, hi) = allowed_range(before[i], sums(i));
                    if let Some(b) = rv.bound {
                        if is_stale_read(rv.value, b + slack, lo, hi) {
                            is_stale = true;
                            if examples.len() < 8 {
                                examples.push((
                                    g,
                                    i,
                                    rv.value,
                                    lo as i64,
                                    hi as i64,
                                    b + slack,
                                    flushed,
                                ));
                            }
                        }
                    }
                }
                stale += u64::from(is_stale);
                hist.record(ns.max(1)).ok();
                lat.push(ns);
            }
            (hist, lat, stale, examples)
        });
        let reader = match reader {
            Ok(r) => Some(r),
            Err(e) => {
                failed = failed.or(Some(e));
                None
            }
        };
        barrier.start(&stop, failed)?;
        let start = Instant::now();
        std::thread::sleep(setup.duration);
        stop.store(true, Ordering::Relaxed);
        out.elapsed = start.elapsed();
        let Some(reader) = reader else {
            return Ok(()); // not reached: a failed spawn returned above
        };
        let (hist, lat, stale, examples) = reader.join().expect("reader thread does not panic");
        out.stale_examples = examples;
        out.latency = hist;
        out.latencies = lat;
        out.stale_reads = stale;
        Ok(())
    })?;
    out.updates = updates.load(Ordering::Relaxed);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baselines::EagerTree;

    #[test]
    fn a_read_may_include_any_subset_of_concurrent_updates() {
        // 100 before; during the read +30 charged and -20 uncharged.
        let (lo, hi) = allowed_range((150, 50), (180, 70));
        assert_eq!((lo, hi), (80, 130));
        assert!(!is_stale_read(80, 0, lo, hi));
        assert!(!is_stale_read(130, 0, lo, hi));
        assert!(is_stale_read(131, 0, lo, hi));
        assert!(!is_stale_read(131, 1, lo, hi));
        assert!(is_stale_read(70, 9, lo, hi));
        assert!(!is_stale_read(70, 10, lo, hi));
        // Negative exact values clamp to 0.
        assert_eq!(allowed_range((0, 5), (0, 5)), (0, 0));
    }

    #[test]
    fn update_threads_count_their_ops() {
        let shape = TreeShape::chain(2);
        let b = EagerTree::new(&shape, 2);
        let o = run_updates(&b, 2, 2, 1, 2, Duration::from_millis(20)).unwrap();
        assert!(o.ops > 0);
        assert_eq!(o.per_thread.iter().map(|p| p.0).sum::<u64>(), o.ops);
        assert!(o.ops_per_sec() > 0.0 && o.ops_per_sec_wall() > 0.0);
        let mut w = Work::default();
        let total = b.read(0, 0, &mut w).value + b.read(0, 1, &mut w).value;
        assert_eq!(total, o.ops, "every counted op reached the root");
    }
}
