//! The per-CPU mode's cases alone (`hierstat_bench::percpu`): updates by
//! 1, 2, 8 and 64 threads against the same threads' shared `fetch_add`
//! and per-thread plain adds, in interleaved rounds on the thread CPU
//! clock; then the rows a group gets from 1,000 threads.
//!
//! ```text
//! cargo run --release -p hierstat-bench --example percpu -- [REPS]
//! ```

use hierstat::sim::Simulator as _;
use hierstat_bench::{cases, percpu, run_rounds, threads};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9);
    if !percpu::available() {
        println!("no per-CPU mode on this host");
        return Ok(());
    }
    let n = 2_000_000;
    let mut cs = vec![cases::atomic_fetch_add(n), cases::plain_add(n)];
    for t in percpu::THREADS {
        cs.push(percpu::percpu_update(t, n)?);
        cs.push(percpu::shared_fetch_add(t, n));
        cs.push(percpu::plain_add(t, n));
    }
    cs.push(percpu::percpu_counter(1, n)?);
    cs.push(percpu::percpu_update_side_by_side(4 * n)?);
    cs.push(threads::shared_atomic_2threads(4 * n));
    cs.push(threads::sharded_counter_2threads(4 * n));
    let s = run_rounds(&mut cs, reps, &mut |_| {})?;
    println!("{reps} rounds; ns per update (median [range])");
    for c in &cs {
        let f = s.figure(c.name());
        println!(
            "  {:<30} {:>6.2} [{:.2}-{:.2}]",
            c.name(),
            f.median,
            f.min,
            f.max
        );
    }
    println!("ratios within each round (median [range])");
    let show = |name: &str, num: &str, den: &str| {
        let r = s.ratio(num, den);
        println!("  {name:<44} {:>5.2} [{:.2}-{:.2}]", r.median, r.min, r.max);
    };
    for t in percpu::THREADS {
        let u = format!("percpu_update_{t}threads");
        show(
            &format!("{t} threads: / shared fetch_add ({t} threads)"),
            &u,
            &format!("shared_fetch_add_{t}threads"),
        );
        show(
            &format!("{t} threads: / plain add ({t} threads)"),
            &u,
            &format!("plain_add_{t}threads"),
        );
        show(
            &format!("{t} threads: / one uncontended fetch_add"),
            &u,
            "atomic_fetch_add",
        );
    }
    show(
        "Counter::add, 1 thread: / plain add",
        "percpu_counter_add_1threads",
        "plain_add_1threads",
    );
    // Rows per group: 1,000 threads, 50 at a time, each adding once.
    let (stats, g, items) = percpu::percpu_tree("rows")?;
    for _ in 0..20 {
        std::thread::scope(|sc| {
            for _ in 0..50 {
                sc.spawn(|| stats.add(&g, items[0], 1));
            }
        });
    }
    println!(
        "rows of a group written by 1,000 threads on {} CPUs: {}",
        stats.shards(),
        stats.rows_of(&g)?
    );
    Ok(())
}
