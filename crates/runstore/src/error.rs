//! Errors of the results store.

use std::path::PathBuf;

/// Everything that can go wrong with the results store. Every variant that
/// concerns the database file names it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file could not be opened or created (missing directory, a
    /// directory in place of the file, no permission, ...).
    #[error("cannot open results database {}: {reason}", path.display())]
    Open {
        /// The database path.
        path: PathBuf,
        /// What was wrong, in words.
        reason: String,
    },
    /// The file exists but is not an SQLite database.
    #[error("{} is not an mmlab results database (not an SQLite file)", path.display())]
    NotSqlite {
        /// The database path.
        path: PathBuf,
    },
    /// The file is an SQLite database written by another program.
    #[error(
        "{} is an SQLite database of another program ({detail}); refusing to write to it",
        path.display()
    )]
    Foreign {
        /// The database path.
        path: PathBuf,
        /// What gave it away.
        detail: String,
    },
    /// The database was written by a newer mmlab.
    #[error(
        "results database {} has schema version {found}, newer than this mmlab supports \
         (version {supported}); use a newer mmlab or another --db file",
        path.display()
    )]
    NewerSchema {
        /// The database path.
        path: PathBuf,
        /// The version found in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// An mmlab database whose schema does not match its version number
    /// (`PRAGMA user_version` out of range, a migration that cannot
    /// apply, a table missing): changed outside mmlab.
    #[error(
        "results database {} is damaged: {detail} (was it changed outside mmlab? restore a \
         copy, or pass --db FILE)",
        path.display()
    )]
    Damaged {
        /// The database path.
        path: PathBuf,
        /// What does not match.
        detail: String,
    },
    /// `store merge` of databases with different schema versions.
    #[error(
        "results database {} has schema version {found}, the merge needs version {expected} \
         (open it once with this mmlab, e.g. `mmlab history --db FILE`, to migrate it)",
        path.display()
    )]
    SchemaMismatch {
        /// The database path.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The version of the others.
        expected: i64,
    },
    /// `store merge` given the target database as a source.
    #[error(
        "{} is the database merged into; a database cannot be merged into itself",
        path.display()
    )]
    MergeIntoItself {
        /// The source as given.
        path: PathBuf,
    },
    /// A run reference (`last`, `last~N`, id or tag) that matches no run.
    #[error("no stored run matches '{spec}': {reason}")]
    UnknownRun {
        /// The reference as given.
        spec: String,
        /// Why it matched nothing.
        reason: String,
    },
    /// A tag name that could be mistaken for a run reference.
    #[error("invalid tag name '{name}': {reason}")]
    InvalidTag {
        /// The rejected name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A stored row that cannot be turned back into a report.
    #[error("results database {} holds an invalid {what}: {detail}", path.display())]
    Corrupt {
        /// The database path.
        path: PathBuf,
        /// Which kind of record.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A failure injected by a test through [`super::Store::save_with_hook`].
    #[error("save interrupted: {0}")]
    Interrupted(String),
    /// Another process holds the database's write lock.
    #[error("results database {} is busy: another process is writing to it (another mmlab run?); retry when it is done, or pass --db FILE", path.display())]
    Busy {
        /// The database file.
        path: std::path::PathBuf,
    },
    /// The database or its directory cannot be written.
    #[error("results database {} cannot be written: {reason}", path.display())]
    ReadOnly {
        /// The database file.
        path: std::path::PathBuf,
        /// Why (which part is read-only).
        reason: String,
    },
    /// `store merge` failed while copying a source into the target (the
    /// source is rolled back).
    #[error(
        "merging {} into {}: {detail}",
        source_db.display(),
        target.display()
    )]
    MergeFailed {
        /// The source being copied.
        source_db: PathBuf,
        /// The database merged into.
        target: PathBuf,
        /// What SQLite said, once.
        detail: String,
    },
    /// Any other SQLite error. Its message is part of this one's (not a
    /// separate cause, so that a chain of errors says it once).
    #[error("results database {}: {}", path.display(), sqlite_message(error))]
    Sqlite {
        /// The database path.
        path: PathBuf,
        /// The SQLite error.
        error: rusqlite::Error,
    },
}

/// What SQLite said, once: the message of a failed call (without the
/// "Error code N" of its code, which adds nothing a user can act on), or
/// rusqlite's own words for its errors.
pub(crate) fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(code, None) => {
            rusqlite::ffi::code_to_str(code.extended_code).to_string()
        }
        other => other.to_string(),
    }
}
