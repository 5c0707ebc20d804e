//! Kernel mode's side-by-side view as text: each figure on the host's
//! kernel, under the simulated preset, and their ratio.

use kernelmode::SideBySide;

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
    text.push_str(&super::aligned(&header, &rows));
    for n in &s.notes {
        text.push_str(&format!("\n  note: {n}"));
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelmode::SideRow;

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
