//! `task_numa_work()`: the VMA scan loop of every version, and the
//! task-level scan-period bounds.

use crate::cost::{group_scaled_period, task_scan_max_ms, task_scan_min_ms, NS_PER_MS};
use crate::pids::vma_scan_ratelimit;
use crate::plan::{VmaKind, HPAGE, PAGE};
use crate::result::ScanEvent;
use crate::state::{Machine, NumabState};

/// Why the loop left a VMA early.
enum Visit {
    /// Skipped; try the next VMA.
    Skip,
    /// Scan it.
    Scan { forced_by_select: bool },
}

impl Machine {
    /// `task_scan_min()` for task `ti`, ms.
    pub(crate) fn task_scan_min(&self, ti: usize) -> u32 {
        task_scan_min_ms(self.rss_pages(ti), &self.sysctl)
    }

    /// Group shared/private fault totals and refcount, if `ti` is grouped.
    fn group_totals(&self, ti: usize) -> Option<(u64, u64, u64)> {
        let t = &self.tasks[ti];
        if !t.in_group {
            return None;
        }
        let g = &self.mms[t.mm].group;
        let shared: u64 = g.faults_mem.iter().map(|f| f[0]).sum();
        let private: u64 = g.faults_mem.iter().map(|f| f[1]).sum();
        Some((g.refcount, shared, private))
    }

    /// `task_scan_max()` for task `ti` (with the numa-group scaling), ms.
    pub(crate) fn task_scan_max_ms(&self, ti: usize) -> u32 {
        let base = task_scan_max_ms(self.rss_pages(ti), &self.sysctl);
        let smin = self.task_scan_min(ti);
        let windows = crate::cost::nr_scan_windows(self.rss_pages(ti), &self.sysctl);
        let smax = (u64::from(self.sysctl.scan_period_max_ms) / windows) as u32;
        match self.group_totals(ti) {
            Some((refc, shared, private)) => {
                let scaled = group_scaled_period(smax, refc, shared, private);
                u64::from(base)
                    .max(scaled)
                    .max(u64::from(smin))
                    .min(u64::from(u32::MAX)) as u32
            }
            None => base,
        }
    }

    /// `task_scan_start()` for task `ti`, ms.
    pub(crate) fn task_scan_start_ms(&self, ti: usize) -> u32 {
        let smin = self.task_scan_min(ti);
        match self.group_totals(ti) {
            Some((refc, shared, private)) => {
                let p = group_scaled_period(smin, refc, shared, private);
                p.max(u64::from(smin)).min(u64::from(u32::MAX)) as u32
            }
            None => smin,
        }
    }

    /// `reset_ptenuma_scan()`.
    fn reset_scan(&mut self, mm: usize) {
        self.mms[mm].scan_seq += 1;
        self.mms[mm].scan_offset = 0;
        self.counters.scan_seq_advances += 1;
    }

    /// Rotates the PID windows of a VMA when their period is over.
    fn maybe_rotate(&mut self, mm: usize, vi: usize, now: u64) {
        let seq = self.mms[mm].scan_seq;
        let period = self.sysctl.pid_reset_period_ns();
        let st = self.mms[mm].vmas[vi]
            .numab
            .as_mut()
            .expect("numab state allocated");
        if seq != 0 && now > st.pids_reset {
            st.pids_reset += period;
            st.pids.rotate();
        }
    }

    /// `vma_is_accessed()` for the running version.
    fn vma_is_accessed(&mut self, ti: usize, mm: usize, vi: usize) -> bool {
        let f = self.features;
        let tid = self.tasks[ti].tid;
        let users = i64::from(self.mms[mm].users);
        let m = &self.mms[mm];
        let vma = &m.vmas[vi];
        let st = vma.numab.as_ref().expect("numab state allocated");
        let early = if f.start_scan_seq {
            m.scan_seq - st.start_scan_seq < 2
        } else {
            m.scan_seq < 2
        };
        if early || st.pids.contains(tid) {
            return true;
        }
        if f.complete_partial && m.scan_offset > vma.start {
            self.skips.ignore_pid_inactive += 1;
            return true;
        }
        let bound = if f.force_every_other_pass {
            Some(1)
        } else if f.force_after_nr_threads {
            Some(users)
        } else {
            None
        };
        if let Some(b) = bound {
            if m.scan_seq > st.prev_scan_seq + b {
                self.skips.starve_forced += 1;
                return true;
            }
        }
        false
    }

    /// RFC 2/6 `task_disjoint_vma_select()`.
    fn disjoint_select(&mut self, mm: usize, vi: usize) -> bool {
        let bytes = self.mms[mm].vmas[vi].end - self.mms[mm].vmas[vi].start;
        let st = self.mms[mm].vmas[vi]
            .numab
            .as_mut()
            .expect("numab state allocated");
        if st.scan_select > 0 {
            st.scan_select -= 1;
            false
        } else {
            st.scan_select = vma_scan_ratelimit(bytes);
            true
        }
    }

    /// Decides whether VMA `vi` is scanned in this call (after the
    /// suitability checks).
    fn visit(
        &mut self,
        ti: usize,
        mm: usize,
        vi: usize,
        now: u64,
        forced: bool,
        skipped: &mut bool,
    ) -> Visit {
        let f = self.features;
        let delay = u64::from(self.sysctl.scan_delay_ms) * NS_PER_MS;
        let seq = self.mms[mm].scan_seq;
        if self.mms[mm].vmas[vi].numab.is_none() {
            self.mms[mm].vmas[vi].numab = Some(NumabState {
                next_scan: now + delay,
                pids_reset: now + delay + self.sysctl.pid_reset_period_ns(),
                pids: Default::default(),
                start_scan_seq: seq,
                prev_scan_seq: seq - 1,
                scan_select: 0,
            });
        }
        if !f.vma_filters {
            // v6.3: no per-VMA state in the kernel (the model keeps its
            // own for coverage bookkeeping), so nothing to skip on.
            return Visit::Scan {
                forced_by_select: false,
            };
        }
        let next_scan = self.mms[mm].vmas[vi]
            .numab
            .as_ref()
            .map_or(0, |s| s.next_scan);
        if seq != 0 && now < next_scan {
            self.skips.scan_delay += 1;
            return Visit::Skip;
        }
        if f.reset_before_filter {
            self.maybe_rotate(mm, vi, now);
        }
        if f.complete_partial {
            let prev = self.mms[mm].vmas[vi]
                .numab
                .as_ref()
                .map_or(-1, |s| s.prev_scan_seq);
            if prev == seq {
                self.mms[mm].scan_offset = self.mms[mm].vmas[vi].end;
                self.skips.seq_completed += 1;
                return Visit::Skip;
            }
        }
        let accessed = forced || self.vma_is_accessed(ti, mm, vi);
        let mut by_select = false;
        if !accessed {
            if f.disjoint_select && self.disjoint_select(mm, vi) {
                by_select = true;
            } else {
                *skipped = true;
                self.skips.pid_inactive += 1;
                return Visit::Skip;
            }
        }
        if !f.reset_before_filter {
            self.maybe_rotate(mm, vi, now);
        }
        Visit::Scan {
            forced_by_select: by_select,
        }
    }

    /// `change_prot_numa()` over `[from, to)` of VMA `vi`: returns the base
    /// pages made PROT_NONE and the system time spent.
    fn change_prot_numa(
        &mut self,
        ti: usize,
        mm: usize,
        vi: usize,
        from: u64,
        to: u64,
        now: u64,
    ) -> (u64, u64) {
        let node = self.task_node(ti) as u8;
        let m = &self.mms[mm];
        // `target_node` is only known for a private VMA of a single-user mm.
        let skip_node = if m.users == 1 && m.vmas[vi].kind != VmaKind::SharedAnon {
            Some(node)
        } else {
            None
        };
        let c = &self.cost;
        let (unit_ns, pte_ns, pmd_ns, tlb_ns) = (
            c.scan_unit_ns,
            c.pte_update_ns,
            c.pmd_update_ns,
            c.tlb_flush_ns,
        );
        let skip_local = self.features.local_skip_visits;
        let cpus_per_node = self.cpus_per_node;
        let vma = &mut self.mms[mm].vmas[vi];
        let (lo, hi) = vma.unit_range(from, to);
        let mut updated = 0u64;
        let mut huge = 0u64;
        let mut cost = 0u64;
        for u in &mut vma.units[lo..hi] {
            cost += unit_ns;
            if !u.present {
                continue;
            }
            u.last_visit = now + 1;
            if u.protnone || skip_node == Some(u.nid) {
                continue;
            }
            if skip_local > 0 && u.last_cpupid != 0 {
                let last_node = ((u.last_cpupid >> 8) - 1) / cpus_per_node;
                if last_node == u32::from(u.nid) && u.local_skips < skip_local {
                    u.local_skips += 1;
                    continue;
                }
            }
            u.local_skips = 0;
            u.protnone = true;
            if u.huge {
                huge += 1;
                cost += pmd_ns;
            } else {
                cost += pte_ns * u64::from(u.pages);
            }
            updated += u.base_pages();
        }
        self.units_processed += (hi - lo) as u64;
        // Contiguous-coverage bookkeeping for the starvation metric.
        let seq = self.mms[mm].scan_seq;
        let vma = &mut self.mms[mm].vmas[vi];
        if from <= vma.start {
            vma.cover_seq = seq;
            vma.cover_next = to;
        } else if from == vma.cover_next {
            vma.cover_next = to;
        }
        if vma.cover_next >= vma.end && vma.cover_next != u64::MAX {
            vma.covered_seq = Some(vma.cover_seq);
            vma.cover_next = u64::MAX;
        }
        self.counters.numa_pte_updates += updated;
        self.counters.numa_huge_pte_updates += huge;
        if updated > 0 {
            cost += tlb_ns;
        }
        (updated, cost)
    }

    /// `task_numa_work()` run by task `ti` at `now`; returns its system time.
    pub(crate) fn task_numa_work(&mut self, ti: usize, now: u64) -> u64 {
        let mm = self.tasks[ti].mm;
        let jiffies = self.sysctl.jiffies(now);
        if self.mms[mm].numa_next_scan == 0 {
            // A fresh mm: the first call only arms the delay.
            self.mms[mm].numa_next_scan =
                jiffies + self.sysctl.msecs_to_jiffies(self.sysctl.scan_delay_ms);
        }
        if jiffies < self.mms[mm].numa_next_scan {
            return 0;
        }
        if self.tasks[ti].period_ms == 0 {
            self.tasks[ti].period_ms = self.task_scan_start_ms(ti);
        }
        // The cmpxchg on numa_next_scan: events are serialized, so the first
        // task to get here in a period wins, with its *own* period, and the
        // others see the new value.
        self.mms[mm].numa_next_scan =
            jiffies + self.sysctl.msecs_to_jiffies(self.tasks[ti].period_ms);
        self.tasks[ti].node_stamp += 2 * self.sysctl.tick_ns();
        self.counters.scan_calls += 1;
        let updates_before = self.counters.numa_pte_updates;
        let seq_start = self.mms[mm].scan_seq;

        let f = self.features;
        let window = self.sysctl.scan_window_pages() as i64;
        let mut pages = window;
        let mut virtpages = window * 8;
        let mut cost = 0u64;
        let mut forced = false;
        let mut skipped = false;
        let mut charged = 0u64;
        let mut charged_stacks = 0u64;
        let mut start;
        let stopped: bool;
        'retry: loop {
            start = self.mms[mm].scan_offset;
            let order_len = self.mms[mm].order.len();
            let mut pos = self.mms[mm]
                .order
                .partition_point(|&i| self.mms[mm].vmas[i].end <= start);
            if pos == order_len {
                self.reset_scan(mm);
                start = 0;
                pos = 0;
            }
            let mut stop_here = false;
            while pos < order_len {
                let vi = self.mms[mm].order[pos];
                pos += 1;
                cost += self.cost.scan_vma_ns;
                match self.mms[mm].vmas[vi].kind {
                    VmaKind::Unsuitable => {
                        self.skips.unsuitable += 1;
                        continue;
                    }
                    // `vma_policy_mof()`: no VMA of the model has a policy
                    // of its own, so the scanning thread's task policy
                    // decides; `MPOL_BIND` lacks `MPOL_F_MOF`. The skip
                    // comes before `numab_state` is allocated and costs no
                    // pages.
                    _ if self.tasks[ti].bind.is_some() => {
                        self.skips.mpol_no_mof += 1;
                        continue;
                    }
                    VmaKind::FileReadOnly => {
                        self.skips.shared_ro += 1;
                        continue;
                    }
                    VmaKind::Inaccessible => {
                        self.skips.inaccessible += 1;
                        continue;
                    }
                    _ => {}
                }
                match self.visit(ti, mm, vi, now, forced, &mut skipped) {
                    Visit::Skip => continue,
                    Visit::Scan { forced_by_select } => {
                        if forced_by_select {
                            self.skips.rfc_forced += 1;
                        }
                        if forced {
                            self.skips.retry_forced += 1;
                        }
                    }
                }
                let (vstart, vend) = (self.mms[mm].vmas[vi].start, self.mms[mm].vmas[vi].end);
                let mut out = false;
                loop {
                    start = start.max(vstart);
                    let want = start + (pages.max(0) as u64) * PAGE;
                    let end = want.div_ceil(HPAGE).saturating_mul(HPAGE).min(vend);
                    let (updated, c) = self.change_prot_numa(ti, mm, vi, start, end, now);
                    cost += c;
                    let range_pages = ((end - start) / PAGE) as i64;
                    if updated > 0 {
                        let c = if f.budget_by_updates {
                            updated as i64
                        } else {
                            range_pages
                        };
                        pages -= c;
                        charged += c as u64;
                        if self.mms[mm].vmas[vi].name.starts_with("stack") {
                            charged_stacks += c as u64;
                        }
                    }
                    virtpages -= range_pages;
                    start = end;
                    if pages <= 0 || virtpages <= 0 {
                        out = true;
                        if f.complete_on_budget_edge && end == vend {
                            let seq = self.mms[mm].scan_seq;
                            let vma = &mut self.mms[mm].vmas[vi];
                            vma.complete_scans += 1;
                            if let Some(st) = vma.numab.as_mut() {
                                st.prev_scan_seq = seq;
                            }
                        }
                        break;
                    }
                    if end == vend {
                        break;
                    }
                }
                if out {
                    stop_here = true;
                    break;
                }
                let seq = self.mms[mm].scan_seq;
                let vma = &mut self.mms[mm].vmas[vi];
                vma.complete_scans += 1;
                if let Some(st) = vma.numab.as_mut() {
                    st.prev_scan_seq = seq;
                }
                if forced {
                    stop_here = true;
                    break;
                }
            }
            if !stop_here && f.retry_pids && !forced && skipped {
                forced = true;
                continue 'retry;
            }
            stopped = stop_here;
            break;
        }
        if stopped {
            self.mms[mm].scan_offset = start;
        } else {
            self.reset_scan(mm);
        }
        self.tasks[ti].node_stamp += 32 * cost;
        self.scans.push(ScanEvent {
            t_ns: now,
            process: mm,
            tid: self.tasks[ti].tid,
            seq_start,
            seq: self.mms[mm].scan_seq,
            offset: self.mms[mm].scan_offset,
            updated: self.counters.numa_pte_updates - updates_before,
            period_ms: self.tasks[ti].period_ms,
            charged,
            charged_stacks,
        });
        cost
    }
}
