//! The two-thread cases: the same loop on two threads at once, timed in
//! the windows during which both ran ([`on_threads`]).

use crate::baselines::{Padded, ShardedCounter};
use crate::cases::chain_tree;
use crate::harness::Case;
use crate::BenchError;
use hierstat::sim::Simulator as _;
use hierstat::Preset;
use simcore::clock::thread_cpu_ns;
use simcore::thread::{spawn_scoped, Gate};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Operations between two looks at the clock and the other threads'
/// progress (a thread CPU clock read is a system call: this keeps it
/// under a tenth of a nanosecond an operation).
pub const CHUNK: u64 = 4096;

/// Concurrent chunks each thread needs before the threads stop (beyond
/// their `iters` operations), and all the threads together for a figure.
pub const MIN_CONCURRENT: usize = 32;

/// How long the threads wait to meet, at least, once they have done their
/// operations (a few scheduler time slices).
pub const MIN_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs `op(thread, i)` on `threads` threads started together (through a
/// [`Gate`]), in chunks of [`CHUNK`] operations, and returns the cost of
/// an operation while they all ran at once, in ns per thread for `iters`
/// operations.
///
/// On a shared host two threads of a process do not always run at the
/// same time, and an operation that contends (one line, one lock) is
/// cheap while the other thread is descheduled; so each thread times every
/// chunk on its CPU clock and keeps the chunks during which every other
/// thread finished one to three chunks (each publishes its progress after
/// every chunk): the threads ran side by side then. None means the other
/// was descheduled; more, that this one was (preempted mid-chunk while the
/// other ran alone).
///
/// Every thread runs until all of them have done `iters` operations and
/// [`MIN_CONCURRENT`] such chunks (one that is done keeps going while
/// another catches up), or for at most about 20 times the wall time of
/// their first `iters` operations (and at least [`MIN_WAIT`]). The figure is the median of all the
/// threads' concurrent chunks, per operation, times `iters`; NaN when
/// fewer than [`MIN_CONCURRENT`] chunks ran side by side (a single-CPU
/// host, or one too busy for the threads to meet).
///
/// # Errors
/// A thread that cannot be spawned.
pub fn on_threads(
    threads: usize,
    iters: u64,
    op: impl Fn(usize, u64) + Sync,
) -> Result<f64, BenchError> {
    let threads = threads.max(1);
    // ORDERING: Relaxed throughout: progress counters and flags that only
    // pace the loops (the chunk times come back through join).
    let stop = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    let progress: Vec<Padded<AtomicU64>> = (0..threads).map(|_| Padded::default()).collect();
    let gate = Gate::default();
    let wall = Instant::now();
    let wall = &wall;
    let chunks = std::thread::scope(|s| {
        let mut hs = Vec::new();
        let mut failed = None;
        for t in 0..threads {
            let (gate, stop, done, progress, op) = (&gate, &stop, &done, &progress, &op);
            match spawn_scoped(s, "bench-thread", move || {
                let others = |p: &[Padded<AtomicU64>]| -> Vec<u64> {
                    p.iter()
                        .enumerate()
                        .filter(|&(o, _)| o != t)
                        .map(|(_, c)| c.0.load(Ordering::Relaxed))
                        .collect()
                };
                let mut kept = Vec::with_capacity(1024);
                let cpu = || thread_cpu_ns().unwrap_or_else(|| wall.elapsed().as_nanos() as u64);
                gate.wait();
                let start = Instant::now();
                let mut limit = None;
                let mut n = 0u64;
                let mut counted = false;
                let mut before = others(progress);
                let mut t0 = cpu();
                while !stop.load(Ordering::Relaxed) && done.load(Ordering::Relaxed) < threads {
                    for i in n..n + CHUNK {
                        op(t, i);
                    }
                    n += CHUNK;
                    let t1 = cpu();
                    progress[t].0.store(n, Ordering::Relaxed);
                    let after = others(progress);
                    let side_by_side = before
                        .iter()
                        .zip(&after)
                        .all(|(b, a)| (CHUNK..=3 * CHUNK).contains(&(a - b)));
                    if side_by_side {
                        kept.push(t1.saturating_sub(t0) as f64);
                    }
                    (before, t0) = (after, t1);
                    if n >= iters && limit.is_none() {
                        limit = Some((start.elapsed() * 20).max(MIN_WAIT));
                    }
                    let enough = n >= iters && kept.len() >= MIN_CONCURRENT;
                    let late = limit.is_some_and(|l| start.elapsed() > l);
                    if !counted && (enough || late) {
                        counted = true;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
                kept
            }) {
                Ok(h) => hs.push(h),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        gate.start(&stop, failed)?;
        Ok::<_, BenchError>(
            hs.into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect::<Vec<f64>>(),
        )
    })?;
    if chunks.len() < MIN_CONCURRENT {
        return Ok(f64::NAN);
    }
    Ok(simcore::stats::median(&chunks) / CHUNK as f64 * iters as f64)
}

/// `hierstat_update_2threads`: per-op cost per thread while both ran
/// ([`on_threads`]), two threads
/// [`hierstat::HierStats::add`]ing to one group at depth 1 (4 items in
/// turn), each owning its shard: the tree has `shards.max(8)` shards, a
/// seat for every thread of the bench (the measuring thread's and a
/// worker's included); a sample in which a thread took the shared path is
/// an error.
///
/// # Errors
/// The engine's; when run, a thread that cannot start, or one that did
/// not own its shard.
pub fn hierstat_update_2threads(shards: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let name = "hierstat_update_2threads";
    let (stats, g, items) = chain_tree(Preset::Hierstat, 1, shards.max(8))?;
    Ok(Case::new(name, iters, move |n| {
        let ns = on_threads(2, n, |_, i| {
            let _ = stats.add(&g, items[(i & 3) as usize], 1);
        })?;
        let w = stats.shards_written();
        if stats.owner_path() && w.shared != 0 {
            return Err(BenchError::Setup {
                case: name.into(),
                why: format!("a thread took the shared path ({} shards)", stats.shards()),
            });
        }
        Ok(ns)
    }))
}

/// `shared_atomic_2threads`: per-op cost per thread while both ran, two
/// threads on one
/// `AtomicU64` (`fetch_add`): the contended line.
pub fn shared_atomic_2threads(iters: u64) -> Case<'static> {
    let cell = Padded(AtomicU64::new(0));
    Case::new("shared_atomic_2threads", iters, move |n| {
        on_threads(2, n, |_, _| {
            // ORDERING: Relaxed; a benchmark counter.
            black_box(&cell.0).fetch_add(1, Ordering::Relaxed);
        })
    })
}

/// `sharded_counter_2threads`: per-op cost per thread while both ran, two
/// threads each
/// `fetch_add`ing its own cell of a [`ShardedCounter`] (a flat sharded
/// counter: no hierarchy, no bound).
pub fn sharded_counter_2threads(iters: u64) -> Case<'static> {
    let c = ShardedCounter::new(2);
    Case::new("sharded_counter_2threads", iters, move |n| {
        on_threads(2, n, |t, _| black_box(&c).add(t, 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Enough shards for every test thread to own one (tests run in
    /// parallel, each thread taking a seat).
    const SHARDS: usize = 64;

    #[test]
    fn two_threads_run_side_by_side() {
        for mut c in [
            hierstat_update_2threads(SHARDS, 10_000).unwrap(),
            shared_atomic_2threads(10_000),
            sharded_counter_2threads(10_000),
        ] {
            // NaN: the threads never ran side by side (a busy host).
            let v = c.sample().unwrap();
            assert!(v > 0.0 || v.is_nan(), "{}: {v}", c.name());
        }
    }
}
