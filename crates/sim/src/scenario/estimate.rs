//! What a scenario will cost before it runs: memory, threads and simulated
//! events, from the file alone, so that a front end can refuse a run that
//! would exhaust the host or run for hours (`mmlab run` does, unless
//! `--force`).
//!
//! The figures are upper-bound estimates in the model's own units, not
//! measurements: memory is the per-group, per-CPU and per-page state the
//! runners allocate; events are the writer bursts, reads, accesses or page
//! sweeps the simulator steps through, summed over every policy and run.
//! Each kind computes its own ([`super::Spec::estimate`]).

use std::fmt;

/// A scenario's estimated cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// Peak resident bytes of the model's state.
    pub memory_bytes: f64,
    /// Threads spawned at once (real mode; 1 for simulations).
    pub threads: u64,
    /// Simulated events over all policies and runs.
    pub events: f64,
    /// Wall-clock seconds of measurement (real mode: every policy, run
    /// and depth for its duration; 0 for simulations, whose time is
    /// `events`).
    pub seconds: f64,
}

/// The largest estimate run without `--force`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Bytes of model state.
    pub memory_bytes: f64,
    /// Threads at once.
    pub threads: u64,
    /// Simulated events.
    pub events: f64,
    /// Wall-clock seconds of real-mode measurement.
    pub seconds: f64,
}

impl Default for Limits {
    /// 4 GiB, 300 threads (the 256 a file may ask for and their
    /// helpers), 2·10^10 events, an hour of real-mode measurement: several
    /// times the largest built-in scenario in each dimension (see the
    /// tests).
    fn default() -> Self {
        Limits {
            memory_bytes: 4.0 * f64::from(1u32 << 30),
            threads: 300,
            events: 2e10,
            seconds: 3600.0,
        }
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.0} MiB, {} thread(s), {:.2e} events, {:.0} s of real-mode measurement",
            self.memory_bytes / f64::from(1u32 << 20),
            self.threads,
            self.events,
            self.seconds
        )
    }
}

impl Estimate {
    /// The first dimension over `limits`, as a sentence; `None` when the
    /// run fits.
    pub fn exceeds(&self, limits: &Limits) -> Option<String> {
        if self.memory_bytes > limits.memory_bytes {
            return Some(format!(
                "needs about {:.1} GiB of model state (limit {:.1} GiB)",
                self.memory_bytes / f64::from(1u32 << 30),
                limits.memory_bytes / f64::from(1u32 << 30)
            ));
        }
        if self.threads > limits.threads {
            return Some(format!(
                "needs {} threads at once (limit {})",
                self.threads, limits.threads
            ));
        }
        if self.events > limits.events {
            return Some(format!(
                "would simulate about {:.1e} events (limit {:.1e}; about {:.0} minutes or more)",
                self.events,
                limits.events,
                self.events / 1e8 / 60.0
            ));
        }
        if self.seconds > limits.seconds {
            return Some(format!(
                "would measure for about {:.0} s (limit {:.0} s)",
                self.seconds, limits.seconds
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cost::CostModel;
    use crate::Catalog;

    #[test]
    fn every_builtin_fits_the_default_limits_with_room() {
        let costs = CostModel::defaults();
        let limits = Limits::default();
        let c = Catalog::simulated();
        for name in c.builtin_names() {
            let e = c.builtin(name).unwrap().unwrap().estimate(&costs);
            assert!(e.exceeds(&limits).is_none(), "{name}: {e}");
            assert!(e.memory_bytes * 4.0 < limits.memory_bytes, "{name}: {e}");
            assert!(e.events * 4.0 < limits.events, "{name}: {e}");
        }
    }

    #[test]
    fn huge_scenarios_exceed() {
        let costs = CostModel::defaults();
        let (_, numa02) = ::numab::BUILTIN[3];
        let big = numa02.replace("buffer_mib = 1024", "buffer_mib = 65536");
        let big = big.replace("passes = 800", "passes = 100000");
        let e = Catalog::simulated()
            .parse("n.toml", &big)
            .unwrap()
            .estimate(&costs);
        assert!(e.exceeds(&Limits::default()).is_some(), "{e}");
    }
}
