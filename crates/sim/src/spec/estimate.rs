//! What a scenario will cost before it runs: memory, threads and simulated
//! events, from the file alone, so that a front end can refuse a run that
//! would exhaust the host or run for hours (`mmlab run` does, unless
//! `--force`).
//!
//! The figures are upper-bound estimates in the model's own units, not
//! measurements: memory is the per-group, per-CPU and per-page state the
//! runners allocate; events are the writer bursts, reads, accesses or page
//! sweeps the simulator steps through, summed over every policy and run.

use super::{Scenario, StatsScenario};
use crate::cost::CostModel;
use crate::report::Mode;
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

const MIB: f64 = (1u64 << 20) as f64;

impl Scenario {
    /// The estimated cost of running it as it stands (after overrides)
    /// with `costs`.
    pub fn estimate(&self, costs: &CostModel) -> Estimate {
        let policies = self.policies().len().max(1) as f64;
        let repeats = policies * f64::from(self.runs());
        match self {
            Scenario::Stats(s) => stats(s, costs, repeats),
            Scenario::Numab { file, .. } => {
                let n = &file.numab;
                let cpus = f64::from(n.nodes) * f64::from(n.cpus_per_node);
                let (mib, sweeps) = numab_work(&n.workload, cpus);
                let pages = mib * 256.0;
                Estimate {
                    // Per-page state (node, flags, access history) and the
                    // per-CPU and per-node tables.
                    memory_bytes: pages * 48.0 + cpus * 64.0 * 1024.0,
                    threads: 1,
                    // The model steps through 2 MiB chunks.
                    events: sweeps * repeats / 512.0,
                    seconds: 0.0,
                }
            }
            Scenario::Refault { file, .. } => {
                let r = &file.refault;
                let secs = (r.duration_ms + r.warmup_ms) as f64 / 1e3;
                let b = &r.background;
                let w = &r.workload;
                let bursts = f64::from(r.cpus) * b.updates_per_sec_per_cpu * secs
                    / f64::from(b.burst.max(1));
                let accesses = f64::from(w.cpus) * w.accesses_per_sec_per_cpu * secs;
                let groups = f64::from(r.services) + 16.0;
                let pages = ((w.memory_max_mb + w.swap_mb + w.file_mb) as f64) * 256.0;
                Estimate {
                    memory_bytes: groups * f64::from(r.cpus) * 64.0 * 8.0 + pages * 32.0,
                    threads: 1,
                    events: (bursts + accesses) * repeats,
                    seconds: 0.0,
                }
            }
            Scenario::Kernel { file, .. } => kernel(file, repeats),
        }
    }
}

/// A host experiment: the memory its worker processes map, the processes
/// (counted as threads) and its wall time at the reference page-fault and
/// `memory.stat` costs (`kernel-rstat.md`: ~1.5 µs a fault, ~25 µs a read).
fn kernel(k: &super::KernelScenario, repeats: f64) -> Estimate {
    const FAULT_S: f64 = 1.5e-6;
    const PAGE: f64 = 4096.0;
    let mut e = Estimate {
        memory_bytes: 0.0,
        threads: 1,
        events: 0.0,
        seconds: 0.0,
    };
    if let Some(u) = &k.update_path {
        let faults = (u.rounds + u.warmup_rounds) as f64 * u.pages as f64;
        e.memory_bytes = u.pages as f64 * PAGE;
        e.threads += 1;
        e.seconds += faults * FAULT_S * (u.runs * u.depths.len()) as f64;
    }
    if let Some(r) = &k.stat_readers {
        let writers = r.writers.iter().copied().max().unwrap_or(0);
        e.memory_bytes = (writers * r.writer_pages) as f64 * PAGE;
        e.threads += (writers + r.readers) as u64;
        let per_case =
            r.warmup.as_secs_f64() + r.reads_per_reader as f64 * (r.period.as_secs_f64() + 25e-6);
        e.seconds += per_case * (r.groups.len() * r.writers.len()) as f64;
    }
    if let Some(s) = &k.stale_read {
        let kib = s.spikes_kib.iter().copied().max().unwrap_or(0);
        e.memory_bytes = kib as f64 * 1024.0;
        e.threads += 1;
        let pages: u64 = s.spikes_kib.iter().map(|k| k / 4).sum();
        e.seconds += s.repetitions as f64
            * (pages as f64 * FAULT_S + s.spikes_kib.len() as f64 * s.pause.as_secs_f64());
    }
    e.seconds *= repeats;
    e
}

/// `(MiB of memory the workload maps, pages written over the run)`.
fn numab_work(w: &::numab::WorkloadSpec, cpus: f64) -> (f64, f64) {
    use ::numab::WorkloadSpec as W;
    match w {
        W::Numa01 {
            buffer_mib,
            passes,
            threads,
            ..
        } => {
            let t = threads.map_or(cpus / 2.0, f64::from);
            let mib = 2.0 * *buffer_mib as f64;
            (mib, mib * 256.0 * t * (f64::from(*passes) + 1.0))
        }
        W::Numa01ThreadAlloc {
            buffer_mib,
            passes,
            threads,
            ..
        } => {
            let t = threads.map_or(cpus / 2.0, f64::from).max(1.0);
            let mib = 2.0 * *buffer_mib as f64;
            // One whole-buffer sweep per thread, then `passes` over its slice.
            (mib, mib * 256.0 * (t + f64::from(*passes)))
        }
        W::Numa02 {
            buffer_mib, passes, ..
        } => {
            let mib = *buffer_mib as f64;
            (mib, mib * 256.0 * (f64::from(*passes) + 1.0))
        }
        W::Disjoint {
            vma_x_mib,
            vma_y_mib,
            vma_z_mib,
            vma_w_mib,
            vma_v_mib,
            duration_s,
            set1_threads,
            set2_threads,
            set3_threads,
            ..
        } => {
            let mib = (vma_x_mib + vma_y_mib + vma_z_mib + vma_w_mib + vma_v_mib) as f64;
            let threads = f64::from(set1_threads + set2_threads + set3_threads).max(1.0);
            // About 1 GiB/s written per thread.
            (mib, threads * 256.0 * 1024.0 * *duration_s as f64)
        }
    }
}

fn stats(s: &StatsScenario, costs: &CostModel, repeats: f64) -> Estimate {
    let secs = s.duration_ms as f64 / 1e3;
    let groups = s.tree.as_ref().map_or(8.0, |t| {
        let mut level = 1.0;
        let mut total = 1.0;
        for f in &t.fanout {
            level *= f64::from(*f);
            total += level;
        }
        total
    });
    let cpus = f64::from(s.parallelism());
    let items = 64.0;
    // Per-CPU deltas and per-group aggregates for every item, plus the
    // exact oracle; readers keep one snapshot each.
    let readers = s.readers.as_ref().map_or(0.0, |r| f64::from(r.count));
    let memory_bytes = groups * items * 8.0 * (cpus + 4.0) + readers * items * 8.0 + MIB;
    let threads = match s.mode {
        Mode::Sim => 1,
        // A stats scenario never parses in kernel mode; counted as real.
        Mode::Real | Mode::Kernel => {
            let writers = s
                .writers
                .as_ref()
                .and_then(|w| w.cpus)
                .or(s.threads)
                .unwrap_or(2);
            u64::from(writers.max(s.threads.unwrap_or(2))) + 3
        }
    };
    let events = match s.mode {
        Mode::Real | Mode::Kernel => 0.0,
        Mode::Sim => {
            let mut per_run = 0.0;
            if let Some(w) = &s.writers {
                let wcpus = f64::from(w.cpus.unwrap_or(s.parallelism()));
                let rate = if w.rate_per_cpu > 0.0 {
                    w.rate_per_cpu
                } else {
                    back_to_back_rate(costs)
                };
                per_run += wcpus * rate * secs / f64::from(w.burst.max(1));
            }
            if let Some(r) = &s.readers {
                per_run += f64::from(r.count) * secs * 1e3 / r.period_ms;
            }
            if let Some(sp) = &s.spikes {
                per_run += secs * 1e3 / sp.every_ms;
            }
            if s.update.is_some() {
                per_run += cpus * back_to_back_rate(costs) * secs;
            }
            per_run
        }
    };
    let seconds = match s.mode {
        Mode::Sim => 0.0,
        Mode::Real | Mode::Kernel => {
            let depths = s.update.as_ref().map_or(1, |u| u.depths.len().max(1));
            secs * repeats * depths as f64
        }
    };
    Estimate {
        memory_bytes,
        threads,
        events: events * repeats,
        seconds,
    }
}

/// Updates per second of one CPU updating back to back: one call and one
/// atomic each.
fn back_to_back_rate(costs: &CostModel) -> f64 {
    1e9 / (costs.call_ns + costs.atomic_ns).max(0.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_fits_the_default_limits_with_room() {
        let costs = CostModel::defaults();
        let limits = Limits::default();
        for name in Scenario::builtin_names() {
            let e = Scenario::builtin(name).unwrap().unwrap().estimate(&costs);
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
        let e = Scenario::parse("n.toml", &big).unwrap().estimate(&costs);
        assert!(e.exceeds(&Limits::default()).is_some(), "{e}");
    }
}
