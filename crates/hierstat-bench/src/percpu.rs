//! The per-CPU mode's cases (`hierstat::Config::per_cpu`): `n` threads,
//! any number of them per CPU, updating one group, against the same `n`
//! threads on the two floors a per-CPU update sits between: a plain add to
//! a per-thread cell (what no synchronization costs) and a `fetch_add` on
//! one shared counter (the migration-safe counter without per-CPU rows).
//!
//! Every thread times its own loop on its CPU clock; a case's figure is the
//! threads' CPU time together over their operations together, so a thread
//! descheduled mid-loop costs nothing, and a contended line costs what its
//! transfers cost the threads that wait for it.

use crate::baselines::Padded;
use crate::cases::timed;
use crate::harness::Case;
use crate::BenchError;
use hierstat::{Config, Group, HierStats, ItemId, Mode, Preset, Schema, Unit};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

/// The thread counts the suite measures.
pub const THREADS: [usize; 4] = [1, 2, 8, 64];

/// Runs `ops` operations on each of `threads` threads started together,
/// thread `t`'s made by `make(t)` (before its clock starts); returns the
/// threads' CPU time together over their operations together (ns per
/// operation).
///
/// # Errors
/// A thread that cannot start.
pub fn on_n_threads<F: FnMut(u64)>(
    threads: usize,
    ops: u64,
    make: impl Fn(usize) -> F + Sync,
) -> Result<f64, BenchError> {
    let threads = threads.max(1);
    let start = Barrier::new(threads);
    let total: f64 = std::thread::scope(|s| {
        let (start, make) = (&start, &make);
        let hs = (0..threads)
            .map(|t| {
                simcore::thread::spawn_scoped(s, "bench-percpu", move || {
                    let op = make(t);
                    start.wait();
                    timed(ops, op)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, BenchError>(hs.into_iter().map(|h| h.join().unwrap_or(f64::NAN)).sum())
    })?;
    Ok(total / (threads as u64 * ops) as f64)
}

/// A per-CPU tree (one shard per possible CPU) with 4 page items and a
/// group at depth 1, or why the host has no per-CPU mode.
///
/// # Errors
/// [`BenchError::Setup`] naming `case` where the mode is unavailable; the
/// engine's.
pub fn percpu_tree(case: &str) -> Result<(HierStats, Group, [ItemId; 4]), BenchError> {
    let mut b = Schema::builder();
    let items: [ItemId; 4] = std::array::from_fn(|i| b.state(&format!("s{i}"), Unit::Pages));
    let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).per_cpu(true))?;
    if stats.mode() != Mode::PerCpu {
        return Err(BenchError::Setup {
            case: case.to_string(),
            why: format!("no per-CPU mode here: {}", stats.mode()),
        });
    }
    let g = stats.create(&stats.root(), "d0")?;
    Ok((stats, g, items))
}

/// Whether this host runs trees in the per-CPU mode (the suite measures
/// the per-CPU cases only where it does).
pub fn available() -> bool {
    percpu_tree("probe").is_ok()
}

/// `percpu_update_Nthreads`: [`HierStats::add`] of 1 (4 items in turn) to
/// one group at depth 1 of a per-CPU tree, by `threads` threads at once,
/// `iters` operations between them.
///
/// # Errors
/// [`BenchError::Setup`] where the per-CPU mode is unavailable; the
/// engine's.
pub fn percpu_update(threads: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let name = format!("percpu_update_{threads}threads");
    let (stats, g, items) = percpu_tree(&name)?;
    let per = (iters / threads as u64).max(1);
    Ok(Case::new(name, per * threads as u64, move |n| {
        let ns = on_n_threads(threads, (n / threads as u64).max(1), |_| {
            |i| {
                let _ = stats.add(black_box(&g), items[(i & 3) as usize], 1);
            }
        })?;
        Ok(ns * n as f64)
    }))
}

/// `percpu_counter_add_Nthreads`: the same through a
/// [`hierstat::Counter`] per item (bound once).
///
/// # Errors
/// As [`percpu_update`].
pub fn percpu_counter(threads: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let name = format!("percpu_counter_add_{threads}threads");
    let (stats, g, items) = percpu_tree(&name)?;
    let counters = items
        .iter()
        .map(|&it| stats.counter(&g, it))
        .collect::<Result<Vec<_>, _>>()?;
    let per = (iters / threads as u64).max(1);
    Ok(Case::new(name, per * threads as u64, move |n| {
        let ns = on_n_threads(threads, (n / threads as u64).max(1), |_| {
            |i| {
                let _ = black_box(&counters[(i & 3) as usize]).add(1);
            }
        })?;
        Ok(ns * n as f64)
    }))
}

/// `shared_fetch_add_Nthreads`: `threads` threads `fetch_add` one shared
/// `AtomicU64` (Relaxed): a migration-safe counter with no per-CPU rows.
pub fn shared_fetch_add(threads: usize, iters: u64) -> Case<'static> {
    let cell = Padded(AtomicU64::new(0));
    let per = (iters / threads as u64).max(1);
    Case::new(
        format!("shared_fetch_add_{threads}threads"),
        per * threads as u64,
        move |n| {
            let ns = on_n_threads(threads, (n / threads as u64).max(1), |_| {
                |_| {
                    // ORDERING: Relaxed; a benchmark counter.
                    black_box(&cell.0).fetch_add(1, Ordering::Relaxed);
                }
            })?;
            Ok(ns * n as f64)
        },
    )
}

/// `plain_add_Nthreads`: `threads` threads each add to their own cells
/// (4 in turn, a padded block per thread) with plain loads and stores:
/// the per-thread counter, no synchronization.
pub fn plain_add(threads: usize, iters: u64) -> Case<'static> {
    let per = (iters / threads as u64).max(1);
    Case::new(
        format!("plain_add_{threads}threads"),
        per * threads as u64,
        move |n| {
            let ns = on_n_threads(threads, (n / threads as u64).max(1), |_| {
                let mut cells = Padded([0u64; 4]);
                move |i| black_box(&mut cells.0)[(i & 3) as usize] += 1
            })?;
            Ok(ns * n as f64)
        },
    )
}

/// `percpu_update_2threads_side_by_side`: per-op cost per thread while
/// both ran ([`crate::threads::on_threads`]), two threads `add`ing to one
/// group of a per-CPU tree: the contended case, against
/// `shared_atomic_2threads` (one shared `fetch_add`, timed the same way).
///
/// # Errors
/// As [`percpu_update`].
pub fn percpu_update_side_by_side(iters: u64) -> Result<Case<'static>, BenchError> {
    let name = "percpu_update_2threads_side_by_side";
    let (stats, g, items) = percpu_tree(name)?;
    Ok(Case::new(name, iters, move |n| {
        crate::threads::on_threads(2, n, |_, i| {
            let _ = stats.add(black_box(&g), items[(i & 3) as usize], 1);
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percpu_cases_run_where_the_mode_is() {
        for mut c in [shared_fetch_add(2, 100), plain_add(8, 100)] {
            assert!(c.sample().unwrap() >= 0.0, "{}", c.name());
        }
        if !available() {
            return;
        }
        for t in THREADS {
            let mut c = percpu_update(t, 1000).unwrap();
            assert!(c.sample().unwrap() > 0.0, "{}", c.name());
        }
        let mut c = percpu_counter(2, 1000).unwrap();
        assert!(c.sample().unwrap() > 0.0);
    }
}
