//! `promtool check metrics` on the exposition of a 10k-group tree.

mod common;

use hierstat::{Config, HierStats, Preset};
use hierstat_exporter::{Exporter, Format, ScrapePolicy};
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
        .bounds(true)
        .policy(ScrapePolicy::Flush)
        .build()
        .unwrap();
    let mut text = Vec::new();
    let r = exporter.render(Format::Prometheus, &mut text).unwrap();
    assert_eq!(r.groups, groups);
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
