//! Tunables (the NUMA-balancing sysctls) and the cost model that turns
//! accesses, hint faults, PTE updates and migrations into user/sys time.

use serde::Deserialize;

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;

/// The `/sys/kernel/debug/sched/numa_balancing/` knobs and scheduler
/// constants, with the kernel's defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Sysctl {
    /// `scan_period_min_ms` (1000).
    pub scan_period_min_ms: u32,
    /// `scan_period_max_ms` (60000).
    pub scan_period_max_ms: u32,
    /// `scan_size_mb` (256).
    pub scan_size_mb: u32,
    /// `scan_delay_ms` (1000); the PID window rotates every 4 × this.
    pub scan_delay_ms: u32,
    /// Scheduler tick rate (`HZ`), 250 by default.
    pub hz: u32,
}

impl Default for Sysctl {
    fn default() -> Self {
        Sysctl {
            scan_period_min_ms: 1000,
            scan_period_max_ms: 60_000,
            scan_size_mb: 256,
            scan_delay_ms: 1000,
            hz: 250,
        }
    }
}

impl Sysctl {
    /// `TICK_NSEC`.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.hz.max(1))
    }

    /// `jiffies` at virtual time `ns` (time 0 is jiffy 0).
    pub fn jiffies(&self, ns: u64) -> u64 {
        ns / self.tick_ns()
    }

    /// `msecs_to_jiffies(ms)`: rounds up to whole ticks.
    pub fn msecs_to_jiffies(&self, ms: u32) -> u64 {
        (u64::from(ms) * NS_PER_MS).div_ceil(self.tick_ns())
    }

    /// `VMA_PID_RESET_PERIOD` = 4 × scan delay, in ns.
    pub fn pid_reset_period_ns(&self) -> u64 {
        4 * u64::from(self.scan_delay_ms) * NS_PER_MS
    }

    /// Base pages (4 KiB) in one scan window: `scan_size << (20 - PAGE_SHIFT)`.
    pub fn scan_window_pages(&self) -> u64 {
        u64::from(self.scan_size_mb.max(1)) << (20 - 12)
    }
}

/// `MAX_SCAN_WINDOW` in MB/s: the scan rate ceiling behind `task_scan_min`.
pub const MAX_SCAN_WINDOW: u32 = 2560;

/// Number of scan windows needed to cover `rss_pages` (minimum 1):
/// `task_nr_scan_windows()`.
pub fn nr_scan_windows(rss_pages: u64, sysctl: &Sysctl) -> u64 {
    let per = sysctl.scan_window_pages();
    let rounded = rss_pages.div_ceil(per) * per;
    (rounded / per).max(1)
}

/// `task_scan_min()` in ms: never scan faster than `MAX_SCAN_WINDOW`, nor
/// faster than `scan_period_min` spread over the windows.
pub fn task_scan_min_ms(rss_pages: u64, sysctl: &Sysctl) -> u32 {
    let scan_size = sysctl.scan_size_mb.max(1);
    let floor = 1000 / (MAX_SCAN_WINDOW / scan_size).max(1);
    let windows = nr_scan_windows(rss_pages, sysctl);
    let by_period = (u64::from(sysctl.scan_period_min_ms) / windows) as u32;
    floor.max(by_period)
}

/// `task_scan_max()` in ms without the numa-group scaling.
pub fn task_scan_max_ms(rss_pages: u64, sysctl: &Sysctl) -> u32 {
    let smin = task_scan_min_ms(rss_pages, sysctl);
    let windows = nr_scan_windows(rss_pages, sysctl);
    let smax = (u64::from(sysctl.scan_period_max_ms) / windows) as u32;
    smin.max(smax)
}

/// Group scaling applied by `task_scan_max()`/`task_scan_start()` for a
/// task in a numa group: `period * refcount * (shared+1) / (private+shared+1)`.
pub fn group_scaled_period(period_ms: u32, refcount: u64, shared: u64, private: u64) -> u64 {
    let p = u64::from(period_ms)
        .saturating_mul(refcount)
        .saturating_mul(shared + 1);
    p / (private + shared + 1)
}

/// The mmtests "AutoNUMA cost" (vmstat extractor):
/// `(7 × numa_pte_updates + 5000 × numa_hint_faults + 19 ×
/// numa_pages_migrated) / 1e6`. The stray `;` in mmtests drops the
/// page-copy term it meant to add; this reproduces what mmtests prints.
pub fn autonuma_cost(pte_updates: u64, hint_faults: u64, pages_migrated: u64) -> f64 {
    (7.0 * pte_updates as f64 + 5000.0 * hint_faults as f64 + 19.0 * pages_migrated as f64) / 1e6
}

/// Per-event costs in virtual nanoseconds. User time comes from accesses,
/// system time from faults, scans and migrations. Defaults are calibrated
/// against the source thread's base run (2-node, 256-CPU Milan, numa01_THREAD_ALLOC,
/// 82.8 s elapsed): a saturated remote write at 2.5× a local one (7 µs per
/// local 4 KiB page with all 256 CPUs writing, about 0.6 GB/s per thread)
/// and a whole-buffer convoy of a few seconds (see the module docs).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CostModel {
    /// Writing one local 4 KiB page with every CPU writing (user time);
    /// with fewer writers the price scales down with their share.
    pub local_page_ns: u64,
    /// Writing one remote 4 KiB page with every CPU writing (user time).
    pub remote_page_ns: u64,
    /// Writing one local 4 KiB page alone on the machine: the floor of the
    /// bandwidth-share scaling (remote keeps the remote/local ratio).
    pub solo_page_ns: u64,
    /// Relative per-step speed jitter in per mille (seeded).
    pub jitter_permille: u32,
    /// Spread of the constant per-thread speed factor, per mille: each
    /// thread's writes cost `1000 ± spread` per mille of the price (drawn
    /// once per thread from the seed), so a pack of threads sweeping the
    /// same buffer spreads out.
    pub speed_spread_permille: u32,
    /// First-touch fault of a 4 KiB page (alloc + zero), system time.
    pub first_touch_4k_ns: u64,
    /// First-touch fault of a 2 MiB THP, system time.
    pub first_touch_2m_ns: u64,
    /// Convoy write-sharing cost: per page (per PMD for a THP) and per
    /// thread of the convoy, user time (every thread of numa01 zeroes the
    /// same buffer at the same time first, so its stores contend). A
    /// convoy thread pays this stall plus 1/n of a plain write (n threads
    /// in the convoy): each line comes from memory and goes back once per
    /// pass for all of them, so the page's node hardly matters there.
    pub convoy_fault_ns: u64,
    /// One NUMA hint fault on a 4 KiB PTE (trap, restore, bookkeeping).
    pub hint_fault_4k_ns: u64,
    /// One NUMA hint fault on a 2 MiB PMD.
    pub hint_fault_2m_ns: u64,
    /// Fixed cost of one migration (isolate, unmap, TLB shootdown, remap).
    pub migrate_fixed_ns: u64,
    /// Copy cost per migrated 4 KiB page.
    pub migrate_copy_page_ns: u64,
    /// Visiting one VMA in `task_numa_work()` (skipped or not).
    pub scan_vma_ns: u64,
    /// Examining one page-table unit inside `change_prot_numa()`.
    pub scan_unit_ns: u64,
    /// Making one 4 KiB PTE PROT_NONE.
    pub pte_update_ns: u64,
    /// Making one PMD PROT_NONE.
    pub pmd_update_ns: u64,
    /// TLB flush after a `change_prot_numa()` call that changed something.
    pub tlb_flush_ns: u64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            local_page_ns: 7_000,
            remote_page_ns: 17_500,
            solo_page_ns: 1_000,
            jitter_permille: 50,
            speed_spread_permille: 100,
            first_touch_4k_ns: 1_500,
            first_touch_2m_ns: 400_000,
            convoy_fault_ns: 30,
            hint_fault_4k_ns: 20_000,
            hint_fault_2m_ns: 40_000,
            migrate_fixed_ns: 200_000,
            migrate_copy_page_ns: 1_000,
            scan_vma_ns: 150,
            scan_unit_ns: 20,
            pte_update_ns: 10,
            pmd_update_ns: 200,
            tlb_flush_ns: 5_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autonuma_cost_reproduces_mmtests_figure() {
        let c = autonuma_cost(152_259_275, 154_660_352, 8_179_067);
        assert!((c - 774_522.98).abs() < 0.005, "{c}");
        // T9's patched column is consistent too (44,666.84 rounds from these).
        assert!(autonuma_cost(0, 0, 0) == 0.0);
    }

    #[test]
    fn scan_bounds_for_3gib_rss() {
        let s = Sysctl::default();
        let rss = (3u64 << 30) >> 12;
        assert_eq!(nr_scan_windows(rss, &s), 12);
        assert_eq!(task_scan_min_ms(rss, &s), 100);
        assert_eq!(task_scan_max_ms(rss, &s), 5000);
        // A tiny RSS is one window: min 1000 ms, max 60 s.
        assert_eq!(task_scan_min_ms(1, &s), 1000);
        assert_eq!(task_scan_max_ms(0, &s), 60_000);
    }

    #[test]
    fn group_scaling() {
        assert_eq!(group_scaled_period(5000, 4, 0, 0), 20_000);
        assert_eq!(group_scaled_period(5000, 4, 1, 98), 400);
    }
}
