//! One stale-read case with its repetitions printed one a line: the lag,
//! the reader's flushes during the charge and their traced CPU-0 passes,
//! so that the trap's odds can be read per repetition (which flush
//! trapped, how long its pass took). Needs root and a writable memory
//! controller.
//!
//! ```sh
//! cargo run --release -p hostkernel --example stale_samples -- KIB REPS [FOLLOW_MS [FOLLOWED]]
//! ```
//!
//! The last line counts the trapped repetitions by the reader's flushes
//! during the charge (`flushes N: trapped K of M`).

use hostkernel::{run_stale_read, Host, StaleReadConfig};
use std::collections::BTreeMap;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 2 {
        return Err("usage: stale_samples KIB REPS [FOLLOW_MS [FOLLOWED]]".into());
    }
    let host = Host::detect()?;
    let cancel = hostkernel::signals::install(None)?;
    let cfg = StaleReadConfig {
        spikes_kib: vec![a[0].parse()?],
        repetitions: a[1].parse()?,
        pause: Duration::from_millis(2),
        concurrent_reader: true,
        follow_ms: a.get(2).map(|x| x.parse()).transpose()?.unwrap_or(0.0),
        follow_poll_ms: 5.0,
        follow_repetitions: a.get(3).map(|x| x.parse()).transpose()?,
    };
    let r = run_stale_read(&host, &cfg, &cancel)?;
    let t = r.threshold_pages as i64;
    let c = &r.cases[0];
    let mut by_flushes: BTreeMap<Option<u32>, (usize, usize)> = BTreeMap::new();
    for s in &c.samples {
        println!(
            "t {:.1} ms lag {} reads {} flushes {:?} first {:?} later {:?} charge {:.3} ms stale {:?} settle {:.1} ms",
            s.t_ms,
            s.stat_lag_after_charge,
            s.reader_reads,
            s.reader_flushes,
            s.first_pass_ns,
            s.later_pass_ns,
            s.charge_ms,
            s.stale_for_ms.map(f64::round),
            s.settle_ms,
        );
        let e = by_flushes.entry(s.reader_flushes).or_default();
        e.0 += usize::from(s.stat_lag_after_charge > t);
        e.1 += 1;
    }
    println!("share {:?}", r.flush_share);
    for (f, (k, m)) in by_flushes {
        println!("flushes {f:?}: trapped {k} of {m}");
    }
    let k = c
        .samples
        .iter()
        .filter(|s| s.stat_lag_after_charge > t)
        .count();
    println!("trapped {k} of {}; wall {:.1} s", c.samples.len(), r.wall_s);
    Ok(())
}
