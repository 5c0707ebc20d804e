//! kernelmode: the lab's `kernel` scenario kind. A kernel scenario runs one
//! `hostkernel` experiment (page-fault cost per depth, `memory.stat` read
//! latency, stale reads after a spike) on the host's own kernel, in real
//! memory cgroups, and reports it like any other run: one policy, `host`,
//! with the host's facts (kernel release, cgroup version, online CPUs, the
//! flush threshold).
//!
//! The crate implements the framework's [`lab::Kind`] interface above
//! `hostkernel` (which measures) and `sim` (for the twin); neither knows
//! it. A program that wants kernel mode adds [`KIND`] to its catalog.
//!
//! * [`spec`]: the file (`kind = "kernel"`) and its ranges;
//! * [`run`]: the runner and the metric names;
//! * [`claims`]: reference figures and the threshold claim;
//! * [`twin`]: the same shapes simulated under the preset of the host
//!   kernel's era, priced with the cost file's `[kernel]` table: every run
//!   stores the twin's predictions beside the host's figures, and the
//!   claims check the prediction (`mmlab run X-kernel --compare-sim` shows
//!   them side by side);
//! * [`reproducer`]: a finding as a POSIX shell script over cgroupfs that a
//!   kernel developer can run without mmlab;
//! * [`present`]: a run as tables pivoted by the experiment's shape and one
//!   figure per experiment, the host beside its twin.
//!
//! A front end reaches all of it through the [`lab::Spec`] methods
//! ([`lab::Spec::reproducer`], [`lab::Spec::compare_with_simulation`],
//! [`lab::Spec::tables`], [`lab::Spec::figures`]), never through the
//! concrete [`KernelScenario`].
//!
//! The host is detected once per process ([`host`]); a host that cannot
//! run kernel mode (not root, no writable memory controller) makes every
//! kernel scenario unavailable with the reason
//! ([`lab::Scenario::availability`]).

#![warn(missing_docs)]

pub mod claims;
pub mod metrics;
pub mod present;
pub mod reproducer;
pub mod run;
pub mod spec;
pub mod twin;

pub use spec::{Experiment, KernelScenario, HOST_POLICY};
pub use twin::{era_preset, side_by_side};

use hostkernel::Host;
use lab::report::{Claim, Figure, RunReport, SideBySide, Table};
use lab::{Estimate, Header, Kind, RunOutput, Source, Spec, WorkClass};
use lab::{RunError, RunOptions, ScenarioError, Steps};
use std::sync::OnceLock;

/// The host, detected once per process; `Err` holds why it cannot run
/// kernel mode (not root, no memory controller, read-only, not delegated)
/// or why detection failed.
pub fn host() -> Result<&'static Host, &'static str> {
    static HOST: OnceLock<Result<Host, String>> = OnceLock::new();
    HOST.get_or_init(|| Host::detect().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(String::as_str)
}

/// The `kernel` kind.
pub static KIND: Kind = Kind {
    name: "kernel",
    ranges: spec::RANGES,
    builtins: BUILTIN,
    work_classes: &[&KERNEL_WORK],
    parse,
};

/// Work the host's kernel does for a kernel-mode experiment (page faults,
/// cgroup creation, `memory.stat` reads), in nanoseconds at the
/// development host's speed; no probe (a kernel run needs cgroup
/// delegation), so only the CPU share adjusts it.
pub static KERNEL_WORK: WorkClass = WorkClass {
    name: "kernel",
    reference_rate: 1e9,
    probe: None,
    simulated: false,
};

/// The built-in kernel scenarios, in list order.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "update-path-kernel",
        include_str!("../../../scenarios/update-path-kernel.toml"),
    ),
    (
        "stat-readers-kernel",
        include_str!("../../../scenarios/stat-readers-kernel.toml"),
    ),
    (
        "stale-read-kernel",
        include_str!("../../../scenarios/stale-read-kernel.toml"),
    ),
];

fn parse(src: &Source<'_>) -> Result<(Header, Box<dyn Spec>), ScenarioError> {
    let (h, s) = KernelScenario::parse(src)?;
    Ok((h, Box::new(s)))
}

impl Spec for KernelScenario {
    fn known_policies(&self) -> Vec<String> {
        vec![HOST_POLICY.to_string()]
    }

    fn user_policies_refused(&self) -> Option<&'static str> {
        Some("measures the host's kernel, not flush policies")
    }

    /// One worker or reader process at a time.
    fn parallelism(&self, _header: &Header) -> u32 {
        1
    }

    /// The memory its worker processes map, the processes (counted as
    /// threads), the kernel's work in nanoseconds at the development
    /// host's costs ([`KERNEL_WORK`]: a page fault
    /// ~2.5 µs, creating and removing a cgroup ~0.1 ms, a `memory.stat`
    /// read ~25 µs, a worker's setup 5–20 ms; stretched by the CPU share
    /// on a busy host) and the seconds it waits (warm-ups, read periods,
    /// pauses). Within 1.5x of the built-in scenarios' wall time on the
    /// development host.
    fn estimate(&self, header: &Header, _ctx: &lab::Context) -> Estimate {
        const FAULT_NS: f64 = 2500.0;
        const GROUP_NS: f64 = 1e5;
        const READ_NS: f64 = 25e3;
        const PAGE: f64 = 4096.0;
        let repeats = header.policies.len().max(1) as f64 * f64::from(header.runs);
        let mut e = Estimate {
            threads: 1,
            class: Some(&KERNEL_WORK),
            ..Estimate::default()
        };
        match &self.experiment {
            Experiment::UpdatePath(u) => {
                let faults = (u.rounds + u.warmup_rounds) as f64 * u.pages as f64;
                e.memory_bytes = u.pages as f64 * PAGE;
                e.threads += 1;
                e.work += (faults * FAULT_NS + 5e6) * (u.runs * u.depths.len()) as f64;
            }
            Experiment::StatReaders(r) => {
                let writers = r.writers.iter().copied().max().unwrap_or(0);
                e.memory_bytes = (writers * r.writer_pages) as f64 * PAGE;
                e.threads += (writers + r.readers) as u64;
                let cases = r.writers.len() as f64;
                let groups: f64 = r.groups.iter().map(|g| *g as f64).sum();
                e.seconds += (r.warmup.as_secs_f64()
                    + r.reads_per_reader as f64 * r.period.as_secs_f64())
                    * cases
                    * r.groups.len() as f64;
                e.work += cases
                    * (groups * GROUP_NS
                        + r.groups.len() as f64
                            * (2e7 + (r.reads_per_reader * r.readers) as f64 * READ_NS));
            }
            Experiment::StaleRead(s) => {
                let kib = s.spikes_kib.iter().copied().max().unwrap_or(0);
                e.memory_bytes = kib as f64 * 1024.0;
                e.threads += 1;
                let pages: u64 = s.spikes_kib.iter().map(|k| k / 4).sum();
                e.work += s.repetitions as f64 * pages as f64 * FAULT_NS + 1e7;
                e.seconds += s.repetitions as f64
                    * s.spikes_kib.len() as f64
                    * (s.pause.as_secs_f64() + s.follow_ms / 1e3);
            }
        }
        e.seconds *= repeats;
        e.work *= repeats;
        e
    }

    fn run(&self, header: &Header, steps: &mut Steps<'_>) -> Result<RunOutput, RunError> {
        run::run(host_or_error()?, header, self, steps)
    }

    fn claims(&self, report: &RunReport) -> Vec<Claim> {
        claims::claims(report)
    }

    fn source(&self, header: &Header) -> String {
        self.to_toml(header)
    }

    /// One repetition, one inner run, few rounds, reads and repetitions
    /// (the shapes stay).
    fn shrink_for_smoke_test(&mut self, header: &mut Header) {
        header.runs = 1;
        self.shrink();
    }

    fn availability(&self) -> Result<(), String> {
        host().map(|_| ()).map_err(str::to_string)
    }

    /// The stale read has one ([`reproducer::script`]); the other
    /// experiments have none.
    fn reproducer(&self) -> Option<String> {
        reproducer::script(self)
    }

    fn has_simulated_twin(&self) -> bool {
        true
    }

    /// [`side_by_side`] on this host's facts, with the header's seed.
    fn compare_with_simulation(
        &self,
        header: &Header,
        report: &RunReport,
        opts: &RunOptions,
    ) -> Option<Result<SideBySide, RunError>> {
        Some(host_or_error().and_then(|h| side_by_side(self, header.seed, report, h.facts(), opts)))
    }

    /// [`present::tables`].
    fn tables(&self, report: &RunReport) -> Vec<Table> {
        present::tables(report)
    }

    /// [`present::figures`].
    fn figures(&self, report: &RunReport) -> Vec<Figure> {
        present::figures(report)
    }
}

/// [`host`], or why not as a run error of the kind.
fn host_or_error() -> Result<&'static Host, RunError> {
    host().map_err(|why| RunError::Kind {
        kind: "kernel",
        source: why.into(),
    })
}

pub use lab::Scenario;

#[cfg(test)]
mod tests {
    use lab::report::report_from_rows;

    #[test]
    fn its_front_end_features_are_spec_methods() {
        let catalog = sim::catalog().with(&crate::KIND);
        let sc = |name: &str| catalog.builtin(name).unwrap().unwrap();
        let stale = sc("stale-read-kernel");
        let script = stale.reproducer().expect("the stale read has a reproducer");
        assert!(script.starts_with("#!/bin/sh\n"));
        assert!(sc("update-path-kernel").reproducer().is_none());
        assert!(stale.has_simulated_twin() && sc("stat-readers-kernel").has_simulated_twin());
        // A simulated kind has none of them.
        let simulated = sc("stale-read");
        assert!(simulated.reproducer().is_none() && !simulated.has_simulated_twin());
        let r = report_from_rows("stale-read", &[("hierstat", "ops_per_sec", 1.0)]);
        assert!(simulated.tables(&r).is_empty() && simulated.figures(&r).is_empty());
        let opts = lab::RunOptions::default();
        assert!(simulated.compare_with_simulation(&r, &opts).is_none());
    }
}
