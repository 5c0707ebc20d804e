//! The kernel's work around the statistics, priced: what turns a relative
//! figure of statistics updates into one of the workloads the source
//! threads measured.
//!
//! * [`count`]: each policy's flush-threshold accounting, one update and one
//!   flush visit at a time (levels walked, counts folded into and read,
//!   when a read flushes), with the kernel's zeroing resets;
//! * [`machine`]: tasks doing whole page faults or sends back to back in
//!   virtual time, each priced as its work outside memcg plus its charges
//!   (per-CPU stock, page-counter walks on shared lines) and its stat
//!   updates (per-CPU adds plus the policy's threshold walk);
//! * [`spike`]: kernel mode's stale-read sequence (a spike charged while a
//!   reader flushes the parent), flush visits interleaved with the charge;
//! * [`lines`]: shared cache lines as resources;
//! * [`read_ns`]: what a `memory.stat` read costs besides its flush.
//!
//! The per-unit costs are the `[kernel]` table of the cost file
//! ([`crate::cost::KernelCosts`]), measured on the host by
//! `mmlab calibrate` in kernel mode; docs/fidelity.md puts the figures
//! this gives beside the source threads' and the host's.

pub mod count;
pub mod lines;
pub mod machine;
pub mod spike;

pub use count::{Reset, ThresholdCounts, Walk};
pub use machine::{Op, PricedOutcome, PricedSetup};

use crate::cost::KernelCosts;

/// What a `memory.stat` read costs besides its flush: the syscalls
/// (`open`, `read`, `close`) and the formatting of every line of the file,
/// in ns (rounded up).
pub fn read_ns(k: &KernelCosts) -> u64 {
    (k.read_syscall_ns + f64::from(k.stat_items) * k.read_item_ns)
        .max(0.0)
        .ceil() as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_read_pays_its_syscalls_and_every_line() {
        let mut k = crate::cost::KernelCosts::shipped();
        k.read_syscall_ns = 1000.0;
        k.read_item_ns = 10.5;
        k.stat_items = 40;
        assert_eq!(super::read_ns(&k), 1420);
    }
}
