//! The scenario kinds of this crate, one folder each: its file's schema
//! and ranges, its estimate, its runner and its claims, behind the
//! [`lab::Kind`] and [`lab::Spec`] traits.

pub mod numab;
pub mod refault;
pub mod stats;
