//! mmlab: the laboratory around hierstat. The binary (`main.rs`) does the I/O;
//! this library holds the pieces that tests exercise directly.
//!
//! * [`cli`]: the command-line syntax;
//! * [`cmd`]: one module per command (`run`, `suite`, `bench`,
//!   `calibrate`, and the results-store commands in [`cmd::store`]);
//! * [`analysis`]: statistics, the comparison-table model, run comparison;
//! * [`render`]: text (the seeds' formats), JSON and HTML, and the one
//!   atomic file write every output goes through;
//! * [`store`]: the SQLite results store.
//!
//! Scenarios, their runners and their claims live in the `sim` crate; mmlab
//! loads a scenario, runs it with `sim::run`, renders and stores the report.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod cli;
pub mod cmd;
pub mod render;
pub mod store;

/// The README's Rust example, compiled and run as a doc test (so the front
/// page cannot drift from the engine's API).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExample;
