//! The memcg OOM killer (`mem_cgroup_out_of_memory`,
//! `oom_badness`, `mem_cgroup_get_oom_group`; cgroup-v2.rst,
//! "memory.oom.group").
//!
//! When a charge of up to 8 pages cannot be met under `over`'s limit, the
//! killer picks, among the live processes charged to `over`'s subtree, the
//! one with the highest badness: its resident and swapped-out anonymous
//! pages and page-table pages, plus `oom_score_adj` thousandths of the
//! limit (`memory.max` plus the usable swap); a process with
//! `oom_score_adj` -1000 is never picked (the last of equals wins, as the
//! kernel's `>=` comparison does). The victim's memcg counts `oom_kill`.
//!
//! If the victim's memcg or an ancestor up to `over` has
//! `memory.oom.group` set, the highest such group is killed whole: it
//! counts `oom_group_kill`, and every process charged to its subtree
//! except those with `oom_score_adj` -1000 is killed and counts
//! `oom_kill` — the victim too, a second time, as the kernel's group walk
//! finds it still there. Killed processes exit at once.

use super::{Machine, MachineError, Pid};
use crate::memcg::{MemcgId, MemoryEvent, UNLIMITED};

/// `oom_score_adj` that exempts a process.
pub const OOM_SCORE_ADJ_MIN: i32 = -1000;

impl Machine {
    /// Runs the OOM killer for a charge that `over`'s limit refused;
    /// returns the processes killed (none: nothing killable).
    ///
    /// # Errors
    /// Accounting errors while freeing the victims' memory.
    pub fn out_of_memory(&mut self, over: MemcgId) -> Result<Vec<Pid>, MachineError> {
        let m = self.tree.memory(over)?;
        let swap_max = self.tree.swap(over)?.max().min(self.tree.swap_total());
        let limit = if m.max() == UNLIMITED {
            self.tree.swap_total()
        } else {
            m.max().saturating_add(swap_max)
        };
        let mut chosen: Option<(Pid, i64)> = None;
        let alive: Vec<(Pid, i32)> = self
            .procs
            .alive()
            .map(|(pid, p)| (pid, p.oom_score_adj))
            .collect();
        for (pid, adj) in alive {
            let memcg = self.memcg_of(pid)?;
            if !self.tree.is_ancestor_or_self(over, memcg) || adj == OOM_SCORE_ADJ_MIN {
                continue;
            }
            let points = self.footprint(pid)? as i64 + i64::from(adj) * (limit / 1000) as i64;
            if chosen.is_none_or(|(_, best)| points >= best) {
                chosen = Some((pid, points));
            }
        }
        let Some((victim, _)) = chosen else {
            return Ok(Vec::new());
        };
        let victim_memcg = self.memcg_of(victim)?;
        let mut killed = vec![victim];
        self.tree.record_event(victim_memcg, MemoryEvent::OomKill);
        let group = self
            .tree
            .ancestors(victim_memcg)
            .take_while(|&a| self.tree.is_ancestor_or_self(over, a))
            .filter(|&a| self.tree.oom_group(a).unwrap_or(false))
            .last();
        if let Some(g) = group {
            self.tree.record_event(g, MemoryEvent::OomGroupKill);
            let members: Vec<(Pid, i32)> = self
                .procs
                .alive()
                .map(|(pid, p)| (pid, p.oom_score_adj))
                .collect();
            for (pid, adj) in members {
                let memcg = self.memcg_of(pid)?;
                if adj == OOM_SCORE_ADJ_MIN || !self.tree.is_ancestor_or_self(g, memcg) {
                    continue;
                }
                self.tree.record_event(memcg, MemoryEvent::OomKill);
                if !killed.contains(&pid) {
                    killed.push(pid);
                }
            }
        }
        for &pid in &killed {
            self.exit(pid)?;
        }
        Ok(killed)
    }
}
