//! `kind = "stats"` scenario files, parsed into a typed [`StatsScenario`]:
//! each workload carries exactly the tables it runs on, so the runners
//! never look for a missing one.
//!
//! ```toml
//! kind = "stats"
//! name = "stat-readers"
//! workload = "stat-readers"      # update-path | stat-readers | stale-read | false-sharing | will-it-scale | netperf
//! mode = "sim"                   # sim | real
//! policies = ["linux-6.8", "hierstat"]
//! runs = 3
//! seed = 1                       # the random number generator's seed
//! duration_ms = 1000
//! cpus = 384                     # sim: logical CPUs (1..=1024)
//! threads = 2                    # real: threads
//! machine = "amd-384"            # will-it-scale, netperf: a built-in machine or a file
//!                                # (see sim::machines; the host's topology when absent)
//!
//! [tree]                         # the group hierarchy below the root
//! fanout = [10, 500]             # 10 first-level groups with 500 children each
//! names = ["system.slice", "user.slice"]   # optional names of first-level groups
//!
//! [writers]                      # stat updates
//! rate_per_cpu = 2000.0          # updates/s per CPU (0 = back to back)
//! pages = [1, 4]                 # magnitude range per update
//! ```
//!
//! | workload | tables (required, optional) |
//! |---|---|
//! | `update-path` | `[update]` |
//! | `stat-readers` | `[tree]`, `[writers]`, `[readers]`; `[flusher]` |
//! | `stale-read` | `[tree]`, `[writers]`, `[spikes]`; `[readers]`, `[flusher]` |
//! | `false-sharing` | none (real mode) |
//! | `will-it-scale` | `[will_it_scale]` (sim) |
//! | `netperf` | `[netperf]` (sim) |

use crate::cpu::MAX_CPUS;
use crate::machines::{Machine, MachineChoice};
use crate::workload::{
    FlusherSpec, NetperfSpec, ReadersSpec, SpikeSpec, TreeSpec, UpdateSpec, WillItScaleSpec,
    WritersSpec,
};
use lab::report::Mode;
use lab::ScenarioError;
use lab::{Header, PolicySpec, Range, Source};
use serde::{Deserialize, Serialize};

/// The most groups a tree may have.
pub const MAX_GROUPS: u64 = 200_000;
/// The most threads of a real-mode run.
pub const MAX_THREADS: u64 = 256;

/// The ranges of the stats kind's numeric fields.
pub const RANGES: &[Range] = &[
    Range::int("duration_ms", 1, lab::ranges::MS_MAX),
    Range::int("cpus", 1, MAX_CPUS as u64),
    Range::int("threads", 1, MAX_THREADS),
    Range::int("tree.fanout", 1, MAX_GROUPS),
    Range::int("writers.cpus", 1, MAX_CPUS as u64),
    Range::real("writers.rate_per_cpu", 0.0, 1e7),
    Range::real("writers.hot_fraction", 1e-6, 1.0),
    Range::int("writers.pages", 1, lab::ranges::PAGES_MAX),
    Range::real("writers.thp_fraction", 0.0, 1.0),
    Range::int("writers.items", 1, 64),
    Range::real("writers.uncharge_fraction", 0.0, 1.0),
    Range::int("writers.burst", 1, 4096),
    Range::int("readers.count", 0, 1_000_000),
    Range::real("readers.period_ms", 0.001, lab::ranges::MS_MAX as f64),
    Range::int("readers.items", 1, 64),
    Range::int("flusher.period_ms", 1, lab::ranges::MS_MAX),
    Range::real("spikes.every_ms", 0.001, lab::ranges::MS_MAX as f64),
    Range::int("spikes.pages", 1, lab::ranges::PAGES_MAX),
    Range::int("spikes.read_after_us", 0, 10_000_000),
    Range::int("update.depths", 1, 64),
    Range::int("update.pages", 1, lab::ranges::PAGES_MAX),
    Range::int("update.items", 1, 64),
    Range::int("will_it_scale.depth", 0, 64),
    Range::int("will_it_scale.region_mib", 1, 1 << 20),
    Range::real("will_it_scale.warmup_ms", 0.0, 1000.0),
    Range::int("netperf.clients", 1, 512),
    Range::int("netperf.depths", 0, 64),
    Range::real("netperf.warmup_ms", 0.0, 1000.0),
    Range::int("netperf.protected_levels", 0, 64),
];

/// The names of the stats workloads (the file's `workload` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadName {
    /// [`Workload::UpdatePath`].
    UpdatePath,
    /// [`Workload::StatReaders`].
    StatReaders,
    /// [`Workload::StaleRead`].
    StaleRead,
    /// [`Workload::FalseSharing`].
    FalseSharing,
    /// [`Workload::WillItScale`].
    WillItScale,
    /// [`Workload::Netperf`].
    Netperf,
}

/// A stats workload with the tables it runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// Threads updating a group at several depths: update throughput.
    UpdatePath(UpdateSpec),
    /// Many groups with writers and periodic readers: read latency.
    StatReaders(Readers),
    /// A large event then a read: missed events and child > parent.
    StaleRead(Spikes),
    /// A write-hot counter beside a hot read-mostly pointer vs separated
    /// (real mode).
    FalseSharing,
    /// will-it-scale page faults, priced whole (sim mode,
    /// [`crate::priced`]).
    WillItScale(WillItScaleSpec),
    /// netperf `TCP_SENDFILE` over loopback, priced whole (sim mode).
    Netperf(NetperfSpec),
}

/// The stat-readers workload's tables.
#[derive(Debug, Clone, PartialEq)]
pub struct Readers {
    /// The group tree.
    pub tree: TreeSpec,
    /// The writers.
    pub writers: WritersSpec,
    /// The `memory.stat` readers.
    pub readers: ReadersSpec,
    /// The background flusher (sim mode).
    pub flusher: Option<FlusherSpec>,
}

/// The stale-read workload's tables.
#[derive(Debug, Clone, PartialEq)]
pub struct Spikes {
    /// The group tree.
    pub tree: TreeSpec,
    /// The writers.
    pub writers: WritersSpec,
    /// The spikes.
    pub spikes: SpikeSpec,
    /// Readers that keep flushing (sim), or flusher threads (real: `count`
    /// threads pausing `period_ms` between reads).
    pub readers: Option<ReadersSpec>,
    /// The background flusher (sim mode).
    pub flusher: Option<FlusherSpec>,
}

/// A parsed, validated `kind = "stats"` scenario (beyond its header).
#[derive(Debug, Clone, PartialEq)]
pub struct StatsScenario {
    /// The workload and its tables.
    pub workload: Workload,
    /// Measured duration per run in milliseconds (virtual in sim mode).
    pub duration_ms: u64,
    /// Logical CPUs (sim mode; required there).
    pub cpus: Option<u32>,
    /// Threads (real mode; default 2).
    pub threads: Option<u32>,
    /// The machine the priced workloads run on (will-it-scale, netperf);
    /// `None`: the host's costs on `cpus` CPUs of one socket.
    pub machine: Option<MachineChoice>,
}

/// A file's `machine` key: a built-in's name or a path, or (in the text
/// stored with a run) the description inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum MachineField {
    /// A built-in machine's name, or a path to a machine file.
    Name(String),
    /// A machine description inline.
    Inline(Box<Machine>),
}

/// The file as written: the header keys and every table, each optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatsFile {
    kind: String,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    reproduces: String,
    #[serde(default)]
    workload: Option<WorkloadName>,
    mode: Mode,
    #[serde(default)]
    policies: Vec<String>,
    #[serde(default = "one")]
    runs: u32,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cpus: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    threads: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<MachineField>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tree: Option<TreeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    writers: Option<WritersSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    readers: Option<ReadersSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flusher: Option<FlusherSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spikes: Option<SpikeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    update: Option<UpdateSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    will_it_scale: Option<WillItScaleSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netperf: Option<NetperfSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    policy: Vec<PolicySpec>,
}

fn one() -> u32 {
    1
}

impl StatsScenario {
    /// Parses and validates a stats file (its ranges are already checked).
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem.
    pub fn parse(src: &Source<'_>) -> Result<(Header, StatsScenario), ScenarioError> {
        let f: StatsFile = src.deserialize()?;
        let err = |field: &str, message: &str| Err(src.error(field, message));
        if f.kind != "stats" {
            return err("kind", "a stats scenario has kind = \"stats\"");
        }
        let Some(name) = f.workload else {
            return err(
                "workload",
                "missing: kind = \"stats\" needs a workload (update-path, stat-readers, stale-read, false-sharing, will-it-scale, netperf)",
            );
        };
        match f.mode {
            Mode::Kernel => return err(
                "mode",
                "kernel mode runs kind = \"kernel\" scenarios (experiment = update-path | stat-readers | stale-read)",
            ),
            Mode::Sim if f.cpus.is_none() => return err("cpus", "missing: sim mode needs `cpus`"),
            Mode::Sim | Mode::Real => {}
        }
        if f.duration_ms == 0 {
            return err(
                "duration_ms",
                "missing: a stats scenario needs `duration_ms`",
            );
        }
        if let Some(t) = &f.tree {
            check_tree(src, t)?;
        }
        if let Some(w) = &f.writers {
            check_writers(src, w, f.mode, f.cpus)?;
        }
        let table = |present: bool, t: &str| {
            if present {
                Ok(())
            } else {
                Err(src.error(
                    t,
                    format!("missing: workload `{}` needs a [{t}] table", f.name),
                ))
            }
        };
        // Tables the workload does not run on are refused, not ignored.
        let present = [
            ("tree", f.tree.is_some()),
            ("writers", f.writers.is_some()),
            ("readers", f.readers.is_some()),
            ("flusher", f.flusher.is_some()),
            ("spikes", f.spikes.is_some()),
            ("update", f.update.is_some()),
            ("will_it_scale", f.will_it_scale.is_some()),
            ("netperf", f.netperf.is_some()),
        ];
        let uses: &[&str] = match name {
            WorkloadName::UpdatePath => &["update"],
            WorkloadName::StatReaders => &["tree", "writers", "readers", "flusher"],
            WorkloadName::StaleRead => &["tree", "writers", "readers", "flusher", "spikes"],
            WorkloadName::FalseSharing => &[],
            WorkloadName::WillItScale => &["will_it_scale"],
            WorkloadName::Netperf => &["netperf"],
        };
        if let Some((t, _)) = present
            .iter()
            .find(|(t, there)| *there && !uses.contains(t))
        {
            return Err(src.error(
                t,
                format!(
                    "workload `{}` does not use a [{t}] table",
                    workload_str(name)
                ),
            ));
        }
        let machine = match &f.machine {
            None => None,
            Some(_) if !matches!(name, WorkloadName::WillItScale | WorkloadName::Netperf) => {
                return err(
                    "machine",
                    "only the priced workloads (will-it-scale, netperf) run on a machine",
                )
            }
            Some(MachineField::Name(n)) => {
                Some(MachineChoice::resolve(n, src.file).map_err(|m| src.error("machine", m))?)
            }
            Some(MachineField::Inline(m)) => {
                let text = m.to_toml();
                let machine = Machine::parse(src.file, &text)
                    .map_err(|e| src.error(&format!("machine.{}", e.field), e.message.clone()))?;
                Some(MachineChoice {
                    label: machine.name.clone(),
                    builtin: false,
                    machine,
                })
            }
        };
        if let (Some(m), Some(c)) = (&machine, f.cpus) {
            if c > m.machine.cpus() {
                return err(
                    "cpus",
                    &format!(
                        "{c} is more than machine `{}`'s {} CPUs",
                        m.label,
                        m.machine.cpus()
                    ),
                );
            }
        }
        let workload = match name {
            WorkloadName::UpdatePath => {
                let Some(u) = f.update.clone() else {
                    return Err(table(false, "update").unwrap_err());
                };
                if u.depths.is_empty() {
                    return err("update.depths", "needs at least one depth");
                }
                Workload::UpdatePath(u)
            }
            WorkloadName::StatReaders => {
                table(f.tree.is_some(), "tree")?;
                table(f.writers.is_some(), "writers")?;
                table(f.readers.is_some(), "readers")?;
                Workload::StatReaders(Readers {
                    tree: f.tree.clone().expect("checked"),
                    writers: f.writers.clone().expect("checked"),
                    readers: f.readers.clone().expect("checked"),
                    flusher: f.flusher.clone(),
                })
            }
            WorkloadName::StaleRead => {
                table(f.tree.is_some(), "tree")?;
                table(f.writers.is_some(), "writers")?;
                table(f.spikes.is_some(), "spikes")?;
                Workload::StaleRead(Spikes {
                    tree: f.tree.clone().expect("checked"),
                    writers: f.writers.clone().expect("checked"),
                    spikes: f.spikes.clone().expect("checked"),
                    readers: f.readers.clone(),
                    flusher: f.flusher.clone(),
                })
            }
            WorkloadName::FalseSharing => {
                if f.mode != Mode::Real {
                    return err("mode", "false-sharing runs in real mode only");
                }
                if !f.policy.is_empty() {
                    return err("policy", "false-sharing runs layouts, not flush policies");
                }
                Workload::FalseSharing
            }
            WorkloadName::WillItScale | WorkloadName::Netperf => {
                if f.mode != Mode::Sim {
                    return err(
                        "mode",
                        "will-it-scale and netperf run in sim mode (their kernel work is priced)",
                    );
                }
                if name == WorkloadName::WillItScale {
                    let Some(w) = f.will_it_scale.clone() else {
                        return Err(table(false, "will_it_scale").unwrap_err());
                    };
                    if w.modes.is_empty() {
                        return err("will_it_scale.modes", "needs at least one mode");
                    }
                    Workload::WillItScale(w)
                } else {
                    let Some(n) = f.netperf.clone() else {
                        return Err(table(false, "netperf").unwrap_err());
                    };
                    if n.depths.is_empty() {
                        return err("netperf.depths", "needs at least one depth");
                    }
                    if u64::from(n.clients) * 2 > u64::from(f.cpus.unwrap_or(1)) {
                        return err(
                            "netperf.clients",
                            "each client and its server need a CPU of their own: clients <= cpus / 2",
                        );
                    }
                    Workload::Netperf(n)
                }
            }
        };
        let header = Header {
            name: f.name,
            mode: f.mode,
            description: f.description,
            reproduces: f.reproduces,
            policies: f.policies,
            runs: f.runs,
            seed: f.seed,
            user_policies: lab::policy::validate(src, f.policy)?,
        };
        Ok((
            header,
            StatsScenario {
                workload,
                duration_ms: f.duration_ms,
                cpus: f.cpus,
                threads: f.threads,
                machine,
            },
        ))
    }

    /// The file that parses back into this scenario under `header`.
    pub(crate) fn to_file(&self, header: &Header) -> StatsFile {
        let mut f = StatsFile {
            kind: "stats".into(),
            name: header.name.clone(),
            description: header.description.clone(),
            reproduces: header.reproduces.clone(),
            workload: None,
            mode: header.mode,
            policies: header.policies.clone(),
            runs: header.runs,
            seed: header.seed,
            duration_ms: self.duration_ms,
            cpus: self.cpus,
            threads: self.threads,
            machine: self.machine.as_ref().map(|m| {
                if m.builtin {
                    MachineField::Name(m.label.clone())
                } else {
                    MachineField::Inline(Box::new(m.machine.clone()))
                }
            }),
            tree: None,
            writers: None,
            readers: None,
            flusher: None,
            spikes: None,
            update: None,
            will_it_scale: None,
            netperf: None,
            policy: header
                .user_policies
                .iter()
                .map(|u| u.spec.clone())
                .collect(),
        };
        f.workload = Some(match &self.workload {
            Workload::UpdatePath(u) => {
                f.update = Some(u.clone());
                WorkloadName::UpdatePath
            }
            Workload::StatReaders(r) => {
                f.tree = Some(r.tree.clone());
                f.writers = Some(r.writers.clone());
                f.readers = Some(r.readers.clone());
                f.flusher = r.flusher.clone();
                WorkloadName::StatReaders
            }
            Workload::StaleRead(s) => {
                f.tree = Some(s.tree.clone());
                f.writers = Some(s.writers.clone());
                f.spikes = Some(s.spikes.clone());
                f.readers = s.readers.clone();
                f.flusher = s.flusher.clone();
                WorkloadName::StaleRead
            }
            Workload::FalseSharing => WorkloadName::FalseSharing,
            Workload::WillItScale(w) => {
                f.will_it_scale = Some(w.clone());
                WorkloadName::WillItScale
            }
            Workload::Netperf(n) => {
                f.netperf = Some(n.clone());
                WorkloadName::Netperf
            }
        });
        f
    }

    /// Logical CPUs (sim) or threads (real) this scenario uses.
    pub fn parallelism(&self, mode: Mode) -> u32 {
        match mode {
            Mode::Sim => self.cpus.unwrap_or(1),
            Mode::Real | Mode::Kernel => self.threads(),
        }
    }

    /// The machine the priced workloads run on: the file's, else the
    /// host's on `cpus` CPUs of one socket.
    pub fn priced_machine(&self) -> Machine {
        match &self.machine {
            Some(m) => m.machine.clone(),
            None => Machine::host().with_cpus(self.cpus.unwrap_or(1)),
        }
    }

    /// The machine's label as reports show it (`host` when none is named).
    pub fn machine_label(&self) -> String {
        match &self.machine {
            Some(m) => m.label.clone(),
            None => "host".into(),
        }
    }

    /// Threads of a real-mode run (default 2).
    pub fn threads(&self) -> u32 {
        self.threads.unwrap_or(2)
    }

    /// Items in the schema of the workload: the most any table updates or
    /// reads.
    pub fn schema_items(&self) -> usize {
        let (w, r, u) = match &self.workload {
            Workload::UpdatePath(u) => (1, None, u.items),
            Workload::StatReaders(r) => (r.writers.items, r.readers.items, 1),
            Workload::StaleRead(s) => {
                (s.writers.items, s.readers.as_ref().and_then(|r| r.items), 1)
            }
            Workload::FalseSharing | Workload::WillItScale(_) | Workload::Netperf(_) => {
                (1, None, 1)
            }
        };
        w.max(r.unwrap_or(w)).max(u).max(1) as usize
    }
}

fn workload_str(w: WorkloadName) -> &'static str {
    match w {
        WorkloadName::UpdatePath => "update-path",
        WorkloadName::StatReaders => "stat-readers",
        WorkloadName::StaleRead => "stale-read",
        WorkloadName::FalseSharing => "false-sharing",
        WorkloadName::WillItScale => "will-it-scale",
        WorkloadName::Netperf => "netperf",
    }
}

fn check_tree(src: &Source<'_>, t: &TreeSpec) -> Result<(), ScenarioError> {
    if t.fanout.is_empty() {
        return Err(src.error("tree.fanout", "needs at least one level"));
    }
    let mut total: u64 = 0;
    let mut level: u64 = 1;
    for &f in &t.fanout {
        level = level.saturating_mul(u64::from(f));
        total = total.saturating_add(level);
    }
    if total > MAX_GROUPS {
        return Err(src.error(
            "tree.fanout",
            format!("{total} groups is more than {MAX_GROUPS}"),
        ));
    }
    if t.names.len() > t.fanout[0] as usize {
        return Err(src.error(
            "tree.names",
            format!(
                "{} names for {} first-level groups",
                t.names.len(),
                t.fanout[0]
            ),
        ));
    }
    Ok(())
}

fn check_writers(
    src: &Source<'_>,
    w: &WritersSpec,
    mode: Mode,
    cpus: Option<u32>,
) -> Result<(), ScenarioError> {
    if let (Some(c), Mode::Sim) = (w.cpus, mode) {
        let most = cpus.unwrap_or(1);
        if c > most {
            return Err(src.error(
                "writers.cpus",
                format!("{c} is more than the scenario's {most} CPUs"),
            ));
        }
    }
    if let (Some(c), Mode::Real) = (w.cpus, mode) {
        if u64::from(c) > MAX_THREADS {
            return Err(src.error(
                "writers.cpus",
                format!("{c} is more than the thread limit {MAX_THREADS}"),
            ));
        }
    }
    if w.pages[0] > w.pages[1] {
        return Err(src.error("writers.pages", "must be [min, max] with 1 <= min <= max"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    const GOOD: &str = r#"
kind = "stats"
name = "t"
workload = "stat-readers"
mode = "sim"
policies = ["linux-6.8"]
duration_ms = 100
cpus = 8

[tree]
fanout = [2, 3]

[writers]
rate_per_cpu = 1000.0

[readers]
count = 4
period_ms = 10.0
"#;

    fn parse(text: &str) -> Result<lab::Scenario, lab::ScenarioError> {
        crate::catalog().parse("bad.toml", text)
    }

    #[test]
    fn good_file_parses_and_round_trips() {
        let s = parse(GOOD).unwrap();
        let st = s.spec_as::<super::StatsScenario>().unwrap();
        assert_eq!(st.cpus, Some(8));
        let super::Workload::StatReaders(r) = &st.workload else {
            panic!("{st:?}")
        };
        assert_eq!(r.writers.burst, 16);
        let again = crate::catalog().parse("stored", &s.source()).unwrap();
        assert_eq!(again.spec_as::<super::StatsScenario>(), Some(st));
    }

    #[test]
    fn wrong_type_names_file_line_and_field() {
        let bad = GOOD.replace("period_ms = 10.0", "period_ms = \"fast\"");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.file, "bad.toml");
        assert_eq!(e.field, "readers.period_ms");
        assert_eq!(e.line, Some(18));
        let msg = e.to_string();
        assert!(
            msg.starts_with("bad.toml:18: field `readers.period_ms`"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_field_is_reported_with_its_line() {
        let bad = GOOD.replace("rate_per_cpu = 1000.0", "rate_per_cpu = 1000.0\nrat = 3");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.line, Some(15));
        assert!(e.message.contains("unknown field `rat`"), "{}", e.message);
        assert!(e.field.starts_with("writers"), "{}", e.field);
    }

    #[test]
    fn syntax_error_has_a_line() {
        let bad = GOOD.replace("cpus = 8", "cpus = = 8");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.line, Some(8));
    }

    #[test]
    fn out_of_range_value_names_the_field() {
        let bad = GOOD.replace("cpus = 8", "cpus = 2048");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.field, "cpus");
        assert_eq!(e.line, Some(8));
        assert!(e.message.contains("1..=1024"));
        let bad = GOOD.replace("period_ms = 10.0", "period_ms = 0.0");
        let e = parse(&bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("readers.period_ms", Some(18)));
    }

    #[test]
    fn missing_and_unused_tables_are_named() {
        let bad = GOOD.replace("[readers]\ncount = 4\nperiod_ms = 10.0\n", "");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.field, "readers");
        assert!(e.message.contains("needs a [readers] table"));
        let bad = format!("{GOOD}\n[update]\ndepths = [2]\n");
        let e = parse(&bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("update", Some(20)));
        assert!(e.message.contains("does not use"), "{e}");
    }

    #[test]
    fn unknown_workload_variant_is_reported() {
        let bad = GOOD.replace("workload = \"stat-readers\"", "workload = \"readers\"");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.line, Some(4));
        assert_eq!(e.field, "workload");
    }

    const PRICED: &str = r#"
kind = "stats"
name = "t"
workload = "netperf"
mode = "sim"
policies = ["next-20231009"]
duration_ms = 1
cpus = 4
machine = "MACHINE"

[netperf]
clients = 2
depths = [2]
"#;

    #[test]
    fn a_machine_is_a_builtin_or_a_file_and_travels_inline() {
        let s = parse(&PRICED.replace("MACHINE", "ixion-44")).unwrap();
        let st = s.spec_as::<super::StatsScenario>().unwrap();
        assert_eq!(st.machine_label(), "ixion-44");
        assert!(s.source().contains("machine = \"ixion-44\""), "by name");
        let e = parse(&PRICED.replace("MACHINE", "ixion-9000")).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("machine", Some(9)));
        assert!(e.message.contains("amd-384"), "{e}");
        let e = parse(
            &PRICED
                .replace("cpus = 4", "cpus = 400")
                .replace("MACHINE", "ixion-44"),
        )
        .unwrap_err();
        assert_eq!(e.field, "cpus");
        // A file, relative to the scenario's folder.
        let dir = std::env::temp_dir().join(format!("mmlab-machine-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mine = crate::machines::Machine::builtin("ixion-44")
            .unwrap()
            .to_toml()
            .replace(
                "line_transfer_intra_socket_ns = 49.3",
                "line_transfer_intra_socket_ns = 60.0",
            );
        std::fs::write(dir.join("mine.toml"), &mine).unwrap();
        let scenario = dir.join("sc.toml");
        let text = PRICED.replace("MACHINE", "mine.toml");
        let s = crate::catalog()
            .parse(scenario.to_str().unwrap(), &text)
            .unwrap();
        let st = s.spec_as::<super::StatsScenario>().unwrap();
        assert!(!st.machine.as_ref().unwrap().builtin);
        let stored = s.source();
        assert!(stored.contains("[machine]"), "inline: {stored}");
        let again = crate::catalog().parse("stored", &stored).unwrap();
        let m = again
            .spec_as::<super::StatsScenario>()
            .unwrap()
            .priced_machine();
        assert_eq!(m, st.priced_machine());
        assert_eq!(
            m.line_transfer_intra_socket_ns,
            Some(60.0),
            "the file's, not the built-in's"
        );
        // A number without its source is refused, named inside the table.
        let bad = stored.replace("l2_latency_ns_source", "l2_latency_ns_sauce");
        assert!(crate::catalog().parse("stored", &bad).is_err());
        std::fs::remove_dir_all(&dir).ok();
        let e = parse(&GOOD.replace("cpus = 8", "cpus = 8\nmachine = \"ixion-44\"")).unwrap_err();
        assert_eq!(e.field, "machine", "{e}");
    }

    #[test]
    fn too_many_groups_is_rejected() {
        let bad = GOOD.replace("fanout = [2, 3]", "fanout = [1000, 1000]");
        let e = parse(&bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("tree.fanout", Some(11)));
    }
}
