//! `kind = "kernel"` scenario files: one experiment of the `hostkernel`
//! crate on the host's own kernel (`mode = "kernel"`).
//!
//! ```toml
//! kind = "kernel"
//! mode = "kernel"
//! name = "stat-readers-kernel"
//! experiment = "stat-readers"    # update-path | stat-readers | stale-read
//! policies = ["host"]            # optional; the only policy is the host
//! runs = 1                       # the experiment is repeated this often
//! seed = 1                       # the random number generator's seed
//!
//! [stat_readers]                 # the experiment's table (all keys optional)
//! groups = [200, 2000]
//! writers = [0, 1, 2]
//! period_ms = 1.0
//! ```
//!
//! The table named after the experiment (`update_path`, `stat_readers`,
//! `stale_read`) is deserialised into the hostkernel crate's configuration
//! ([`hostkernel::UpdatePathConfig`], [`hostkernel::StatReadersConfig`],
//! [`hostkernel::StaleReadConfig`]): missing keys take its defaults, unknown
//! keys are errors; a table of another experiment is an error too.

use hostkernel::{StaleReadConfig, StatReadersConfig, UpdatePathConfig};
use lab::report::Mode;
use lab::ScenarioError;
use lab::{Header, Range, Source};
use serde::{Deserialize, Serialize};

/// The only policy of a kernel scenario: the host's kernel.
pub const HOST_POLICY: &str = "host";

/// The ranges of the kernel kind's numeric fields: real cgroups, real
/// processes and real memory, so the bounds are what a host survives.
pub const RANGES: &[Range] = &[
    Range::int("runs", 1, 100),
    Range::int("update_path.depths", 1, 64),
    Range::int("update_path.pages", 1, 1 << 20),
    Range::int("update_path.rounds", 1, 10_000),
    Range::int("update_path.warmup_rounds", 0, 1000),
    Range::int("update_path.runs", 1, 100),
    Range::int("stat_readers.groups", 1, 20_000),
    Range::int("stat_readers.writers", 0, 64),
    Range::int("stat_readers.readers", 1, 64),
    Range::int("stat_readers.reads_per_reader", 1, 1_000_000),
    Range::real("stat_readers.period_ms", 0.0, 60_000.0),
    Range::int("stat_readers.writer_pages", 1, 1 << 20),
    Range::real("stat_readers.warmup_ms", 0.0, 60_000.0),
    Range::int("stat_readers.seed", 0, i64::MAX as u64),
    Range::int("stale_read.spikes_kib", 1, 4 << 20),
    Range::int("stale_read.repetitions", 1, 100_000),
    Range::real("stale_read.pause_ms", 0.0, 60_000.0),
    Range::real("stale_read.follow_ms", 0.0, 60_000.0),
    Range::real("stale_read.follow_poll_ms", 0.1, 10_000.0),
    Range::int("stale_read.follow_repetitions", 0, 100_000),
];

/// Which `hostkernel` experiment a kernel scenario runs, with its
/// configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Experiment {
    /// Page-fault cost in memcgs nested 1, 2, 4, 8 deep.
    UpdatePath(UpdatePathConfig),
    /// `memory.stat` read latency with G groups and W writers.
    StatReaders(StatReadersConfig),
    /// The parent's `memory.stat` right after a spike, against the counter.
    StaleRead(StaleReadConfig),
}

/// The experiments' names in scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ExperimentName {
    UpdatePath,
    StatReaders,
    StaleRead,
}

impl ExperimentName {
    fn as_str(self) -> &'static str {
        match self {
            ExperimentName::UpdatePath => "update-path",
            ExperimentName::StatReaders => "stat-readers",
            ExperimentName::StaleRead => "stale-read",
        }
    }

    /// The table holding its configuration.
    fn table(self) -> &'static str {
        match self {
            ExperimentName::UpdatePath => "update_path",
            ExperimentName::StatReaders => "stat_readers",
            ExperimentName::StaleRead => "stale_read",
        }
    }
}

fn default_policies() -> Vec<String> {
    vec![HOST_POLICY.to_string()]
}

fn one() -> u32 {
    1
}

/// The file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelFile {
    kind: String,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    reproduces: String,
    experiment: ExperimentName,
    mode: Mode,
    #[serde(default = "default_policies")]
    policies: Vec<String>,
    #[serde(default = "one")]
    runs: u32,
    #[serde(default)]
    seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    update_path: Option<UpdatePathConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stat_readers: Option<StatReadersConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stale_read: Option<StaleReadConfig>,
}

/// A parsed, validated `kind = "kernel"` scenario (beyond its header).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelScenario {
    /// The experiment and its configuration.
    pub experiment: Experiment,
}

impl KernelScenario {
    /// Parses and validates a kernel file (its ranges are already checked).
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem.
    pub fn parse(src: &Source<'_>) -> Result<(Header, KernelScenario), ScenarioError> {
        let f: KernelFile = src.deserialize()?;
        if f.kind != "kernel" {
            return Err(src.error("kind", "a kernel scenario has kind = \"kernel\""));
        }
        if f.mode != Mode::Kernel {
            return Err(src.error(
                "mode",
                "a kernel scenario runs on the host's kernel: mode = \"kernel\"",
            ));
        }
        if f.policies.as_slice() != [HOST_POLICY] {
            return Err(src.error(
                "policies",
                format!("a kernel scenario has one policy, \"{HOST_POLICY}\" (the host's kernel)"),
            ));
        }
        let present = [
            (ExperimentName::UpdatePath, f.update_path.is_some()),
            (ExperimentName::StatReaders, f.stat_readers.is_some()),
            (ExperimentName::StaleRead, f.stale_read.is_some()),
        ];
        for (e, there) in present {
            if there && e != f.experiment {
                return Err(src.error(
                    e.table(),
                    format!(
                        "this table belongs to experiment \"{}\", the scenario runs \"{}\"",
                        e.as_str(),
                        f.experiment.as_str()
                    ),
                ));
            }
        }
        // A whole table's problem is reported at its `[header]` line.
        let table = f.experiment.table();
        let bad = |e: hostkernel::Error| src.error(table, e.to_string());
        let experiment = match f.experiment {
            ExperimentName::UpdatePath => {
                let c = f.update_path.clone().unwrap_or_default();
                c.validate().map_err(bad)?;
                Experiment::UpdatePath(c)
            }
            ExperimentName::StatReaders => {
                let c = f.stat_readers.clone().unwrap_or_default();
                c.validate().map_err(bad)?;
                Experiment::StatReaders(c)
            }
            ExperimentName::StaleRead => {
                let c = f.stale_read.clone().unwrap_or_default();
                c.validate().map_err(bad)?;
                Experiment::StaleRead(c)
            }
        };
        // In the file's order; kernel scenarios define no flush policies.
        let header = Header {
            name: f.name,
            description: f.description,
            reproduces: f.reproduces,
            mode: f.mode,
            policies: f.policies,
            runs: f.runs,
            seed: f.seed,
            user_policies: Vec::new(),
        };
        Ok((header, KernelScenario { experiment }))
    }

    /// The file that parses back into this scenario under `header`.
    pub fn to_toml(&self, header: &Header) -> String {
        let mut f = KernelFile {
            kind: "kernel".into(),
            name: header.name.clone(),
            description: header.description.clone(),
            reproduces: header.reproduces.clone(),
            experiment: ExperimentName::UpdatePath,
            mode: header.mode,
            policies: header.policies.clone(),
            runs: header.runs,
            seed: header.seed,
            update_path: None,
            stat_readers: None,
            stale_read: None,
        };
        match &self.experiment {
            Experiment::UpdatePath(c) => f.update_path = Some(c.clone()),
            Experiment::StatReaders(c) => {
                f.experiment = ExperimentName::StatReaders;
                f.stat_readers = Some(c.clone());
            }
            Experiment::StaleRead(c) => {
                f.experiment = ExperimentName::StaleRead;
                f.stale_read = Some(c.clone());
            }
        }
        toml::to_string(&f).unwrap_or_default()
    }

    /// The units of work one repetition reports (runs × depths for
    /// update-path, cases for stat-readers, spikes × repetitions for
    /// stale-read): the experiment's own progress steps.
    pub fn steps_per_run(&self) -> u64 {
        let n = match &self.experiment {
            Experiment::UpdatePath(c) => c.runs * c.depths.len(),
            Experiment::StatReaders(c) => c.groups.len() * c.writers.len(),
            Experiment::StaleRead(c) => c.spikes_kib.len() * c.repetitions,
        };
        n as u64
    }

    /// Shrinks the experiment for a smoke test: one inner run, few rounds,
    /// reads and repetitions (the shapes stay).
    pub fn shrink(&mut self) {
        match &mut self.experiment {
            Experiment::UpdatePath(c) => {
                c.runs = 1;
                c.rounds = c.rounds.min(2);
                c.warmup_rounds = c.warmup_rounds.min(1);
            }
            Experiment::StatReaders(c) => c.reads_per_reader = c.reads_per_reader.min(100),
            Experiment::StaleRead(c) => c.repetitions = c.repetitions.min(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "kind = \"kernel\"\nmode = \"kernel\"\nname = \"k\"\nexperiment = \"stat-readers\"\n\n[stat_readers]\ngroups = [20]\nwriters = [0]\n";

    fn parse(text: &str) -> Result<crate::Scenario, ScenarioError> {
        lab::Catalog::new().with(&crate::KIND).parse("k.toml", text)
    }

    #[test]
    fn parses_with_defaults_for_missing_keys() {
        let sc = parse(OK).unwrap();
        assert_eq!(sc.policies(), &["host".to_string()]);
        let k: &KernelScenario = sc.spec_as().unwrap();
        let Experiment::StatReaders(c) = &k.experiment else {
            panic!("{k:?}")
        };
        assert_eq!((&c.groups, &c.writers), (&vec![20], &vec![0]));
        assert_eq!(c.readers, StatReadersConfig::default().readers);
        let bare =
            "kind = \"kernel\"\nmode = \"kernel\"\nname = \"k\"\nexperiment = \"update-path\"\n";
        let sc = parse(bare).unwrap();
        let k: &KernelScenario = sc.spec_as().unwrap();
        assert_eq!(
            k.experiment,
            Experiment::UpdatePath(UpdatePathConfig::default())
        );
        let again = parse(&sc.source()).unwrap();
        assert_eq!(again.spec_as::<KernelScenario>(), Some(k));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = parse(&OK.replace("groups", "gropus")).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("k.toml", Some(7)));
        assert!(e.message.contains("gropus"), "{e}");
        let e = parse(&OK.replace("mode = \"kernel\"", "mode = \"sim\"")).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("mode", Some(2)));
        let e = parse(&format!("{OK}\n[stale_read]\nrepetitions = 3\n")).unwrap_err();
        assert_eq!(e.field, "stale_read");
        assert_eq!(e.line, Some(10));
        let e = parse(&OK.replace("writers = [0]", "writers = [0]\nreaders = 0")).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("stat_readers.readers", Some(9))
        );
        let bad = OK.replace("name = \"k\"", "name = \"k\"\npolicies = [\"linux-6.8\"]");
        let e = parse(&bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("policies", Some(4)));
        let e = parse(&OK.replace("stat-readers", "nope")).unwrap_err();
        assert_eq!(e.field, "experiment");
        let e = parse(&OK.replace("name = \"k\"", "name = \"k\"\nruns = 101")).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("runs", Some(4)));
    }
}
