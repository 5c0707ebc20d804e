//! What a scrape of a realistic tree costs, per configuration: the
//! `serve_workload` example's systemd-like tree with 100 pods (318 groups,
//! the lab's `memory.stat` schema, 2 NUMA nodes), every group holding values
//! of every item. The figures are the table of the `exposition` module docs
//! ("Sizing a scrape"), and those quoted by the crate docs and the crate
//! README; this test fails when they drift, printing what to paste.

mod common;
#[path = "../examples/serve_workload/workload.rs"]
#[allow(dead_code)]
mod workload;

use hierstat::{Config, HierStats, Preset};
use hierstat_exporter::{Exporter, ExporterBuilder, Format};
use models::memcg::MemcgSchema;

/// Where the table lives.
const DOCS: &str = include_str!("../src/exposition.rs");
/// The crate docs and the README, which quote the defaults and the
/// all-families figures and the samples per group of each switch.
const LIB: &str = include_str!("../src/lib.rs");
const README: &str = include_str!("../README.md");

/// What one configuration measured.
struct Measured {
    per_group: usize,
    samples: usize,
    bytes: usize,
    groups: usize,
}

impl Measured {
    /// `18,444 samples, 7.6 kB per group, 2.4 MB per scrape`, as the crate
    /// docs and the README quote it.
    fn summary(&self) -> String {
        format!(
            "{} samples, {:.1} kB per group, {:.1} MB per scrape",
            thousands(self.samples),
            self.bytes as f64 / self.groups as f64 / 1e3,
            self.bytes as f64 / 1e6
        )
    }
}

/// The text of a Markdown file or of `//!` docs with line breaks and
/// comment markers folded into single spaces.
fn prose(text: &str) -> String {
    text.lines()
        .map(|l| l.trim_start().strip_prefix("//!").unwrap_or(l).trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The tree of the measurement (318 groups), filled.
fn tree() -> HierStats {
    let ms = MemcgSchema::new(workload::NODES).unwrap();
    let stats = HierStats::new(
        ms.schema().clone(),
        Config::preset(Preset::Hierstat).shards(1),
    )
    .unwrap();
    workload::systemd_tree(&stats, 100);
    common::fill_memcg(&stats, &ms);
    stats
}

/// The doc example's dashboard allowlist, read from the docs (so that the
/// table's row and the example cannot disagree).
fn dashboard_allowlist() -> Vec<String> {
    let start = DOCS
        .find(".allow_items([")
        .expect("the docs have the allowlist example");
    let list = &DOCS[start + ".allow_items([".len()..];
    let list = &list[..list.find("])").unwrap()];
    list.split(',')
        .map(|p| p.replace("//!", "").trim().trim_matches('"').to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

type Configure = Box<dyn Fn(ExporterBuilder) -> ExporterBuilder>;

/// (the table's first cell, the configuration)
fn configurations() -> Vec<(&'static str, Configure)> {
    let dashboard = dashboard_allowlist();
    vec![
        ("defaults", Box::new(|b| b)),
        ("`per_node(true)`", Box::new(|b| b.per_node(true))),
        ("`local(true)`", Box::new(|b| b.local(true))),
        ("`bounds(true)`", Box::new(|b| b.bounds(true))),
        (
            "`per_node(true).local(true).bounds(true)`",
            Box::new(|b| b.per_node(true).local(true).bounds(true)),
        ),
        (
            "`allow_items` (the dashboard example)",
            Box::new(move |b| b.allow_items(dashboard.clone())),
        ),
    ]
}

/// `12345678` → `12,345,678`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn scrape_sizes_are_the_documented_ones() {
    let stats = tree();
    assert_eq!(stats.len(), 318);
    let doc_lines: Vec<&str> = DOCS
        .lines()
        .filter_map(|l| l.strip_prefix("//! "))
        .collect();
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    let mut measured = Vec::new();
    for (name, configure) in configurations() {
        let exporter = configure(Exporter::builder(stats.clone()).prefix("memcg_"))
            .build()
            .unwrap();
        let mut om = Vec::new();
        let r = exporter.render(Format::OpenMetrics, &mut om).unwrap();
        let mut prom = Vec::new();
        let rp = exporter.render(Format::Prometheus, &mut prom).unwrap();
        assert_eq!(r.groups, 318);
        assert_eq!(r.samples, rp.samples);
        assert_eq!(r.samples, r.groups * exporter.samples_per_group(), "{name}");
        // The docs quote OpenMetrics bytes, "the Prometheus text format
        // differs by under 0.1%".
        assert!(om.len().abs_diff(prom.len()) * 1000 < om.len(), "{name}");
        eprintln!(
            "{name}: {} samples, OpenMetrics {} bytes, Prometheus text {} bytes",
            r.samples,
            om.len(),
            prom.len()
        );
        let row = format!(
            "| {name} | {} | {} | {} | {} |",
            exporter.samples_per_group(),
            thousands(r.samples),
            thousands((om.len() + r.groups / 2) / r.groups),
            thousands(om.len()),
        );
        if !doc_lines.contains(&row.as_str()) {
            missing.push(row.clone());
        }
        rows.push(row);
        measured.push(Measured {
            per_group: exporter.samples_per_group(),
            samples: r.samples,
            bytes: om.len(),
            groups: r.groups,
        });
    }
    assert!(
        missing.is_empty(),
        "the exposition docs' table is out of date; its rows are now:\n{}",
        rows.join("\n")
    );
    // The crate docs and the README quote the defaults and every family on.
    let quote = format!(
        "the defaults write {}; every family on (per node, local, bounds) writes {}.",
        measured[0].summary(),
        measured[4].summary()
    );
    for (file, text) in [("src/lib.rs", LIB), ("README.md", README)] {
        assert!(prose(text).contains(&quote), "{file} should say: {quote:?}");
    }
    // The README's table of switches: its last cell is the samples per group.
    let readme_rows = [
        ("defaults", &measured[0]),
        ("`.per_node(true)`", &measured[1]),
        ("`.local(true)`", &measured[2]),
        ("`.bounds(true)`", &measured[3]),
        ("`.allow_items([..])` / `.deny_items([..])`", &measured[5]),
    ];
    for (builder, m) in readme_rows {
        let row = README
            .lines()
            .find(|l| l.starts_with(&format!("| {builder} |")))
            .unwrap_or_else(|| panic!("README.md has no row for {builder}"));
        let last = row.trim_end_matches('|').rsplit('|').next().unwrap().trim();
        let per_group = last.trim_start_matches("e.g. ");
        assert_eq!(per_group, m.per_group.to_string(), "README.md row {row}");
    }
}

#[test]
fn defaults_keep_the_scrape_at_a_third_of_the_all_families_one() {
    // The configuration (every family, per node and local, with
    // bounds) against the defaults, same tree: the defaults drop the node
    // split and the local copies, not any item.
    let stats = tree();
    let all = Exporter::builder(stats.clone())
        .per_node(true)
        .local(true)
        .bounds(true)
        .build()
        .unwrap();
    let defaults = Exporter::builder(stats.clone()).build().unwrap();
    let items = stats.schema().items().len();
    assert_eq!(defaults.samples_per_group(), items);
    assert_eq!(defaults.sample_names().count(), items);
    assert!(3 * defaults.samples_per_group() < all.samples_per_group());
    let size = |e: &Exporter| {
        let mut out = Vec::new();
        e.render(Format::OpenMetrics, &mut out).unwrap();
        out.len()
    };
    assert!(
        3 * size(&defaults) < size(&all),
        "defaults {} bytes, everything {} bytes",
        size(&defaults),
        size(&all)
    );
}
