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

/// Gives every group of `stats` (a tree of the `models::memcg` schema with
/// `ms`'s handles) its own value of every item on every node, drawn from a
/// fixed xorshift stream: pages below 10^5, bytes below 10^8, counts below
/// 10^6, so that the hierarchical sums have realistic digit counts.
pub fn fill_memcg(stats: &HierStats, ms: &models::memcg::MemcgSchema) {
    use hierstat::Unit;
    use models::memcg::{Slot, Stat};
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |unit: Unit| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let below = match unit {
            Unit::Pages => 100_000,
            Unit::Bytes => 100_000_000,
            Unit::Count => 1_000_000,
        };
        (x % below) as i64
    };
    let nodes = stats.schema().nodes();
    for g in stats.groups() {
        for &stat in Stat::ALL {
            match ms.slot(stat) {
                Slot::Node(item) => {
                    for node in 0..nodes {
                        stats.add_node(&g, item, node, next(stat.unit())).unwrap();
                    }
                }
                Slot::Plain(item) => stats.add(&g, item, next(stat.unit())).unwrap(),
            }
        }
    }
}

/// The `# TYPE` lines of an exposition: metric name → type.
pub fn declared_types(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (name, kind) = l.split_once(' ').expect("# TYPE name type");
            (name.to_string(), kind.to_string())
        })
        .collect()
}

/// `b` with a tolerance on every item of `stats`: 1% of each sample, or
/// `floor` pages (bytes items: `floor` × 4096 bytes; counts: `floor`
/// events), whichever is larger.
pub fn within_one_percent(
    mut b: hierstat_exporter::ExporterBuilder,
    stats: &HierStats,
    floor: u64,
) -> hierstat_exporter::ExporterBuilder {
    for info in stats.schema().items() {
        let unit = if info.unit == hierstat::Unit::Bytes {
            4096
        } else {
            1
        };
        b = b.item_tolerance(
            &info.name,
            hierstat::Tolerance::Either {
                relative: 0.01,
                absolute: floor * unit,
            },
        );
    }
    b
}
