//! models: the kernel subsystems the seed threads measure, built on hierstat.
//!
//! * [`memcg`]: memory cgroups (the `memory.stat` schema, hierarchical
//!   charging with limits and a per-CPU charge stock, `memory.events`);
//! * [`workingset`]: LRU lists per lruvec, shadow entries, the non-resident
//!   age clock and the refault recency test with its stats flush;
//! * [`machine`]: both behind the cgroup v2 file interface, with processes,
//!   the OOM killer, files and sockets: what the kernel's memory-controller
//!   selftests drive (`docs/memcg.md`).
//!
//! The NUMA-balancing scanner model, which never touches hierstat, is its
//! own crate (`numab`).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod machine;
pub mod memcg;
pub mod workingset;
