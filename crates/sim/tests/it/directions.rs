//! The seeds' directions at reduced size (the default suite runs them at
//! full size).

use sim::report::RunReport;
use sim::{RunOptions, Scenario};

fn mean(r: &RunReport, p: &str, m: &str) -> f64 {
    let v = &r.policies[p].metrics[m].values;
    v.iter().sum::<f64>() / v.len() as f64
}

fn sum(r: &RunReport, p: &str, m: &str) -> f64 {
    r.policies[p].metrics[m].values.iter().sum()
}

#[test]
fn stale_read_skipping_misses_events_and_hierstat_does_not() {
    let mut file = Scenario::builtin("stale-read").unwrap().unwrap();
    let sc = file.as_stats_mut().expect("a stats scenario");
    sc.runs = 1;
    sc.duration_ms = 600;
    if let Some(r) = &mut sc.readers {
        r.count = 1000;
    }
    let r = sim::run(&file, &RunOptions::default(), &mut |_| {}).unwrap();
    let m515 = mean(&r, "linux-5.15", "missed_event_rate");
    let m68 = mean(&r, "linux-6.8", "missed_event_rate");
    assert!(
        m515 > 0.0,
        "linux-5.15 missed no spike (seed {})",
        file.seed()
    );
    assert!(m68 <= m515 / 10.0, "linux-6.8 {m68} vs linux-5.15 {m515}");
    assert_eq!(sum(&r, "hierstat", "missed_events"), 0.0);
    assert_eq!(sum(&r, "hierstat", "child_gt_parent"), 0.0);
    assert_eq!(sum(&r, "hierstat", "stale_reads"), 0.0);
}

#[test]
fn update_path_sim_hierstat_is_flat_in_depth_and_beats_eager_atomics() {
    let mut file = Scenario::builtin("update-path-sim").unwrap().unwrap();
    let sc = file.as_stats_mut().expect("a stats scenario");
    sc.runs = 1;
    sc.policies = vec!["pre-rstat".into(), "hierstat".into()];
    let r = sim::run(&file, &RunOptions::default(), &mut |_| {}).unwrap();
    let h2 = mean(&r, "hierstat", "update_ops_per_sec_depth2");
    let h4 = mean(&r, "hierstat", "update_ops_per_sec_depth4");
    assert!(h4 >= 0.9 * h2, "depth 4 {h4} vs depth 2 {h2}");
    assert!(h4 > mean(&r, "pre-rstat", "update_ops_per_sec_depth4"));
}

#[test]
fn stat_readers_sim_hierstat_reads_are_fresh_and_bounded() {
    let mut file = Scenario::builtin("stat-readers").unwrap().unwrap();
    let sc = file.as_stats_mut().expect("a stats scenario");
    sc.runs = 1;
    sc.duration_ms = 200;
    sc.policies = vec!["hierstat".into()];
    if let Some(r) = &mut sc.readers {
        r.count = 4000;
    }
    let r = sim::run(&file, &RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(sum(&r, "hierstat", "stale_reads"), 0.0);
    assert_eq!(sum(&r, "hierstat", "reads_over_100ms"), 0.0);
}
