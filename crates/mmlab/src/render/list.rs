//! `mmlab list` as text and as JSON: the built-in scenarios (their real
//! CPU or thread count, their policies), the flush policies and the NUMA
//! scanner versions.

use lab::report::Mode;
use lab::Scenario;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// What each flush policy is, in one line (distinct for every built-in:
/// the presets, the built-in kernel policies, the pre-rstat baseline).
pub fn policy_description(name: &str) -> &'static str {
    lab::policy::describe(name)
}

fn flush_policies() -> Vec<String> {
    lab::FlushPolicy::builtin_names()
}

/// The built-in machines with their one-line names.
fn machines() -> Vec<(String, String)> {
    sim::machines::BUILTIN
        .iter()
        .filter_map(|(n, _)| Some((n.to_string(), sim::machines::Machine::builtin(n)?.name)))
        .collect()
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
            .iter()
            .map(|n| json!({"name": n, "description": policy_description(n)}))
            .collect::<Vec<_>>(),
        "machines": machines()
            .iter()
            .map(|(n, d)| json!({"name": n, "description": d}))
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
        // Wrapped under their column, within 100 columns.
        for (i, line) in super::wrap(policy_description(&name), 73)
            .iter()
            .enumerate()
        {
            let first = if i == 0 { name.as_str() } else { "" };
            let _ = writeln!(out, "  {first:<24} {line}");
        }
    }
    let _ = writeln!(
        out,
        "\nmachines (will-it-scale and netperf: `machine = \"NAME\"` or a file, docs/machines.md):"
    );
    for (name, desc) in machines() {
        let desc = super::wrap(&desc, 73);
        for (i, line) in desc.iter().enumerate() {
            let first = if i == 0 { name.as_str() } else { "" };
            let _ = writeln!(out, "  {first:<24} {line}");
        }
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
