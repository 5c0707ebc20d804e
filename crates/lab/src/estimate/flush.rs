//! How often a flush policy flushes and how much each flush visits, from
//! the policy's knobs (`hierstat::Policy`) and the workload's rates: what
//! the kinds' estimates weigh a run's flush work by ([`flush_load`]).
//!
//! The tree is described level by level ([`Level`]: level 0 is the root,
//! every group of a level alike), with the updates into each group's
//! subtree, the shards that make them, and the threshold-guarded flush
//! checks (reads, hot-path events) each group gets. From the knobs:
//!
//! * **When a check flushes.** A group's unflushed count grows by *folds*:
//!   an update of at least `batch` pages folds at once, smaller ones
//!   gather in a residue per (group, shard) (`folded`: the updated group;
//!   `per-ancestor`: every ancestor) that folds at `batch`, about `batch/2`
//!   pages later than the fluid rate says. The count crosses the threshold
//!   `T` ([`hierstat::Policy::threshold_pages`]) a mean time `τ_T` after
//!   it was reset (with `strict_bound`, each newly claimed pair adds its
//!   `batch − 1` reservation); `threshold = "none"` crosses at once. A
//!   check flushes when it finds the count over, which it stays until a
//!   check flushes it or another flush resets it (an ancestor's, a root
//!   flush, the periodic one): with an exponential crossing time, a share
//!   `1 / (1 + τ_T · (checks + resets))` of the checks. With a subtree
//!   scope the levels are taken from the root down (a level's resets are
//!   its ancestors' flushes); with a root scope every flush resets the
//!   whole tree, and the flush rate is the fixed point of "a check
//!   flushes if its group crossed since the last flush"; a global
//!   threshold has one count, the tree's.
//! * **How much a flush visits.** A flush of a group whose subtree was
//!   last reset `τ` ago visits each (group, shard) pair of the subtree that
//!   an update dirtied since: `writers × (1 − e^(−rate·τ/writers))` per
//!   group, level by level. Every flush scans every shard, twice with a
//!   per-group threshold (a snapshot pass, then the flush pass).
//! * **The flush lock.** A flush holds the lock for its virtual duration
//!   (the caller prices a flush's passes and visits). Flushes that
//!   conflict (all of them under `serialize` and `wait-ongoing`, those of
//!   overlapping subtrees under `disjoint-parallel`) and whose demand
//!   exceeds the lock's time run at the lock's pace: `skip` drops the
//!   excess (a loss system: `F / (1 + ρ)`), `serialize` queues it, and its
//!   waiters hold their readers (each release then looks at the queue),
//!   `wait-ongoing` waits at most its bound and drops the rest.
//! * **The hot path** turns hot-path events into checks: `none` never,
//!   `sync` as reads, `ratelimited` only when the periodic flush is more
//!   than two periods late, `async` as checks that queue one root flush on
//!   the background flusher when over the threshold.
//!
//! Exact for none of its inputs (a mean-field model of a random process),
//! it is meant to be within a small factor of the flushes and visits a
//! simulation counts: `sim`'s tests compare it with counted runs.

use hierstat::{Concurrency, FlushScope, HotPathFlush, Policy, ThresholdRule, ThresholdScheme};

/// One level of a tree whose groups at each level are alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Level {
    /// Groups at this level.
    pub groups: f64,
    /// Of which updated (in their subtree) during the run.
    pub active: f64,
    /// Updates per second into one active group's subtree.
    pub updates: f64,
    /// Shards that update one active group's subtree.
    pub writers: f64,
    /// Updated (group, shard) pairs in one active group's subtree: the
    /// residues a folded threshold gathers small updates in.
    pub pairs: f64,
    /// Threshold-guarded flush checks per second of one group (reads).
    pub reads: f64,
    /// Checks per second of one group that follow a spike of
    /// [`Level::over_pages`] in its subtree (the reads after a spike): they
    /// find the count over a threshold below the spike.
    pub over_reads: f64,
    /// Pages a spike adds to the count [`Level::over_reads`] check.
    pub over_pages: f64,
    /// Hot-path events per second of one group (refaults), checked per
    /// the policy's hot-path rule.
    pub hot: f64,
    /// Sizes of the updates into one group's subtree in pages:
    /// `(probability, pages)`.
    pub sizes: Vec<(f64, f64)>,
}

/// A tree and its workload, as [`flush_load`] sees them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeLoad {
    /// Level 0 is the root.
    pub levels: Vec<Level>,
    /// Shards of the tree.
    pub shards: f64,
    /// Seconds the run lasts (warm-up included).
    pub seconds: f64,
    /// Period of the periodic forced root flush in seconds (`None`: none).
    pub periodic_s: Option<f64>,
    /// Delay of an async (background) flush after its request, seconds.
    pub async_delay_s: f64,
    /// Requesters that wait for a serialized lock (readers): its queue
    /// when the lock is saturated.
    pub waiters: f64,
}

/// What the flushes of a run amount to ([`flush_load`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FlushLoad {
    /// Flushes run: read-side, hot-path, periodic and async.
    pub flushes: f64,
    /// Shard passes of those flushes.
    pub passes: f64,
    /// (group, shard) pairs those flushes visit.
    pub visits: f64,
    /// Threshold-guarded checks made (reads and hot-path events that ask).
    pub checks: f64,
    /// Waiters a saturated serialized lock looks at over the run (each
    /// release scans its queue).
    pub queue_scans: f64,
    /// Flush-needing checks a saturated lock that holds its readers never
    /// serves (those readers wait instead of reading again): reads that do
    /// not happen.
    pub reads_lost: f64,
}

/// Mean time for a count that grows from zero to cross `t` pages, for an
/// active group of `level` under `p` (the threshold's count is the
/// level's for a per-group threshold, the tree's for a global one).
fn crossing(p: &Policy, load: &TreeLoad, level: &Level, t: f64) -> f64 {
    if p.threshold == ThresholdRule::None {
        return 0.0;
    }
    let batch = f64::from(p.batch.max(1));
    let (mut big_events, mut big_pages, mut small) = (0.0, 0.0, 0.0);
    for &(prob, pages) in &level.sizes {
        if pages >= batch {
            big_events += prob;
            big_pages += prob * pages;
        } else {
            small += prob * pages;
        }
    }
    let u = level.updates;
    // Residues that hold small updates back from the count.
    let slots = match (p.threshold, p.scheme) {
        (ThresholdRule::Global, _) => load.shards.min(level.writers.max(1.0)),
        (_, ThresholdScheme::PerAncestor) => level.writers.max(1.0),
        _ => level.pairs.max(1.0),
    };
    let mut small_rate = u * small;
    if p.strict_bound && p.scheme == ThresholdScheme::Folded {
        // Each newly claimed pair reserves `batch − 1` pages at once (at
        // most one claim an update).
        small_rate += (batch - 1.0) * u;
    }
    // Progress towards `t`: the big updates a whole number of times, the
    // small ones after their residues' lag.
    let big = if big_events > 0.0 {
        let per = big_pages / big_events;
        u * big_events / ((t + 1.0) / per).ceil()
    } else {
        0.0
    };
    let small = small_rate / (t + slots * batch / 2.0).max(1.0);
    let rate = big + small;
    if rate > 0.0 {
        1.0 / rate
    } else {
        f64::INFINITY
    }
}

/// The share of checks that find a group's count over the threshold: it
/// crosses a mean `tau` after each reset (an exponential time) and stays
/// over until a check flushes it (`checks` a second) or another flush
/// resets it (`resets` a second): `1 / (1 + tau · (checks + resets))`.
fn over_share(tau: f64, checks: f64, resets: f64) -> f64 {
    if tau <= 0.0 {
        1.0
    } else if tau.is_finite() {
        1.0 / (1.0 + tau * (checks + resets))
    } else {
        0.0
    }
}

/// Pairs a flush of one active group at `level` visits when its subtree
/// was last reset `tau` seconds ago.
fn visits(load: &TreeLoad, level: usize, tau: f64) -> f64 {
    let top = &load.levels[level];
    if top.active <= 0.0 {
        return 0.0;
    }
    let tau = tau.min(load.seconds).max(0.0);
    load.levels[level..]
        .iter()
        .map(|l| {
            let per = l.active / top.active;
            let w = l.writers.max(1.0);
            per * w * (1.0 - (-l.updates * tau / w).exp())
        })
        .sum()
}

/// Finds `x` in `[lo, hi]` with `f(x) = 0` for a decreasing `f`.
fn bisect(mut lo: f64, mut hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The flush work of `load` under policy `p`; `price(passes, visits)` is
/// the virtual seconds a flush of that size holds the lock (the
/// simulator's cost model).
pub fn flush_load(p: &Policy, load: &TreeLoad, price: &dyn Fn(f64, f64) -> f64) -> FlushLoad {
    let n = load.levels.len();
    if n == 0 || load.seconds <= 0.0 {
        return FlushLoad::default();
    }
    let secs = load.seconds;
    let threshold = p.threshold_pages(load.shards.max(1.0) as usize) as f64;
    let passes_per = load.shards
        * if p.threshold == ThresholdRule::PerGroup {
            2.0
        } else {
            1.0
        };
    let periodic = load
        .periodic_s
        .filter(|s| *s > 0.0 && *s <= secs)
        .map_or(0.0, |s| (secs / s).floor() / secs);
    // Hot-path events that ask for a guarded flush like a read, and those
    // that ask the background flusher.
    let ratelimit_open = load
        .periodic_s
        .is_none_or(|s| s > 2.0 * p.period_ns as f64 / 1e9);
    let (hot_sync, hot_async) = match p.hot_path {
        HotPathFlush::Sync => (1.0, 0.0),
        HotPathFlush::Ratelimited if ratelimit_open => (1.0, 0.0),
        HotPathFlush::Async if load.periodic_s.is_some() => (0.0, 1.0),
        HotPathFlush::Async => (1.0, 0.0),
        _ => (0.0, 0.0),
    };
    let checks_of = |l: &Level| l.reads + hot_sync * l.hot;
    // Spike reads that find their count over the threshold.
    let over = |l: &Level| {
        if p.threshold == ThresholdRule::None || l.over_pages > threshold {
            l.over_reads
        } else {
            0.0
        }
    };
    let root = &load.levels[0];
    let tau_root = crossing(p, load, root, threshold);
    // Async requests: over the threshold (the eviction group's), one root
    // flush on the background flusher, coalesced until it runs.
    let async_rate: f64 = load
        .levels
        .iter()
        .filter(|l| l.hot > 0.0 && hot_async > 0.0)
        .map(|l| {
            let lvl = if p.threshold == ThresholdRule::Global {
                root
            } else {
                l
            };
            let tau = crossing(p, load, lvl, threshold);
            let events = l.hot
                * l.active.max(if p.threshold == ThresholdRule::None {
                    l.groups
                } else {
                    0.0
                });
            if events > 0.0 {
                1.0 / (tau + 1.0 / events + load.async_delay_s)
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max);
    let forced = periodic + async_rate;
    // Per level: (flushes per second of the level, visits per flush).
    let mut per_level = vec![(0.0, 0.0); n];
    let mut root_scope_rate = forced;
    match (p.threshold, p.scope) {
        (ThresholdRule::Global, scope) => {
            let total: f64 = load.levels.iter().map(|l| l.groups * checks_of(l)).sum();
            // A spike puts the one count over: its first read flushes.
            let spikes = load
                .levels
                .iter()
                .map(|l| l.groups * over(l))
                .fold(0.0, f64::max);
            match scope {
                FlushScope::Root => {
                    root_scope_rate +=
                        spikes + total * over_share(tau_root, total, forced + spikes);
                }
                FlushScope::Subtree => {
                    // Over once the count crosses, until a root flush (with
                    // none, for the rest of the run).
                    let root_resets = checks_of(root) + forced;
                    let share = if root_resets > 0.0 {
                        over_share(tau_root, root_resets, 0.0)
                    } else {
                        (1.0 - tau_root / secs).max(0.0)
                    };
                    let mut reset = forced;
                    for (i, l) in load.levels.iter().enumerate() {
                        let own = checks_of(l) * share + over(l);
                        reset += own;
                        let tau = if reset > 0.0 { 1.0 / reset } else { secs };
                        per_level[i] = (l.groups * own, visits(load, i, tau));
                    }
                }
            }
        }
        (_, FlushScope::Root) => {
            // Every flush resets the tree: the rate at which checks find
            // their group over since the last flush.
            let demand = |f: f64| -> f64 {
                load.levels
                    .iter()
                    .map(|l| {
                        let c = checks_of(l);
                        if p.threshold == ThresholdRule::None {
                            l.groups * c
                        } else {
                            let tau = crossing(p, load, l, threshold);
                            l.groups * over(l) + l.active * c * over_share(tau, c, f)
                        }
                    })
                    .sum::<f64>()
            };
            let top = load
                .levels
                .iter()
                .map(|l| l.groups * checks_of(l))
                .sum::<f64>()
                + forced;
            let f = bisect(0.0, top.max(1e-9), |f| forced + demand(f) - f);
            root_scope_rate = f.max(forced);
        }
        (_, FlushScope::Subtree) => {
            let mut above = forced;
            for (i, l) in load.levels.iter().enumerate() {
                let c = checks_of(l);
                let tau = crossing(p, load, l, threshold);
                let own = c * over_share(tau, c, above);
                // Spike reads flush whatever the count (their groups are
                // active ones, or as good as).
                let spiked = over(l) * l.groups;
                let reset = above + own + over(l);
                // Idle groups flush too when every check flushes (nothing
                // to visit).
                let idle = if p.threshold == ThresholdRule::None {
                    (l.groups - l.active).max(0.0) * c
                } else {
                    0.0
                };
                let tau_reset = if reset > 0.0 { 1.0 / reset } else { secs };
                let v = visits(load, i, tau_reset);
                let flushes = l.active * own + idle + spiked;
                let mean_v = if flushes > 0.0 {
                    (l.active * own + spiked) * v / flushes
                } else {
                    0.0
                };
                per_level[i] = (flushes, mean_v);
                above = reset;
            }
        }
    }
    // Root-scope flushes (forced, async, or read-side with a root scope).
    let root_visits = visits(
        load,
        0,
        if root_scope_rate > 0.0 {
            1.0 / root_scope_rate
        } else {
            secs
        },
    );
    let mut classes: Vec<(f64, f64, usize)> = per_level
        .iter()
        .enumerate()
        .map(|(i, &(f, v))| (f, v, i))
        .collect();
    classes.push((root_scope_rate, root_visits, 0));
    // The lock: demand in lock-seconds per second.
    let dur = |v: f64| price(passes_per, v);
    let rho = match p.concurrency {
        Concurrency::DisjointParallel => {
            // A flush waits for the flushes of its group and its
            // ancestors (and for descendants already running, which
            // rarely fill a subtree's time): the busiest group's demand.
            (0..n)
                .map(|at| {
                    classes
                        .iter()
                        .filter(|c| c.2 <= at)
                        .map(|&(f, v, i)| f / load.levels[i].groups.max(1.0) * dur(v))
                        .sum::<f64>()
                })
                .fold(0.0, f64::max)
        }
        _ => classes.iter().map(|&(f, v, _)| f * dur(v)).sum(),
    };
    // Past its capacity, a lock runs `1/ρ` of the demand; a queue that
    // holds its readers (serialize, disjoint-parallel) holds most of
    // them, and at the end of the run it drains: every waiter flushes.
    let (scale, queue) = match p.concurrency {
        Concurrency::Skip => (1.0 / (1.0 + rho), 0.0),
        Concurrency::WaitOngoing { .. } if rho > 1.0 => (1.0 / rho, 0.0),
        _ if rho > 1.0 => (1.0 / rho, load.waiters * (1.0 - 1.0 / rho)),
        _ => (1.0, 0.0),
    };
    let mut out = FlushLoad::default();
    let mut demand = 0.0;
    for &(f, v, _) in &classes {
        let flushes = f * scale * secs;
        demand += f * secs;
        out.flushes += flushes;
        out.visits += flushes * v;
    }
    // The queue at the end, drained (a flush each, nothing new to visit
    // beyond what the last ones left).
    let drained = queue.min(demand - out.flushes).max(0.0);
    out.flushes += drained;
    // Each release looks at the queue: its length through the run, then
    // shorter by one at each release of the drain.
    out.queue_scans = (out.flushes - drained) * queue + drained * drained / 2.0;
    if queue > 0.0 {
        // (Reads that skip their flush, or stop waiting, still read.)
        out.reads_lost = (demand - out.flushes).max(0.0);
    }
    out.passes = out.flushes * passes_per;
    out.checks = (load
        .levels
        .iter()
        .map(|l| l.groups * (l.reads + l.hot * (hot_sync + hot_async)))
        .sum::<f64>()
        * secs
        - out.reads_lost)
        .max(0.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::{Preset, ThresholdSize};

    /// A root over `leaves` leaves on `shards` shards, every leaf written
    /// at `rate` updates per second and read `reads` times per second.
    fn tree(leaves: f64, shards: f64, rate: f64, reads: f64) -> TreeLoad {
        let leaf = Level {
            groups: leaves,
            active: leaves,
            updates: rate,
            writers: shards,
            pairs: shards,
            reads,
            over_reads: 0.0,
            over_pages: 0.0,
            hot: 0.0,
            sizes: vec![(1.0, 4.0)],
        };
        let root = Level {
            groups: 1.0,
            active: 1.0,
            updates: rate * leaves,
            writers: shards,
            pairs: shards * leaves,
            reads,
            over_reads: 0.0,
            over_pages: 0.0,
            hot: 0.0,
            sizes: vec![(1.0, 4.0)],
        };
        TreeLoad {
            levels: vec![root, leaf],
            shards,
            seconds: 1.0,
            periodic_s: None,
            async_delay_s: 0.0,
            waiters: 0.0,
        }
    }

    fn free(_: f64, _: f64) -> f64 {
        0.0
    }

    #[test]
    fn without_a_threshold_every_read_flushes() {
        let t = tree(100.0, 64.0, 1000.0, 10.0);
        let l = flush_load(&Preset::Linux5_13.policy(), &t, &free);
        assert!((l.flushes - 1010.0).abs() < 1.0, "{l:?}");
        assert!((l.passes - 1010.0 * 64.0).abs() < 64.0, "{l:?}");
        // Each leaf flush visits what its leaf's 64 shards got in 0.1 s.
        let per = 64.0 * (1.0 - (-1000.0f64 * 0.1 / 64.0).exp());
        assert!(l.visits > 1000.0 * per * 0.9, "{l:?}");
    }

    #[test]
    fn a_threshold_no_run_reaches_never_flushes_on_reads() {
        let t = tree(100.0, 64.0, 1000.0, 10.0);
        let mut p = Preset::Hierstat.policy();
        p.threshold_size = ThresholdSize::Fixed(1 << 30);
        assert!(flush_load(&p, &t, &free).flushes < 1.0);
    }

    #[test]
    fn a_global_threshold_flushes_the_root_once_per_threshold() {
        // 400,000 pages a second against T = 32 x 64 pages, plus the
        // residues' lag (64 shards x 16 pages): a flush every 7.7 ms.
        let t = tree(100.0, 64.0, 1000.0, 10.0);
        let l = flush_load(&Preset::Linux5_15.policy(), &t, &free);
        let expect = 1.0 / ((2048.0 + 1024.0) / 400_000.0 + 1.0 / 1010.0);
        assert!((l.flushes / expect - 1.0).abs() < 0.05, "{l:?} {expect}");
    }

    #[test]
    fn a_saturated_serialized_lock_runs_at_its_pace_and_holds_readers() {
        let mut t = tree(100.0, 64.0, 1000.0, 10.0);
        t.waiters = 500.0;
        // Each flush holds the lock 2 ms: 500 a second at most, then the
        // queue (half the 500 readers) drains.
        let l = flush_load(&Preset::Linux5_13.policy(), &t, &|_, _| 2e-3);
        let queue = 500.0 * (1.0 - 500.0 / 1010.0);
        assert!((l.flushes - 500.0 - queue).abs() < 1.0, "{l:?}");
        assert!(
            (l.reads_lost - (1010.0 - 500.0 - queue)).abs() < 1.0,
            "{l:?}"
        );
        assert!(l.queue_scans > 500.0 * queue, "{l:?}");
        // Skipping drops the excess instead.
        let mut p = Preset::Linux5_13.policy();
        p.concurrency = Concurrency::Skip;
        let s = flush_load(&p, &t, &|_, _| 2e-3);
        assert!(s.flushes < 500.0 && s.queue_scans == 0.0, "{s:?}");
    }

    #[test]
    fn root_scope_flushes_reset_everything() {
        // A one-page threshold: every read of a group with an update since
        // the last flush flushes the whole tree.
        let t = tree(100.0, 64.0, 1000.0, 10.0);
        let mut p = Preset::Hierstat.policy();
        p.threshold_size = ThresholdSize::Fixed(1);
        p.scope = FlushScope::Root;
        let root = flush_load(&p, &t, &free);
        p.scope = FlushScope::Subtree;
        let sub = flush_load(&p, &t, &free);
        assert!(root.flushes <= sub.flushes, "{root:?} {sub:?}");
        assert!(
            root.visits / root.flushes > sub.visits / sub.flushes,
            "{root:?} {sub:?}"
        );
    }

    #[test]
    fn hot_path_rules() {
        let mut t = tree(10.0, 64.0, 10_000.0, 0.0);
        t.levels[1].hot = 100.0;
        t.periodic_s = Some(0.5);
        let l = |p: HotPathFlush| {
            let mut pol = Preset::Linux5_15.policy();
            pol.hot_path = p;
            pol.threshold_size = ThresholdSize::Fixed(100);
            flush_load(&pol, &t, &free).flushes
        };
        let (none, sync, rl, asy) = (
            l(HotPathFlush::None),
            l(HotPathFlush::Sync),
            l(HotPathFlush::Ratelimited),
            l(HotPathFlush::Async),
        );
        assert_eq!(none, 2.0, "the periodic flushes");
        assert_eq!(rl, none, "the periodic flush is never late");
        // 400,000 pages a second against T = 100 pages plus the residues'
        // lag (64 x 16 pages): a flush about every 4 ms.
        assert!(sync > 200.0 && asy > 200.0, "{sync} {asy}");
    }
}
