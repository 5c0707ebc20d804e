//! Prints the first stale reads of a scenario under a policy (diagnosis).
//! `cargo run -p sim --release --example stale_debug -- stale-read hierstat`
use sim::report::Mode;
use sim::scenarios::{schema_items, AnyBackend, PolicyChoice};
use sim::workload::TreeShape;
use sim::Scenario;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = Scenario::builtin(&args[1])
        .expect("builtin")
        .expect("parses");
    let sc = file.as_stats().expect("a stats scenario");
    let choice = PolicyChoice::parse(&args[2]).expect("policy");
    let shape = TreeShape::from_spec(sc.tree.as_ref().expect("tree"));
    let items = schema_items(sc);
    match sc.mode {
        Mode::Sim => {
            let b = AnyBackend::build(choice, &shape, items, sc.cpus.unwrap_or(1) as usize)
                .expect("backend");
            let setup =
                sim::scenarios::stat_readers::sim_setup(sc, &Default::default(), items, sc.seed)
                    .expect("a validated stale-read scenario has writers");
            let o = sim::with_backend!(&b, be => sim::runner::sim::run(be, &shape, &setup));
            println!(
                "stale {} of {} reads",
                o.stale_reads,
                o.read_latencies.len()
            );
            for e in &o.stale_examples {
                println!("{e:?} path {}", shape.path(e.group));
            }
        }
        Mode::Real => {
            let threads = sc.threads.unwrap_or(2) as usize;
            let w = sc.writers.clone().expect("writers");
            let setup = sim::runner::real::ReadersSetup {
                writers: w.cpus.map(|c| c as usize).unwrap_or(1),
                writer_spec: w,
                readers: sc.readers.clone().expect("readers"),
                items,
                duration: std::time::Duration::from_millis(sc.duration_ms),
                seed: sc.seed,
            };
            let reps: u64 = std::env::args()
                .nth(3)
                .and_then(|r| r.parse().ok())
                .unwrap_or(5);
            for rep in 0..reps {
                let setup = sim::runner::real::ReadersSetup {
                    seed: sc.seed + rep,
                    ..setup.clone()
                };
                let b = AnyBackend::build(choice, &shape, items, threads).expect("backend");
                let o = sim::with_backend!(&b, be => sim::runner::real::run_readers(be, &shape, &setup)).expect("threads start");
                println!("stale {} of {} reads", o.stale_reads, o.latencies.len());
                for e in &o.stale_examples {
                    println!("{e:?} path {}", shape.path(e.0));
                }
            }
        }
        Mode::Kernel => unreachable!("a stats scenario is sim or real"),
    }
}
