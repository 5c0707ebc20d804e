//! The comparison table model shared by the text ([`crate::render::text`]) and HTML
//! ([`crate::render::html`]) renderers: one row per metric (and per percentile of a
//! metric), one column per policy or stored run, each cell holding the mean,
//! %stddev and the change against the first column with its significance.

use crate::analysis::stats::{self, Significance};
use lab::report::{MetricSamples, PolicyResult, RunReport};

/// Order in which percentile rows follow their metric; other names follow
/// alphabetically.
const PERCENTILE_ORDER: [&str; 5] = ["p50", "p90", "p99", "p999", "max"];

/// A comparison table: `columns` labels and one [`TableRow`] per metric.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonTable {
    /// Column labels (policy names or stored-run labels); the first column
    /// is the baseline of every change.
    pub columns: Vec<String>,
    /// Rows in display order.
    pub rows: Vec<TableRow>,
}

/// One metric (or one percentile of a metric) across all columns.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// Display name: the metric name, or `metric.p99` for a percentile row.
    pub metric: String,
    /// Unit of the values.
    pub unit: String,
    /// `true` when a larger value is better.
    pub higher_is_better: bool,
    /// One cell per column, in column order.
    pub cells: Vec<Cell>,
}

/// One column's statistics for a row.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Per-run values the cell summarises (empty when the column lacks the metric).
    pub values: Vec<f64>,
    /// Mean of `values`; `None` when the column lacks the metric.
    pub mean: Option<f64>,
    /// Standard deviation as a percentage of the mean (0 for one run).
    pub pct_stddev: f64,
    /// Change against the first column; `None` for the first column, for a
    /// missing metric, or when the baseline mean is zero.
    pub change: Option<Change>,
}

/// Change of a cell against the first column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// The change: percent, or an absolute difference when `absolute`.
    pub value: f64,
    /// `true` for metrics already in percent (unit `%`): the robot prints
    /// the absolute difference of percentages, without a `%` sign.
    pub absolute: bool,
    /// Welch's verdict over the per-run values (see [`stats::significance`]).
    pub significance: Significance,
}

impl Change {
    /// `true` when the change is an improvement given the row's direction.
    pub fn is_improvement(&self, higher_is_better: bool) -> bool {
        (self.value > 0.0) == higher_is_better
    }
}

impl ComparisonTable {
    /// Builds the table for `columns` (label, result); rows are the union of
    /// the columns' metrics in name order, each followed by its percentile
    /// rows (`p50`, `p90`, `p99`, `p999`, `max`, then any others).
    pub fn build(columns: &[(&str, &PolicyResult)]) -> ComparisonTable {
        let mut names: Vec<&str> = columns
            .iter()
            .flat_map(|(_, r)| r.metrics.keys().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        let mut rows = Vec::new();
        for name in names {
            let samples: Vec<Option<&MetricSamples>> =
                columns.iter().map(|(_, r)| r.metrics.get(name)).collect();
            let proto = samples.iter().flatten().next().copied();
            let unit = proto.map(|m| m.unit.clone()).unwrap_or_default();
            let hib = proto.is_some_and(|m| m.higher_is_better);
            rows.push(make_row(
                name.to_string(),
                &unit,
                hib,
                samples.iter().map(|m| m.map(|m| m.values.clone())),
            ));
            let mut pcts: Vec<&str> = samples
                .iter()
                .flatten()
                .flat_map(|m| m.percentiles.keys().map(String::as_str))
                .collect();
            pcts.sort_unstable_by_key(|p| percentile_rank(p));
            pcts.dedup();
            for p in pcts {
                rows.push(make_row(
                    format!("{name}.{p}"),
                    &unit,
                    hib,
                    samples
                        .iter()
                        .map(|m| m.and_then(|m| m.percentiles.get(p).cloned())),
                ));
            }
        }
        ComparisonTable {
            columns: columns.iter().map(|(l, _)| l.to_string()).collect(),
            rows,
        }
    }

    /// The table of a run: one column per policy in `policy_order` (then
    /// any policy missing from the order, by name).
    pub fn for_report(report: &RunReport) -> ComparisonTable {
        let cols = report_columns(report);
        ComparisonTable::build(&cols)
    }
}

/// The `(policy name, result)` columns of a report in display order:
/// `policy_order` first, then policies it does not list, by name.
pub fn report_columns(report: &RunReport) -> Vec<(&str, &PolicyResult)> {
    let mut cols: Vec<(&str, &PolicyResult)> = report
        .policy_order
        .iter()
        .filter_map(|p| report.policies.get(p).map(|r| (p.as_str(), r)))
        .collect();
    for (name, r) in &report.policies {
        if !report.policy_order.contains(name) {
            cols.push((name.as_str(), r));
        }
    }
    cols
}

fn percentile_rank(p: &str) -> (usize, String) {
    let idx = PERCENTILE_ORDER
        .iter()
        .position(|x| *x == p)
        .unwrap_or(PERCENTILE_ORDER.len());
    (idx, p.to_string())
}

fn make_row(
    metric: String,
    unit: &str,
    higher_is_better: bool,
    values: impl Iterator<Item = Option<Vec<f64>>>,
) -> TableRow {
    let values: Vec<Option<Vec<f64>>> = values.collect();
    let absolute = unit == "%";
    let base = values.first().cloned().flatten();
    let cells = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let Some(v) = v.as_ref().filter(|v| !v.is_empty()) else {
                return Cell {
                    values: Vec::new(),
                    mean: None,
                    pct_stddev: 0.0,
                    change: None,
                };
            };
            let mean = stats::mean(v);
            let change = match (&base, i) {
                (Some(b), i) if i > 0 && !b.is_empty() => {
                    let bm = stats::mean(b);
                    let value = if absolute {
                        Some(mean - bm)
                    } else {
                        stats::pct_change(bm, mean)
                    };
                    value.map(|value| Change {
                        value,
                        absolute,
                        significance: stats::significance(b, v),
                    })
                }
                _ => None,
            };
            Cell {
                values: v.clone(),
                mean: Some(mean),
                pct_stddev: stats::pct_stddev(v),
                change,
            }
        })
        .collect();
    TableRow {
        metric,
        unit: unit.to_string(),
        higher_is_better,
        cells,
    }
}

/// Formats a value as the kernel test robot does: two decimals below 1000,
/// an integer below 1e8, and four significant digits in exponent form
/// above (`1.142e+09`, `1.7e+09`). One departure: a non-zero value below
/// 0.01, which the robot prints as `0.00`, keeps three significant digits
/// (`0.00423`; exponent form below 1e-4) so a small rate never reads as zero.
pub fn robot_number(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a != 0.0 && a < 1e-4 {
        exp_form(v)
    } else if a != 0.0 && a < 0.01 {
        // The robot would print 0.00; a non-zero rate must not read as zero.
        let decimals = (2.0 - a.log10().floor()) as usize;
        let s = format!("{v:.decimals$}");
        s.trim_end_matches('0').to_string()
    } else if a < 1000.0 {
        format!("{v:.2}")
    } else if a < 1e8 {
        format!("{v:.0}")
    } else {
        exp_form(v)
    }
}

/// The values of one row (one metric across policies or runs) formatted
/// alike: as [`robot_number`], except that when one of them needs the
/// exponent form (1e8 and above), every one from 1000 up takes it too, so
/// a row never mixes `1.596e+08` with `83323557`.
pub fn robot_numbers(values: &[Option<f64>]) -> Vec<String> {
    let big = values
        .iter()
        .flatten()
        .any(|v| v.abs() >= 1e8 && v.is_finite());
    values
        .iter()
        .map(|v| match v {
            None => String::new(),
            Some(v) if big && v.is_finite() && v.abs() >= 1000.0 => exp_form(*v),
            Some(v) => robot_number(*v),
        })
        .collect()
}

/// Four significant digits in C's `%g` exponent style: `1.142e+09`.
fn exp_form(v: f64) -> String {
    let s = format!("{v:.3e}"); // e.g. 1.142e9
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mant = if mant.contains('.') {
        mant.trim_end_matches('0').trim_end_matches('.')
    } else {
        mant
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_formatted_alike() {
        assert_eq!(
            super::robot_numbers(&[Some(1.596e8), Some(83_323_557.0), None, Some(12.5)]),
            ["1.596e+08", "8.332e+07", "", "12.50"]
        );
        assert_eq!(
            super::robot_numbers(&[Some(5000.0), Some(2.0)]),
            ["5000", "2.00"]
        );
    }

    #[test]
    fn robot_numbers() {
        assert_eq!(robot_number(2.09), "2.09");
        assert_eq!(robot_number(0.0), "0.00");
        assert_eq!(robot_number(1058.67), "1059");
        assert_eq!(robot_number(3797041.0), "3797041");
        assert_eq!(robot_number(1.142e9), "1.142e+09");
        assert_eq!(robot_number(1.7e9), "1.7e+09");
        assert_eq!(robot_number(8.437e8), "8.437e+08");
        assert_eq!(robot_number(-2.5e10), "-2.5e+10");
        // Below 0.01 the robot's 0.00 would hide a non-zero value.
        assert_eq!(robot_number(0.0142), "0.01");
        assert_eq!(robot_number(0.00423), "0.00423");
        assert_eq!(robot_number(0.004), "0.004");
        assert_eq!(robot_number(1.234e-5), "1.234e-05");
    }
}
