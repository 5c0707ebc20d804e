//! `mmlab compare A B [C…]`: stored runs side by side in the kernel test
//! robot's table, the first run being the baseline of every %change.
//!
//! # Which columns are compared
//!
//! Runs usually hold several policies, and comparing `linux-5.15` of one
//! run with `hierstat` of another says nothing about either change, so
//! policies are matched **by name**:
//!
//! 1. every policy name found in at least two of the runs gets its own
//!    table, with one column per run that has it (in the order the runs
//!    were given), tables in the first run's policy order, then new names
//!    in the later runs' order;
//! 2. if no name is shared but every run holds exactly one policy (e.g.
//!    `mmlab run S --policy A` then `--policy B`), those single policies
//!    are compared in one table, columns labelled `#id policy`;
//! 3. policies found in one run only are listed in a note, not compared.
//!
//! Significance is Welch's t-test over the per-run values (see
//! [`crate::analysis::stats::significance`]).

use crate::analysis::table::{report_columns, ComparisonTable};
use lab::report::{PolicyResult, RunReport};
use runstore::{RunId, RunSummary, Store, StoreError};

/// Errors of `compare`.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run could not be resolved or loaded.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Fewer than two runs were named.
    #[error("compare needs at least two runs (got {0})")]
    TooFewRuns(usize),
    /// The same run was named twice.
    #[error("run {0} is named more than once")]
    Duplicate(RunId),
    /// The runs share no policy and are not single-policy runs.
    #[error(
        "the runs share no policy name, so there is nothing to compare policy by policy ({0})"
    )]
    NothingInCommon(String),
}

/// One compared run: its label (`#id` or `#id tag`) and its report.
#[derive(Debug, Clone)]
pub struct ComparedRun {
    /// Column label.
    pub label: String,
    /// Stored metadata, when the run came from the store.
    pub summary: Option<RunSummary>,
    /// The report.
    pub report: RunReport,
}

/// One table of a comparison.
#[derive(Debug, Clone)]
pub struct PolicyTable {
    /// The policy compared (for rule 2: the policies joined by ` / `).
    pub policy: String,
    /// The table; column labels are run labels (rule 2: `label policy`).
    pub table: ComparisonTable,
}

/// The result of comparing runs.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The runs, in the order given.
    pub runs: Vec<ComparedRun>,
    /// One table per compared policy.
    pub tables: Vec<PolicyTable>,
    /// Remarks: policies present in one run only, differing scenarios.
    pub notes: Vec<String>,
}

/// Resolves `specs` (`last`, `last~N`, ids, tags) in `store`, loads the
/// runs and compares them.
pub fn compare_stored(store: &Store, specs: &[&str]) -> Result<Comparison, CompareError> {
    if specs.len() < 2 {
        return Err(CompareError::TooFewRuns(specs.len()));
    }
    let mut ids: Vec<RunId> = Vec::new();
    for s in specs {
        let id = store.resolve(s)?;
        if ids.contains(&id) {
            return Err(CompareError::Duplicate(id));
        }
        ids.push(id);
    }
    let mut runs = Vec::new();
    for id in ids {
        let stored = store.load(id)?;
        runs.push(ComparedRun {
            label: stored.summary.label(),
            summary: Some(stored.summary),
            report: stored.report,
        });
    }
    compare_runs(runs)
}

/// The note that says the compared runs are of different scenarios (the
/// text renders it first, as a warning).
pub const MIXED_SCENARIOS: &str = "the runs are of different scenarios";

/// The scenarios of `runs`, each once, in order.
pub fn distinct_scenarios(runs: &[ComparedRun]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        let s = crate::render::display_name(&r.report.scenario, 40);
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Compares already loaded runs by the rules in the module docs.
pub fn compare_runs(runs: Vec<ComparedRun>) -> Result<Comparison, CompareError> {
    if runs.len() < 2 {
        return Err(CompareError::TooFewRuns(runs.len()));
    }
    let mut notes = Vec::new();
    let scenarios = distinct_scenarios(&runs);
    if scenarios.len() > 1 {
        notes.push(format!("{MIXED_SCENARIOS}: {}", scenarios.join(", ")));
    }
    // Policy names in first-seen order.
    let mut names: Vec<&str> = Vec::new();
    for r in &runs {
        for (p, _) in report_columns(&r.report) {
            if !names.contains(&p) {
                names.push(p);
            }
        }
    }
    let mut tables = Vec::new();
    for name in &names {
        let cols: Vec<(&str, &PolicyResult)> = runs
            .iter()
            .filter_map(|r| r.report.policies.get(*name).map(|p| (r.label.as_str(), p)))
            .collect();
        if cols.len() >= 2 {
            tables.push(PolicyTable {
                policy: name.to_string(),
                table: ComparisonTable::build(&cols),
            });
        } else if let Some(r) = runs.iter().find(|r| r.report.policies.contains_key(*name)) {
            notes.push(format!("policy {name} is only in run {}", r.label));
        }
    }
    if tables.is_empty() {
        let single: Option<Vec<(String, &PolicyResult)>> = runs
            .iter()
            .map(|r| {
                let mut it = r.report.policies.iter();
                match (it.next(), it.next()) {
                    (Some((p, res)), None) => Some((format!("{} {p}", r.label), res)),
                    _ => None,
                }
            })
            .collect();
        let Some(single) = single else {
            return Err(CompareError::NothingInCommon(notes.join("; ")));
        };
        // Rule 2 replaces the "only in" notes.
        notes.retain(|n| !n.starts_with("policy "));
        let cols: Vec<(&str, &PolicyResult)> =
            single.iter().map(|(l, r)| (l.as_str(), *r)).collect();
        let policy = runs
            .iter()
            .filter_map(|r| r.report.policies.keys().next().cloned())
            .collect::<Vec<_>>()
            .join(" / ");
        tables.push(PolicyTable {
            policy,
            table: ComparisonTable::build(&cols),
        });
    }
    Ok(Comparison {
        runs,
        tables,
        notes,
    })
}
