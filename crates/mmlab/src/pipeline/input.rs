//! Reading what a command runs: scenarios (built-in names or files), cost
//! files and policy files, each read with a bounded size and as UTF-8, and
//! parsed with file, line and field in their errors.

use anyhow::{bail, Context, Result};
use lab::PolicyFile;
use lab::{Catalog, Scenario};
use sim::cost::CostModel;
use std::path::Path;

/// The most bytes an input file (scenario, cost, policy, sweep) may have:
/// the largest built-in scenario is under 8 KiB.
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// The scenario kinds mmlab knows: the simulated ones (`sim`) and kernel
/// mode's (`kernelmode`), in the order `mmlab list` shows them.
pub fn catalog() -> Catalog {
    sim::catalog().with(&kernelmode::KIND)
}

/// Reads a text input file of at most [`MAX_INPUT_BYTES`] (`/dev/zero` or
/// a huge file is refused after reading that much, not read into memory),
/// as UTF-8 (an invalid byte is reported with its line).
///
/// # Errors
/// The file cannot be read, is too large, or is not UTF-8.
pub fn read_input(path: &Path, what: &str) -> Result<String> {
    use std::io::Read;
    // Checked before opening: opening a FIFO with no writer, or a
    // terminal, would block for ever.
    let meta =
        std::fs::metadata(path).with_context(|| format!("reading {what} {}", path.display()))?;
    if meta.is_dir() {
        bail!("{what} {} is a directory", path.display());
    }
    if !meta.is_file() {
        bail!(
            "{what} {} is {}, not a regular file: save the text to a file and give that",
            path.display(),
            special_file_kind(&meta)
        );
    }
    let f =
        std::fs::File::open(path).with_context(|| format!("reading {what} {}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        bail!(
            "{what} {} is larger than {} KiB: not a scenario, policy, sweep or cost file",
            path.display(),
            MAX_INPUT_BYTES >> 10
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow::anyhow!(
            "{}:{line}: not UTF-8 text (invalid byte at offset {at})",
            path.display()
        )
    })
}

/// What a file that is not a regular file or a directory is, in words.
pub fn special_file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// The input files mmlab reads, told apart by their top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A scenario (a `kind` key).
    Scenario,
    /// A policy file (only `[[policy]]` tables).
    Policies,
    /// A sweep file (a `[sweep]` table).
    Sweep,
    /// A cost file (the per-unit costs `mmlab calibrate` writes).
    Costs,
    /// None of these (or not TOML).
    Unknown,
}

/// Which kind of input `text` is, by its top-level keys.
pub fn file_kind(text: &str) -> FileKind {
    let Ok(t) = text.parse::<toml::Table>() else {
        return FileKind::Unknown;
    };
    if t.contains_key("kind") {
        FileKind::Scenario
    } else if t.contains_key("sweep") {
        FileKind::Sweep
    } else if !t.is_empty() && t.keys().all(|k| k == "policy") {
        FileKind::Policies
    } else if t.contains_key("call_ns") || t.contains_key("atomic_ns") {
        FileKind::Costs
    } else {
        FileKind::Unknown
    }
}

/// The error for a file of another kind than the command reads: what it
/// is and the command that takes it (`None` when it is of kind `want` or
/// unrecognised).
pub fn wrong_file_kind(path: &Path, text: &str, want: FileKind) -> Option<anyhow::Error> {
    // A path that cannot be printed in a command is shown as FILE.
    let shown = crate::cmd::path_word(path).unwrap_or_else(|_| "FILE".into());
    let hint = match file_kind(text) {
        k if k == want => return None,
        FileKind::Policies => format!(
            "it is a policy file (only [[policy]] tables), not a scenario: run a scenario with \
             its policies, `mmlab run SCENARIO -p {shown}` (e.g. `mmlab run refault-storm -p \
             {shown}`)"
        ),
        FileKind::Sweep => format!("it is a sweep file: run it with `mmlab sweep {shown}`"),
        FileKind::Scenario => format!("it is a scenario file: run it with `mmlab run {shown}`"),
        FileKind::Costs => format!(
            "it is a cost file: give it as `--costs {shown}` to a command that runs scenarios"
        ),
        FileKind::Unknown => return None,
    };
    Some(anyhow::anyhow!("{}: {hint}", path.display()))
}

/// Loads a built-in scenario by name, or a TOML file by path, parsed and
/// validated (errors name the file, line and field; a policy, sweep or
/// cost file is named as such, with the command that takes it).
///
/// # Errors
/// No such built-in or file, an unreadable or invalid file.
pub fn load(spec: &str) -> Result<Scenario> {
    let catalog = catalog();
    if let Some(sc) = catalog.builtin(spec) {
        return Ok(sc?);
    }
    let path = Path::new(spec);
    if !path.exists() {
        let names: Vec<&str> = catalog.builtin_names().collect();
        bail!(
            "no built-in scenario or file named `{spec}` (built-in: {})",
            names.join(", ")
        );
    }
    let text = read_input(path, "scenario file")?;
    if let Some(e) = wrong_file_kind(path, &text, FileKind::Scenario) {
        return Err(e);
    }
    Ok(catalog.parse(&path.display().to_string(), &text)?)
}

/// The cost model: the file given, or the shipped defaults.
///
/// # Errors
/// An unreadable or invalid cost file.
pub fn load_costs(path: Option<&Path>) -> Result<CostModel> {
    match path {
        None => Ok(CostModel::defaults()),
        Some(p) => {
            let text = read_input(p, "cost file")?;
            if let Some(e) = wrong_file_kind(p, &text, FileKind::Costs) {
                return Err(e);
            }
            Ok(CostModel::parse(&p.display().to_string(), &text)?)
        }
    }
}

/// Resolves `-p` arguments: a name stays as it is; a policy file (a
/// `.toml` path holding `[[policy]]` tables) adds its policies to `sc` and
/// stands for their names, in file order.
///
/// # Errors
/// Unreadable or invalid policy files (file, line and field), a scenario
/// that runs no flush policies, a name defined twice differently.
pub fn policy_files(sc: &mut Scenario, policies: &[String]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for p in policies {
        let path = Path::new(p);
        // A `.toml` path that exists is read as a policy file (a FIFO or a
        // device is refused by `read_input`, not waited on).
        if !(p.ends_with(".toml") && path.exists()) {
            names.push(p.clone());
            continue;
        }
        let text = read_input(path, "policy file")?;
        if let Some(e) = wrong_file_kind(path, &text, FileKind::Policies) {
            return Err(e);
        }
        let file = PolicyFile::parse(p, &text)?;
        sc.add_policies(&file.policy)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("policy file {p}"))?;
        names.extend(file.policy.iter().map(|s| s.name().to_string()));
    }
    Ok(names)
}
