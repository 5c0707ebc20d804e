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
//! of T1/T2), v6.5, RFC V1 1/6 and 1/6+2/6, v6.7, v6.8, v6.12 and mmlab's own.
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
//!   passes) so one run stays near a second of host time. Like
//!   numa01_THREAD_ALLOC it is built with `-DNO_BIND_FORCE_SAME_NODE` (the
//!   benchmark's Makefile builds both binaries with it; its author: "to
//!   ensure to start with the worst possible memory placement"), so its
//!   first whole-buffer pass runs under `MPOL_BIND` (`force_same_node`).
//! * `numa-disjoint` is a synthetic process on 32 CPUs.
//! * `numa01-thread-alloc-64` is the same on 64 CPUs, the size of the
//!   2-socket boxes of the v6.7 series (T7): 32 threads per process, 96 MiB
//!   slices and the benchmark's own 1000 passes (its `nr` does not depend
//!   on the CPU count), so each thread writes 4× the bytes it writes on
//!   256 CPUs and the run lasts about 3 minutes (T7's box: 175.68 s before
//!   the series); the per-thread convoy cost ×4 so the first whole-buffer
//!   `bzero()` lasts as long as with 128 threads. An earlier twin ran 250
//!   passes to match the 256-CPU run's duration; in 80 s v6.7's
//!   one-stack-per-call crawl (below) never reached the buffer, and v6.7
//!   came out flat against T7's −29.8%. The debug-build tests run it.
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
//! placement to matter. Under `NO_BIND_FORCE_SAME_NODE` the whole buffer
//! lands on one node, so the convoy's remote half takes about 17 s; the
//! v6.8 `start_scan_seq` histogram (first visits at seq 2–4, one call a
//! second) suggests 2–4 s on the seed's box, so the model's bind phase is
//! long. v6.5's collapse needs only two calls in it.
//!
//! # Scan-call gating (read in `kernel/sched/fair.c`)
//!
//! Each thread's tick gates on its own CPU time (`sum_exec_runtime >
//! node_stamp + numa_scan_period`, then `node_stamp += period`), sampled at
//! 4 ms ticks; work is queued only if `jiffies` is not before
//! `mm->numa_next_scan`, and the winner sets it to `jiffies` plus its *own*
//! period. A new thread starts at `scan_delay` (1 s) with a stamp of about
//! two ticks; the first `pthread_create()` of a process (`sched_fork()`,
//! `mm_users == 1`) resets the mm's next scan to 1 s ahead and its
//! `numa_scan_seq` to 0; cross-node moves reset a task's period to
//! `task_scan_start()` (100 ms at 3 GiB). With 128 threads in phase the
//! process makes one call a second. The tick only queues the work; it runs
//! as its own event at the tick's time (on the way back to user mode), so
//! the `cmpxchg` is won by the earliest call in time, calls of one jiffy in
//! a seeded order, and its system time delays the thread's next step.
//! Running the work when the step that contains the tick began, as the
//! model did before, let threads with long steps (those writing remote
//! memory, 2.5× longer) win nearly every race. Each rule has a unit test
//! against a hand-computed timeline (`state::gate_tests`).
//!
//! # The v6.5 collapse, derived (seed: 6,985 PTE updates)
//!
//! The modelled rules contain the seed's starvation as an absorbing
//! state: a VMA with empty PID windows is skipped by v6.5's filter once
//! `numa_scan_seq >= 2`; a skipped VMA is never marked PROT_NONE, so it
//! takes no hint fault, so no PID is recorded, and (v6.5 rotates the
//! windows only after the filter passed) nothing ever changes. A VMA
//! enters that state iff no hint fault hit it before the filter applied.
//!
//! mmtests builds numa01_THREAD_ALLOC with `-DNO_BIND_FORCE_SAME_NODE`:
//! every thread zeroes the buffer under `MPOL_BIND` to one node, then
//! returns to `MPOL_DEFAULT` (`force_same_node`, see [`WorkloadSpec`]).
//! `MPOL_BIND` has no `MPOL_F_MOF`, so every call a bound thread makes
//! skips every VMA at `!vma_policy_mof()`, before `numab_state` exists, and
//! wraps the seq: the bind phase (about 17 s on 256 CPUs, one call a
//! second) leaves the first visit at seq 17, and v6.5 marks nothing. No
//! parameter is fitted; `premap_passes`, the earlier fitted stand-in, is
//! kept as a what-if and is 0 in every built-in scenario. The bind also
//! puts both processes' buffers on one node, so half the threads start
//! with their slices remote.
//!
//! Full size (`mmlab run numa01-thread-alloc`, seed 4): v6.5 87.8 s with 0
//! PTE updates; v6.3 (no filter) 62.1 s with 1,574,696 (one pass over
//! each 3 GiB buffer; T2: 61.5 s); rfc-1of6 87.8 s; rfc-2of6 85.5 s
//! (−2.7%) with 386,060; v6.7 87.8 s (T9: 81.79 s, flat); v6.8 62.4 s (T9:
//! 67.74 s); mmlab 60.1 s with nothing starved. Seeds 1–3: v6.5 88.3 s,
//! rfc-2of6 83.3 s (−5.7%). The 64-CPU twin: −4.8% (seeds 1–3).
//!
//! Not reproduced: the size of RFC 2/6's gain. The test robot measured
//! patch 2/6 alone at 76.44 → 67.36 s (−11.9%; the seed's 82.758 → 69.2 s
//! and 1,573,363 PTE updates are the whole series'); the model gives
//! 3–6%. Its timeline (`cargo run --release -p numab --example timeline
//! -- numa01-thread-alloc rfc-2of6 4`) shows why: after the bind phase
//! the forced every-other visits of 128 thread stacks charge 2,048 pages
//! each to the 65,536-page window, so the scanner needs four calls to get
//! past them; the threads whose slices are remote take only remote
//! private faults, so `update_task_scan_period()` doubles their periods
//! and pushes `numa_next_scan` back (calls every 2–6 s, not 1 s); and a
//! skipped visit to the buffer wraps the scan, so the next forced visit
//! restarts at its first 256 MB. The model has no load balancer, whose
//! cross-node moves would reset periods to `task_scan_start()` (100 ms).
//!
//! Not reproduced either: Mel Gorman's numa02 regression (6.5-rc6 + RFC
//! 1/6 → + 2/6: 12.93 → 21.69 s, system 2.35 → 1.86 s). The model's
//! numa02 has migrated its misplaced half (131,072 pages) and runs 96%
//! local within the unconditional passes (seq < 2, the first 16 s), so
//! 2/6's forced visits only add PTE updates (steady state 65,540 →
//! 196,864) and system time (12.4 → 14.2 s) and elapsed is flat (25.09
//! → 25.13 s). Mel's loss needs locality still being fixed when the PID
//! filter applies, with forced stack visits taking budget from the data
//! VMA; user time, not system time, is what grew there.

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
