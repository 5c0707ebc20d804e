//! sim: deterministic virtual-time and real-thread runners for hierstat workloads.

#![warn(missing_docs)]

pub mod report;
