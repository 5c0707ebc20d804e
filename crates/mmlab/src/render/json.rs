//! The `--json` views (documented in `docs/json.md`): a run with its
//! claims ([`run_json`]), the suite ([`suite_json`]), and [`write_json`],
//! which writes any of them.
//!
//! ```json
//! {"scenario": "stat-readers", "mode": "sim", "runs": 2, "seed": 1,
//!  "policy_order": ["linux-5.15", "linux-6.8", "hierstat"],
//!  "policies": {"hierstat": {"metrics": {"read_latency_ns": {
//!      "mean": 812.5, "stddev": 3.2, "unit": "ns", "higher_is_better": false,
//!      "values": [810.2, 814.8],
//!      "p50": 640.0, "p99": 2100.0, "p999": 9000.0, "max": 41000.0,
//!      "percentiles": {"p50": [..], "p99": [..], "p999": [..], "max": [..]},
//!      "histogram": [0, 0, 12, ...]}}}}}
//! ```

use crate::analysis::stats;
use anyhow::{Context, Result};
use lab::report::{Claim, MetricSamples, Mode, RunReport};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;

/// JSON of one metric: mean, stddev (sample), unit, per-run values and,
/// for latencies, p50/p99/p999 (means over runs), max (over all runs), the
/// per-run percentiles and the merged log2 histogram.
pub fn metric_json(m: &MetricSamples) -> Value {
    let mut o = Map::new();
    o.insert("mean".into(), num(stats::mean(&m.values)));
    o.insert("stddev".into(), num(stats::stddev(&m.values)));
    o.insert("unit".into(), Value::from(m.unit.clone()));
    o.insert("higher_is_better".into(), Value::from(m.higher_is_better));
    o.insert(
        "values".into(),
        Value::Array(m.values.iter().map(|&v| num(v)).collect()),
    );
    for (k, vs) in &m.percentiles {
        let v = if k == "max" {
            vs.iter().copied().fold(0.0, f64::max)
        } else {
            stats::mean(vs)
        };
        o.insert(k.clone(), num(v));
    }
    if !m.percentiles.is_empty() {
        o.insert(
            "percentiles".into(),
            serde_json::to_value(&m.percentiles).unwrap_or(Value::Null),
        );
    }
    if let Some(h) = &m.histogram {
        o.insert("histogram".into(), json!(h.buckets));
    }
    Value::Object(o)
}

fn num(v: f64) -> Value {
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// JSON of a whole run.
pub fn report_json(r: &RunReport) -> Value {
    let mut policies = Map::new();
    for (name, p) in &r.policies {
        let metrics: Map<String, Value> = p
            .metrics
            .iter()
            .map(|(k, m)| (k.clone(), metric_json(m)))
            .collect();
        let mut po = Map::new();
        po.insert("metrics".into(), Value::Object(metrics));
        if !p.series.is_empty() {
            po.insert(
                "series".into(),
                serde_json::to_value(&p.series).unwrap_or(Value::Null),
            );
        }
        policies.insert(name.clone(), Value::Object(po));
    }
    let mut v = json!({
        "scenario": r.scenario,
        "mode": match r.mode { Mode::Sim => "sim", Mode::Real => "real", Mode::Kernel => "kernel" },
        "runs": r.runs,
        "seed": r.seed,
        "policy_order": r.policy_order,
        "policies": Value::Object(policies),
    });
    if !r.facts.is_empty() {
        v["facts"] = json!(r.facts);
    }
    v
}

/// JSON of one claim.
pub fn claim_json(c: &Claim) -> Value {
    json!({
        "scenario": c.scenario, "claim": c.claim, "measured": c.measured,
        "published": c.published, "pass": c.pass, "info": c.info,
    })
}

/// JSON of a run with the source threads' claims on it: [`report_json`]
/// plus `claims`.
pub fn run_json(r: &RunReport, claims: &[Claim]) -> Value {
    let mut v = report_json(r);
    v["claims"] = Value::Array(claims.iter().map(claim_json).collect());
    v
}

/// JSON of a suite: every run with its claims (`suite`), every claim in
/// one list (`checks`), and the scenarios that did not run with why
/// (`skipped`: unavailable on this host, or failed).
pub fn suite_json(runs: &[(&RunReport, &[Claim])], skipped: &[(String, String)]) -> Value {
    json!({
        "suite": runs.iter().map(|(r, c)| run_json(r, c)).collect::<Vec<Value>>(),
        "checks": runs.iter().flat_map(|(_, c)| c.iter().map(claim_json)).collect::<Vec<Value>>(),
        "skipped": skipped.iter().map(|(s, r)| json!({"scenario": s, "reason": r}))
            .collect::<Vec<Value>>(),
    })
}

/// Writes `value` as pretty JSON, one line feed after it, to `path`:
/// standard output (`-`, `/dev/stdout`) through `out`, or a file written
/// atomically (a temporary file renamed into place, so a failure leaves
/// nothing half written); see [`super::output`].
///
/// # Errors
/// Serializing, or writing the file.
pub fn write_json(path: &Path, value: &Value, out: &mut dyn Write) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).context("serializing JSON")?;
    text.push('\n');
    super::output::write_output(path, text.as_bytes(), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::report::{Log2Histogram, PolicyResult};

    #[test]
    fn metric_has_the_documented_keys() {
        let mut m = MetricSamples {
            unit: "ns".into(),
            values: vec![10.0, 20.0],
            ..Default::default()
        };
        m.percentiles.insert("p99".into(), vec![30.0, 50.0]);
        m.percentiles.insert("max".into(), vec![60.0, 90.0]);
        m.histogram = Some(Log2Histogram {
            buckets: vec![1, 2],
        });
        let v = metric_json(&m);
        assert_eq!(v["mean"], 15.0);
        assert_eq!(v["p99"], 40.0);
        assert_eq!(v["max"], 90.0);
        assert_eq!(v["values"], json!([10.0, 20.0]));
        assert_eq!(v["histogram"], json!([1, 2]));
        assert!(v["stddev"].as_f64().unwrap() > 7.0);
    }

    #[test]
    fn report_shape() {
        let mut p = PolicyResult::default();
        p.metrics
            .insert("ops_per_sec".into(), MetricSamples::default());
        let r = RunReport {
            scenario: "s".into(),
            mode: Mode::Real,
            runs: 1,
            seed: 0,
            scenario_toml: String::new(),
            policy_order: vec!["a".into()],
            policies: [("a".to_string(), p)].into_iter().collect(),
            facts: Default::default(),
        };
        let v = report_json(&r);
        assert_eq!(v["mode"], "real");
        assert!(v["policies"]["a"]["metrics"]["ops_per_sec"].is_object());
    }
}
