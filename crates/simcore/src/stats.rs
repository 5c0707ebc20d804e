//! The statistics every crate of the workspace computes, defined once:
//! mean, median, sample standard deviation, %change, nearest-rank
//! quantiles and their [`Summary`], a distribution-free interval for the
//! median ([`median_interval`]), the funclatency-style
//! [`Log2Histogram`], and a least-squares slope.
//!
//! Conventions (the results model's, relied on by recorded outputs):
//! [`mean`] and [`median`] of nothing are NaN; [`variance`] and [`stddev`]
//! of fewer than two values are 0; [`quantile`] of nothing is 0.

use serde::{Deserialize, Serialize};

/// Arithmetic mean, summed in slice order; NaN if empty.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Median (mean of the two middle values for an even count, NaNs left
/// out); NaN if empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Sample variance (divides by `n - 1`); 0 for fewer than two values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Sample standard deviation (divides by `n - 1`); 0 for fewer than two
/// values.
pub fn stddev(xs: &[f64]) -> f64 {
    variance(xs).sqrt()
}

/// Percent change from `base` to `new`; `None` when `base` is 0 or either
/// is not finite.
pub fn pct_change(base: f64, new: f64) -> Option<f64> {
    if base == 0.0 || !base.is_finite() || !new.is_finite() {
        return None;
    }
    Some(100.0 * (new - base) / base.abs())
}

/// The `q` quantile of ascending `sorted` samples by nearest rank (the
/// smallest sample with at least a fraction `q` of the samples at or below
/// it); 0 when empty.
pub fn quantile<T: Copy + Default>(sorted: &[T], q: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// A distribution-free confidence interval for the median of `xs` (NaNs
/// left out) at `confidence` (0.5 ≤ c < 1): the order statistics
/// `x(j) ≤ median ≤ x(n+1−j)` with the largest `j` for which
/// `P(B < j) ≤ (1 − c) / 2`, `B ~ Binomial(n, 1/2)` (the number of samples
/// below the true median). Holds for any continuous distribution; the
/// interval covers at least `confidence`. `None` when `n` is too small for
/// any such `j` (fewer than 11 samples at 0.999).
pub fn median_interval(xs: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let tail = (1.0 - confidence.clamp(0.5, 1.0)) / 2.0;
    // P(B = i) in logs (0.5^n underflows past n ≈ 1070).
    let ln_half_n = n as f64 * 0.5f64.ln();
    let (mut ln_pmf, mut cdf, mut j) = (ln_half_n, 0.0, 0);
    for i in 0..n / 2 {
        // cdf = P(B <= i); j = i + 1 is allowed when P(B < i + 1) <= tail.
        cdf += ln_pmf.exp();
        if cdf > tail {
            break;
        }
        j = i + 1;
        ln_pmf += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    (j >= 1).then(|| (v[j - 1], v[n - j]))
}

/// Least-squares slope of `y` over `x`; `None` with fewer than two points
/// or no spread in `x`.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    Some(sxy / sxx)
}

/// A sample set summarised: count, extremes, mean and nearest-rank
/// percentiles, in the samples' unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `samples` (any order); `None` when empty.
    pub fn of<T: Copy + Into<f64>>(samples: &[T]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = samples.iter().map(|&s| s.into()).collect();
        v.sort_by(f64::total_cmp);
        Some(Summary {
            count: v.len(),
            min: v[0],
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: quantile(&v, 0.50),
            p90: quantile(&v, 0.90),
            p99: quantile(&v, 0.99),
            p999: quantile(&v, 0.999),
            max: v[v.len() - 1],
        })
    }
}

/// Log2 histogram as bcc's funclatency prints it: `buckets[i]` counts
/// samples `v` with `2^i <= v < 2^(i+1)` (bucket 0 also holds 0).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Histogram {
    /// Sample counts per power-of-two bucket.
    pub buckets: Vec<u64>,
}

/// One bucket of a [`Log2Histogram`]: `[lo, hi]` inclusive and its count
/// (funclatency's `lo -> hi : count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Bucket {
    /// Lowest value in the bucket.
    pub lo: u64,
    /// Highest value in the bucket.
    pub hi: u64,
    /// Samples in it.
    pub count: u64,
}

impl Log2Histogram {
    /// The histogram of `samples`.
    pub fn of(samples: &[u64]) -> Log2Histogram {
        let mut h = Log2Histogram::default();
        for &v in samples {
            h.record(v);
        }
        h
    }

    /// Index of the bucket holding `v`.
    pub fn bucket_of(v: u64) -> usize {
        if v == 0 {
            0
        } else {
            63 - v.leading_zeros() as usize
        }
    }

    /// Records one sample.
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    /// Records `n` samples of value `v`.
    pub fn record_n(&mut self, v: u64, n: u64) {
        let b = Self::bucket_of(v);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += n;
    }

    /// Adds every bucket of `other` into `self`.
    pub fn merge(&mut self, other: &Log2Histogram) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
    }

    /// Total number of samples.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The buckets from the first to the last non-empty one, with their
    /// bounds (`[0, 1]`, `[2, 3]`, `[4, 7]`, …).
    pub fn nonempty_range(&self) -> Vec<Log2Bucket> {
        let Some(first) = self.buckets.iter().position(|&c| c > 0) else {
            return Vec::new();
        };
        let last = self.buckets.iter().rposition(|&c| c > 0).unwrap_or(first);
        (first..=last)
            .map(|k| Log2Bucket {
                lo: if k == 0 { 0 } else { 1u64 << k },
                hi: if k >= 63 {
                    u64::MAX
                } else {
                    (1u64 << (k + 1)) - 1
                },
                count: self.buckets[k],
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_by_order_statistics() {
        // n = 10 at 0.95: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) =
        // 56/1024, so j = 2: the 2nd and the 9th of the sorted samples
        // (the textbook interval for ten samples).
        let xs: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert_eq!(median_interval(&xs, 0.95), Some((2.0, 9.0)));
        // Too few samples for 0.999: P(B = 0) = 1/1024 > 0.0005.
        assert_eq!(median_interval(&xs, 0.999), None);
        // Wider at a higher confidence, and around the median.
        let xs: Vec<f64> = (0..201).map(f64::from).collect();
        let (a, b) = median_interval(&xs, 0.95).unwrap();
        let (c, d) = median_interval(&xs, 0.999).unwrap();
        assert!(c < a && a < 100.0 && 100.0 < b && b < d, "{a} {b} {c} {d}");
        // The normal approximation: j ~ n/2 - z sqrt(n)/2 (z = 1.96).
        assert!(
            (a - (100.5 - 1.96 * 201f64.sqrt() / 2.0)).abs() <= 2.0,
            "{a}"
        );
        // Large n does not underflow.
        let xs: Vec<f64> = (0..5000).map(f64::from).collect();
        let (a, b) = median_interval(&xs, 0.999).unwrap();
        assert!(a > 2300.0 && b < 2700.0, "{a} {b}");
        assert_eq!(median_interval(&[], 0.9), None);
    }

    #[test]
    fn mean_median_and_spread() {
        assert!(mean(&[]).is_nan());
        assert!(median(&[]).is_nan());
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
        assert_eq!(median(&[3.0, 1.0, f64::NAN, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(stddev(&[5.0]), 0.0);
        let sd = stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((sd - 2.138).abs() < 1e-3, "{sd}");
        assert_eq!(pct_change(100.0, 90.0), Some(-10.0));
        assert_eq!(pct_change(0.0, 1.0), None);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(quantile(&v, 0.5), 500);
        assert_eq!(quantile(&v, 0.99), 990);
        assert_eq!(quantile(&v, 0.999), 999);
        assert_eq!(quantile(&v, 1.0), 1000);
        assert_eq!(quantile::<u64>(&[], 0.5), 0);
        let s = Summary::of(&(1..=1000u32).collect::<Vec<_>>()).unwrap();
        assert_eq!(
            (s.min, s.p50, s.p99, s.p999, s.max, s.mean),
            (1.0, 500.0, 990.0, 999.0, 1000.0, 500.5)
        );
        assert!(Summary::of::<u32>(&[]).is_none());
    }

    #[test]
    fn slope_of_a_line() {
        let s = slope(&[(1.0, 10.0), (2.0, 12.0), (4.0, 16.0), (8.0, 24.0)]).unwrap();
        assert!((s - 2.0).abs() < 1e-12);
        assert!(slope(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
        assert!(slope(&[(1.0, 1.0)]).is_none());
    }

    #[test]
    fn log2_buckets_like_funclatency() {
        let h = Log2Histogram::of(&[0, 1, 2, 3, 4, 7, 8, 1000]);
        assert_eq!(h.count(), 8);
        let b = h.nonempty_range();
        assert_eq!((b[0].lo, b[0].hi, b[0].count), (0, 1, 2));
        assert_eq!((b[1].lo, b[1].hi, b[1].count), (2, 3, 2));
        assert_eq!((b[2].lo, b[2].hi, b[2].count), (4, 7, 2));
        let last = b.last().unwrap();
        assert_eq!((last.lo, last.hi, last.count), (512, 1023, 1));
        assert!(Log2Histogram::default().nonempty_range().is_empty());
        assert_eq!(
            Log2Histogram::of(&[u64::MAX]).nonempty_range()[0].hi,
            u64::MAX
        );
        let mut m = Log2Histogram::of(&[1]);
        m.merge(&Log2Histogram::of(&[1024]));
        assert_eq!((m.buckets[0], m.buckets[10], m.count()), (1, 1, 2));
    }
}
