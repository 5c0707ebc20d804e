//! Sweep files: a `[sweep]` table naming a scenario, seeds, a base policy
//! and knobs with lists (or ranges) of values; `mmlab sweep FILE` runs the
//! grid (policy point × seed).
//!
//! ```toml
//! [sweep]
//! name = "threshold-size"          # the sweep's name in the store
//! scenario = "refault-storm"       # built-in name, or a file relative to this one
//! seeds = [1, 2, 3]                # or { from = 1, count = 3 }
//! base = "hierstat"                # preset the grid's policies start from
//! presets = ["hierstat", "linux-6.8"]  # run beside the grid, marked on the plot
//! duration_ms = 1000               # optional: shorter runs than the scenario's
//! x = "refault_latency_ns"         # optional axes: metric, or metric.p999
//! y = "decision_mismatch_rate"
//!
//! [sweep.set]                      # optional knobs fixed for every point
//! hot_path = "async"
//!
//! [sweep.knobs]                    # one list or range per knob; the grid is their product
//! pages_per_shard = [4, 8, 16, 32, 64, 128]
//! # batch = { from = 16, to = 64, step = 16 }
//! # fixed_pages = { from = 256, to = 8192, factor = 2 }
//! ```
//!
//! Every point is a [`PolicySpec`] (base, the fixed knobs, one value per
//! swept knob) named after its values (`pages_per_shard=16`), so a stored
//! point holds its full definition like any user policy.

use crate::error::ScenarioError;
use crate::policy::{PolicySpec, UserPolicy};
use crate::ranges::{Range, MS_MAX};
use crate::source::Source;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most grid points (policies × seeds) one sweep may have.
pub const MAX_JOBS: usize = 100_000;

/// The ranges of a sweep file's own numeric fields (the knobs' values are
/// checked against [`crate::ranges::POLICY`]).
pub const RANGES: &[Range] = &[
    Range::int("sweep.duration_ms", 1, MS_MAX),
    Range::int("sweep.warmup_ms", 0, MS_MAX),
    Range::int("sweep.seeds", 0, i64::MAX as u64),
    Range::int("sweep.seeds.from", 0, i64::MAX as u64),
    Range::int("sweep.seeds.count", 1, MAX_JOBS as u64),
];

/// A sweep file: the `[sweep]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// The sweep.
    pub sweep: SweepSpec,
}

/// Seeds: a list, or `count` seeds from `from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Seeds {
    /// Explicit seeds.
    List(Vec<u64>),
    /// `from`, `from + 1`, … (`count` of them).
    Range {
        /// First seed.
        from: u64,
        /// How many.
        count: u32,
    },
}

/// The `[sweep]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The sweep's name (groups its points in the store).
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Built-in scenario name or scenario file (relative to the sweep file).
    pub scenario: String,
    /// Seeds: every policy point runs once per seed.
    pub seeds: Seeds,
    /// The preset every point starts from.
    pub base: String,
    /// Presets run beside the grid (marked on the plot).
    #[serde(default)]
    pub presets: Vec<String>,
    /// Measured duration per run, overriding the scenario's.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Warm-up per run (refault scenarios), overriding the scenario's.
    #[serde(default)]
    pub warmup_ms: Option<u64>,
    /// x axis of the plot: `metric` (its mean) or `metric.p50|p99|p999|max`.
    #[serde(default)]
    pub x: Option<String>,
    /// y axis of the plot, as `x`.
    #[serde(default)]
    pub y: Option<String>,
    /// Knobs fixed for every point.
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    /// Swept knobs: a list of values or a range table each.
    pub knobs: BTreeMap<String, toml::Value>,
}

/// One policy of the grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// The policy's name: `knob=value,...`, or the preset's name.
    pub label: String,
    /// `(knob, value)` of the swept knobs, in knob order; empty for presets.
    pub knobs: Vec<(String, String)>,
    /// Whether it is a built-in preset run beside the grid.
    pub preset: bool,
    /// The definition (for grid points), resolved.
    pub spec: Option<UserPolicy>,
}

/// One job: a point under one seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// 0-based index in the plan (points in order, seeds inner).
    pub index: usize,
    /// Index into [`Sweep::points`].
    pub point: usize,
    /// The seed.
    pub seed: u64,
}

/// A parsed, validated sweep with its grid expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The table as written.
    pub spec: SweepSpec,
    /// The grid's policies, then the presets.
    pub points: Vec<Point>,
    /// The seeds.
    pub seeds: Vec<u64>,
}

fn value_str(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Expands a knob's values: a list, or `{ from, to, step }` /
/// `{ from, to, factor }` over integers.
fn expand(v: &toml::Value) -> Result<Vec<toml::Value>, String> {
    match v {
        toml::Value::Array(a) if !a.is_empty() => Ok(a.clone()),
        toml::Value::Array(_) => Err("needs at least one value".into()),
        toml::Value::Table(t) => {
            let int = |k: &str| -> Result<Option<i64>, String> {
                match t.get(k) {
                    None => Ok(None),
                    Some(toml::Value::Integer(i)) => Ok(Some(*i)),
                    Some(_) => Err(format!("`{k}` must be an integer")),
                }
            };
            if let Some(k) = t
                .keys()
                .find(|k| !["from", "to", "step", "factor"].contains(&k.as_str()))
            {
                return Err(format!("unknown range key `{k}` (from, to, step, factor)"));
            }
            let (Some(from), Some(to)) = (int("from")?, int("to")?) else {
                return Err("a range needs `from` and `to`".into());
            };
            if from > to {
                return Err(format!("from {from} > to {to}"));
            }
            let mut out = Vec::new();
            match (int("step")?, int("factor")?) {
                (Some(s), None) if s > 0 => {
                    let mut x = from;
                    while x <= to {
                        out.push(toml::Value::Integer(x));
                        x = x.checked_add(s).ok_or("range overflows")?;
                    }
                }
                (None, Some(f)) if f >= 2 && from > 0 => {
                    let mut x = from;
                    while x <= to {
                        out.push(toml::Value::Integer(x));
                        x = x.checked_mul(f).ok_or("range overflows")?;
                    }
                }
                _ => {
                    return Err(
                        "a range needs exactly one of step >= 1 or factor >= 2 (with from >= 1)"
                            .into(),
                    )
                }
            }
            if out.len() > 10_000 {
                return Err("a range of more than 10000 values".into());
            }
            Ok(out)
        }
        _ => Err("must be a list of values or a range table { from, to, step | factor }".into()),
    }
}

impl Sweep {
    /// Parses and validates a sweep file and expands its grid; `file`
    /// names it in errors.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the line and field of the first problem
    /// (`sweep.knobs.batch`, …).
    pub fn parse(file: &str, text: &str) -> Result<Sweep, ScenarioError> {
        let src = Source::new(file, text);
        crate::ranges::check(&src, &[RANGES])?;
        let SweepFile { sweep: spec } = src.deserialize()?;
        let err = |field: &str, message: String| src.error(field, message);
        if spec.name.is_empty()
            || !spec
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(err(
                "sweep.name",
                "must be non-empty letters, digits, - _ .".into(),
            ));
        }
        let base: crate::kernel::Base = spec
            .base
            .parse()
            .map_err(|e: crate::kernel::UnknownBase| err("sweep.base", e.to_string()))?;
        for p in &spec.presets {
            if p.parse::<crate::kernel::Base>().is_err() {
                return Err(err(
                    "sweep.presets",
                    format!("`{p}` is not a preset or built-in kernel policy"),
                ));
            }
        }
        // Sizes first, from the counts alone: nothing is expanded before
        // the grid is known to fit.
        let seed_count = match &spec.seeds {
            Seeds::List(v) => v.len(),
            Seeds::Range { count, .. } => *count as usize,
        };
        if seed_count == 0 {
            return Err(err("sweep.seeds", "needs at least one seed".into()));
        }
        if seed_count > MAX_JOBS {
            return Err(err(
                "sweep.seeds",
                format!("{seed_count} seeds: a sweep has at most {MAX_JOBS} jobs"),
            ));
        }
        let seeds: Vec<u64> = match &spec.seeds {
            Seeds::List(v) => v.clone(),
            Seeds::Range { from, count } => (0..u64::from(*count))
                .map(|i| from.wrapping_add(i))
                .collect(),
        };
        let mut distinct = std::collections::HashSet::with_capacity(seeds.len());
        if let Some(s) = seeds.iter().find(|s| !distinct.insert(**s)) {
            return Err(err("sweep.seeds", format!("seed {s} is listed twice")));
        }
        for (key, axis) in [("sweep.x", &spec.x), ("sweep.y", &spec.y)] {
            if let Some(a) = axis {
                if let Some((_, p)) = a.split_once('.') {
                    if !["p50", "p99", "p999", "max"].contains(&p) {
                        return Err(err(
                            key,
                            format!("`{p}` is not a percentile (p50, p99, p999, max)"),
                        ));
                    }
                }
            }
        }
        let mut fixed = PolicySpec::new("sweep", base);
        for (k, v) in &spec.set {
            fixed = fixed
                .with_knob(k, v)
                .map_err(|m| err(&format!("sweep.set.{k}"), m))?;
        }
        if spec.knobs.is_empty() {
            return Err(err("sweep.knobs", "name at least one knob to sweep".into()));
        }
        // The threshold size has three spellings; a point takes one, so a
        // sweep may name only one of them (swept or set).
        let sizes: Vec<String> = spec
            .set
            .keys()
            .map(|k| format!("sweep.set.{k}"))
            .chain(spec.knobs.keys().map(|k| format!("sweep.knobs.{k}")))
            .filter(|f| {
                f.ends_with(".threshold_size")
                    || f.ends_with(".pages_per_shard")
                    || f.ends_with(".fixed_pages")
            })
            .collect();
        if sizes.len() > 1 {
            return Err(err(
                &sizes[1],
                format!(
                    "{} and {} both set the threshold size; sweep one of threshold_size, \
                     pages_per_shard, fixed_pages",
                    sizes[0], sizes[1]
                ),
            ));
        }
        let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
        for (k, v) in &spec.knobs {
            let field = format!("sweep.knobs.{k}");
            let vals = expand(v).map_err(|m| err(&field, m))?;
            let mut distinct = std::collections::HashSet::with_capacity(vals.len());
            if let Some(v) = vals.iter().find(|v| !distinct.insert(value_str(v))) {
                return Err(err(
                    &field,
                    format!(
                        "value {} is listed twice (each value is one point)",
                        value_str(v)
                    ),
                ));
            }
            for val in &vals {
                fixed
                    .with_knob(k, val)
                    .map_err(|m| err(&field, format!("value {}: {m}", value_str(val))))?;
            }
            axes.push((k.clone(), vals));
        }
        let size = axes
            .iter()
            .map(|(_, v)| v.len())
            .fold(1usize, usize::saturating_mul);
        if size
            .saturating_add(spec.presets.len())
            .saturating_mul(seeds.len())
            > MAX_JOBS
        {
            return Err(err(
                "sweep.knobs",
                format!("the grid has more than {MAX_JOBS} jobs"),
            ));
        }
        let mut points = Vec::with_capacity(size + spec.presets.len());
        for i in 0..size {
            // Mixed radix, the last knob fastest.
            let mut rem = i;
            let mut pick = vec![0usize; axes.len()];
            for (j, (_, vals)) in axes.iter().enumerate().rev() {
                pick[j] = rem % vals.len();
                rem /= vals.len();
            }
            let mut p = fixed.clone();
            let mut knobs = Vec::new();
            for (j, (k, vals)) in axes.iter().enumerate() {
                let v = &vals[pick[j]];
                p = p.with_knob(k, v).map_err(|m| err("sweep.knobs", m))?;
                knobs.push((k.clone(), value_str(v)));
            }
            let label = knobs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            p.name = label.clone();
            p.description = format!("sweep {} point", spec.name);
            let user =
                UserPolicy::new(p).map_err(|(k, m)| err("sweep.knobs", format!("{k}: {m}")))?;
            points.push(Point {
                label,
                knobs,
                preset: false,
                spec: Some(user),
            });
        }
        for pr in &spec.presets {
            if points.iter().any(|p| &p.label == pr) {
                continue;
            }
            points.push(Point {
                label: pr.clone(),
                knobs: Vec::new(),
                preset: true,
                spec: None,
            });
        }
        Ok(Sweep {
            spec,
            points,
            seeds,
        })
    }

    /// Every job in plan order: point by point, each under every seed.
    pub fn jobs(&self) -> Vec<Job> {
        let mut out = Vec::with_capacity(self.points.len() * self.seeds.len());
        for p in 0..self.points.len() {
            for &seed in &self.seeds {
                out.push(Job {
                    index: out.len(),
                    point: p,
                    seed,
                });
            }
        }
        out
    }

    /// The jobs of shard `i` of `n` (1-based): every `n`-th job from the
    /// `i`-th, so shards get a like mix of points.
    pub fn shard(&self, i: usize, n: usize) -> Vec<Job> {
        self.jobs()
            .into_iter()
            .filter(|j| n > 0 && j.index % n == i.wrapping_sub(1))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[sweep]
name = "t"
scenario = "refault-storm"
seeds = [1, 2, 3]
base = "hierstat"
presets = ["hierstat", "linux-6.8"]

[sweep.set]
hot_path = "async"

[sweep.knobs]
pages_per_shard = { from = 8, to = 256, factor = 2 }
strict_bound = [false, true]
"#;

    #[test]
    fn grid_is_the_product_of_knobs_plus_presets() {
        let s = Sweep::parse("s.toml", FILE).unwrap();
        assert_eq!(s.points.len(), 6 * 2 + 2);
        assert_eq!(s.points[0].label, "pages_per_shard=8,strict_bound=false");
        assert_eq!(s.points[1].label, "pages_per_shard=8,strict_bound=true");
        assert_eq!(s.points[11].label, "pages_per_shard=256,strict_bound=true");
        let p = s.points[3].spec.as_ref().unwrap().policy;
        assert_eq!(p.threshold_size, hierstat::ThresholdSize::PagesPerShard(16));
        assert!(p.strict_bound);
        assert!(s.points[12].preset && s.points[13].label == "linux-6.8");
        assert_eq!(s.jobs().len(), 14 * 3);
        // Shards partition the jobs.
        let mut all: Vec<usize> = (1..=4)
            .flat_map(|i| s.shard(i, 4).into_iter().map(|j| j.index))
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..42).collect::<Vec<_>>());
    }

    #[test]
    fn errors_name_line_and_field() {
        let bad = FILE.replace("strict_bound = [false, true]", "strict_bound = [1]");
        let e = Sweep::parse("s.toml", &bad).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("sweep.knobs.strict_bound", Some(14))
        );
        let bad = FILE.replace("factor = 2", "factor = 1");
        let e = Sweep::parse("s.toml", &bad).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("sweep.knobs.pages_per_shard", Some(13))
        );
        let bad = FILE.replace("hot_path = \"async\"", "hot_pat = \"async\"");
        let e = Sweep::parse("s.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("sweep.set.hot_pat", Some(10)));
        let bad = FILE.replace("\"linux-6.8\"]", "\"linux-7\"]");
        let e = Sweep::parse("s.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("sweep.presets", Some(7)));
    }

    #[test]
    fn repeated_values_and_two_threshold_sizes_are_refused() {
        let bad = FILE.replace("strict_bound = [false, true]", "batch = [4, 4, 4]");
        let e = Sweep::parse("s.toml", &bad).unwrap_err();
        assert_eq!(e.field, "sweep.knobs.batch");
        assert!(e.message.contains("listed twice"), "{e}");
        let bad = FILE.replace("strict_bound = [false, true]", "fixed_pages = [64, 128]");
        let e = Sweep::parse("s.toml", &bad).unwrap_err();
        assert!(e.message.contains("threshold size"), "{e}");
        assert!(
            e.field.starts_with("sweep.knobs.") && e.line.is_some(),
            "{e}"
        );
        let bad = FILE.replace("hot_path = \"async\"", "fixed_pages = 64");
        let e = Sweep::parse("s.toml", &bad).unwrap_err();
        assert!(e.message.contains("threshold size"), "{e}");
    }

    #[test]
    fn seed_checks_are_linear() {
        // One point under N seeds: 16 times the seeds take about 16 times
        // as long (linear), not 256 times (the former pairwise check, which
        // took minutes at N = 100,000, the limit). A ratio of medians, not
        // a time.
        let one_point = |n: usize| {
            FILE.replace(
                "seeds = [1, 2, 3]",
                &format!("seeds = {{ from = 1, count = {n} }}"),
            )
            .replace("presets = [\"hierstat\", \"linux-6.8\"]", "presets = []")
            .replace("pages_per_shard = { from = 8, to = 256, factor = 2 }\n", "")
            .replace("[false, true]", "[false]")
        };
        let median = |n: usize| {
            let text = one_point(n);
            let mut t: Vec<std::time::Duration> = (0..3)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    let s = Sweep::parse("s.toml", &text).unwrap();
                    assert_eq!(s.jobs().len(), n);
                    t0.elapsed()
                })
                .collect();
            t.sort();
            t[1]
        };
        let (small, large) = (median(6_250), median(MAX_JOBS));
        assert!(
            large < small * 64,
            "16x the seeds took {:.1}x as long ({small:?} -> {large:?})",
            large.as_secs_f64() / small.as_secs_f64()
        );
        // Beyond the limit: refused before anything is expanded.
        for count in ["1000000000", "100001"] {
            let big = FILE.replace("[1, 2, 3]", &format!("{{ from = 1, count = {count} }}"));
            let e = Sweep::parse("s.toml", &big).unwrap_err();
            assert_eq!(e.field, "sweep.seeds.count", "{e}");
        }
        let e = Sweep::parse(
            "s.toml",
            &one_point(60_000).replace("[false]", "[false, true]"),
        )
        .unwrap_err();
        assert!(e.message.contains("more than 100000 jobs"), "{e}");
        let twice = FILE.replace("[1, 2, 3]", "[1, 2, 1]");
        let e = Sweep::parse("s.toml", &twice).unwrap_err();
        assert!(e.message.contains("seed 1 is listed twice"), "{e}");
    }
}
