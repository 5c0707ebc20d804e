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
//!   small scenario of that class) on the host ([`measure_rates`]): a
//!   [`Rates`]. `mmlab` measures it once per build, host and cost file and
//!   caches it beside the cost file. [`Estimate::wall_seconds`] is the
//!   simulated work at the measured speed, divided by the share of a CPU
//!   the process gets now (a busy host stretches a simulation), plus the
//!   fixed seconds.
//!
//! Each kind computes its own ([`super::Spec::estimate`]), each policy
//! of a scenario from its knobs ([`flush`]: how often it flushes and how
//! much each flush visits); the estimates are checked against the
//! measured CPU time of every built-in simulated scenario under every
//! policy (`sim`'s `estimate_table` test; the table and the rows still
//! outside 3x are in `docs/estimates.md`).

use std::collections::BTreeMap;
use std::fmt;

pub mod flush;
mod measure;
pub use flush::{flush_load, FlushLoad, Level, TreeLoad};
pub use measure::{measure_rates, measure_rates_observed, ProbeTiming};

/// A kind of simulated work whose units cost about the same CPU time,
/// declared by the scenario kind that does it (`Kind::work_classes`): its
/// name, its rate on the development host and its probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkClass {
    /// The class's name (in the rate cache and messages).
    pub name: &'static str,
    /// Units per CPU second measured on the development host (a 2-vCPU
    /// KVM guest, release build): the rate used where none was measured.
    pub reference_rate: f64,
    /// The probe: a small scenario of this class (a few tens of
    /// milliseconds of CPU in a release build) whose estimated units over
    /// its measured CPU time are the host's rate; `None` for a class
    /// measured at its reference rate (work the host's kernel does).
    pub probe: Option<&'static str>,
    /// What the units are, for messages: `simulation`, or the kernel's
    /// work `at the development host's speed`.
    pub simulated: bool,
}

impl WorkClass {
    /// A class of simulated work measured by `probe`, at `reference_rate`
    /// units per CPU second where none was measured.
    pub const fn simulated(
        name: &'static str,
        reference_rate: f64,
        probe: &'static str,
    ) -> WorkClass {
        WorkClass {
            name,
            reference_rate,
            probe: Some(probe),
            simulated: true,
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
    pub class: Option<&'static WorkClass>,
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
    /// Units per second at [`REFERENCE_SPEED`], by class name (a class
    /// not listed uses its [`WorkClass::reference_rate`]).
    pub per_class: BTreeMap<String, f64>,
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
    pub fn rate(&self, class: &WorkClass) -> f64 {
        self.per_class
            .get(class.name)
            .copied()
            .filter(|r| r.is_finite() && *r > 0.0)
            .unwrap_or(class.reference_rate)
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
            write!(f, ", {:.3e} {} work units", self.work, c.name)?;
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
            parts.push(if c.simulated {
                format!(
                    "{} of simulation at the speed {}",
                    duration_words(self.cpu_seconds(rates)),
                    rates.source
                )
            } else {
                format!(
                    "{} of the kernel's work at the development host's speed",
                    duration_words(self.cpu_seconds(rates))
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

    static CLASS: WorkClass = WorkClass {
        name: "test",
        reference_rate: 1e6,
        probe: None,
        simulated: true,
    };

    #[test]
    fn a_busy_host_stretches_simulations_not_measurements() {
        let e = Estimate {
            work: 1e9,
            class: Some(&CLASS),
            seconds: 10.0,
            ..Default::default()
        };
        let mut r = Rates::default();
        r.per_class.insert(CLASS.name.into(), 1e8);
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

    #[test]
    fn a_class_without_a_measured_rate_runs_at_its_reference() {
        let e = Estimate {
            work: 2e6,
            class: Some(&CLASS),
            ..Default::default()
        };
        assert!((e.cpu_seconds(&Rates::default()) - 2.0).abs() < 1e-9);
        let mut r = Rates::default();
        r.per_class.insert(CLASS.name.into(), f64::NAN);
        assert!(
            (e.cpu_seconds(&r) - 2.0).abs() < 1e-9,
            "a NaN rate is ignored"
        );
    }
}
