//! `kind = "numab"` scenario files: the NUMA-balancing scanner model (the
//! `numab` crate) under each scanner version. The schema is the numab
//! crate's [`numab::ScenarioFile`]; this module reads it with file, line
//! and field in its errors and checks what the model needs.

use super::deserialize;
use crate::error::ScenarioError;
use numab::{ScannerVersion, ScenarioFile};

/// Parses and validates a numab scenario; `file` names it in errors.
///
/// # Errors
/// A [`ScenarioError`] with the line and field of the first problem.
pub fn parse(file: &str, text: &str) -> Result<ScenarioFile, ScenarioError> {
    let sc: ScenarioFile = deserialize(file, text)?;
    let err = |field: &str, message: String| ScenarioError::at(file, text, field, message);
    if sc.kind != "numab" {
        return Err(err("kind", format!("`{}` is not `numab`", sc.kind)));
    }
    if sc.mode != "sim" {
        return Err(err(
            "mode",
            "the NUMA-balancing model runs in sim mode only".into(),
        ));
    }
    if sc.name.trim().is_empty() {
        return Err(err("name", "must not be empty".into()));
    }
    if sc.runs == 0 || sc.runs > 1000 {
        return Err(err("runs", format!("{} is not in 1..=1000", sc.runs)));
    }
    for p in &sc.policies {
        p.parse::<ScannerVersion>()
            .map_err(|e| err("policies", e.to_string()))?;
    }
    let sysctl = &sc.numab.sysctl;
    if sysctl.scan_period_min_ms > sysctl.scan_period_max_ms {
        return Err(err(
            "numab.sysctl.scan_period_min_ms",
            format!(
                "{} is more than scan_period_max_ms = {}",
                sysctl.scan_period_min_ms, sysctl.scan_period_max_ms
            ),
        ));
    }
    sc.numab
        .plan()
        .map_err(|e| err(&plan_field(&e.to_string()), e.to_string()))?;
    Ok(sc)
}

/// The field a `numab` plan error is about: the key it starts with
/// (`nodes = 0`) under `numab`, a key of the workload it names, or the
/// workload table.
fn plan_field(message: &str) -> String {
    let message = message
        .strip_prefix("bad numab scenario: ")
        .unwrap_or(message);
    let first = message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    match first {
        "nodes" | "cpus_per_node" | "sample_interval_ms" | "mem_per_node_mib" | "max_virtual_s" => {
            format!("numab.{first}")
        }
        "" => "numab.workload".to_string(),
        key if message.starts_with(&format!("{key} ="))
            || key.ends_with("_mib")
            || key.ends_with("_threads") =>
        {
            format!("numab.workload.{key}")
        }
        _ => "numab.workload".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_errors_name_their_field() {
        assert_eq!(plan_field("bad numab scenario: nodes = 0"), "numab.nodes");
        assert_eq!(plan_field("threads = 0"), "numab.workload.threads");
        assert_eq!(plan_field("too many threads"), "numab.workload");
    }

    #[test]
    fn semantic_errors_carry_file_and_line() {
        let (_, numa02) = ::numab::BUILTIN[3];
        let bad = numa02.replace("nodes = 2", "nodes = 0");
        let e = parse("n.toml", &bad).unwrap_err();
        assert_eq!(e.file, "n.toml");
        assert_eq!(e.field, "numab.nodes");
        assert!(e.line.is_some(), "{e}");
    }
}
