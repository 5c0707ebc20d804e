//! The seeds' claims at reduced size (the default suite checks them at
//! full size): each test runs a built-in scenario, smaller, and asserts
//! that every claim [`sim::claims`] makes on the run holds. The claims are
//! defined once, next to their scenarios; nothing here restates them.

use sim::report::RunReport;
use sim::spec::StatsScenario;
use sim::{RunOptions, Scenario};

/// Runs built-in `name` adjusted by `adjust`, asserts every claim on it
/// holds (there must be at least `min_claims`), returns the report.
fn claims_hold(
    name: &str,
    min_claims: usize,
    adjust: impl FnOnce(&mut StatsScenario),
) -> RunReport {
    let mut sc = Scenario::builtin(name).unwrap().unwrap();
    adjust(sc.as_stats_mut().expect("a stats scenario"));
    let r = sim::run(&sc, &RunOptions::default(), &mut |_| {}).unwrap();
    let claims = sim::claims(&r, &sc);
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
    let r = claims_hold("stale-read", 4, |sc| {
        sc.runs = 1;
        sc.duration_ms = 600;
        if let Some(r) = &mut sc.readers {
            r.count = 1000;
        }
    });
    // Not a claim of this scenario, but the oracle must agree.
    let stale = r.sum_of("hierstat", sim::scenarios::stat_readers::STALE_READS);
    assert_eq!(stale, Some(0.0));
}

#[test]
fn update_path_sim_hierstat_is_flat_in_depth_and_beats_eager_atomics() {
    claims_hold("update-path-sim", 3, |sc| {
        sc.runs = 1;
        sc.policies = vec!["pre-rstat".into(), "hierstat".into()];
    });
}

#[test]
fn stat_readers_sim_hierstat_reads_are_fresh_and_bounded() {
    claims_hold("stat-readers", 3, |sc| {
        sc.runs = 1;
        sc.duration_ms = 200;
        sc.policies = vec!["hierstat".into()];
        if let Some(r) = &mut sc.readers {
            r.count = 4000;
        }
    });
}
