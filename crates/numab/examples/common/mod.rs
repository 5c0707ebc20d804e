//! What the developer examples share: the scenario and scanner version
//! they run, from the environment.

use numab::{builtin_scenario, ScannerVersion, ScenarioFile};

/// The scenario named by `NUMAB_SCENARIO` (default `default_name`) or read
/// from the file `NUMAB_TOML`, and the version `NUMAB_VERSION` (default
/// `default_version`).
///
/// # Panics
/// A name, file or version that does not resolve (these are developer
/// tools: the panic message says which).
pub fn scenario_from_env(
    default_name: &str,
    default_version: &str,
) -> (ScenarioFile, ScannerVersion) {
    let name = std::env::var("NUMAB_SCENARIO").unwrap_or_else(|_| default_name.into());
    let v: ScannerVersion = std::env::var("NUMAB_VERSION")
        .unwrap_or_else(|_| default_version.into())
        .parse()
        .expect("NUMAB_VERSION names a scanner version");
    let sc = match std::env::var("NUMAB_TOML") {
        Ok(path) => {
            numab::parse_scenario(&std::fs::read_to_string(&path).expect("NUMAB_TOML is readable"))
                .expect("NUMAB_TOML parses")
        }
        Err(_) => builtin_scenario(&name).expect("NUMAB_SCENARIO names a built-in scenario"),
    };
    (sc, v)
}
