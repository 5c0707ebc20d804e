//! The engine suite's cases under criterion: the same cases `mmlab bench`
//! times (`hierstat_bench::suite::cases`, the same names), each through
//! criterion's `iter_custom`, so criterion's figures are the thread CPU
//! time of the same loops; plus the Prometheus client's counter
//! (`prometheus_int_counter`), a baseline only this bench builds.
//!
//! `cargo bench -p hierstat-bench --features criterion --bench engine`
//! (quote the medians; `target/criterion/engine/<case>/new/estimates.json`).
//! The cold flushes are left out: each evicts the caches (128 MiB written)
//! outside its timed region, which criterion's iteration count, chosen from
//! the timed region alone, would multiply into minutes; `mmlab bench`
//! times them.

use criterion::{criterion_group, criterion_main, Criterion};
use hierstat_bench::cases::timed;
use hierstat_bench::{suite, Case};
use std::hint::black_box;
use std::time::Duration;

fn engine(c: &mut Criterion) {
    let opts = suite::Options::standard(false);
    let mut cases = suite::cases(&opts).expect("the suite's cases");
    cases.retain(|c| !c.name().ends_with("_cold"));
    let p = prometheus::IntCounter::new("x", "x").expect("a valid counter");
    cases.push(Case::new("prometheus_int_counter", opts.ops, move |n| {
        Ok(timed(n, |_| black_box(&p).inc_by(1)))
    }));
    let mut grp = c.benchmark_group("engine");
    for case in &mut cases {
        let name = case.name().to_string();
        if name.contains("flush") {
            grp.sample_size(20);
        } else {
            grp.sample_size(30);
        }
        grp.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let ns = case.run(iters).expect("the case runs");
                Duration::from_nanos(ns as u64)
            })
        });
    }
    grp.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = engine
}
criterion_main!(benches);
