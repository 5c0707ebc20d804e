//! Results store tests on temporary databases.

#[path = "../../mmlab/tests/it/common/sample.rs"]
#[allow(dead_code)]
mod sample;
use runstore::schema::SCHEMA_VERSION;
use runstore::{HostFacts, RunId, Store, StoreError};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn host() -> HostFacts {
    HostFacts {
        cpus: 2,
        cpu_model: "Test CPU @ 2.0GHz".into(),
        kernel: "6.1.0-test".into(),
        mmlab_version: "0.1.0".into(),
        git_commit: Some("abc1234".into()),
        git_dirty: Some(false),
    }
}

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(secs * 1000 + 250)
}

fn tmp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mmlab.db");
    (dir, p)
}

/// Rows in every table, to prove a failed save left nothing behind.
fn row_counts(path: &Path) -> Vec<(String, i64)> {
    let c = Connection::open(path).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    tables
        .into_iter()
        .map(|t| {
            let n = c
                .query_row(&format!("SELECT count(*) FROM \"{t}\""), [], |r| r.get(0))
                .unwrap();
            (t, n)
        })
        .collect()
}

#[test]
fn round_trip_of_runs() {
    let (_d, path) = tmp_db();
    let mut store = Store::open(&path).unwrap();
    let mut reports = sample::all(7);
    // Edge cases: a seed above i64::MAX, a policy listed but without
    // results, a policy with results but not listed.
    reports[0].seed = u64::MAX;
    reports[1].policy_order.push("never-ran".into());
    let extra = reports[2].policies["hierstat"].clone();
    reports[2].policies.insert("unlisted".into(), extra);
    let mut ids = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        ids.push(
            store
                .save(r, &host(), t(100 + i as u64), t(160 + i as u64))
                .unwrap(),
        );
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    for (id, r) in ids.iter().zip(&reports) {
        let run = store.load(*id).unwrap();
        assert_eq!(&run.report, r, "run {id} comes back as saved");
        assert_eq!(run.summary.host, host());
        assert_eq!(run.summary.started, t(100 + (id.0 - ids[0].0) as u64));
        assert_eq!(run.summary.scenario, r.scenario);
    }
    // Reopening sees the same runs.
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let h = store.history(None).unwrap();
    assert_eq!(h.iter().map(|s| s.id).collect::<Vec<_>>(), ids);
    assert_eq!(h[1].policies.last().unwrap(), "never-ran");
    let only = store.history(Some("update-path")).unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].id, ids[2]);
    assert!(store.history(Some("nope")).unwrap().is_empty());
    assert_eq!(store.load(ids[0]).unwrap().report.seed, u64::MAX);
}

#[test]
fn nan_values_survive() {
    let (_d, path) = tmp_db();
    let mut store = Store::open(&path).unwrap();
    let mut r = sample::stat_readers(1);
    let m = r
        .policies
        .get_mut("hierstat")
        .unwrap()
        .metrics
        .get_mut("stale_reads")
        .unwrap();
    m.values[1] = f64::NAN;
    let first = m.values[0];
    let id = store.save(&r, &host(), t(1), t(2)).unwrap();
    let back = store.load(id).unwrap().report;
    let v = &back.policies["hierstat"].metrics["stale_reads"].values;
    assert_eq!(v.len(), 3);
    assert!(v[1].is_nan());
    assert_eq!(v[0], first);
}

#[test]
fn migrations_from_an_empty_file_and_from_v1() {
    let (_d, path) = tmp_db();
    std::fs::write(&path, b"").unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let names: Vec<String> = row_counts(&path).into_iter().map(|(n, _)| n).collect();
    for t in runstore::schema::TABLES {
        assert!(names.iter().any(|n| n == t), "table {t} in {names:?}");
    }
    let c = Connection::open(&path).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(store);

    // A version-1 database (no tags yet) with a run in it migrates to the
    // current version and keeps the run.
    let (_d2, old) = tmp_db();
    let mut v1 = Store::open_at_version(&old, 1).unwrap();
    assert_eq!(v1.schema_version().unwrap(), 1);
    let r = sample::update_path(3);
    let id = v1.save(&r, &host(), t(1), t(2)).unwrap();
    assert!(v1.tag(id, "base").is_err(), "version 1 has no tags table");
    drop(v1);
    let mut now = Store::open(&old).unwrap();
    assert_eq!(now.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(now.load(id).unwrap().report, r);
    now.tag(id, "base").unwrap();
    assert_eq!(now.resolve("base").unwrap(), id);
}

#[test]
fn resolve_and_tag() {
    let (_d, path) = tmp_db();
    let mut store = Store::open(&path).unwrap();
    let err = store.resolve("last").unwrap_err();
    assert!(err.to_string().contains("no runs yet"), "{err}");
    let r = sample::stat_readers(5);
    let ids: Vec<RunId> = (0..3)
        .map(|i| store.save(&r, &host(), t(i), t(i + 1)).unwrap())
        .collect();
    assert_eq!(store.resolve("last").unwrap(), ids[2]);
    assert_eq!(store.resolve("last~0").unwrap(), ids[2]);
    assert_eq!(store.resolve("last~1").unwrap(), ids[1]);
    assert_eq!(store.resolve("last~2").unwrap(), ids[0]);
    let err = store.resolve("last~3").unwrap_err();
    assert!(err.to_string().contains("only 3 runs"), "{err}");
    assert!(store.resolve("last~x").is_err());
    assert_eq!(store.resolve(&ids[1].to_string()).unwrap(), ids[1]);
    assert_eq!(store.resolve(&format!("#{}", ids[0])).unwrap(), ids[0]);
    assert!(matches!(
        store.resolve("999"),
        Err(StoreError::UnknownRun { .. })
    ));
    assert!(matches!(
        store.resolve("nosuchtag"),
        Err(StoreError::UnknownRun { .. })
    ));

    store.tag(ids[0], "baseline").unwrap();
    assert_eq!(store.resolve("baseline").unwrap(), ids[0]);
    // A tag names one run: tagging another run moves it.
    store.tag(ids[1], "baseline").unwrap();
    assert_eq!(store.resolve("baseline").unwrap(), ids[1]);
    assert_eq!(store.summary(ids[1]).unwrap().tags, ["baseline"]);
    assert!(store.summary(ids[0]).unwrap().tags.is_empty());
    for bad in ["last", "last~2", "12", "#3", "", " x"] {
        assert!(
            matches!(store.tag(ids[0], bad), Err(StoreError::InvalidTag { .. })),
            "tag '{bad}' refused"
        );
    }
    assert!(matches!(
        store.tag(RunId(999), "x"),
        Err(StoreError::UnknownRun { .. })
    ));
}

#[test]
fn bad_paths_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/mmlab.db");
    let err = Store::open(&missing).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Open { .. }));
    assert!(
        msg.contains("no/such/dir") && msg.contains("does not exist"),
        "{msg}"
    );
    let err = Store::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
}

#[test]
fn non_sqlite_and_foreign_files_are_refused() {
    let (_d, path) = tmp_db();
    std::fs::write(&path, "this is a text file, not a database\n".repeat(50)).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotSqlite { .. }), "{err:?}");
    assert!(err.to_string().contains("not an SQLite file"), "{err}");
    // The file is untouched.
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .starts_with("this is a text file"));

    let (_d, path) = tmp_db();
    let c = Connection::open(&path).unwrap();
    c.execute_batch("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);")
        .unwrap();
    drop(c);
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");
    assert!(err.to_string().contains("another program"), "{err}");

    let (_d, path) = tmp_db();
    let c = Connection::open(&path).unwrap();
    c.execute_batch("PRAGMA application_id = 1234;").unwrap();
    drop(c);
    let err = Store::open(&path).unwrap_err();
    assert!(err.to_string().contains("application id 0x4d2"), "{err}");

    // An mmlab database whose header was overwritten.
    let (_d, path) = tmp_db();
    let mut s = Store::open(&path).unwrap();
    s.save(&sample::update_path(1), &host(), t(1), t(2))
        .unwrap();
    drop(s);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..16].copy_from_slice(b"garbage garbage!");
    std::fs::write(&path, bytes).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotSqlite { .. }), "{err:?}");
}

#[test]
fn newer_schema_is_refused_naming_both_versions() {
    let (_d, path) = tmp_db();
    drop(Store::open(&path).unwrap());
    let c = Connection::open(&path).unwrap();
    c.execute_batch("PRAGMA user_version = 99;").unwrap();
    drop(c);
    let err = Store::open(&path).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err:?}"
    );
    assert!(
        msg.contains("99") && msg.contains(&format!("version {SCHEMA_VERSION}")),
        "{msg}"
    );
}

#[test]
fn an_interrupted_save_leaves_nothing() {
    let (_d, path) = tmp_db();
    let mut store = Store::open(&path).unwrap();
    let first = store.save(&sample::numa01(1), &host(), t(1), t(2)).unwrap();
    let before = row_counts(&path);
    let r = sample::refault_storm(2);
    let err = store
        .save_with_hook(&r, &host(), t(3), t(4), &mut |n| {
            if n == 3 {
                Err(StoreError::Interrupted("injected after 3 rows".into()))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::Interrupted(_)));
    assert_eq!(
        row_counts(&path),
        before,
        "nothing of the failed run remains"
    );
    assert_eq!(store.resolve("last").unwrap(), first);
    // The store still works afterwards.
    let next = store.save(&r, &host(), t(5), t(6)).unwrap();
    assert_eq!(store.load(next).unwrap().report, r);
}

/// Runs this test binary's `child_process` helper with `mode`.
fn child(path: &Path, mode: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        "child_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("MMLAB_STORE_TEST_DB", path)
    .env("MMLAB_STORE_TEST_MODE", mode)
    .stdout(std::process::Stdio::null());
    c
}

/// Helper run in a child process by the tests below (not a test itself:
/// it does nothing without its environment variables).
#[test]
#[ignore = "helper run in a child process by other tests"]
fn child_process() {
    let (Ok(path), Ok(mode)) = (
        std::env::var("MMLAB_STORE_TEST_DB"),
        std::env::var("MMLAB_STORE_TEST_MODE"),
    ) else {
        return;
    };
    let mut store = Store::open(&path).unwrap();
    match mode.as_str() {
        // Crash (abort: no unwinding, no rollback code) in the middle of a save.
        "crash" => {
            let r = sample::refault_storm(9);
            let _ = store.save_with_hook(&r, &host(), t(1), t(2), &mut |n| {
                if n == 4 {
                    std::process::abort();
                }
                Ok(())
            });
            unreachable!("the hook aborts");
        }
        // Save 15 runs as fast as possible.
        "write" => {
            for i in 0..15 {
                let mut r = sample::update_path(i);
                r.scenario = format!("writer-{}", std::process::id());
                store.save(&r, &host(), t(i), t(i + 1)).unwrap();
            }
        }
        m => panic!("unknown mode {m}"),
    }
}

#[test]
fn a_crash_mid_save_leaves_nothing() {
    let (_d, path) = tmp_db();
    let mut store = Store::open(&path).unwrap();
    let first = store.save(&sample::numa01(1), &host(), t(1), t(2)).unwrap();
    drop(store);
    let before = row_counts(&path);
    let status = child(&path, "crash").status().unwrap();
    assert!(!status.success(), "the child aborted");
    let store = Store::open(&path).unwrap();
    assert_eq!(row_counts(&path), before, "the crashed run left no rows");
    assert_eq!(store.resolve("last").unwrap(), first);
    let c = Connection::open(&path).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn concurrent_writers_in_threads() {
    let (_d, path) = tmp_db();
    drop(Store::open(&path).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                let mut ids = Vec::new();
                for i in 0..10 {
                    let mut r = sample::stat_readers(w * 100 + i);
                    r.scenario = format!("thread-{w}");
                    ids.push(store.save(&r, &host(), t(i), t(i + 1)).unwrap());
                }
                ids
            })
        })
        .collect();
    let mut ids: Vec<RunId> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 40);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.history(None).unwrap().len(), 40);
    for w in 0..4 {
        let runs = store.history(Some(&format!("thread-{w}"))).unwrap();
        assert_eq!(runs.len(), 10);
        for (i, s) in runs.iter().enumerate() {
            let back = store.load(s.id).unwrap().report;
            let mut want = sample::stat_readers(w * 100 + i as u64);
            want.scenario = format!("thread-{w}");
            assert_eq!(back, want);
        }
    }
}

#[test]
fn concurrent_writers_in_processes() {
    // Two processes open a brand-new file at once (both migrate it) and
    // save 15 runs each.
    let (_d, path) = tmp_db();
    let kids: Vec<_> = (0..2)
        .map(|_| child(&path, "write").spawn().unwrap())
        .collect();
    for mut k in kids {
        assert!(k.wait().unwrap().success(), "writer process succeeded");
    }
    let store = Store::open(&path).unwrap();
    let runs = store.history(None).unwrap();
    assert_eq!(runs.len(), 30, "every run of both writers is stored");
    let mut scenarios: Vec<&str> = runs.iter().map(|r| r.scenario.as_str()).collect();
    scenarios.sort();
    scenarios.dedup();
    assert_eq!(scenarios.len(), 2);
    for s in &runs {
        store.load(s.id).unwrap();
    }
}

#[test]
fn run_facts_round_trip() {
    let (_d, path) = tmp_db();
    let mut store = Store::open(&path).unwrap();
    let mut r = sample::update_path(5);
    r.mode = lab::report::Mode::Kernel;
    r.facts.insert("kernel_release".into(), "6.18.44".into());
    r.facts.insert("cgroup_version".into(), "v1".into());
    let id = store.save(&r, &host(), t(1), t(2)).unwrap();
    let back = store.load(id).unwrap();
    assert_eq!(back.report, r);
    assert_eq!(back.summary.mode, lab::report::Mode::Kernel);
    assert_eq!(store.facts_of(id).unwrap()["cgroup_version"], "v1");
}

/// Issue 28: a `user_version` that does not match the tables (negative, or
/// older than the schema the file holds, or current with a table gone) is
/// a clear error on every way in, never a panic or a raw SQL error.
#[test]
fn a_user_version_that_lies_is_a_damaged_database() {
    for (version, drop_table) in [(-5i64, None), (-1, None), (0, None), (1, None), (3, None)]
        .into_iter()
        .chain((1..=SCHEMA_VERSION - 1).map(|v| (v, None)))
        .chain([(SCHEMA_VERSION, Some("sweep_points"))])
    {
        let (_d, path) = tmp_db();
        let mut s = Store::open(&path).unwrap();
        s.save(&sample::update_path(1), &host(), t(1), t(2))
            .unwrap();
        drop(s);
        let c = Connection::open(&path).unwrap();
        c.execute_batch(&format!("PRAGMA user_version = {version};"))
            .unwrap();
        if let Some(t) = drop_table {
            c.execute_batch(&format!("DROP TABLE {t};")).unwrap();
        }
        drop(c);
        for (what, err) in [
            ("open", Store::open(&path).err()),
            ("open_existing", Store::open_existing(&path).err()),
            ("check_source", runstore::merge::check_source(&path).err()),
        ] {
            let err = err.unwrap_or_else(|| panic!("{what} at version {version} opened"));
            let msg = err.to_string();
            assert!(
                matches!(
                    err,
                    StoreError::Damaged { .. } | StoreError::SchemaMismatch { .. }
                ),
                "{what} at {version}: {err:?}"
            );
            assert!(msg.contains("mmlab.db"), "{what} at {version}: {msg}");
            assert!(
                !msg.contains("already exists") || msg.contains("damaged"),
                "{what} at {version}: {msg}"
            );
        }
    }
}

/// Issue 28: `store merge` refuses the target as a source, and a refused
/// merge leaves no new target file.
#[test]
fn merge_refuses_itself_and_leaves_no_target_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.db");
    let mut s = Store::open(&a).unwrap();
    s.save(&sample::update_path(1), &host(), t(1), t(2))
        .unwrap();
    drop(s);
    // Into itself, by the same path or another spelling of it.
    let alias = dir.path().join(".").join("a.db");
    for src in [a.clone(), alias] {
        let err = runstore::merge::merge_into(&a, std::slice::from_ref(&src)).unwrap_err();
        assert!(matches!(err, StoreError::MergeIntoItself { .. }), "{err:?}");
        assert!(err.to_string().contains("into itself"), "{err}");
    }
    assert_eq!(Store::open(&a).unwrap().history(None).unwrap().len(), 1);
    // A refused source: the new target is not created.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, "not a database").unwrap();
    let target = dir.path().join("new.db");
    assert!(runstore::merge::merge_into(&target, &[a.clone(), junk]).is_err());
    assert!(!target.exists(), "a refused merge created {target:?}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("new.db"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A good merge creates it.
    let sum = runstore::merge::merge_into(&target, &[a]).unwrap();
    assert_eq!(sum.copied, 1);
}

/// Issue 28: every stored run records the commit and whether the build's
/// sources differed from it, and both survive a merge.
#[test]
fn the_dirty_flag_is_stored_and_merged() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.db");
    let mut s = Store::open(&a).unwrap();
    let mut dirty = host();
    dirty.git_dirty = Some(true);
    let id = s.save(&sample::update_path(1), &dirty, t(1), t(2)).unwrap();
    let mut unknown = host();
    unknown.git_dirty = None;
    let id2 = s
        .save(&sample::update_path(1), &unknown, t(3), t(4))
        .unwrap();
    assert_eq!(s.summary(id).unwrap().host.git_dirty, Some(true));
    assert_eq!(
        s.summary(id).unwrap().host.commit_label().as_deref(),
        Some("abc1234-dirty")
    );
    assert_eq!(s.summary(id2).unwrap().host.git_dirty, None);
    drop(s);
    let b = dir.path().join("b.db");
    runstore::merge::merge_into(&b, &[a]).unwrap();
    let s = Store::open(&b).unwrap();
    let h = s.history(None).unwrap();
    assert_eq!(h[0].host.git_dirty, Some(true));
    assert_eq!(h[1].host.git_dirty, None);
}
