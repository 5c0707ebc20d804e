//! User flush policies: the `[[policy]]` tables of a scenario file (or of a
//! policy file holding only such tables), and the one route from a policy
//! name to what a runner runs ([`resolve`]).
//!
//! ```toml
//! [[policy]]
//! name = "sqrt-threshold"      # how -p, reports and the store call it
//! base = "hierstat"            # a preset or built-in kernel policy whose knobs are overridden
//! description = "T = batch x isqrt(shards + 2)"
//! threshold_size = "sqrt"      # any knob below may be given; the rest is the base's
//! ```
//!
//! | key | values | what it sets |
//! |---|---|---|
//! | `threshold` | `none`, `global`, `per-group` | `hierstat::Policy::threshold` |
//! | `scheme` | `per-ancestor`, `folded` | `scheme` |
//! | `early_break` | `off`, `upstream`, `margin` | `early_break` |
//! | `threshold_size` | `batch-per-shard`, `sqrt`, `kernel-worst-case`, `N-per-shard`, `N` (fixed pages) | `threshold_size` |
//! | `pages_per_shard` | integer (same as `threshold_size = "N-per-shard"`) | `threshold_size` |
//! | `fixed_pages` | integer (same as `threshold_size = "N"`) | `threshold_size` |
//! | `strict_bound` | bool | `strict_bound` |
//! | `scope` | `root`, `subtree` | `scope` |
//! | `concurrency` | `skip`, `serialize`, `disjoint-parallel`, `wait-ongoing` | `concurrency` |
//! | `max_wait_ms` | integer, with `wait-ongoing` only (and required by it) | `Concurrency::WaitOngoing` |
//! | `lock_per_shard` | bool | `lock_per_shard` |
//! | `hot_path` | `none`, `sync`, `ratelimited`, `async` | `hot_path` |
//! | `batch` | pages, integer | `batch` |
//! | `period_ms` | integer | `period_ns` |
//! | `lines_per_level` | integer, 1–16 | the kernel path: [`UpdatePath::lines_per_level`](crate::kernel::UpdatePath::lines_per_level) |
//! | `global_fold` | `always`, `guarded` | [`UpdatePath::global_fold`](crate::kernel::UpdatePath::global_fold) |
//! | `stock_pages` | pages, integer | [`ChargePath::stock_pages`](crate::kernel::ChargePath::stock_pages) |
//! | `counter_layout` | `own-line`, `shared-line` | [`ChargePath::counter_layout`](crate::kernel::ChargePath::counter_layout) |
//! | `protection` | `every-charge`, `on-change` | [`ChargePath::protection`](crate::kernel::ChargePath::protection) |
//! | `read_tolerance` | `guarded`, `forced`, `clean`, `1%`, `64` (pages), `1%+64` | how the `stats` kind's readers (and the `refault` kind's refaults) read: [`crate::reader::ReadMode`] |
//!
//! The first fourteen are the engine's knobs (`hierstat::Policy`); the next
//! five are the kernel path the priced workloads charge the policy at
//! ([`crate::kernel`]); the last is how the policy's readers read
//! (a tolerance read, [`hierstat::HierStats::read_within`], in the `stats`
//! kind, where it overrides the scenario's `[readers] tolerance`, and in
//! the `refault` kind, where a refault reads the eviction lruvec's sizes). The values are their types' text forms; the knobs
//! are listed once, in `knobs!`'s invocation below, which makes the
//! table's fields, [`KNOBS`] and the overrides. The numeric knobs' bounds
//! are in [`crate::ranges::POLICY`], checked on the file and on every sweep
//! point ([`PolicySpec::with_knob`]).
//!
//! A policy is resolved once, when its file is parsed ([`validate`] makes
//! each table a [`UserPolicy`], the table with its knobs); the scenario
//! keeps the tables themselves, so the text stored with a run holds each
//! user policy's full definition and re-running that text runs the same
//! knobs. Runners and kernel mode get what a name selects from
//! [`resolve`]: a [`FlushPolicy`], the engine the name runs on (a preset,
//! a built-in kernel policy, a user policy or the pre-rstat baseline) and
//! the kernel path it is priced at.

use crate::error::ScenarioError;
use crate::kernel::{preset_path, Base, CounterLayout, Fold, KernelPath, KernelPolicy, Protection};
use crate::reader::ReadMode;
use crate::source::Source;
use hierstat::{
    Concurrency, EarlyBreak, FlushScope, HotPathFlush, Policy, Preset, ThresholdRule,
    ThresholdScheme, ThresholdSize,
};
use serde::{Deserialize, Serialize};

/// The name of the pre-rstat eager-atomic baseline (the `stats` kind's
/// runners): every update walks the ancestors with atomics, reads are exact.
pub const PRE_RSTAT: &str = "pre-rstat";

/// The engine a flush-policy name runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The hierstat engine under a kernel era's preset (or ours).
    Preset(Preset),
    /// The hierstat engine under a built-in kernel policy's knobs.
    Kernel(KernelPolicy),
    /// The hierstat engine under a user policy's knobs.
    User(Policy),
    /// The pre-rstat eager-atomic baseline.
    PreRstat,
}

/// What a flush-policy name selects, resolved from the name once: the
/// engine it runs on and the kernel path the priced workloads charge it at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushPolicy {
    /// The engine.
    pub engine: Engine,
    /// The kernel path (for the pre-rstat baseline: 5.13's charge path;
    /// its updates walk no threshold).
    pub path: KernelPath,
    /// How the policy's readers read, when its `[[policy]]` table says
    /// (`read_tolerance`); `None`: as the scenario says.
    pub reader: Option<ReadMode>,
}

impl FlushPolicy {
    /// A preset with its era's path.
    pub fn preset(p: Preset) -> FlushPolicy {
        FlushPolicy {
            engine: Engine::Preset(p),
            path: preset_path(p),
            reader: None,
        }
    }

    /// A built-in kernel policy.
    pub fn kernel(k: KernelPolicy) -> FlushPolicy {
        FlushPolicy {
            engine: Engine::Kernel(k),
            path: k.path(),
            reader: None,
        }
    }

    /// The pre-rstat baseline.
    pub fn pre_rstat() -> FlushPolicy {
        FlushPolicy {
            engine: Engine::PreRstat,
            path: preset_path(Preset::Linux5_13),
            reader: None,
        }
    }

    /// The engine's knobs; `None` for the pre-rstat baseline.
    pub fn knobs(self) -> Option<Policy> {
        match self.engine {
            Engine::Preset(p) => Some(p.policy()),
            Engine::Kernel(k) => Some(k.knobs()),
            Engine::User(p) => Some(p),
            Engine::PreRstat => None,
        }
    }

    /// Whether it stands for a kernel (an era preset or a built-in kernel
    /// policy), whose flushes zero the threshold counts they visit, rather
    /// than for the engine (hierstat and user policies), whose flushes
    /// subtract what they saw.
    pub fn is_kernel(self) -> bool {
        matches!(self.engine, Engine::Kernel(_))
            || matches!(self.engine, Engine::Preset(p) if p != Preset::Hierstat)
    }

    /// The built-in names: every preset, every built-in kernel policy,
    /// then [`PRE_RSTAT`].
    pub fn builtin_names() -> Vec<String> {
        Base::all()
            .map(|b| b.name().to_string())
            .chain(std::iter::once(PRE_RSTAT.to_string()))
            .collect()
    }
}

/// What each built-in flush policy is, in one line (distinct for every
/// name); empty for a name that is not built in.
pub fn describe(name: &str) -> &'static str {
    if let Ok(k) = name.parse::<Base>() {
        return match k {
            Base::Kernel(k) => k.description(),
            Base::Preset(p) => match p {
                Preset::Linux5_13 => "rstat for memcg: every memory.stat read flushes its subtree",
                Preset::Linux5_15 => {
                    "global threshold, root flushes, skip if a flush runs, sync refault flush"
                }
                Preset::Linux5_15Async => {
                    "5.15 with the refault flush queued to the periodic worker"
                }
                Preset::Linux5_15Ratelimited => {
                    "5.15.y: refault flush at most every 2 s (stats up to 4 s old)"
                }
                Preset::Linux6_8 => {
                    "per-group thresholds, subtree flushes, no skipping, ratelimited refault"
                }
                Preset::Linux6_17 => {
                    "6.8 plus early break, flush lock dropped per CPU, lockless update lists"
                }
                Preset::Hierstat => {
                    "folded O(1) thresholds, parallel disjoint flushes, guarded hot-path flush"
                }
            },
        };
    }
    if name == PRE_RSTAT {
        return "eager shared atomics up every ancestor (before rstat)";
    }
    ""
}

/// The one route from a policy name to what a runner runs: a preset's
/// name, a built-in kernel policy's, [`PRE_RSTAT`], or one of `user` (a
/// scenario's `[[policy]]` tables, already resolved when its file was
/// parsed). `None` for a name none of them has (a scenario checks its
/// names when it is parsed and when they change, so its runners never see
/// one).
pub fn resolve(user: &[UserPolicy], name: &str) -> Option<FlushPolicy> {
    if name == PRE_RSTAT {
        return Some(FlushPolicy::pre_rstat());
    }
    match name.parse::<Base>() {
        Ok(Base::Preset(p)) => return Some(FlushPolicy::preset(p)),
        Ok(Base::Kernel(k)) => return Some(FlushPolicy::kernel(k)),
        Err(_) => {}
    }
    user.iter()
        .find(|u| u.spec.name == name)
        .map(|u| FlushPolicy {
            engine: Engine::User(u.policy),
            path: u.path,
            reader: u.reader,
        })
}

/// A `[[policy]]` table and the knobs it resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserPolicy {
    /// The table as written (stored with a run).
    pub spec: PolicySpec,
    /// Its engine knobs: the base's with the table's overrides.
    pub policy: Policy,
    /// Its kernel path: the base's with the table's overrides.
    pub path: KernelPath,
    /// How its readers read (`read_tolerance`), if the table says.
    pub reader: Option<ReadMode>,
}

impl UserPolicy {
    /// Resolves `spec`.
    ///
    /// # Errors
    /// `(key, message)` for the first invalid key.
    pub fn new(spec: PolicySpec) -> Result<UserPolicy, (&'static str, String)> {
        spec.check_name()?;
        let Knobs {
            policy,
            path,
            reader,
        } = spec.resolve_all()?;
        Ok(UserPolicy {
            spec,
            policy,
            path,
            reader,
        })
    }

    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// What a policy's knobs set: the engine's and the kernel path's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knobs {
    /// The engine's knobs.
    pub policy: Policy,
    /// The kernel path.
    pub path: KernelPath,
    /// How the readers read, if set.
    pub reader: Option<ReadMode>,
}

/// Declares the knobs once: the table's optional fields, [`KNOBS`], and
/// how each overrides the base's [`Knobs`] (`$apply(knobs, value)`).
macro_rules! knobs {
    ($( $(#[$doc:meta])* $key:ident : $ty:ty => $apply:expr ),* $(,)?) => {
        /// One `[[policy]]` table: a name, a base preset and knob overrides.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct PolicySpec {
            /// The policy's name (not a preset's).
            pub name: String,
            /// The preset or built-in kernel policy whose knobs are the
            /// starting point.
            pub base: Base,
            /// What the proposal is and where it comes from.
            #[serde(default, skip_serializing_if = "String::is_empty")]
            pub description: String,
            $(
                $(#[$doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $key: Option<$ty>,
            )*
        }

        /// The knob keys of a `[[policy]]` table, in the order of the module
        /// table: what a `[sweep]` may vary.
        pub const KNOBS: &[&str] = &[$(stringify!($key)),*];

        impl PolicySpec {
            /// A policy named `name` equal to `base` (no overrides).
            pub fn new(name: &str, base: impl Into<Base>) -> PolicySpec {
                PolicySpec {
                    name: name.to_string(),
                    base: base.into(),
                    description: String::new(),
                    $($key: None,)*
                }
            }

            /// The base's knobs with each given override applied, in table
            /// order.
            fn apply_overrides(&self, k: &mut Knobs) {
                $(
                    if let Some(v) = self.$key.clone() {
                        let apply: fn(&mut Knobs, $ty) = $apply;
                        apply(k, v);
                    }
                )*
            }
        }
    };
}

knobs! {
    /// Threshold rule.
    threshold: ThresholdRule => |k, v| k.policy.threshold = v,
    /// Per-group accounting scheme.
    scheme: ThresholdScheme => |k, v| k.policy.scheme = v,
    /// Early break of the per-group walk.
    early_break: EarlyBreak => |k, v| k.policy.early_break = v,
    /// Threshold size (see the module table for the forms).
    threshold_size: ThresholdSize => |k, v| k.policy.threshold_size = v,
    /// Threshold size in pages per shard.
    pages_per_shard: u64 => |k, v| k.policy.threshold_size = ThresholdSize::PagesPerShard(v),
    /// Threshold size as a fixed number of pages.
    fixed_pages: u64 => |k, v| k.policy.threshold_size = ThresholdSize::Fixed(v),
    /// Whether reservations count towards the flush trigger.
    strict_bound: bool => |k, v| k.policy.strict_bound = v,
    /// Scope of threshold-guarded flushes.
    scope: FlushScope => |k, v| k.policy.scope = v,
    /// Concurrent flushers (a `hierstat::Concurrency` name; `wait-ongoing`
    /// takes its bound from `max_wait_ms`).
    concurrency: String => |_, _| {},
    /// With `concurrency = "wait-ongoing"`: the longest a guarded flush
    /// waits for a running one, in milliseconds.
    max_wait_ms: u32 => |_, _| {},
    /// Drop the flush lock between shards.
    lock_per_shard: bool => |k, v| k.policy.lock_per_shard = v,
    /// Hot-path flush rule.
    hot_path: HotPathFlush => |k, v| k.policy.hot_path = v,
    /// Per-shard residue batch in pages.
    batch: u32 => |k, v| k.policy.batch = v,
    /// Period of the background flusher in milliseconds.
    period_ms: u64 => |k, v| k.policy.period_ns = v.saturating_mul(1_000_000),
    /// Kernel path: distinct cache lines one level of the update walk loads.
    lines_per_level: u32 => |k, v| k.path.update.lines_per_level = v,
    /// Kernel path: a global count's fold, always or guarded.
    global_fold: Fold => |k, v| k.path.update.global_fold = v,
    /// Kernel path: pages the per-CPU charge stock holds.
    stock_pages: u32 => |k, v| k.path.charge.stock_pages = v,
    /// Kernel path: where a page counter's `usage` sits.
    counter_layout: CounterLayout => |k, v| k.path.charge.counter_layout = v,
    /// Kernel path: protection propagation per level and charge.
    protection: Protection => |k, v| k.path.charge.protection = v,
    /// How the `stats` kind's readers read (see [`ReadMode`]).
    read_tolerance: ReadMode => |k, v| k.reader = Some(v),
}

impl PolicySpec {
    /// The engine's knobs: the base's with the table's overrides applied.
    ///
    /// # Errors
    /// `(key, message)` for the first invalid key.
    pub fn resolve(&self) -> Result<Policy, (&'static str, String)> {
        self.resolve_all().map(|k| k.policy)
    }

    /// The engine's knobs and the kernel path: the base's with the table's
    /// overrides applied.
    ///
    /// # Errors
    /// `(key, message)` for the first invalid key.
    pub fn resolve_all(&self) -> Result<Knobs, (&'static str, String)> {
        let sizes = [
            self.threshold_size.is_some(),
            self.pages_per_shard.is_some(),
            self.fixed_pages.is_some(),
        ];
        if sizes.iter().filter(|b| **b).count() > 1 {
            let key = if self.fixed_pages.is_some() {
                "fixed_pages"
            } else {
                "pages_per_shard"
            };
            return Err((
                key,
                "give only one of threshold_size, pages_per_shard, fixed_pages".into(),
            ));
        }
        for (key, n) in [
            ("pages_per_shard", self.pages_per_shard),
            ("fixed_pages", self.fixed_pages),
        ] {
            if n == Some(0) {
                return Err((key, "must be at least 1".into()));
            }
        }
        let mut k = Knobs {
            policy: self.base.knobs(),
            path: self.base.path(),
            reader: None,
        };
        self.apply_overrides(&mut k);
        let p = &mut k.policy;
        match (&self.concurrency, self.max_wait_ms) {
            (Some(name), wait) => {
                p.concurrency = Concurrency::from_name(name, wait).map_err(|m| {
                    let key = if name == "wait-ongoing" || wait.is_none() {
                        "concurrency"
                    } else {
                        "max_wait_ms"
                    };
                    (key, m)
                })?;
                if name == "wait-ongoing" && wait.is_none() {
                    return Err((
                        "max_wait_ms",
                        "concurrency = \"wait-ongoing\" needs max_wait_ms".into(),
                    ));
                }
            }
            (None, Some(_)) if p.concurrency.max_wait_ms().is_none() => {
                return Err((
                    "max_wait_ms",
                    "only with concurrency = \"wait-ongoing\"".into(),
                ))
            }
            (None, Some(ms)) => p.concurrency = Concurrency::WaitOngoing { max_wait_ms: ms },
            (None, None) => {}
        }
        Ok(k)
    }

    /// Checks the name; `(key, message)` for a problem.
    fn check_name(&self) -> Result<(), (&'static str, String)> {
        let n = &self.name;
        if n.is_empty() || n.len() > 64 {
            return Err(("name", "must be 1 to 64 characters".into()));
        }
        if !n
            .chars()
            // `%`: a sweep point of `read_tolerance` is named `read_tolerance=1%`.
            .all(|c| c.is_ascii_alphanumeric() || "-_.+=,:%".contains(c))
        {
            return Err((
                "name",
                format!("`{n}` may use only letters, digits and - _ . + = , : %"),
            ));
        }
        if n.parse::<Base>().is_ok() || n == PRE_RSTAT {
            return Err(("name", format!("`{n}` is a built-in policy's name")));
        }
        Ok(())
    }

    /// A copy with `key` set to `value` (a sweep point), checked as if
    /// written in the file.
    ///
    /// # Errors
    /// A message for an unknown key or a value of the wrong type.
    pub fn with_knob(&self, key: &str, value: &toml::Value) -> Result<PolicySpec, String> {
        if !KNOBS.contains(&key) {
            return Err(format!(
                "`{key}` is not a policy knob (knobs: {})",
                KNOBS.join(", ")
            ));
        }
        crate::ranges::check_value(&[&crate::ranges::POLICY], &format!("policy.{key}"), value)?;
        let mut table = toml::Value::try_from(self).map_err(|e| e.to_string())?;
        let t = table.as_table_mut().ok_or("policy is not a table")?;
        if matches!(key, "threshold_size" | "pages_per_shard" | "fixed_pages") {
            for k in ["threshold_size", "pages_per_shard", "fixed_pages"] {
                t.remove(k);
            }
        }
        t.insert(key.to_string(), value.clone());
        let spec: PolicySpec = table
            .try_into()
            .map_err(|e: toml::de::Error| format!("{key}: {}", e.message().trim()))?;
        spec.resolve().map_err(|(k, m)| format!("{k}: {m}"))?;
        Ok(spec)
    }
}

/// The `[[policy]]` tables of a file, as written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyTables {
    #[serde(default)]
    policy: Vec<PolicySpec>,
}

/// The file holding only `[[policy]]` tables (`scenarios/policies/*.toml`),
/// resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyFile {
    /// The policies, in file order.
    pub policy: Vec<UserPolicy>,
}

impl PolicyFile {
    /// Parses, validates and resolves a policy file; `file` names it in
    /// errors.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem.
    pub fn parse(file: &str, text: &str) -> Result<PolicyFile, ScenarioError> {
        let src = Source::new(file, text);
        crate::ranges::check(&src, &[&crate::ranges::POLICY])?;
        let f: PolicyTables = src.deserialize()?;
        if f.policy.is_empty() {
            return Err(src.error(
                "policy",
                "a policy file needs at least one [[policy]] table",
            ));
        }
        Ok(PolicyFile {
            policy: validate(&src, f.policy)?,
        })
    }

    /// The policies as TOML `[[policy]]` tables.
    pub fn to_toml(&self) -> String {
        to_toml(&self.policy)
    }
}

/// `policies` as TOML `[[policy]]` tables (each table as written).
pub fn to_toml(policies: &[UserPolicy]) -> String {
    toml::to_string(&PolicyTables {
        policy: policies.iter().map(|u| u.spec.clone()).collect(),
    })
    .unwrap_or_default()
}

/// Validates and resolves the `[[policy]]` tables of `src`: names
/// (unique, not a built-in's), bases, and every knob; errors name
/// `policy[i].key` and its line.
///
/// # Errors
/// A [`ScenarioError`] for the first problem.
pub fn validate(
    src: &Source<'_>,
    specs: Vec<PolicySpec>,
) -> Result<Vec<UserPolicy>, ScenarioError> {
    let mut out: Vec<UserPolicy> = Vec::with_capacity(specs.len());
    for (i, s) in specs.into_iter().enumerate() {
        let err = |key: &str, message: String| src.error(&format!("policy[{i}].{key}"), message);
        if out.iter().any(|o| o.spec.name == s.name) {
            return Err(err("name", format!("`{}` is defined twice", s.name)));
        }
        out.push(UserPolicy::new(s).map_err(|(k, m)| err(k, m))?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ChargePath;

    const FILE: &str = r#"
[[policy]]
name = "sqrt"
base = "hierstat"
threshold_size = "sqrt"

[[policy]]
name = "skip50"
base = "linux-6.8"
concurrency = "skip"
period_ms = 50
"#;

    #[test]
    fn parses_and_resolves_overrides_on_the_base() {
        let f = PolicyFile::parse("p.toml", FILE).unwrap();
        let a = f.policy[0].policy;
        let mut want = Preset::Hierstat.policy();
        want.threshold_size = ThresholdSize::BatchSqrtShards;
        assert_eq!(a, want);
        let b = f.policy[1].policy;
        assert_eq!(b.concurrency, Concurrency::Skip);
        assert_eq!(b.period_ns, 50_000_000);
        assert_eq!(b.batch, Preset::Linux6_8.policy().batch);
        // The TOML written back parses to the same definitions.
        let again = PolicyFile::parse("again", &f.to_toml()).unwrap();
        assert_eq!(again, f);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let bad = FILE.replace("period_ms = 50", "period_ms = 0");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.field.as_str(), e.line),
            ("p.toml", "policy[1].period_ms", Some(11))
        );
        let bad = FILE.replace("\"skip\"", "\"sometimes\"");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("policy[1].concurrency", Some(10))
        );
        let bad = FILE.replace("\"sqrt\"\n", "\"cube\"\n");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("policy[0].threshold_size", Some(5))
        );
        let bad = FILE.replace("base = \"linux-6.8\"", "base = \"linux-9\"");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("policy[1].base", Some(9)));
        let bad = FILE.replace("name = \"skip50\"", "name = \"sqrt\"");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("policy[1].name", Some(8)));
        let bad = FILE.replace("name = \"skip50\"", "name = \"linux-6.8\"");
        assert!(PolicyFile::parse("p.toml", &bad).is_err());
        let bad = FILE.replace("period_ms = 50", "perod_ms = 50");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert!(e.field.starts_with("policy[1]"), "{}", e.field);
        assert_eq!(e.line, Some(11));
    }

    #[test]
    fn the_module_table_lists_every_knob_in_order() {
        let doc = include_str!("policy.rs");
        let keys: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("//! | `"))
            .filter_map(|l| l.split('`').next())
            .collect();
        assert_eq!(keys, KNOBS);
    }

    #[test]
    fn names_resolve_to_presets_users_and_the_baseline() {
        let f = PolicyFile::parse("p.toml", FILE).unwrap();
        assert_eq!(
            resolve(&f.policy, "linux-6.8"),
            Some(FlushPolicy::preset(Preset::Linux6_8))
        );
        assert_eq!(
            resolve(&f.policy, "per-memcg-v2"),
            Some(FlushPolicy::kernel(KernelPolicy::PerMemcgV2))
        );
        assert_eq!(
            resolve(&f.policy, PRE_RSTAT),
            Some(FlushPolicy::pre_rstat())
        );
        let u = resolve(&f.policy, "skip50").unwrap();
        assert_eq!(u.engine, Engine::User(f.policy[1].policy));
        assert_eq!(u.path, preset_path(Preset::Linux6_8), "the base's path");
        assert!(!u.is_kernel() && FlushPolicy::preset(Preset::Linux6_8).is_kernel());
        assert!(!FlushPolicy::preset(Preset::Hierstat).is_kernel());
        assert_eq!(resolve(&f.policy, "nope"), None);
        assert_eq!(FlushPolicy::pre_rstat().knobs(), None);
        for n in FlushPolicy::builtin_names() {
            assert!(!describe(&n).is_empty(), "{n}");
            assert!(resolve(&[], &n).is_some(), "{n}");
        }
    }

    #[test]
    fn kernel_path_knobs_override_the_base_path() {
        let text = r#"
[[policy]]
name = "6.0-rc1"
base = "next-20231009"
stock_pages = 32
counter_layout = "shared-line"
protection = "every-charge"

[[policy]]
name = "v2-on-one-line"
base = "per-memcg-v2"
lines_per_level = 1
"#;
        let f = PolicyFile::parse("p.toml", text).unwrap();
        let a = &f.policy[0];
        assert_eq!(a.policy, KernelPolicy::Next20231009.knobs());
        assert_eq!(
            a.path.charge,
            ChargePath {
                stock_pages: 32,
                counter_layout: CounterLayout::SharedLine,
                protection: Protection::EveryCharge,
            }
        );
        assert_eq!(
            f.policy[1].path,
            KernelPolicy::PerMemcgMerged.path(),
            "v2 with one line a level is the merged layout"
        );
        let bad = text.replace("lines_per_level = 1", "lines_per_level = 0");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert_eq!(e.field, "policy[1].lines_per_level");
        let bad = text.replace("stock_pages = 32", "stock_pages = 0");
        assert!(PolicyFile::parse("p.toml", &bad).is_err());
        let bad = text.replace("\"shared-line\"", "\"sideways\"");
        let e = PolicyFile::parse("p.toml", &bad).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("policy[0].counter_layout", Some(6))
        );
        let bad = text.replace("name = \"6.0-rc1\"", "name = \"per-memcg-merged\"");
        assert!(
            PolicyFile::parse("p.toml", &bad).is_err(),
            "a built-in's name"
        );
    }

    #[test]
    fn a_read_tolerance_reaches_the_resolved_policy() {
        let text =
            "[[policy]]\nname = \"within-1pct\"\nbase = \"hierstat\"\nread_tolerance = \"1%\"\n";
        let f = PolicyFile::parse("p.toml", text).unwrap();
        let r = resolve(&f.policy, "within-1pct").unwrap();
        assert_eq!(
            r.reader,
            Some(ReadMode::Within {
                ppm: 10_000,
                pages: 0
            })
        );
        assert_eq!(r.engine, Engine::User(Preset::Hierstat.policy()));
        assert_eq!(FlushPolicy::preset(Preset::Hierstat).reader, None);
        let again = PolicyFile::parse("again", &f.to_toml()).unwrap();
        assert_eq!(again, f);
        let e = PolicyFile::parse("p.toml", &text.replace("\"1%\"", "\"often\"")).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("policy[0].read_tolerance", Some(4))
        );
        let p = PolicySpec::new("x", Preset::Hierstat)
            .with_knob("read_tolerance", &toml::Value::String("clean".into()))
            .unwrap();
        assert_eq!(p.read_tolerance, Some(ReadMode::Clean));
    }

    #[test]
    fn knobs_are_set_and_checked() {
        let base = PolicySpec::new("x", Preset::Hierstat);
        let p = base
            .with_knob("pages_per_shard", &toml::Value::Integer(16))
            .unwrap();
        assert_eq!(
            p.resolve().unwrap().threshold_size,
            ThresholdSize::PagesPerShard(16)
        );
        // A size knob replaces another size knob.
        let q = p
            .with_knob("threshold_size", &toml::Value::String("sqrt".into()))
            .unwrap();
        assert_eq!(q.pages_per_shard, None);
        assert!(base.with_knob("batch", &toml::Value::Integer(0)).is_err());
        // The bounded wait: its knob only with its rule, and the rule only
        // with its knob.
        let w = base
            .with_knob("concurrency", &toml::Value::String("serialize".into()))
            .unwrap();
        assert!(w
            .with_knob("max_wait_ms", &toml::Value::Integer(50))
            .is_err());
        assert!(w
            .with_knob("concurrency", &toml::Value::String("wait-ongoing".into()))
            .is_err());
        let mut w = w;
        w.concurrency = Some("wait-ongoing".into());
        w.max_wait_ms = Some(50);
        assert_eq!(
            w.resolve().unwrap().concurrency,
            Concurrency::WaitOngoing { max_wait_ms: 50 }
        );
        let w0 = w
            .with_knob("max_wait_ms", &toml::Value::Integer(0))
            .unwrap();
        assert_eq!(
            w0.resolve().unwrap().concurrency,
            Concurrency::WaitOngoing { max_wait_ms: 0 }
        );
        assert!(base
            .with_knob("hot_path", &toml::Value::String("later".into()))
            .is_err());
        assert!(base.with_knob("colour", &toml::Value::Integer(1)).is_err());
    }
}
