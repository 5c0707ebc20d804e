//! Scenario files, parsed and validated once into one typed [`Scenario`].
//!
//! Every scenario is a TOML file whose `kind` picks its schema:
//!
//! | `kind` | schema | runner |
//! |---|---|---|
//! | `stats` | [`StatsScenario`] ([`stats`]) | [`crate::scenarios`] on the hierstat engine |
//! | `numab` | [`::numab::ScenarioFile`] ([`mod@numab`]) | [`crate::scenarios::numab`] on the `numab` crate |
//! | `refault` | [`RefaultScenario`] ([`refault`]) | [`crate::scenarios::refault`] on `models` |
//! | `kernel` | [`KernelScenario`] ([`kernel`]) | [`crate::scenarios::kernel`] on the host's kernel (`hostkernel`) |
//!
//! All three share the header keys `name`, `kind`, `mode`, `description`,
//! `policies` (the first is the baseline of %change), `runs` and `seed`.
//! Errors name the file, the 1-based line and the dotted field of the first
//! problem, for syntax, types, unknown keys and semantic checks alike.
//! The scenarios under `scenarios/` are embedded at build time
//! ([`BUILTIN`]).

pub mod estimate;
pub mod kernel;
pub mod numab;
pub mod policy;
pub mod ranges;
pub mod refault;
pub mod stats;
pub mod sweep;

pub use kernel::{Experiment, KernelScenario};
pub use policy::{PolicyFile, PolicySpec};
pub use refault::{BackgroundSpec, LatencySpec, RefaultScenario, RefaultSpec, WorkloadSpec};
pub use stats::{
    FlusherSpec, ReadersSpec, SpikeSpec, StatsScenario, Targets, TreeSpec, UpdateSpec, Workload,
    WritersSpec, MAX_GROUPS,
};

use crate::error::ScenarioError;
use crate::report::Mode;
use serde::{Deserialize, Serialize};

/// The scenarios embedded in the binary: `(name, TOML text)`, in the order
/// `mmlab list` shows them.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "update-path",
        include_str!("../../../../scenarios/update-path.toml"),
    ),
    (
        "update-path-sim",
        include_str!("../../../../scenarios/update-path-sim.toml"),
    ),
    (
        "stat-readers",
        include_str!("../../../../scenarios/stat-readers.toml"),
    ),
    (
        "stat-readers-real",
        include_str!("../../../../scenarios/stat-readers-real.toml"),
    ),
    (
        "stale-read",
        include_str!("../../../../scenarios/stale-read.toml"),
    ),
    (
        "stale-read-real",
        include_str!("../../../../scenarios/stale-read-real.toml"),
    ),
    (
        "false-sharing",
        include_str!("../../../../scenarios/false-sharing.toml"),
    ),
    // The NUMA-balancing scenarios are embedded once, by the numab crate.
    ::numab::BUILTIN[0],
    ::numab::BUILTIN[1],
    ::numab::BUILTIN[2],
    ::numab::BUILTIN[3],
    ::numab::BUILTIN[4],
    (
        "refault-storm",
        include_str!("../../../../scenarios/refault-storm.toml"),
    ),
    (
        "update-path-kernel",
        include_str!("../../../../scenarios/update-path-kernel.toml"),
    ),
    (
        "stat-readers-kernel",
        include_str!("../../../../scenarios/stat-readers-kernel.toml"),
    ),
    (
        "stale-read-kernel",
        include_str!("../../../../scenarios/stale-read-kernel.toml"),
    ),
];

/// Which runner executes a scenario (the file's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The hierstat engine scenarios (this crate's runners).
    Stats,
    /// The NUMA-balancing scanner model (the `numab` crate).
    Numab,
    /// The workingset refault model (`models::workingset`).
    Refault,
    /// An experiment on the host's own kernel (`hostkernel`).
    Kernel,
}

/// A parsed, validated scenario of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Scenario {
    /// `kind = "stats"`: a hierstat workload under flush policies.
    Stats(Box<StatsScenario>),
    /// `kind = "numab"`: the NUMA-balancing scanner under scanner versions.
    Numab {
        /// The parsed file.
        file: Box<::numab::ScenarioFile>,
        /// Its TOML text, kept for the results store.
        source: String,
    },
    /// `kind = "refault"`: the refault storm under flush policies.
    Refault {
        /// The parsed file.
        file: Box<RefaultScenario>,
        /// Its TOML text, kept for the results store.
        source: String,
    },
    /// `kind = "kernel"`: a `hostkernel` experiment on the host's kernel.
    Kernel {
        /// The parsed file.
        file: Box<KernelScenario>,
        /// Its TOML text, kept for the results store.
        source: String,
    },
}

/// The command-line overrides of a scenario's header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Policies to run instead of the file's (empty: keep the file's).
    pub policies: Vec<String>,
    /// Runs per policy.
    pub runs: Option<u32>,
    /// Base seed.
    pub seed: Option<u64>,
    /// Measured duration per run in milliseconds (stats scenarios; the
    /// other kinds set their sizes in their own tables and ignore it).
    pub duration_ms: Option<u64>,
}

impl Scenario {
    /// Parses and validates `text` (its `kind` picks the schema); `file`
    /// names it in errors.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the file, line and field of the first
    /// problem.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        /// Only the key that picks the schema; the rest is read below.
        #[derive(Deserialize)]
        struct Header {
            kind: Kind,
        }
        let Header { kind } = deserialize(file, text)?;
        ranges::check(file, text, ranges_of(kind))?;
        let sc = match kind {
            Kind::Stats => Scenario::Stats(Box::new(StatsScenario::parse(file, text)?)),
            Kind::Numab => Scenario::Numab {
                file: Box::new(numab::parse(file, text)?),
                source: text.to_string(),
            },
            Kind::Refault => Scenario::Refault {
                file: Box::new(RefaultScenario::parse(file, text)?),
                source: text.to_string(),
            },
            Kind::Kernel => Scenario::Kernel {
                file: Box::new(KernelScenario::parse(file, text)?),
                source: text.to_string(),
            },
        };
        sc.check_policies()
            .map_err(|message| ScenarioError::at(file, text, "policies", message))?;
        Ok(sc)
    }

    /// The policy names this scenario's runner accepts.
    pub fn known_policies(&self) -> Vec<String> {
        let mut known = match self {
            Scenario::Stats(s) => s
                .workload
                .map(crate::scenarios::known_policies)
                .unwrap_or_default(),
            Scenario::Numab { .. } => ::numab::ScannerVersion::ALL
                .iter()
                .map(|v| v.to_string())
                .collect(),
            Scenario::Refault { .. } => crate::scenarios::refault::known_policies(),
            Scenario::Kernel { .. } => vec![kernel::HOST_POLICY.to_string()],
        };
        // `[[policy]]` tables define more names.
        known.extend(self.user_policies().iter().map(|p| p.name.clone()));
        known
    }

    /// Checks that every policy is known to the runner and named once.
    ///
    /// # Errors
    /// The message naming the first unknown or repeated policy.
    pub fn check_policies(&self) -> Result<(), String> {
        let known = self.known_policies();
        let policies = self.policies();
        for (i, p) in policies.iter().enumerate() {
            if !known.iter().any(|k| k == p) {
                return Err(format!(
                    "unknown policy `{}` (known: {})",
                    crate::spec::escape(p),
                    known.join(", ")
                ));
            }
            if policies[..i].contains(p) {
                return Err(format!("policy `{p}` is listed twice"));
            }
        }
        Ok(())
    }

    /// Looks up an embedded scenario by name and parses it.
    pub fn builtin(name: &str) -> Option<Result<Scenario, ScenarioError>> {
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, text)| Scenario::parse(&format!("<builtin {n}>"), text))
    }

    /// The names of the embedded scenarios, in order.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        BUILTIN.iter().map(|(n, _)| *n)
    }

    /// Which runner executes it.
    pub fn kind(&self) -> Kind {
        match self {
            Scenario::Stats(_) => Kind::Stats,
            Scenario::Numab { .. } => Kind::Numab,
            Scenario::Refault { .. } => Kind::Refault,
            Scenario::Kernel { .. } => Kind::Kernel,
        }
    }

    /// The stats scenario, if it is one.
    pub fn as_stats(&self) -> Option<&StatsScenario> {
        match self {
            Scenario::Stats(s) => Some(s.as_ref()),
            _ => None,
        }
    }

    /// The stats scenario, if it is one, to adjust before a run.
    pub fn as_stats_mut(&mut self) -> Option<&mut StatsScenario> {
        match self {
            Scenario::Stats(s) => Some(s.as_mut()),
            _ => None,
        }
    }

    /// Scenario name.
    pub fn name(&self) -> &str {
        match self {
            Scenario::Stats(s) => &s.name,
            Scenario::Numab { file, .. } => &file.name,
            Scenario::Refault { file, .. } => &file.name,
            Scenario::Kernel { file, .. } => &file.name,
        }
    }

    /// One-line description.
    pub fn description(&self) -> &str {
        match self {
            Scenario::Stats(s) => &s.description,
            Scenario::Numab { file, .. } => &file.description,
            Scenario::Refault { file, .. } => &file.description,
            Scenario::Kernel { file, .. } => &file.description,
        }
    }

    /// Which seed thread it reproduces and the published figures (empty
    /// when the file does not say).
    pub fn reproduces(&self) -> &str {
        match self {
            Scenario::Stats(s) => &s.reproduces,
            Scenario::Numab { .. } => "",
            Scenario::Refault { file, .. } => &file.reproduces,
            Scenario::Kernel { file, .. } => &file.reproduces,
        }
    }

    /// Simulated or real.
    pub fn mode(&self) -> Mode {
        match self {
            Scenario::Stats(s) => s.mode,
            Scenario::Numab { .. } => Mode::Sim,
            Scenario::Refault { file, .. } => file.mode,
            Scenario::Kernel { .. } => Mode::Kernel,
        }
    }

    /// Policies to compare, the first is the baseline of %change.
    pub fn policies(&self) -> &[String] {
        match self {
            Scenario::Stats(s) => &s.policies,
            Scenario::Numab { file, .. } => &file.policies,
            Scenario::Refault { file, .. } => &file.policies,
            Scenario::Kernel { file, .. } => &file.policies,
        }
    }

    /// Runs per policy.
    pub fn runs(&self) -> u32 {
        match self {
            Scenario::Stats(s) => s.runs,
            Scenario::Numab { file, .. } => file.runs,
            Scenario::Refault { file, .. } => file.runs,
            Scenario::Kernel { file, .. } => file.runs,
        }
    }

    /// Base seed (run `i` uses `seed + i`).
    pub fn seed(&self) -> u64 {
        match self {
            Scenario::Stats(s) => s.seed,
            Scenario::Numab { file, .. } => file.seed,
            Scenario::Refault { file, .. } => file.seed,
            Scenario::Kernel { file, .. } => file.seed,
        }
    }

    /// What `mmlab list` says about its size: logical CPUs in sim mode,
    /// threads in real mode.
    pub fn parallelism(&self) -> u32 {
        match self {
            Scenario::Stats(s) => s.parallelism(),
            Scenario::Numab { file, .. } => file.numab.ncpus(),
            Scenario::Refault { file, .. } => file.refault.cpus,
            // One worker or reader process at a time.
            Scenario::Kernel { .. } => 1,
        }
    }

    /// The text stored with a run: the file's own text for the numab and
    /// refault kinds, the parsed stats scenario (with its overrides)
    /// written back as TOML for the stats kind.
    pub fn source(&self) -> String {
        match self {
            Scenario::Stats(s) => toml::to_string(s.as_ref()).unwrap_or_default(),
            Scenario::Numab { source, .. }
            | Scenario::Refault { source, .. }
            | Scenario::Kernel { source, .. } => source.clone(),
        }
    }

    /// The user policies (`[[policy]]` tables) it defines; none for numab
    /// and kernel scenarios.
    pub fn user_policies(&self) -> &[PolicySpec] {
        match self {
            Scenario::Stats(s) => &s.policy,
            Scenario::Numab { .. } | Scenario::Kernel { .. } => &[],
            Scenario::Refault { file, .. } => &file.policy,
        }
    }

    /// Adds user policies (from a policy file named on the command line or
    /// a sweep point) so that runs can name them; the stored text then
    /// holds their definitions. A policy already defined identically is
    /// left as it is.
    ///
    /// # Errors
    /// A message when the scenario runs no flush policies (numab, kernel) or a
    /// name is already defined differently.
    pub fn add_policies(&mut self, specs: &[PolicySpec]) -> Result<(), String> {
        let (list, source) = match self {
            Scenario::Stats(s) => (&mut s.policy, None),
            Scenario::Numab { file, .. } => {
                return Err(format!(
                    "scenario `{}` runs scanner versions, not flush policies",
                    file.name
                ))
            }
            Scenario::Kernel { .. } => {
                return Err(format!(
                    "scenario `{}` measures the host's kernel, not flush policies",
                    self.name()
                ))
            }
            Scenario::Refault { file, source } => (&mut file.policy, Some(source)),
        };
        let mut added = Vec::new();
        for s in specs {
            match list.iter().find(|o| o.name == s.name) {
                Some(o) if o == s => {}
                Some(_) => {
                    return Err(format!("policy `{}` is defined twice, differently", s.name))
                }
                None => {
                    list.push(s.clone());
                    added.push(s.clone());
                }
            }
        }
        if let (Some(src), false) = (source, added.is_empty()) {
            src.push_str("\n# [[policy]] tables added by mmlab\n");
            src.push_str(&PolicyFile { policy: added }.to_toml());
        }
        Ok(())
    }

    /// Applies command-line overrides.
    pub fn apply(&mut self, o: &Overrides) {
        let (policies, runs, seed) = match self {
            Scenario::Stats(s) => {
                if let Some(d) = o.duration_ms {
                    s.duration_ms = d;
                }
                (&mut s.policies, &mut s.runs, &mut s.seed)
            }
            Scenario::Numab { file, .. } => (&mut file.policies, &mut file.runs, &mut file.seed),
            Scenario::Refault { file, .. } => (&mut file.policies, &mut file.runs, &mut file.seed),
            Scenario::Kernel { file, .. } => (&mut file.policies, &mut file.runs, &mut file.seed),
        };
        if !o.policies.is_empty() {
            // A policy named twice runs once (the first place counts).
            let mut unique: Vec<String> = Vec::with_capacity(o.policies.len());
            for p in &o.policies {
                if !unique.contains(p) {
                    unique.push(p.clone());
                }
            }
            *policies = unique;
        }
        if let Some(r) = o.runs {
            *runs = r;
        }
        if let Some(s) = o.seed {
            *seed = s;
        }
    }

    /// Shrinks it for a smoke test (`mmlab --quick`). A simulated stats
    /// scenario runs once, a fifth as long with a fifth of the readers
    /// (the simulator is deterministic, so one run says what five do). A
    /// real-mode scenario keeps up to 3 runs (its claims compare medians,
    /// and one short run on a busy 2-vCPU host is mostly scheduling noise)
    /// and at least 100 ms, or its full duration when shorter. The other
    /// kinds run once and keep the sizes set in their own tables.
    pub fn shrink_for_smoke_test(&mut self) {
        let real = self.mode() == Mode::Real;
        let runs = if real { self.runs().min(3) } else { 1 };
        self.apply(&Overrides {
            runs: Some(runs),
            ..Overrides::default()
        });
        if let Scenario::Stats(s) = self {
            s.duration_ms = if real {
                (s.duration_ms / 2).max(100).min(s.duration_ms)
            } else {
                (s.duration_ms / 5).max(1)
            };
            if let Some(r) = &mut s.readers {
                r.count = (r.count / 5).max(1);
            }
        }
        if let Scenario::Kernel { file, .. } = self {
            file.shrink_for_smoke_test();
        }
    }
}

/// The documented ranges of a kind's numeric fields ([`ranges`]).
pub fn ranges_of(kind: Kind) -> &'static [ranges::Range] {
    match kind {
        Kind::Stats => ranges::STATS,
        Kind::Numab => ranges::NUMAB,
        Kind::Refault => ranges::REFAULT,
        Kind::Kernel => ranges::KERNEL,
    }
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), for messages
/// and tables that show user-supplied names.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Deserializes `text` into `T`, reporting the file, the 1-based line (from
/// toml's span) and the dotted field path (from `serde_path_to_error`) of
/// the first problem.
///
/// # Errors
/// A [`ScenarioError`] for a syntax error, a wrong type, an unknown or a
/// missing key.
pub fn deserialize<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
) -> Result<T, ScenarioError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        ScenarioError {
            file: file.to_string(),
            line: inner.span().map(|s| line_of(text, s.start)),
            field: if field == "." { String::new() } else { field },
            message: elide(&escape(inner.message().trim()), MESSAGE_MAX),
        }
    })
}

/// The most characters of an error message (a message quoting a huge
/// value shows its start).
pub const MESSAGE_MAX: usize = 300;

/// `s` cut to `max` characters, the rest elided with `…`.
pub fn elide(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// 1-based line of byte offset `pos` in `text`.
pub fn line_of(text: &str, pos: usize) -> usize {
    text[..pos.min(text.len())].matches('\n').count() + 1
}

/// Finds the line that defines the dotted `field` (`readers.period_ms`):
/// the key inside its `[table]` header, the header itself when the key is
/// absent, or `None` when neither appears.
pub fn locate(text: &str, field: &str) -> Option<usize> {
    let (table, key) = match field.rsplit_once('.') {
        Some((t, k)) => (Some(t), k),
        None => (None, field),
    };
    let mut current: Option<String> = None;
    let mut header_line = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(h) = line.strip_prefix('[') {
            let name = h
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            current = Some(name.to_string());
            if Some(name) == table {
                header_line = Some(i + 1);
            }
            continue;
        }
        if current.as_deref() != table {
            continue;
        }
        if let Some(rest) = line.strip_prefix(key) {
            let rest = rest.trim_start();
            if rest.starts_with('=') {
                return Some(i + 1);
            }
        }
    }
    header_line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_to_its_kind() {
        for name in Scenario::builtin_names() {
            let s = Scenario::builtin(name)
                .expect("listed")
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.name(), name);
            let want = if name.starts_with("numa") {
                Kind::Numab
            } else if name == "refault-storm" {
                Kind::Refault
            } else if name.ends_with("-kernel") {
                Kind::Kernel
            } else {
                Kind::Stats
            };
            assert_eq!(s.kind(), want, "{name}");
        }
    }

    #[test]
    fn every_numab_builtin_is_listed() {
        for (name, _) in ::numab::BUILTIN {
            assert!(Scenario::builtin_names().any(|n| n == name), "{name}");
        }
    }

    #[test]
    fn bad_kind_and_numab_errors_name_line_and_field() {
        let e = Scenario::parse("k.toml", "name = \"x\"\nkind = \"nope\"\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("kind", Some(2)));
        let (_, numa02) = ::numab::BUILTIN[3];
        let bad = numa02.replacen("policies = [", "policies = [\"v9\", ", 1);
        let e = Scenario::parse("n.toml", &bad).unwrap_err();
        assert_eq!(e.field, "policies");
        assert!(e.line.is_some());
        assert!(e.message.contains("v9"), "{}", e.message);
    }

    #[test]
    fn added_policies_are_in_the_stored_text() {
        let p = PolicySpec {
            threshold_size: Some("sqrt".into()),
            ..PolicySpec::new("sq", hierstat::Preset::Linux6_8)
        };
        for name in ["refault-storm", "stale-read"] {
            let mut s = Scenario::builtin(name).unwrap().unwrap();
            s.add_policies(std::slice::from_ref(&p)).unwrap();
            s.add_policies(std::slice::from_ref(&p)).unwrap();
            let again = Scenario::parse("stored", &s.source()).unwrap();
            assert_eq!(again.user_policies(), std::slice::from_ref(&p), "{name}");
            let other = PolicySpec::new("sq", hierstat::Preset::Hierstat);
            assert!(s.add_policies(&[other]).is_err());
        }
        let mut n = Scenario::builtin("numa02").unwrap().unwrap();
        assert!(n.add_policies(&[p]).is_err());
    }

    #[test]
    fn overrides_apply_to_every_kind() {
        for name in ["stale-read", "numa02", "refault-storm"] {
            let mut s = Scenario::builtin(name).unwrap().unwrap();
            s.apply(&Overrides {
                policies: vec!["p".into()],
                runs: Some(3),
                seed: Some(9),
                duration_ms: Some(5),
            });
            assert_eq!(
                (s.policies(), s.runs(), s.seed()),
                (&["p".to_string()][..], 3, 9)
            );
        }
    }
}
