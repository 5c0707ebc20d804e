//! A run beside its kind's simulation ([`lab::Spec::compare_with_simulation`],
//! `--compare-sim`) as text: each figure measured, simulated, and their
//! ratio, under the headings the kind gives.

use lab::report::SideBySide;

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

/// The side-by-side table: its title, then figure, measured, simulated,
/// measured ÷ simulated, then the notes.
pub fn render_side_by_side(s: &SideBySide) -> String {
    let header = vec![
        "figure".to_string(),
        s.measured.clone(),
        s.simulated.clone(),
        s.ratio.clone(),
    ];
    let rows: Vec<Vec<String>> = s
        .rows
        .iter()
        .map(|r| {
            vec![
                r.figure.clone(),
                fmt_value(r.measured, &r.unit),
                fmt_value(r.simulated, &r.unit),
                r.ratio().map_or("-".into(), |k| format!("{k:.2}x")),
            ]
        })
        .collect();
    let mut text = format!("{}:\n", s.title);
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
    use lab::report::SideRow;

    #[test]
    fn side_by_side_shows_both_values_and_the_ratio() {
        let s = SideBySide {
            title: "host kernel vs simulated linux-6.17".into(),
            measured: "host 6.18.0".into(),
            simulated: "sim linux-6.17 (2 CPUs)".into(),
            ratio: "host / sim".into(),
            rows: vec![
                SideRow {
                    figure: "read p50".into(),
                    unit: "ns".into(),
                    measured: 30_000.0,
                    simulated: 1_500.0,
                },
                SideRow {
                    figure: "slope".into(),
                    unit: "%".into(),
                    measured: 1.0,
                    simulated: f64::NAN,
                },
            ],
            notes: vec!["n".into()],
        };
        let t = render_side_by_side(&s);
        assert!(
            t.starts_with("host kernel vs simulated linux-6.17:\n"),
            "{t}"
        );
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
                .nth(1)
                .is_some_and(|l| l.trim_end().ends_with("host / sim")),
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
