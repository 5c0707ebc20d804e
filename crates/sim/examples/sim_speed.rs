//! The simulator's engine-update rate alone, as `mmlab bench` measures it
//! (`sim_engine_updates_per_sec`: 22 logical CPUs, the leaf of a chain of
//! depth 2, 4 items, the `hierstat` preset, default writers), without the
//! rest of the bench: for profiling and for builds compared side by side.
//!
//! ```text
//! cargo run --release -p sim --example sim_speed -- [VIRTUAL_MS] [REPS]
//! ```

use hierstat::Preset;
use sim::engine::EngineBackend;
use sim::runner::sim as simrun;
use sim::workload::{TreeShape, WritersSpec};
use simcore::clock::CpuTimer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    for _ in 0..reps {
        let shape = TreeShape::chain(2);
        let mut b = EngineBackend::new(Preset::Hierstat, &shape, 4, 22)?;
        let setup = simrun::SimSetup {
            cpus: 22,
            duration: ms * 1_000_000,
            seed: 1,
            costs: sim::cost::CostModel::defaults(),
            items: 4,
            writers: WritersSpec::default(),
            readers: None,
            flush_period: None,
            spikes: None,
        };
        let t = CpuTimer::start();
        let o = simrun::run(&mut b, &shape, &setup);
        let ns = t.elapsed_ns();
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
