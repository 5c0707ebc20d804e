//! The results store: every run in one SQLite file (default `./mmlab.db`).
//!
//! * One file, opened through rusqlite's bundled SQLite, so a fresh machine
//!   needs nothing else.
//! * Versioned migrations ([`schema`]): `PRAGMA user_version` holds the
//!   schema version and `PRAGMA application_id` marks the file as mmlab's.
//!   A file from a newer mmlab, a non-SQLite file and another program's
//!   SQLite database are refused with a [`StoreError`] that says so.
//! * A run is written in one `BEGIN IMMEDIATE` transaction: a crash, a
//!   Ctrl-C or an error part-way leaves no trace of it.
//! * WAL journal and a 30 s busy timeout: several mmlab processes may write
//!   at once; writers queue, readers never block (opening for reading takes
//!   no write lock unless the schema must be migrated).
//!
//! The store's I/O is the database (and SQLite's `-wal` and `-shm` files
//! beside it, a probe file that tells a read-only folder from a read-only
//! file) and [`HostFacts::detect`]'s reads of `/proc/cpuinfo` and
//! `/proc/sys/kernel/osrelease`; it prints nothing. A run's host facts come
//! in as a [`HostFacts`] value and its times as [`SystemTime`]s.

#![warn(missing_docs)]

mod error;
mod host;
pub mod merge;
mod read;
pub mod schema;
pub mod sweep;
mod time;
mod write;

pub use error::StoreError;
pub use host::{cpu_model_from_cpuinfo, HostFacts};
pub use read::{RunSummary, StoredRun};
pub use time::format_utc;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Default database file, relative to the working directory.
pub const DEFAULT_DB: &str = "mmlab.db";

/// How long a writer waits for another process's transaction to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long opening waits for another process's write lock before
/// reporting the database busy.
pub const OPEN_BUSY_TIMEOUT: Duration = Duration::from_millis(1500);

/// Identifier of a stored run (SQLite rowid, increasing with time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An open results database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the results database at `path` and brings
    /// its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_inner(path.as_ref(), SCHEMA_VERSION, true)
    }

    /// Opens an existing results database for reading (`history`, `show`,
    /// `compare`, `report`, `tag`): a missing file is an error, never
    /// created. A database in a read-only directory (or a read-only file)
    /// is opened read-only and immutable, so reading still works.
    ///
    /// # Errors
    /// The file is missing, not mmlab's, newer, or unreadable.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref();
        if !path.exists() {
            return Err(StoreError::Open {
                path: path.to_path_buf(),
                reason: "no such file (mmlab creates it when it first stores a run; \
                         pass --db FILE to read another)"
                    .into(),
            });
        }
        match Store::open_inner(path, SCHEMA_VERSION, false) {
            Err(StoreError::ReadOnly { .. }) => Store::open_immutable(path),
            other => other,
        }
    }

    /// Opens `path` read-only as an immutable file (no `-wal`/`-shm`
    /// files, no locks): for databases that cannot be written.
    fn open_immutable(path: &Path) -> Result<Store, StoreError> {
        let uri = file_uri(path, "immutable=1").map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&uri, flags).map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.check_identity()?;
        let version = store.user_version()?;
        if version == SCHEMA_VERSION {
            store.check_tables()?;
        } else {
            return Err(StoreError::ReadOnly {
                path: path.to_path_buf(),
                reason: format!(
                    "its schema (version {version}) needs migrating to {SCHEMA_VERSION}, \
                     and it is read-only"
                ),
            });
        }
        Ok(store)
    }

    /// Sets how long a write waits for another process's transaction
    /// ([`BUSY_TIMEOUT`] after opening).
    ///
    /// # Errors
    /// SQLite refuses the setting.
    pub fn set_busy_timeout(&self, d: Duration) -> Result<(), StoreError> {
        self.conn.busy_timeout(d).map_err(|e| self.sql(e))
    }

    /// Opens a database migrated only up to `version`: for migration tests
    /// that need a database of an older schema.
    #[doc(hidden)]
    pub fn open_at_version(path: impl AsRef<Path>, version: i64) -> Result<Store, StoreError> {
        Store::open_inner(path.as_ref(), version.clamp(0, SCHEMA_VERSION), true)
    }

    fn open_inner(path: &Path, target: i64, create: bool) -> Result<Store, StoreError> {
        let path = path.to_path_buf();
        let open_err = |reason: String| StoreError::Open {
            path: path.clone(),
            reason,
        };
        if path.is_dir() {
            return Err(open_err("it is a directory".into()));
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(open_err(format!(
                    "directory {} does not exist",
                    parent.display()
                )));
            }
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(sqlite_path(&path), flags).map_err(|e| {
            if is_read_only(&e) {
                StoreError::ReadOnly {
                    path: path.clone(),
                    reason: read_only_reason(&path),
                }
            } else {
                open_err(e.to_string())
            }
        })?;
        let mut store = Store { conn, path };
        // A short wait while opening: a database another process is writing
        // is reported at once, before any work, instead of after a run.
        store
            .conn
            .busy_timeout(OPEN_BUSY_TIMEOUT)
            .map_err(|e| store.sql(e))?;
        store.check_identity()?;
        store.configure()?;
        // A writer takes the write lock now (`migrate` starts with one), so
        // that a database another process is writing is reported before any
        // work. A reader takes it only when the schema must be migrated:
        // readers never wait for a writer (WAL).
        if create || store.user_version()? < target {
            store.migrate(target)?;
        }
        if target == SCHEMA_VERSION {
            store.check_tables()?;
        }
        store
            .conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| store.sql(e))?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.user_version()
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        sql_err(&self.path, e)
    }

    fn user_version(&self) -> Result<i64, StoreError> {
        self.conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// Refuses non-SQLite files, other programs' databases and newer schemas.
    ///
    /// The reads share one read transaction: another process migrating a
    /// brand-new file between them would otherwise show an application id
    /// of 0 next to its freshly created tables, which looks foreign.
    fn check_identity(&self) -> Result<(), StoreError> {
        let snapshot = self.conn.unchecked_transaction().map_err(|e| self.sql(e))?;
        self.check_identity_in_snapshot()?;
        snapshot.commit().map_err(|e| self.sql(e))
    }

    fn check_identity_in_snapshot(&self) -> Result<(), StoreError> {
        let app: i64 = self
            .conn
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        let version = self.user_version()?;
        if app == 0 {
            let objects: i64 = self
                .conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(|e| self.sql(e))?;
            if objects > 0 || version != 0 {
                return Err(StoreError::Foreign {
                    path: self.path.clone(),
                    detail: format!(
                        "{objects} schema objects, user_version {version}, no mmlab application id"
                    ),
                });
            }
        } else if app != APPLICATION_ID {
            return Err(StoreError::Foreign {
                path: self.path.clone(),
                detail: format!("application id {app:#x}, mmlab's is {APPLICATION_ID:#x}"),
            });
        }
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version < 0 {
            return Err(self.damaged(format!(
                "its schema version (PRAGMA user_version) is {version}; mmlab's are 0 to \
                 {SCHEMA_VERSION}"
            )));
        }
        Ok(())
    }

    fn damaged(&self, detail: String) -> StoreError {
        StoreError::Damaged {
            path: self.path.clone(),
            detail,
        }
    }

    /// Checks that a database at the current version has every table of
    /// the current schema, and the columns added to `runs` since.
    fn check_tables(&self) -> Result<(), StoreError> {
        let (tables, columns) = schema_objects(&self.conn).map_err(|e| self.sql(e))?;
        if let Some(t) = schema::TABLES
            .iter()
            .find(|t| !tables.iter().any(|n| n == *t))
        {
            return Err(self.damaged(format!(
                "its schema version is {SCHEMA_VERSION} but it has no `{t}` table"
            )));
        }
        if let Some(c) = ["uid", "git_dirty"]
            .iter()
            .find(|c| !columns.iter().any(|n| n == *c))
        {
            return Err(self.damaged(format!(
                "its schema version is {SCHEMA_VERSION} but its runs have no `{c}` column"
            )));
        }
        Ok(())
    }

    fn configure(&self) -> Result<(), StoreError> {
        // Switching the journal mode takes a lock: only when it is not WAL
        // already (a reader must not wait for a writer here).
        let mode: String = self
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        let mode = if mode.eq_ignore_ascii_case("wal") {
            mode
        } else {
            self.conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
                .map_err(|e| self.sql(e))?
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open {
                path: self.path.clone(),
                reason: format!("cannot switch to WAL journal mode (got '{mode}')"),
            });
        }
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(|e| self.sql(e))
    }

    /// Applies the missing migrations up to `target`, each in its own
    /// immediate transaction that re-checks the version (another process
    /// may have migrated meanwhile).
    fn migrate(&mut self, target: i64) -> Result<(), StoreError> {
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| sql_err(&self.path, e))?;
            let version: i64 = tx
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(|e| sql_err(&self.path, e))?;
            if version > SCHEMA_VERSION {
                return Err(StoreError::NewerSchema {
                    path: self.path.clone(),
                    found: version,
                    supported: SCHEMA_VERSION,
                });
            }
            if version >= target {
                return Ok(());
            }
            let Some(m) = usize::try_from(version)
                .ok()
                .and_then(|v| MIGRATIONS.get(v))
            else {
                return Err(StoreError::Damaged {
                    path: self.path.clone(),
                    detail: format!(
                        "its schema version (PRAGMA user_version) is {version}; mmlab's are 0 \
                         to {SCHEMA_VERSION}"
                    ),
                });
            };
            if version == 0 {
                tx.pragma_update(None, "application_id", APPLICATION_ID)
                    .map_err(|e| sql_err(&self.path, e))?;
            }
            // A step that cannot apply means the tables do not match the
            // version number (a busy or read-only file is reported as such).
            tx.execute_batch(m.sql)
                .map_err(|e| match sql_err(&self.path, e) {
                    StoreError::Sqlite { error, .. } => StoreError::Damaged {
                        path: self.path.clone(),
                        detail: format!(
                            "its schema version (PRAGMA user_version) is {version}, but the step \
                         to version {} ({}) does not apply: {}",
                            version + 1,
                            m.description,
                            error::sqlite_message(&error)
                        ),
                    },
                    other => other,
                })?;
            tx.pragma_update(None, "user_version", version + 1)
                .map_err(|e| sql_err(&self.path, e))?;
            tx.commit().map_err(|e| sql_err(&self.path, e))?;
        }
    }

    /// Turns a run reference into a run id: `last`, `last~N` (the N-th run
    /// before the last; `last~0` is `last`), a numeric id (`12` or `#12`),
    /// or a tag name.
    pub fn resolve(&self, spec: &str) -> Result<RunId, StoreError> {
        let unknown = |reason: String| StoreError::UnknownRun {
            spec: spec.to_string(),
            reason,
        };
        let s = spec.trim();
        let back = if s == "last" {
            Some(0)
        } else if let Some(n) = s.strip_prefix("last~") {
            Some(
                n.parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| unknown(format!("'{n}' is not a number of runs back")))?,
            )
        } else {
            None
        };
        if let Some(back) = back {
            let count: i64 = self
                .conn
                .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
                .map_err(|e| self.sql(e))?;
            let id: Option<i64> = self
                .conn
                .query_row(
                    "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1",
                    [back],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| self.sql(e))?;
            return id.map(RunId).ok_or_else(|| {
                unknown(match count {
                    0 => "the store holds no runs yet".to_string(),
                    1 => "the store holds only 1 run".to_string(),
                    n => format!("the store holds only {n} runs"),
                })
            });
        }
        let digits = s.strip_prefix('#').unwrap_or(s);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            let id: i64 = digits
                .parse()
                .map_err(|_| unknown("run id out of range".into()))?;
            return if self.run_exists(RunId(id))? {
                Ok(RunId(id))
            } else {
                Err(unknown(format!("no run with id {id}")))
            };
        }
        let id: Option<i64> = self
            .conn
            .query_row("SELECT run_id FROM tags WHERE name = ?1", [s], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        id.map(RunId)
            .ok_or_else(|| unknown("not 'last', 'last~N', a run id or a known tag".to_string()))
    }

    /// `true` when a run with this id is stored.
    pub fn run_exists(&self, id: RunId) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [id.0], |_| Ok(()))
            .optional()
            .map(|o| o.is_some())
            .map_err(|e| self.sql(e))
    }

    /// Names run `run` `name`; a tag names one run, so tagging another run
    /// with an existing name moves the tag. Names that read as run
    /// references (`last`, `last~N`, digits, `#N`) are refused.
    pub fn tag(&mut self, run: RunId, name: &str) -> Result<(), StoreError> {
        validate_tag(name)?;
        if !self.run_exists(run)? {
            return Err(StoreError::UnknownRun {
                spec: run.to_string(),
                reason: format!("no run with id {run}"),
            });
        }
        let now = time::to_millis(SystemTime::now());
        self.conn
            .execute(
                "INSERT INTO tags (name, run_id, created_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id,
                                                 created_ms = excluded.created_ms",
                rusqlite::params![name, run.0, now],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }
}

/// The table names of a database and the column names of its `runs`
/// table (empty when it has none).
pub(crate) fn schema_objects(conn: &Connection) -> rusqlite::Result<(Vec<String>, Vec<String>)> {
    let names = |sql: &str| -> rusqlite::Result<Vec<String>> {
        let mut st = conn.prepare(sql)?;
        let rows = st.query_map([], |r| r.get(0))?;
        rows.collect()
    };
    Ok((
        names("SELECT name FROM sqlite_master WHERE type = 'table'")?,
        names("SELECT name FROM pragma_table_info('runs')")?,
    ))
}

/// Turns an SQLite error into the [`StoreError`] a user can act on: busy,
/// read-only (which part), not a database, or the SQLite error itself.
fn sql_err(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotSqlite {
            path: path.to_path_buf(),
        },
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Busy {
                path: path.to_path_buf(),
            }
        }
        _ if is_read_only(&e) => StoreError::ReadOnly {
            path: path.to_path_buf(),
            reason: read_only_reason(path),
        },
        _ => StoreError::Sqlite {
            path: path.to_path_buf(),
            error: e,
        },
    }
}

/// `path` as SQLite must be given it to open that very file: the bundled
/// SQLite reads a name starting with `file:` as a URI (`file:x.db?mode=...`),
/// so such a relative name is given as `./file:...`.
pub(crate) fn sqlite_path(path: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().as_bytes().starts_with(b"file:") {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// An SQLite URI for the existing file `path` with `query`
/// (`file:/abs/path?mode=ro`), every byte of the path but the unreserved
/// ones percent-encoded, so any name (`?`, `#`, `%`, spaces, bytes that
/// are not UTF-8) reaches that very file.
///
/// # Errors
/// The path cannot be made absolute.
pub(crate) fn file_uri(path: &Path, query: &str) -> std::io::Result<String> {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::fs::canonicalize(path)?;
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    Ok(uri)
}

fn is_read_only(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
    ) && e.to_string().to_ascii_lowercase().contains("read")
        || e.to_string().contains("READONLY")
}

/// Which part of the database cannot be written, in words.
fn read_only_reason(path: &Path) -> String {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir_ro = std::fs::metadata(dir).is_ok_and(|m| m.permissions().readonly())
        || tempfile_probe_fails(dir);
    if dir_ro {
        format!(
            "its directory {} is read-only (SQLite writes {}-wal and -shm beside it)",
            dir.display(),
            path.file_name().unwrap_or_default().to_string_lossy()
        )
    } else {
        "the file is read-only".to_string()
    }
}

/// `true` when a file cannot be created in `dir` (permissions as the
/// process sees them, root and ACLs included).
fn tempfile_probe_fails(dir: &Path) -> bool {
    let probe = dir.join(format!(".mmlab-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            false
        }
        Err(e) => e.kind() == std::io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(30), // EROFS
    }
}

/// Checks that a tag name cannot be mistaken for a run reference.
pub fn validate_tag(name: &str) -> Result<(), StoreError> {
    let bad = |reason: &str| {
        Err(StoreError::InvalidTag {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    };
    if name.trim().is_empty() || name.trim() != name {
        return bad("it is empty or has surrounding spaces");
    }
    if name == "last" || name.starts_with("last~") {
        return bad("'last' and 'last~N' are reserved");
    }
    let digits = name.strip_prefix('#').unwrap_or(name);
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return bad("it would read as a run id");
    }
    Ok(())
}
