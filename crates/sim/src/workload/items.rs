//! The stat items of a simulated `memory.stat`.

/// The first items carry real `memory.stat` names; more are `stat_N`.
const NAMES: [&str; 16] = [
    "anon",
    "file",
    "kernel",
    "kernel_stack",
    "pagetables",
    "sock",
    "shmem",
    "file_mapped",
    "file_dirty",
    "file_writeback",
    "anon_thp",
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "slab_reclaimable",
];

/// Names of `n` stat items (at most 64).
pub fn item_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            NAMES
                .get(i)
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("stat_{i}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique() {
        let n = super::item_names(40);
        let mut s = n.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 40);
        assert_eq!(n[0], "anon");
        assert_eq!(n[20], "stat_20");
    }
}
