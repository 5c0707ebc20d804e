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
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};

/// The thread counts the suite measures (on a 2-CPU host: one thread per
/// CPU and fewer, then 2, 8, 32 and 500 threads a CPU).
pub const THREADS: [usize; 6] = [1, 2, 4, 16, 64, 1000];

/// Restarts counted by each case's threads (see [`restarts_of`]).
static RESTARTS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// The restartable sequences the threads of case `name` restarted, over
/// every repetition so far ([`hierstat::thread_restarts`], summed over the
/// threads; always 0 outside the per-CPU mode).
pub fn restarts_of(name: &str) -> u64 {
    let m = RESTARTS.lock().unwrap_or_else(|p| p.into_inner());
    m.get(name).copied().unwrap_or(0)
}

fn add_restarts(name: &str, n: u64) {
    let mut m = RESTARTS.lock().unwrap_or_else(|p| p.into_inner());
    *m.entry(name.to_string()).or_default() += n;
}

/// Runs `ops` operations on each of `threads` threads started together,
/// thread `t`'s made by `make(t)` (before its clock starts: an op that
/// takes a seat or allocates a row should do so there); returns the
/// threads' CPU time together over their operations together (ns per
/// operation), and their restarts together.
///
/// # Errors
/// A thread that cannot start.
pub fn on_n_threads<F: FnMut(u64)>(
    threads: usize,
    ops: u64,
    make: impl Fn(usize) -> F + Sync,
) -> Result<(f64, u64), BenchError> {
    let threads = threads.max(1);
    let start = Barrier::new(threads);
    let (total, restarts): (f64, u64) = std::thread::scope(|s| {
        let (start, make) = (&start, &make);
        let hs = (0..threads)
            .map(|t| {
                simcore::thread::spawn_scoped(s, "bench-percpu", move || {
                    let op = make(t);
                    start.wait();
                    let r0 = hierstat::thread_restarts();
                    let ns = timed(ops, op);
                    (ns, hierstat::thread_restarts() - r0)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, BenchError>(
            hs.into_iter()
                .map(|h| h.join().unwrap_or((f64::NAN, 0)))
                .fold((0.0, 0), |(a, b), (ns, r)| (a + ns, b + r)),
        )
    })?;
    Ok((total / (threads as u64 * ops) as f64, restarts))
}

/// A case named `name` of `iters` operations spread over `threads`
/// threads made by `make` (see [`on_n_threads`]); the threads' restarts
/// are counted under its name ([`restarts_of`]).
fn threaded<F: FnMut(u64)>(
    name: String,
    threads: usize,
    iters: u64,
    make: impl Fn(usize) -> F + Sync + 'static,
) -> Case<'static> {
    let per = (iters / threads as u64).max(1);
    let key = name.clone();
    Case::new(name, per * threads as u64, move |n| {
        let (ns, restarts) = on_n_threads(threads, (n / threads as u64).max(1), &make)?;
        add_restarts(&key, restarts);
        Ok(ns * n as f64)
    })
}

/// A tree with 4 page items and a group at depth 1, `hierstat` preset,
/// under `config`'s mode and shards.
fn tree(config: Config) -> Result<(HierStats, Group, [ItemId; 4]), BenchError> {
    let mut b = Schema::builder();
    let items: [ItemId; 4] = std::array::from_fn(|i| b.state(&format!("s{i}"), Unit::Pages));
    let stats = HierStats::new(b.build()?, config)?;
    let g = stats.create(&stats.root(), "d0")?;
    Ok((stats, g, items))
}

/// A per-CPU tree (one shard per possible CPU) with 4 page items and a
/// group at depth 1, or why the host has no per-CPU mode.
///
/// # Errors
/// [`BenchError::Setup`] naming `case` where the mode is unavailable; the
/// engine's.
pub fn percpu_tree(case: &str) -> Result<(HierStats, Group, [ItemId; 4]), BenchError> {
    let t = tree(Config::preset(Preset::Hierstat).per_cpu(true))?;
    if t.0.mode() != Mode::PerCpu {
        return Err(BenchError::Setup {
            case: case.to_string(),
            why: format!("no per-CPU mode here: {}", t.0.mode()),
        });
    }
    Ok(t)
}

/// Whether this host runs trees in the per-CPU mode (the suite measures
/// the per-CPU cases only where it does).
pub fn available() -> bool {
    percpu_tree("probe").is_ok()
}

/// `threads` threads each `add` 1 to `g` (4 items in turn), one update
/// made before the clock starts (a seat taken, a row allocated).
fn adds(
    name: String,
    threads: usize,
    iters: u64,
    (stats, g, items): (HierStats, Group, [ItemId; 4]),
) -> Case<'static> {
    threaded(name, threads, iters, move |_| {
        let _ = stats.add(&g, items[0], 1);
        let (stats, g) = (stats.clone(), g.clone());
        move |i| {
            let _ = stats.add(black_box(&g), items[(i & 3) as usize], 1);
        }
    })
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
    let t = percpu_tree(&name)?;
    Ok(adds(name, threads, iters, t))
}

/// `owner_update_Nthreads`: the same on a tree of the owner mode with a
/// shard for every thread (`threads` + 16: the process's other threads
/// hold seats too): every thread updates its own row with plain stores,
/// the per-thread rows the per-CPU mode replaces.
///
/// # Errors
/// The engine's.
pub fn owner_update(threads: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let shards = (threads + 16).min(hierstat::MAX_SHARDS);
    let t = tree(Config::preset(Preset::Hierstat).shards(shards))?;
    Ok(adds(
        format!("owner_update_{threads}threads"),
        threads,
        iters,
        t,
    ))
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
    Ok(threaded(name, threads, iters, move |_| {
        let counters = counters.clone();
        move |i| {
            let _ = black_box(&counters[(i & 3) as usize]).add(1);
        }
    }))
}

/// `shared_fetch_add_Nthreads`: `threads` threads `fetch_add` one shared
/// `AtomicU64` (Relaxed): a migration-safe counter with no per-CPU rows.
pub fn shared_fetch_add(threads: usize, iters: u64) -> Case<'static> {
    let cell = std::sync::Arc::new(Padded(AtomicU64::new(0)));
    threaded(
        format!("shared_fetch_add_{threads}threads"),
        threads,
        iters,
        move |_| {
            let cell = cell.clone();
            move |_| {
                // ORDERING: Relaxed; a benchmark counter.
                black_box(&cell.0).fetch_add(1, Ordering::Relaxed);
            }
        },
    )
}

/// `plain_add_Nthreads`: `threads` threads each add to their own cells
/// (4 in turn, a padded block per thread) with plain loads and stores:
/// the per-thread counter, no synchronization.
pub fn plain_add(threads: usize, iters: u64) -> Case<'static> {
    threaded(
        format!("plain_add_{threads}threads"),
        threads,
        iters,
        |_| {
            let mut cells = Padded([0u64; 4]);
            move |i| black_box(&mut cells.0)[(i & 3) as usize] += 1
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
