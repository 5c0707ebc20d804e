//! Small-sample statistics for comparison tables: mean, sample standard
//! deviation, %stddev, %change and Welch's unequal-variance t-test.
//!
//! The Student-t distribution is statrs' (without its default features:
//! no nalgebra, no rand). It replaced a hand-rolled incomplete beta
//! function: on a grid of df in 1..120 and |t| up to 12 the two-sided
//! p-values agreed within 1.0e-13 absolute. The unit tests pin values from
//! t tables.
//!
//! # When is a difference significant?
//!
//! [`significance`] answers with a [`Significance`]:
//!
//! * both samples have at least two values and some variance: Welch's
//!   t-test, two-sided, significant when `p < 0.05` ([`ALPHA`]);
//! * both samples have at least two values and **zero** variance (a
//!   deterministic simulation run several times gives identical values):
//!   the means either differ, which is then a real difference
//!   (significant, p = 0), or they are equal (not significant, p = 1);
//! * either sample has fewer than two values: there is no estimate of the
//!   noise, so nothing can be said ([`Significance::Untested`]) and
//!   [`significant`] returns `false`. A sample with no value at all is
//!   treated the same way.

/// Significance level of every test in mmlab: a difference is significant
/// when the two-sided p-value is below this.
pub const ALPHA: f64 = 0.05;

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The shared statistics ([`simcore::stats`]): the one definition of each.
pub use simcore::stats::{mean, median, pct_change, stddev, variance};

/// Standard deviation as a percentage of the mean's magnitude, as the
/// kernel test robot prints it (`± 5%`). `0` when the mean is zero or there
/// are fewer than two values.
pub fn pct_stddev(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if xs.len() < 2 || m == 0.0 || !m.is_finite() {
        return 0.0;
    }
    100.0 * stddev(xs) / m.abs()
}

/// Result of Welch's unequal-variance t-test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// The t statistic, `(mean(b) - mean(a)) / sqrt(va/na + vb/nb)`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test of `b` against `a`. `None` when either sample has fewer
/// than two values or both have zero variance (the statistic is undefined;
/// see [`significance`] for how those cases are decided).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (variance(a) / na, variance(b) / nb);
    let se2 = sa + sb;
    if se2 <= 0.0 || !se2.is_finite() {
        return None;
    }
    let t = (mean(b) - mean(a)) / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let p = student_t_two_sided_p(t, df);
    Some(Welch { t, df, p })
}

/// Outcome of a significance decision between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Significance {
    /// The difference is real at p < [`ALPHA`]; carries the p-value
    /// (`0` for a difference between two zero-variance samples).
    Significant(f64),
    /// The difference is within noise; carries the p-value.
    WithinNoise(f64),
    /// Fewer than two values on one side: no noise estimate, no verdict.
    Untested,
}

/// Decides whether `b` differs from `a`; the rule is in the module docs.
pub fn significance(a: &[f64], b: &[f64]) -> Significance {
    if a.len() < 2 || b.len() < 2 {
        return Significance::Untested;
    }
    match welch(a, b) {
        Some(w) if w.p < ALPHA => Significance::Significant(w.p),
        Some(w) => Significance::WithinNoise(w.p),
        // Both variances are zero: any difference of the means is real.
        None if mean(a) != mean(b) => Significance::Significant(0.0),
        None => Significance::WithinNoise(1.0),
    }
}

/// `true` when `b` differs from `a` at p < [`ALPHA`] (see the module docs
/// for the n = 1 and zero-variance rules).
pub fn significant(a: &[f64], b: &[f64]) -> bool {
    matches!(significance(a, b), Significance::Significant(_))
}

/// Two-sided p-value of a Student-t statistic with `df` degrees of freedom:
/// `P(|T| >= |t|) = 2 F(-|t|)`, `F` being statrs' Student-t CDF; NaN for
/// a NaN input or `df <= 0`.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(d) => (2.0 * d.cdf(-t.abs())).clamp(0.0, 1.0),
        Err(_) => f64::NAN,
    }
}

/// Cumulative distribution function of Student's t with `df` degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = student_t_two_sided_p(t, df) / 2.0;
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn mean_stddev_by_hand() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        // Σ(x-5)² = 32, n-1 = 7.
        assert!(close(variance(&xs), 32.0 / 7.0, 1e-15));
        assert!(close(stddev(&xs), (32.0f64 / 7.0).sqrt(), 1e-15));
        assert!(close(
            pct_stddev(&xs),
            100.0 * (32.0f64 / 7.0).sqrt() / 5.0,
            1e-15
        ));
        assert_eq!(stddev(&[3.0]), 0.0);
        assert_eq!(pct_stddev(&[3.0]), 0.0);
        assert!(mean(&[]).is_nan());
    }

    #[test]
    fn median_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[1.0, f64::NAN, 9.0, 5.0]), 5.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn pct_change_rules() {
        assert_eq!(pct_change(100.0, 74.2), Some(-25.799999999999997));
        assert_eq!(pct_change(-10.0, -5.0), Some(50.0));
        assert_eq!(pct_change(0.0, 5.0), None);
    }

    #[test]
    fn student_t_against_tables() {
        // Two-sided critical values: t(0.975, df) from any t table.
        assert!(close(
            student_t_two_sided_p(12.706_204_736, 1.0),
            0.05,
            1e-6
        ));
        assert!(close(student_t_two_sided_p(2.570_581_836, 5.0), 0.05, 1e-6));
        assert!(close(
            student_t_two_sided_p(2.228_138_852, 10.0),
            0.05,
            1e-6
        ));
        // df = 1 is Cauchy: P(|T| > 1) = 1/2.
        assert!(close(student_t_two_sided_p(1.0, 1.0), 0.5, 1e-12));
        assert!(close(student_t_two_sided_p(0.0, 7.0), 1.0, 1e-12));
        assert!(close(student_t_cdf(-1.0, 1.0), 0.25, 1e-12));
        assert!(close(student_t_cdf(1.0, 1.0), 0.75, 1e-12));
    }

    #[test]
    fn zero_variance_and_small_samples() {
        assert_eq!(significance(&[1.0], &[2.0]), Significance::Untested);
        assert!(!significant(&[1.0], &[2.0]));
        assert!(!significant(&[], &[2.0, 3.0]));
        assert_eq!(
            significance(&[5.0, 5.0], &[6.0, 6.0]),
            Significance::Significant(0.0)
        );
        assert_eq!(
            significance(&[5.0, 5.0], &[5.0, 5.0]),
            Significance::WithinNoise(1.0)
        );
        assert!(welch(&[5.0, 5.0], &[5.0, 5.0]).is_none());
        // One side constant, the other noisy: Welch still works.
        let w = welch(&[5.0, 5.0, 5.0], &[5.0, 6.0, 7.0]).unwrap();
        assert!(close(w.df, 2.0, 1e-12));
    }

    /// Expected values computed with SciPy 1.17.1:
    /// `scipy.stats.ttest_ind(b, a, equal_var=False)` and
    /// `2 * scipy.stats.t.sf(|t|, df)`.
    #[test]
    fn welch_matches_scipy() {
        /// (a, b, t, df, p)
        type Case = (&'static [f64], &'static [f64], f64, f64, f64);
        let cases: [Case; 5] = [
            (
                &[36509.0, 36800.0, 36200.0, 36650.0, 36400.0],
                &[27079.0, 27300.0, 26900.0, 27150.0, 27000.0],
                -76.47790259224455,
                6.921136405867395,
                2.1673102627181147e-11,
            ),
            (
                &[100.0, 110.0, 95.0, 105.0],
                &[104.0, 99.0, 115.0, 108.0],
                0.8560516500077061,
                5.9874396697098335,
                0.424897119123168,
            ),
            (
                &[1.0, 2.0, 3.0],
                &[2.0, 4.0, 6.0, 8.0, 10.0, 12.0],
                3.0618621784789726,
                6.2135922330097095,
                0.021210188680575042,
            ),
            (
                &[5.0, 5.0, 5.0],
                &[5.0, 6.0, 7.0],
                1.7320508075688774,
                2.0,
                0.22540333075851665,
            ),
            (
                &[221955.0, 230000.0, 215000.0],
                &[1663.0, 1700.0, 1600.0],
                -50.91422344003616,
                2.0001814642992795,
                0.0003853117528259481,
            ),
        ];
        for (a, b, t, df, p) in cases {
            let w = welch(a, b).unwrap();
            assert!(close(w.t, t, 1e-10), "t {} vs {}", w.t, t);
            assert!(close(w.df, df, 1e-10), "df {} vs {}", w.df, df);
            assert!(close(w.p, p, 1e-8), "p {} vs {}", w.p, p);
        }
        assert!(significant(cases[0].0, cases[0].1));
        assert!(!significant(cases[1].0, cases[1].1));
        assert!(significant(cases[2].0, cases[2].1));
    }

    #[test]
    fn student_t_p_matches_scipy() {
        let cases = [
            (2.0, 3.0, 0.13932596855884305),
            (0.5, 2.5, 0.6576979198697148),
            (4.2, 7.3, 0.0036750570016489126),
            (-1.3, 11.7, 0.21862850242857337),
            (3.0, 100.0, 0.0034079153433294465),
            (10.0, 1.5, 0.023659355113621557),
        ];
        for (t, df, p) in cases {
            let got = student_t_two_sided_p(t, df);
            assert!(close(got, p, 1e-9), "t={t} df={df}: {got} vs {p}");
        }
    }
}
