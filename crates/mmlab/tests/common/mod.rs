//! Fixtures shared by the integration tests.

// Each test binary uses its own part of the fixtures.
#![allow(dead_code)]

pub mod sample;

/// The arguments of a short run: `run SCENARIO --duration-ms MS --runs 1`,
/// then `extra`.
pub fn short_run<'a>(scenario: &'a str, ms: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["run", scenario, "--duration-ms", ms, "--runs", "1"];
    v.extend_from_slice(extra);
    v
}
