//! User flush policies: the `[[policy]]` tables of a scenario file (or of a
//! policy file holding only such tables), and the one route from a policy
//! name to what a runner runs ([`resolve`]).
//!
//! ```toml
//! [[policy]]
//! name = "sqrt-threshold"      # how -p, reports and the store call it
//! base = "hierstat"            # the preset whose knobs are overridden
//! description = "T = batch x isqrt(shards + 2)"
//! threshold_size = "sqrt"      # any knob below may be given; the rest is the base's
//! ```
//!
//! | key | values | `hierstat::Policy` field |
//! |---|---|---|
//! | `threshold` | `none`, `global`, `per-group` | `threshold` |
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
//!
//! The values are hierstat's own types in their text forms (its `serde`
//! feature); the knobs are listed once, in `knobs!`'s invocation below,
//! which makes the table's fields, [`KNOBS`] and the overrides. The numeric
//! knobs' bounds are in [`crate::ranges::POLICY`], checked on the file and
//! on every sweep point ([`PolicySpec::with_knob`]).
//!
//! A policy is resolved once, when its file is parsed ([`validate`] makes
//! each table a [`UserPolicy`], the table with its knobs); the scenario
//! keeps the tables themselves, so the text stored with a run holds each
//! user policy's full definition and re-running that text runs the same
//! knobs. Runners and kernel mode get what a name selects from
//! [`resolve`]: a preset, a user policy or the pre-rstat baseline, typed.

use crate::error::ScenarioError;
use crate::source::Source;
use hierstat::{
    Concurrency, EarlyBreak, FlushScope, HotPathFlush, Policy, Preset, ThresholdRule,
    ThresholdScheme, ThresholdSize,
};
use serde::{Deserialize, Serialize};

/// The name of the pre-rstat eager-atomic baseline (the `stats` kind's
/// runners): every update walks the ancestors with atomics, reads are exact.
pub const PRE_RSTAT: &str = "pre-rstat";

/// What a flush-policy name selects, resolved from the name once: the
/// engine under a preset or a user policy's knobs, or the pre-rstat
/// baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// The hierstat engine under a kernel era's preset (or ours).
    Preset(Preset),
    /// The hierstat engine under a user policy's knobs.
    User(Policy),
    /// The pre-rstat eager-atomic baseline.
    PreRstat,
}

impl FlushPolicy {
    /// The engine's knobs; `None` for the pre-rstat baseline.
    pub fn knobs(self) -> Option<Policy> {
        match self {
            FlushPolicy::Preset(p) => Some(p.policy()),
            FlushPolicy::User(p) => Some(p),
            FlushPolicy::PreRstat => None,
        }
    }

    /// The built-in names: every preset, then [`PRE_RSTAT`].
    pub fn builtin_names() -> Vec<String> {
        Preset::ALL
            .iter()
            .map(|p| p.name().to_string())
            .chain(std::iter::once(PRE_RSTAT.to_string()))
            .collect()
    }
}

/// The one route from a policy name to what a runner runs: a preset's
/// name, [`PRE_RSTAT`], or one of `user` (a scenario's `[[policy]]`
/// tables, already resolved when its file was parsed). `None` for a name
/// none of them has (a scenario checks its names when it is parsed and
/// when they change, so its runners never see one).
pub fn resolve(user: &[UserPolicy], name: &str) -> Option<FlushPolicy> {
    if name == PRE_RSTAT {
        return Some(FlushPolicy::PreRstat);
    }
    if let Ok(p) = name.parse::<Preset>() {
        return Some(FlushPolicy::Preset(p));
    }
    user.iter()
        .find(|u| u.spec.name == name)
        .map(|u| FlushPolicy::User(u.policy))
}

/// A `[[policy]]` table and the knobs it resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserPolicy {
    /// The table as written (stored with a run).
    pub spec: PolicySpec,
    /// Its knobs: the base preset's with the table's overrides.
    pub policy: Policy,
}

impl UserPolicy {
    /// Resolves `spec`.
    ///
    /// # Errors
    /// `(key, message)` for the first invalid key.
    pub fn new(spec: PolicySpec) -> Result<UserPolicy, (&'static str, String)> {
        spec.check_name()?;
        let policy = spec.resolve()?;
        Ok(UserPolicy { spec, policy })
    }

    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// Declares the knobs once: the table's optional fields, [`KNOBS`], and
/// how each overrides the base's `Policy` (`$apply(policy, value)`).
macro_rules! knobs {
    ($( $(#[$doc:meta])* $key:ident : $ty:ty => $apply:expr ),* $(,)?) => {
        /// One `[[policy]]` table: a name, a base preset and knob overrides.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct PolicySpec {
            /// The policy's name (not a preset's).
            pub name: String,
            /// The preset whose knobs are the starting point.
            pub base: Preset,
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
            pub fn new(name: &str, base: Preset) -> PolicySpec {
                PolicySpec {
                    name: name.to_string(),
                    base,
                    description: String::new(),
                    $($key: None,)*
                }
            }

            /// The base's knobs with each given override applied, in table
            /// order.
            fn apply_overrides(&self, p: &mut Policy) {
                $(
                    if let Some(v) = self.$key.clone() {
                        let apply: fn(&mut Policy, $ty) = $apply;
                        apply(p, v);
                    }
                )*
            }
        }
    };
}

knobs! {
    /// Threshold rule.
    threshold: ThresholdRule => |p, v| p.threshold = v,
    /// Per-group accounting scheme.
    scheme: ThresholdScheme => |p, v| p.scheme = v,
    /// Early break of the per-group walk.
    early_break: EarlyBreak => |p, v| p.early_break = v,
    /// Threshold size (see the module table for the forms).
    threshold_size: ThresholdSize => |p, v| p.threshold_size = v,
    /// Threshold size in pages per shard.
    pages_per_shard: u64 => |p, v| p.threshold_size = ThresholdSize::PagesPerShard(v),
    /// Threshold size as a fixed number of pages.
    fixed_pages: u64 => |p, v| p.threshold_size = ThresholdSize::Fixed(v),
    /// Whether reservations count towards the flush trigger.
    strict_bound: bool => |p, v| p.strict_bound = v,
    /// Scope of threshold-guarded flushes.
    scope: FlushScope => |p, v| p.scope = v,
    /// Concurrent flushers (a `hierstat::Concurrency` name; `wait-ongoing`
    /// takes its bound from `max_wait_ms`).
    concurrency: String => |_, _| {},
    /// With `concurrency = "wait-ongoing"`: the longest a guarded flush
    /// waits for a running one, in milliseconds.
    max_wait_ms: u32 => |_, _| {},
    /// Drop the flush lock between shards.
    lock_per_shard: bool => |p, v| p.lock_per_shard = v,
    /// Hot-path flush rule.
    hot_path: HotPathFlush => |p, v| p.hot_path = v,
    /// Per-shard residue batch in pages.
    batch: u32 => |p, v| p.batch = v,
    /// Period of the background flusher in milliseconds.
    period_ms: u64 => |p, v| p.period_ns = v.saturating_mul(1_000_000),
}

impl PolicySpec {
    /// The knobs: the base preset's with the table's overrides applied.
    ///
    /// # Errors
    /// `(key, message)` for the first invalid key.
    pub fn resolve(&self) -> Result<Policy, (&'static str, String)> {
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
        let mut p = self.base.policy();
        self.apply_overrides(&mut p);
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
        Ok(p)
    }

    /// Checks the name; `(key, message)` for a problem.
    fn check_name(&self) -> Result<(), (&'static str, String)> {
        let n = &self.name;
        if n.is_empty() || n.len() > 64 {
            return Err(("name", "must be 1 to 64 characters".into()));
        }
        if !n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+=,:".contains(c))
        {
            return Err((
                "name",
                format!("`{n}` may use only letters, digits and - _ . + = , :"),
            ));
        }
        if n.parse::<Preset>().is_ok() || n == PRE_RSTAT {
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
            Some(FlushPolicy::Preset(Preset::Linux6_8))
        );
        assert_eq!(resolve(&f.policy, PRE_RSTAT), Some(FlushPolicy::PreRstat));
        assert_eq!(
            resolve(&f.policy, "skip50"),
            Some(FlushPolicy::User(f.policy[1].policy))
        );
        assert_eq!(resolve(&f.policy, "nope"), None);
        assert_eq!(FlushPolicy::PreRstat.knobs(), None);
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
