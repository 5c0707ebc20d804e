//! Engine benchmarks, side by side with the baselines in one run.
//!
//! `cargo bench -p hierstat --bench engine` (criterion; medians are what
//! to quote). Baselines:
//! * `atomic`: one uncontended `AtomicU64::fetch_add` (the floor of any
//!   migration-safe per-shard update);
//! * `eager`: the pre-rstat design, a shared `AtomicI64` per group
//!   propagated eagerly up the ancestors on every update;
//! * `sharded`: a flat sharded counter, summed on read (LongAdder-style);
//! * `metrics` / `prometheus`: their counters through cached handles.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use hierstat::sim::{Shard, Simulator};
use hierstat::{Config, Group, HierStats, ItemId, Preset, Schema, Unit};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Pre-rstat: every update walks to the root with a shared atomic add.
struct Eager {
    parent: Vec<usize>,
    counters: Vec<CacheLine>,
}

#[repr(align(128))]
struct CacheLine(AtomicI64);

impl Eager {
    /// A chain of `depth + 1` groups; the leaf is the last.
    fn chain(depth: usize) -> Self {
        Eager {
            parent: (0..=depth).map(|i| i.saturating_sub(1)).collect(),
            counters: (0..=depth).map(|_| CacheLine(AtomicI64::new(0))).collect(),
        }
    }
    #[inline]
    fn add(&self, mut g: usize, v: i64) {
        loop {
            self.counters[g].0.fetch_add(v, Ordering::Relaxed);
            if g == 0 {
                break;
            }
            g = self.parent[g];
        }
    }
}

/// A flat sharded counter, summed on read.
struct Sharded {
    shards: Vec<CacheLine>,
}

impl Sharded {
    fn new(n: usize) -> Self {
        Sharded {
            shards: (0..n).map(|_| CacheLine(AtomicI64::new(0))).collect(),
        }
    }
    #[inline]
    fn add(&self, shard: usize, v: i64) {
        self.shards[shard].0.fetch_add(v, Ordering::Relaxed);
    }
    fn sum(&self) -> i64 {
        self.shards
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

fn tree(preset: Preset, shards: usize) -> (HierStats, ItemId) {
    let mut b = Schema::builder();
    let item = b.event("pgfault", Unit::Count);
    for i in 0..15 {
        b.state(&format!("s{i}"), Unit::Pages);
    }
    (
        HierStats::new(b.build().unwrap(), Config::preset(preset).shards(shards)).unwrap(),
        item,
    )
}

fn chain(t: &HierStats, depth: usize) -> Group {
    let mut g = t.root();
    for i in 0..depth {
        g = t.create(&g, &format!("d{i}")).unwrap();
    }
    g
}

fn single_thread(c: &mut Criterion) {
    let mut grp = c.benchmark_group("update_1thread");
    let a = AtomicU64::new(0);
    grp.bench_function("atomic", |b| {
        b.iter(|| a.fetch_add(black_box(1), Ordering::Relaxed))
    });
    for depth in [1usize, 2, 4, 8] {
        for preset in [Preset::Hierstat, Preset::Linux6_8, Preset::Linux5_15] {
            let (t, item) = tree(preset, 2);
            let g = chain(&t, depth);
            grp.bench_with_input(
                BenchmarkId::new(format!("{preset}"), depth),
                &depth,
                |b, _| b.iter(|| t.add(&g, item, black_box(1)).unwrap()),
            );
        }
        let e = Eager::chain(depth);
        grp.bench_with_input(BenchmarkId::new("eager", depth), &depth, |b, _| {
            b.iter(|| e.add(depth, black_box(1)))
        });
    }
    // A bound counter (`HierStats::counter`): the checks done once.
    let (t, item) = tree(Preset::Hierstat, 2);
    let c = t.counter(&chain(&t, 1), item).unwrap();
    grp.bench_function("hierstat_counter_depth1", |b| {
        b.iter(|| c.add(black_box(1)).unwrap())
    });
    let s = Sharded::new(2);
    grp.bench_function("sharded", |b| b.iter(|| s.add(0, black_box(1))));
    let m = metrics::Counter::from_arc(std::sync::Arc::new(AtomicU64::new(0)));
    grp.bench_function("metrics", |b| b.iter(|| m.increment(black_box(1))));
    let p = prometheus::IntCounter::new("x", "x").unwrap();
    grp.bench_function("prometheus", |b| b.iter(|| p.inc_by(black_box(1))));
    grp.finish();
}

/// Per-op cost with `threads` threads each doing `iters` operations.
fn per_op_threads(threads: usize, iters: u64, op: impl Fn(usize) + Sync) -> Duration {
    let barrier = Barrier::new(threads);
    let total: Duration = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, op) = (&barrier, &op);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..iters {
                        op(t);
                    }
                    start.elapsed()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    total / threads as u32
}

fn two_threads(c: &mut Criterion) {
    let mut grp = c.benchmark_group("update_2threads_same_group");
    // A shard per thread: the two workers and the bench's own thread.
    let (t, item) = tree(Preset::Hierstat, 4);
    let g = chain(&t, 1);
    grp.bench_function("hierstat_1thread", |b| {
        b.iter_custom(|iters| {
            per_op_threads(1, iters, |_| {
                t.add_with(Shard(0), &g, item, 1, &mut ()).unwrap()
            })
        })
    });
    grp.bench_function("hierstat_2threads", |b| {
        b.iter_custom(|iters| {
            per_op_threads(2, iters, |th| {
                t.add_with(Shard(th), &g, item, 1, &mut ()).unwrap()
            })
        })
    });
    // The same through the implicit shard of each thread (`add`): fresh
    // threads per sample take the lowest free slots, so two live threads
    // always have two shards.
    grp.bench_function("hierstat_2threads_implicit", |b| {
        b.iter_custom(|iters| per_op_threads(2, iters, |_| t.add(&g, item, 1).unwrap()))
    });
    // The flat baseline: each thread `fetch_add`s its own cache-padded
    // atomic (no hierarchy, no bound, sum on read).
    let s = Sharded::new(2);
    grp.bench_function("sharded_counter_2threads", |b| {
        b.iter_custom(|iters| per_op_threads(2, iters, |th| s.add(th, 1)))
    });
    let shared = AtomicU64::new(0);
    grp.bench_function("shared_atomic_2threads", |b| {
        b.iter_custom(|iters| {
            per_op_threads(2, iters, |_| {
                shared.fetch_add(1, Ordering::Relaxed);
            })
        })
    });
    let e = Eager::chain(1);
    grp.bench_function("eager_2threads", |b| {
        b.iter_custom(|iters| per_op_threads(2, iters, |_| e.add(1, 1)))
    });
    grp.finish();
}

fn reads(c: &mut Criterion) {
    let mut grp = c.benchmark_group("read");
    let (t, item) = tree(Preset::Hierstat, 2);
    let g = chain(&t, 2);
    t.add(&g, item, 5).unwrap();
    t.flush_forced(&t.root()).unwrap();
    grp.bench_function("hierstat_clean", |b| {
        b.iter(|| t.read(black_box(&g), item).unwrap())
    });
    grp.bench_function("hierstat_bounded", |b| {
        b.iter(|| t.read_bounded(black_box(&g), item).unwrap())
    });
    grp.bench_function("hierstat_flush_if_needed_clean", |b| {
        b.iter(|| {
            t.flush(&g).unwrap();
            t.read(&g, item).unwrap()
        })
    });
    let s = Sharded::new(2);
    grp.bench_function("sharded_sum_2", |b| b.iter(|| s.sum()));
    let s = Sharded::new(64);
    grp.bench_function("sharded_sum_64", |b| b.iter(|| s.sum()));
    grp.finish();
}

/// A tree of `groups` groups: root / 100 slices / leaves.
fn wide_tree(groups: usize) -> (HierStats, ItemId, Vec<Group>) {
    let (t, item) = tree(Preset::Hierstat, 2);
    let slices: Vec<_> = (0..100)
        .map(|i| t.create(&t.root(), &format!("s{i}")).unwrap())
        .collect();
    let mut leaves = Vec::with_capacity(groups);
    for i in 0..groups.saturating_sub(101) {
        leaves.push(t.create(&slices[i % 100], &format!("l{i}")).unwrap());
    }
    (t, item, leaves)
}

fn flushes(c: &mut Criterion) {
    let mut grp = c.benchmark_group("flush_100_dirty_leaves");
    grp.sample_size(20);
    for groups in [10_000usize, 100_000] {
        let (t, item, leaves) = wide_tree(groups);
        let step = leaves.len() / 100;
        grp.bench_with_input(BenchmarkId::new("root_forced", groups), &groups, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    // Dirtied by this thread's plain owner path, so each
                    // flush pays the heavy barrier as a real one does.
                    for i in 0..100 {
                        t.add(&leaves[i * step], item, 1).unwrap();
                    }
                    let start = Instant::now();
                    t.flush_forced(&t.root()).unwrap();
                    total += start.elapsed();
                }
                total
            })
        });
    }
    grp.finish();
}

/// The flusher's heavy barrier: a forced flush of one leaf its shard's
/// owner dirtied, with membarrier (the barrier) and without (owners take
/// the shared path, the flusher a fence); the difference is the barrier's
/// cost per flush, with a second thread running.
fn barrier(c: &mut Criterion) {
    let mut grp = c.benchmark_group("flush_1_dirty_leaf");
    for membarrier in [true, false] {
        let (s, items) = {
            let mut b = Schema::builder();
            let x = b.state("x", Unit::Pages);
            (b.build().unwrap(), x)
        };
        let t = HierStats::new(
            s,
            Config::preset(Preset::Hierstat)
                .shards(4)
                .membarrier(membarrier),
        )
        .unwrap();
        let g = t.create(&t.root(), "g").unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
            let name = if membarrier { "membarrier" } else { "fences" };
            grp.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        t.add(&g, items, 1).unwrap();
                        let start = Instant::now();
                        t.flush_forced(&t.root()).unwrap();
                        total += start.elapsed();
                    }
                    total
                })
            });
            stop.store(true, Ordering::Relaxed);
        });
    }
    grp.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = single_thread, two_threads, reads, flushes, barrier
}
criterion_main!(benches);
