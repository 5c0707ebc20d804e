//! The three experiments and the calibration: typed configurations in,
//! typed plain-data results out (serde-serialisable), no printing.

pub mod calibrate;
pub mod stale_read;
pub mod stat_readers;
pub mod update_path;

use std::path::Path;

/// What an experiment reports while it runs, to an observer passed to the
/// `*_observed` entry points (progress bars, logging, tests that need the
/// groups' paths or the workers' pids). Observers may panic or cancel: the
/// experiment then cleans up as on any other exit.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A cgroup subtree was created (its top directory).
    TreeCreated {
        /// The subtree's top directory.
        top: &'a Path,
    },
    /// A worker process was placed in a cgroup and started.
    WorkerStarted {
        /// Its pid.
        pid: i32,
        /// The cgroup directory it runs in.
        cgroup: &'a Path,
    },
    /// `done` of `total` units of work are finished (runs for update-path,
    /// cases for stat-readers, repetitions for stale-read).
    Step {
        /// Units done.
        done: usize,
        /// Units in all.
        total: usize,
    },
}

/// An observer of [`Event`]s.
pub type Observer<'o> = &'o mut dyn FnMut(Event<'_>);
