//! Scanner versions: which `task_numa_work()` / `vma_is_accessed()` rules run.
//!
//! Each version is a set of [`Features`]; the scan loop in
//! [`crate::scan`] consults the features, never the version name, so a
//! behaviour difference between two versions is always one named flag.

use std::fmt;
use std::str::FromStr;

use crate::NumabError;

/// A NUMA-balancing VMA scanner, as shipped in a kernel or as proposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScannerVersion {
    /// Linux 6.3, before fc137c0ddab2 "sched/numa: enhance vma scanning
    /// logic" and Mel Gorman's "Apply the scan delay to every new vma"
    /// (both v6.4): no per-VMA state, so no access-PID filter and no
    /// per-VMA scan delay; every suitable VMA is scanned in turn. The
    /// reference point of T1/T2 ("before the v6.4 scanning change").
    V6_3,
    /// Linux 6.5 (base of the Aug 2023 RFC, 6.5.0-rc6 / tip 2f88c8e802):
    /// fc137c0ddab2 "sched/numa: enhance vma scanning logic" with the
    /// access-PID filter (two 64-bit `hash_32(pid, 6)` windows rotated every
    /// 4 × scan_delay *after* the filter), unconditional scanning while
    /// `mm->numa_scan_seq < 2`, and the per-VMA scan delay.
    V6_5,
    /// v6.5 plus RFC V1 patch 1/6 alone ("sched/numa: Move up the access
    /// pid reset logic", Mel Gorman's "pidclear" kernel on 6.5.0-rc6): the
    /// PID windows rotate *before* the accessed test, so a VMA's stale PIDs
    /// age out even while it is being skipped. The baseline of Mel Gorman's
    /// RFC 2/6 numa02 comparison.
    Rfc1of6,
    /// v6.5 plus RFC V1 patches 1/6 ("Move up the access pid reset logic")
    /// and 2/6 ("Add disjoint vma unconditional scan logic",
    /// 1ef5cbb92bdb): a PID-inactive VMA is still scanned when its
    /// `vma_scan_select` countdown hits zero; the countdown is refilled with
    /// `1 + ((4 MiB / (u32)vma_size) >> 7)`, exactly as written (32-bit
    /// truncation of the size included).
    Rfc2of6,
    /// Linux 6.7: Mel Gorman's "sched/numa: Complete scanning of partial and
    /// inactive VMAs" series: window rotation moved before the filter,
    /// `prev_scan_seq` with `seq_completed` skips, a started VMA is finished
    /// regardless of PIDs (b7a5b537c55c, `ignore_pid_inactive`), and when
    /// every candidate was PID-inactive one VMA is scanned anyway
    /// (f169c62ff7cd, the `retry_pids` pass).
    V6_7,
    /// Linux 6.8: v6.7 plus 84db47ca7146 "sched/numa: Fix mm numa_scan_seq
    /// based unconditional scan": the two unconditional passes count from
    /// the VMA's own `start_scan_seq`, so late VMAs get them too.
    V6_8,
    /// Linux 6.12 (also 6.10.y/6.11.y stable): v6.8 plus "sched/numa: Fix the
    /// vma scan starving issue": a VMA is accessed when
    /// `mm->numa_scan_seq > prev_scan_seq + get_nr_threads(current)`.
    V6_12,
    /// mmlab's own policy (see [`Features::mmlab`]): v6.12's rules without
    /// the one-VMA-per-call `retry_pids` crawl, a
    /// starvation bound of two full passes that does not grow with the
    /// thread count, a window budget charged by PTEs actually changed
    /// rather than by virtual range (so sparse VMAs such as thread stacks
    /// cannot exhaust the 256 MB window), and half-rate marking of PTEs
    /// whose last fault was already local. No VMA can go more than two
    /// passes without a complete scan.
    Mmlab,
}

/// The behaviour switches a version turns on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Features {
    /// Rotate the PID windows *before* the accessed test (RFC 1/6, v6.7+).
    pub reset_before_filter: bool,
    /// RFC 2/6: consult `vma_scan_select` when the PID test fails.
    pub disjoint_select: bool,
    /// v6.7: skip VMAs already completed in this sequence and finish
    /// started VMAs regardless of PIDs.
    pub complete_partial: bool,
    /// v6.7: when every candidate was PID-inactive, retry from the offset
    /// and scan the first one anyway (`retry_pids`, one VMA per call).
    pub retry_pids: bool,
    /// v6.4+: per-VMA state, with the per-VMA scan delay and the
    /// access-PID filter (off only for v6.3).
    pub vma_filters: bool,
    /// v6.8: the unconditional passes count from `start_scan_seq`.
    pub start_scan_seq: bool,
    /// v6.12: force when `seq > prev_scan_seq + nr_threads`.
    pub force_after_nr_threads: bool,
    /// mmlab: force when `seq > prev_scan_seq + 1` (at most one full pass
    /// without a complete scan of any VMA).
    pub force_every_other_pass: bool,
    /// mmlab: charge the page budget with PTEs actually changed, not with the
    /// whole range handed to `change_prot_numa`.
    pub budget_by_updates: bool,
    /// mmlab: a VMA whose last range exhausted the budget exactly at its
    /// end still counts as completed (the kernel's `goto out` skips the
    /// `prev_scan_seq` update there, so the VMA looks unscanned for a pass).
    pub complete_on_budget_edge: bool,
    /// mmlab: a PTE whose last hint fault was local (the page sits on the
    /// node of the CPU that last faulted on it) is left unmarked for this
    /// many consecutive visits: it was examined, a fault would gain nothing
    /// yet, and the visit after that marks it again in case its user moved.
    /// With the budget charged by changed PTEs, the window then reaches
    /// further into memory that is still misplaced. 0 = mark every visit
    /// (the kernel).
    pub local_skip_visits: u8,
}

impl Features {
    /// mmlab's policy. Rationale, from the simulator's own measurements:
    /// starvation comes from a bound that scales with threads (v6.12) or
    /// does not exist (v6.5–v6.8), and forced visits of sparse VMAs charge
    /// the full 8 MiB range of every thread stack to the 256 MB window
    /// (RFC 2/6). Forcing a VMA costs little when only changed PTEs are
    /// charged, so the starvation bound can be tight without slowing the
    /// dense VMAs that matter. Local PTEs are skipped on every other visit
    /// only: skipping three in four (the first tuning) starved placement of
    /// local faults and made numa01 14% slower than v6.3's unfiltered
    /// scanner; skipping none let a large VMA in numa-disjoint miss its
    /// complete scan.
    pub const fn mmlab() -> Self {
        Features {
            vma_filters: true,
            reset_before_filter: true,
            disjoint_select: false,
            complete_partial: true,
            retry_pids: false,
            start_scan_seq: true,
            force_after_nr_threads: true,
            force_every_other_pass: true,
            budget_by_updates: true,
            complete_on_budget_edge: true,
            local_skip_visits: 1,
        }
    }
}

impl ScannerVersion {
    /// Every version, in chronological order with mmlab last.
    pub const ALL: [ScannerVersion; 8] = [
        ScannerVersion::V6_3,
        ScannerVersion::V6_5,
        ScannerVersion::Rfc1of6,
        ScannerVersion::Rfc2of6,
        ScannerVersion::V6_7,
        ScannerVersion::V6_8,
        ScannerVersion::V6_12,
        ScannerVersion::Mmlab,
    ];

    /// What the version is, in one line (`mmlab list`).
    pub const fn description(self) -> &'static str {
        match self {
            ScannerVersion::V6_3 => "every VMA scanned on every pass (no per-VMA filters)",
            ScannerVersion::V6_5 => {
                "access-PID filter: a VMA is scanned only by tasks that faulted on it"
            }
            ScannerVersion::Rfc1of6 => {
                "v6.5 plus RFC 1/6 alone: PID windows rotate before the access test"
            }
            ScannerVersion::Rfc2of6 => "v6.5 plus forced scans of VMAs no task was allowed to scan",
            ScannerVersion::V6_7 => "v6.5 plus a forced scan every other pass for tasks that fault",
            ScannerVersion::V6_8 => {
                "v6.7 plus start_scan_seq: new VMAs wait a pass before the filter"
            }
            ScannerVersion::V6_12 => {
                "v6.8 plus forced scans after as many passes as the process has threads"
            }
            ScannerVersion::Mmlab => {
                "ours: tight starvation bound, budget charged by changed PTEs only"
            }
        }
    }

    /// The name used on the command line and in scenario files.
    pub const fn name(self) -> &'static str {
        match self {
            ScannerVersion::V6_3 => "v6.3",
            ScannerVersion::V6_5 => "v6.5",
            ScannerVersion::Rfc1of6 => "rfc-1of6",
            ScannerVersion::Rfc2of6 => "rfc-2of6",
            ScannerVersion::V6_7 => "v6.7",
            ScannerVersion::V6_8 => "v6.8",
            ScannerVersion::V6_12 => "v6.12",
            ScannerVersion::Mmlab => "mmlab",
        }
    }

    /// The behaviour switches of this version.
    pub const fn features(self) -> Features {
        let none = Features {
            vma_filters: true,
            reset_before_filter: false,
            disjoint_select: false,
            complete_partial: false,
            retry_pids: false,
            start_scan_seq: false,
            force_after_nr_threads: false,
            force_every_other_pass: false,
            budget_by_updates: false,
            complete_on_budget_edge: false,
            local_skip_visits: 0,
        };
        match self {
            ScannerVersion::V6_3 => Features {
                vma_filters: false,
                ..none
            },
            ScannerVersion::V6_5 => none,
            ScannerVersion::Rfc1of6 => Features {
                reset_before_filter: true,
                ..none
            },
            ScannerVersion::Rfc2of6 => Features {
                reset_before_filter: true,
                disjoint_select: true,
                ..none
            },
            ScannerVersion::V6_7 => Features {
                reset_before_filter: true,
                complete_partial: true,
                retry_pids: true,
                ..none
            },
            ScannerVersion::V6_8 => Features {
                reset_before_filter: true,
                complete_partial: true,
                retry_pids: true,
                start_scan_seq: true,
                ..none
            },
            ScannerVersion::V6_12 => Features {
                reset_before_filter: true,
                complete_partial: true,
                retry_pids: true,
                start_scan_seq: true,
                force_after_nr_threads: true,
                ..none
            },
            ScannerVersion::Mmlab => Features::mmlab(),
        }
    }
}

impl fmt::Display for ScannerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ScannerVersion {
    type Err = NumabError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        let wanted = match wanted.as_str() {
            "6.3" | "v6.3-nofilter" => "v6.3",
            "6.5" | "v6.5-base" | "base" => "v6.5",
            "rfc2023-p1" | "rfc-1/6" | "rfc1of6" | "pidclear" => "rfc-1of6",
            "rfc2023-p2" | "rfc-2/6" | "rfc2of6" | "forcescan" => "rfc-2of6",
            "6.7" => "v6.7",
            "6.8" => "v6.8",
            "6.12" => "v6.12",
            other => other,
        };
        ScannerVersion::ALL
            .into_iter()
            .find(|v| v.name() == wanted)
            .ok_or_else(|| NumabError::UnknownVersion(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for v in ScannerVersion::ALL {
            assert_eq!(v.to_string().parse::<ScannerVersion>().unwrap(), v);
        }
        assert!("v6.6".parse::<ScannerVersion>().is_err());
        assert_eq!(
            "rfc2023-p2".parse::<ScannerVersion>().unwrap(),
            ScannerVersion::Rfc2of6
        );
    }

    #[test]
    fn versions_differ_by_features() {
        let f: Vec<Features> = ScannerVersion::ALL.iter().map(|v| v.features()).collect();
        for i in 0..f.len() {
            for j in i + 1..f.len() {
                assert_ne!(
                    f[i],
                    f[j],
                    "{} vs {}",
                    ScannerVersion::ALL[i],
                    ScannerVersion::ALL[j]
                );
            }
        }
    }
}
