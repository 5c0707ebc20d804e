//! `compare` with known inputs: policy matching, the table, and the Welch
//! t-test values behind the marks, checked against SciPy.

use lab::report::{MetricSamples, Mode, PolicyResult, RunReport};
use mmlab::analysis::compare::{compare_runs, compare_stored, CompareError, ComparedRun};
use mmlab::analysis::stats::{self, Significance};
use mmlab::render::compare::render_comparison;
use runstore::{HostFacts, Store};
use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

fn metric(unit: &str, values: &[f64], hib: bool) -> MetricSamples {
    MetricSamples {
        unit: unit.into(),
        values: values.to_vec(),
        higher_is_better: hib,
        ..Default::default()
    }
}

fn run(policies: &[(&str, &[(&str, MetricSamples)])]) -> RunReport {
    RunReport {
        scenario: "update-path".into(),
        mode: Mode::Real,
        runs: 5,
        seed: 1,
        scenario_toml: "name = \"update-path\"\n".into(),
        policy_order: policies.iter().map(|(p, _)| p.to_string()).collect(),
        policies: policies
            .iter()
            .map(|(p, ms)| {
                (
                    p.to_string(),
                    PolicyResult {
                        metrics: ms.iter().map(|(n, m)| (n.to_string(), m.clone())).collect(),
                        series: BTreeMap::new(),
                    },
                )
            })
            .collect(),
        facts: Default::default(),
    }
}

// Base and patched per-run throughputs (5 runs each) and their Welch test
// computed with SciPy 1.17.1: scipy.stats.ttest_ind(b, a, equal_var=False).
const BASE: [f64; 5] = [36509.0, 36800.0, 36200.0, 36650.0, 36400.0];
const PATCHED: [f64; 5] = [27079.0, 27300.0, 26900.0, 27150.0, 27000.0];
const SCIPY_T: f64 = -76.47790259224455;
const SCIPY_DF: f64 = 6.921136405867395;
const SCIPY_P: f64 = 2.1673102627181147e-11;
// A within-noise pair: t = 0.8560516500077061, df = 5.9874396697098335,
// p = 0.424897119123168.
const NOISY_A: [f64; 4] = [100.0, 110.0, 95.0, 105.0];
const NOISY_B: [f64; 4] = [104.0, 99.0, 115.0, 108.0];
const NOISY_P: f64 = 0.424897119123168;

fn base_run() -> RunReport {
    run(&[
        (
            "linux-5.15",
            &[
                ("update_ops_per_sec_depth2", metric("ops/s", &BASE, true)),
                ("read_latency_ns", metric("ns", &NOISY_A, false)),
            ],
        ),
        (
            "hierstat",
            &[("update_ops_per_sec_depth2", metric("ops/s", &BASE, true))],
        ),
        (
            "pre-rstat",
            &[("update_ops_per_sec_depth2", metric("ops/s", &BASE, true))],
        ),
    ])
}

fn patched_run() -> RunReport {
    run(&[
        (
            "linux-5.15",
            &[
                ("update_ops_per_sec_depth2", metric("ops/s", &PATCHED, true)),
                ("read_latency_ns", metric("ns", &NOISY_B, false)),
            ],
        ),
        (
            "hierstat",
            &[("update_ops_per_sec_depth2", metric("ops/s", &BASE, true))],
        ),
        (
            "linux-6.8",
            &[("update_ops_per_sec_depth2", metric("ops/s", &PATCHED, true))],
        ),
    ])
}

fn compared(label: &str, report: RunReport) -> ComparedRun {
    ComparedRun {
        label: label.into(),
        summary: None,
        report,
    }
}

#[test]
fn welch_values_behind_the_marks_match_scipy() {
    let c = compare_runs(vec![
        compared("#1", base_run()),
        compared("#2", patched_run()),
    ])
    .unwrap();
    let t = &c.tables[0];
    assert_eq!(t.policy, "linux-5.15");
    let row = t
        .table
        .rows
        .iter()
        .find(|r| r.metric == "update_ops_per_sec_depth2")
        .unwrap();
    let ch = row.cells[1].change.unwrap();
    assert!((ch.value - (27085.8 / 36511.8 - 1.0) * 100.0).abs() < 1e-9);
    let Significance::Significant(p) = ch.significance else {
        panic!("a 25.8% drop over 5 quiet runs is significant: {ch:?}");
    };
    assert!((p - SCIPY_P).abs() <= 1e-8 * SCIPY_P);
    let w = stats::welch(&row.cells[0].values, &row.cells[1].values).unwrap();
    assert!((w.t - SCIPY_T).abs() < 1e-9 * SCIPY_T.abs());
    assert!((w.df - SCIPY_DF).abs() < 1e-9 * SCIPY_DF);

    let lat = t
        .table
        .rows
        .iter()
        .find(|r| r.metric == "read_latency_ns")
        .unwrap();
    let Significance::WithinNoise(p) = lat.cells[1].change.unwrap().significance else {
        panic!("within noise");
    };
    assert!((p - NOISY_P).abs() < 1e-9);
}

#[test]
fn policies_are_matched_by_name() {
    let c = compare_runs(vec![
        compared("#1", base_run()),
        compared("#2", patched_run()),
    ])
    .unwrap();
    let names: Vec<&str> = c.tables.iter().map(|t| t.policy.as_str()).collect();
    assert_eq!(names, ["linux-5.15", "hierstat"]);
    assert_eq!(c.tables[1].table.columns, ["#1", "#2"]);
    // hierstat did not change: identical noisy samples, t = 0, p = 1.
    let ch = c.tables[1].table.rows[0].cells[1].change.unwrap();
    assert_eq!(ch.value, 0.0);
    assert!(matches!(ch.significance, Significance::WithinNoise(p) if (p - 1.0).abs() < 1e-12));
    assert_eq!(
        c.notes,
        [
            "policy pre-rstat is only in run #1",
            "policy linux-6.8 is only in run #2"
        ]
    );

    let text = render_comparison(&c);
    let expect = "\
=========================================================================================
run/scenario/mode/runs/seed:
  #1  update-path/real/5/1
  #2  update-path/real/5/1

policy: linux-5.15

#1               #2
---------------- ---------------------------
         %stddev     %change         %stddev
             \\          |                \\
    102.50 ±  6%     ~+3.9%     106.50 ±  6%  read_latency_ns
     36512 ±  1%     -25.8%      27086 ±  1%  update_ops_per_sec_depth2

~ within noise (Welch's t-test, p >= 0.05)

policy: hierstat

#1               #2
---------------- ---------------------------
         %stddev     %change         %stddev
             \\          |                \\
     36512 ±  1%     ~+0.0%      36512 ±  1%  update_ops_per_sec_depth2

~ within noise (Welch's t-test, p >= 0.05)

note: policy pre-rstat is only in run #1
note: policy linux-6.8 is only in run #2
";
    assert_eq!(text, expect, "\n{text}");
}

#[test]
fn single_policy_runs_are_compared_directly() {
    let a = run(&[(
        "linux-5.15",
        &[("update_ops_per_sec_depth2", metric("ops/s", &BASE, true))],
    )]);
    let b = run(&[(
        "hierstat",
        &[("update_ops_per_sec_depth2", metric("ops/s", &PATCHED, true))],
    )]);
    let c = compare_runs(vec![compared("#4", a.clone()), compared("#5", b.clone())]).unwrap();
    assert_eq!(c.tables.len(), 1);
    assert_eq!(c.tables[0].policy, "linux-5.15 / hierstat");
    assert_eq!(c.tables[0].table.columns, ["#4 linux-5.15", "#5 hierstat"]);
    assert!(c.notes.is_empty(), "{:?}", c.notes);

    // Several policies with no name in common: an error that says why.
    let mut a2 = a.clone();
    a2.policies.insert("x".into(), PolicyResult::default());
    let err = compare_runs(vec![compared("#4", a2), compared("#5", b)]).unwrap_err();
    assert!(matches!(err, CompareError::NothingInCommon(_)));
    assert!(matches!(
        compare_runs(vec![compared("#4", a)]),
        Err(CompareError::TooFewRuns(1))
    ));
}

#[test]
fn compare_stored_runs_by_reference() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("mmlab.db")).unwrap();
    let host = HostFacts {
        cpus: 2,
        cpu_model: "cpu".into(),
        kernel: "6.1".into(),
        mmlab_version: "0.1.0".into(),
        git_commit: Some("1ab6a02".into()),
        git_dirty: Some(false),
    };
    let t0 = UNIX_EPOCH + Duration::from_secs(1_796_015_470);
    let a = store
        .save(&base_run(), &host, t0, t0 + Duration::from_secs(5))
        .unwrap();
    store.tag(a, "base").unwrap();
    let b = store
        .save(&patched_run(), &host, t0, t0 + Duration::from_secs(5))
        .unwrap();
    let c = compare_stored(&store, &["base", "last"]).unwrap();
    assert_eq!(
        c.tables[0].table.columns,
        [format!("#{a} base"), format!("#{b}")]
    );
    let text = render_comparison(&c);
    assert!(
        text.contains(&format!(
            "  #{a} base  update-path/real/5/1  2026-11-30 05:11:10 UTC  1ab6a02\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("     36512 ±  1%     -25.8%      27086 ±  1%  update_ops_per_sec_depth2\n")
    );
    assert!(matches!(
        compare_stored(&store, &["last", "last"]),
        Err(CompareError::Duplicate(_))
    ));
    assert!(matches!(
        compare_stored(&store, &["last", "nope"]),
        Err(CompareError::Store(_))
    ));
    assert!(matches!(
        compare_stored(&store, &["last"]),
        Err(CompareError::TooFewRuns(1))
    ));
}
