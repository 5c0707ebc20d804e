//! Where a command's outputs go, checked before any work: standard output
//! (`-`, or `/dev/stdout` and its aliases, so a pipe works), standard
//! error, or a file ([`super::write_file`]). Two outputs of one command
//! that land on the same file, an output on the results database (its
//! file, its `-wal`, `-shm` or `-journal`, through any link) or on any
//! other SQLite database, a directory, a FIFO or a device, and a file that
//! cannot be written are refused before anything runs
//! ([`check_outputs`]); the results database of the command is registered
//! once ([`protect_database`]) and every file write refuses it again
//! ([`refuse_database`]), so no output of any command can replace stored
//! runs.

use super::output_target;
use anyhow::{bail, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The identities of the results database of this process and of its
/// journal files, which no output may replace.
static PROTECTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The files SQLite keeps beside a database.
const JOURNALS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Registers `db`, the results database of this command, and its journal
/// files: from now on no output of this process is written over them
/// ([`refuse_database`]).
pub fn protect_database(db: &Path) {
    let mut ids = vec![identity(
        &output_target(db).unwrap_or_else(|_| db.to_path_buf()),
    )];
    for j in JOURNALS {
        let mut p = db.as_os_str().to_owned();
        p.push(j);
        ids.push(identity(Path::new(&p)));
    }
    let mut protected = PROTECTED.lock().unwrap_or_else(|e| e.into_inner());
    for id in ids {
        if !protected.contains(&id) {
            protected.push(id);
        }
    }
}

/// Refuses to write `target` (where `path` leads): the results database
/// registered by [`protect_database`] or one of its journal files, or any
/// existing SQLite database or write-ahead log (by its first bytes), which
/// an output would destroy.
///
/// # Errors
/// The target is one of them.
pub fn refuse_database(path: &Path, target: &Path) -> Result<()> {
    let id = identity(target);
    let protected = PROTECTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&id);
    if protected {
        bail!(
            "refusing to write {}: that is the results database (or its journal); its stored \
             runs would be lost: write the output elsewhere",
            path.display()
        );
    }
    let what = if is_sqlite(target) {
        Some("is an SQLite database")
    } else if is_sqlite_journal(target) {
        Some("is the journal of an SQLite database")
    } else {
        None
    };
    if let Some(what) = what {
        bail!(
            "refusing to write {}: it {what} (a results database?); replacing it would lose \
             what it holds: write the output elsewhere",
            path.display()
        );
    }
    Ok(())
}

/// Whether `file` starts as an SQLite database does.
fn is_sqlite(file: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(file)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// Whether `file` is named as a journal (`-wal`, `-shm`, `-journal`) of
/// an existing SQLite database, or starts as a write-ahead log does.
fn is_sqlite_journal(file: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let name = file.as_os_str().as_bytes();
    let beside = JOURNALS.iter().any(|j| {
        name.strip_suffix(j.as_bytes())
            .is_some_and(|base| is_sqlite(Path::new(std::ffi::OsStr::from_bytes(base))))
    });
    let mut head = [0u8; 4];
    let wal = std::fs::File::open(file)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| matches!(head, [0x37, 0x7f, 0x06, 0x82 | 0x83]));
    beside || wal
}

/// Where one output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// Standard output (`-`, `/dev/stdout`, `/dev/fd/1`,
    /// `/proc/self/fd/1`): written through the command's output, and the
    /// command's text is left out.
    Stdout,
    /// Standard error (`/dev/stderr`, `/dev/fd/2`, `/proc/self/fd/2`).
    Stderr,
    /// A file ([`super::write_file`]): the path written (a symbolic link
    /// followed to its target).
    File(PathBuf),
}

/// Whether `path` names standard output.
pub fn is_stdout(path: &Path) -> bool {
    matches!(
        path.to_str(),
        Some("-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1")
    )
}

fn is_stderr(path: &Path) -> bool {
    matches!(
        path.to_str(),
        Some("/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2")
    )
}

/// Where a write to `path` goes (see [`Sink`]).
///
/// # Errors
/// A target that is not a regular file, or whose directory is missing
/// ([`output_target`]).
pub fn sink_of(path: &Path) -> Result<Sink> {
    if is_stdout(path) {
        Ok(Sink::Stdout)
    } else if is_stderr(path) {
        Ok(Sink::Stderr)
    } else {
        Ok(Sink::File(output_target(path)?))
    }
}

/// The identity of a file target, to tell two spellings of one file
/// apart from two files: its directory made absolute and canonical, and
/// its name.
fn identity(target: &Path) -> PathBuf {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    match target.file_name() {
        Some(n) => dir.join(n),
        None => dir,
    }
}

/// Checks that `target` can be written: a file can be created beside it
/// (where [`super::write_file`] writes its temporary file; this also rules
/// out `/proc`, `/sys` and cgroupfs, whose files are not outputs), and an
/// existing one opens for writing (nothing written).
fn probe(path: &Path, target: &Path) -> Result<()> {
    if target.exists() {
        if let Err(e) = std::fs::OpenOptions::new().write(true).open(target) {
            bail!("cannot write {}: {e}", path.display());
        }
    }
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(format!(".{}.probe", std::process::id()));
    let tmp = PathBuf::from(tmp);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&tmp);
            Ok(())
        }
        Err(e) => bail!(
            "cannot write {}: a file cannot be created in {} ({e})",
            path.display(),
            target
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .display()
        ),
    }
}

/// Checks a command's outputs before it does any work, the one check of
/// every output of every command: each `(option, path)` can be written
/// ([`sink_of`], and the file can be written where it goes), none is the
/// results database `db` (whether or not the command stores runs), its
/// journal or another SQLite database ([`refuse_database`]), and no two
/// land on the same file or both on standard output.
///
/// # Errors
/// The first output refused, naming its option.
pub fn check_outputs(outputs: &[(&str, &Path)], db: &Path) -> Result<()> {
    protect_database(db);
    let mut seen: Vec<(&str, Sink, PathBuf)> = Vec::new();
    for &(option, path) in outputs {
        let sink = sink_of(path).map_err(|e| anyhow::anyhow!("{option}: {e:#}"))?;
        let id = match &sink {
            Sink::File(t) => {
                refuse_database(path, t).map_err(|e| anyhow::anyhow!("{option}: {e:#}"))?;
                probe(path, t).map_err(|e| anyhow::anyhow!("{option}: {e:#}"))?;
                identity(t)
            }
            Sink::Stdout => PathBuf::from("<standard output>"),
            Sink::Stderr => PathBuf::from("<standard error>"),
        };
        if let Some((other, _, _)) = seen.iter().find(|(_, _, i)| *i == id) {
            let what = match sink {
                Sink::File(_) => format!("the same file ({})", id.display()),
                _ => id.display().to_string(),
            };
            bail!(
                "{other} and {option} both write to {what}: one would overwrite the other; give \
                 each its own file"
            );
        }
        seen.push((option, sink, id));
    }
    Ok(())
}

/// Writes `bytes` where `path` says ([`Sink`]): standard output through
/// `out`, standard error, or a file ([`super::write_file`]: through links,
/// never over a database).
///
/// # Errors
/// The target is refused, or the write fails.
pub fn write_output(path: &Path, bytes: &[u8], out: &mut dyn Write) -> Result<()> {
    match sink_of(path)? {
        Sink::Stdout => {
            out.write_all(bytes)?;
            Ok(())
        }
        Sink::Stderr => {
            std::io::stderr().write_all(bytes)?;
            Ok(())
        }
        Sink::File(_) => super::write_file(path, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collisions_and_aliases() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let a2 = dir.path().join(".").join("a.json");
        let b = dir.path().join("b.html");
        let db = dir.path().join("t.db");
        assert!(check_outputs(&[("--json", &a), ("--html", &b)], &db).is_ok());
        let e = check_outputs(&[("--json", &a), ("--html", &a2)], &db).unwrap_err();
        assert!(e.to_string().contains("--json and --html"), "{e}");
        let e = check_outputs(
            &[
                ("--json", Path::new("-")),
                ("--html", Path::new("/dev/stdout")),
            ],
            &db,
        )
        .unwrap_err();
        assert!(e.to_string().contains("standard output"), "{e}");
        let e = check_outputs(&[("--json", &a)], &a2).unwrap_err();
        assert!(e.to_string().contains("results database"), "{e}");
        let wal = dir.path().join("a.json-wal");
        let e = check_outputs(&[("--json", &wal)], &a).unwrap_err();
        assert!(e.to_string().contains("results database"), "{e}");
        assert_eq!(sink_of(Path::new("/dev/stdout")).unwrap(), Sink::Stdout);
        assert!(check_outputs(&[("--json", Path::new("/proc/version"))], &db).is_err());
    }
}
