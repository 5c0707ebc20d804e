//! Issue 35, the store's part: readers are never blocked by a writer,
//! `store merge` reads a source another process is writing, and every
//! message names the file (and the run) at fault, once.

#[path = "../../mmlab/tests/it/common/sample.rs"]
#[allow(dead_code)]
mod sample;
use runstore::{HostFacts, RunId, Store, StoreError};
use rusqlite::Connection;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn host() -> HostFacts {
    HostFacts {
        cpus: 2,
        cpu_model: "Test CPU".into(),
        kernel: "6.1.0-test".into(),
        mmlab_version: "0.1.0".into(),
        git_commit: None,
        git_dirty: None,
    }
}

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// A database at `path` holding `n` runs, its WAL folded into the file.
fn db_with_runs(path: &Path, n: u64) {
    let mut s = Store::open(path).unwrap();
    for i in 0..n {
        s.save(&sample::update_path(i + 1), &host(), t(i), t(i + 1))
            .unwrap();
    }
    drop(s);
    let c = Connection::open(path).unwrap();
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
}

/// Another process's write transaction on `path`, held while it lives
/// (an uncommitted tag on run 1).
fn writer(path: &Path) -> Connection {
    let c = Connection::open(path).unwrap();
    c.execute_batch(
        "BEGIN IMMEDIATE; INSERT INTO tags (name, run_id, created_ms) VALUES ('pending', 1, 0);",
    )
    .unwrap();
    c
}

/// The error and its sources, as `anyhow`'s `{:#}` prints them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(c) = next {
        s.push_str(": ");
        s.push_str(&c.to_string());
        next = c.source();
    }
    s
}

#[test]
fn readers_are_not_blocked_by_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    db_with_runs(&db, 2);
    let w = writer(&db);
    let store = Store::open_existing(&db).expect("a reader opens while a writer writes");
    assert_eq!(store.history(None).unwrap().len(), 2);
    let last = store.resolve("last").unwrap();
    assert_eq!(store.load(last).unwrap().summary.id, RunId(2));
    // The writer's uncommitted tag is not seen.
    assert!(store.resolve("pending").is_err());
    drop(w);
}

#[test]
fn merge_reads_a_source_another_process_is_writing() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.db");
    db_with_runs(&src, 2);
    let w = writer(&src);
    let target = dir.path().join("into.db");
    let sum = runstore::merge::merge_into(&target, std::slice::from_ref(&src))
        .unwrap_or_else(|e| panic!("{}", chain(&e)));
    assert_eq!(sum.copied, 2);
    drop(w);
    let s = Store::open_existing(&target).unwrap();
    assert!(
        s.resolve("pending").is_err(),
        "an uncommitted tag came along"
    );
}

#[test]
fn a_damaged_merge_source_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("damaged.db");
    db_with_runs(&src, 2);
    // Garbage over the `metrics` table's root page: the header, the schema
    // and the identity pragmas still read.
    let (page, root): (i64, i64) = {
        let c = Connection::open(&src).unwrap();
        let page = c
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        let root = c
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = 'metrics'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (page, root)
    };
    let mut bytes = std::fs::read(&src).unwrap();
    let at = ((root - 1) * page) as usize;
    for b in &mut bytes[at..at + page as usize] {
        *b = 0xa5;
    }
    std::fs::write(&src, bytes).unwrap();
    let target = dir.path().join("t1.db");
    db_with_runs(&target, 1);
    let e = runstore::merge::merge_into(&target, std::slice::from_ref(&src)).unwrap_err();
    let text = chain(&e);
    assert!(text.contains("damaged.db"), "names the source: {text}");
    assert!(!text.contains("t1.db"), "blames the target: {text}");
    assert_eq!(text.matches("malformed").count(), 1, "said once: {text}");
    assert!(!text.contains("Error code"), "{text}");
    // Nothing was copied.
    let s = Store::open_existing(&target).unwrap();
    assert_eq!(s.history(None).unwrap().len(), 1);
}

#[test]
fn a_directory_as_merge_source_is_called_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("shards");
    std::fs::create_dir(&sub).unwrap();
    let e = runstore::merge::merge_into(&dir.path().join("t.db"), std::slice::from_ref(&sub))
        .unwrap_err();
    let text = chain(&e);
    assert!(
        text.contains("shards") && text.contains("directory"),
        "{text}"
    );
    assert!(!text.contains("no such file"), "{text}");
    let e = runstore::merge::merge_into(&dir.path().join("t.db"), &[dir.path().join("none.db")])
        .unwrap_err();
    assert!(chain(&e).contains("no such file"), "{e}");
}

#[test]
fn a_column_of_the_wrong_type_names_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    db_with_runs(&db, 3);
    let c = Connection::open(&db).unwrap();
    c.execute_batch("UPDATE runs SET scenario = x'00ff' WHERE id = 2;")
        .unwrap();
    drop(c);
    let s = Store::open_existing(&db).unwrap();
    for e in [
        s.history(None).unwrap_err(),
        s.load(RunId(2)).unwrap_err(),
        s.summary(RunId(2)).unwrap_err(),
    ] {
        let text = chain(&e);
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(
            text.contains("run 2") && text.contains("scenario"),
            "{text}"
        );
        assert!(text.contains("t.db"), "{text}");
    }
    // The other runs still load.
    assert!(s.load(RunId(3)).is_ok());
    // A metric row of the wrong type, met while loading a run.
    let c = Connection::open(&db).unwrap();
    c.execute_batch("UPDATE metrics SET unit = x'01' WHERE run_id = 3;")
        .unwrap();
    drop(c);
    let e = s.load(RunId(3)).unwrap_err();
    let text = chain(&e);
    assert!(text.contains("run 3") && text.contains("unit"), "{text}");
}
