//! `will-it-scale`: the page-fault tests of the kernel test robot, priced
//! whole ([`crate::priced`]): one task per CPU faults its own region in
//! one group, process or thread mode, each fault its kernel work outside
//! memcg (measured on the host), its charge and its stat updates under the
//! policy.
//!
//! Source 000, patch 3/5 (per-memcg thresholds), Yosry Ahmed's 30 runs on
//! 384 CPUs in a group 4 levels deep, base (global threshold) → patched:
//!
//! | test | per_process_ops | per_thread_ops |
//! |---|---|---|
//! | page_fault1 | −6.02% | −4.88% |
//! | page_fault2 | −6.85% | −4.40% |
//! | page_fault3 | −3.93% | −4.82% |
//!
//! `linux-5.15` has the base's global threshold, `linux-6.8` the patched
//! per-group walk.

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

/// The source's figures: (test, mode) → (base, patched) mean ops per
/// task, and the change it printed, %. Its page_fault2 per-process row
/// prints −6.85% where its means give −8.31%; the claim uses the printed
/// figure (the smaller change) and shows both.
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

/// Why the per-group walk's cost misses in size, when it does.
pub const WALK_WHY: &str = "a level of the walk is priced at the host's replica (rstat_level_ns, \
loads that hit the cache); the source's change grows with the levels added (4: -6.02%, its \
2-level run on 256 CPUs: -3.29%), ~9 ns per level and update on its 384-CPU box, where \
da10d7e14019 (cached parent pointers, loads O(3N) -> O(2+N)) later fixed 30-38% robot \
regressions: cache misses of the per-level loads, not modelled";

/// The source's claims on a will-it-scale run, in size.
pub fn claims(report: &RunReport, w: &WillItScaleSpec) -> Vec<Claim> {
    let mut claims = Claims::new(report);
    for &mode in &w.modes {
        let m = ops_metric(mode);
        let (base, patched, src) = published(w.test, mode);
        if let (Some(a), Some(b)) = (
            report.mean_of("linux-5.15", &m),
            report.mean_of("linux-6.8", &m),
        ) {
            let ours = pct_change(a, b).unwrap_or(f64::NAN);
            let levels = report.mean_of("linux-6.8", &format!("levels_per_update_{}", mode.name()));
            claims.add_in_size(
                &format!(
                    "{} {m}: linux-6.8 per-group thresholds vs linux-5.15 within 2x",
                    w.test.name()
                ),
                InSize {
                    published: src,
                    measured: ours,
                    unit: "%",
                },
                &format!(
                    "{a:.0} -> {b:.0}; {:.1} levels per update",
                    levels.unwrap_or(f64::NAN)
                ),
                &format!(
                    "{base:.0} -> {patched:.0} ({src:+.2}% as printed{}; 30 runs, 384 CPUs, depth 4)",
                    match pct_change(base, patched) {
                        Some(c) if (c - src).abs() > 0.05 => format!(", {c:+.2}% from its means"),
                        _ => String::new(),
                    }
                ),
                WALK_WHY,
            );
        }
        if let Some(a) = report.mean_of("linux-5.15", &m) {
            claims.add_info(
                &format!(
                    "{} {m} under linux-5.15, absolute (reference)",
                    w.test.name()
                ),
                format!("{a:.0} ops/s"),
                &format!("{base:.0} ops/s"),
                "our fault is the host's uncontended one (a 2-vCPU guest); the source's 384 CPUs \
                 also contend on the zone and LRU locks, which the model does not price",
            );
        }
        if let (Some(a), Some(h)) = (
            report.mean_of("linux-5.15", &m),
            report.mean_of("hierstat", &m),
        ) {
            let c = pct_change(a, h).unwrap_or(f64::NAN);
            claims.add(
                &format!(
                    "{} {m}: hierstat within 0.5% of linux-5.15's global threshold",
                    w.test.name()
                ),
                format!("{c:+.2}%"),
                "ours: one residue per update, folds skip groups above T",
                c >= -0.5,
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
    fn claims_are_in_size() {
        let w = WillItScaleSpec {
            test: FaultTest::PageFault1,
            modes: vec![TaskMode::Process],
            depth: 4,
            region_mib: 128,
            warmup_ms: 1.0,
        };
        let m = ops_metric(TaskMode::Process);
        let at = |pct: f64| {
            report(
                "page-fault1",
                &[
                    ("linux-5.15", &m, 100.0),
                    ("linux-6.8", &m, 100.0 + pct),
                    ("hierstat", &m, 100.0),
                ],
            )
        };
        let c = claims(&at(-4.0), &w);
        assert!(c[0].pass && c[0].size.is_some(), "{c:?}");
        assert!(
            c[0].published.contains("-6.02% as printed;"),
            "{}",
            c[0].published
        );
        assert!(c[1].info && c[2].pass);
        let c = claims(&at(-1.5), &w);
        assert!(!c[0].pass && c[0].why.contains("rstat_level_ns"), "{c:?}");
        assert!(!claims(&at(1.0), &w)[0].pass, "wrong sign");
    }
}
