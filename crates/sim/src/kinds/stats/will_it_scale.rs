//! `will-it-scale`: the page-fault tests of the kernel test robot, priced
//! whole ([`crate::priced`]): one task per CPU faulting its own region in
//! one group, process or thread mode, each fault its kernel work outside
//! memcg, its charge and its stat updates under the policy's knobs and
//! kernel path, on the scenario's machine.
//!
//! Source 000, patch 3/5 (per-memcg thresholds), Yosry Ahmed's 30 runs on
//! 384 CPUs in a group 4 levels deep, base → patched, per task:
//!
//! | test | per_process_ops | per_thread_ops |
//! |---|---|---|
//! | page_fault1 | −6.02% | −4.88% |
//! | page_fault2 | −8.31% from its means (−6.85% printed) | −4.40% |
//! | page_fault3 | −3.93% | −4.82% |
//!
//! The thread compared v2 of the series with its base: the claims compare
//! `per-memcg-v2` with `next-20231009` (the base of the thread's netperf
//! runs; the page-fault table was first posted against v1's base, whose
//! update path is the same, `docs/fidelity.md`). page_fault2's per-process
//! row prints −6.85% where its own means give −8.31% (every other row of
//! the table recomputes to 0.01%): the claim uses −8.31% and states the
//! verdict at −6.85% beside it.
//!
//! Thread mode runs the same faults plus each `munmap`'s `mmap_lock` on a
//! line the threads share; the differences the kernel had in thread mode
//! at the time are discussed in `docs/fidelity.md`.

use super::StatsScenario;
use crate::cost::CostModel;
use crate::error::SimError;
use crate::priced::{machine, Op, PricedOutcome, PricedSetup};
use crate::workload::{FaultTest, TaskMode, WillItScaleSpec};
use lab::interleave::interleaved;
use lab::progress::Steps;
use lab::report::{pct_change, Claim, Claims, InSize, PolicyResult, RunReport};
use lab::Header;
use simcore::time::{MILLIS, SECONDS};
use std::collections::BTreeMap;

/// Metric: operations per second per task in `mode` (`per_process_ops`,
/// `per_thread_ops`, will-it-scale's names).
pub fn ops_metric(mode: TaskMode) -> String {
    format!("per_{}_ops", mode.name())
}

/// The policy the thread's figures are the base of.
pub const BASE: &str = "next-20231009";
/// The policy they measured as patched (v2 of the series).
pub const PATCHED: &str = "per-memcg-v2";
/// The series as merged, after `9cee7e8ef3e3`.
pub const MERGED: &str = "per-memcg-merged";

/// The source's figures: (test, mode) → (base, patched) mean ops per
/// task, and the change it printed, %.
pub fn published(test: FaultTest, mode: TaskMode) -> (f64, f64, f64) {
    match (test, mode) {
        (FaultTest::PageFault1, TaskMode::Process) => (265_207.738, 249_249.191, -6.02),
        (FaultTest::PageFault1, TaskMode::Thread) => (241_618.484, 229_820.671, -4.88),
        (FaultTest::PageFault2, TaskMode::Process) => (203_916.148, 186_975.419, -6.85),
        (FaultTest::PageFault2, TaskMode::Thread) => (170_604.972, 163_100.260, -4.40),
        (FaultTest::PageFault3, TaskMode::Process) => (1_299_821.099, 1_248_700.839, -3.93),
        (FaultTest::PageFault3, TaskMode::Thread) => (387_216.963, 368_538.213, -4.82),
    }
}

/// The change a claim compares against, %: the one the source's means
/// give (equal to the printed one, to 0.01%, on every row but
/// page_fault2 per process).
pub fn figure(test: FaultTest, mode: TaskMode) -> f64 {
    let (a, b, _) = published(test, mode);
    pct_change(a, b).unwrap_or(f64::NAN)
}

/// The priced operation of a test.
pub fn op(test: FaultTest) -> Op {
    match test {
        FaultTest::PageFault1 => Op::FaultAnon,
        FaultTest::PageFault2 => Op::FaultCow,
        FaultTest::PageFault3 => Op::FaultShared,
    }
}

/// Records one priced run's figures under `suffix` (`_process` ...).
pub(crate) fn record(r: &mut PolicyResult, o: &PricedOutcome, suffix: &str) {
    let per = |v: f64| o.per_op(v);
    r.push(
        &format!("ns_per_op{suffix}"),
        "ns",
        1e9 / o.ops_per_sec_per_task().max(1e-9),
        false,
    );
    r.push(
        &format!("base_ns_per_op{suffix}"),
        "ns",
        per(o.base_ns),
        false,
    );
    r.push(
        &format!("charge_ns_per_op{suffix}"),
        "ns",
        per(o.charge_ns),
        false,
    );
    r.push(
        &format!("stats_ns_per_op{suffix}"),
        "ns",
        per(o.stats_ns),
        false,
    );
    let updates = o.updates.max(1) as f64;
    r.push(
        &format!("levels_per_update{suffix}"),
        "count",
        o.levels as f64 / updates,
        false,
    );
    r.push(
        &format!("folds_per_1k_updates{suffix}"),
        "count",
        1e3 * o.folds as f64 / updates,
        false,
    );
    r.push(
        &format!("line_wait_ns_per_op{suffix}"),
        "ns",
        per(o.line_wait_ns as f64),
        false,
    );
}

/// Runs the will-it-scale workload.
///
/// # Errors
/// An unknown policy, cancellation.
pub fn run(
    h: &Header,
    sc: &StatsScenario,
    w: &WillItScaleSpec,
    steps: &mut Steps<'_>,
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let cpus = sc.cpus.unwrap_or(1) as usize;
    interleaved(h, steps, w.modes.len() as u64, |run, r, steps| {
        let choice = h.flush_policy(run.policy)?;
        for &mode in &w.modes {
            let setup = PricedSetup {
                op: op(w.test),
                tasks: cpus,
                cpus,
                depth: w.depth,
                region_pages: (w.region_mib << 20) / 4096,
                shared_mm: mode == TaskMode::Thread,
                warmup: (w.warmup_ms * MILLIS as f64) as u64,
                duration: sc.duration_ms * MILLIS,
                policy: choice,
                flush_period: Some(2 * SECONDS),
                costs: CostModel::of(steps.context()).into_owned(),
                machine: sc.priced_machine(),
                protected_levels: 0,
            };
            let o = machine::run(&setup);
            r.push(&ops_metric(mode), "ops/s", o.ops_per_sec_per_task(), true);
            record(r, &o, &format!("_{}", mode.name()));
            steps.step(format!(
                "{} {} run {}",
                run.policy,
                mode.name(),
                run.index + 1
            ))?;
        }
        Ok(())
    })
}

/// Why a page-fault figure misses in size (`ratio`: ours ÷ the source's
/// change): the added ns per fault against the source's, and the bases
/// they are a share of.
pub fn walk_why(
    ratio: f64,
    ours_ns: f64,
    published_ns: f64,
    our_base: f64,
    published_base: f64,
) -> String {
    let share = format!(
        "ours adds {ours_ns:+.0} ns to a {our_base:.0} ns fault, the source {published_ns:+.0} ns \
         to a {published_base:.0} ns fault"
    );
    if ratio.is_nan() || ratio <= 0.0 {
        format!("{share}: the wrong sign")
    } else if ratio > 2.0 {
        format!(
            "{share}: the base is the host's idle fault, while the source's 384 tasks also wait \
             on zone, LRU and page-table locks, which the model does not price, so the same \
             added work is a larger share of ours"
        )
    } else {
        format!(
            "{share}: the walk's loads are priced at L1 or L2 hits (the fraction a fault leaves \
             in L1 measured on the host); a box that misses further (L3, the other socket) pays \
             more a level, as 9cee7e8ef3e3's fix of 30-38% robot regressions (3 lines a level to \
             1) suggests, and contention on the source's box is not priced"
        )
    }
}

/// The source's claims on a will-it-scale run, in size, on `machine`.
pub fn claims(report: &RunReport, w: &WillItScaleSpec, machine: &str) -> Vec<Claim> {
    let mut claims = Claims::new(report);
    for &mode in &w.modes {
        let m = ops_metric(mode);
        let ns_metric = format!("ns_per_op_{}", mode.name());
        let (base, patched, printed) = published(w.test, mode);
        let src = figure(w.test, mode);
        if let (Some(a), Some(b)) = (report.mean_of(BASE, &m), report.mean_of(PATCHED, &m)) {
            let ours = pct_change(a, b).unwrap_or(f64::NAN);
            let (our_base, our_patched) = (1e9 / a, 1e9 / b);
            let (pub_base, pub_patched) = (1e9 / base, 1e9 / patched);
            let size = InSize {
                published: src,
                measured: ours,
                unit: "%",
            };
            let mut context = format!(
                "{a:.0} -> {b:.0} ops/s on {machine}: {:+.0} ns per fault against the source's {:+.0}",
                our_patched - our_base,
                pub_patched - pub_base,
            );
            let printed_note = if (printed - src).abs() > 0.05 {
                let alt = InSize {
                    published: printed,
                    measured: ours,
                    unit: "%",
                };
                context.push_str(&format!(
                    "; at the printed {printed:+.2}%: {:.2}x ({})",
                    alt.ratio(),
                    if alt.holds() { "holds" } else { "misses" }
                ));
                format!(", {printed:+.2}% printed")
            } else {
                String::new()
            };
            claims.add_in_size(
                &format!(
                    "{} {m}: {PATCHED} (patch 3 as posted) vs {BASE}, within 0.5-2x",
                    w.test.name()
                ),
                size,
                &context,
                &format!(
                    "{base:.0} -> {patched:.0} ({src:+.2}% from its means{printed_note}; 30 runs, \
                     384 CPUs, depth 4)"
                ),
                &walk_why(
                    size.ratio(),
                    our_patched - our_base,
                    pub_patched - pub_base,
                    our_base,
                    pub_base,
                ),
            );
        }
        if let (Some(v2), Some(merged)) = (report.mean_of(PATCHED, &m), report.mean_of(MERGED, &m))
        {
            claims.add_info(
                &format!(
                    "{} {m}: {MERGED} (9cee7e8ef3e3, 1 line a level) vs {PATCHED} (reference)",
                    w.test.name()
                ),
                format!("{:+.2}%", pct_change(v2, merged).unwrap_or(f64::NAN)),
                "no page-fault figure; its commit message: 30-38% robot regressions fixed \
                 (vm-scalability, will-it-scale tlb_flush2 and fallocate1)",
                "a reference: the fix was measured on other benchmarks",
            );
        }
        if let Some(ns) = report.mean_of(BASE, &ns_metric) {
            claims.add_info(
                &format!(
                    "{} {m} under {BASE}, ns per fault per task (reference)",
                    w.test.name()
                ),
                format!("{ns:.0} ns"),
                &format!("{:.0} ns", 1e9 / base),
                "ours is the host's idle fault (CPU time, the minimum over configurations) with \
                 the memcg work priced on the machine; the source's 384 tasks also contend on \
                 zone, LRU and page-table locks, which the model does not price",
            );
        }
        if let (Some(a), Some(h)) = (report.mean_of(BASE, &m), report.mean_of("hierstat", &m)) {
            let c = pct_change(a, h).unwrap_or(f64::NAN);
            claims.add(
                &format!(
                    "{} {m}: hierstat within -0.5%..+0.5% of {BASE}'s global threshold",
                    w.test.name()
                ),
                format!("{c:+.2}%"),
                "ours: one residue per update like the global count, folds up the ancestors every \
                 32 pages",
                c.abs() <= 0.5,
            );
            claims.why_if_missed(
                "hierstat's folds walk every ancestor's shared count once per 32 pages a CPU \
                 updates, which the global threshold does not",
            );
        }
        if let (Some(a), Some(b)) = (
            report.mean_of("linux-5.15", &m),
            report.mean_of("linux-6.8", &m),
        ) {
            claims.add_info(
                &format!(
                    "{} {m}: linux-6.8 vs linux-5.15 eras (reference)",
                    w.test.name()
                ),
                format!("{:+.2}%", pct_change(a, b).unwrap_or(f64::NAN)),
                "not a source figure: 5.15.y folds into the global count unconditionally \
                 (5b3be698a872) with the charge path before 6.1; 873f64b791a2 (6.0), which \
                 guards that fold, reported 1.95x on a 2-socket Ice Lake",
                "the era story: what 6.0's guard and 6.1's charge path did, beside what 6.8 cost",
            );
        }
    }
    claims.into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::report::report_from_rows as report;

    #[test]
    fn claims_are_in_size_both_ways() {
        let w = WillItScaleSpec {
            test: FaultTest::PageFault2,
            modes: vec![TaskMode::Process],
            depth: 4,
            region_mib: 128,
            warmup_ms: 1.0,
        };
        let m = ops_metric(TaskMode::Process);
        let at = |pct: f64, h: f64| {
            report(
                "page-fault2",
                &[
                    (BASE, &m, 100.0),
                    (PATCHED, &m, 100.0 + pct),
                    ("hierstat", &m, 100.0 + h),
                ],
            )
        };
        let c = claims(&at(-8.0, 0.0), &w, "amd-384");
        assert!(c[0].pass && c[0].size.is_some(), "{c:?}");
        assert!(
            c[0].published
                .contains("-8.31% from its means, -6.85% printed"),
            "{}",
            c[0].published
        );
        assert!(
            c[0].measured
                .contains("at the printed -6.85%: 1.17x (holds)"),
            "{}",
            c[0].measured
        );
        let hier = c.iter().find(|c| c.claim.contains("hierstat")).unwrap();
        assert!(hier.pass && !hier.info);
        // Too small, too large, the wrong sign: each misses with its reason.
        for (pct, why) in [
            (-3.0, "L1 or L2"),
            (-20.0, "larger share"),
            (1.0, "wrong sign"),
        ] {
            let c = claims(&at(pct, 0.0), &w, "amd-384");
            assert!(!c[0].pass, "{pct}: {c:?}");
            assert!(c[0].why.contains(why), "{pct}: {}", c[0].why);
        }
        // hierstat: two-sided.
        for h in [-0.6, 0.6] {
            let c = claims(&at(-8.0, h), &w, "amd-384");
            let hier = c.iter().find(|c| c.claim.contains("hierstat")).unwrap();
            assert!(!hier.pass, "{h}");
        }
    }
}
