//! Thread churn: a thread's seat goes back to the pool when it exits, so
//! threads that come and go keep taking the lowest seats, and a tree whose
//! shards cover the threads alive at once keeps every update on the owner
//! path, however many threads it has seen.
//!
//! A binary of its own: in the shared test binary, other tests' threads
//! would hold seats too.

use hierstat::sim::Simulator;
use hierstat::{Config, HierStats, Preset, Schema, Unit};
use std::sync::Barrier;

#[test]
fn seats_of_exited_threads_are_reused_and_owners_stay_owners() {
    let mut b = Schema::builder();
    let events = b.event("events", Unit::Count);
    let shards = 8;
    let live = 4;
    let waves = if cfg!(miri) { 4 } else { 300 };
    let per_thread = if cfg!(miri) { 10 } else { 1_000 };
    let t = HierStats::new(
        b.build().unwrap(),
        Config::preset(Preset::Hierstat).shards(shards),
    )
    .unwrap();
    let groups: Vec<_> = (0..3)
        .map(|i| t.create(&t.root(), &format!("g{i}")).unwrap())
        .collect();
    let groups = std::sync::Arc::new(groups);
    for wave in 0..waves {
        // `live` threads at once; they exit together, and the next wave
        // takes their seats back. (Joined as OS threads, not scoped ones:
        // a join returns once the thread has run its thread-local
        // destructors, which give its seat back.)
        let together = std::sync::Arc::new(Barrier::new(live));
        let hs: Vec<_> = (0..live)
            .map(|k| {
                let (t, groups, together) = (t.clone(), groups.clone(), together.clone());
                std::thread::spawn(move || {
                    together.wait();
                    for i in 0..per_thread {
                        t.add(&groups[(i + k + wave) % groups.len()], events, 1)
                            .unwrap();
                    }
                    together.wait();
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        if wave % 50 == 0 {
            t.flush(&t.root()).unwrap();
        }
    }
    t.flush_forced(&t.root()).unwrap();
    let total = (waves * live * per_thread) as u64;
    assert_eq!(t.read(&t.root(), events).unwrap(), total);
    t.verify_clean().unwrap();
    let w = t.shards_written();
    if t.owner_path() {
        // 1,200 threads came and went; at most `live` seats were ever
        // taken, so no thread wrote beyond the shard count.
        assert!(w.by_owners <= live, "{w:?}");
        assert_eq!(w.shared, 0, "a thread took the shared path: {w:?}");
    } else {
        eprintln!("no owner path here (no membarrier): every update is shared");
        assert!(w.shared <= live, "{w:?}");
    }
}
