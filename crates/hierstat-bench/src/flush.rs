//! The flush cases: a forced root flush of 100 dirty leaves in a 10k- and
//! a 100k-group tree, warm and cold; of one dirty leaf on many shards (what
//! a shard's pass costs); and the flusher's heavy barrier.
//!
//! What a flush costs depends on where its lines are. The flush visits only
//! the rows updated since the last one (the 100 leaves, their 100 parents
//! and the root), so with the same lines in cache its cost does not depend
//! on the tree's size: that is the warm case, the same 100 leaves flushed
//! back to back (rows and snapshots allocated, lines in cache). The cold
//! case evicts the caches between the dirtying and the flush, so that each
//! flush reads its lines from memory: there the tree's size shows, through
//! the spread of the lines it touches (pages, TLB). Neither includes
//! building the tree, allocating a row (a shard's first write of a group)
//! or a snapshot (the first flush that meets an owner-written cell): those
//! happen once, in the unrecorded warm-up.

use crate::cases::ensure_owner;
use crate::harness::Case;
use crate::BenchError;
use hierstat::sim::Simulator as _;
use hierstat::{
    sim::WorkCounters, Config, FlushKind, Group, HierStats, ItemId, Preset, Schema, Unit,
};
use simcore::clock::CpuTimer;
use simcore::thread::spawn_scoped;
use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Leaves dirtied before each flush of the 10k- and 100k-group cases.
pub const DIRTY_LEAVES: usize = 100;

/// A tree of slices of 100 leaves under the root (`101 × slices + 1`
/// groups), 4 state items, on `shards` shards, and the leaves a flush case
/// dirties: the first leaf of slices spread evenly over the tree (in
/// creation order, so over its memory).
#[derive(Debug)]
pub struct WideTree {
    /// The tree.
    pub stats: HierStats,
    /// Its items.
    pub items: [ItemId; 4],
    /// The leaves each flush finds dirty.
    pub dirty: Vec<Group>,
}

impl WideTree {
    /// About `groups` groups (fan-out 100 at both levels; at least one
    /// slice for each of the `dirty` leaves).
    ///
    /// # Errors
    /// The engine's.
    pub fn new(groups: usize, shards: usize, dirty: usize) -> Result<WideTree, BenchError> {
        let want = dirty.max(1);
        let mut b = Schema::builder();
        let items: [ItemId; 4] = std::array::from_fn(|i| b.state(&format!("s{i}"), Unit::Pages));
        let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(shards))?;
        let root = stats.root();
        let slices = groups.div_ceil(100).max(want);
        let step = slices / want;
        let mut dirty = Vec::with_capacity(want);
        for s in 0..slices {
            let sl = stats.create(&root, &format!("s{s}"))?;
            for c in 0..100 {
                let leaf = stats.create(&sl, &format!("c{c}"))?;
                if c == 0 && s % step == 0 && dirty.len() < want {
                    dirty.push(leaf);
                }
            }
        }
        Ok(WideTree {
            stats,
            items,
            dirty,
        })
    }

    /// The dirty leaves' owner updates (all 4 items of each; `round` varies
    /// the values), by the calling thread.
    pub fn dirty(&self, round: u64) {
        for (k, g) in self.dirty.iter().enumerate() {
            for &it in &self.items {
                let _ = self.stats.add(g, it, 1 + ((k as u64 + round) % 3) as i64);
            }
        }
    }

    /// One forced root flush, timed on the thread CPU clock (ns).
    fn timed_flush(&self) -> f64 {
        let t = CpuTimer::start();
        let _ = self.stats.flush_forced(&self.stats.root());
        t.elapsed_ns()
    }

    /// Checks that the calling thread dirties the leaves as their shard's
    /// owner and that a flush then drains exactly the dirty leaves' rows
    /// (and pays the heavy barrier, on the owner path); returns the flush's
    /// work.
    ///
    /// # Errors
    /// [`BenchError::Setup`] when it does not; the engine's.
    pub fn check(&self, case: &str) -> Result<WorkCounters, BenchError> {
        ensure_owner(case, &self.stats, &self.dirty[0], self.items[0])?;
        self.stats.flush_forced(&self.stats.root())?;
        self.dirty(0);
        let mut wc = WorkCounters::default();
        self.stats
            .flush_with(&self.stats.root(), FlushKind::Forced, &mut wc)?;
        let barrier_ok = !self.stats.owner_path() || wc.barriers >= 1;
        if wc.list_pops != self.dirty.len() as u64 || !barrier_ok {
            return Err(BenchError::Setup {
                case: case.into(),
                why: format!(
                    "the flush drained {} rows (expected {}) with {} heavy barriers",
                    wc.list_pops,
                    self.dirty.len(),
                    wc.barriers
                ),
            });
        }
        Ok(wc)
    }
}

/// Evicts the caches: writes one word of every line of a 128 MiB buffer
/// (four times the 32 MiB L3 of the host the figures in `docs/bench.md`
/// come from).
#[derive(Debug)]
pub struct Evictor(RefCell<Vec<u64>>);

impl Default for Evictor {
    fn default() -> Evictor {
        Evictor(RefCell::new(vec![0u64; (128 << 20) / 8]))
    }
}

impl Evictor {
    /// Writes the buffer, a line at a time.
    pub fn evict(&self) {
        let mut b = self.0.borrow_mut();
        for (i, w) in b.iter_mut().enumerate().step_by(8) {
            *w = w.wrapping_add(i as u64);
        }
        black_box(&mut *b);
    }
}

fn size_name(groups: usize) -> String {
    if groups >= 1000 && groups % 1000 == 0 {
        format!("{}k", groups / 1000)
    } else {
        groups.to_string()
    }
}

/// `hierstat_flush_100_dirty_10k` (`_100k`, ...): one forced root flush of
/// 100 leaves dirtied by their shard's owner (4 items each) in a tree of
/// about `groups` groups, `hierstat` preset, warm: each repetition first
/// runs one untimed dirty-and-flush, then times only the flushes of the
/// same 100 leaves, dirtied again before each (one heavy barrier a flush).
///
/// # Errors
/// As [`WideTree::check`].
pub fn flush_warm(groups: usize, shards: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let name = format!("hierstat_flush_100_dirty_{}", size_name(groups));
    let t = WideTree::new(groups, shards, DIRTY_LEAVES)?;
    t.check(&name)?;
    Ok(warm(name, t, iters))
}

/// The warm loop of `t`: one untimed dirty-and-flush, then `n` timed
/// flushes, the leaves dirtied (untimed) before each.
fn warm(name: String, t: WideTree, iters: u64) -> Case<'static> {
    let mut round = 0u64;
    Case::new(name, iters, move |n| {
        t.dirty(round);
        let _ = t.stats.flush_forced(&t.stats.root());
        let mut ns = 0.0;
        for _ in 0..n {
            round += 1;
            t.dirty(round);
            ns += t.timed_flush();
        }
        Ok(ns)
    })
}

/// `hierstat_flush_1_dirty_1k_Nshards`: what each shard's pass of a flush
/// costs even with nothing queued: a forced root flush of one leaf (dirtied
/// by its shard's owner) in a 1,011-group tree of `shards` shards, warm as
/// [`flush_warm`]'s.
///
/// # Errors
/// As [`WideTree::check`].
pub fn flush_per_shard(shards: usize, iters: u64) -> Result<Case<'static>, BenchError> {
    let name = format!("hierstat_flush_1_dirty_1k_{shards}shards");
    let t = WideTree::new(1_000, shards, 1)?;
    t.check(&name)?;
    Ok(warm(name, t, iters))
}

/// `hierstat_flush_100_dirty_10k_cold` (`_100k_cold`, ...): the same
/// flush, with the caches evicted by `evict` between the dirtying and
/// each flush (only the flush timed).
///
/// # Errors
/// As [`WideTree::check`].
pub fn flush_cold(
    groups: usize,
    shards: usize,
    iters: u64,
    evict: Rc<Evictor>,
) -> Result<Case<'static>, BenchError> {
    let name = format!("hierstat_flush_100_dirty_{}_cold", size_name(groups));
    let t = WideTree::new(groups, shards, DIRTY_LEAVES)?;
    t.check(&name)?;
    let mut round = 0u64;
    Ok(Case::new(name, iters, move |n| {
        let mut ns = 0.0;
        for _ in 0..n {
            round += 1;
            t.dirty(round);
            evict.evict();
            ns += t.timed_flush();
        }
        Ok(ns)
    }))
}

/// `hierstat_flush_1_leaf_membarrier` (`membarrier`) or
/// `hierstat_flush_1_leaf_fences`: a forced root flush of one leaf its
/// shard's owner dirtied, with a second thread of the process spinning
/// (membarrier interrupts the CPUs running the process's threads). With
/// `membarrier: false` the tree uses fences instead
/// (`Config::membarrier(false)`: owners take the shared path, the flusher a
/// fence); the difference of the two is the heavy barrier's cost per flush
/// (`hierstat_flush_barrier`).
///
/// # Errors
/// As [`ensure_owner`]; when run, a thread that cannot start.
pub fn flush_one_leaf(
    membarrier: bool,
    shards: usize,
    iters: u64,
) -> Result<Case<'static>, BenchError> {
    let name = format!(
        "hierstat_flush_1_leaf_{}",
        if membarrier { "membarrier" } else { "fences" }
    );
    let mut b = Schema::builder();
    let it = b.state("s", Unit::Pages);
    let cfg = Config::preset(Preset::Hierstat)
        .shards(shards.max(2))
        .membarrier(membarrier);
    let stats = HierStats::new(b.build()?, cfg)?;
    let g = stats.create(&stats.root(), "g")?;
    if membarrier {
        ensure_owner(&name, &stats, &g, it)?;
    }
    Ok(Case::new(name, iters, move |n| {
        let root = stats.root();
        // ORDERING: Relaxed; a stop flag.
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            spawn_scoped(s, "bench-spin", || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })?;
            let mut ns = 0.0;
            for _ in 0..n {
                let _ = stats.add(&g, it, 1);
                let t = CpuTimer::start();
                let _ = stats.flush_forced(&root);
                ns += t.elapsed_ns();
            }
            stop.store(true, Ordering::Relaxed);
            Ok(ns)
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Enough shards for every test thread to own one (tests run in
    /// parallel, each thread taking a seat).
    const SHARDS: usize = 64;

    #[test]
    fn a_flush_case_drains_its_hundred_leaves_whatever_the_tree_size() {
        let small = WideTree::new(10_000, SHARDS, DIRTY_LEAVES).unwrap();
        let large = WideTree::new(20_000, SHARDS, DIRTY_LEAVES).unwrap();
        assert_eq!(small.stats.len(), 101 * 100 + 1);
        assert_eq!(large.stats.len(), 101 * 200 + 1);
        let a = small.check("small").unwrap();
        let b = large.check("large").unwrap();
        // The same work in both: the 100 leaves, their parents, the root.
        assert_eq!(a, b);
        let mut c = flush_warm(10_000, SHARDS, 3).unwrap();
        assert_eq!(c.name(), "hierstat_flush_100_dirty_10k");
        assert!(c.sample().unwrap() > 0.0);
        let mut c = flush_per_shard(SHARDS, 3).unwrap();
        assert_eq!(c.name(), "hierstat_flush_1_dirty_1k_64shards");
        assert!(c.sample().unwrap() > 0.0);
    }

    #[test]
    fn the_barrier_cases_run_with_a_second_thread() {
        for m in [true, false] {
            let mut c = flush_one_leaf(m, SHARDS, 5).unwrap();
            assert!(c.sample().unwrap() > 0.0);
        }
    }
}
