//! hostkernel: the memcg experiments of `mmlab` run on the host's own kernel.
//!
//! `mmlab` replays kernel mailing-list experiments under *simulated* flush
//! policies; this crate measures the *real* kernel with the same shapes, so
//! a kernel runner can put the two side by side:
//!
//! 1. **update path** ([`run_update_path`]): page-fault cost (mmap, touch
//!    every page, munmap) in a process placed in memcgs nested 1, 2, 4, 8
//!    deep: ns/fault and faults/s per depth, the slope, the depth-4/depth-2
//!    ratio;
//! 2. **stat readers** ([`run_stat_readers`]): G groups, W writer processes
//!    faulting and freeing, readers timing `memory.stat` (open, read, close)
//!    of random groups: percentiles and log2 histograms;
//! 3. **stale read** ([`run_stale_read`]): a spike charged in a leaf, the
//!    parent's `memory.stat` read at once: the gap to the page counter in
//!    pages against the documented `64 × online CPUs` threshold.
//!
//! [`run_calibration`] measures what the simulator's `[kernel]` costs are
//! derived from (faults per mapping, reads, a flush visit, a send).
//!
//! Every result carries the [`RunFacts`] a results store needs (kernel
//! release, cgroup version, online CPUs, page size, the flush threshold).
//! Times are reported in wall-clock and in the measuring thread's CPU time:
//! on a shared host the difference is time spent waiting for a CPU.
//!
//! Each `run_*` has a `run_*_observed` twin that reports [`Event`]s (subtree
//! created, worker started, progress steps) to a callback, for progress bars
//! and for tests; the `hostkernel-run` binary prints one experiment's result
//! as JSON, and `examples/kernel_figures.rs` prints all three as tables.
//!
//! # Host requirements
//!
//! [`Host::detect`] finds the memory controller on cgroup v2 or v1 and
//! checks root, writability and (v2) delegation; its errors say exactly what
//! is missing, and [`Error::is_host_unsupported`] tells a suite to skip.
//!
//! # Nothing left behind
//!
//! * Groups live in one uniquely named subtree per [`CgroupTree`] (see
//!   [`NAME_PREFIX`]); dropping it kills what is inside, then removes the
//!   groups children-first with retries. Experiments also close it
//!   explicitly so cleanup failures are reported.
//! * Workers are forked children owned by a handle that kills and reaps them
//!   on drop; they are also tied to the parent with `PR_SET_PDEATHSIG`, so a
//!   `kill -9` of the parent kills them too.
//! * Ctrl-C / SIGTERM: [`signals::install`] puts the process's one handler
//!   in place and returns a [`Cancel`] token; while a subtree exists a
//!   signal only sets the flag, experiments poll it and return
//!   [`Error::Interrupted`] after the normal RAII cleanup (see
//!   [`signals`]).
//! * Panics unwind through the same destructors (with `panic = "abort"`
//!   nothing runs, and the next run's [`sweep_stale`] removes what is left).
//! * A `kill -9`'d run's groups are removed by [`sweep_stale`], which
//!   [`CgroupTree::create`] runs first: subtrees whose owner (pid + start
//!   time, encoded in the name) is dead.
//!
//! # Unsafe code
//!
//! Confined to the private `sys` module (fork, the workers' mmap/touch/munmap
//! bodies, signals, waits, a few libc queries), each block with a `SAFETY:`
//! comment. Workers are forked without exec and run only raw system calls,
//! so they can be placed in their cgroup before their first fault without
//! the host binary having to provide a worker entry point.
//!
//! ```no_run
//! use hostkernel::{run_update_path, Host, UpdatePathConfig};
//!
//! let host = match Host::detect() {
//!     Ok(h) => h,
//!     Err(e) if e.is_host_unsupported() => return eprintln!("skipped: {e}"),
//!     Err(e) => panic!("{e}"),
//! };
//! let cancel = hostkernel::signals::install(None).unwrap();
//! let r = run_update_path(&host, &UpdatePathConfig::default(), &cancel).unwrap();
//! for d in &r.depths {
//!     println!("depth {}: {:.0} ns/fault", d.depth, d.ns_per_fault_mean);
//! }
//! ```
#![warn(missing_docs)]

mod cgroup;
mod detect;
mod error;
pub mod experiments;
mod serde_ms;
pub mod signals;
pub mod stat;
#[allow(unsafe_code)] // fork, the workers' bodies, signals (see the module docs)
mod sys;
mod worker;

pub use cgroup::{
    parse_stat_start_ticks, parse_subtree_name, procs_of, subtree_dirs, subtree_name, sweep_stale,
    CgroupTree, Owner, SweepReport, NAME_PREFIX,
};
pub use detect::{
    charge_batch_for_release, find_memory_controller, parse_mountinfo, selected_choice,
    CgroupVersion, Host, MemoryController, MountEntry, RunFacts, MEMCG_CHARGE_BATCH,
};
pub use error::Error;
pub use experiments::calibrate::{run_calibration, CalibrateConfig, CalibrationResult, FaultCost};
pub use experiments::stale_read::{
    counter_files, is_settled, longest_stale_window, parse_pass_trace, run_stale_read,
    run_stale_read_observed, FlushPasses, FlushShare, GapSummary, PassTrace, StaleReadCase,
    StaleReadConfig, StaleReadResult, StaleReadSample, StaleWindow, BASELINE_SLACK_THRESHOLDS,
    INTERVAL_CONFIDENCE, SHARE_EXTRA_LEVELS, SHARE_SAMPLES, TWO_PERIODIC_FLUSHES,
};
pub use experiments::stat_readers::{
    run_stat_readers, run_stat_readers_observed, StatReadersCase, StatReadersConfig,
    StatReadersResult,
};
pub use experiments::update_path::{
    run_update_path, run_update_path_observed, DepthResult, UpdatePathConfig, UpdatePathResult,
    UpdatePathRun,
};
pub use experiments::{Event, Observer};
pub use simcore::Cancel;
