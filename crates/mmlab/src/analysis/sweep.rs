//! A sweep's points as plotted and tabled ([`SweepRow`]), with the noise
//! of their seeds: which points form the trade-off front once run-to-run
//! noise is taken into account ([`pareto_front`]), and how wide an axis
//! must be so that differences within the noise look as small as they are
//! ([`noise_sd`]).

use super::stats::{self, Significance};

/// One point of a sweep: its axes over its seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// The policy's name (`pages_per_shard=16`, or a preset's).
    pub label: String,
    /// `(knob, value)` of the swept knobs; empty for presets.
    pub knobs: Vec<(String, String)>,
    /// Whether it is a built-in preset.
    pub preset: bool,
    /// The seeds stored.
    pub seeds: Vec<u64>,
    /// Mean x over the seeds.
    pub x: f64,
    /// Mean y over the seeds.
    pub y: f64,
    /// x per seed.
    pub xs: Vec<f64>,
    /// y per seed.
    pub ys: Vec<f64>,
}

impl SweepRow {
    /// Standard deviation of x over the seeds (`None` with fewer than 2).
    pub fn x_sd(&self) -> Option<f64> {
        (self.xs.len() >= 2).then(|| stats::stddev(&self.xs))
    }

    /// Standard deviation of y over the seeds (`None` with fewer than 2).
    pub fn y_sd(&self) -> Option<f64> {
        (self.ys.len() >= 2).then(|| stats::stddev(&self.ys))
    }
}

/// Whether `b` is below `a` (lower is better) beyond the noise: the means
/// differ and Welch's test says so; with fewer than two seeds on either
/// side there is no estimate of the noise and the means decide.
fn lower(b: &[f64], a: &[f64]) -> bool {
    let (mb, ma) = (stats::mean(b), stats::mean(a));
    if mb >= ma {
        return false;
    }
    !matches!(stats::significance(b, a), Significance::WithinNoise(_))
}

/// Whether `b` dominates `a`: not worse beyond the noise on either axis,
/// and better beyond it on one.
fn dominates(b: &SweepRow, a: &SweepRow) -> bool {
    let not_worse_x = !lower(&a.xs, &b.xs);
    let not_worse_y = !lower(&a.ys, &b.ys);
    not_worse_x && not_worse_y && (lower(&b.xs, &a.xs) || lower(&b.ys, &a.ys))
}

/// Indices of the rows on the Pareto front (both axes minimised), in
/// increasing x: the rows no other row dominates beyond run-to-run noise
/// (Welch's test over the seeds, p < 0.05), so two points whose
/// difference is within the noise are both on it. Rows with a NaN axis are
/// never on it.
pub fn pareto_front(rows: &[SweepRow]) -> Vec<usize> {
    let ok = |r: &SweepRow| r.x.is_finite() && r.y.is_finite();
    let mut front: Vec<usize> = (0..rows.len())
        .filter(|&i| ok(&rows[i]))
        .filter(|&i| {
            let a = &rows[i];
            !rows
                .iter()
                .enumerate()
                .any(|(j, b)| j != i && ok(b) && dominates(b, a))
        })
        .collect();
    front.sort_by(|&a, &b| rows[a].x.total_cmp(&rows[b].x));
    front
}

/// The run-to-run noise of one axis over the rows: the pooled standard
/// deviation of the rows measured under two seeds or more (`None` when
/// none was).
pub fn noise_sd(rows: &[SweepRow], axis: impl Fn(&SweepRow) -> &[f64]) -> Option<f64> {
    let vars: Vec<f64> = rows
        .iter()
        .map(&axis)
        .filter(|v| v.len() >= 2 && v.iter().all(|x| x.is_finite()))
        .map(stats::variance)
        .collect();
    (!vars.is_empty()).then(|| stats::mean(&vars).sqrt())
}

/// The values of one table column formatted alike: the same number of
/// decimals for all, enough for three significant digits of the smallest
/// non-zero one (exponent form for all when one is below 1e-4 or above
/// 1e8); NaN is `-`.
pub fn column_numbers(values: &[f64]) -> Vec<String> {
    let finite: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v != 0.0)
        .map(f64::abs)
        .collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(0.0, f64::max);
    let exp = !finite.is_empty() && (lo < 1e-4 || hi >= 1e8);
    let decimals = if finite.is_empty() {
        0
    } else {
        (2.0 - lo.log10().floor()).clamp(0.0, 6.0) as usize
    };
    values
        .iter()
        .map(|v| {
            if v.is_nan() {
                "-".into()
            } else if exp {
                format!("{v:.3e}")
            } else {
                format!("{v:.decimals$}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, xs: &[f64], ys: &[f64]) -> SweepRow {
        SweepRow {
            label: label.into(),
            knobs: vec![("k".into(), label.into())],
            preset: false,
            seeds: (1..=xs.len() as u64).collect(),
            x: stats::mean(xs),
            y: stats::mean(ys),
            xs: xs.to_vec(),
            ys: ys.to_vec(),
        }
    }

    #[test]
    fn front_keeps_only_undominated_points() {
        let rows = vec![
            row("a", &[1.0], &[5.0]),
            row("b", &[2.0], &[2.0]),
            row("c", &[3.0], &[3.0]), // dominated by b
            row("d", &[4.0], &[1.0]),
            row("e", &[f64::NAN], &[0.0]),
            row("f", &[1.0], &[6.0]), // dominated by a
        ];
        assert_eq!(pareto_front(&rows), vec![0, 1, 3]);
    }

    #[test]
    fn a_difference_within_the_noise_dominates_nothing() {
        // b's means are lower on both axes, but by far less than the
        // seeds' spread: a stays on the front beside it.
        let a = row("a", &[10.0, 12.0, 8.0], &[5.0, 7.0, 3.0]);
        let b = row("b", &[9.9, 11.9, 7.9], &[4.9, 6.9, 2.9]);
        assert_eq!(pareto_front(&[a.clone(), b.clone()]), vec![1, 0]);
        // The same means with no spread: b dominates.
        let a = row("a", &[10.0, 10.0], &[5.0, 5.0]);
        let b = row("b", &[9.9, 9.9], &[4.9, 4.9]);
        assert_eq!(pareto_front(&[a, b]), vec![1]);
    }

    #[test]
    fn noise_and_columns() {
        let rows = vec![row("a", &[1.0, 3.0], &[0.0]), row("b", &[5.0, 7.0], &[1.0])];
        assert!((noise_sd(&rows, |r| &r.xs).unwrap() - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(noise_sd(&rows, |r| &r.ys), None);
        assert_eq!(
            column_numbers(&[0.00057, 0.0573, f64::NAN]),
            ["0.000570", "0.057300", "-"]
        );
        assert_eq!(column_numbers(&[2144.0, 221955.4]), ["2144", "221955"]);
        assert_eq!(
            column_numbers(&[1.596e8, 83323557.0]),
            ["1.596e8", "8.332e7"]
        );
    }
}
