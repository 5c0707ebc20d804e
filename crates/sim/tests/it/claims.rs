//! The source threads' claims at reduced size (the default suite checks
//! them at full size): each test runs a built-in scenario, smaller, and
//! asserts that every claim [`lab::Scenario::claims`] makes on the run
//! holds. The claims are defined once, next to their scenarios; nothing
//! here restates them.

use lab::report::RunReport;
use lab::Header;
use lab::RunOptions;
use sim::kinds::stats::{StatsScenario, Workload};

/// Runs built-in `name` adjusted by `adjust`, asserts every claim on it
/// holds (there must be at least `min_claims`), returns the report.
fn claims_hold(
    name: &str,
    min_claims: usize,
    adjust: impl FnOnce(&mut Header, &mut StatsScenario),
) -> RunReport {
    let mut sc = sim::catalog().builtin(name).unwrap().unwrap();
    let mut h = sc.header().clone();
    adjust(&mut h, sc.spec_as_mut().expect("a stats scenario"));
    *sc.header_mut() = h;
    let r = sc.run(&RunOptions::default(), &mut |_| {}).unwrap();
    let claims = sc.claims(&r);
    let counted = claims.iter().filter(|c| !c.info).count();
    assert!(
        counted >= min_claims,
        "{name}: only {counted} claims: {claims:?}"
    );
    for c in &claims {
        assert!(c.pass, "{name} (seed {}): {c:?}", sc.seed());
    }
    r
}

#[test]
fn stale_read_skipping_misses_events_and_hierstat_does_not() {
    let r = claims_hold("stale-read", 4, |h, sc| {
        h.runs = 1;
        sc.duration_ms = 600;
        if let Workload::StaleRead(w) = &mut sc.workload {
            w.readers.as_mut().expect("readers").count = 1000;
        }
    });
    // Not a claim of this scenario, but the oracle must agree.
    let stale = r.sum_of("hierstat", sim::kinds::stats::stat_readers::STALE_READS);
    assert_eq!(stale, Some(0.0));
}

#[test]
fn update_path_sim_hierstat_is_flat_in_depth_and_beats_eager_atomics() {
    claims_hold("update-path-sim", 3, |h, _| {
        h.runs = 1;
        h.policies = vec!["pre-rstat".into(), "hierstat".into()];
    });
}

#[test]
fn stat_readers_sim_hierstat_reads_are_fresh_and_bounded() {
    claims_hold("stat-readers", 3, |h, sc| {
        h.runs = 1;
        h.policies = vec!["hierstat".into()];
        sc.duration_ms = 200;
        if let Workload::StatReaders(w) = &mut sc.workload {
            w.readers.count = 4000;
        }
    });
}
