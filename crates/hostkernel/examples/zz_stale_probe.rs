// TEMPORARY probe (not committed): per-sample stale-read output.
use hostkernel::{run_stale_read, Host, StaleReadConfig};
use std::time::Duration;
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let kib: u64 = a[0].parse().unwrap();
    let reps: usize = a[1].parse().unwrap();
    let follow: f64 = a[2].parse().unwrap();
    let host = Host::detect().unwrap();
    let cancel = hostkernel::signals::install(None).unwrap();
    let c = StaleReadConfig {
        spikes_kib: vec![kib],
        repetitions: reps,
        pause: Duration::from_millis(2),
        concurrent_reader: true,
        follow_ms: follow,
        follow_poll_ms: 5.0,
        follow_repetitions: a.get(3).map(|x| x.parse().unwrap()),
    };
    let r = run_stale_read(&host, &c, &cancel).unwrap();
    for s in &r.cases[0].samples {
        println!(
            "{:.1} lag {} reads {} stale {:?} settle {:.1} before {} charge {:.3} flushes {:?} first {:?} later {:?}",
            s.t_ms, s.stat_lag_after_charge, s.reader_reads, s.stale_for_ms.map(|x| x.round()), s.settle_ms, s.gap_before,
            s.charge_ms, s.reader_flushes, s.first_pass_ns, s.later_pass_ns
        );
    }
    println!("share {:?}", r.flush_share);
    println!("first {:?}\nlater {:?}", r.cases[0].first_pass_ns, r.cases[0].later_pass_ns);
    let n = r.cases[0].samples.len();
    let t = r.cases[0].samples.iter().filter(|s| s.stat_lag_after_charge > 128).count();
    println!("trapped {t} of {n}; wall {:.1} s", r.wall_s);
}
