//! Everything mmlab shows, and nothing else: text in the formats of the
//! source threads ([`text`], [`claims`], [`compare`], [`side_by_side`],
//! [`kernel`]'s pivoted kernel-mode tables),
//! the command outputs ([`suite`], [`sweep`], [`list`], [`history`]), JSON
//! ([`json`]), the generated results tables ([`results`]), the
//! self-contained HTML report ([`html`], charts from the
//! `svgplot` crate), where outputs go ([`output`]: standard output or a
//! file, checked before any work) and [`write_atomic`], the one way a
//! file is written.
//! Every function returns text (or writes a file); the commands print it.

pub mod claims;
pub mod compare;
pub mod history;
pub mod html;
pub mod json;
pub mod kernel;
pub mod list;
pub mod output;
pub mod results;
pub mod side_by_side;
pub mod suite;
pub mod sweep;
pub mod text;

use anyhow::{bail, Context, Result};
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

/// Writes `bytes` to `path` through a temporary file renamed into place,
/// so a failure leaves nothing half written. A symbolic link is written
/// through (its target replaced, the link kept); a target that is not a
/// regular file is refused ([`output_target`]).
///
/// # Errors
/// The target is refused, or the temporary file cannot be written or
/// renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = output_target(path)?;
    let mut tmp = PathBuf::from(target.as_os_str());
    tmp.as_mut_os_string()
        .push(format!(".{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("writing {}: {e}", path.display())
    })
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

/// A user-supplied name (tag, scenario, policy) for a table cell: control
/// characters escaped (`\n`, `\u{1b}`: a name cannot move the cursor or
/// recolour the terminal) and at most `max` characters, the rest elided
/// with `…`.
pub fn display_name(s: &str, max: usize) -> String {
    let escaped = lab::source::escape(s);
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
    for word in lab::source::escape(text).split(' ') {
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

/// `s` as one word of a POSIX shell command: unchanged when it holds only
/// characters no shell treats specially, else in single quotes (a single
/// quote inside written `'\''`). Control characters stay as they are
/// inside the quotes: the caller escapes what it prints to a terminal.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `s` safe to print on a terminal: every control character but the line
/// feed escaped (`\u{1b}`), so text from a user's file or name cannot move
/// the cursor or recolour the terminal. Error messages and warnings go
/// through it.
pub fn escape_controls(s: &str) -> String {
    s.split('\n')
        .map(lab::source::escape)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A text table: left-aligned first column, right-aligned others, two
/// spaces apart, each cell escaped (kernel pivots, the side-by-side table).
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
        ] {
            let q = shell_quote(s);
            let o = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {q}"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&o.stdout), s, "{q}");
        }
        assert_eq!(shell_quote("a/b.toml"), "a/b.toml");
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
    fn atomic_write_leaves_only_the_file() {
        let dir = std::env::temp_dir().join(format!("mmlab-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.json");
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
