//! Prints the first stale reads of a readers scenario under a policy
//! (diagnosis).
//! `cargo run -p sim --release --example stale_debug -- stat-readers hierstat`
use lab::report::Mode;
use sim::kinds::stats::{StatsScenario, Workload};
use sim::select::AnyBackend;
use sim::workload::TreeShape;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = sim::catalog()
        .builtin(&args[1])
        .expect("builtin")
        .expect("parses");
    let sc: &StatsScenario = file.spec_as().expect("a stats scenario");
    let Workload::StatReaders(w) = &sc.workload else {
        panic!("not a stat-readers scenario")
    };
    let choice = file.header().flush_policy(&args[2]).expect("policy");
    let shape = TreeShape::from_spec(&w.tree);
    let items = sc.schema_items();
    let seed = file.seed();
    match file.mode() {
        Mode::Sim => {
            let mut b = AnyBackend::build(choice, &shape, items, sc.cpus.unwrap_or(1) as usize)
                .expect("backend");
            let setup = sim::runner::sim::SimSetup {
                cpus: sc.cpus.unwrap_or(1) as usize,
                duration: sc.duration_ms * simcore::time::MILLIS,
                seed,
                costs: Default::default(),
                items,
                writers: w.writers.clone(),
                readers: Some(w.readers.clone()),
                flush_period: w
                    .flusher
                    .as_ref()
                    .map(|f| f.period_ms * simcore::time::MILLIS),
                spikes: None,
            };
            let o = sim::with_backend!(&mut b, mut be => sim::runner::sim::run(be, &shape, &setup));
            println!(
                "stale {} of {} reads",
                o.stale_reads,
                o.read_latencies.len()
            );
            for e in &o.stale_examples {
                println!("{e:?} path {}", shape.path(e.group));
            }
        }
        Mode::Real | Mode::Kernel => {
            let threads = sc.threads() as usize;
            let setup = sim::runner::real::ReadersSetup {
                writers: w.writers.cpus.map(|c| c as usize).unwrap_or(1),
                writer_spec: w.writers.clone(),
                readers: w.readers.clone(),
                items,
                duration: std::time::Duration::from_millis(sc.duration_ms),
                seed,
            };
            let reps: u64 = std::env::args()
                .nth(3)
                .and_then(|r| r.parse().ok())
                .unwrap_or(5);
            for rep in 0..reps {
                let setup = sim::runner::real::ReadersSetup {
                    seed: seed + rep,
                    ..setup.clone()
                };
                let b = AnyBackend::build(choice, &shape, items, threads).expect("backend");
                let o = sim::with_backend!(&b, be => sim::runner::real::run_readers(be, &shape, &setup))
                    .expect("threads start");
                println!("stale {} of {} reads", o.stale_reads, o.latencies.len());
                for e in &o.stale_examples {
                    println!("{e:?} path {}", shape.path(e.0));
                }
            }
        }
    }
}
