//! Effective `memory.min` / `memory.low` protection (cgroup-v2.rst,
//! "memory.min"/"memory.low"; `effective_protection()` in
//! `mm/page_counter.c`).
//!
//! A group's protection is not its own setting but its share of what its
//! parent may hand out, computed top-down from the reclaim target:
//!
//! * the target itself is unprotected (a reclaim of A ignores A's own
//!   `low`), and its children get their settings as they are;
//! * deeper, a group claims `min(usage, setting)`. If all the children of
//!   a parent claim more than the parent's own effective protection, each
//!   gets the parent's effective protection in proportion to its claim
//!   (work-conserving: claimed but unused protection goes to the siblings);
//! * with `memory_recursiveprot`, protection the children leave unclaimed
//!   is spread over them in proportion to their unprotected usage.
//!
//! The kernel keeps `children_{min,low}_usage` up to date on every charge;
//! the model sums the siblings' claims when a reclaim asks, which gives the
//! same values (the model is not concurrent, so no claim is ever stale).

use super::{MemcgId, MemcgTree};
use std::collections::HashMap;

/// Effective protection of one group for one reclaim, in pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Effective {
    /// Effective `memory.min`.
    pub min: u64,
    /// Effective `memory.low`.
    pub low: u64,
}

/// The share of `parent_effective` a group gets (one of min or low).
///
/// `usage`/`parent_usage` are hierarchical usages, `setting` the group's
/// own `min` or `low`, `siblings_claim` the sum of `min(usage, setting)`
/// over the parent's children.
pub fn share(
    usage: u64,
    parent_usage: u64,
    setting: u64,
    parent_effective: u64,
    siblings_claim: u64,
    recursive: bool,
) -> u64 {
    let claim = usage.min(setting);
    if siblings_claim > parent_effective {
        // Overcommitted: proportional to the claim.
        return mul_div(claim, parent_effective, siblings_claim);
    }
    if !recursive {
        return claim;
    }
    // Unclaimed protection, in proportion to unprotected usage.
    let unclaimed = parent_effective - siblings_claim;
    if parent_usage > siblings_claim && usage > claim {
        claim + mul_div(unclaimed, usage - claim, parent_usage - siblings_claim)
    } else {
        claim
    }
}

fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    (u128::from(a) * u128::from(b) / u128::from(c)) as u64
}

impl MemcgTree {
    /// Effective protection of every group of `target`'s subtree for a
    /// reclaim of `target` (the target's own entry is zero: it is never
    /// protected from its own reclaim).
    pub fn effective_protection(&self, target: MemcgId) -> HashMap<MemcgId, Effective> {
        let mut out: HashMap<MemcgId, Effective> = HashMap::new();
        let recursive = self.recursive_protection();
        for g in self.subtree(target) {
            let Ok(n) = self.node(g) else { continue };
            let usage = n.memory.usage();
            let e = match n.parent {
                _ if g == target => Effective::default(),
                _ if usage == 0 => Effective::default(),
                Some(p) if p == target => Effective {
                    min: n.memory.min(),
                    low: n.memory.low(),
                },
                Some(p) => {
                    let pe = out.get(&p).copied().unwrap_or_default();
                    let parent_usage = self.node(p).map_or(0, |x| x.memory.usage());
                    let (claims_min, claims_low) = self.children_claims(p);
                    Effective {
                        min: share(
                            usage,
                            parent_usage,
                            n.memory.min(),
                            pe.min,
                            claims_min,
                            recursive,
                        ),
                        low: share(
                            usage,
                            parent_usage,
                            n.memory.low(),
                            pe.low,
                            claims_low,
                            recursive,
                        ),
                    }
                }
                None => Effective::default(),
            };
            out.insert(g, e);
        }
        out
    }

    /// `Σ min(usage, min)` and `Σ min(usage, low)` over `parent`'s children
    /// (`children_min_usage`, `children_low_usage`).
    fn children_claims(&self, parent: MemcgId) -> (u64, u64) {
        let Ok(p) = self.node(parent) else {
            return (0, 0);
        };
        p.children
            .iter()
            .filter_map(|&c| self.node(c).ok())
            .fold((0, 0), |(m, l), c| {
                let u = c.memory.usage();
                (m + u.min(c.memory.min()), l + u.min(c.memory.low()))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overcommitted_protection_is_shared_by_claim() {
        // The selftest's A/B/{C,D,E,F}: B's effective low 50, C claims
        // min(50, 75) = 50, D min(50, 25) = 25: 75 > 50.
        assert_eq!(share(50, 150, 75, 50, 75, false), 33);
        assert_eq!(share(50, 150, 25, 50, 75, false), 16);
        assert_eq!(share(50, 150, 0, 50, 75, false), 0);
        // Within the parent's protection: the claim itself.
        assert_eq!(share(20, 40, 25, 50, 45, false), 20);
        // Recursive: the unclaimed 5 goes by unprotected usage.
        assert_eq!(share(20, 40, 0, 50, 45, true), 0);
        assert_eq!(share(30, 60, 20, 50, 20, true), 20 + 30 * 10 / 40);
    }
}
