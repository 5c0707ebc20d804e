//! The exporter's costs, side by side in one run.
//!
//! `cargo bench -p hierstat-exporter --bench exporter` (criterion; quote
//! the medians, `target/criterion/<group>/<name>/new/estimates.json`).
//!
//! * `increment/{1,2}-threads/*`: one counter increment through a bound
//!   handle, every thread on the same series:
//!   - `hierstat-add`: a direct [`HierStats::add`] (the floor);
//!   - `hierstat-recorder`: a `metrics::Counter` registered with
//!     [`HierRecorder`] (`tenant` label → group);
//!   - `metrics-exporter-prometheus`: the same `metrics::Counter` from that
//!     crate's recorder;
//!   - `prometheus`: `prometheus::IntCounter::inc_by`;
//!   - `prometheus-client`: `prometheus_client::metrics::counter::Counter::inc_by`.
//!
//!   At 2 threads both threads increment the same handle; the time is per
//!   increment per thread (wall time of the slower thread / iterations).
//! * `render/*`: one render ([`ScrapePolicy::Cached`]: no flush) of 1k,
//!   10k and 100k groups × 16 items (8 states, 8 events), OpenMetrics and
//!   Prometheus text in wall time, and OpenMetrics in the thread's on-CPU
//!   time (`openmetrics-oncpu`: what the render costs when a shared host
//!   preempts it).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use hierstat::{Config, Group, HierStats, ItemId, Preset, Schema, Unit};
use hierstat_exporter::{Exporter, Format, HierRecorder, ScrapePolicy};
use metrics::{Key, Label, Level, Metadata, Recorder};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// One increment of one contender.
type Increment<'a> = Box<dyn Fn() + Sync + 'a>;

/// Runs `f` `iters` times on each of `threads` threads started together;
/// returns the slowest thread's time.
fn on_threads(threads: usize, iters: u64, f: &(dyn Fn() + Sync)) -> Duration {
    if threads == 1 {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        return t.elapsed();
    }
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let t = Instant::now();
                    for _ in 0..iters {
                        f();
                    }
                    t.elapsed()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).max().unwrap()
    })
}

fn increment(c: &mut Criterion) {
    let mut b = Schema::builder();
    let requests = b.event("requests", Unit::Count);
    let stats = HierStats::new(
        b.build().unwrap(),
        Config::preset(Preset::Hierstat).shards(4),
    )
    .unwrap();
    let tenant = stats.create(&stats.root(), "acme").unwrap();
    let web = stats.create(&tenant, "web").unwrap();
    let meta = Metadata::new("bench", Level::INFO, None);
    let key = Key::from_parts("requests", vec![Label::new("tenant", "acme/web")]);

    let rec = HierRecorder::builder(stats.clone())
        .group_label("tenant")
        .build();
    let hier_counter = rec.register_counter(&key, &meta);
    assert!(rec.unmapped().is_empty());
    let mep = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let mep_counter = mep.register_counter(&key, &meta);
    let prom = prometheus::IntCounter::new("requests", "requests").unwrap();
    let pc: prometheus_client::metrics::counter::Counter = Default::default();

    let add = |g: &Group, item: ItemId| stats.add(g, item, black_box(1)).unwrap();
    let cases: Vec<(&str, Increment)> = vec![
        ("hierstat-add", Box::new(|| add(&web, requests))),
        (
            "hierstat-recorder",
            Box::new(|| hier_counter.increment(black_box(1))),
        ),
        (
            "metrics-exporter-prometheus",
            Box::new(|| mep_counter.increment(black_box(1))),
        ),
        ("prometheus", Box::new(|| prom.inc_by(black_box(1)))),
        (
            "prometheus-client",
            Box::new(|| {
                pc.inc_by(black_box(1));
            }),
        ),
    ];
    for threads in [1, 2] {
        let mut grp = c.benchmark_group(format!("increment/{threads}-threads"));
        grp.warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for (name, f) in &cases {
            grp.bench_function(*name, |b| {
                b.iter_custom(|iters| on_threads(threads, iters, f.as_ref()))
            });
        }
        grp.finish();
    }
    // The recorder's handle writes the tenant's group (the benchmarks may
    // have been filtered out: check with increments of our own).
    stats.flush_forced(&stats.root()).unwrap();
    let before = stats.read(&tenant, requests).unwrap();
    hier_counter.increment(5);
    stats.flush_forced(&stats.root()).unwrap();
    assert_eq!(stats.read(&web, requests).unwrap(), before + 5);
}

/// `groups` groups (root included, about) under a 3-level fanout, 16
/// items, every group updated once per item and flushed.
fn tree(fanout: &[usize]) -> HierStats {
    let mut b = Schema::builder();
    let items: Vec<ItemId> = (0..16)
        .map(|i| {
            if i < 8 {
                b.state(&format!("state_{i}"), Unit::Pages)
            } else {
                b.event(&format!("event_{i}"), Unit::Count)
            }
        })
        .collect();
    let stats = HierStats::new(
        b.build().unwrap(),
        Config::preset(Preset::Hierstat).shards(2),
    )
    .unwrap();
    let mut level = vec![stats.root()];
    for &f in fanout {
        let mut next = Vec::with_capacity(level.len() * f);
        for p in &level {
            for i in 0..f {
                next.push(stats.create(p, &format!("group-{i}")).unwrap());
            }
        }
        for (k, g) in next.iter().enumerate() {
            for (j, &item) in items.iter().enumerate() {
                stats.add(g, item, (k * 16 + j) as i64 % 4096 + 1).unwrap();
            }
        }
        level = next;
    }
    stats.flush_forced(&stats.root()).unwrap();
    stats
}

/// This thread's time on a CPU so far (Linux), or wall time elsewhere.
fn on_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_else(|| {
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            START.get_or_init(Instant::now).elapsed()
        })
}

fn render(c: &mut Criterion) {
    let mut grp = c.benchmark_group("render");
    grp.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (label, fanout) in [
        ("1k", &[10, 100][..]),
        ("10k", &[10, 10, 100][..]),
        ("100k", &[10, 100, 100][..]),
    ] {
        let stats = tree(fanout);
        let exporter = Exporter::builder(stats.clone())
            .policy(ScrapePolicy::Cached)
            .build()
            .unwrap();
        let mut buf = Vec::new();
        let r = exporter.render(Format::OpenMetrics, &mut buf).unwrap();
        assert_eq!(r.samples, r.groups * 16);
        eprintln!(
            "render/{label}: {} groups, {} samples, {} bytes",
            r.groups,
            r.samples,
            buf.len()
        );
        // The same render timed in this thread's on-CPU time
        // (`/proc/thread-self/schedstat`): on a shared host, wall time
        // also counts the time other processes held the CPU.
        grp.bench_with_input(
            BenchmarkId::new("openmetrics-oncpu", label),
            &exporter,
            |b, e| {
                b.iter_custom(|iters| {
                    let start = on_cpu();
                    for _ in 0..iters {
                        buf.clear();
                        black_box(e.render(Format::OpenMetrics, &mut buf).unwrap());
                    }
                    on_cpu() - start
                })
            },
        );
        for format in [Format::OpenMetrics, Format::Prometheus] {
            let name = match format {
                Format::OpenMetrics => "openmetrics",
                Format::Prometheus => "prometheus-text",
            };
            grp.bench_with_input(BenchmarkId::new(name, label), &exporter, |b, e| {
                b.iter(|| {
                    buf.clear();
                    e.render(format, &mut buf).unwrap()
                })
            });
        }
    }
    grp.finish();
}

criterion_group!(benches, increment, render);
criterion_main!(benches);
