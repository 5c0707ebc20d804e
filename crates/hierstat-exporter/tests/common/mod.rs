//! Helpers shared by the integration tests.
#![allow(dead_code)]

use hierstat::{Group, HierStats};
use std::path::PathBuf;

/// Set (by `scripts/test.sh`, after installing Debian's `prometheus`) to
/// make a missing `promtool` / `prometheus` a failure instead of a skip.
pub const REQUIRE_ENV: &str = "HIERSTAT_EXPORTER_REQUIRE_PROMETHEUS";

/// The path of `tool` on `PATH`, or `None` after printing why the test is
/// skipped (a panic instead when [`REQUIRE_ENV`] is set).
pub fn tool(tool: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let reason = format!(
            "`{tool}` is not on PATH (Debian package `prometheus`; scripts/test.sh installs it)"
        );
        if std::env::var_os(REQUIRE_ENV).is_some() {
            panic!("{reason}, and {REQUIRE_ENV} is set");
        }
        eprintln!("SKIPPED: {reason}");
    }
    found
}

/// Builds a tree with `fanout[d]` children per group at depth `d`,
/// returning every group created (root excluded), parents first.
pub fn fanout_tree(stats: &HierStats, fanout: &[usize]) -> Vec<Group> {
    let mut level = vec![stats.root()];
    let mut all = Vec::new();
    for (d, &f) in fanout.iter().enumerate() {
        let mut next = Vec::with_capacity(level.len() * f);
        for p in &level {
            for i in 0..f {
                let name = match d {
                    0 => format!("slice-{i}.slice"),
                    1 => format!("unit-{i}.service"),
                    _ => format!("task-{i}.scope"),
                };
                next.push(stats.create(p, &name).expect("fresh names"));
            }
        }
        all.extend(next.iter().cloned());
        level = next;
    }
    all
}
