//! The reclaim driver: who gives up how many pages when a subtree must
//! shrink (`try_to_free_mem_cgroup_pages` and `shrink_node_memcgs`).
//!
//! A reclaim of `target` asks for `max(nr, SWAP_CLUSTER_MAX)` pages. Every
//! group of the subtree is visited with its effective protection
//! ([`super::protection`]) for this target:
//!
//! * at or below its effective `min` (an empty group included), it is
//!   skipped: hard protection;
//! * at or below its effective `low`, it is skipped while anything
//!   unprotected is left; when a whole reclaim found nothing, the reclaim
//!   is repeated with low protection lifted, and each protected group it
//!   visits counts a `low` event;
//! * otherwise its scan target is its reclaimable LRU size, reduced in
//!   proportion to its protection (`size × protection / (usage + 1)`,
//!   at least a cluster), as `get_scan_count` scales pressure.
//!
//! The pages asked of each visited group are proportional to its scan
//! target. This is the kernel's priority loop in its fluid limit: at each
//! priority every group is scanned by `target >> priority`, and the shared
//! round-robin iterator spreads successive partial walks over all groups,
//! so over a reclaim each group gives in proportion to its scan target (the
//! model of `tools/testing/selftests/cgroup/memcg_protection.m`). Rounds
//! repeat while pages come back and the goal is not met.
//!
//! Reclaimable slab objects ([`super::kmem`]) are shrunk alongside: a
//! round that asks `N` pages of LRUs whose scan targets total `W` scans
//! `2N/W` of each visited group's freeable objects (the kernel scans
//! `freeable >> priority`, times `4 / DEFAULT_SEEKS`, at the priority where
//! the pages were found), and all of them when the LRUs hold nothing to
//! give (the kernel's priority then falls to 0). Freed objects do not count
//! as reclaimed pages: for a cgroup reclaim the kernel cannot attribute
//! freed slab pages to the cgroup, so only the LRU progress counts.

use super::{MemcgId, MemcgTree, MemoryEvent};

/// Least pages a reclaim asks for (`SWAP_CLUSTER_MAX`).
pub const SWAP_CLUSTER_MAX: u64 = 32;

/// `vm.swappiness`: cgroup v2 has no per-group swappiness.
pub const VM_SWAPPINESS: u32 = 60;

/// Reclaim attempts without progress before a limit gives up
/// (`MAX_RECLAIM_RETRIES`).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Rounds one reclaim makes at most (each must free pages to continue).
const MAX_ROUNDS: u32 = 64;

/// How a reclaim scans (`struct scan_control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanControl {
    /// Balance between anon and file (0..=200); 0 in a cgroup reclaim
    /// scans file pages only.
    pub swappiness: u32,
    /// Anonymous pages may be swapped out.
    pub may_swap: bool,
    /// A `memory.reclaim` write (not a limit).
    pub proactive: bool,
}

impl Default for ScanControl {
    fn default() -> Self {
        ScanControl {
            swappiness: VM_SWAPPINESS,
            may_swap: true,
            proactive: false,
        }
    }
}

/// Frees pages of a group when a charge or a write needs room.
pub trait Reclaim {
    /// Pages of `group`'s own LRU lists a reclaim with `sc` would scan
    /// (file pages, and anonymous ones when the group can swap and `sc`
    /// allows): the group's scan target before protection.
    fn reclaimable(&self, tree: &MemcgTree, group: MemcgId, sc: &ScanControl) -> u64;

    /// Reclaims up to `nr` pages charged to `group` itself (not its
    /// children), on behalf of a reclaim of `target`, running on `cpu`.
    /// Freed pages must be uncharged through [`MemcgTree::uncharge`] (and
    /// their statistics updated). Returns the number of pages freed.
    fn reclaim(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        group: MemcgId,
        target: MemcgId,
        nr: u64,
        sc: &ScanControl,
    ) -> u64;
}

/// A [`Reclaim`] that can free nothing: every charge over a limit fails
/// with an OOM once the stocks are drained (reclaimable slab objects are
/// still shrunk by the driver).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReclaim;

impl Reclaim for NoReclaim {
    fn reclaimable(&self, _: &MemcgTree, _: MemcgId, _: &ScanControl) -> u64 {
        0
    }

    fn reclaim(
        &mut self,
        _: &mut MemcgTree,
        _: usize,
        _: MemcgId,
        _: MemcgId,
        _: u64,
        _: &ScanControl,
    ) -> u64 {
        0
    }
}

/// One group a reclaim round visits.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    group: MemcgId,
    /// Scan target after protection.
    weight: u64,
    /// Reclaimed although below its effective `low`.
    below_low: bool,
}

impl MemcgTree {
    /// Reclaims at least `max(nr, SWAP_CLUSTER_MAX)` pages from `target`'s
    /// subtree if it can (see the module docs); returns the LRU pages
    /// freed.
    pub fn try_to_free_pages(
        &mut self,
        cpu: usize,
        target: MemcgId,
        nr: u64,
        sc: &ScanControl,
        reclaim: &mut dyn Reclaim,
    ) -> u64 {
        let goal = nr.max(SWAP_CLUSTER_MAX);
        let mut got = 0;
        for low_reclaim in [false, true] {
            let mut low_skipped = false;
            for _ in 0..MAX_ROUNDS {
                let cands = self.candidates(target, low_reclaim, &mut low_skipped, sc, reclaim);
                if cands.is_empty() {
                    break;
                }
                let need = goal.saturating_sub(got);
                let round = self.reclaim_round(cpu, target, need, &cands, sc, reclaim);
                got += round;
                if got >= goal || round == 0 {
                    break;
                }
            }
            if got > 0 || !low_skipped {
                break;
            }
        }
        got
    }

    /// The groups a round visits, with their scan targets.
    fn candidates(
        &self,
        target: MemcgId,
        low_reclaim: bool,
        low_skipped: &mut bool,
        sc: &ScanControl,
        reclaim: &dyn Reclaim,
    ) -> Vec<Candidate> {
        let prot = self.effective_protection(target);
        let mut out = Vec::new();
        for g in self.subtree(target) {
            let Ok(n) = self.node(g) else { continue };
            let usage = n.memory.usage();
            let e = prot.get(&g).copied().unwrap_or_default();
            let mut below_low = false;
            if g != target {
                if usage <= e.min {
                    continue;
                }
                if usage <= e.low {
                    if !low_reclaim {
                        *low_skipped = true;
                        continue;
                    }
                    below_low = true;
                }
            }
            let size = reclaim.reclaimable(self, g, sc);
            if size == 0 && self.caches.freeable(g) == 0 {
                continue;
            }
            let protection = if g == target {
                0
            } else if !low_reclaim && e.low > e.min {
                *low_skipped = true;
                e.low
            } else {
                e.min
            };
            let weight = if protection == 0 {
                size
            } else {
                let cgroup_size = usage.max(protection);
                let scaled = size
                    - (u128::from(size) * u128::from(protection) / u128::from(cgroup_size + 1))
                        as u64;
                scaled.max(size.min(SWAP_CLUSTER_MAX))
            };
            out.push(Candidate {
                group: g,
                weight,
                below_low,
            });
        }
        out
    }

    /// Asks every candidate for its share of `need`; shrinks their slab.
    fn reclaim_round(
        &mut self,
        cpu: usize,
        target: MemcgId,
        need: u64,
        cands: &[Candidate],
        sc: &ScanControl,
        reclaim: &mut dyn Reclaim,
    ) -> u64 {
        let total: u64 = cands.iter().map(|c| c.weight).sum();
        let slab_fraction = if total == 0 {
            1.0
        } else {
            (2.0 * need as f64 / total as f64).min(1.0)
        };
        let mut freed = 0;
        for c in cands {
            if c.below_low {
                self.record_event(c.group, MemoryEvent::Low);
            }
            if total > 0 && c.weight > 0 {
                let ask = (u128::from(need) * u128::from(c.weight))
                    .div_ceil(u128::from(total))
                    .min(u128::from(c.weight)) as u64;
                if ask > 0 {
                    freed += reclaim.reclaim(self, cpu, c.group, target, ask, sc);
                }
            }
            self.shrink_slab(cpu, c.group, slab_fraction);
        }
        freed
    }
}
