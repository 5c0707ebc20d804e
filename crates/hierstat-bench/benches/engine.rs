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
//!
//! The two-thread cases come last, in their own group (`engine_2threads`):
//! each is timed in the windows its threads ran side by side
//! (`hierstat_bench::threads::on_threads`), so its figure for `iters`
//! operations is that rate times `iters`; a call in which they never met is
//! rerun (`Case::run_finite`), a case whose threads do not meet on this host
//! now is left out (with a line on stderr), and one that stops meeting
//! halfway ends the run after every other figure is in.

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use hierstat_bench::cases::timed;
use hierstat_bench::{suite, Case};
use std::hint::black_box;
use std::time::Duration;

/// Times every case of `cases` in `grp`, `samples` samples each.
fn bench_all(
    mut grp: BenchmarkGroup<'_, criterion::measurement::WallTime>,
    cases: &mut [Case<'_>],
) {
    for case in cases {
        let name = case.name().to_string();
        grp.sample_size(if name.contains("flush") { 20 } else { 30 });
        grp.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let ns = case.run_finite(iters, 20).expect("the case runs");
                Duration::from_nanos(ns as u64)
            })
        });
    }
    grp.finish();
}

fn engine(c: &mut Criterion) {
    let opts = suite::Options::standard(false);
    let mut cases = suite::cases(&opts).expect("the suite's cases");
    cases.retain(|c| !c.name().ends_with("_cold"));
    let p = prometheus::IntCounter::new("x", "x").expect("a valid counter");
    cases.push(Case::new("prometheus_int_counter", opts.ops, move |n| {
        Ok(timed(n, |_| black_box(&p).inc_by(1)))
    }));
    let (mut two, mut one): (Vec<_>, Vec<_>) = cases
        .into_iter()
        .partition(|c| c.name().contains("2threads"));
    bench_all(c.benchmark_group("engine"), &mut one);
    two.retain_mut(|c| {
        let ok = c.run_finite(1 << 20, 3).is_ok();
        if !ok {
            eprintln!(
                "{}: left out, its threads never ran side by side here",
                c.name()
            );
        }
        ok
    });
    bench_all(c.benchmark_group("engine_2threads"), &mut two);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = engine
}
criterion_main!(benches);
