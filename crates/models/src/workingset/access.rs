//! Page accesses: hits, misses, refaults (`workingset_refault` with the
//! policy's flush and the exact-stats oracle), evictions and frees, with
//! the statistics updates the kernel makes for each.

use super::refault::{workingset_lists, workingset_size};
use super::{
    Access, Lru, LruList, LruSizes, Mapping, RefaultFlush, RefaultInfo, Shadow, SlotState,
    WorkingsetError,
};
use crate::memcg::{ChargeContext, MemcgError, MemcgId, MemcgTree, Stat};

/// Pages of a PMD-sized THP.
const THP_PAGES: u64 = 512;

impl Lru {
    pub(crate) fn folio_stats(file: bool, nr: u64) -> [(Stat, bool); 2] {
        let base = if file { Stat::File } else { Stat::Anon };
        let thp = if file { Stat::FileThp } else { Stat::AnonThp };
        [(base, true), (thp, nr >= THP_PAGES)]
    }

    /// Statistics of a folio entering (`sign = 1`) or leaving (`-1`) memory.
    pub(crate) fn account_folio(
        tree: &mut MemcgTree,
        cpu: usize,
        m: &Mapping,
        list: LruList,
        sign: i64,
    ) -> Result<(), MemcgError> {
        let d = sign * m.nr as i64;
        for (stat, on) in Self::folio_stats(m.file, m.nr) {
            if on {
                tree.mod_stat(cpu, m.owner, m.node, stat, d)?;
            }
        }
        tree.mod_stat(cpu, m.owner, m.node, Stat::lru(list.is_active(), m.file), d)
    }

    /// Moves a resident folio between lists (statistics included).
    pub(crate) fn move_folio(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        slot: u32,
        active: bool,
        on_list: bool,
    ) -> Result<(), MemcgError> {
        let s = self.slots[slot as usize];
        let m = self.mappings[s.mapping as usize];
        let from = LruList::of(m.file, s.active);
        let to = LruList::of(m.file, active);
        if on_list {
            self.lv(m.owner, m.node).note_removed(from, m.nr);
        }
        let stamp = s.stamp.wrapping_add(1);
        let sl = &mut self.slots[slot as usize];
        sl.stamp = stamp;
        sl.active = active;
        self.lv(m.owner, m.node).push_head(to, slot, stamp, m.nr);
        if from != to {
            tree.mod_stat(
                cpu,
                m.owner,
                m.node,
                Stat::lru(s.active, m.file),
                -(m.nr as i64),
            )?;
            tree.mod_stat(cpu, m.owner, m.node, Stat::lru(active, m.file), m.nr as i64)?;
        }
        Ok(())
    }

    /// Promotes a resident inactive folio (`folio_activate` +
    /// `workingset_activation`).
    pub(crate) fn activate_resident(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        slot: u32,
    ) -> Result<(), MemcgError> {
        let m = self.mappings[self.slots[slot as usize].mapping as usize];
        self.move_folio(tree, cpu, slot, true, true)?;
        self.slots[slot as usize].referenced = false;
        tree.mod_stat(cpu, m.owner, m.node, Stat::Pgactivate, m.nr as i64)?;
        self.age_nonresident(tree, m.owner, m.node, m.nr);
        Ok(())
    }

    /// A page access on `cpu` (see the module docs) as one kernel entry:
    /// the access, then the `memory.high` debt of a charge paid on the way
    /// back to user space (its throttling sleep dropped).
    ///
    /// # Errors
    /// [`WorkingsetError::UnknownSlot`]; [`MemcgError::Oom`] when the
    /// charge of a missing page fails (the slot is left as it was).
    pub fn access(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        slot: u32,
        flush: &mut dyn RefaultFlush,
    ) -> Result<Access, WorkingsetError> {
        let mut ctx = ChargeContext::default();
        let out = self.access_in(tree, cpu, slot, flush, &mut ctx)?;
        if ctx.pages_over_high > 0 {
            let owner = self.mapping_of(slot)?.owner;
            tree.handle_over_high(cpu, owner, self, &mut ctx)?;
        }
        Ok(out)
    }

    /// A page access on `cpu` by a task whose `memory.high` debt is `ctx`
    /// (paying it is the caller's: [`MemcgTree::handle_over_high`]).
    ///
    /// # Errors
    /// As [`access`](Self::access).
    pub fn access_in(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        slot: u32,
        flush: &mut dyn RefaultFlush,
        ctx: &mut ChargeContext,
    ) -> Result<Access, WorkingsetError> {
        let s = *self
            .slots
            .get(slot as usize)
            .ok_or(WorkingsetError::UnknownSlot(slot))?;
        let m = self.mappings[s.mapping as usize];
        if s.state == SlotState::Resident {
            let sl = &mut self.slots[slot as usize];
            if !m.file || !sl.referenced {
                sl.referenced = true;
                return Ok(Access::Hit { activated: false });
            }
            if sl.active {
                return Ok(Access::Hit { activated: false });
            }
            self.activate_resident(tree, cpu, slot)?;
            return Ok(Access::Hit { activated: true });
        }
        tree.try_charge_in(cpu, m.owner, m.nr, self, ctx)?;
        // Reclaim during the charge cannot have touched this slot: it was
        // not resident.
        let state = self.slots[slot as usize].state;
        if !m.file && matches!(state, SlotState::Shadow(_) | SlotState::Swapped) {
            tree.uncharge_swap(m.owner, m.nr)?;
        }
        tree.mod_stat(cpu, m.owner, m.node, Stat::Pgfault, 1)?;
        let mut out = Access::Miss;
        let mut active = false;
        if let SlotState::Shadow(sh) = state {
            tree.mod_stat(cpu, m.owner, m.node, Stat::Pgmajfault, 1)?;
            let info = self.workingset_refault(tree, cpu, &m, sh, flush)?;
            active = info.activate;
            self.slots[slot as usize].workingset = info.activate && info.workingset;
            out = Access::Refault(info);
        } else if state == SlotState::Swapped {
            tree.mod_stat(cpu, m.owner, m.node, Stat::Pgmajfault, 1)?;
        }
        let stamp = s.stamp.wrapping_add(1);
        let sl = &mut self.slots[slot as usize];
        sl.stamp = stamp;
        sl.active = active;
        sl.referenced = true;
        if !matches!(out, Access::Refault(_)) {
            sl.workingset = false;
        }
        self.set_state(slot, SlotState::Resident);
        let list = LruList::of(m.file, active);
        self.lv(m.owner, m.node).push_head(list, slot, stamp, m.nr);
        Self::account_folio(tree, cpu, &m, list, 1)?;
        Ok(out)
    }

    /// `workingset_refault` for a folio of mapping `m` whose slot held `sh`.
    pub(crate) fn workingset_refault(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        m: &Mapping,
        sh: Shadow,
        flush: &mut dyn RefaultFlush,
    ) -> Result<RefaultInfo, WorkingsetError> {
        let outer = tree.take_work();
        let nr = m.nr;
        let refault_stat = if m.file {
            Stat::WorkingsetRefaultFile
        } else {
            Stat::WorkingsetRefaultAnon
        };
        tree.mod_stat(cpu, m.owner, m.node, refault_stat, nr as i64)?;
        let up = self.layout.unpack(sh);
        let mut info = RefaultInfo {
            file: m.file,
            nr,
            memcg: m.owner,
            eviction_memcg: None,
            flush: None,
            distance: 0,
            workingset_size: 0,
            exact_workingset_size: 0,
            sizes: Default::default(),
            exact_sizes: Default::default(),
            swap: false,
            activate: false,
            exact_activate: false,
            workingset: up.is_some_and(|u| u.workingset),
            update_work: Default::default(),
        };
        self.counters.refaults += 1;
        if let Some(up) = up.filter(|u| tree.exists(MemcgId(u.memcg))) {
            let ev = MemcgId(up.memcg);
            let node = (up.node as usize).min(self.nodes - 1);
            info.eviction_memcg = Some(ev);
            // Swap is the page counters', not the statistics': known
            // before the flush, which reads what the size needs.
            info.swap = tree.nr_swap_pages(ev) > 0;
            let mut lists = [LruList::ActiveFile; 4];
            let mut n = 0;
            for l in workingset_lists(m.file, info.swap) {
                lists[n] = l;
                n += 1;
            }
            info.flush = flush.flush_lruvec(tree, ev, node, &lists[..n]);
            let age = self.nonresident_age(ev, node);
            info.distance = self.layout.refault_distance(age, up.eviction);
            let stats = LruSizes {
                inactive_anon: tree.stat_pages(ev, Stat::InactiveAnon, Some(node))?,
                active_anon: tree.stat_pages(ev, Stat::ActiveAnon, Some(node))?,
                inactive_file: tree.stat_pages(ev, Stat::InactiveFile, Some(node))?,
                active_file: tree.stat_pages(ev, Stat::ActiveFile, Some(node))?,
            };
            let exact = self.exact_sizes(tree, ev, node);
            info.sizes = stats;
            info.exact_sizes = exact;
            info.workingset_size = workingset_size(&stats, m.file, info.swap);
            info.exact_workingset_size = workingset_size(&exact, m.file, info.swap);
            info.activate = info.distance <= info.workingset_size;
            info.exact_activate = info.distance <= info.exact_workingset_size;
        }
        if info.activate {
            self.counters.activations += 1;
            self.age_nonresident(tree, m.owner, m.node, nr);
            let (act, res) = if m.file {
                (Stat::WorkingsetActivateFile, Stat::WorkingsetRestoreFile)
            } else {
                (Stat::WorkingsetActivateAnon, Stat::WorkingsetRestoreAnon)
            };
            tree.mod_stat(cpu, m.owner, m.node, act, nr as i64)?;
            if info.workingset {
                tree.mod_stat(cpu, m.owner, m.node, res, nr as i64)?;
            }
        }
        if info.mismatch() {
            self.counters.mismatches += 1;
        }
        info.update_work = tree.take_work();
        tree.work = outer;
        Ok(info)
    }

    /// `workingset_eviction` of the resident folio in `slot`, already taken
    /// off its list, on behalf of reclaim of `target`. Anonymous folios
    /// need swap; returns `false` (nothing changed) without it.
    pub(crate) fn evict(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        slot: u32,
        target: MemcgId,
    ) -> Result<bool, MemcgError> {
        let s = self.slots[slot as usize];
        let m = self.mappings[s.mapping as usize];
        if !m.file && !tree.try_charge_swap(m.owner, m.nr) {
            return Ok(false);
        }
        let eviction = self.nonresident_age(target, m.node);
        self.age_nonresident(tree, target, m.node, m.nr);
        let sh = self
            .layout
            .pack(target.0, m.node as u32, eviction, s.workingset);
        let sl = &mut self.slots[slot as usize];
        sl.stamp = sl.stamp.wrapping_add(1);
        sl.active = false;
        sl.referenced = false;
        self.set_state(slot, SlotState::Shadow(sh));
        Self::account_folio(tree, cpu, &m, LruList::of(m.file, s.active), -1)?;
        if !m.file && m.nr >= THP_PAGES {
            // Swapped out whole, not split (`THP_SWPOUT`).
            tree.mod_stat(cpu, m.owner, m.node, Stat::ThpSwpout, 1)?;
        }
        tree.uncharge(m.owner, m.nr)?;
        self.counters.evictions += 1;
        Ok(true)
    }

    /// Frees whatever `slot` holds (truncate, munmap): a resident folio is
    /// uncharged, a swapped page gives its swap back.
    ///
    /// # Errors
    /// [`WorkingsetError::UnknownSlot`], accounting errors.
    pub fn free(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        slot: u32,
    ) -> Result<(), WorkingsetError> {
        let s = *self
            .slots
            .get(slot as usize)
            .ok_or(WorkingsetError::UnknownSlot(slot))?;
        let m = self.mappings[s.mapping as usize];
        match s.state {
            SlotState::Empty => return Ok(()),
            SlotState::Resident => {
                let list = LruList::of(m.file, s.active);
                self.lv(m.owner, m.node).note_removed(list, m.nr);
                self.slots[slot as usize].stamp = s.stamp.wrapping_add(1);
                Self::account_folio(tree, cpu, &m, list, -1)?;
                tree.uncharge(m.owner, m.nr)?;
            }
            SlotState::Shadow(_) | SlotState::Swapped => {
                if !m.file {
                    tree.uncharge_swap(m.owner, m.nr)?;
                }
            }
        }
        self.set_state(slot, SlotState::Empty);
        Ok(())
    }
}
