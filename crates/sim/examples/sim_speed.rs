//! The simulator's engine-update rate alone, as `mmlab bench` measures it
//! (`sim_engine_updates_per_sec`: 22 logical CPUs, the leaf of a chain of
//! depth 2, 4 items, the `hierstat` preset, default writers), without the
//! rest of the bench: for profiling and for builds compared side by side.
//!
//! ```text
//! cargo run --release -p sim --example sim_speed -- [VIRTUAL_MS] [REPS]
//! ```

use sim::runner::sim as simrun;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    for _ in 0..reps {
        let (o, ns) = simrun::update_probe(ms)?;
        println!(
            "updates {} engine_calls {} events {}: {:.2} M/s ({:.2} ns/update)",
            o.updates,
            o.engine_calls,
            o.events,
            o.updates as f64 * 1e3 / ns,
            ns / o.updates.max(1) as f64
        );
    }
    Ok(())
}
