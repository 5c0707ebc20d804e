//! Prints the first stale reads of a scenario under a policy (diagnosis).
//! `cargo run -p sim --example stale_debug -- stale-read hierstat`
use sim::scenario::Scenario;
use sim::scenarios::{schema_items, AnyBackend, PolicyChoice};
use sim::workload::TreeShape;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sc = Scenario::builtin(&args[1])
        .expect("builtin")
        .expect("parses");
    let choice = PolicyChoice::parse(&args[2]).expect("policy");
    let shape = TreeShape::from_spec(sc.tree.as_ref().expect("tree"));
    let items = schema_items(&sc);
    let b =
        AnyBackend::build(choice, &shape, items, sc.cpus.unwrap_or(1) as usize).expect("backend");
    let setup = sim::scenarios::stat_readers::sim_setup(&sc, &Default::default(), items, sc.seed);
    let o = sim::with_backend!(&b, be => sim::runner::sim::run(be, &shape, &setup));
    println!(
        "stale {} of {} reads",
        o.stale_reads,
        o.read_latencies.len()
    );
    for e in &o.stale_examples {
        println!(
            "{e:?} path {} depth {}",
            shape.path(e.group),
            shape.group(e.group).depth
        );
    }
}
