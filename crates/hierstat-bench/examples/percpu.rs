//! The per-CPU mode's cases alone (`hierstat_bench::percpu`): updates by
//! 1, 2, 4, 16, 64 and 1,000 threads against the same threads' shared
//! `fetch_add`, per-thread plain adds and per-thread owner rows, in
//! interleaved rounds on the thread CPU clock, with the restarts each
//! case's threads counted; then the rows a group gets from each number of
//! threads, in the per-CPU and the owner mode.
//!
//! ```text
//! cargo run --release -p hierstat-bench --example percpu -- [REPS]
//! ```

use hierstat::sim::Simulator as _;
use hierstat::{Config, HierStats, Preset, Schema, Unit};
use hierstat_bench::{cases, percpu, run_rounds, suite, threads};

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
        cs.push(percpu::owner_update(t, n)?);
    }
    cs.push(percpu::percpu_counter(1, n)?);
    cs.push(percpu::percpu_update_side_by_side(4 * n)?);
    cs.push(threads::shared_atomic_2threads(4 * n));
    cs.push(threads::sharded_counter_2threads(4 * n));
    let s = run_rounds(&mut cs, reps, &mut |_| {})?;
    println!("{reps} rounds; ns per update (median [range]); restarts over all rounds");
    for c in &cs {
        let f = s.figure(c.name());
        println!(
            "  {:<36} {:>6.2} [{:.2}-{:.2}]  restarts {}",
            c.name(),
            f.median,
            f.min,
            f.max,
            percpu::restarts_of(c.name())
        );
    }
    println!("ratios within each round (median [range])");
    let show = |name: &str, num: &str, den: &str| {
        let r = s.ratio(num, den);
        println!("  {name:<44} {:>5.2} [{:.2}-{:.2}]", r.median, r.min, r.max);
    };
    for r in suite::ratios()
        .iter()
        .filter(|r| r.num.starts_with("percpu"))
    {
        show(r.name, r.num, r.den);
    }
    show(
        "Counter::add, 1 thread: / plain add",
        "percpu_counter_add_1threads",
        "plain_add_1threads",
    );
    println!(
        "rows of a group written by N live threads (each adding 100 times), per-CPU / owner mode:"
    );
    for t in percpu::THREADS {
        let percpu_rows = rows(Config::preset(Preset::Hierstat).per_cpu(true), t)?;
        let owner = Config::preset(Preset::Hierstat).shards((t + 16).min(hierstat::MAX_SHARDS));
        println!(
            "  {t:>5} threads: {percpu_rows:>5} / {:>5}",
            rows(owner, t)?
        );
    }
    Ok(())
}

/// The rows of a group that `threads` threads, all live at once, each add
/// to 100 times, in a tree under `config`.
fn rows(config: Config, threads: usize) -> Result<usize, Box<dyn std::error::Error>> {
    let mut b = Schema::builder();
    let item = b.state("s", Unit::Pages);
    let stats = HierStats::new(b.build()?, config)?;
    let g = stats.create(&stats.root(), "g")?;
    let all = std::sync::Barrier::new(threads);
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| {
                // The first add takes the thread's seat (owner mode), held
                // until it exits: all seats are held at once.
                drop(stats.add(&g, item, 1));
                all.wait();
                (1..100).for_each(|_| drop(stats.add(&g, item, 1)));
            });
        }
    });
    Ok(stats.rows_of(&g)?)
}
