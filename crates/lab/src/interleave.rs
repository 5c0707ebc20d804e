//! The loop every runner shares: every policy `runs` times, runs
//! interleaved across policies (run 1 of every policy, then run 2 ...), so
//! that a drift of the host during a real-mode scenario affects every
//! policy alike; run `i` uses seed `seed + i`.

use crate::progress::Steps;
use crate::report::PolicyResult;
use crate::scenario::Header;
use std::collections::BTreeMap;

/// One run of one policy.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The policy's name.
    pub policy: &'a str,
    /// 0-based run index.
    pub index: u32,
    /// The run's seed: the scenario's plus the index.
    pub seed: u64,
}

impl Run<'_> {
    /// The progress label of the run (`linux-6.8 run 2`).
    pub fn label(&self) -> String {
        format!("{} run {}", self.policy, self.index + 1)
    }
}

/// Calls `one` for every run of every policy of `header`, interleaved,
/// after announcing `steps_per_run × runs × policies` steps; `one` adds
/// its figures to the policy's result and reports its steps. The results
/// by policy name.
///
/// # Errors
/// The first error of `one`.
pub fn interleaved<E>(
    header: &Header,
    steps: &mut Steps<'_>,
    steps_per_run: u64,
    mut one: impl FnMut(Run<'_>, &mut PolicyResult, &mut Steps<'_>) -> Result<(), E>,
) -> Result<BTreeMap<String, PolicyResult>, E> {
    steps.total(u64::from(header.runs) * header.policies.len() as u64 * steps_per_run);
    let mut out: BTreeMap<String, PolicyResult> = BTreeMap::new();
    for index in 0..header.runs {
        for policy in &header.policies {
            let run = Run {
                policy,
                index,
                seed: header.seed.wrapping_add(u64::from(index)),
            };
            one(run, out.entry(policy.clone()).or_default(), steps)?;
        }
    }
    Ok(out)
}
