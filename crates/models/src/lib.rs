//! models: the kernel subsystems the seed threads measure, built on hierstat.
//!
//! * [`memcg`]: memory cgroups (the `memory.stat` schema, hierarchical
//!   charging with limits and a per-CPU charge stock, `memory.events`);
//! * [`workingset`]: LRU lists per lruvec, shadow entries, the non-resident
//!   age clock and the refault recency test with its stats flush;
//! * [`numab`]: the NUMA-balancing VMA scanner in each kernel version.

#![warn(missing_docs)]

pub mod memcg;
pub mod numab;
pub mod rng;
pub mod workingset;
