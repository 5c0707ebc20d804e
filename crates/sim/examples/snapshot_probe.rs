//! Probe: a flush concurrent with updates is not an atomic snapshot.
//!
//! One writer charges (oracle first, then the engine) and uncharges (engine
//! first, then the oracle) leaves of a slice, so the true total never
//! exceeds the oracle; one reader flushes the slice and compares. With
//! uncharges the flushed slice value sometimes exceeds every value the
//! total ever had: each (leaf, shard) counter is swapped at its own
//! instant, so a later charge of one leaf can be included while an earlier
//! uncharge of another is not. This is why the real-mode runner judges
//! reads against every subset of the updates made during the read.
//!
//! `cargo run -p sim --release --example snapshot_probe -- hierstat [read]`
use hierstat::{Config, FlushKind, HierStats, Preset, Schema, Unit};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

fn main() {
    let preset: Preset = std::env::args()
        .nth(1)
        .unwrap_or("hierstat".into())
        .parse()
        .unwrap();
    let mut b = Schema::builder();
    let items: Vec<_> = (0..8)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let stats = HierStats::new(b.build().unwrap(), Config::preset(preset).shards(2)).unwrap();
    let root = stats.root();
    let slice = stats.create(&root, "g0").unwrap();
    let leaves: Vec<_> = (0..50)
        .map(|i| stats.create(&slice, &format!("c{i}")).unwrap())
        .collect();
    let oracle: Vec<AtomicI64> = (0..8).map(|_| AtomicI64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let kind = if std::env::args().nth(2).as_deref() == Some("read") {
        FlushKind::Read
    } else {
        FlushKind::Forced
    };
    let mut bad = 0;
    let mut reads = 0;
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x: u64 = 1;
            while !stop.load(Ordering::Relaxed) {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let g = &leaves[(x >> 33) as usize % 50];
                let it = (x >> 20) as usize % 8;
                let mut p = 1 + (x >> 40) as i64 % 8;
                if (x >> 50) % 10 < 3 && oracle[it].load(Ordering::SeqCst) >= p {
                    p = -p;
                }
                if p > 0 {
                    oracle[it].fetch_add(p, Ordering::SeqCst);
                    stats.add(g, items[it], p).unwrap();
                } else {
                    stats.add(g, items[it], p).unwrap();
                    oracle[it].fetch_add(p, Ordering::SeqCst);
                }
            }
        });
        let t = std::time::Instant::now();
        while t.elapsed().as_millis() < 2000 {
            stats.flush_with(&slice, kind, &mut ()).unwrap();
            for (i, &it) in items.iter().enumerate() {
                let v = stats.read_signed(&slice, it).unwrap();
                let o = oracle[i].load(Ordering::SeqCst);
                reads += 1;
                if v > o {
                    bad += 1;
                    if bad < 5 {
                        println!("above every exact value: item {i} engine {v} > oracle {o}");
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    println!("{preset}: {bad} reads above the oracle in {reads}");
}
