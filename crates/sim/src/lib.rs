//! sim: deterministic virtual-time and real-thread runners for hierstat
//! workloads.
//!
//! Two ways to run the same workload:
//!
//! * **Simulated mode** ([`runner::sim`]): N logical CPUs (1–1024) in
//!   deterministic virtual time. Every engine call runs for real against a
//!   hierstat tree with N shards; its virtual duration is the work it
//!   reports times per-unit costs ([`cost::CostModel`], calibrated on the
//!   host by `mmlab calibrate`). Flush locks ([`lock::FlushLock`]) and
//!   contended cache lines are resources in virtual time, so waiting and
//!   serialization show up as latency. Events ([`event::Event`]) are
//!   delivered in `(time, seq)` order by [`simcore::EventQueue`] and the
//!   only randomness is one seeded [`simcore::Rng`] per run: the same seed
//!   gives byte-identical results.
//! * **Real mode** ([`runner::real`]): real threads on real cores,
//!   wall-clock timing, hdrhistogram latencies.
//!
//! Following a scenario from its file to its report:
//!
//! 1. [`spec`]: the TOML file is parsed and validated once into one typed
//!    [`spec::Scenario`] (stats | numab | refault); errors carry the file,
//!    line and field.
//! 2. [`run()`]: runs it with its runner in [`scenarios`] (the stats
//!    workloads on the engine through [`runner`], the `numab` crate's
//!    scanner model, the refault storm on `models`) and assembles the
//!    shared results model ([`report::RunReport`]).
//! 3. [`claims()`]: the seed's claims on the run, each defined in its
//!    scenario's module next to the metric names it reads
//!    ([`report::Claim`]).

#![warn(missing_docs)]

pub mod backend;
pub mod baselines;
pub mod cost;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod event;
pub mod lock;
pub mod report;
pub mod run;
pub mod runner;
pub mod scenarios;
pub mod spec;
pub mod workload;

pub use error::{ScenarioError, SimError};
pub use run::{claims, run, Progress, RunOptions};
pub use spec::Scenario;
