//! Reclaim from the LRU lists: the [`Reclaim`] implementation a charge
//! over a limit calls.
//!
//! Per (group, node): the scan is split between anon and file in
//! proportion to `swappiness × anon` vs `(200 − swappiness) × file`
//! (anon only when the group can swap and, in this cgroup reclaim, the
//! swappiness is not 0; `memory.reclaim`'s `swappiness=` replaces
//! `vm.swappiness`). Scanning a type first refills its
//! inactive list from the active tail when the inactive list is smaller
//! (`inactive_is_low`): deactivated folios get the workingset bit, no aging.
//! Then folios come off the inactive tail in clusters of
//! [`SWAP_CLUSTER_MAX`]: a referenced anonymous folio (young PTE) is
//! activated, which ages the non-resident clock; anything else is evicted,
//! leaving a shadow entry that names the reclaim target. Unmapped page
//! cache is reclaimed even if referenced, as the kernel does with clean
//! `FOLIOREF_RECLAIM_CLEAN` folios.

use super::{Lru, LruList, SlotState};
use crate::memcg::{MemcgError, MemcgId, MemcgTree, Reclaim, ScanControl, Stat};

/// Pages scanned per batch (at least one folio).
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// `vm.swappiness`, the default of [`ScanControl`].
pub const SWAPPINESS: u64 = crate::memcg::reclaim::VM_SWAPPINESS as u64;

impl Reclaim for Lru {
    fn reclaimable(&self, tree: &MemcgTree, group: MemcgId, sc: &ScanControl) -> u64 {
        let swap = Self::may_scan_anon(tree, group, sc);
        (0..self.nodes)
            .filter_map(|node| self.lruvec(group, node))
            .map(|lv| {
                let s = lv.sizes();
                let anon = if swap {
                    s.inactive_anon + s.active_anon
                } else {
                    0
                };
                s.inactive_file + s.active_file + anon
            })
            .sum()
    }

    fn reclaim(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        group: MemcgId,
        target: MemcgId,
        nr: u64,
        sc: &ScanControl,
    ) -> u64 {
        let mut freed = 0;
        for node in 0..self.nodes {
            if freed >= nr {
                break;
            }
            // Accounting errors cannot happen for folios this model
            // charged itself; treat one as "nothing more reclaimable".
            let at = Scan {
                cpu,
                group,
                node,
                target,
            };
            freed += self.shrink_lruvec(tree, at, nr - freed, sc).unwrap_or(0);
        }
        freed
    }
}

/// Where a reclaim scans: `group`'s lruvec on `node`, from `cpu`, on
/// behalf of a reclaim of `target` (the shadow entries left name it).
#[derive(Debug, Clone, Copy)]
struct Scan {
    cpu: usize,
    group: MemcgId,
    node: usize,
    target: MemcgId,
}

impl Lru {
    /// Whether a reclaim with `sc` scans `group`'s anonymous pages: swap
    /// must be available to it, and a cgroup reclaim with swappiness 0
    /// scans page cache only.
    fn may_scan_anon(tree: &MemcgTree, group: MemcgId, sc: &ScanControl) -> bool {
        sc.may_swap && sc.swappiness > 0 && tree.nr_swap_pages(group) > 0
    }

    /// Reclaims up to `nr` pages of one lruvec, anon and file in
    /// proportion (see the module docs).
    fn shrink_lruvec(
        &mut self,
        tree: &mut MemcgTree,
        at: Scan,
        nr: u64,
        sc: &ScanControl,
    ) -> Result<u64, MemcgError> {
        let Scan { group, node, .. } = at;
        let swap = Self::may_scan_anon(tree, group, sc);
        let swappiness = u64::from(sc.swappiness.min(200));
        let mut freed = 0;
        let mut rounds = 0;
        while freed < nr && rounds < 64 + nr / SWAP_CLUSTER_MAX * 4 {
            rounds += 1;
            let sizes = self.lv(group, node).sizes();
            let file = sizes.inactive_file + sizes.active_file;
            let anon = if swap {
                sizes.inactive_anon + sizes.active_anon
            } else {
                0
            };
            let scan_file = match (anon, file) {
                (0, 0) => break,
                (0, _) => true,
                (_, 0) => false,
                (a, f) => {
                    let wa = (swappiness * a) as f64;
                    let wf = ((200 - swappiness) * f) as f64;
                    self.scan_credit += wa / (wa + wf);
                    if self.scan_credit >= 1.0 {
                        self.scan_credit -= 1.0;
                        false
                    } else {
                        true
                    }
                }
            };
            let (got, progress) = self.shrink_list(tree, at, scan_file, nr - freed)?;
            freed += got;
            if !progress {
                break;
            }
        }
        Ok(freed)
    }

    /// Scans one cluster of one type; returns (pages freed, anything moved).
    fn shrink_list(
        &mut self,
        tree: &mut MemcgTree,
        at: Scan,
        file: bool,
        nr: u64,
    ) -> Result<(u64, bool), MemcgError> {
        let Scan {
            cpu,
            group,
            node,
            target,
        } = at;
        let inactive = LruList::of(file, false);
        let active = LruList::of(file, true);
        let mut progress = false;
        if self.lv(group, node).len(inactive) < self.lv(group, node).len(active) {
            progress |= self.shrink_active(tree, cpu, group, node, file)?;
        }
        let mut freed = 0;
        let mut scanned = 0;
        while scanned < SWAP_CLUSTER_MAX {
            if freed >= nr {
                break;
            }
            let slots = &self.slots;
            let lv = &mut self.lruvecs[group.0 as usize * self.nodes + node];
            let Some(slot) = lv.pop_tail(inactive, |sl, st| slots[sl as usize].stamp == st) else {
                break;
            };
            progress = true;
            let s = self.slots[slot as usize];
            let m = self.mappings[s.mapping as usize];
            debug_assert_eq!(s.state, SlotState::Resident);
            scanned += m.nr;
            self.lv(group, node).note_removed(inactive, m.nr);
            tree.mod_stat(cpu, group, node, Stat::PgscanDirect, m.nr as i64)?;
            let keep = !file && s.referenced;
            if !keep && self.evict(tree, cpu, slot, target)? {
                tree.mod_stat(cpu, group, node, Stat::PgstealDirect, m.nr as i64)?;
                freed += m.nr;
                continue;
            }
            // Referenced (or unswappable) anon: activate.
            self.move_folio(tree, cpu, slot, true, false)?;
            self.slots[slot as usize].referenced = false;
            tree.mod_stat(cpu, group, node, Stat::Pgactivate, m.nr as i64)?;
            self.age_nonresident(tree, group, node, m.nr);
        }
        let slots = &self.slots;
        let lv = &mut self.lruvecs[group.0 as usize * self.nodes + node];
        lv.compact(inactive, |sl, st| slots[sl as usize].stamp == st);
        Ok((freed, progress))
    }

    /// Deactivates up to a cluster from the active tail.
    fn shrink_active(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        group: MemcgId,
        node: usize,
        file: bool,
    ) -> Result<bool, MemcgError> {
        let active = LruList::of(file, true);
        let mut moved = false;
        let mut pages = 0;
        while pages < SWAP_CLUSTER_MAX {
            let slots = &self.slots;
            let lv = &mut self.lruvecs[group.0 as usize * self.nodes + node];
            let Some(slot) = lv.pop_tail(active, |sl, st| slots[sl as usize].stamp == st) else {
                break;
            };
            moved = true;
            let nr = self.mappings[self.slots[slot as usize].mapping as usize].nr;
            pages += nr;
            self.lv(group, node).note_removed(active, nr);
            self.move_folio(tree, cpu, slot, false, false)?;
            let sl = &mut self.slots[slot as usize];
            sl.workingset = true;
            sl.referenced = false;
            tree.mod_stat(cpu, group, node, Stat::Pgrefill, nr as i64)?;
            tree.mod_stat(cpu, group, node, Stat::Pgdeactivate, nr as i64)?;
        }
        let slots = &self.slots;
        let lv = &mut self.lruvecs[group.0 as usize * self.nodes + node];
        lv.compact(active, |sl, st| slots[sl as usize].stamp == st);
        Ok(moved)
    }
}
