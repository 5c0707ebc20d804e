//! The `stats` kind: hierstat workloads under flush policies, on the
//! simulator (virtual time) or on real threads. Each workload is one file
//! here, with its runner and the source thread's claims:
//!
//! | workload | module | source thread |
//! |---|---|---|
//! | `update-path` | [`update_path`] | 000 patch 3/5, 001 |
//! | `stat-readers` | [`stat_readers`] | 000 patch 5/5 |
//! | `stale-read` | [`stale_read`] | 000 patch 5/5 |
//! | `false-sharing` | [`false_sharing`] | 002 |
//! | `will-it-scale` | [`will_it_scale`] | 000 patch 3/5 (the robot's page-fault tests) |
//! | `netperf` | [`netperf`] | 000 patch 3/5, 001 |
//!
//! Runs are interleaved (run 1 of every policy, then run 2 ...) so that a
//! drift of the host during a real-mode scenario affects every policy alike.

/// Metric of real-thread runs: the smallest share of the run any thread
/// spent on a CPU (`false-sharing`, `update-path`).
pub const CPU_SHARE: &str = "cpu_share";

/// The thread CPU share below which a real-thread run's threads did not run
/// side by side: contended lines then stop moving between CPUs, and a
/// comparison of layouts or of shared atomics means nothing.
pub const MIN_CPU_SHARE: f64 = 0.8;

pub mod estimate;
pub mod false_sharing;
pub mod netperf;
pub mod spec;
pub mod stale_read;
pub mod stat_readers;
pub mod update_path;
pub mod will_it_scale;

pub use spec::{Readers, Spikes, StatsScenario, Workload, WorkloadName, MAX_GROUPS};

use crate::cost::CostModel;
use crate::error::SimError;
use lab::policy::FlushPolicy;
use lab::progress::Steps;
use lab::report::{Claim, Mode, RunReport};
use lab::ScenarioError;
use lab::{Context, Estimate, Header, Kind, RunError, RunOutput, Source, Spec};

/// The `stats` kind.
pub static KIND: Kind = Kind {
    name: "stats",
    ranges: spec::RANGES,
    builtins: BUILTIN,
    work_classes: &[&estimate::STATS_TREE, &estimate::STATS_UPDATE],
    parse,
};

/// The built-in stats scenarios, in list order.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "update-path",
        include_str!("../../../../../scenarios/update-path.toml"),
    ),
    (
        "update-path-sim",
        include_str!("../../../../../scenarios/update-path-sim.toml"),
    ),
    (
        "stat-readers",
        include_str!("../../../../../scenarios/stat-readers.toml"),
    ),
    (
        "stat-readers-full",
        include_str!("../../../../../scenarios/stat-readers-full.toml"),
    ),
    (
        "stat-readers-real",
        include_str!("../../../../../scenarios/stat-readers-real.toml"),
    ),
    (
        "stale-read",
        include_str!("../../../../../scenarios/stale-read.toml"),
    ),
    (
        "stale-read-real",
        include_str!("../../../../../scenarios/stale-read-real.toml"),
    ),
    (
        "false-sharing",
        include_str!("../../../../../scenarios/false-sharing.toml"),
    ),
    (
        "page-fault1",
        include_str!("../../../../../scenarios/page-fault1.toml"),
    ),
    (
        "page-fault2",
        include_str!("../../../../../scenarios/page-fault2.toml"),
    ),
    (
        "page-fault3",
        include_str!("../../../../../scenarios/page-fault3.toml"),
    ),
    (
        "netperf",
        include_str!("../../../../../scenarios/netperf.toml"),
    ),
];

fn parse(src: &Source<'_>) -> Result<(Header, Box<dyn Spec>), ScenarioError> {
    let (h, s) = StatsScenario::parse(src)?;
    Ok((h, Box::new(s)))
}

impl Spec for StatsScenario {
    fn known_policies(&self) -> Vec<String> {
        match self.workload {
            Workload::FalseSharing => false_sharing::LAYOUTS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            _ => FlushPolicy::builtin_names(),
        }
    }

    fn user_policies_refused(&self) -> Option<&'static str> {
        matches!(self.workload, Workload::FalseSharing)
            .then_some("runs layouts, not flush policies")
    }

    fn parallelism(&self, header: &Header) -> u32 {
        StatsScenario::parallelism(self, header.mode)
    }

    fn estimate(&self, header: &Header, ctx: &Context) -> Estimate {
        estimate::estimate(self, header, &CostModel::of(ctx))
    }

    fn run(&self, header: &Header, steps: &mut Steps<'_>) -> Result<RunOutput, RunError> {
        let out = match &self.workload {
            Workload::UpdatePath(u) => update_path::run(header, self, u, steps)?,
            Workload::StatReaders(r) => stat_readers::run(header, self, r, steps)?,
            Workload::StaleRead(s) => stale_read::run(header, self, s, steps)?,
            Workload::FalseSharing => false_sharing::run(header, self, steps)?,
            Workload::WillItScale(w) => will_it_scale::run(header, self, w, steps)?,
            Workload::Netperf(n) => netperf::run(header, self, n, steps)?,
        };
        Ok(out.into())
    }

    fn claims(&self, report: &RunReport) -> Vec<Claim> {
        match &self.workload {
            Workload::UpdatePath(_) => update_path::claims(report),
            Workload::StatReaders(_) => stat_readers::claims(report),
            Workload::StaleRead(_) => stale_read::claims(report),
            Workload::FalseSharing => false_sharing::claims(report),
            Workload::WillItScale(w) => will_it_scale::claims(report, w, &self.machine_label()),
            Workload::Netperf(n) => netperf::claims(report, n, &self.machine_label()),
        }
    }

    fn source(&self, header: &Header) -> String {
        toml::to_string(&self.to_file(header)).unwrap_or_default()
    }

    fn set_duration_ms(&mut self, ms: u64) {
        self.duration_ms = ms;
    }

    /// A simulated stats scenario runs once, a fifth as long with a fifth
    /// of the readers (the simulator is deterministic, so one run says what
    /// five do). A real-mode one keeps up to 3 runs (its claims compare
    /// medians, and one short run on a busy 2-vCPU host is mostly
    /// scheduling noise) and at least 100 ms, or its full duration when
    /// shorter.
    fn shrink_for_smoke_test(&mut self, header: &mut Header) {
        let real = header.mode == Mode::Real;
        header.runs = if real { header.runs.min(3) } else { 1 };
        self.duration_ms = if real {
            (self.duration_ms / 2).max(100).min(self.duration_ms)
        } else {
            (self.duration_ms / 5).max(1)
        };
        let readers = match &mut self.workload {
            Workload::StatReaders(r) => Some(&mut r.readers),
            Workload::StaleRead(s) => s.readers.as_mut(),
            Workload::UpdatePath(_)
            | Workload::FalseSharing
            | Workload::WillItScale(_)
            | Workload::Netperf(_) => None,
        };
        if let Some(r) = readers {
            r.count = (r.count / 5).max(1);
        }
    }

    fn sweep_axes(&self) -> Option<(&'static str, &'static str)> {
        match self.workload {
            Workload::StaleRead(_) => Some(("read_latency_ns.p999", stale_read::MISSED_EVENT_RATE)),
            Workload::FalseSharing | Workload::WillItScale(_) | Workload::Netperf(_) => None,
            _ => Some(("read_latency_ns.p999", stat_readers::STALE_READS)),
        }
    }
}

/// The error for a policy name the workload's runner does not know.
pub(crate) fn unknown_policy(header: &Header, sc: &StatsScenario, name: &str) -> SimError {
    lab::RunError::UnknownPolicy {
        name: name.to_string(),
        scenario: header.name.clone(),
        known: sc
            .known_policies()
            .into_iter()
            .chain(header.user_policies.iter().map(|p| p.name().to_string()))
            .collect::<Vec<_>>()
            .join(", "),
    }
    .into()
}
