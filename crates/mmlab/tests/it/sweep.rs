//! Sweeps: `--shard` slices merged with `store merge` hold the same results
//! as one full sweep; interrupted sweeps resume; stored user policies re-run
//! exactly; merges are idempotent and refuse other schema versions.

use lab::report::PolicyResult;
use lab::RunOptions;
use mmlab::cmd::sweep::{collect_rows, load_sweep, run_jobs, LoadedSweep};
use mmlab::pipeline::Pipeline;
use runstore::{Store, StoreError};
use sim::cost::CostModel;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A stat-readers scenario small enough for a debug build.
const TINY: &str = r#"
kind = "stats"
name = "tiny-readers"
workload = "stat-readers"
mode = "sim"
policies = ["linux-6.8"]
runs = 1
seed = 1
duration_ms = 30
cpus = 8

[tree]
fanout = [3, 4]

[writers]
rate_per_cpu = 4000.0
targets = "leaves"
hot_fraction = 0.3
pages = [1, 8]
items = 4
burst = 4

[readers]
count = 40
period_ms = 5.0
targets = "all"
items = 4

[flusher]
period_ms = 20
"#;

const SWEEP: &str = r#"
[sweep]
name = "tiny"
scenario = "tiny.toml"
seeds = [1, 2]
base = "hierstat"
presets = ["linux-6.8"]

[sweep.knobs]
pages_per_shard = [1, 16, 256]
"#;

fn setup() -> (tempfile::TempDir, LoadedSweep) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), TINY).unwrap();
    let sweep = dir.path().join("sweep.toml");
    std::fs::write(&sweep, SWEEP).unwrap();
    let ls = load_sweep(&sweep).unwrap();
    (dir, ls)
}

fn run_into(ls: &LoadedSweep, db: &Path, shard: Option<(usize, usize)>) -> (usize, usize) {
    let jobs = match shard {
        Some((i, n)) => ls.sweep.shard(i, n),
        None => ls.sweep.jobs(),
    };
    let mut pipeline = Pipeline::new(CostModel::defaults());
    pipeline.show_progress = false;
    pipeline.store = Some(Store::open(db).unwrap());
    let t = run_jobs(ls, &jobs, &mut pipeline, None).unwrap();
    (t.ran, t.skipped)
}

/// Job key -> (uid, scenario text, results) of a sweep in a database.
fn results(db: &Path) -> BTreeMap<String, (String, String, BTreeMap<String, PolicyResult>)> {
    let store = Store::open(db).unwrap();
    store
        .sweep_points("tiny")
        .unwrap()
        .into_iter()
        .map(|p| {
            let run = store.load(p.run).unwrap();
            (
                p.meta.job_key,
                (
                    store.run_uid(p.run).unwrap(),
                    run.report.scenario_toml,
                    run.report.policies,
                ),
            )
        })
        .collect()
}

#[test]
fn shards_merged_equal_one_full_sweep() {
    let (dir, ls) = setup();
    let total = ls.sweep.jobs().len();
    assert_eq!(total, (3 + 1) * 2);
    let full = dir.path().join("full.db");
    assert_eq!(run_into(&ls, &full, None), (total, 0));

    let parts: Vec<PathBuf> = (1..=3)
        .map(|i| {
            let p = dir.path().join(format!("part-{i}.db"));
            run_into(&ls, &p, Some((i, 3)));
            p
        })
        .collect();
    let merged = dir.path().join("merged.db");
    let mut store = Store::open(&merged).unwrap();
    let sum = store.merge_from(&parts).unwrap();
    assert_eq!((sum.copied, sum.present), (total, 0));
    // Idempotent: a second merge adds nothing.
    let again = store.merge_from(&parts).unwrap();
    assert_eq!((again.copied, again.present), (0, total));
    drop(store);

    let a = results(&full);
    let b = results(&merged);
    assert_eq!(a.len(), total);
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "same jobs"
    );
    for (k, (_, toml_a, pol_a)) in &a {
        let (_, toml_b, pol_b) = &b[k];
        assert_eq!(toml_a, toml_b, "job {k}: same scenario text");
        assert_eq!(pol_a, pol_b, "job {k}: same results");
    }
    // Runs keep their identity through the merge.
    let mut part_uids: Vec<String> = parts
        .iter()
        .flat_map(|p| results(p).into_values().map(|v| v.0))
        .collect();
    let mut merged_uids: Vec<String> = b.into_values().map(|v| v.0).collect();
    part_uids.sort();
    merged_uids.sort();
    assert_eq!(part_uids, merged_uids);

    // The table / plot rows read the same from both stores.
    let ra = collect_rows(&ls, &Store::open(&full).unwrap()).unwrap();
    let rb = collect_rows(&ls, &Store::open(&merged).unwrap()).unwrap();
    assert_eq!(ra.len(), 4);
    assert_eq!(ra, rb);
    assert!(ra.iter().all(|r| r.seeds == vec![1, 2] && r.x.is_finite()));
}

#[test]
fn an_interrupted_sweep_resumes_with_what_finished() {
    let (dir, ls) = setup();
    let db = dir.path().join("s.db");
    let first = ls.sweep.shard(1, 2).len();
    assert_eq!(run_into(&ls, &db, Some((1, 2))), (first, 0));
    let total = ls.sweep.jobs().len();
    assert_eq!(run_into(&ls, &db, None), (total - first, first));
    assert_eq!(run_into(&ls, &db, None), (0, total));
}

#[test]
fn a_stored_user_policy_reruns_exactly() {
    let (dir, ls) = setup();
    let db = dir.path().join("s.db");
    run_into(&ls, &db, Some((1, ls.sweep.jobs().len())));
    let store = Store::open(&db).unwrap();
    let p = &store.sweep_points("tiny").unwrap()[0];
    assert_eq!(p.meta.point, "pages_per_shard=1");
    let run = store.load(p.run).unwrap();
    let text = &run.report.scenario_toml;
    assert!(text.contains("[[policy]]") && text.contains("pages_per_shard = 1"));
    let sc = mmlab::pipeline::input::catalog()
        .parse("stored", text)
        .unwrap();
    assert_eq!(sc.policies(), ["pages_per_shard=1".to_string()]);
    let again = sc.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(again.policies, run.report.policies);
}

#[test]
fn merge_refuses_another_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.db");
    drop(Store::open_at_version(&old, 2).unwrap());
    let mut into = Store::open(dir.path().join("into.db")).unwrap();
    let e = into.merge_from(&[old]).unwrap_err();
    assert!(
        matches!(e, StoreError::SchemaMismatch { found: 2, .. }),
        "{e}"
    );
    let missing = dir.path().join("missing.db");
    assert!(into.merge_from(&[missing]).is_err());
}

#[test]
fn runs_stored_before_version_4_get_an_identity() {
    let (dir, ls) = setup();
    let old = dir.path().join("old.db");
    let mut v2 = Store::open_at_version(&old, 2).unwrap();
    let sc = ls.job_scenario(&ls.sweep.jobs()[0]).unwrap();
    let r = sc.run(&RunOptions::default(), &mut |_| {}).unwrap();
    let host = runstore::HostFacts::detect("test", None, None);
    let now = std::time::SystemTime::now();
    let a = v2.save(&r, &host, now, now).unwrap();
    drop(v2);
    let mut v4 = Store::open(&old).unwrap();
    let b = v4.save(&r, &host, now, now).unwrap();
    let (ua, ub) = (v4.run_uid(a).unwrap(), v4.run_uid(b).unwrap());
    assert_eq!((ua.len(), ub.len()), (32, 32));
    assert_ne!(ua, ub);
    assert_ne!(a, b);
}
