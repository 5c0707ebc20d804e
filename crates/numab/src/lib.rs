//! NUMA-balancing VMA scanner simulator (seed 004).
//!
//! A deterministic discrete-event model of automatic NUMA balancing as the
//! Linux scheduler runs it: `task_tick_numa()` on CPU time,
//! `task_numa_work()` with its 256 MB window over the mm's VMAs, the
//! per-VMA access-PID windows (`hash_32(pid, 6)`), PROT_NONE marking of
//! page-table units, NUMA hint faults with the two-reference migration
//! filter, `task_numa_fault()`, placement toward the preferred node and
//! scan-period adaptation. Scanner behaviour is selected by
//! [`ScannerVersion`]: v6.3 (no access-PID filter: the reference point
//! of T1/T2), v6.5, RFC V1 2/6, v6.7, v6.8, v6.12 and mmlab's own.
//!
//! Model choices (see `research/numa-workingset.md`, "Simulator
//! specification"):
//! * **Time** is integer virtual nanoseconds; each thread owns one logical
//!   CPU and advances in steps of one page-table unit; all events sit in one
//!   [`simcore::EventQueue`] ordered by (time, sequence number). One seeded
//!   [`simcore::Rng`] stream drives the CPU permutation, THP backing and a
//!   ±5% per-step speed jitter.
//! * **Units**: a PMD-mapped THP (counts 512 in `numa_pte_updates`, one
//!   hint fault), or a run of 4 KiB PTEs inside one page-table page that the
//!   sweeps always write together and the 2 MiB-aligned scan windows always
//!   mark together, so they share one state (each PTE still counts as a PTE
//!   update, a hint fault and a migrated page).
//! * **Workloads** follow autonuma-benchmark: `fork()` then `malloc()`,
//!   glibc thread stacks (8 MiB + guard page, created top-down below the
//!   buffer, so the scanner meets them first), consecutive TIDs.
//! * **Costs** ([`CostModel`]) turn local/remote writes into user time and
//!   first touches, hint faults, PTE updates and migrations into system
//!   time; a thread is delayed by its own system time.
//! * **Simplified**: `task_numa_migrate()` takes an idle CPU on the
//!   preferred node or swaps with a task there that prefers our node (no
//!   SMALLIMP scoring); all threads of an mm share one numa group, joined on
//!   the first shared fault; CPU fault statistics are not runtime-weighted.
//!
//! Entry points: [`run`] (one version, one seed), [`builtin_scenario`] /
//! [`parse_scenario`] for the TOML files, [`bench_throughput`] for the
//! simulator's own speed.
//!
//! # Scaling of the built-in scenarios
//!
//! * `numa01-thread-alloc` is the seed's machine at full size: 2 nodes ×
//!   128 CPUs, two processes × 128 threads, 3 GiB each, 24 MiB slices, 1000
//!   passes (about 0.5 s of host time in release, 3 s in debug).
//! * `numa02` runs on 64 CPUs (2 × 32, the size of Mel Gorman's 2-socket
//!   box; 1 GiB, 800 passes).
//! * `numa01` runs on 64 CPUs (2 × 32; 32 threads per process, 3 GiB, 50
//!   passes) so one run stays near a second of host time.
//! * `numa-disjoint` is a synthetic process on 32 CPUs.
//! * `numa01-thread-alloc-64` is the same on 64 CPUs, the size of the
//!   2-socket boxes of the v6.7 series (T7): 32 threads per process, 96 MiB
//!   slices, 250 passes (the same bytes per thread and about the same
//!   virtual duration), the per-thread convoy cost ×4 so the first
//!   whole-buffer `bzero()` lasts as long as with 128 threads. The
//!   debug-build tests run it.
//!
//! # Calibration and what the model reproduces
//!
//! Costs are calibrated on the seed's base run (82.8 s elapsed, 58.5 s
//! user per thread): the slowest thread is one whose slice stayed remote,
//! a saturated remote write costs 2.5× a local one, and the first
//! whole-buffer `bzero()` by all 128 threads of a process (the convoy)
//! lasts a few seconds: numa01's 51 full-buffer convoy passes take about
//! 5 s each on the test robot's 224-CPU box (T4: 271 s), so a 45 s first
//! pass, which an earlier calibration had, left too little slice time for
//! placement to matter.
//!
//! Full size, seed 4 (`mmlab run numa01-thread-alloc`): v6.5 84.2 s with 0
//! PTE updates (seed: 82.8 s, 6,985); RFC 2/6 82.0 s with 681,576 PTE
//! updates (seed: 69.2 s, 1,573,363); v6.7 84.2 s (T9 on the seed's box:
//! 81.79 s, flat against v6.5; T7's −29.8% is a 2-socket machine with
//! fewer threads, and the 64-CPU test twin shows it); v6.8 59.2 s (T9:
//! 67.74 s, −17%); mmlab 57.9 s with nothing starved. Directions match;
//! RFC 2/6's gain is −2.6% against the seed's −16%: its every-other forced
//! visit restarts at the buffer's start after every skipped visit, so it
//! keeps re-marking the first 256 MB, and the model covers about 40% of a
//! pass where the kernel covered one.
//!
//! # The v6.5 collapse (seed: 6,985 PTE updates, RFC 2/6: 1,573,363)
//!
//! The modelled rules contain the seed's starvation as an absorbing
//! state: a VMA with empty PID windows is skipped by v6.5's filter once
//! `numa_scan_seq >= 2`; a skipped VMA is never marked PROT_NONE, so it
//! takes no hint fault, so no PID is recorded, and (v6.5 rotates the
//! windows only after the filter passed) nothing ever changes. A VMA
//! enters that state iff no hint fault hit it before the filter applied.
//!
//! The benchmark's buffer and stacks do, per the kernel's own counters:
//! the v6.8 `start_scan_seq` changelog's histogram has the mmtests runs'
//! VMAs getting their `numab_state` at seq 0 (459) or 2–4 (290), none at
//! 1, and the v6.7 series' skip counts have about one first-visit
//! `scan_delay` skip per such VMA. Read literally, the program maps its
//! buffer at once and the first passes would find it being populated; the
//! model does not know what takes the real process through two passes
//! first, and reproduces the observed state with the workload's
//! `premap_passes = 2` (see [`WorkloadSpec`]): the main thread computes,
//! driving `task_numa_work()` with its own CPU time, until
//! `numa_scan_seq >= 2`, then maps the buffer and starts the threads. The
//! built-in `numa01-thread-alloc` sets it; `numa01` and `numa02` keep 0,
//! since their published counters show no collapse (T4/T5: numa02 flat)
//! and with 2 the model would contradict them.
//!
//! Not reproduced: Mel Gorman's +68% numa02 regression for RFC 2/6 (our
//! numa02 converges within its unconditional passes; RFC 2/6 is within
//! 0.2% of v6.7).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod cost;
mod fault;
mod pids;
mod plan;
mod result;
mod scan;
mod scenario;
mod state;
mod version;
mod workloads;

pub use cost::{
    autonuma_cost, group_scaled_period, nr_scan_windows, task_scan_max_ms, task_scan_min_ms,
    CostModel, Sysctl, MAX_SCAN_WINDOW, NS_PER_MS,
};
pub use pids::{
    distinct_bits, hash_32, pid_bit, vma_scan_ratelimit, PidWindows, GOLDEN_RATIO_32, VMA_4M,
    VMA_RATELIMIT_SCALEDOWN_F,
};
pub use plan::{Op, Plan, ProcessPlan, ThreadPlan, VmaKind, VmaPlan, FIRST_PID, HPAGE, PAGE};
pub use result::{metric, Counters, NumabResult, ScanEvent, SkipReasons, VmaCoverage};
pub use scenario::{
    builtin_scenario, parse_scenario, NumabScenario, ScenarioFile, WorkloadSpec, BUILTIN,
};
pub use state::MAX_NODES;
pub use version::{Features, ScannerVersion};

use state::Machine;

/// Errors for bad input.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NumabError {
    /// A scanner version name that is not one of [`ScannerVersion::ALL`].
    #[error(
        "unknown scanner version {0:?} (known: v6.3, v6.5, rfc-1of6, rfc-2of6, v6.7, v6.8, v6.12, mmlab)"
    )]
    UnknownVersion(String),
    /// A scenario whose parameters the model cannot run.
    #[error("bad numab scenario: {0}")]
    BadScenario(String),
    /// A scenario file that is not valid TOML for the schema.
    #[error("cannot parse numab scenario: {0}")]
    Parse(String),
}

/// A VMA more than this many full passes behind its last complete scan is
/// counted as starved.
pub const STARVED_PASSES: i64 = 2;

/// Runs `scenario` under scanner `version` with `seed`.
pub fn run(
    scenario: &NumabScenario,
    version: ScannerVersion,
    seed: u64,
) -> Result<NumabResult, NumabError> {
    let plan = scenario.plan()?;
    Ok(run_plan(scenario, &plan, version, seed))
}

/// Runs an explicit plan (built by [`NumabScenario::plan`] or by hand).
pub fn run_plan(
    scenario: &NumabScenario,
    plan: &Plan,
    version: ScannerVersion,
    seed: u64,
) -> NumabResult {
    let mut sim = Machine::new(scenario, plan, version, seed);
    let limit = scenario.max_virtual_s.saturating_mul(1_000_000_000);
    let truncated = sim.run(limit);
    collect(&sim, version, seed, truncated)
}

/// The simulator's own speed: page-table units processed per second of
/// host time, for `mmlab bench`. Runs `scenario` once under `version`.
pub fn bench_throughput(
    scenario: &NumabScenario,
    version: ScannerVersion,
    seed: u64,
) -> Result<(f64, NumabResult), NumabError> {
    let plan = scenario.plan()?;
    let t0 = std::time::Instant::now();
    let r = run_plan(scenario, &plan, version, seed);
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    Ok((r.units_processed as f64 / secs, r))
}

fn collect(sim: &Machine, version: ScannerVersion, seed: u64, truncated: bool) -> NumabResult {
    let elapsed = sim
        .tasks
        .iter()
        .map(|t| t.finish_ns)
        .max()
        .unwrap_or(0)
        .max(if truncated { sim.now } else { 0 });
    let user: u64 = sim.tasks.iter().map(|t| t.user_ns).sum();
    let sys: u64 = sim.tasks.iter().map(|t| t.sys_ns).sum();
    let half = elapsed / 2;
    let mut coverage = Vec::new();
    for (pi, mm) in sim.mms.iter().enumerate() {
        for (vi, v) in mm.vmas.iter().enumerate() {
            if !v.exists || !v.scannable() {
                continue;
            }
            let present: Vec<_> = v.units.iter().filter(|u| u.present).collect();
            if present.is_empty() {
                continue;
            }
            let seen = present.iter().filter(|u| u.last_visit > half).count();
            let last_complete = v.covered_seq.unwrap_or(v.created_seq - 1);
            coverage.push(VmaCoverage {
                process: pi,
                vma: vi,
                name: v.name.clone(),
                present_units: present.len() as u64,
                fraction_scanned: seen as f64 / present.len() as f64,
                complete_scans: v.complete_scans,
                passes_behind: mm.scan_seq - last_complete,
            });
        }
    }
    let starved = coverage
        .iter()
        .filter(|c| c.passes_behind > STARVED_PASSES)
        .count() as u64;
    let bucket_s = sim.sample_ns as f64 / 1e9;
    let local_series = sim
        .series
        .iter()
        .enumerate()
        .filter(|(_, (_, total))| *total > 0)
        .map(|(i, (l, t))| (i as f64 * bucket_s, *l as f64 / *t as f64))
        .collect();
    let (l, t) = sim
        .series
        .iter()
        .fold((0u64, 0u64), |a, b| (a.0 + b.0, a.1 + b.1));
    NumabResult {
        version,
        seed,
        counters: sim.counters,
        elapsed_ns: elapsed,
        user_ns: user,
        sys_ns: sys,
        skips: sim.skips,
        coverage,
        starved_vmas: starved,
        local_series,
        local_fraction: if t == 0 { 0.0 } else { l as f64 / t as f64 },
        units_processed: sim.units_processed,
        pte_updates_steady: sim
            .scans
            .iter()
            .filter(|s| s.seq_start >= 2)
            .map(|s| s.updated)
            .sum(),
        scans: sim.scans.clone(),
        truncated,
    }
}
