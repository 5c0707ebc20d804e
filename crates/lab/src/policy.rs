//! User flush policies: the `[[policy]]` tables of a scenario file (or of a
//! policy file holding only such tables).
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
//! The numeric knobs' bounds are in [`crate::ranges::POLICY`], checked on
//! the file and on every sweep point ([`PolicySpec::with_knob`]).
//!
//! A policy is resolved once, at parse time ([`PolicySpec::resolve`]); the
//! scenario keeps the tables themselves, so the text stored with a run
//! holds each user policy's full definition and re-running that text runs
//! the same knobs.

use crate::error::ScenarioError;
use crate::source::Source;
use hierstat::{
    Concurrency, EarlyBreak, FlushScope, HotPathFlush, Policy, Preset, ThresholdRule,
    ThresholdScheme, ThresholdSize,
};
use serde::{Deserialize, Serialize};

/// Threshold rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleName {
    /// [`ThresholdRule::None`].
    None,
    /// [`ThresholdRule::Global`].
    Global,
    /// [`ThresholdRule::PerGroup`].
    PerGroup,
}

/// Accounting scheme names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchemeName {
    /// [`ThresholdScheme::PerAncestor`].
    PerAncestor,
    /// [`ThresholdScheme::Folded`].
    Folded,
}

/// Early-break names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakName {
    /// [`EarlyBreak::Off`].
    Off,
    /// [`EarlyBreak::Upstream`].
    Upstream,
    /// [`EarlyBreak::Margin`].
    Margin,
}

/// Flush scope names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeName {
    /// [`FlushScope::Root`].
    Root,
    /// [`FlushScope::Subtree`].
    Subtree,
}

/// Concurrency names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConcurrencyName {
    /// [`Concurrency::Skip`].
    Skip,
    /// [`Concurrency::Serialize`].
    Serialize,
    /// [`Concurrency::DisjointParallel`].
    DisjointParallel,
    /// [`Concurrency::WaitOngoing`] (with `max_wait_ms`).
    WaitOngoing,
}

/// Hot-path flush names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HotPathName {
    /// [`HotPathFlush::None`].
    None,
    /// [`HotPathFlush::Sync`].
    Sync,
    /// [`HotPathFlush::Ratelimited`].
    Ratelimited,
    /// [`HotPathFlush::Async`].
    Async,
}

/// One `[[policy]]` table: a name, a base preset and knob overrides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// The policy's name (not a preset's).
    pub name: String,
    /// The preset whose knobs are the starting point.
    pub base: String,
    /// What the proposal is and where it comes from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Threshold rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<RuleName>,
    /// Per-group accounting scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<SchemeName>,
    /// Early break of the per-group walk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_break: Option<BreakName>,
    /// Threshold size (see the module table for the forms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_size: Option<String>,
    /// Threshold size in pages per shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_per_shard: Option<u64>,
    /// Threshold size as a fixed number of pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_pages: Option<u64>,
    /// Whether reservations count towards the flush trigger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_bound: Option<bool>,
    /// Scope of threshold-guarded flushes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeName>,
    /// Concurrent flushers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<ConcurrencyName>,
    /// With `concurrency = "wait-ongoing"`: the longest a guarded flush
    /// waits for a running one, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<u32>,
    /// Drop the flush lock between shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_per_shard: Option<bool>,
    /// Hot-path flush rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_path: Option<HotPathName>,
    /// Per-shard residue batch in pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// Period of the background flusher in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_ms: Option<u64>,
}

/// The knob keys of a `[[policy]]` table, in the order of the module table:
/// what a `[sweep]` may vary.
pub const KNOBS: &[&str] = &[
    "threshold",
    "scheme",
    "early_break",
    "threshold_size",
    "pages_per_shard",
    "fixed_pages",
    "strict_bound",
    "scope",
    "concurrency",
    "max_wait_ms",
    "lock_per_shard",
    "hot_path",
    "batch",
    "period_ms",
];

/// Parses a `threshold_size` string.
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_threshold_size(s: &str) -> Result<ThresholdSize, String> {
    let bad = || {
        format!(
            "`{s}` is not a threshold size (batch-per-shard, sqrt, kernel-worst-case, \
             N-per-shard, or N fixed pages, N >= 1)"
        )
    };
    let n = |t: &str| match t.trim().parse::<u64>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(bad()),
    };
    match s.trim() {
        "batch-per-shard" => Ok(ThresholdSize::BatchPerShard),
        "sqrt" | "batch-sqrt-shards" => Ok(ThresholdSize::BatchSqrtShards),
        "kernel-worst-case" => Ok(ThresholdSize::KernelWorstCase),
        t => match t.strip_suffix("-per-shard") {
            Some(p) => n(p).map(ThresholdSize::PagesPerShard),
            None => n(t).map(ThresholdSize::Fixed),
        },
    }
}

/// The `threshold_size` string of a size (inverse of
/// [`parse_threshold_size`]).
pub fn threshold_size_str(s: ThresholdSize) -> String {
    match s {
        ThresholdSize::BatchPerShard => "batch-per-shard".into(),
        ThresholdSize::BatchSqrtShards => "sqrt".into(),
        ThresholdSize::KernelWorstCase => "kernel-worst-case".into(),
        ThresholdSize::PagesPerShard(p) => format!("{p}-per-shard"),
        ThresholdSize::Fixed(t) => t.to_string(),
        // A size this version of the spec cannot name (the enum is
        // non-exhaustive): its debug form.
        other => format!("{other:?}"),
    }
}

impl PolicySpec {
    /// A policy named `name` equal to `base` (no overrides).
    pub fn new(name: &str, base: Preset) -> PolicySpec {
        PolicySpec {
            name: name.to_string(),
            base: base.name().to_string(),
            description: String::new(),
            threshold: None,
            scheme: None,
            early_break: None,
            threshold_size: None,
            pages_per_shard: None,
            fixed_pages: None,
            strict_bound: None,
            scope: None,
            concurrency: None,
            max_wait_ms: None,
            lock_per_shard: None,
            hot_path: None,
            batch: None,
            period_ms: None,
        }
    }

    /// The knobs: the base preset's with the table's overrides applied.
    ///
    /// # Errors
    /// `(key, message)` for the first invalid key.
    pub fn resolve(&self) -> Result<Policy, (&'static str, String)> {
        let base: Preset = self.base.parse().map_err(|e: hierstat::UnknownPreset| {
            ("base", e.to_string().replacen("policy", "preset", 1))
        })?;
        let mut p = base.policy();
        if let Some(v) = self.threshold {
            p.threshold = match v {
                RuleName::None => ThresholdRule::None,
                RuleName::Global => ThresholdRule::Global,
                RuleName::PerGroup => ThresholdRule::PerGroup,
            };
        }
        if let Some(v) = self.scheme {
            p.scheme = match v {
                SchemeName::PerAncestor => ThresholdScheme::PerAncestor,
                SchemeName::Folded => ThresholdScheme::Folded,
            };
        }
        if let Some(v) = self.early_break {
            p.early_break = match v {
                BreakName::Off => EarlyBreak::Off,
                BreakName::Upstream => EarlyBreak::Upstream,
                BreakName::Margin => EarlyBreak::Margin,
            };
        }
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
        if let Some(s) = &self.threshold_size {
            p.threshold_size = parse_threshold_size(s).map_err(|m| ("threshold_size", m))?;
        }
        if let Some(n) = self.pages_per_shard {
            p.threshold_size = ThresholdSize::PagesPerShard(n);
        }
        if let Some(n) = self.fixed_pages {
            p.threshold_size = ThresholdSize::Fixed(n);
        }
        if let Some(v) = self.strict_bound {
            p.strict_bound = v;
        }
        if let Some(v) = self.scope {
            p.scope = match v {
                ScopeName::Root => FlushScope::Root,
                ScopeName::Subtree => FlushScope::Subtree,
            };
        }
        if let Some(v) = self.concurrency {
            p.concurrency = match v {
                ConcurrencyName::Skip => Concurrency::Skip,
                ConcurrencyName::Serialize => Concurrency::Serialize,
                ConcurrencyName::DisjointParallel => Concurrency::DisjointParallel,
                ConcurrencyName::WaitOngoing => match self.max_wait_ms {
                    Some(max_wait_ms) => Concurrency::WaitOngoing { max_wait_ms },
                    None => {
                        return Err((
                            "max_wait_ms",
                            "concurrency = \"wait-ongoing\" needs max_wait_ms".into(),
                        ))
                    }
                },
            };
        }
        if self.max_wait_ms.is_some() && !matches!(p.concurrency, Concurrency::WaitOngoing { .. }) {
            return Err((
                "max_wait_ms",
                "only with concurrency = \"wait-ongoing\"".into(),
            ));
        }
        if let Some(v) = self.lock_per_shard {
            p.lock_per_shard = v;
        }
        if let Some(v) = self.hot_path {
            p.hot_path = match v {
                HotPathName::None => HotPathFlush::None,
                HotPathName::Sync => HotPathFlush::Sync,
                HotPathName::Ratelimited => HotPathFlush::Ratelimited,
                HotPathName::Async => HotPathFlush::Async,
            };
        }
        if let Some(b) = self.batch {
            p.batch = b;
        }
        if let Some(ms) = self.period_ms {
            p.period_ns = ms * 1_000_000;
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
        if n.parse::<Preset>().is_ok() || n == "pre-rstat" {
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

/// The file holding only `[[policy]]` tables (`scenarios/policies/*.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// The policies, in file order.
    #[serde(default)]
    pub policy: Vec<PolicySpec>,
}

impl PolicyFile {
    /// Parses and validates a policy file; `file` names it in errors.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem.
    pub fn parse(file: &str, text: &str) -> Result<PolicyFile, ScenarioError> {
        let src = Source::new(file, text);
        crate::ranges::check(&src, &[&crate::ranges::POLICY])?;
        let f: PolicyFile = src.deserialize()?;
        validate(&src, &f.policy)?;
        if f.policy.is_empty() {
            return Err(src.error(
                "policy",
                "a policy file needs at least one [[policy]] table",
            ));
        }
        Ok(f)
    }

    /// The policies as TOML `[[policy]]` tables.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

/// Validates the `[[policy]]` tables of `src`: names (unique, not a
/// preset's), bases, and every knob; errors name `policy[i].key` and its
/// line.
///
/// # Errors
/// A [`ScenarioError`] for the first problem.
pub fn validate(src: &Source<'_>, specs: &[PolicySpec]) -> Result<(), ScenarioError> {
    for (i, s) in specs.iter().enumerate() {
        let err = |key: &str, message: String| src.error(&format!("policy[{i}].{key}"), message);
        s.check_name().map_err(|(k, m)| err(k, m))?;
        if specs[..i].iter().any(|o| o.name == s.name) {
            return Err(err("name", format!("`{}` is defined twice", s.name)));
        }
        s.resolve().map_err(|(k, m)| err(k, m))?;
    }
    Ok(())
}

/// Resolves `name` among `specs`.
pub fn find<'a>(specs: &'a [PolicySpec], name: &str) -> Option<&'a PolicySpec> {
    specs.iter().find(|s| s.name == name)
}

/// The knobs of the policy called `name`: a preset, or one of `specs`.
pub fn knobs_of(specs: &[PolicySpec], name: &str) -> Option<Policy> {
    if let Ok(p) = name.parse::<Preset>() {
        return Some(p.policy());
    }
    find(specs, name).and_then(|s| s.resolve().ok())
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
        let a = f.policy[0].resolve().unwrap();
        let mut want = Preset::Hierstat.policy();
        want.threshold_size = ThresholdSize::BatchSqrtShards;
        assert_eq!(a, want);
        let b = f.policy[1].resolve().unwrap();
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
    fn threshold_sizes_round_trip() {
        for s in [
            ThresholdSize::BatchPerShard,
            ThresholdSize::BatchSqrtShards,
            ThresholdSize::KernelWorstCase,
            ThresholdSize::PagesPerShard(16),
            ThresholdSize::Fixed(4096),
        ] {
            assert_eq!(parse_threshold_size(&threshold_size_str(s)), Ok(s));
        }
        assert!(parse_threshold_size("0-per-shard").is_err());
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
        w.concurrency = Some(ConcurrencyName::WaitOngoing);
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
