//! `memory.stat` parsing, the stat total that matches the page counter, and
//! latency summaries (percentiles, funclatency-style log2 histograms).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::detect::CgroupVersion;
use crate::error::Error;

/// Parses `memory.stat` ("key value" lines) into a map. Values are unsigned
/// (both interfaces print non-negative integers).
pub fn parse_memory_stat(text: &str) -> Result<BTreeMap<String, u64>, Error> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) else {
            return Err(Error::Parse {
                what: "memory.stat".into(),
                detail: format!("line {}: {line:?}", i + 1),
            });
        };
        let v: u64 = v.parse().map_err(|_| Error::Parse {
            what: "memory.stat".into(),
            detail: format!("line {}: value {v:?}", i + 1),
        })?;
        out.insert(k.to_owned(), v);
    }
    Ok(out)
}

/// The `memory.stat` keys (bytes) whose sum is compared with the page
/// counter, per interface.
///
/// * **v2**: `anon + file + kernel + sock`, the kernel selftest's own check
///   of `memory.stat` against `memory.current` (`test_kmem_memcg_deletion`).
/// * **v1**: `total_rss + total_cache`, compared with `usage_in_bytes −
///   kmem.usage_in_bytes`. On v1 the `memory` page counter also holds kernel
///   memory (page tables, slab), which v1's `memory.stat` does not show, but
///   v1 charges the same pages to the `kmem` counter, so the difference is
///   the user-page counter. `rss` (`NR_ANON_MAPPED`) and `cache`
///   (`NR_FILE_PAGES`, shmem included) move at charge/map time; the LRU
///   counters (`total_active_anon` …) were not chosen because they also lag
///   by the per-CPU LRU-add batches, which would mix a second, unrelated
///   delay into the rstat staleness being measured. The `total_` keys are
///   the hierarchical ones (the parent's own `rss` omits the leaf).
pub fn stat_total_keys(version: CgroupVersion) -> &'static [&'static str] {
    match version {
        CgroupVersion::V1 => &["total_rss", "total_cache"],
        CgroupVersion::V2 => &["anon", "file", "kernel", "sock"],
    }
}

/// Sums [`stat_total_keys`] in `stat`, in bytes; a missing key is an error.
pub fn stat_total_bytes(
    version: CgroupVersion,
    stat: &BTreeMap<String, u64>,
) -> Result<u64, Error> {
    let mut sum = 0u64;
    for k in stat_total_keys(version) {
        let v = stat.get(*k).ok_or_else(|| Error::Parse {
            what: "memory.stat".into(),
            detail: format!("no {k:?} key ({version} interface)"),
        })?;
        sum = sum.saturating_add(*v);
    }
    Ok(sum)
}

/// Percentiles of a sample set (nearest rank), in the samples' unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Number of samples.
    pub count: usize,
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
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

impl Percentiles {
    /// Summarises `samples` (any order); `None` when empty.
    pub fn of<T: Copy + Into<f64>>(samples: &[T]) -> Option<Percentiles> {
        if samples.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = samples.iter().map(|&s| s.into()).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let rank = |q: f64| -> f64 {
            // Nearest rank: the smallest sample with at least q of the
            // samples at or below it.
            let r = (q * v.len() as f64).ceil() as usize;
            v[r.clamp(1, v.len()) - 1]
        };
        Some(Percentiles {
            count: v.len(),
            min: v[0],
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            p999: rank(0.999),
            max: v[v.len() - 1],
        })
    }
}

/// One bucket of a log2 histogram: `[lo, hi]` inclusive, as funclatency
/// prints it (`lo -> hi : count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Bucket {
    /// Lowest value in the bucket.
    pub lo: u64,
    /// Highest value in the bucket.
    pub hi: u64,
    /// Samples in it.
    pub count: u64,
}

/// A funclatency-style power-of-two histogram (bucket k holds
/// `[2^k, 2^(k+1) − 1]`, bucket 0 holds 0 and 1), from the first to the last
/// non-empty bucket.
pub fn log2_histogram(samples: &[u64]) -> Vec<Log2Bucket> {
    let mut counts = [0u64; 64];
    for &s in samples {
        let k = if s <= 1 {
            0
        } else {
            63 - s.leading_zeros() as usize
        };
        counts[k] += 1;
    }
    let Some(first) = counts.iter().position(|&c| c > 0) else {
        return Vec::new();
    };
    let last = counts.iter().rposition(|&c| c > 0).unwrap_or(first);
    (first..=last)
        .map(|k| Log2Bucket {
            lo: if k == 0 { 0 } else { 1u64 << k },
            hi: if k == 63 {
                u64::MAX
            } else {
                (1u64 << (k + 1)) - 1
            },
            count: counts[k],
        })
        .collect()
}

/// Mean and sample standard deviation.
pub(crate) fn mean_stddev(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Least-squares slope of `y` over `x`; `None` with fewer than two distinct x.
pub(crate) fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    Some(sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "cache 8192\nrss 0\nrss_huge 0\nshmem 0\nmapped_file 0\n\
total_cache 12288\ntotal_rss 4194304\ntotal_rss_huge 0\nhierarchical_memory_limit 9223372036854771712\n";

    const V2: &str = "anon 1048576\nfile 4096\nkernel 32768\nkernel_stack 16384\nsock 0\nshmem 0\n";

    #[test]
    fn v1_total_is_hierarchical_rss_plus_cache() {
        let s = parse_memory_stat(V1).unwrap();
        assert_eq!(s["hierarchical_memory_limit"], 9223372036854771712);
        assert_eq!(
            stat_total_bytes(CgroupVersion::V1, &s).unwrap(),
            4194304 + 12288
        );
    }

    #[test]
    fn v2_total_matches_selftest_sum() {
        let s = parse_memory_stat(V2).unwrap();
        assert_eq!(
            stat_total_bytes(CgroupVersion::V2, &s).unwrap(),
            1048576 + 4096 + 32768
        );
        // kernel_stack is part of kernel: not added twice.
        let e = stat_total_bytes(CgroupVersion::V1, &s).unwrap_err();
        assert!(e.to_string().contains("total_rss"), "{e}");
    }

    #[test]
    fn bad_lines_are_errors() {
        assert!(parse_memory_stat("anon\n").is_err());
        assert!(parse_memory_stat("anon -1\n").is_err());
        assert!(parse_memory_stat("anon 1 2\n").is_err());
        assert!(parse_memory_stat("\n\n").unwrap().is_empty());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u32> = (1..=1000).collect();
        let p = Percentiles::of(&v).unwrap();
        assert_eq!(
            (p.min, p.p50, p.p99, p.p999, p.max),
            (1.0, 500.0, 990.0, 999.0, 1000.0)
        );
        assert_eq!(p.mean, 500.5);
        let one = Percentiles::of(&[7u32]).unwrap();
        assert_eq!((one.p50, one.p999), (7.0, 7.0));
        assert!(Percentiles::of::<u32>(&[]).is_none());
    }

    #[test]
    fn log2_buckets_like_funclatency() {
        let h = log2_histogram(&[0, 1, 2, 3, 4, 7, 8, 1000]);
        assert_eq!(
            h[0],
            Log2Bucket {
                lo: 0,
                hi: 1,
                count: 2
            }
        );
        assert_eq!(
            h[1],
            Log2Bucket {
                lo: 2,
                hi: 3,
                count: 2
            }
        );
        assert_eq!(
            h[2],
            Log2Bucket {
                lo: 4,
                hi: 7,
                count: 2
            }
        );
        assert_eq!(
            h[3],
            Log2Bucket {
                lo: 8,
                hi: 15,
                count: 1
            }
        );
        let last = h.last().unwrap();
        assert_eq!((last.lo, last.hi, last.count), (512, 1023, 1));
        assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), 8);
        assert!(log2_histogram(&[]).is_empty());
        assert_eq!(log2_histogram(&[u64::MAX])[0].hi, u64::MAX);
    }

    #[test]
    fn slope_and_spread() {
        let s = slope(&[(1.0, 10.0), (2.0, 12.0), (4.0, 16.0), (8.0, 24.0)]).unwrap();
        assert!((s - 2.0).abs() < 1e-12);
        assert!(slope(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
        let (m, sd) = mean_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((sd - 2.138).abs() < 1e-3);
    }
}
