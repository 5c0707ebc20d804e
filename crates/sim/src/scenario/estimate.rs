//! What a scenario will cost before it runs: memory, threads, simulated
//! events and time, from the file alone, so that a front end can refuse a
//! run that would exhaust the host or run for hours (`mmlab run` does,
//! unless `--force`).
//!
//! * **Memory** is the per-group, per-CPU and per-page state the runners
//!   allocate; **events** are the writer bursts, reads, accesses or page
//!   sweeps the simulator steps through, summed over every policy and run.
//! * **Time** has two parts. What does not depend on the host's speed
//!   ([`Estimate::seconds`]: real-mode measurement, kernel experiments) is
//!   known from the file. Simulated work is counted in **work units** of a
//!   [`WorkClass`] (each kind weighs its events by what they cost, so that
//!   one class's units take about the same CPU time whatever the
//!   scenario's sizes), and the host's speed in units per CPU second is
//!   measured by running the class's **probe** ([`WorkClass::probe`], a
//!   small scenario of that class) on the host: a [`Rates`]. `mmlab`
//!   measures it once per build, host and cost file and caches it beside
//!   the cost file. [`Estimate::wall_seconds`] is the simulated work at the
//!   measured speed, divided by the share of a CPU the process gets now
//!   (a busy host stretches a simulation), plus the fixed seconds.
//!
//! Each kind computes its own ([`super::Spec::estimate`]); the weights are
//! checked against measured run times of every built-in scenario (within
//! 3x, see `docs/estimates.md`).

use std::collections::BTreeMap;
use std::fmt;

/// A kind of simulated work whose units cost about the same CPU time: the
/// classes and their probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkClass {
    /// The `stats` kind's tree workloads (`stat-readers`, `stale-read`)
    /// in simulated mode: writer bursts, reads and spikes, each weighed by
    /// the square root of the tree's (group, CPU) pairs it works on, plus
    /// the per-CPU state the run initialises.
    StatsTree,
    /// The `stats` kind's `update-path` in simulated mode: back-to-back
    /// engine updates.
    StatsUpdate,
    /// The `numab` kind: 2 MiB chunks of page sweeps.
    Numab,
    /// The `refault` kind: background update bursts and workload accesses,
    /// weighed by the square root of the tree's groups.
    Refault,
    /// Work the host's kernel does for a kernel-mode experiment (page
    /// faults, cgroup creation, `memory.stat` reads), in nanoseconds at
    /// the development host's speed; no probe (a kernel run needs cgroup
    /// delegation), so only the CPU share adjusts it.
    Kernel,
}

impl WorkClass {
    /// Every class, in a fixed order.
    pub const ALL: [WorkClass; 5] = [
        WorkClass::StatsTree,
        WorkClass::StatsUpdate,
        WorkClass::Numab,
        WorkClass::Refault,
        WorkClass::Kernel,
    ];

    /// The class's name (in the rate cache and messages).
    pub fn name(self) -> &'static str {
        match self {
            WorkClass::StatsTree => "stats-tree",
            WorkClass::StatsUpdate => "stats-update",
            WorkClass::Numab => "numab",
            WorkClass::Refault => "refault",
            WorkClass::Kernel => "kernel",
        }
    }

    /// The class named `name`.
    pub fn from_name(name: &str) -> Option<WorkClass> {
        WorkClass::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The probe: a small scenario of this class (a few tens of
    /// milliseconds of CPU in a release build) whose estimated units over
    /// its measured CPU time are the host's rate; `None` for a class
    /// measured at its reference rate.
    pub fn probe(self) -> Option<&'static str> {
        match self {
            WorkClass::StatsTree => Some(crate::kinds::stats::estimate::PROBE_TREE),
            WorkClass::StatsUpdate => Some(crate::kinds::stats::estimate::PROBE_UPDATE),
            WorkClass::Numab => Some(crate::kinds::numab::estimate::PROBE),
            WorkClass::Refault => Some(crate::kinds::refault::estimate::PROBE),
            WorkClass::Kernel => None,
        }
    }

    /// Units per CPU second measured on the development host (a 2-vCPU
    /// KVM guest, release build): the rate used where none was measured.
    pub fn reference_rate(self) -> f64 {
        match self {
            WorkClass::StatsTree => 1.2e8,
            WorkClass::StatsUpdate => 9.0e7,
            WorkClass::Numab => 1.8e7,
            WorkClass::Refault => 3.7e6,
            WorkClass::Kernel => 1e9,
        }
    }
}

/// A scenario's estimated cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// Peak resident bytes of the model's state.
    pub memory_bytes: f64,
    /// Threads spawned at once (real mode; 1 for simulations).
    pub threads: u64,
    /// Simulated events over all policies and runs.
    pub events: f64,
    /// Wall-clock seconds that do not depend on the host's speed: the
    /// measurement of a real-mode run (every policy, run and depth for its
    /// duration, and its setup) or a kernel experiment; 0 for simulations.
    pub seconds: f64,
    /// Simulated work over all policies and runs, in units of `class`.
    pub work: f64,
    /// The class of the simulated work (`None`: no simulated work).
    pub class: Option<WorkClass>,
}

/// Iterations per CPU second of [`spin`]'s loop on the development host
/// (release build): the speed the rates are stated at.
pub const REFERENCE_SPEED: f64 = 6.0e9;

/// The host's measured speed: simulated work units per second of each
/// class at the reference speed, and the speed the process runs at now.
///
/// Speeds are those of one fixed loop ([`spin`]): the rates are measured
/// as units per CPU second, scaled by the loop's speed then (so a probe
/// that ran beside a busy hyperthread sibling counts at full speed), and
/// the loop's iterations per *wall* second expected during the run
/// ([`Rates::speed`], from its speed now) turn them into wall time, with
/// the share of a CPU, frequency or steal the host gives the process.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    /// Units per second at [`REFERENCE_SPEED`], by class (a class not
    /// listed uses its [`WorkClass::reference_rate`]).
    pub per_class: BTreeMap<WorkClass, f64>,
    /// [`spin`]'s iterations per wall second expected during the run
    /// (from its speed now: the front end decides how).
    pub speed: f64,
    /// The share of one CPU the process gets now (1: an idle host; 0.25:
    /// four runnable threads per CPU), for messages.
    pub cpu_share: f64,
    /// Where the rates come from, for messages (`measured on this host`).
    pub source: String,
}

impl Default for Rates {
    /// The reference rates of the development host at its full speed.
    fn default() -> Rates {
        Rates {
            per_class: BTreeMap::new(),
            speed: REFERENCE_SPEED,
            cpu_share: 1.0,
            source: "reference rates of the development host".into(),
        }
    }
}

/// Runs a fixed loop for `wall` and returns its iterations per wall
/// second and per CPU second of the calling thread (see [`Rates`]).
pub fn spin(wall: std::time::Duration) -> (f64, f64) {
    let t = std::time::Instant::now();
    let cpu = simcore::clock::CpuTimer::start();
    let mut x = 0u64;
    let mut n = 0u64;
    while t.elapsed() < wall {
        for i in 0..4096u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
        }
        x = std::hint::black_box(x);
        n += 4096;
    }
    let wall_s = t.elapsed().as_secs_f64().max(1e-9);
    let cpu_s = (cpu.elapsed_ns() / 1e9).max(1e-9);
    (n as f64 / wall_s, n as f64 / cpu_s)
}

impl Rates {
    /// Units per CPU second of `class`.
    pub fn rate(&self, class: WorkClass) -> f64 {
        self.per_class
            .get(&class)
            .copied()
            .filter(|r| r.is_finite() && *r > 0.0)
            .unwrap_or_else(|| class.reference_rate())
    }
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
    /// Wall-clock seconds on this host ([`Estimate::wall_seconds`]).
    pub seconds: f64,
}

impl Default for Limits {
    /// 4 GiB, 300 threads (the 256 a file may ask for and their
    /// helpers), 2·10^10 events, an hour on this host: several times the
    /// largest built-in scenario in each dimension (see the tests).
    fn default() -> Self {
        Limits {
            memory_bytes: 4.0 * f64::from(1u32 << 30),
            threads: 300,
            events: 2e10,
            seconds: 3600.0,
        }
    }
}

/// `s` seconds in words: `40 s`, `12 min`, `5.7 h`, `3.1 days`.
pub fn duration_words(s: f64) -> String {
    if !s.is_finite() {
        "forever".into()
    } else if s < 1.0 {
        format!("{s:.1} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 2.0 * 3600.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 48.0 * 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86400.0)
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.0} MiB, {} thread(s), {:.2e} events",
            self.memory_bytes / f64::from(1u32 << 20),
            self.threads,
            self.events,
        )?;
        if let Some(c) = self.class {
            write!(f, ", {:.3e} {} work units", self.work, c.name())?;
        }
        if self.seconds > 0.0 {
            write!(f, ", {} of measurement", duration_words(self.seconds))?;
        }
        Ok(())
    }
}

impl Estimate {
    /// CPU seconds of simulation at the reference speed.
    pub fn cpu_seconds(&self, rates: &Rates) -> f64 {
        match self.class {
            Some(c) => self.work / rates.rate(c),
            None => 0.0,
        }
    }

    /// Wall-clock seconds on the host the rates were measured on, at the
    /// speed it runs at now: the simulated work's seconds at the reference
    /// speed scaled by [`Rates::speed`], plus the fixed seconds.
    pub fn wall_seconds(&self, rates: &Rates) -> f64 {
        let slow = REFERENCE_SPEED / rates.speed.max(REFERENCE_SPEED * 1e-3);
        self.cpu_seconds(rates) * slow + self.seconds
    }

    /// The time as a sentence: `about 12 min on this host (…)`.
    pub fn time_words(&self, rates: &Rates) -> String {
        let wall = self.wall_seconds(rates);
        let mut parts = Vec::new();
        if let Some(c) = self.class {
            parts.push(if c == WorkClass::Kernel {
                format!(
                    "{} of the kernel's work at the development host's speed",
                    duration_words(self.cpu_seconds(rates))
                )
            } else {
                format!(
                    "{} of simulation at the speed {}",
                    duration_words(self.cpu_seconds(rates)),
                    rates.source
                )
            });
            if rates.cpu_share < 0.95 {
                parts.push(format!(
                    "this process gets {:.0}% of a CPU now",
                    rates.cpu_share * 100.0
                ));
            }
        }
        if self.seconds > 0.0 {
            parts.push(format!(
                "{} of measurement or waiting",
                duration_words(self.seconds)
            ));
        }
        format!("about {} ({})", duration_words(wall), parts.join("; "))
    }

    /// The first dimension over `limits` (time at `rates`), as a
    /// sentence; `None` when the run fits.
    pub fn exceeds(&self, limits: &Limits, rates: &Rates) -> Option<String> {
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
        let wall = self.wall_seconds(rates);
        if wall > limits.seconds {
            return Some(format!(
                "would take {} (limit {})",
                self.time_words(rates),
                duration_words(limits.seconds)
            ));
        }
        if self.events > limits.events {
            return Some(format!(
                "would simulate about {:.1e} events (limit {:.1e}; {})",
                self.events,
                limits.events,
                self.time_words(rates)
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
        let rates = Rates::default();
        let c = Catalog::simulated();
        for name in c.builtin_names() {
            let e = c.builtin(name).unwrap().unwrap().estimate(&costs);
            assert!(e.exceeds(&limits, &rates).is_none(), "{name}: {e}");
            assert!(e.memory_bytes * 4.0 < limits.memory_bytes, "{name}: {e}");
            assert!(e.events * 4.0 < limits.events, "{name}: {e}");
            assert!(e.wall_seconds(&rates) * 4.0 < limits.seconds, "{name}: {e}");
            assert!(e.class.is_some() || e.seconds > 0.0, "{name}: no time");
        }
    }

    #[test]
    fn every_probe_parses_and_has_work_of_its_class() {
        let costs = CostModel::defaults();
        let c = Catalog::simulated();
        for class in WorkClass::ALL {
            let Some(probe) = class.probe() else {
                continue;
            };
            let sc = c
                .parse(&format!("<probe {}>", class.name()), probe)
                .unwrap_or_else(|e| panic!("{}: {e}", class.name()));
            let e = sc.estimate(&costs);
            assert_eq!(e.class, Some(class), "{}", class.name());
            // Tens of milliseconds at the reference rate: long enough to
            // measure, short enough to run before a command.
            let s = e.cpu_seconds(&Rates::default());
            assert!((0.01..0.4).contains(&s), "{}: {s} s", class.name());
            assert_eq!(WorkClass::from_name(class.name()), Some(class));
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
        assert!(
            e.exceeds(&Limits::default(), &Rates::default()).is_some(),
            "{e}"
        );
    }

    #[test]
    fn a_busy_host_stretches_simulations_not_measurements() {
        let e = Estimate {
            work: 1e9,
            class: Some(WorkClass::Numab),
            seconds: 10.0,
            ..Default::default()
        };
        let mut r = Rates::default();
        r.per_class.insert(WorkClass::Numab, 1e8);
        assert!((e.wall_seconds(&r) - 20.0).abs() < 1e-9);
        r.speed = REFERENCE_SPEED / 4.0;
        assert!((e.wall_seconds(&r) - 50.0).abs() < 1e-9);
        let (per_wall, per_cpu) = spin(std::time::Duration::from_millis(20));
        assert!(
            per_wall > 0.0 && per_cpu >= per_wall * 0.5,
            "{per_wall} {per_cpu}"
        );
        assert_eq!(duration_words(5.7 * 3600.0), "5.7 h");
    }
}
