//! sim: the simulator behind the lab's simulated scenario kinds.
//!
//! The kinds ([`kinds`]: `stats`, `numab`, `refault`) implement the
//! framework's interface (`lab::Kind`, `lab::Spec`: schema and ranges,
//! estimate, runner, claims); [`catalog()`] lists them for a front end.
//! Their runners run a workload two ways:
//!
//! * **Simulated mode** ([`runner::sim`]): N logical CPUs (1–1024) in
//!   deterministic virtual time. Every engine call runs for real against a
//!   hierstat tree with N shards; its virtual duration is the work it
//!   reports times per-unit costs ([`cost::CostModel`], measured on the
//!   host by [`calibrate`]). Flush locks ([`lock::FlushLock`]) and
//!   contended cache lines are resources in virtual time, so waiting and
//!   serialization show up as latency. Events ([`event::Event`]) are
//!   delivered in `(time, seq)` order by [`simcore::EventQueue`] and the
//!   only randomness is one seeded [`simcore::Rng`] per run: the same seed
//!   gives byte-identical results.
//! * **Real mode** ([`runner::real`]): real threads on real cores,
//!   wall-clock timing, hdrhistogram latencies.
//!
//! Whole kernel operations (a page fault, a send, a `memory.stat` read)
//! are priced in [`priced`].
//!
//! Module map: [`kinds`] (one folder per kind) · [`runner`], [`select`],
//! [`backend`], [`engine`], [`baselines`], [`workload`], [`cost`],
//! [`priced`], [`machines`] (the boxes the priced workloads run on),
//! [`lock`], [`cpu`], [`event`] (what the runners are built from) ·
//! [`calibrate`] (the costs measured on this host) · [`error`].

#![warn(missing_docs)]

pub mod backend;
pub mod baselines;
pub mod calibrate;
pub mod cost;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod event;
pub mod kinds;
pub mod lock;
pub mod machines;
pub mod priced;
pub mod runner;
pub mod select;
pub mod workload;

pub use error::SimError;

/// The simulated kinds, `stats`, `numab` and `refault`, in the order
/// their built-in scenarios are listed.
pub fn catalog() -> lab::Catalog {
    lab::Catalog::new()
        .with(&kinds::stats::KIND)
        .with(&kinds::numab::KIND)
        .with(&kinds::refault::KIND)
}

#[cfg(test)]
mod tests;

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

/// The `lab` crate's README example (it needs a kind crate to run, so it is
/// compiled and run here).
#[cfg(doctest)]
#[doc = include_str!("../../lab/README.md")]
pub struct LabReadmeExample;
