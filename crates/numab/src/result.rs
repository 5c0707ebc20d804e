//! What a run reports: vmstat-style counters, times, the skip-reason
//! histogram, per-VMA coverage and the local-access time series.

use crate::cost::autonuma_cost;
use crate::ScannerVersion;

/// Names of the metrics that the claims on a run read (see
/// [`NumabResult::metrics`] for all of them).
pub mod metric {
    /// Virtual seconds until the last thread finished.
    pub const ELAPSED_S: &str = "elapsed_s";
    /// `numa_pte_updates`: PTEs (and PMDs, as 512) marked PROT_NONE.
    pub const PTE_UPDATES: &str = "numa_pte_updates";
    /// VMAs more than [`crate::STARVED_PASSES`] passes behind.
    pub const STARVED_VMAS: &str = "starved_vmas";
}

/// Counters with `/proc/vmstat` semantics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// `numa_pte_updates`: base pages made PROT_NONE (a PMD counts 512).
    pub numa_pte_updates: u64,
    /// `numa_huge_pte_updates`: PMDs made PROT_NONE.
    pub numa_huge_pte_updates: u64,
    /// `numa_hint_faults`: hint faults (one per PMD fault).
    pub numa_hint_faults: u64,
    /// `numa_hint_faults_local`: hint faults on a page already local.
    pub numa_hint_faults_local: u64,
    /// `numa_pages_migrated`: base pages migrated by NUMA balancing.
    pub numa_pages_migrated: u64,
    /// `thp_migration_success`.
    pub thp_migration_success: u64,
    /// Base pages whose migration failed (no room on the target node).
    pub pgmigrate_fail: u64,
    /// Tasks moved to another node by NUMA placement (idle CPU or swap).
    pub numa_task_moves: u64,
    /// `task_numa_work()` calls that got past the `numa_next_scan` check.
    pub scan_calls: u64,
    /// Increments of `mm->numa_scan_seq`, summed over processes.
    pub scan_seq_advances: u64,
}

/// Why `task_numa_work()` skipped a VMA (`trace_sched_skip_vma_numa`
/// reasons), plus the forced passes of each version.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkipReasons {
    /// Not migratable, hugetlb, mixedmap, PFN mapping.
    pub unsuitable: u64,
    /// `!vma_policy_mof()`: the scanning thread's task policy (the VMA has
    /// none of its own) lacks `MPOL_F_MOF`, as `MPOL_BIND` does. The kernel
    /// traces it as `unsuitable`; it is counted apart here because it is
    /// what delays the benchmark's first visits (see
    /// [`crate::WorkloadSpec`]).
    pub mpol_no_mof: u64,
    /// Read-only file mapping.
    pub shared_ro: u64,
    /// PROT_NONE VMA.
    pub inaccessible: u64,
    /// Per-VMA scan delay not yet elapsed.
    pub scan_delay: u64,
    /// The current task's PID bit is not in the windows.
    pub pid_inactive: u64,
    /// v6.7+: scanned although PID-inactive because a scan had started.
    pub ignore_pid_inactive: u64,
    /// v6.7+: already completed in this `numa_scan_seq`.
    pub seq_completed: u64,
    /// RFC 2/6: PID-inactive VMA scanned because `vma_scan_select` hit 0.
    pub rfc_forced: u64,
    /// v6.7+: VMA scanned by the `retry_pids` pass.
    pub retry_forced: u64,
    /// v6.12/mmlab: VMA scanned by the starvation bound.
    pub starve_forced: u64,
}

impl SkipReasons {
    /// `(reason, count)` pairs in the kernel's trace order, then forced passes.
    pub fn entries(&self) -> [(&'static str, u64); 11] {
        [
            ("unsuitable", self.unsuitable),
            ("mpol_no_mof", self.mpol_no_mof),
            ("shared_ro", self.shared_ro),
            ("inaccessible", self.inaccessible),
            ("scan_delay", self.scan_delay),
            ("pid_inactive", self.pid_inactive),
            ("ignore_pid_inactive", self.ignore_pid_inactive),
            ("seq_completed", self.seq_completed),
            ("rfc_forced", self.rfc_forced),
            ("retry_forced", self.retry_forced),
            ("starve_forced", self.starve_forced),
        ]
    }
}

/// One `task_numa_work()` call that passed the `numa_next_scan` check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanEvent {
    /// Virtual time, ns.
    pub t_ns: u64,
    /// Process index.
    pub process: usize,
    /// TID of the scanning task.
    pub tid: u32,
    /// `mm->numa_scan_seq` when the call started.
    pub seq_start: i64,
    /// `mm->numa_scan_seq` after the call.
    pub seq: i64,
    /// `mm->numa_scan_offset` after the call.
    pub offset: u64,
    /// Base pages made PROT_NONE by the call.
    pub updated: u64,
    /// The scanning task's `numa_scan_period` (ms): it sets the next scan.
    pub period_ms: u32,
    /// Base pages charged to the call's 256 MB window (`pages`): the whole
    /// range handed to `change_prot_numa()` whenever it changed a PTE.
    pub charged: u64,
    /// The part of [`ScanEvent::charged`] spent on stacks (a thread stack
    /// charges its whole 8 MiB for the few pages it has present).
    pub charged_stacks: u64,
}

/// Scan coverage of one VMA.
#[derive(Debug, Clone, PartialEq)]
pub struct VmaCoverage {
    /// Process index.
    pub process: usize,
    /// VMA index within the process (creation order).
    pub vma: usize,
    /// VMA label.
    pub name: String,
    /// Present page-table units.
    pub present_units: u64,
    /// Fraction of present units `change_prot_numa()` visited during the
    /// second half of the run.
    pub fraction_scanned: f64,
    /// Complete scans of the VMA over the whole run.
    pub complete_scans: u64,
    /// Full passes (`numa_scan_seq` increments) since the scanner last
    /// covered the whole VMA (contiguous `change_prot_numa()` ranges from
    /// its start to its end, whatever the version's own bookkeeping says),
    /// at the end of the run; more than 2 means starved.
    pub passes_behind: i64,
}

/// Everything one run of one scanner version produced.
#[derive(Debug, Clone, PartialEq)]
pub struct NumabResult {
    /// Scanner version.
    pub version: ScannerVersion,
    /// Seed of the run.
    pub seed: u64,
    /// vmstat-style counters.
    pub counters: Counters,
    /// Virtual time until the last worker finished, ns.
    pub elapsed_ns: u64,
    /// User time summed over tasks, ns.
    pub user_ns: u64,
    /// System time summed over tasks, ns.
    pub sys_ns: u64,
    /// Skip-reason histogram.
    pub skips: SkipReasons,
    /// Coverage of every scannable, populated VMA.
    pub coverage: Vec<VmaCoverage>,
    /// Scannable, populated VMAs left more than two full passes of
    /// `numa_scan_seq` without being covered end to end (see
    /// [`VmaCoverage::passes_behind`]): the scanner keeps passing them over.
    pub starved_vmas: u64,
    /// `(seconds, fraction of accessed pages that were local)` per bucket.
    pub local_series: Vec<(f64, f64)>,
    /// Fraction of all accessed pages that were local.
    pub local_fraction: f64,
    /// Page-table units the model processed (touches plus scan visits):
    /// the simulator's unit of work for `mmlab bench`.
    pub units_processed: u64,
    /// Every scan call in order: the `numa_scan_seq` time series.
    pub scans: Vec<ScanEvent>,
    /// `numa_pte_updates` made by scan calls that started after the two
    /// unconditional passes (`numa_scan_seq >= 2`): the steady state the
    /// access-PID filter governs.
    pub pte_updates_steady: u64,
    /// Whether the run hit `max_virtual_s` before the workload finished.
    pub truncated: bool,
}

impl NumabResult {
    /// Elapsed virtual time, s.
    pub fn elapsed_s(&self) -> f64 {
        self.elapsed_ns as f64 / 1e9
    }

    /// User time, s.
    pub fn user_s(&self) -> f64 {
        self.user_ns as f64 / 1e9
    }

    /// System time, s.
    pub fn sys_s(&self) -> f64 {
        self.sys_ns as f64 / 1e9
    }

    /// mmtests "AutoNUMA cost".
    pub fn autonuma_cost(&self) -> f64 {
        let c = &self.counters;
        autonuma_cost(
            c.numa_pte_updates,
            c.numa_hint_faults,
            c.numa_pages_migrated,
        )
    }

    /// Per-VMA coverage as `(vma index, fraction scanned)`; the index runs
    /// over [`NumabResult::coverage`].
    pub fn coverage_series(&self) -> Vec<(usize, f64)> {
        self.coverage
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.fraction_scanned))
            .collect()
    }

    /// Share of the scan window charged to stacks by the calls that began
    /// at `numa_scan_seq >= 2`, once the access-PID filter applies (0 when
    /// nothing was charged): what RFC 2/6's forced stack visits take from
    /// the data VMAs.
    pub fn window_share_stacks_steady(&self) -> f64 {
        let (st, all) = self
            .scans
            .iter()
            .filter(|s| s.seq_start >= 2)
            .fold((0u64, 0u64), |a, s| {
                (a.0 + s.charged_stacks, a.1 + s.charged)
            });
        if all == 0 {
            0.0
        } else {
            st as f64 / all as f64
        }
    }

    /// Fraction of accesses that were local in the sample bucket holding
    /// the first scan call that began at `numa_scan_seq >= 2` (when the
    /// access-PID filter starts to apply); 0 if there is none.
    pub fn local_fraction_at_seq2(&self) -> f64 {
        let Some(first) = self.scans.iter().find(|s| s.seq_start >= 2) else {
            return 0.0;
        };
        let t = first.t_ns as f64 / 1e9;
        self.local_series
            .iter()
            .rev()
            .find(|(at, _)| *at <= t)
            .map_or(0.0, |(_, f)| *f)
    }

    /// Metrics as `(name, value, unit)` for JSON and comparison tables.
    pub fn metrics(&self) -> Vec<(&'static str, f64, &'static str)> {
        let c = &self.counters;
        let s = &self.skips;
        let mut m = vec![
            (metric::PTE_UPDATES, c.numa_pte_updates as f64, "pages"),
            (
                "numa_huge_pte_updates",
                c.numa_huge_pte_updates as f64,
                "pmds",
            ),
            (
                "numa_pte_updates_steady",
                self.pte_updates_steady as f64,
                "pages",
            ),
            ("numa_hint_faults", c.numa_hint_faults as f64, "faults"),
            (
                "numa_hint_faults_local",
                c.numa_hint_faults_local as f64,
                "faults",
            ),
            ("numa_pages_migrated", c.numa_pages_migrated as f64, "pages"),
            (
                "thp_migration_success",
                c.thp_migration_success as f64,
                "thps",
            ),
            ("pgmigrate_fail", c.pgmigrate_fail as f64, "pages"),
            ("numa_task_moves", c.numa_task_moves as f64, "count"),
            (metric::ELAPSED_S, self.elapsed_s(), "s"),
            ("user_s", self.user_s(), "s"),
            ("sys_s", self.sys_s(), "s"),
            ("autonuma_cost", self.autonuma_cost(), "mmtests"),
            ("local_fraction", self.local_fraction, "ratio"),
            (
                "hint_local_percent",
                if c.numa_hint_faults == 0 {
                    0.0
                } else {
                    100.0 * c.numa_hint_faults_local as f64 / c.numa_hint_faults as f64
                },
                "%",
            ),
            (metric::STARVED_VMAS, self.starved_vmas as f64, "vmas"),
            (
                "window_share_stacks_steady",
                self.window_share_stacks_steady(),
                "ratio",
            ),
            (
                "local_fraction_at_seq2",
                self.local_fraction_at_seq2(),
                "ratio",
            ),
            ("scan_calls", c.scan_calls as f64, "count"),
            ("scan_seq_advances", c.scan_seq_advances as f64, "count"),
        ];
        for (name, v) in s.entries() {
            let key: &'static str = match name {
                "unsuitable" => "skip_unsuitable",
                "mpol_no_mof" => "skip_mpol_no_mof",
                "shared_ro" => "skip_shared_ro",
                "inaccessible" => "skip_inaccessible",
                "scan_delay" => "skip_scan_delay",
                "pid_inactive" => "skip_pid_inactive",
                "ignore_pid_inactive" => "skip_ignore_pid_inactive",
                "seq_completed" => "skip_seq_completed",
                "rfc_forced" => "forced_rfc_select",
                "retry_forced" => "forced_retry_pids",
                _ => "forced_starvation_bound",
            };
            m.push((key, v as f64, "vmas"));
        }
        m
    }
}
