//! lab: the scenario framework of mmlab's laboratory.
//!
//! A scenario is a TOML file whose `kind` picks a **scenario kind**
//! ([`Kind`]): its schema and numeric ranges, its pre-run estimate, its
//! runner and the claims of the source thread it reproduces. The kinds live
//! in their own crates (`sim`: `stats`, `numab`, `refault`; `kernelmode`:
//! `kernel`); a front end lists them in a [`Catalog`], which parses any file
//! through them into one [`Scenario`]. [`Scenario::run`] gives the results
//! model ([`report::RunReport`]) and [`Scenario::claims`] the source
//! thread's claims on it. Whatever else a kind offers a front end (a
//! reproducer script, a run beside its simulation, its own tables and
//! figures of a run) is a [`Spec`] method too: no front end needs a kind's
//! concrete type.
//!
//! ```text
//!   file ──Catalog::parse──▶ Kind::parse ──▶ Scenario { Header, Box<dyn Spec> }
//!                                             │ estimate · run · claims
//!                                             ▼
//!                                          RunReport ──▶ runstore, mmlab's reports
//! ```
//!
//! Module map: [`scenario`] (the kind interface and the scenario handle) ·
//! [`catalog`] · [`source`] (a file's text, errors with line and field) ·
//! [`ranges`] (every numeric field's bounds) · [`policy`] (flush policies:
//! the route from a name, user policies) · [`kernel`] (the kernel path a
//! policy is priced at, the built-in kernel policies) · [`sweep`] (policy grids) · [`estimate`] (a run's cost before
//! it runs) · [`progress`] (run options, context and progress) ·
//! [`interleave`] (the loop over runs and policies) · [`report`] (results
//! and claims) · [`error`].
//!
//! Dependencies: serde, toml, simcore, and hierstat for its policy types
//! (a user policy resolves to a `hierstat::Policy` when its file is parsed).

#![warn(missing_docs)]

pub mod catalog;
pub mod error;
pub mod estimate;
pub mod interleave;
pub mod kernel;
pub mod policy;
pub mod progress;
pub mod ranges;
pub mod report;
pub mod scenario;
pub mod source;
pub mod sweep;

pub use catalog::Catalog;
pub use error::{RunError, ScenarioError};
pub use estimate::{Estimate, Limits, Rates, WorkClass};
pub use kernel::{Base, KernelPath, KernelPolicy};
pub use policy::{Engine, FlushPolicy, PolicyFile, PolicySpec, UserPolicy};
pub use progress::{Context, Progress, RunOptions, Steps};
pub use ranges::Range;
pub use scenario::{Header, Kind, Overrides, RunOutput, Scenario, Spec};
pub use source::Source;
