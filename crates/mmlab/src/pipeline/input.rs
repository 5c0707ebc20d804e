//! Reading what a command runs: scenarios (built-in names or files), cost
//! files and policy files, each read with a bounded size and as UTF-8, and
//! parsed with file, line and field in their errors.

use anyhow::{bail, Context, Result};
use sim::cost::CostModel;
use sim::scenario::PolicyFile;
use sim::{Catalog, Scenario};
use std::path::Path;

/// The most bytes an input file (scenario, cost, policy, sweep) may have:
/// the largest built-in scenario is under 8 KiB.
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// The scenario kinds mmlab knows: the simulated ones and kernel mode.
pub fn catalog() -> Catalog {
    kernelmode::catalog()
}

/// Reads a text input file of at most [`MAX_INPUT_BYTES`] (`/dev/zero` or
/// a huge file is refused after reading that much, not read into memory),
/// as UTF-8 (an invalid byte is reported with its line).
///
/// # Errors
/// The file cannot be read, is too large, or is not UTF-8.
pub fn read_input(path: &Path, what: &str) -> Result<String> {
    use std::io::Read;
    let f =
        std::fs::File::open(path).with_context(|| format!("reading {what} {}", path.display()))?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        bail!("{what} {} is a directory", path.display());
    }
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

/// Loads a built-in scenario by name, or a TOML file by path, parsed and
/// validated (errors name the file, line and field).
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
        if !(p.ends_with(".toml") && path.is_file()) {
            names.push(p.clone());
            continue;
        }
        let text = read_input(path, "policy file")?;
        let file = PolicyFile::parse(p, &text)?;
        sc.add_policies(&file.policy)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("policy file {p}"))?;
        names.extend(file.policy.iter().map(|s| s.name.clone()));
    }
    Ok(names)
}
