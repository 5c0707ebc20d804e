//! Accesses, NUMA hint faults, the migration decision, `task_numa_fault()`,
//! placement and scan-period adaptation.

use crate::cost::NS_PER_MS;
use crate::plan::MAX_NODES;
use crate::state::{pack_cpupid, CpuPid, Machine, RunState};

/// `NUMA_PERIOD_SLOTS`.
const PERIOD_SLOTS: u64 = 10;
/// `NUMA_PERIOD_THRESHOLD`.
const PERIOD_THRESHOLD: u64 = 7;
/// `ACTIVE_NODE_FRACTION`.
const ACTIVE_NODE_FRACTION: u64 = 3;

fn cpupid_pid(c: CpuPid) -> u32 {
    c & 0xff
}

fn cpupid_cpu(c: CpuPid) -> u32 {
    (c >> 8) - 1
}

/// What happened in one hint fault, for `task_numa_fault()`.
struct FaultInfo {
    last: CpuPid,
    mem_node: usize,
    pages: u64,
    local: bool,
    migrated: bool,
    failed: bool,
}

impl Machine {
    /// The workload writes unit `ui` of VMA `vi`: first touch, hint fault if
    /// PROT_NONE, then the access. Returns (user ns, sys ns).
    pub(crate) fn touch(&mut self, ti: usize, vi: usize, ui: usize, convoy: bool) -> (u64, u64) {
        self.units_processed += 1;
        let mm = self.tasks[ti].mm;
        let mut sys = 0;
        let (present, protnone, pages, huge) = {
            let u = &self.mms[mm].vmas[vi].units[ui];
            (u.present, u.protnone, u.base_pages(), u.huge)
        };
        // Write-sharing in a convoy (every thread of the process zeroing the
        // same buffer at once): the stores stall on lines the other threads
        // write, in proportion to how many are in the convoy. User time.
        // The memory traffic, on the other hand, is shared: a line is read
        // from memory and written back once per pass for the whole convoy
        // (the other threads take it cache to cache), so each thread pays
        // 1/n of a plain write to the page's node (the division by
        // `convoy_n` below).
        let convoy_n = if convoy {
            self.mms[mm].convoy.max(1)
        } else {
            1
        };
        let stall = if convoy {
            let faults = if huge { 1 } else { pages };
            self.cost.convoy_fault_ns * faults * convoy_n
        } else {
            0
        };
        if !present {
            self.first_touch(ti, vi, ui, pages);
            sys += if huge {
                self.cost.first_touch_2m_ns
            } else {
                self.cost.first_touch_4k_ns * pages
            };
        } else if protnone {
            sys += self.hint_fault(ti, vi, ui);
        }
        let nid = self.mms[mm].vmas[vi].units[ui].nid as usize;
        let local = nid == self.task_node(ti);
        self.sample(pages, local);
        let per = self.page_cost(local) * u64::from(self.tasks[ti].speed_permille) / 1000;
        (per * pages / convoy_n + stall, sys)
    }

    /// The thread's own stack page(s), touched with every step; only the
    /// fault side matters (the access cost is negligible).
    pub(crate) fn touch_stack(&mut self, ti: usize, vi: usize) -> (u64, u64) {
        let mm = self.tasks[ti].mm;
        let n = self.mms[mm].vmas[vi].units.len();
        let mut sys = 0;
        for ui in 0..n {
            let (present, protnone, pages) = {
                let u = &self.mms[mm].vmas[vi].units[ui];
                (u.present, u.protnone, u.base_pages())
            };
            if !present {
                self.first_touch(ti, vi, ui, pages);
                sys += self.cost.first_touch_4k_ns * pages;
            } else if protnone {
                self.units_processed += 1;
                sys += self.hint_fault(ti, vi, ui);
            }
        }
        (0, sys)
    }

    /// The node a first touch by `ti` asks for: the bound node under
    /// `MPOL_BIND`, else the local one.
    fn policy_node(&self, ti: usize) -> usize {
        self.tasks[ti]
            .bind
            .map_or_else(|| self.task_node(ti), usize::from)
    }

    /// Task `ti` touches unit `ui` of VMA `vi` for the first time: its
    /// `pages` are allocated on the task's policy node (or the first with
    /// room, [`alloc_node`](Self::alloc_node)) and counted in the node's
    /// and the process's usage.
    fn first_touch(&mut self, ti: usize, vi: usize, ui: usize, pages: u64) {
        let mm = self.tasks[ti].mm;
        let target = self.alloc_node(self.policy_node(ti), pages);
        let u = &mut self.mms[mm].vmas[vi].units[ui];
        u.present = true;
        u.nid = target as u8;
        self.node_used[target] += pages;
        self.mms[mm].rss_pages += pages;
    }

    /// First-touch node: `node`, else the first node with room (a full
    /// bound node falls back too: the model has no reclaim or OOM).
    fn alloc_node(&self, node: usize, pages: u64) -> usize {
        if self.node_used[node] + pages <= self.node_capacity {
            return node;
        }
        (0..self.nodes)
            .find(|&n| self.node_used[n] + pages <= self.node_capacity)
            .unwrap_or(node)
    }

    /// `migrate_balanced_pgdat()`: room for `pages` above a 1% watermark.
    fn room_for(&self, node: usize, pages: u64) -> bool {
        let high = self.node_capacity / 100;
        self.node_used[node] + pages + high <= self.node_capacity
    }

    /// A NUMA hint fault on unit `ui` of VMA `vi`; returns its system time.
    fn hint_fault(&mut self, ti: usize, vi: usize, ui: usize) -> u64 {
        let mm = self.tasks[ti].mm;
        let tid = self.tasks[ti].tid;
        let cpu = self.tasks[ti].cpu;
        let dst = self.task_node(ti);
        let (src, pages, huge, last) = {
            let u = &mut self.mms[mm].vmas[vi].units[ui];
            u.protnone = false;
            let last = u.last_cpupid;
            // folio_xchg_last_cpupid() happens on every fault.
            u.last_cpupid = pack_cpupid(cpu, tid);
            (u.nid as usize, u.base_pages(), u.huge, last)
        };
        let faults = if huge { 1 } else { pages };
        self.counters.numa_hint_faults += faults;
        let local = src == dst;
        if local {
            self.counters.numa_hint_faults_local += faults;
        }
        if let Some(st) = self.mms[mm].vmas[vi].numab.as_mut() {
            st.pids.record(tid);
        }
        let mut sys = if huge {
            self.cost.hint_fault_2m_ns
        } else {
            self.cost.hint_fault_4k_ns * pages
        };
        let mut migrated = false;
        let mut failed = false;
        // `mpol_misplaced()`: a policy without `MPOL_F_MOF` (MPOL_BIND)
        // never asks for a migration.
        let mof = self.tasks[ti].bind.is_none();
        if !local && mof && self.should_migrate(ti, last, src, dst) {
            if self.room_for(dst, pages) {
                self.mms[mm].vmas[vi].units[ui].nid = dst as u8;
                self.node_used[src] -= pages;
                self.node_used[dst] += pages;
                self.counters.numa_pages_migrated += pages;
                if huge {
                    self.counters.thp_migration_success += 1;
                }
                migrated = true;
                sys += self.cost.migrate_fixed_ns + self.cost.migrate_copy_page_ns * pages;
            } else {
                failed = true;
                self.counters.pgmigrate_fail += pages;
            }
        }
        let mem_node = self.mms[mm].vmas[vi].units[ui].nid as usize;
        self.task_numa_fault(
            ti,
            FaultInfo {
                last,
                mem_node,
                pages,
                local,
                migrated,
                failed,
            },
        );
        sys
    }

    /// `should_numa_migrate_memory()` in normal (non-tiering) mode, with
    /// the two-reference (two-stage) filter.
    fn should_migrate(&self, ti: usize, last: CpuPid, src: usize, dst: usize) -> bool {
        let t = &self.tasks[ti];
        let this_pid = t.tid & 0xff;
        let same_pid = last != 0 && cpupid_pid(last) == this_pid;
        if (t.preferred.is_none() || t.scan_seq <= 4) && (last == 0 || same_pid) {
            return true;
        }
        // Two-stage filter: a previous fault, if any, must have come from
        // dst. An unset `last_cpupid` (no hint fault since the page was
        // allocated or migrated) passes on to the group rules.
        if last != 0 && self.node_of_cpu(cpupid_cpu(last)) != dst {
            return false;
        }
        if same_pid || !t.in_group {
            return true;
        }
        let g = &self.mms[t.mm].group;
        if g.faults_cpu[dst] > 3 * g.faults_cpu[src] {
            return true;
        }
        let gmem = |n: usize| g.faults_mem[n][0] + g.faults_mem[n][1];
        u128::from(g.faults_cpu[dst]) * u128::from(gmem(src)) * 3
            > u128::from(g.faults_cpu[src]) * u128::from(gmem(dst)) * 4
    }

    /// `task_numa_fault()`.
    fn task_numa_fault(&mut self, ti: usize, f: FaultInfo) {
        let now = self.now;
        let tid = self.tasks[ti].tid;
        let cpu_node = self.task_node(ti);
        let first = f.last == 0;
        let private = first || cpupid_pid(f.last) == (tid & 0xff);
        if !private && !self.tasks[ti].in_group {
            self.join_group(ti);
        }
        let mut local = f.local;
        if !private && !local && self.tasks[ti].in_group {
            let g = &self.mms[self.tasks[ti].mm].group;
            if g.active_nodes > 1
                && g.active_mask & (1 << cpu_node) != 0
                && g.active_mask & (1 << f.mem_node) != 0
            {
                local = true;
            }
        }
        if now > self.tasks[ti].migrate_retry {
            self.placement(ti);
            self.migrate_preferred(ti);
        }
        let t = &mut self.tasks[ti];
        if f.failed {
            t.locality[2] += f.pages;
        }
        let p = usize::from(private);
        t.membuf[f.mem_node][p] += f.pages;
        t.cpubuf[cpu_node][p] += f.pages;
        t.locality[usize::from(local)] += f.pages;
        t.total_faults += f.pages;
        if f.migrated {
            t.pages_migrated += f.pages;
        }
    }

    /// `task_numa_group()` for threads of one mm: join the process group.
    fn join_group(&mut self, ti: usize) {
        let mm = self.tasks[ti].mm;
        self.tasks[ti].in_group = true;
        let g = &mut self.mms[mm].group;
        g.refcount += 1;
        for n in 0..MAX_NODES {
            for p in 0..2 {
                g.faults_mem[n][p] += self.tasks[ti].faults_mem[n][p];
                g.faults_cpu[n] += self.tasks[ti].faults_cpu[n][p];
            }
        }
    }

    /// `task_numa_placement()`: once per `numa_scan_seq`, decay the fault
    /// statistics, pick the preferred node, adapt the scan period.
    fn placement(&mut self, ti: usize) {
        let mm = self.tasks[ti].mm;
        let seq = self.mms[mm].scan_seq;
        if self.tasks[ti].scan_seq == seq {
            return;
        }
        self.tasks[ti].scan_seq = seq;
        self.tasks[ti].period_max_ms = self.task_scan_max_ms(ti);
        let mut fault_types = [0u64; 2];
        let in_group = self.tasks[ti].in_group;
        for n in 0..self.nodes {
            for (p, fault_type) in fault_types.iter_mut().enumerate() {
                let t = &mut self.tasks[ti];
                let old_mem = t.faults_mem[n][p];
                let new_mem = old_mem - old_mem / 2 + t.membuf[n][p];
                *fault_type += t.membuf[n][p];
                t.faults_mem[n][p] = new_mem;
                t.membuf[n][p] = 0;
                let old_cpu = t.faults_cpu[n][p];
                let new_cpu = old_cpu - old_cpu / 2 + t.cpubuf[n][p];
                t.faults_cpu[n][p] = new_cpu;
                t.cpubuf[n][p] = 0;
                if in_group {
                    let g = &mut self.mms[mm].group;
                    g.faults_mem[n][p] = g.faults_mem[n][p] + new_mem - old_mem;
                    g.faults_cpu[n] = g.faults_cpu[n] + new_cpu - old_cpu;
                }
            }
        }
        let (max_nid, max_faults) = if in_group {
            let g = &mut self.mms[mm].group;
            let max_cpu = g.faults_cpu[..self.nodes]
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            let mut mask = 0u32;
            for n in 0..self.nodes {
                if g.faults_cpu[n] * ACTIVE_NODE_FRACTION > max_cpu {
                    mask |= 1 << n;
                }
            }
            g.active_mask = mask;
            g.active_nodes = mask.count_ones();
            argmax((0..self.nodes).map(|n| g.faults_mem[n][0] + g.faults_mem[n][1]))
        } else {
            let t = &self.tasks[ti];
            argmax((0..self.nodes).map(|n| t.faults_mem[n][0] + t.faults_mem[n][1]))
        };
        if max_faults > 0 {
            self.tasks[ti].preferred = Some(max_nid as u8);
        }
        self.update_task_scan_period(ti, fault_types[0], fault_types[1]);
    }

    /// `update_task_scan_period()` (the code's branch order: the
    /// private/shared ratio is tested before the local/remote ratio).
    fn update_task_scan_period(&mut self, ti: usize, shared: u64, private: u64) {
        let mm = self.tasks[ti].mm;
        let [remote, local, failed] = self.tasks[ti].locality;
        if local + shared == 0 || failed > 0 {
            let t = &mut self.tasks[ti];
            t.period_ms = t.period_max_ms.min(t.period_ms.saturating_mul(2));
            let p = t.period_ms;
            self.mms[mm].numa_next_scan =
                self.sysctl.jiffies(self.now) + self.sysctl.msecs_to_jiffies(p);
            return;
        }
        let period = u64::from(self.tasks[ti].period_ms);
        let slot = period.div_ceil(PERIOD_SLOTS) as i64;
        let lr = (local * PERIOD_SLOTS)
            .checked_div(local + remote)
            .unwrap_or(0);
        let ps = (private * PERIOD_SLOTS)
            .checked_div(private + shared)
            .unwrap_or(0);
        let diff: i64 = if ps >= PERIOD_THRESHOLD {
            (ps - PERIOD_THRESHOLD).max(1) as i64 * slot
        } else if lr >= PERIOD_THRESHOLD {
            (lr - PERIOD_THRESHOLD).max(1) as i64 * slot
        } else {
            -((PERIOD_THRESHOLD - ps.max(lr)) as i64) * slot
        };
        let lo = i64::from(self.task_scan_min(ti));
        let hi = i64::from(self.task_scan_max_ms(ti)).max(lo);
        let t = &mut self.tasks[ti];
        t.period_ms = (period as i64 + diff).clamp(lo, hi) as u32;
        t.locality = [0; 3];
    }

    /// `numa_migrate_preferred()`.
    fn migrate_preferred(&mut self, ti: usize) {
        let Some(pref) = self.tasks[ti].preferred else {
            return;
        };
        if self.tasks[ti].total_faults == 0 {
            return;
        }
        let interval = (u64::from(self.tasks[ti].period_ms) / 16).min(1000) * NS_PER_MS;
        self.tasks[ti].migrate_retry = self.now + interval;
        let pref = pref as usize;
        if self.task_node(ti) == pref {
            return;
        }
        self.task_numa_migrate(ti, pref);
    }

    /// Simplified `task_numa_migrate()`: an idle CPU on the preferred node,
    /// else a swap with a task there that prefers our node.
    fn task_numa_migrate(&mut self, ti: usize, dst: usize) {
        let src = self.task_node(ti);
        let base = dst as u32 * self.cpus_per_node;
        if let Some(cpu) =
            (base..base + self.cpus_per_node).find(|&c| self.cpu_owner[c as usize].is_none())
        {
            let old = self.tasks[ti].cpu;
            self.cpu_owner[old as usize] = None;
            if let Some(p) = self.cpu_pool.iter().position(|&c| c == cpu) {
                self.cpu_pool.remove(p);
            }
            self.cpu_pool.push(old);
            self.cpu_owner[cpu as usize] = Some(ti);
            self.tasks[ti].cpu = cpu;
            self.counters.numa_task_moves += 1;
            self.update_scan_period(ti, src, dst);
            return;
        }
        let n = self.cpus_per_node;
        let offset = self.rng.below_u32(n);
        for k in 0..n {
            let cpu = base + (offset + k) % n;
            let Some(other) = self.cpu_owner[cpu as usize] else {
                continue;
            };
            let o = &self.tasks[other];
            if o.state != RunState::Running || o.preferred != Some(src as u8) {
                continue;
            }
            let mine = self.tasks[ti].cpu;
            self.tasks[other].cpu = mine;
            self.cpu_owner[mine as usize] = Some(other);
            self.tasks[ti].cpu = cpu;
            self.cpu_owner[cpu as usize] = Some(ti);
            self.counters.numa_task_moves += 2;
            self.update_scan_period(ti, src, dst);
            self.update_scan_period(other, dst, src);
            return;
        }
    }

    /// `update_scan_period()`, run when a task moves from node `src` to
    /// node `dst`: a task that took hint faults but has not yet seen a
    /// scan sequence of its own restarts at `task_scan_start()` ("a new
    /// task that is pulled cross-node"); later, only a move that is
    /// neither to the preferred node nor away from a non-preferred one
    /// does.
    fn update_scan_period(&mut self, ti: usize, src: usize, dst: usize) {
        let t = &self.tasks[ti];
        if t.total_faults == 0 || src == dst {
            return;
        }
        if t.scan_seq != 0 {
            let pref = t.preferred.map(usize::from);
            if pref == Some(dst) || (pref.is_some() && pref != Some(src)) {
                return;
            }
        }
        self.tasks[ti].period_ms = self.task_scan_start_ms(ti);
    }
}

/// Index and value of the maximum (first on ties).
fn argmax(it: impl Iterator<Item = u64>) -> (usize, u64) {
    let mut best = (0, 0);
    for (i, v) in it.enumerate() {
        if v > best.1 {
            best = (i, v);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use crate::state::Machine;
    use crate::{builtin_scenario, ScannerVersion};

    fn sim() -> Machine {
        let sc = builtin_scenario("numa02").expect("builtin").numab;
        let plan = sc.plan().expect("plan");
        Machine::new(&sc, &plan, ScannerVersion::V6_5, 1)
    }

    #[test]
    fn a_bound_thread_allocates_on_its_node_and_its_hint_faults_do_not_migrate() {
        let mut s = sim();
        let ti = 0;
        let local = s.task_node(ti);
        let far = 1 - local;
        let buffer = s.mms[0]
            .vmas
            .iter()
            .position(|v| v.name == "buffer")
            .expect("buffer");
        s.tasks[ti].bind = Some(far as u8);
        s.touch(ti, buffer, 0, false);
        assert_eq!(usize::from(s.mms[0].vmas[buffer].units[0].nid), far);
        // A remote hint fault under MPOL_BIND: counted, not migrated.
        s.mms[0].vmas[buffer].units[0].protnone = true;
        s.touch(ti, buffer, 0, false);
        assert!(s.counters.numa_hint_faults > 0);
        assert_eq!(s.counters.numa_pages_migrated, 0);
        assert_eq!(usize::from(s.mms[0].vmas[buffer].units[0].nid), far);
        // Back on MPOL_DEFAULT the same fault migrates the page here.
        s.tasks[ti].bind = None;
        s.mms[0].vmas[buffer].units[0].protnone = true;
        s.touch(ti, buffer, 0, false);
        assert!(s.counters.numa_pages_migrated > 0);
        assert_eq!(usize::from(s.mms[0].vmas[buffer].units[0].nid), local);
    }

    #[test]
    fn a_convoy_write_pays_the_stall_and_a_share_of_the_memory_traffic() {
        let mut s = sim();
        let ti = 0;
        let buffer = s.mms[0]
            .vmas
            .iter()
            .position(|v| v.name == "buffer")
            .expect("buffer");
        s.tasks[ti].speed_permille = 1000;
        // First touch (outside a convoy), then every CPU writing: the
        // saturated prices, 7 us local and 17.5 us remote per page.
        s.touch(ti, buffer, 0, false);
        s.running = s.ncpus;
        let pages = s.mms[0].vmas[buffer].units[0].base_pages();
        assert_eq!(pages, 512);
        let (plain, _) = s.touch(ti, buffer, 0, false);
        assert_eq!(plain, 7_000 * 512);
        // Four threads in the convoy: each pays a quarter of the write
        // (7,000 x 512 / 4 = 896,000 ns) plus the write-sharing stall
        // (30 ns x 512 pages x 4 threads = 61,440 ns).
        s.mms[0].convoy = 4;
        let (user, _) = s.touch(ti, buffer, 0, true);
        assert_eq!(user, 896_000 + 61_440);
        // Remote: 17,500 x 512 / 4 = 2,240,000 ns, the same stall.
        let here = s.task_node(ti);
        s.mms[0].vmas[buffer].units[0].nid = (1 - here) as u8;
        let (user, _) = s.touch(ti, buffer, 0, true);
        assert_eq!(user, 2_240_000 + 61_440);
    }

    #[test]
    fn a_numa_move_to_an_idle_cpu_resets_the_period_to_task_scan_start() {
        let mut s = sim();
        // Task 0 (the main thread) runs; 3 GiB of RSS: task_scan_min and
        // task_scan_start (no group) are 100 ms.
        s.mms[0].rss_pages = (3 << 30) >> 12;
        let ti = 0;
        let src = s.task_node(ti);
        let dst = 1 - src;
        s.tasks[ti].total_faults = 1;
        s.tasks[ti].period_ms = 4000;
        s.task_numa_migrate(ti, dst);
        assert_eq!(s.task_node(ti), dst);
        assert_eq!(s.counters.numa_task_moves, 1);
        assert_eq!(s.tasks[ti].period_ms, 100);
    }

    #[test]
    fn cross_node_move_resets_the_scan_period_only_early_or_off_preference() {
        let mut s = sim();
        let ti = 1;
        let start = s.task_scan_start_ms(ti);
        // No hint fault yet: nothing to reset.
        s.tasks[ti].period_ms = 7000;
        s.update_scan_period(ti, 0, 1);
        assert_eq!(s.tasks[ti].period_ms, 7000);
        // Faults but no scan sequence of its own: any cross-node move resets.
        s.tasks[ti].total_faults = 1;
        s.update_scan_period(ti, 0, 0);
        assert_eq!(s.tasks[ti].period_ms, 7000, "same node");
        s.update_scan_period(ti, 0, 1);
        assert_eq!(s.tasks[ti].period_ms, start);
        // Later: moving to the preferred node, or from a non-preferred one,
        // keeps the period; leaving the preferred node resets it.
        s.tasks[ti].scan_seq = 3;
        s.tasks[ti].preferred = Some(1);
        s.tasks[ti].period_ms = 7000;
        s.update_scan_period(ti, 0, 1);
        assert_eq!(s.tasks[ti].period_ms, 7000, "to preferred");
        s.tasks[ti].preferred = Some(0);
        s.update_scan_period(ti, 1, 0);
        assert_eq!(s.tasks[ti].period_ms, 7000, "to preferred again");
        s.update_scan_period(ti, 0, 1);
        assert_eq!(s.tasks[ti].period_ms, start, "away from preferred");
    }
}
