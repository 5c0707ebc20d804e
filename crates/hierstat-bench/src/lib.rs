//! hierstat-bench: the engine benchmark harness.
//!
//! One set of benchmark cases and one measuring loop, shared by every
//! front end that quotes the engine's speed:
//!
//! * `mmlab bench` runs the [`suite`] and prints (or writes as JSON) its
//!   figures, ratios and targets (`docs/json.md` lists the names,
//!   `docs/bench.md` quotes them);
//! * the criterion benches, `cargo bench -p hierstat-bench --features
//!   criterion` (`--bench engine`: the same cases, plus the Prometheus
//!   client's counter; `--bench exporter`: the exporter's increments and
//!   renders against the Prometheus client libraries), time the same case
//!   loops through criterion's `iter_custom`.
//!
//! The rules every figure follows:
//!
//! * a **case** ([`Case`]) is a name and a timed loop of exactly the
//!   operation its name says; whatever it needs (trees, handles, the
//!   measuring thread's seat, worker threads) is built before the clock
//!   starts, and a case that could not measure its name (an owner-path case
//!   whose thread does not own a shard, a flush that does not drain its
//!   100 rows) is an error ([`BenchError::Setup`]), not a figure;
//! * times are the measuring thread's own **CPU time**
//!   ([`simcore::clock::CpuTimer`]), so other processes' time slices on a
//!   shared host do not count; a two-thread case's are the windows during
//!   which both threads ran ([`threads::on_threads`]), since contention
//!   only exists then;
//! * **interleaved repetitions** ([`run_rounds`]): every round times each
//!   case once, in turn, after one unrecorded warm-up round, so a change of
//!   the host's load or clock between rounds hits all cases alike;
//! * each figure is the **median** of its repetitions, with its **range**
//!   ([`Figure`]); a ratio is taken within each round and then summarized
//!   the same way ([`Samples::ratio`]).
//!
//! Modules: [`harness`] (the loop, figures), [`cases`] (one thread),
//! [`threads`] (two threads), [`percpu`] (the per-CPU mode, 1 to 64
//! threads), [`flush`] (flushes and the heavy barrier),
//! [`baselines`] (the eager-atomic tree, a sharded counter), [`suite`]
//! (what `mmlab bench` runs).

#![warn(missing_docs)]

pub mod baselines;
pub mod cases;
pub mod flush;
pub mod harness;
pub mod percpu;
pub mod suite;
pub mod threads;

pub use harness::{run_rounds, Case, Figure, Samples};

use thiserror::Error;

/// Errors of the harness.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The engine refused an operation.
    #[error("engine: {0}")]
    Engine(#[from] hierstat::Error),
    /// A thread could not be started.
    #[error(transparent)]
    Spawn(#[from] simcore::thread::SpawnError),
    /// A case would not measure what its name says.
    #[error("{case}: {why}")]
    Setup {
        /// The case.
        case: String,
        /// What went wrong.
        why: String,
    },
}
