//! `promtool check metrics` on the exposition of a 10k-group tree.

mod common;

use hierstat::{Config, HierStats, ItemKind, Preset, Unit};
use hierstat_exporter::{Exporter, ExporterBuilder, Format, ScrapePolicy};
use models::memcg::{MemcgSchema, Slot, Stat};
use std::io::Write;
use std::process::{Command, Stdio};

/// A 10 × 10 × 100 tree (10 110 groups + root) with the memcg schema
/// (2 NUMA nodes), every group updated.
fn memcg_tree() -> (HierStats, usize) {
    let ms = MemcgSchema::new(2).unwrap();
    let stats = HierStats::new(
        ms.schema().clone(),
        Config::preset(Preset::Hierstat).shards(2),
    )
    .unwrap();
    let groups = common::fanout_tree(&stats, &[10, 10, 100]);
    for (i, g) in groups.iter().enumerate() {
        for (k, &stat) in Stat::ALL.iter().enumerate() {
            let v = ((i * 31 + k * 7) % 1000 + 1) as i64;
            match ms.slot(stat) {
                Slot::Node(item) => stats.add_node(g, item, (i + k) % 2, v).unwrap(),
                Slot::Plain(item) => stats.add(g, item, v).unwrap(),
            }
        }
    }
    (stats, groups.len() + 1)
}

/// The `memory.stat` item whose metric name `promtool check metrics` lints
/// (`memcg_sec_pagetables_pages`: `sec` reads as an abbreviated unit), and
/// the name it is exposed under in these tests.
const RENAMED: (&str, &str) = ("sec_pagetables", "secondary_pagetables");

fn promtool_check(promtool: &std::path::Path, text: &[u8]) -> (bool, String) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    // Write from another thread: promtool may answer before reading it all.
    let mut stdin = child.stdin.take().unwrap();
    let text = text.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&text);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), report)
}

#[test]
fn promtool_accepts_a_10k_group_tree() {
    let Some(promtool) = common::tool("promtool") else {
        return;
    };
    let (stats, groups) = memcg_tree();
    assert!(groups > 10_000);
    let exporter = Exporter::builder(stats)
        .prefix("memcg_")
        .rename(RENAMED.0, RENAMED.1)
        .per_node(true)
        .bounds(true)
        .policy(ScrapePolicy::Flush)
        .build()
        .unwrap();
    let mut text = Vec::new();
    let r = exporter.render(Format::Prometheus, &mut text).unwrap();
    assert_eq!(r.groups, groups);
    assert!(text.windows(10).any(|w| w == b",node=\"1\"}"));
    let (ok, report) = promtool_check(&promtool, &text);
    eprintln!(
        "promtool check metrics: {} groups, {} samples, {} bytes: {}",
        r.groups,
        r.samples,
        text.len(),
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "promtool check metrics failed:\n{report}");
    assert!(report.trim().is_empty(), "promtool reported:\n{report}");
}

#[test]
fn promtool_accepts_local_families_and_odd_paths() {
    let Some(promtool) = common::tool("promtool") else {
        return;
    };
    let ms = MemcgSchema::new(2).unwrap();
    let stats = HierStats::new(ms.schema().clone(), Config::preset(Preset::Hierstat)).unwrap();
    let groups = common::fanout_tree(&stats, &[5, 20]);
    let odd = stats
        .create(&groups[0], "we\"ird\\name\nwith é and {braces}")
        .unwrap();
    let Slot::Plain(pgfault) = ms.slot(Stat::Pgfault) else {
        unreachable!("pgfault is an event")
    };
    stats.add(&odd, pgfault, 3).unwrap();
    let exporter = Exporter::builder(stats)
        .prefix("memcg_")
        .rename(RENAMED.0, RENAMED.1)
        .local(true)
        .policy(ScrapePolicy::Bounded)
        .build()
        .unwrap();
    let text = exporter.render_to_string(Format::Prometheus).unwrap();
    assert!(text.contains("memcg_local_pgfault_total{"));
    let (ok, report) = promtool_check(&promtool, text.as_bytes());
    assert!(
        ok && report.trim().is_empty(),
        "promtool check metrics:\n{report}"
    );
}

/// A scrape within a tolerance: every family and its `_bound` companion
/// (per node too) pass `promtool check metrics` without a lint.
#[test]
fn promtool_accepts_sample_bounds_under_a_tolerance() {
    let Some(promtool) = common::tool("promtool") else {
        return;
    };
    let ms = MemcgSchema::new(2).unwrap();
    let stats = HierStats::new(ms.schema().clone(), Config::preset(Preset::Hierstat)).unwrap();
    common::fanout_tree(&stats, &[3, 5]);
    common::fill_memcg(&stats, &ms);
    let exporter = Exporter::builder(stats)
        .prefix("memcg_")
        .rename(RENAMED.0, RENAMED.1)
        .per_node(true)
        .policy(ScrapePolicy::Within)
        .tolerance(hierstat::Tolerance::Either {
            relative: 0.01,
            absolute: 256,
        })
        .build()
        .unwrap();
    let text = exporter.render_to_string(Format::Prometheus).unwrap();
    assert!(
        text.contains("memcg_anon_bound_pages{path=\"/\",node=\"0\"} "),
        "{text}"
    );
    assert!(text.contains("memcg_pgfault_bound{path=\"/\"} "));
    let (ok, report) = promtool_check(&promtool, text.as_bytes());
    assert!(
        ok && report.trim().is_empty(),
        "promtool check metrics:\n{report}"
    );
}

/// The type each exposed item must have: a counter for an event (monotonic),
/// a gauge for a state or a per-node state (signed), whatever the switches.
#[test]
fn events_are_counters_and_states_are_gauges() {
    let promtool = common::tool("promtool");
    let ms = MemcgSchema::new(2).unwrap();
    let stats = HierStats::new(ms.schema().clone(), Config::preset(Preset::Hierstat)).unwrap();
    common::fanout_tree(&stats, &[3, 4]);
    common::fill_memcg(&stats, &ms);
    let schema = stats.schema().clone();
    type Configure = fn(ExporterBuilder) -> ExporterBuilder;
    let configs: [(&str, Configure); 3] = [
        ("defaults", |b| b),
        ("per_node", |b| b.per_node(true)),
        ("local, per_node, bounds", |b| {
            b.local(true).per_node(true).bounds(true)
        }),
    ];
    for (what, configure) in configs {
        let exporter = configure(
            Exporter::builder(stats.clone())
                .prefix("memcg_")
                .rename(RENAMED.0, RENAMED.1),
        )
        .build()
        .unwrap();
        let prom = exporter.render_to_string(Format::Prometheus).unwrap();
        let om = exporter.render_to_string(Format::OpenMetrics).unwrap();
        let (prom_types, om_types) = (common::declared_types(&prom), common::declared_types(&om));
        let mut checked = 0;
        for info in schema.items() {
            let unit = match info.unit {
                Unit::Pages => "_pages",
                Unit::Bytes => "_bytes",
                Unit::Count => "",
            };
            let name = if info.name == RENAMED.0 {
                RENAMED.1
            } else {
                &info.name
            };
            for scope in ["", "local_"] {
                let family = format!("memcg_{scope}{name}{unit}");
                let Some(om_type) = om_types.get(&family) else {
                    assert!(
                        scope == "local_" && !what.contains("local"),
                        "{what}: no family {family}"
                    );
                    continue;
                };
                let (expected, sample) = match info.kind {
                    ItemKind::Event | ItemKind::NodeEvent => ("counter", format!("{family}_total")),
                    ItemKind::State | ItemKind::NodeState => ("gauge", family.clone()),
                };
                assert_eq!(om_type, expected, "{what}: OpenMetrics type of {family}");
                assert_eq!(
                    prom_types.get(&sample).map(String::as_str),
                    Some(expected),
                    "{what}: Prometheus text type of {sample}"
                );
                // Every sample of the family carries the sample name.
                for text in [&prom, &om] {
                    let lines = text.lines().filter(|l| !l.starts_with('#')).filter(|l| {
                        l.split('{').next() == Some(family.as_str())
                            || l.starts_with(&format!("{family}_total{{"))
                    });
                    let names: std::collections::BTreeSet<&str> =
                        lines.map(|l| l.split('{').next().unwrap()).collect();
                    assert_eq!(
                        names.into_iter().collect::<Vec<_>>(),
                        [sample.as_str()],
                        "{what}"
                    );
                }
                checked += 1;
            }
        }
        let expected_families = schema.items().len() * if what.contains("local") { 2 } else { 1 };
        assert_eq!(checked, expected_families, "{what}");
        // promtool's own reading of the types (it lints counters without
        // `_total` and `_total` gauges).
        if let Some(promtool) = &promtool {
            let (ok, report) = promtool_check(promtool, prom.as_bytes());
            assert!(
                ok && report.trim().is_empty(),
                "{what}: promtool check metrics:\n{report}"
            );
        }
    }
}

/// Why the other tests rename `sec_pagetables`: without it, promtool lints
/// the exposition (if this starts passing, promtool changed its lint and the
/// rename can go).
#[test]
fn promtool_lints_sec_pagetables_under_a_prefix() {
    let Some(promtool) = common::tool("promtool") else {
        return;
    };
    let ms = MemcgSchema::new(1).unwrap();
    let stats = HierStats::new(ms.schema().clone(), Config::preset(Preset::Hierstat)).unwrap();
    let text = |b: ExporterBuilder| {
        b.prefix("memcg_")
            .build()
            .unwrap()
            .render_to_string(Format::Prometheus)
            .unwrap()
    };
    let (ok, report) = promtool_check(&promtool, text(Exporter::builder(stats.clone())).as_bytes());
    assert!(
        !ok && report.contains("memcg_sec_pagetables_pages"),
        "{report}"
    );
    let renamed = text(Exporter::builder(stats).rename(RENAMED.0, RENAMED.1));
    let (ok, report) = promtool_check(&promtool, renamed.as_bytes());
    assert!(ok && report.trim().is_empty(), "{report}");
}
