//! `memory.stat` parsing and the stat total that matches the page counter.
//! (Latency summaries and log2 histograms are the workspace's shared ones,
//! [`simcore::stats`].)

use std::collections::BTreeMap;

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
}
