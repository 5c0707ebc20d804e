//! Everything mmlab shows, and nothing else: text in the formats of the
//! source threads ([`text`], [`claims`], [`compare`]), a kind's own
//! views of a run laid out generically (its tables in [`text`] and
//! [`html`], its figures in [`html::plots`], its runs beside its
//! simulation in [`side_by_side`]: the [`lab::Spec`] methods, never a
//! kind's concrete type), the command outputs ([`suite`], [`sweep`], [`list`], [`history`]), JSON
//! ([`json`]), the generated results tables ([`results`]), the
//! self-contained HTML report ([`html`], charts from the
//! `svgplot` crate), where outputs go ([`output`]: standard output or a
//! file, checked before any work) and [`write_file`], the one way a
//! file is written.
//! Every function returns text (or writes a file); the commands print it.
//!
//! Two functions guard what reaches a terminal or a shell: [`escape_text`]
//! (every field shown: no control, bidirectional or invisible character
//! raw) and [`shell_word`] (every word of a printed command: quoted for
//! any shell, or refused when it cannot be printed as it is).

pub mod claims;
pub mod compare;
pub mod history;
pub mod html;
pub mod json;
pub mod list;
pub mod output;
pub mod results;
pub mod side_by_side;
pub mod suite;
pub mod sweep;
pub mod text;

use anyhow::{bail, Context, Result};
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Where a write to `path` lands: `path` itself, or, when it is a symbolic
/// link, the file it points to (followed like `cp` or a shell's `>` do, so
/// the link survives). The target must be a regular file or not exist yet,
/// in an existing directory.
///
/// # Errors
/// The target is a directory, a FIFO, a device or a socket (replacing it
/// would destroy something that is not an output file), a link loop, or
/// its directory does not exist.
pub fn output_target(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let dir = p
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if !dir.is_dir() {
                    bail!(
                        "cannot write {}: directory {} does not exist",
                        path.display(),
                        dir.display()
                    );
                }
                return Ok(p);
            }
            Err(e) => bail!("cannot write {}: {e}", path.display()),
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p)
                    .with_context(|| format!("reading link {}", p.display()))?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(m) if m.is_file() => return Ok(p),
            Ok(m) => {
                let what = if m.is_dir() {
                    "a directory"
                } else {
                    "not a regular file (a FIFO, device or socket)"
                };
                bail!(
                    "refusing to write {}: {}{what}",
                    path.display(),
                    if p == path {
                        String::new()
                    } else {
                        format!("it leads to {}, ", p.display())
                    }
                );
            }
        }
    }
    bail!(
        "cannot write {}: too many levels of symbolic links",
        path.display()
    )
}

/// Writes `bytes` to `path`, the one way mmlab writes a file:
///
/// * a symbolic link is written through, to the file it leads to
///   ([`output_target`]; the link is kept); a target that is not a regular
///   file is refused, and so is one that is an SQLite database or the
///   results database's journal ([`output::refuse_database`]);
/// * a new file is written to a temporary file beside it, renamed into
///   place: a failure leaves nothing half written;
/// * an existing file is written into, as a shell's `>` does, so it keeps
///   its owner, mode and hard links; the bytes are first written to a
///   temporary file beside it (and removed), so a full disk or quota is
///   found before the file is touched (and a file in a folder where no
///   file can be created, as in `/proc` or `/sys`, is not written).
///
/// # Errors
/// The target is refused, or a write fails (naming the file).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = output_target(path)?;
    output::refuse_database(path, &target)?;
    if target.exists() {
        return write_in_place(path, &target, bytes);
    }
    let tmp = temp_beside(&target)
        .with_context(|| format!("cannot write {}: creating a temporary file", path.display()))?;
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &target));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("writing {}: {e}", path.display())
    })
}

/// A new, empty file beside `target` (`TARGET.PID.N.tmp`).
fn temp_beside(target: &Path) -> std::io::Result<PathBuf> {
    for n in 0..1000 {
        let mut name = target.as_os_str().to_owned();
        name.push(format!(".{}.{n}.tmp", std::process::id()));
        let tmp = PathBuf::from(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(_) => return Ok(tmp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name"))
}

/// Writes `bytes` into the existing file `target` (reached from `path`),
/// after a trial write beside it.
fn write_in_place(path: &Path, target: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_beside(target).with_context(|| {
        format!(
            "cannot write {}: no file can be created beside it",
            path.display()
        )
    })?;
    let trial = std::fs::write(&tmp, bytes);
    let _ = std::fs::remove_file(&tmp);
    if let Err(e) = trial {
        bail!(
            "writing {}: {e} (the file was left as it was)",
            path.display()
        );
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(target)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(bytes)
        .and_then(|()| f.set_len(bytes.len() as u64))
        .with_context(|| format!("writing {} (it may now be incomplete)", path.display()))
}

/// `s` padded with spaces to `width` characters, left-aligned (`right`:
/// right-aligned). Unlike `format!("{s:<w$}")` it takes any width (std's
/// formatter panics on widths above 65,535) and counts characters.
pub fn pad(s: &str, width: usize, right: bool) -> String {
    let n = s.chars().count();
    let fill = " ".repeat(width.saturating_sub(n));
    if right {
        fill + s
    } else {
        s.to_string() + &fill
    }
}

/// Whether `c` must not reach a terminal or a printed command as it is: a
/// control character (C0, DEL, C1: it can move the cursor, recolour or
/// retitle the terminal), a bidirectional formatting character (it
/// reorders what is shown, so the text read is not the text run), or an
/// invisible one (zero-width characters, the line and paragraph
/// separators, the byte order mark).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `s` with every hidden character ([`is_hidden`]) escaped as Rust writes
/// it (`\n`, `\r`, `\u{1b}`, `\u{202e}`): what is shown is what is
/// stored, on one line. Every user or stored field shown goes through it
/// (through [`display_name`], [`escape_controls`] or [`wrap`]).
pub fn escape_text(s: &str) -> String {
    if !s.chars().any(is_hidden) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else if is_hidden(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `path` as shown in a message: [`escape_text`] of its name (a name that
/// is not UTF-8 shown with U+FFFD, as shown only, never as a command).
pub fn shown(path: &Path) -> String {
    escape_text(&path.to_string_lossy())
}

/// A user-supplied name (tag, scenario, policy) for a table cell: hidden
/// characters escaped ([`escape_text`]: a name cannot move the cursor,
/// recolour the terminal or reorder the line) and at most `max`
/// characters, the rest elided with `…`.
pub fn display_name(s: &str, max: usize) -> String {
    let escaped = escape_text(s);
    if escaped.chars().count() <= max {
        return escaped;
    }
    let mut t: String = escaped.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// `text` (control characters escaped) in lines of at most `width`
/// characters, broken at spaces; a word longer than `width` is cut into
/// pieces of `width`. Nothing is left out.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in escape_text(text).split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if len > 0 {
                lines.push(std::mem::take(&mut line));
                len = 0;
            }
            lines.push(word.drain(..width).collect());
        }
        if len > 0 && len + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
            len = 0;
        }
        if len > 0 {
            line.push(' ');
            len += 1;
        }
        len += word.len();
        line.extend(word);
    }
    if len > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `s` as one word of a command mmlab prints (a sweep's plan, the merge
/// of runs saved elsewhere, how to run a reproducer), the one quoting
/// function of every printed command: unchanged when it holds only
/// characters no shell treats specially, else in single quotes (a single
/// quote inside written `'\''`), which every POSIX shell takes byte for
/// byte: no expansion, no glob, no command substitution.
///
/// A word that cannot be printed as it is is refused rather than printed
/// as something else: one that is not UTF-8 (a terminal shows U+FFFD, so
/// the command copied names another file) or that holds a hidden
/// character ([`is_hidden`]: a newline would end the command, or a
/// comment, early; a bidirectional override shows another command than
/// the one that runs).
///
/// # Errors
/// The word is not UTF-8 or holds a hidden character.
pub fn shell_word(s: &OsStr) -> Result<String> {
    let Some(text) = s.to_str() else {
        bail!(
            "`{}` cannot be printed in a command: it is not UTF-8 text, so the name shown \
             would be another file's; rename it (or link to it from a UTF-8 name)",
            escape_text(&s.to_string_lossy())
        );
    };
    if let Some(c) = text.chars().find(|&c| is_hidden(c)) {
        bail!(
            "`{}` cannot be printed in a command: it holds {}, which a terminal or a one-line \
             command does not show as it is; rename it (or link to it from a plain name)",
            escape_text(text),
            escape_text(&c.to_string())
        );
    }
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:,+@%".contains(c));
    Ok(if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    })
}

/// `s` safe to print on a terminal: every hidden character but the line
/// feed escaped ([`escape_text`], line by line), so text from a user's
/// file, name or a stored run cannot move the cursor, recolour the
/// terminal or reorder a line. Error messages, warnings and the text
/// reports of stored runs go through it.
pub fn escape_controls(s: &str) -> String {
    s.split('\n')
        .map(escape_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A text table: left-aligned first column, right-aligned others, two
/// spaces apart, each cell escaped (a kind's tables, the side-by-side
/// table).
pub fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            std::iter::once(header)
                .chain(rows.iter().map(Vec::as_slice))
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        out.push_str("  ");
        for (c, cell) in r.iter().enumerate() {
            let cell = display_name(cell, 200);
            if c == 0 {
                out.push_str(&pad(&cell, width[c], false));
            } else {
                out.push_str("  ");
                out.push_str(&pad(&cell, width[c], true));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_round_trips_through_sh() {
        for s in [
            "plain.toml",
            "dir with space/it's $x.toml",
            "",
            "a\"b`c`\\d",
            "-p",
            "$(touch x)*?[a]~{b,c}!#;&|<>=",
            "ünïcödé ✓",
        ] {
            let q = shell_word(OsStr::new(s)).unwrap();
            let o = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {q}"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&o.stdout), s, "{q}");
        }
        assert_eq!(shell_word(OsStr::new("a/b.toml")).unwrap(), "a/b.toml");
        // What cannot be printed as it is, is refused.
        use std::os::unix::ffi::OsStrExt;
        for bad in [
            &b"a\nb"[..],
            b"a\rb",
            b"\x1b[31m",
            b"r\xe9sum\xe9",
            "a\u{202e}b".as_bytes(),
            "zero\u{200b}width".as_bytes(),
        ] {
            let e = shell_word(OsStr::from_bytes(bad)).unwrap_err();
            assert!(e.to_string().contains("cannot be printed"), "{e}");
        }
    }

    #[test]
    fn hidden_characters_are_escaped() {
        assert_eq!(
            escape_text("a\u{1b}[2J\u{202e}b\r\u{200b}"),
            "a\\u{1b}[2J\\u{202e}b\\r\\u{200b}"
        );
        assert_eq!(escape_text("plain ✓"), "plain ✓");
        // Idempotent: what it writes has nothing hidden.
        let once = escape_text("\u{9b}x\u{2066}");
        assert_eq!(escape_text(&once), once);
    }

    #[test]
    fn wrapping_keeps_every_character() {
        let text =
            "measured 1.596e+08 ops/s   published 83323557 with a-very-long-word-that-goes-on";
        for w in [1, 7, 20, 100] {
            let lines = wrap(text, w);
            assert!(
                lines.iter().all(|l| l.chars().count() <= w),
                "{w}: {lines:?}"
            );
            let joined: String = lines.concat();
            let squeezed: String = text.chars().filter(|c| *c != ' ').collect();
            assert_eq!(joined.replace(' ', ""), squeezed, "{w}");
        }
    }

    #[test]
    fn controls_are_escaped_but_lines_kept() {
        assert_eq!(escape_controls("a\u{1b}[31m\nb\r"), "a\\u{1b}[31m\nb\\r");
    }

    #[test]
    fn a_write_leaves_only_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_file(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        // Rewritten in place, shorter: no old tail.
        write_file(&p, b"[1, 2, 3]").unwrap();
        write_file(&p, b"[]").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"[]");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
