//! The numab kind's runner: each scanner version of the `numab` crate run
//! side by side, its counters turned into metrics; and source 004's claims.

use crate::error::SimError;
use lab::interleave::interleaved;
use lab::progress::Steps;
use lab::report::{Claim, Claims, PolicyResult, RunReport, Series};
use lab::Header;
use numab::metric::{ELAPSED_S, PTE_UPDATES, STARVED_VMAS};
use numab::{self, NumabScenario, ScannerVersion};
use std::collections::BTreeMap;

/// Metrics where a larger value is better.
const HIGHER_IS_BETTER: [&str; 3] = [
    "local_fraction",
    "hint_local_percent",
    "thp_migration_success",
];

/// Metric present (1 per run) when a run stopped at `numab.max_virtual_s`
/// before its workload finished.
pub const TRUNCATED: &str = "stopped_at_max_virtual_s";

/// Runs every policy (scanner version) `header.runs` times from
/// `header.seed`.
///
/// # Errors
/// An unknown version, model errors, cancellation.
pub fn run(
    header: &Header,
    numab: &NumabScenario,
    steps: &mut Steps<'_>,
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let policies = &header.policies;
    let versions = policies
        .iter()
        .map(|p| p.parse::<ScannerVersion>())
        .collect::<Result<Vec<_>, _>>()?;
    interleaved(header, steps, 1, |run, r, steps| {
        let v = versions[policies
            .iter()
            .position(|p| p == run.policy)
            .expect("a header policy")];
        let res = numab::run(numab, v, run.seed)?;
        for (metric, value, unit) in res.metrics() {
            r.push(metric, unit, value, HIGHER_IS_BETTER.contains(&metric));
        }
        if res.truncated {
            // Stopped at `max_virtual_s` before the workload finished:
            // its figures are cut short, and the report says so.
            r.push(TRUNCATED, "count", 1.0, false);
        }
        if run.index == 0 {
            r.series.insert(
                "scan_coverage".into(),
                Series {
                    x_label: "VMA".into(),
                    y_label: "fraction scanned".into(),
                    points: res
                        .coverage_series()
                        .into_iter()
                        .map(|(i, f)| (i as f64, f))
                        .collect(),
                },
            );
            r.series.insert(
                "local_fraction".into(),
                Series {
                    x_label: "virtual time (s)".into(),
                    y_label: "local accesses".into(),
                    points: res.local_series.clone(),
                },
            );
        }
        Ok(steps.step(run.label())?)
    })
}

/// Source 004's claims on a NUMA-balancing run: on
/// `numa01-thread-alloc`, v6.5's collapse and the versions that end it,
/// RFC 2/6 measured against what the test robot measured (patch 2/6 alone)
/// and the whole series' figures as reference rows; on `numa02`, the test
/// robot's RFC 1/6 → 2/6 (no change, which the model reproduces), with
/// Mel Gorman's regression on the same pair as a reference and the
/// evidence of why the model differs; on every numab scenario,
/// mmlab starving nothing and keeping up with the best kernel version.
pub fn claims(report: &RunReport) -> Vec<Claim> {
    let mut claims = Claims::new(report);
    let el = |p: &str| report.mean_of(p, ELAPSED_S);
    let pte = |p: &str| report.mean_of(p, PTE_UPDATES);
    let scaled = report.scenario == "numa01-thread-alloc-64";
    if report.scenario == "numa01-thread-alloc" || scaled {
        if let (Some(a), Some(b)) = (el("v6.3"), el("v6.5")) {
            claims.add(
                "v6.4's access-PID filter (v6.5) is slower than no filter (v6.3)",
                format!("{a:.1} s → {b:.1} s ({:+.0}%)", 100.0 * (b / a - 1.0)),
                "T2: 61.5 → 83.3 s (+35%)",
                b > a,
            );
        }
        if let (Some(a), Some(b)) = (pte("v6.5"), pte("rfc-2of6")) {
            // No fitted first-visit parameter: the bind phase of
            // NO_BIND_FORCE_SAME_NODE (every VMA skipped at
            // !vma_policy_mof) brings the first visits to seq >= 2.
            claims.add(
                "v6.5 collapses (PTE updates <= 1% of rfc-2of6's, >= 10^5), first visits derived from MPOL_BIND",
                format!("{a:.0} → {b:.0}"),
                "v6.5 6,985 PTE updates (source 004)",
                a <= 0.01 * b && b >= 1e5,
            );
        }
        if let (Some(a), Some(b)) = (el("v6.5"), el("rfc-2of6")) {
            // The robot measured patch 2/6 alone; the target is within 2x
            // of its gain: 6-24%.
            let gain = 100.0 * (1.0 - b / a);
            claims.add(
                "rfc-2of6 finishes 6–24% faster than v6.5",
                format!("{a:.1} s → {b:.1} s ({:+.1}%)", -gain),
                "LKP, 2/6 alone: 76.44 → 67.36 s (−11.9%)",
                (6.0..=24.0).contains(&gain),
            );
        }
        if let (Some(a), Some(b), Some(pa), Some(pb)) =
            (el("v6.5"), el("rfc-2of6"), pte("v6.5"), pte("rfc-2of6"))
        {
            // The source thread's figures are the whole series' (cover letter), not
            // patch 2/6's: shown for reference only.
            claims.add(
                "v6.5 → rfc-2of6 beside the whole RFC series' figures (reference)",
                format!("{a:.1} → {b:.1} s; {pa:.0} → {pb:.0} PTE updates"),
                "whole series: 82.758 → 69.2 s; 6,985 → 1,573,363",
                true,
            );
        }
        if let (Some(a), Some(b)) = (el("v6.5"), el("v6.7")) {
            // v6.7 forces one PID-inactive VMA per call (T7, a 2-socket
            // box: −29.8%; T9 on the source thread's box: v6.7 81.79 s against
            // v6.5's 82.8 s). After the bind phase it crawls one stack per
            // call, and each thread's first fault of the new seq doubles
            // its period and pushes numa_next_scan 2 s back, so the buffer
            // is reached after about two seconds per stack: too late on the
            // seed's 80 s run, in time on the 64-CPU twin, which runs the
            // benchmark's own 1000 passes (about 3 minutes, as on T7's box).
            if scaled {
                claims.add(
                    "v6.7 finishes at least 1% faster than v6.5",
                    format!("{a:.2} s → {b:.2} s"),
                    "T7 (2 sockets): −29.8%",
                    b < 0.99 * a,
                );
            } else {
                claims.add(
                    "v6.7 within 2% of v6.5 on 256 CPUs",
                    format!("{a:.2} s → {b:.2} s"),
                    "T9: 82.8 → 81.79 s",
                    (b / a - 1.0).abs() <= 0.02,
                );
            }
        }
        if let (Some(a), Some(b)) = (el("v6.7"), el("v6.8")) {
            claims.add(
                "v6.8 start_scan_seq finishes faster than v6.7",
                format!("{a:.1} s → {b:.1} s"),
                "T9: 81.79 → 67.74 s",
                b < a,
            );
        }
    }
    if report.scenario == "numa01" {
        if let (Some(a), Some(b), Some(ea), Some(eb)) =
            (pte("v6.3"), pte("v6.5"), el("v6.3"), el("v6.5"))
        {
            // Not reproduced: our numa01 keeps scanning under the filter
            // (every thread faults on the whole buffer), where T1's did not.
            claims.add(
                "v6.3 → v6.5 on numa01: PTE updates and elapsed (reference)",
                format!("{a:.0} → {b:.0}; {ea:.0} s → {eb:.0} s"),
                "T1: 152 M → 50 k; 313.26 s → 313.11 s",
                true,
            );
        }
    }
    if report.scenario == "numa02" {
        let m = |p: &str, k: &str| report.mean_of(p, k);
        // Two published measurements of the same pair (6.5-rc6 + 1/6 vs
        // + 2/6) disagree: the test robot saw no change, Mel Gorman a 68%
        // slowdown. The model reproduces the robot's by mechanism; Mel's is
        // shown with the evidence of why the model does not show it.
        if let (Some(a), Some(b)) = (el("rfc-1of6"), el("rfc-2of6")) {
            let c = 100.0 * (b / a - 1.0);
            claims.add(
                "rfc-2of6 leaves numa02 within ±1% of rfc-1of6, as the test robot measured",
                format!("{a:.2} → {b:.2} s ({c:+.1}%)"),
                "LKP, + 1/6 → + 2/6: 8.04 → 8.05 s (+0.1%)",
                c.abs() <= 1.0,
            );
            let ev = |p: &str| {
                format!(
                    "sys {:.1} s, window on stacks at seq>=2 {:.0}%, local at seq 2 {:.2}",
                    m(p, "sys_s").unwrap_or(f64::NAN),
                    100.0 * m(p, "window_share_stacks_steady").unwrap_or(f64::NAN),
                    m(p, "local_fraction_at_seq2").unwrap_or(f64::NAN)
                )
            };
            claims.add_info(
                "Mel Gorman's rfc-1of6 → rfc-2of6 on numa02 (reference)",
                format!("1/6: {}; 2/6: {}", ev("rfc-1of6"), ev("rfc-2of6")),
                "12.93 → 21.69 s (+67.8%), sys 2.35 → 1.86 s",
                "in the model 2/6's forced visits take half of each scan window on the thread \
                 stacks once the PID filter applies (seq >= 2), but locality has converged within \
                 the two unconditional passes (local fraction 1.00 at seq 2), so they cost system \
                 time, not elapsed; Mel's box lost locality instead (his system time fell, 2.35 -> \
                 1.86 s, as fewer data-VMA PTEs were scanned: research/numa-scan-rate.md §5), \
                 while the robot, on the same two patches, measured no change",
            );
        }
        if let (Some(a), Some(b)) = (el("v6.5"), el("rfc-2of6")) {
            claims.add(
                "v6.5 → rfc-2of6 on numa02 (reference)",
                format!("{a:.2} → {b:.2} s ({:+.1}%)", 100.0 * (b / a - 1.0)),
                "LKP: base 8.11 → + 1/6 + 2/6 8.05 s (−0.7%)",
                true,
            );
        }
    }
    let best = ScannerVersion::ALL
        .iter()
        .filter(|v| **v != ScannerVersion::Mmlab)
        .filter_map(|v| el(v.name()))
        .fold(f64::INFINITY, f64::min);
    if let Some(ours) = el("mmlab") {
        if best.is_finite() {
            claims.add(
                "mmlab no slower than the best kernel version (1% noise allowance)",
                format!("{ours:.2} s vs {best:.2} s"),
                "ours",
                ours <= best * 1.01,
            );
        }
    }
    if let Some(starved) = report.mean_of("mmlab", STARVED_VMAS) {
        claims.add(
            "mmlab starves no VMA",
            format!("{starved:.0} starved"),
            "ours",
            starved == 0.0,
        );
    }
    claims.into_vec()
}
