//! mmlab: the command line of the lab. The binary (`main.rs`) parses the
//! command and hands it to [`cmd::dispatch`]; everything else is here, so
//! tests exercise it directly.
//!
//! * [`cli`]: the command-line syntax;
//! * [`cmd`]: one module per command;
//! * [`pipeline`]: the one way a scenario runs (read, estimate, run with
//!   progress, store, claims) for `run`, the suite and `sweep`;
//! * [`render`]: everything shown: text, JSON, HTML, and the one atomic
//!   file write;
//! * [`analysis`]: small-sample statistics, the comparison-table model,
//!   stored runs compared.
//!
//! The scenario kinds, their runners and their claims are the `sim` crate's
//! (and kernel mode's, `kernelmode`); the results store is `runstore`; the
//! charts are `svgplot`.

pub mod analysis;
pub mod cli;
pub mod cmd;
pub mod pipeline;
pub mod render;

/// The README's library example, compiled and run as a doc test (so the
/// front page cannot drift from the engine's API).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExample;

/// The hierstat crate's README example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../hierstat/README.md")]
pub struct HierstatReadmeExample;

/// The numab crate's README example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../numab/README.md")]
pub struct NumabReadmeExample;
