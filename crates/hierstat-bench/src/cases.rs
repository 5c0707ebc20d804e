//! The one-thread cases: the engine's update and read paths, and the
//! floors and baselines they are quoted against. Each case's loop is the
//! operation and nothing else: handles are built, and the measuring
//! thread's seat taken, before the clock starts; every loop rotates over 4
//! items (`i & 3`) as a workload's updates do.

use crate::baselines::{EagerTree, Padded};
use crate::harness::Case;
use crate::BenchError;
use hierstat::sim::{Shard, Simulator as _};
use hierstat::{Config, Group, HierStats, ItemId, Preset, Schema, Unit};
use simcore::clock::CpuTimer;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Nanoseconds of `iters` calls of `op(i)` on this thread's CPU clock.
#[inline(always)]
pub fn timed(iters: u64, mut op: impl FnMut(u64)) -> f64 {
    let t = CpuTimer::start();
    for i in 0..iters {
        op(i);
    }
    t.elapsed_ns()
}

/// A tree with 4 state items on `shards` shards under `preset`, and a
/// chain of `depth` groups below its root: (tree, the deepest group, the
/// items).
///
/// # Errors
/// The engine's (none for these arguments).
pub fn chain_tree(
    preset: Preset,
    depth: u32,
    shards: usize,
) -> Result<(HierStats, Group, [ItemId; 4]), BenchError> {
    let mut b = Schema::builder();
    let items: [ItemId; 4] = std::array::from_fn(|i| b.state(&format!("s{i}"), Unit::Pages));
    let stats = HierStats::new(b.build()?, Config::preset(preset).shards(shards))?;
    let mut g = stats.root();
    for d in 0..depth {
        g = stats.create(&g, &format!("d{d}"))?;
    }
    Ok((stats, g, items))
}

/// Checks that the calling thread writes `stats` as its shard's owner
/// (plain stores: the path `add` takes for a thread with a seat below the
/// shard count), after an update of `g`; the case named `case` would
/// otherwise time the shared path under the owner path's name.
///
/// # Errors
/// [`BenchError::Setup`] when it does not.
pub fn ensure_owner(
    case: &str,
    stats: &HierStats,
    g: &Group,
    item: ItemId,
) -> Result<(), BenchError> {
    stats.add(g, item, 1)?;
    let w = stats.shards_written();
    if stats.owner_path() && (w.by_owners != 1 || w.shared != 0) {
        return Err(BenchError::Setup {
            case: case.to_string(),
            why: format!(
                "the measuring thread does not own a shard of the tree ({} shards; \
                 written by owners {}, shared {})",
                stats.shards(),
                w.by_owners,
                w.shared
            ),
        });
    }
    Ok(())
}

/// `atomic_fetch_add`: one uncontended `AtomicU64::fetch_add` (Relaxed),
/// the floor of any migration-safe per-shard counter.
pub fn atomic_fetch_add(iters: u64) -> Case<'static> {
    // ORDERING: Relaxed; a benchmark counter.
    let a = AtomicU64::new(0);
    Case::new("atomic_fetch_add", iters, move |n| {
        Ok(timed(n, |_| {
            black_box(&a).fetch_add(1, Ordering::Relaxed);
        }))
    })
}

/// `two_fetch_adds`: two uncontended `fetch_add`s per operation on two
/// lines 128 bytes apart: the floor of a shared-path update, whose two
/// RMWs are its cell's add and its row header's.
pub fn two_fetch_adds(iters: u64) -> Case<'static> {
    let pair = [Padded(AtomicU64::new(0)), Padded(AtomicU64::new(0))];
    Case::new("two_fetch_adds", iters, move |n| {
        Ok(timed(n, |_| {
            // ORDERING: Relaxed; benchmark counters.
            black_box(&pair[0].0).fetch_add(1, Ordering::Relaxed);
            black_box(&pair[1].0).fetch_add(1, Ordering::Relaxed);
        }))
    })
}

/// `plain_add`: a plain add to a per-thread array (4 cells in turn): what a
/// thread-local counter costs, the physical floor.
pub fn plain_add(iters: u64) -> Case<'static> {
    let mut cells = [0u64; 4];
    Case::new("plain_add", iters, move |n| {
        Ok(timed(n, |i| {
            black_box(&mut cells)[(i & 3) as usize] += 1;
        }))
    })
}

/// `metrics_counter`: `metrics::Counter::increment` on a handle over an
/// `AtomicU64` (the `metrics` crate's counter without a recorder's
/// registry: a dynamic call and a `fetch_add`).
pub fn metrics_counter(iters: u64) -> Case<'static> {
    let c = metrics::Counter::from_arc(std::sync::Arc::new(AtomicU64::new(0)));
    Case::new("metrics_counter", iters, move |n| {
        Ok(timed(n, |_| black_box(&c).increment(1)))
    })
}

/// `NAME_update_depthD`: [`HierStats::add`] (group and item handles) of 1
/// on a group at depth `depth` under `preset`, by the shard's owner; the
/// name is the preset's (`hierstat_update_depth1`,
/// `linux-6.8_update_depth4`, ...).
///
/// # Errors
/// [`BenchError::Setup`] when the calling thread does not own a shard of a
/// `shards`-shard tree; the engine's.
pub fn update(
    preset: Preset,
    depth: u32,
    shards: usize,
    iters: u64,
) -> Result<Case<'static>, BenchError> {
    let name = format!("{}_update_depth{depth}", preset.name());
    let (stats, g, items) = chain_tree(preset, depth, shards)?;
    ensure_owner(&name, &stats, &g, items[0])?;
    Ok(Case::new(name, iters, move |n| {
        Ok(timed(n, |i| {
            let _ = stats.add(black_box(&g), items[(i & 3) as usize], 1);
        }))
    }))
}

/// `hierstat_counter_add_depth1`: [`hierstat::Counter::add`] (a group and
/// item bound once: the handle checks done at binding) on a group at depth
/// 1, `hierstat` preset, by the shard's owner.
///
/// # Errors
/// As [`update`].
pub fn counter_add(shards: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let name = "hierstat_counter_add_depth1";
    let (stats, g, items) = chain_tree(Preset::Hierstat, 1, shards)?;
    ensure_owner(name, &stats, &g, items[0])?;
    let counters = items
        .iter()
        .map(|&it| stats.counter(&g, it))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Case::new(name, iters, move |n| {
        Ok(timed(n, |i| {
            let _ = black_box(&counters[(i & 3) as usize]).add(1);
        }))
    }))
}

/// `hierstat_shared_path_depth1`: the shared (atomic) path as the
/// simulator drives it, `hierstat::sim::Simulator::add_with` on explicit
/// shard 0, depth 1, `hierstat` preset.
///
/// # Errors
/// The engine's.
pub fn shared_path(shards: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let (stats, g, items) = chain_tree(Preset::Hierstat, 1, shards)?;
    Ok(Case::new("hierstat_shared_path_depth1", iters, move |n| {
        Ok(timed(n, |i| {
            let _ = stats.add_with(Shard(0), black_box(&g), items[(i & 3) as usize], 1, &mut ());
        }))
    }))
}

/// `hierstat_beyond_shards_depth1`: [`HierStats::add`] by a thread whose
/// seat is past the shard count (a one-shard tree; the calling thread
/// holds a seat first), so `add` takes the shared path as it does for a
/// process with more threads than shards. The loop runs on a worker thread
/// the case keeps, timed on the worker's CPU clock, on request, so it
/// interleaves with the other cases.
///
/// # Errors
/// [`BenchError::Setup`] when the worker took the owner path (it got seat
/// 0); a thread that cannot start; the engine's.
pub fn beyond_shards(iters: u64) -> Result<Case<'static>, BenchError> {
    let name = "hierstat_beyond_shards_depth1";
    let dead = || BenchError::Setup {
        case: name.to_string(),
        why: "its worker thread stopped".into(),
    };
    // The calling thread takes a seat (the lowest free one) first.
    {
        let (own, og, oitems) = chain_tree(Preset::Hierstat, 1, 1)?;
        own.add(&og, oitems[0], 1)?;
    }
    // A worker that found seat 0 free (another thread gave it back) owns
    // the shard: it is kept, holding the seat, and the next one is beyond.
    let mut held = Vec::new();
    for _ in 0..2 {
        let (stats, g, items) = chain_tree(Preset::Hierstat, 1, 1)?;
        let (ask, told) = worker(stats.clone(), g, items)?;
        told.recv().map_err(|_| dead())?;
        let w = stats.shards_written();
        if !stats.owner_path() || (w.shared == 1 && w.by_owners == 0) {
            return Ok(Case::new(name, iters, move |n| {
                let _hold = &held;
                ask.send(n).map_err(|_| dead())?;
                told.recv().map_err(|_| dead())
            }));
        }
        held.push(ask);
    }
    Err(BenchError::Setup {
        case: name.to_string(),
        why: "no worker thread was beyond the shards".into(),
    })
}

/// A worker thread that updates `g` once (taking its seat), reports 0, and
/// then, for each `n` asked, times `n` updates of `g` on its CPU clock and
/// reports the nanoseconds. Detached: it ends when the sender is dropped.
fn worker(
    stats: HierStats,
    g: Group,
    items: [ItemId; 4],
) -> Result<(mpsc::Sender<u64>, mpsc::Receiver<f64>), BenchError> {
    let (ask, asked) = mpsc::channel::<u64>();
    let (tell, told) = mpsc::channel::<f64>();
    std::thread::Builder::new()
        .name("bench-beyond".into())
        .spawn(move || {
            let _ = stats.add(&g, items[0], 1);
            let _ = tell.send(0.0);
            for n in asked {
                let ns = timed(n, |i| {
                    let _ = stats.add(black_box(&g), items[(i & 3) as usize], 1);
                });
                if tell.send(ns).is_err() {
                    return;
                }
            }
        })
        .map_err(|e| simcore::thread::SpawnError {
            thread: "bench-beyond".into(),
            reason: e.to_string(),
        })?;
    Ok((ask, told))
}

/// `hierstat_read_clean`: [`HierStats::read`] of a clean group at depth 2
/// (group and item handles; nothing to flush), `hierstat` preset.
///
/// # Errors
/// The engine's.
pub fn read_clean(shards: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let (stats, g, items) = chain_tree(Preset::Hierstat, 2, shards)?;
    stats.add(&g, items[0], 5)?;
    stats.flush_forced(&stats.root())?;
    Ok(Case::new("hierstat_read_clean", iters, move |n| {
        let mut acc = 0u64;
        let ns = timed(n, |i| {
            acc = acc.wrapping_add(
                stats
                    .read(black_box(&g), items[(i & 3) as usize])
                    .unwrap_or(0),
            );
        });
        black_box(acc);
        Ok(ns)
    }))
}

/// `hierstat_read_bounded`: [`HierStats::read_bounded`] (the value and its
/// error bound) of the same clean group.
///
/// # Errors
/// The engine's.
pub fn read_bounded(shards: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let (stats, g, items) = chain_tree(Preset::Hierstat, 2, shards)?;
    stats.add(&g, items[0], 5)?;
    stats.flush_forced(&stats.root())?;
    Ok(Case::new("hierstat_read_bounded", iters, move |n| {
        Ok(timed(n, |i| {
            black_box(
                stats
                    .read_bounded(black_box(&g), items[(i & 3) as usize])
                    .ok(),
            );
        }))
    }))
}

/// `pre-rstat_update_depthD`: an update of the eager-atomic tree
/// ([`EagerTree`]) at depth `depth`: one shared atomic add per level.
pub fn eager_update(depth: u32, iters: u64) -> Case<'static> {
    let t = EagerTree::chain(depth, 4);
    Case::new(format!("pre-rstat_update_depth{depth}"), iters, move |n| {
        Ok(timed(n, |i| t.add(black_box(depth), (i & 3) as usize, 1)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Enough shards for every test thread to own one (tests run in
    /// parallel, each thread taking a seat).
    const SHARDS: usize = 64;

    #[test]
    fn the_update_cases_write_as_owners_and_count_their_operations() {
        let mut c = update(Preset::Hierstat, 4, SHARDS, 100).unwrap();
        assert_eq!(c.name(), "hierstat_update_depth4");
        assert!(c.sample().unwrap() > 0.0);
        let mut c = counter_add(SHARDS, 100).unwrap();
        assert!(c.run(10).unwrap() > 0.0);
    }

    #[test]
    fn beyond_the_shards_is_the_shared_path() {
        let mut c = beyond_shards(1000).unwrap();
        assert!(c.sample().unwrap() > 0.0);
        assert!(c.sample().unwrap() > 0.0);
    }

    #[test]
    fn the_baselines_run() {
        for mut c in [
            atomic_fetch_add(10),
            two_fetch_adds(10),
            plain_add(10),
            metrics_counter(10),
            eager_update(8, 10),
            read_clean(SHARDS, 10).unwrap(),
            read_bounded(SHARDS, 10).unwrap(),
            shared_path(SHARDS, 10).unwrap(),
        ] {
            assert!(c.sample().unwrap() >= 0.0, "{}", c.name());
        }
    }
}
