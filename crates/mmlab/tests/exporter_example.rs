//! The command line of the exporter's `serve_workload` example (issue 35):
//! its unit tests, compiled here so that `cargo test --workspace` runs them
//! (cargo builds examples but runs their tests only with `cargo test
//! --example serve_workload`). Bad values are named with their range and
//! sizes over the example's memory cap are refused.

#[path = "../../hierstat-exporter/examples/serve_workload/options.rs"]
#[allow(dead_code)]
mod options;
