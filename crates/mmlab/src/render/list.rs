//! `mmlab list` as text and as JSON: the built-in scenarios (their real
//! CPU or thread count, their policies), the flush policies and the NUMA
//! scanner versions.

use lab::report::Mode;
use lab::Scenario;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// What each flush policy is, in one line (distinct for every preset).
pub fn policy_description(name: &str) -> &'static str {
    match name {
        "linux-5.13" => "rstat for memcg: every memory.stat read flushes its subtree",
        "linux-5.15" => "global threshold, root flushes, skip if a flush runs, sync refault flush",
        "linux-5.15-async" => "5.15 with the refault flush queued to the periodic worker",
        "linux-5.15-ratelimited" => "5.15.y: refault flush at most every 2 s (stats up to 4 s old)",
        "linux-6.8" => "per-group thresholds, subtree flushes, no skipping, ratelimited refault",
        "linux-6.17" => "6.8 plus early break, flush lock dropped per CPU, lockless update lists",
        "hierstat" => "folded O(1) thresholds, parallel disjoint flushes, guarded hot-path flush",
        "pre-rstat" => "eager shared atomics up every ancestor (before rstat)",
        _ => "",
    }
}

fn flush_policies() -> impl Iterator<Item = &'static str> {
    hierstat::Preset::ALL
        .iter()
        .map(|p| p.name())
        .chain(["pre-rstat"])
}

/// The list as JSON.
pub fn list_json(scenarios: &[Scenario]) -> Value {
    json!({
        "scenarios": scenarios.iter().map(|sc| json!({
            "name": sc.name(),
            "kind": sc.kind(),
            "mode": sc.mode().as_str(),
            "parallelism": sc.parallelism(),
            "policies": sc.policies(),
            "description": sc.description(),
        })).collect::<Vec<_>>(),
        "policies": flush_policies()
            .map(|n| json!({"name": n, "description": policy_description(n)}))
            .collect::<Vec<_>>(),
        "scanner_versions": numab::ScannerVersion::ALL.iter()
            .map(|v| json!({"description": v.description(), "name": v.to_string()}))
            .collect::<Vec<_>>(),
    })
}

/// The list as text.
pub fn render_list(scenarios: &[Scenario]) -> String {
    let mut out = String::from("scenarios:\n");
    for sc in scenarios {
        let mode = match sc.mode() {
            Mode::Sim => format!("sim, {} CPUs", sc.parallelism()),
            Mode::Real => format!("real, {} threads", sc.parallelism()),
            Mode::Kernel => "host kernel".to_string(),
        };
        // The description whole, wrapped under its column.
        let desc = super::wrap(sc.description(), 58);
        for (i, line) in desc.iter().enumerate() {
            if i == 0 {
                let _ = writeln!(out, "  {:<22} {mode:<16} {line}", sc.name());
            } else {
                let _ = writeln!(out, "{:<41} {line}", "");
            }
        }
        // Wrapped at 100 columns.
        let mut line = String::from("      policies:");
        for (i, p) in sc.policies().iter().enumerate() {
            let item = if i + 1 < sc.policies().len() {
                format!(" {p},")
            } else {
                format!(" {p}")
            };
            if line.chars().count() + item.chars().count() > 100 {
                let _ = writeln!(out, "{line}");
                line = " ".repeat(15);
            }
            line.push_str(&item);
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "\nflush policies (stats and refault scenarios):");
    for name in flush_policies() {
        let _ = writeln!(out, "  {name:<24} {}", policy_description(name));
    }
    let _ = writeln!(out, "\nNUMA scanner versions (numab scenarios):");
    for v in numab::ScannerVersion::ALL {
        let _ = writeln!(out, "  {:<24} {}", v.to_string(), v.description());
    }
    let _ = writeln!(out, "\nlayouts (false-sharing): separated, shared");
    let _ = writeln!(
        out,
        "\nfull descriptions: `mmlab show` of a stored run, or the scenario files"
    );
    out
}
