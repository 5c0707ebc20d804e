//! sim: the scenario kinds of the lab and the runners they share.
//!
//! A scenario is a TOML file whose `kind` picks a **scenario kind** ([`scenario::Kind`]):
//! its schema and numeric ranges, its pre-run estimate, its runner and the
//! claims of the source thread it reproduces. This crate has the simulated
//! kinds ([`kinds`]: `stats`, `numab`, `refault`); kernel mode registers
//! its `kernel` kind from its own crate. [`Catalog`] holds the kinds a
//! program knows and parses any file through them into one
//! [`Scenario`]; [`Scenario::run`] gives the shared results model
//! ([`report::RunReport`]) and [`Scenario::claims`] the source thread's
//! claims on it.
//!
//! The runners run a workload two ways:
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
//! Module map: [`scenario`] (the kind interface, file parsing with
//! positions, ranges, estimates, user policies, sweeps) · [`kinds`] (one
//! folder per kind) · [`progress`] (run options and progress, a leaf) ·
//! [`report`] (results model and claims) · [`interleave`] (the loop over
//! runs and policies every runner shares) · [`runner`], [`select`],
//! [`backend`], [`engine`], [`baselines`], [`workload`], [`cost`],
//! [`lock`], [`cpu`], [`event`] (what the runners are built from).

#![warn(missing_docs)]

pub mod backend;
pub mod baselines;
pub mod catalog;
pub mod cost;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod event;
pub mod interleave;
pub mod kinds;
pub mod lock;
pub mod priced;
pub mod progress;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod select;
pub mod workload;

pub use catalog::Catalog;
pub use error::{ScenarioError, SimError};
pub use progress::{Progress, RunOptions, Steps};
pub use scenario::Scenario;

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
