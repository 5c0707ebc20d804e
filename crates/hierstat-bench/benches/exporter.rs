//! The exporter's costs, side by side in one run, as harness cases
//! ([`hierstat_bench::Case`]) under criterion: every time is the thread CPU
//! clock's, through `iter_custom`.
//!
//! `cargo bench -p hierstat-bench --features criterion --bench exporter`
//! (quote the medians, `target/criterion/<group>/<name>/new/estimates.json`).
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
//!   At 2 threads both threads increment the same handle, timed while they
//!   ran side by side ([`hierstat_bench::threads::on_threads`]); the time
//!   is per increment per thread (left out, with a line on stderr, when the
//!   threads never meet on this host now; they run last).
//! * `render/*`: one render ([`ScrapePolicy::Cached`]: no flush) of 1k,
//!   10k and 100k groups × 16 items (8 states, 8 events), OpenMetrics and
//!   Prometheus text.

use criterion::{criterion_group, criterion_main, Criterion};
use hierstat::{Config, HierStats, ItemId, Preset, Schema, Unit};
use hierstat_bench::cases::timed;
use hierstat_bench::threads::on_threads;
use hierstat_bench::Case;
use hierstat_exporter::{Exporter, Format, HierRecorder, ScrapePolicy};
use metrics::{Key, Label, Level, Metadata, Recorder};
use std::hint::black_box;
use std::time::Duration;

/// One increment of one contender.
type Increment<'a> = Box<dyn Fn() + Sync + 'a>;

/// Times `c` under criterion as `id` of `grp`.
fn bench(
    grp: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: impl Into<String>,
    c: &mut Case<'_>,
) {
    grp.bench_function(id.into(), |b| {
        b.iter_custom(|iters| {
            let ns = c.run_finite(iters, 20).expect("the case runs");
            Duration::from_nanos(ns as u64)
        })
    });
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

    let increments: Vec<(&str, Increment)> = vec![
        (
            "hierstat-add",
            Box::new(|| stats.add(&web, requests, black_box(1)).unwrap()),
        ),
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
        for (name, f) in &increments {
            let mut case = if threads == 1 {
                Case::new(*name, 1, |n| Ok(timed(n, |_| f())))
            } else {
                Case::new(*name, 1, |n| on_threads(2, n, |_, _| f()))
            };
            if threads > 1 && case.run_finite(1 << 20, 3).is_err() {
                eprintln!(
                    "increment/2-threads/{name}: left out, its threads never ran side by side here"
                );
                continue;
            }
            bench(&mut grp, *name, &mut case);
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
        for format in [Format::OpenMetrics, Format::Prometheus] {
            let name = match format {
                Format::OpenMetrics => "openmetrics",
                Format::Prometheus => "prometheus-text",
            };
            let mut case = Case::new(name, 1, |n| {
                Ok(timed(n, |_| {
                    buf.clear();
                    black_box(exporter.render(format, &mut buf).unwrap());
                }))
            });
            bench(&mut grp, format!("{name}/{label}"), &mut case);
        }
    }
    grp.finish();
}

// The two-thread increments last: a case whose threads stop meeting
// halfway (a busy host) ends the run after every other figure is in.
criterion_group!(benches, render, increment);
criterion_main!(benches);
