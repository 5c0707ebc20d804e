//! Kernel mode in the CLI: the side-by-side view of a kernel run and its
//! simulated twin (`mmlab run X-kernel --compare-sim`, the suite's kernel
//! section) and the suite's host check.

use crate::render::display_name;
use anyhow::{Context, Result};
use sim::cost::CostModel;
use sim::report::RunReport;
use sim::scenarios::kernel::{side_by_side, SideBySide};
use sim::{RunOptions, Scenario};
use std::io::Write;

/// The kernel scenarios of the default suite, in order.
pub const KERNEL_SUITE: [&str; 3] = [
    "update-path-kernel",
    "stat-readers-kernel",
    "stale-read-kernel",
];

/// Simulates kernel scenario `sc`'s shapes under the preset closest to the
/// host kernel and prints them beside `report`'s host figures; other kinds
/// print nothing.
pub fn print_side_by_side(
    sc: &Scenario,
    report: &RunReport,
    costs: &CostModel,
    out: &mut dyn Write,
) -> Result<()> {
    let Scenario::Kernel { file, .. } = sc else {
        return Ok(());
    };
    let sbs = side_by_side(file, report, &RunOptions { costs: *costs })
        .with_context(|| format!("simulating the shapes of `{}`", sc.name()))?;
    writeln!(out, "{}", render_side_by_side(&sbs))?;
    Ok(())
}

/// The suite's kernel section: where the host allows kernel mode (root, a
/// writable memory controller) every [`KERNEL_SUITE`] scenario is run,
/// printed with its side-by-side view and added to `reports` and `claims`;
/// where it does not, each prints `skipped: <reason>`. Returns the skipped
/// scenarios with their reasons. A run that fails for another reason is
/// reported and the suite goes on; an interrupted one (Ctrl-C) stops it.
///
/// # Errors
/// Interrupted runs, output errors.
#[allow(clippy::too_many_arguments)]
pub fn suite_section(
    names: &[&str],
    support: Result<(), String>,
    quick: bool,
    verbose: bool,
    costs: &CostModel,
    json_to_stdout: bool,
    mut store: Option<&mut crate::store::Store>,
    ids: &mut Vec<crate::store::RunId>,
    reports: &mut Vec<RunReport>,
    claims: &mut Vec<sim::report::Claim>,
    out: &mut dyn Write,
) -> Result<Vec<(String, String)>> {
    let mut skipped = Vec::new();
    for &name in names {
        let mut sc = crate::cmd::run::load(name)?;
        if quick {
            sc.shrink_for_smoke_test();
        }
        if let Err(reason) = &support {
            if !json_to_stdout {
                writeln!(out, "  {name:<24} skipped: {}", display_name(reason, 64))?;
            }
            skipped.push((name.to_string(), reason.clone()));
            continue;
        }
        let t = std::time::Instant::now();
        let run_started = std::time::SystemTime::now();
        let pb = crate::cmd::run::progress_bar(name);
        let mut cb = |p: sim::Progress| match p {
            sim::Progress::Total(n) => pb.set_length(n),
            sim::Progress::Step(s) => {
                pb.set_message(s);
                pb.inc(1);
            }
        };
        let result = sim::run(&sc, &RunOptions { costs: *costs }, &mut cb);
        pb.finish_and_clear();
        let report = match result {
            Ok(r) => r,
            Err(e) if sim::scenarios::kernel::is_interrupted(&e) => {
                return Err(anyhow::Error::new(e).context(format!("running scenario `{name}`")));
            }
            Err(e) => {
                let reason = e.to_string();
                if !json_to_stdout {
                    let what = if sim::scenarios::kernel::is_host_unsupported(&e) {
                        "skipped"
                    } else {
                        "failed"
                    };
                    writeln!(out, "  {name:<24} {what}: {}", display_name(&reason, 64))?;
                }
                skipped.push((name.to_string(), reason));
                continue;
            }
        };
        let id = match store.as_deref_mut() {
            Some(st) => Some(crate::cmd::store::save_one(st, &report, run_started)?),
            None => None,
        };
        ids.extend(id);
        let these = sim::claims(&report, &sc);
        if json_to_stdout {
        } else if verbose {
            crate::cmd::suite::verbose_heading(name, &sc, out)?;
            crate::cmd::run::print_report(&report, &sc, out)?;
            print_side_by_side(&sc, &report, costs, out)?;
            crate::cmd::suite::verbose_footer(name, t.elapsed(), id, out)?;
        } else {
            crate::cmd::suite::summary_line(name, t.elapsed(), &these, id, out)?;
        }
        claims.extend(these);
        reports.push(report);
    }
    Ok(skipped)
}

/// Whether `e` is a kernel-mode run stopped by SIGINT/SIGTERM.
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<sim::SimError>()
            .is_some_and(sim::scenarios::kernel::is_interrupted)
    })
}

/// A figure for the table: µs for ns values, 3 significant places otherwise.
fn fmt_value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match unit {
        "ns" if v.abs() < 1e3 => format!("{v:.1} ns"),
        "ns" => format!("{:.2} µs", v / 1e3),
        "%" => format!("{v:+.2}%"),
        "ratio" => format!("{v:.3}"),
        _ => format!("{v:.0} {unit}"),
    }
}

/// The side-by-side table: figure, host, simulated preset, host ÷ sim.
pub fn render_side_by_side(s: &SideBySide) -> String {
    let header = vec![
        "figure".to_string(),
        format!("host {}", s.host_kernel),
        format!("sim {} ({} CPUs)", s.preset, s.cpus),
        "host / sim".to_string(),
    ];
    let rows: Vec<Vec<String>> = s
        .rows
        .iter()
        .map(|r| {
            vec![
                r.figure.clone(),
                fmt_value(r.host, &r.unit),
                fmt_value(r.sim, &r.unit),
                r.ratio().map_or("-".into(), |k| format!("{k:.2}x")),
            ]
        })
        .collect();
    let mut text = format!("host kernel vs simulated {}:\n", s.preset);
    text.push_str(&aligned(&header, &rows));
    for n in &s.notes {
        text.push_str(&format!("\n  note: {n}"));
    }
    text.push('\n');
    text
}

/// Left-aligned first column, right-aligned others, two spaces apart.
fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            std::iter::once(header)
                .chain(rows.iter().map(Vec::as_slice))
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        out.push_str("  ");
        for (c, cell) in r.iter().enumerate() {
            let pad = width[c].saturating_sub(cell.chars().count());
            if c == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::scenarios::kernel::SideRow;

    #[test]
    fn a_host_without_kernel_mode_skips_every_kernel_scenario_with_the_reason() {
        let mut reports = Vec::new();
        let mut claims = Vec::new();
        let mut out = Vec::new();
        let skipped = suite_section(
            &KERNEL_SUITE,
            Err("kernel mode needs root (effective uid 0); running as uid 1000".into()),
            true,
            false,
            &CostModel::defaults(),
            false,
            None,
            &mut Vec::new(),
            &mut reports,
            &mut claims,
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(skipped.len(), KERNEL_SUITE.len());
        for name in KERNEL_SUITE {
            assert!(
                text.contains(&format!("  {name:<24} skipped: kernel mode needs root")),
                "{text}"
            );
        }
        assert!(reports.is_empty() && claims.is_empty());
    }

    #[test]
    fn side_by_side_shows_both_values_and_the_ratio() {
        let s = SideBySide {
            preset: "linux-6.17".into(),
            host_kernel: "6.18.0".into(),
            cpus: 2,
            rows: vec![
                SideRow {
                    figure: "read p50".into(),
                    unit: "ns".into(),
                    host: 30_000.0,
                    sim: 1_500.0,
                },
                SideRow {
                    figure: "slope".into(),
                    unit: "%".into(),
                    host: 1.0,
                    sim: f64::NAN,
                },
            ],
            notes: vec!["n".into()],
        };
        let t = render_side_by_side(&s);
        assert!(
            t.contains("30.00 µs") && t.contains("1.50 µs") && t.contains("20.00x"),
            "{t}"
        );
        assert!(
            t.contains("host 6.18.0") && t.contains("sim linux-6.17 (2 CPUs)"),
            "{t}"
        );
        assert!(
            t.lines()
                .any(|l| l.contains("slope") && l.trim_end().ends_with('-')),
            "{t}"
        );
        assert!(t.contains("note: n"), "{t}");
    }
}
