//! `mmlab store merge A.db B.db … --into C.db`: copies the runs of several
//! results databases into one.
//!
//! * A run's identity is its `uid` (128 random bits given when it was first
//!   stored), not its row id: a run whose uid the target already holds is
//!   skipped, so merging twice, or merging overlapping files, adds nothing
//!   new (idempotent). Row ids are renumbered in the target; uids, times,
//!   host facts and every value are copied as they are.
//! * Every source must be an mmlab database of the target's schema version;
//!   any other is refused before anything is copied (open an older file
//!   once with this mmlab to migrate it).
//! * Tags come along unless the target already uses the name (reported);
//!   sweep points come along unless the target already holds that job of
//!   that sweep (the run itself is still copied).
//! * Each source is copied in one transaction; a source that is the
//!   target itself is refused, and [`merge_into`] leaves no new target
//!   behind when it fails.
//! * Sources are opened read-only: a source another process is writing is
//!   read as of its last commit, without waiting for the writer. Every
//!   error names the file at fault: a damaged source is found by SQLite's
//!   `quick_check` before anything is copied.

use super::error::sqlite_message;
use super::schema::{APPLICATION_ID, SCHEMA_VERSION};
use super::{file_uri, sql_err, Store, StoreError};
use rusqlite::{params, Connection, OpenFlags, Transaction, TransactionBehavior};
use std::path::{Path, PathBuf};

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeSummary {
    /// Runs copied.
    pub copied: usize,
    /// Runs the target already held (same uid).
    pub present: usize,
    /// Tags not copied because the target uses the name.
    pub tags_skipped: Vec<String>,
    /// Sweep points not linked because the target holds the job already.
    pub points_skipped: usize,
}

/// Checks that `path` is an undamaged mmlab database of the current schema
/// version, reading it read-only (never waiting for a process writing it).
///
/// # Errors
/// [`StoreError::Open`] (missing, a directory, not a regular file),
/// [`StoreError::NotSqlite`], [`StoreError::Foreign`],
/// [`StoreError::SchemaMismatch`], [`StoreError::Damaged`].
pub fn check_source(path: &Path) -> Result<(), StoreError> {
    let refuse = |reason: String| StoreError::Open {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse("no such file".into()))
        }
        Err(e) => return Err(refuse(e.to_string())),
        Ok(m) if m.is_dir() => {
            return Err(refuse(
                "it is a directory; give the database files in it".into(),
            ))
        }
        Ok(m) if !m.is_file() => {
            return Err(refuse(
                "not a regular file (a FIFO, device or socket)".into(),
            ))
        }
        Ok(_) => {}
    }
    let conn = file_uri(path, "mode=ro")
        .map_err(|e| refuse(e.to_string()))
        .and_then(|uri| {
            Connection::open_with_flags(
                uri,
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| refuse(sqlite_message(&e)))
        })?;
    let read = |pragma: &str| -> Result<i64, StoreError> {
        conn.pragma_query_value(None, pragma, |r| r.get(0))
            .map_err(|e| {
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
                    StoreError::NotSqlite {
                        path: path.to_path_buf(),
                    }
                } else {
                    sql_err(path, e)
                }
            })
    };
    let app = read("application_id")?;
    if app != APPLICATION_ID {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            detail: format!("application id {app:#x}, mmlab's is {APPLICATION_ID:#x}"),
        });
    }
    let version = read("user_version")?;
    if version != SCHEMA_VERSION {
        return Err(StoreError::SchemaMismatch {
            path: path.to_path_buf(),
            found: version,
            expected: SCHEMA_VERSION,
        });
    }
    let damaged = |detail: String| StoreError::Damaged {
        path: path.to_path_buf(),
        detail,
    };
    let (tables, _) = super::schema_objects(&conn).map_err(|e| damaged(sqlite_message(&e)))?;
    if let Some(t) = super::schema::TABLES
        .iter()
        .find(|t| !tables.iter().any(|n| n == *t))
    {
        return Err(damaged(format!(
            "its schema version is {version} but it has no `{t}` table"
        )));
    }
    // Every page read once: a damaged source is named before the copy,
    // where an error could come from either file.
    let first: String = conn
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .map_err(|e| match sql_err(path, e) {
            busy @ StoreError::Busy { .. } => busy,
            StoreError::Sqlite { error, .. } => damaged(sqlite_message(&error)),
            other => other,
        })?;
    if first != "ok" {
        let problem = first
            .lines()
            .find(|l| !l.starts_with("***"))
            .unwrap_or(&first);
        return Err(damaged(format!(
            "database disk image is malformed (SQLite's quick_check: {problem})"
        )));
    }
    Ok(())
}

/// Whether `a` and `b` name the same file (same device and inode), for
/// paths that exist.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// `mmlab store merge`: checks every source (an mmlab database of this
/// schema version, not the target itself) before the target is opened,
/// then merges them into `target`, creating it if needed. A target this
/// call created is removed again when the merge fails, so a refused merge
/// leaves no new file behind.
///
/// # Errors
/// A refused source ([`check_source`], [`StoreError::MergeIntoItself`]),
/// the target cannot be opened, or the copy fails (that source rolled
/// back).
pub fn merge_into(target: &Path, sources: &[PathBuf]) -> Result<MergeSummary, StoreError> {
    for s in sources {
        if same_file(s, target) {
            return Err(StoreError::MergeIntoItself { path: s.clone() });
        }
        check_source(s)?;
    }
    let created = !target.exists();
    let result = Store::open(target).and_then(|mut store| store.merge_from(sources));
    if result.is_err() && created {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = target.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
    result
}

impl Store {
    /// Merges the runs of `sources` into this database (see the module
    /// documentation). Every source is checked before any is copied.
    ///
    /// # Errors
    /// A source that is not an mmlab database of this schema version;
    /// SQLite errors (the source being copied is then rolled back).
    pub fn merge_from(&mut self, sources: &[PathBuf]) -> Result<MergeSummary, StoreError> {
        for s in sources {
            if same_file(s, &self.path) {
                return Err(StoreError::MergeIntoItself { path: s.clone() });
            }
            check_source(s)?;
        }
        let mut sum = MergeSummary::default();
        for s in sources {
            self.copy_source(s, &mut sum)?;
        }
        Ok(sum)
    }

    /// Copies one source in one transaction. The source is attached
    /// read-only, so the transaction takes the write lock of this database
    /// only.
    fn copy_source(&mut self, src: &Path, sum: &mut MergeSummary) -> Result<(), StoreError> {
        let target = self.path.clone();
        // Only the target is written, and its write lock is held from the
        // transaction's start: a read-only error is the target's, a busy
        // one the source's (a source not in WAL mode, being written).
        let failed = |e: rusqlite::Error| {
            if super::is_read_only(&e) {
                return sql_err(&target, e);
            }
            match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                    StoreError::Busy {
                        path: src.to_path_buf(),
                    }
                }
                _ => StoreError::MergeFailed {
                    source_db: src.to_path_buf(),
                    target: target.clone(),
                    detail: sqlite_message(&e),
                },
            }
        };
        let uri = file_uri(src, "mode=ro").map_err(|e| StoreError::Open {
            path: src.to_path_buf(),
            reason: e.to_string(),
        })?;
        self.conn
            .execute("ATTACH DATABASE ?1 AS src", params![uri])
            .map_err(failed)?;
        let copied = (|| {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| sql_err(&target, e))?;
            copy_runs(&tx, sum).map_err(failed)?;
            tx.commit().map_err(|e| sql_err(&target, e))
        })();
        let detached = self.conn.execute("DETACH DATABASE src", []);
        copied?;
        detached.map_err(|e| sql_err(&target, e))?;
        Ok(())
    }
}

fn copy_runs(tx: &Transaction<'_>, sum: &mut MergeSummary) -> rusqlite::Result<()> {
    let runs: Vec<(i64, String)> = {
        let mut st = tx.prepare("SELECT id, uid FROM src.runs ORDER BY id")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (old, uid) in runs {
        let present: i64 = tx.query_row(
            "SELECT count(*) FROM main.runs WHERE uid = ?1",
            [&uid],
            |r| r.get(0),
        )?;
        if present > 0 {
            sum.present += 1;
            continue;
        }
        tx.execute(
            "INSERT INTO main.runs (scenario, scenario_toml, mode, seed, runs, started_ms,
                 ended_ms, host_cpus, host_cpu_model, host_kernel, mmlab_version, git_commit,
                 git_dirty, uid)
             SELECT scenario, scenario_toml, mode, seed, runs, started_ms, ended_ms, host_cpus,
                 host_cpu_model, host_kernel, mmlab_version, git_commit, git_dirty, uid
             FROM src.runs WHERE id = ?1",
            [old],
        )?;
        let new = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO main.policies (run_id, name, order_pos, has_result)
             SELECT ?2, name, order_pos, has_result FROM src.policies WHERE run_id = ?1",
            [old, new],
        )?;
        let metrics: Vec<i64> = {
            let mut st = tx.prepare("SELECT id FROM src.metrics WHERE run_id = ?1 ORDER BY id")?;
            let rows = st.query_map([old], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for m in metrics {
            tx.execute(
                "INSERT INTO main.metrics (run_id, policy, name, unit, higher_is_better,
                     histogram_len)
                 SELECT ?2, policy, name, unit, higher_is_better, histogram_len
                 FROM src.metrics WHERE id = ?1",
                [m, new],
            )?;
            let nm = tx.last_insert_rowid();
            for table in [
                "metric_values (metric_id, run_index, value) SELECT ?2, run_index, value \
                 FROM src.metric_values",
                "percentiles (metric_id, name, run_index, value) SELECT ?2, name, run_index, \
                 value FROM src.percentiles",
                "histogram_buckets (metric_id, bucket, count) SELECT ?2, bucket, count \
                 FROM src.histogram_buckets",
            ] {
                tx.execute(
                    &format!("INSERT INTO main.{table} WHERE metric_id = ?1"),
                    [m, nm],
                )?;
            }
        }
        let series: Vec<i64> = {
            let mut st = tx.prepare("SELECT id FROM src.series WHERE run_id = ?1 ORDER BY id")?;
            let rows = st.query_map([old], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for s in series {
            tx.execute(
                "INSERT INTO main.series (run_id, policy, name, x_label, y_label)
                 SELECT ?2, policy, name, x_label, y_label FROM src.series WHERE id = ?1",
                [s, new],
            )?;
            let ns = tx.last_insert_rowid();
            tx.execute(
                "INSERT INTO main.series_points (series_id, idx, x, y)
                 SELECT ?2, idx, x, y FROM src.series_points WHERE series_id = ?1",
                [s, ns],
            )?;
        }
        // Kernel-mode runs' facts (kernel release, cgroup version, ...).
        tx.execute(
            "INSERT INTO main.run_facts (run_id, key, value)
             SELECT ?2, key, value FROM src.run_facts WHERE run_id = ?1",
            [old, new],
        )?;
        let tags: Vec<(String, i64)> = {
            let mut st = tx.prepare("SELECT name, created_ms FROM src.tags WHERE run_id = ?1")?;
            let rows = st.query_map([old], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (name, created) in tags {
            let n = tx.execute(
                "INSERT OR IGNORE INTO main.tags (name, run_id, created_ms) VALUES (?1, ?2, ?3)",
                params![name, new, created],
            )?;
            if n == 0 {
                sum.tags_skipped.push(name);
            }
        }
        let had_point: i64 = tx.query_row(
            "SELECT count(*) FROM src.sweep_points WHERE run_id = ?1",
            [old],
            |r| r.get(0),
        )?;
        let linked = tx.execute(
            "INSERT OR IGNORE INTO main.sweep_points
                 (run_id, sweep, point, knobs, preset, seed, job_key)
             SELECT ?2, sweep, point, knobs, preset, seed, job_key
             FROM src.sweep_points WHERE run_id = ?1",
            [old, new],
        )?;
        sum.points_skipped += (had_point as usize).saturating_sub(linked);
        sum.copied += 1;
    }
    Ok(())
}
