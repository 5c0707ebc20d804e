//! Where a command's outputs go, checked before any work: standard output
//! (`-`, or `/dev/stdout` and its aliases, so a pipe works), standard
//! error, or a file written atomically ([`super::write_atomic`]). Two
//! outputs of one command that land on the same file, an output on the
//! results database, a directory, a FIFO or a device, and a file that
//! cannot be created are refused before anything runs.

use super::output_target;
use anyhow::{bail, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where one output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// Standard output (`-`, `/dev/stdout`, `/dev/fd/1`,
    /// `/proc/self/fd/1`): written through the command's output, and the
    /// command's text is left out.
    Stdout,
    /// Standard error (`/dev/stderr`, `/dev/fd/2`, `/proc/self/fd/2`).
    Stderr,
    /// A file, replaced atomically: the path written (a symbolic link
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

/// Checks that a file can be created beside `target` (where the atomic
/// write puts its temporary file), by creating and removing one.
fn probe(path: &Path, target: &Path) -> Result<()> {
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

/// Checks a command's outputs before it does any work: each `(option,
/// path)` can be written ([`sink_of`], and a file can be created where it
/// goes), no two land on the same file or both on standard output, and
/// none is the results database `db` (when the command stores runs).
///
/// # Errors
/// The first output refused, naming its option.
pub fn check_outputs(outputs: &[(&str, &Path)], db: Option<&Path>) -> Result<()> {
    let mut seen: Vec<(&str, Sink, PathBuf)> = Vec::new();
    let db_id = db.map(identity);
    for &(option, path) in outputs {
        let sink = sink_of(path).map_err(|e| anyhow::anyhow!("{option}: {e:#}"))?;
        let id = match &sink {
            Sink::File(t) => {
                probe(path, t).map_err(|e| anyhow::anyhow!("{option}: {e:#}"))?;
                identity(t)
            }
            Sink::Stdout => PathBuf::from("<standard output>"),
            Sink::Stderr => PathBuf::from("<standard error>"),
        };
        if db_id.as_ref() == Some(&id) {
            bail!(
                "{option} {}: that is the results database; write the output elsewhere",
                path.display()
            );
        }
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
/// `out`, standard error, or a file replaced atomically.
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
        Sink::File(_) => super::write_atomic(path, bytes),
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
        assert!(check_outputs(&[("--json", &a), ("--html", &b)], None).is_ok());
        let e = check_outputs(&[("--json", &a), ("--html", &a2)], None).unwrap_err();
        assert!(e.to_string().contains("--json and --html"), "{e}");
        let e = check_outputs(
            &[
                ("--json", Path::new("-")),
                ("--html", Path::new("/dev/stdout")),
            ],
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("standard output"), "{e}");
        let e = check_outputs(&[("--json", &a)], Some(&a2)).unwrap_err();
        assert!(e.to_string().contains("results database"), "{e}");
        assert_eq!(sink_of(Path::new("/dev/stdout")).unwrap(), Sink::Stdout);
        assert!(check_outputs(&[("--json", Path::new("/proc/version"))], None).is_err());
    }
}
