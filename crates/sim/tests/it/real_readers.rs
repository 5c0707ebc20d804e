//! Real-mode readers end with the run, whatever their period.

use lab::RunOptions;
use sim::kinds::stats::{StatsScenario, Workload};
use std::time::{Duration, Instant};

/// `stale-read-real` for 20 ms with a reader period of 65,536 ms (a
/// fuzzed case): each reader's first gap is 3.3 s, and a reader that
/// slept it whole held every policy's run that long (the fuzz test killed
/// it at 60 s as a hang). It ends with the run.
#[test]
fn a_reader_period_longer_than_the_run_ends_with_it() {
    let mut file = sim::catalog().builtin("stale-read-real").unwrap().unwrap();
    file.header_mut().runs = 1;
    let sc: &mut StatsScenario = file.spec_as_mut().expect("a stats scenario");
    sc.duration_ms = 20;
    let Workload::StaleRead(w) = &mut sc.workload else {
        panic!("stale-read-real is a stale-read workload");
    };
    let r = w.readers.as_mut().expect("stale-read-real has readers");
    r.count = 20;
    r.period_ms = 65_536.0;
    let t = Instant::now();
    file.run(&RunOptions::default(), &mut |_| {}).unwrap();
    // Three policies of 20 ms each, and their setup: seconds at most; a
    // reader that slept its gap took over 3.3 s per policy.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}
