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
//! seed = 1
//!
//! [stat_readers]                 # the experiment's table (all keys optional)
//! groups = [200, 2000]
//! writers = [0, 1, 2]
//! period_ms = 1.0
//! ```
//!
//! The table named after the experiment (`update_path`, `stat_readers`,
//! `stale_read`) is deserialised into the crate's config
//! ([`hostkernel::UpdatePathConfig`], [`hostkernel::StatReadersConfig`],
//! [`hostkernel::StaleReadConfig`]): missing keys take its defaults, unknown
//! keys are errors; a table of another experiment is an error too.

use super::deserialize;
use crate::error::ScenarioError;
use crate::report::Mode;
use hostkernel::{StaleReadConfig, StatReadersConfig, UpdatePathConfig};
use serde::{Deserialize, Serialize};

/// The only policy of a kernel scenario: the host's kernel.
pub const HOST_POLICY: &str = "host";

/// Which `hostkernel` experiment a kernel scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Experiment {
    /// Page-fault cost in memcgs nested 1, 2, 4, 8 deep.
    UpdatePath,
    /// `memory.stat` read latency with G groups and W writers.
    StatReaders,
    /// The parent's `memory.stat` right after a spike, against the counter.
    StaleRead,
}

impl Experiment {
    /// The experiment's name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::UpdatePath => "update-path",
            Experiment::StatReaders => "stat-readers",
            Experiment::StaleRead => "stale-read",
        }
    }

    /// The table holding its configuration.
    pub fn table(self) -> &'static str {
        match self {
            Experiment::UpdatePath => "update_path",
            Experiment::StatReaders => "stat_readers",
            Experiment::StaleRead => "stale_read",
        }
    }
}

fn default_policies() -> Vec<String> {
    vec![HOST_POLICY.to_string()]
}

fn default_runs() -> u32 {
    1
}

/// A parsed, validated `kind = "kernel"` scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelScenario {
    /// Always [`super::Kind::Kernel`].
    pub kind: super::Kind,
    /// Scenario name.
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Which seed thread it reproduces and the reference figures.
    #[serde(default)]
    pub reproduces: String,
    /// The experiment.
    pub experiment: Experiment,
    /// Always [`Mode::Kernel`].
    pub mode: Mode,
    /// Always `["host"]`.
    #[serde(default = "default_policies")]
    pub policies: Vec<String>,
    /// How often the whole experiment is repeated (each repetition is one
    /// run of the report's metrics).
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// Base seed (the stat readers' group choice; run `i` uses `seed + i`).
    #[serde(default)]
    pub seed: u64,
    /// `experiment = "update-path"`.
    #[serde(default)]
    pub update_path: Option<UpdatePathConfig>,
    /// `experiment = "stat-readers"`.
    #[serde(default)]
    pub stat_readers: Option<StatReadersConfig>,
    /// `experiment = "stale-read"`.
    #[serde(default)]
    pub stale_read: Option<StaleReadConfig>,
}

impl KernelScenario {
    /// Parses and validates `text`; `file` names it in errors.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem.
    pub fn parse(file: &str, text: &str) -> Result<KernelScenario, ScenarioError> {
        let mut sc: KernelScenario = deserialize(file, text)?;
        let err = |field: &str, message: String| ScenarioError::at(file, text, field, message);
        // A whole table's problem is reported at its `[header]` line.
        let table_err = |table: &str, message: String| ScenarioError {
            file: file.to_string(),
            line: text
                .lines()
                .position(|l| l.trim() == format!("[{table}]"))
                .map(|i| i + 1),
            field: table.to_string(),
            message,
        };
        if sc.kind != super::Kind::Kernel {
            return Err(err(
                "kind",
                "a kernel scenario has kind = \"kernel\"".into(),
            ));
        }
        if sc.mode != Mode::Kernel {
            return Err(err(
                "mode",
                "a kernel scenario runs on the host's kernel: mode = \"kernel\"".into(),
            ));
        }
        if sc.name.trim().is_empty() {
            return Err(err("name", "must not be empty".into()));
        }
        if sc.runs == 0 || sc.runs > 100 {
            return Err(err("runs", format!("{} is not in 1..=100", sc.runs)));
        }
        if sc.policies.as_slice() != [HOST_POLICY] {
            return Err(err(
                "policies",
                format!("a kernel scenario has one policy, \"{HOST_POLICY}\" (the host's kernel)"),
            ));
        }
        let present = [
            (Experiment::UpdatePath, sc.update_path.is_some()),
            (Experiment::StatReaders, sc.stat_readers.is_some()),
            (Experiment::StaleRead, sc.stale_read.is_some()),
        ];
        for (e, there) in present {
            if there && e != sc.experiment {
                return Err(table_err(
                    e.table(),
                    format!(
                        "this table belongs to experiment \"{}\", the scenario runs \"{}\"",
                        e.name(),
                        sc.experiment.name()
                    ),
                ));
            }
        }
        let table = sc.experiment.table();
        let checked = match sc.experiment {
            Experiment::UpdatePath => sc
                .update_path
                .get_or_insert_with(Default::default)
                .validate(),
            Experiment::StatReaders => sc
                .stat_readers
                .get_or_insert_with(Default::default)
                .validate(),
            Experiment::StaleRead => sc
                .stale_read
                .get_or_insert_with(Default::default)
                .validate(),
        };
        checked.map_err(|e| table_err(table, e.to_string()))?;
        Ok(sc)
    }
}

impl KernelScenario {
    /// Shrinks the experiment for a smoke test: one inner run, few rounds,
    /// reads and repetitions (the shapes stay).
    pub fn shrink_for_smoke_test(&mut self) {
        if let Some(c) = &mut self.update_path {
            c.runs = 1;
            c.rounds = c.rounds.min(2);
            c.warmup_rounds = c.warmup_rounds.min(1);
        }
        if let Some(c) = &mut self.stat_readers {
            c.reads_per_reader = c.reads_per_reader.min(100);
        }
        if let Some(c) = &mut self.stale_read {
            c.repetitions = c.repetitions.min(10);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "kind = \"kernel\"\nmode = \"kernel\"\nname = \"k\"\nexperiment = \"stat-readers\"\n\n[stat_readers]\ngroups = [20]\nwriters = [0]\n";

    #[test]
    fn parses_with_defaults_for_missing_keys() {
        let sc = KernelScenario::parse("k.toml", OK).unwrap();
        assert_eq!(sc.policies, vec!["host".to_string()]);
        let c = sc.stat_readers.unwrap();
        assert_eq!((c.groups, c.writers), (vec![20], vec![0]));
        assert_eq!(c.readers, StatReadersConfig::default().readers);
        let bare =
            "kind = \"kernel\"\nmode = \"kernel\"\nname = \"k\"\nexperiment = \"update-path\"\n";
        let sc = KernelScenario::parse("k.toml", bare).unwrap();
        assert_eq!(sc.update_path, Some(UpdatePathConfig::default()));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = KernelScenario::parse("k.toml", &OK.replace("groups", "gropus")).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("k.toml", Some(7)));
        assert!(e.message.contains("gropus"), "{e}");
        let e = KernelScenario::parse("k.toml", &OK.replace("mode = \"kernel\"", "mode = \"sim\""))
            .unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("mode", Some(2)));
        let e = KernelScenario::parse("k.toml", &format!("{OK}\n[stale_read]\nrepetitions = 3\n"))
            .unwrap_err();
        assert_eq!(e.field, "stale_read");
        assert_eq!(e.line, Some(10));
        let e = KernelScenario::parse("k.toml", &OK.replace("groups = [20]", "groups = [0]"))
            .unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("stat_readers", Some(6)));
        let bad = OK.replace("name = \"k\"", "name = \"k\"\npolicies = [\"linux-6.8\"]");
        let e = KernelScenario::parse("k.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("policies", Some(4)));
        let e = KernelScenario::parse("k.toml", &OK.replace("stat-readers", "nope")).unwrap_err();
        assert_eq!(e.field, "experiment");
    }
}
