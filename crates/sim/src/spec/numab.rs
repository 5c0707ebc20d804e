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
    sc.numab.plan().map_err(|e| err("numab", e.to_string()))?;
    Ok(sc)
}
