//! Limits, protections, swap accounting, `memory.events`, and the writes
//! that reclaim: `memory.max` and `memory.high` (reclaim down to the new
//! limit) and `memory.reclaim`.

use super::reclaim::{ScanControl, MAX_RECLAIM_RETRIES, SWAP_CLUSTER_MAX};
use super::{
    EventCounts, MemcgError, MemcgId, MemcgTree, MemoryEvent, PageCounter, Reclaim, SwapEvent,
    SwapEventCounts, ROOT_ID,
};
use hierstat::PAGE_SIZE;

impl MemcgTree {
    /// The page counter of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory(&self, id: MemcgId) -> Result<&PageCounter, MemcgError> {
        Ok(&self.node(id)?.memory)
    }

    /// The swap counter of `id` (`memory.swap.*`).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn swap(&self, id: MemcgId) -> Result<&PageCounter, MemcgError> {
        Ok(&self.node(id)?.swap)
    }

    /// `memory.current` in bytes.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_current(&self, id: MemcgId) -> Result<u64, MemcgError> {
        Ok(self.node(id)?.memory.usage() * PAGE_SIZE)
    }

    /// Sets `memory.max` in pages without reclaiming (usage above it is
    /// reclaimed by the next charge); see [`write_max`](Self::write_max).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_max(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_max(pages);
        Ok(())
    }

    /// Sets `memory.high` in pages without reclaiming; see
    /// [`write_high`](Self::write_high).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_high(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_high(pages);
        Ok(())
    }

    /// Sets `memory.low` in pages.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_low(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_low(pages);
        Ok(())
    }

    /// Sets `memory.min` in pages.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_min(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_min(pages);
        Ok(())
    }

    /// Sets `memory.swap.max` in pages.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_swap_max(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.swap.set_max(pages);
        Ok(())
    }

    /// Sets `memory.swap.high` in pages (throttles the group's allocations
    /// while its swap usage is above it; never reclaims).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_swap_high(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.swap.set_high(pages);
        Ok(())
    }

    /// Sets `memory.oom.group`: the OOM killer kills the whole group.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_oom_group(&mut self, id: MemcgId, on: bool) -> Result<(), MemcgError> {
        self.node_mut(id)?.oom_group = on;
        Ok(())
    }

    /// `memory.oom.group` of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn oom_group(&self, id: MemcgId) -> Result<bool, MemcgError> {
        Ok(self.node(id)?.oom_group)
    }

    /// Writes `memory.max`: sets it, then drains the group's stocks once
    /// and reclaims until usage fits, giving up after
    /// [`MAX_RECLAIM_RETRIES`] reclaims without progress. Returns whether
    /// usage fits; if not, an `oom` event was counted and the caller's OOM
    /// killer may kill and call [`shrink_to_max`](Self::shrink_to_max)
    /// again (`memory_max_write`).
    ///
    /// # Errors
    /// Unknown group or CPU; internal accounting errors.
    pub fn write_max(
        &mut self,
        cpu: usize,
        id: MemcgId,
        pages: u64,
        reclaim: &mut dyn Reclaim,
    ) -> Result<bool, MemcgError> {
        self.check_cpu(cpu)?;
        self.set_max(id, pages)?;
        self.shrink_to_max(cpu, id, reclaim)
    }

    /// Reclaims `id` down to its `memory.max` (see
    /// [`write_max`](Self::write_max)).
    ///
    /// # Errors
    /// Unknown group; internal accounting errors.
    pub fn shrink_to_max(
        &mut self,
        cpu: usize,
        id: MemcgId,
        reclaim: &mut dyn Reclaim,
    ) -> Result<bool, MemcgError> {
        let sc = ScanControl::default();
        let mut drained = false;
        let mut retries = MAX_RECLAIM_RETRIES;
        loop {
            let m = &self.node(id)?.memory;
            let (usage, max) = (m.usage(), m.max());
            if usage <= max {
                return Ok(true);
            }
            if !drained {
                drained = true;
                self.drain_subtree_stocks(id)?;
                continue;
            }
            if retries == 0 {
                self.record_event(id, MemoryEvent::Oom);
                return Ok(false);
            }
            if self.try_to_free_pages(cpu, id, usage - max, &sc, reclaim) == 0 {
                retries -= 1;
            }
        }
    }

    /// Writes `memory.high`: sets it, then drains the group's stocks once
    /// and reclaims until usage fits, giving up after
    /// [`MAX_RECLAIM_RETRIES`] reclaims without progress
    /// (`memory_high_write`). Never kills.
    ///
    /// # Errors
    /// Unknown group or CPU; internal accounting errors.
    pub fn write_high(
        &mut self,
        cpu: usize,
        id: MemcgId,
        pages: u64,
        reclaim: &mut dyn Reclaim,
    ) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        self.set_high(id, pages)?;
        let sc = ScanControl::default();
        let mut drained = false;
        let mut retries = MAX_RECLAIM_RETRIES;
        loop {
            let usage = self.node(id)?.memory.usage();
            if usage <= pages {
                return Ok(());
            }
            if !drained {
                drained = true;
                self.drain_subtree_stocks(id)?;
                continue;
            }
            if self.try_to_free_pages(cpu, id, usage - pages, &sc, reclaim) == 0 {
                if retries == 0 {
                    return Ok(());
                }
                retries -= 1;
            }
        }
    }

    /// Writes `memory.reclaim`: reclaims `pages` pages from `id`'s subtree
    /// in batches of a quarter of what is left (at least a cluster), the
    /// group's own protection ignored, its descendants' respected;
    /// `swappiness` (0..=200) replaces `vm.swappiness`, 0 reclaiming page
    /// cache only (`memory_reclaim`).
    ///
    /// # Errors
    /// [`MemcgError::Again`] when reclaim stalled before `pages` were
    /// reclaimed (after [`MAX_RECLAIM_RETRIES`] tries without progress);
    /// [`MemcgError::InvalidValue`] for a swappiness above 200; unknown
    /// group or CPU.
    pub fn memory_reclaim(
        &mut self,
        cpu: usize,
        id: MemcgId,
        pages: u64,
        swappiness: Option<u32>,
        reclaim: &mut dyn Reclaim,
    ) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        self.node(id)?;
        let mut sc = ScanControl {
            proactive: true,
            ..ScanControl::default()
        };
        if let Some(s) = swappiness {
            if s > 200 {
                return Err(MemcgError::InvalidValue(format!("swappiness={s}")));
            }
            sc.swappiness = s;
        }
        let mut got = 0;
        let mut retries = MAX_RECLAIM_RETRIES;
        while got < pages {
            let batch = ((pages - got) / 4).max(SWAP_CLUSTER_MAX);
            let r = self.try_to_free_pages(cpu, id, batch, &sc, reclaim);
            if r == 0 {
                if retries == 0 {
                    return Err(MemcgError::Again);
                }
                retries -= 1;
            }
            got += r;
        }
        Ok(())
    }

    /// Swap pages `id` may still use: the free swap space, capped by
    /// `swap.max − swap.current` of the group and every ancestor below the
    /// root (`mem_cgroup_get_nr_swap_pages`).
    pub fn nr_swap_pages(&self, id: MemcgId) -> u64 {
        let mut n = self.swap_total.saturating_sub(self.swap_used);
        for a in self.ancestors(id) {
            if a == ROOT_ID {
                break;
            }
            if let Ok(node) = self.node(a) {
                n = n.min(node.swap.margin());
            }
        }
        n
    }

    /// Charges `nr` swap pages to `id` and its ancestors (an anonymous page
    /// swapped out); `false` if the space or a `swap.max` does not allow
    /// it. A refusal by `swap.max` counts swap `max` and `fail` events on
    /// the group whose limit refused, a lack of space a `fail` event on
    /// `id`.
    pub fn try_charge_swap(&mut self, id: MemcgId, nr: u64) -> bool {
        let chain: Vec<_> = self.ancestors(id).filter(|&a| a != ROOT_ID).collect();
        if let Some(&over) = chain
            .iter()
            .find(|&&a| self.node(a).is_ok_and(|n| n.swap.margin() < nr))
        {
            self.record_swap_event(over, SwapEvent::Max);
            self.record_swap_event(over, SwapEvent::Fail);
            return false;
        }
        if self.swap_total.saturating_sub(self.swap_used) < nr {
            self.record_swap_event(id, SwapEvent::Fail);
            return false;
        }
        let chain: Vec<_> = self.ancestors(id).collect();
        for a in chain {
            if let Ok(n) = self.node_mut(a) {
                n.swap.force_charge(nr);
            }
        }
        self.swap_used += nr;
        true
    }

    /// Releases `nr` swap pages of `id` (a page swapped in or freed).
    ///
    /// # Errors
    /// [`MemcgError::Underflow`] if `id` has fewer swap pages charged.
    pub fn uncharge_swap(&mut self, id: MemcgId, nr: u64) -> Result<(), MemcgError> {
        let usage = self.node(id)?.swap.usage();
        if usage < nr {
            return Err(MemcgError::Underflow {
                memcg: id,
                nr,
                usage,
            });
        }
        let chain: Vec<_> = self.ancestors(id).collect();
        for a in chain {
            if let Ok(n) = self.node_mut(a) {
                n.swap.uncharge(nr);
            }
        }
        self.swap_used -= nr;
        Ok(())
    }

    /// Swap pages charged to `id` (`memory.swap.current` / `PAGE_SIZE`).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn swap_current(&self, id: MemcgId) -> Result<u64, MemcgError> {
        Ok(self.node(id)?.swap.usage())
    }

    /// Counts `event` on `id` (local) and on `id` and its ancestors below the
    /// root (hierarchical).
    pub fn record_event(&mut self, id: MemcgId, event: MemoryEvent) {
        if let Ok(n) = self.node_mut(id) {
            n.events_local.inc(event);
        }
        let chain: Vec<_> = self.ancestors(id).collect();
        for a in chain {
            if a == ROOT_ID && a != id {
                break;
            }
            if let Ok(n) = self.node_mut(a) {
                n.events.inc(event);
            }
        }
    }

    /// Counts a swap `event` on `id` and its ancestors below the root.
    pub fn record_swap_event(&mut self, id: MemcgId, event: SwapEvent) {
        let chain: Vec<_> = self.ancestors(id).collect();
        for a in chain {
            if a == ROOT_ID && a != id {
                break;
            }
            if let Ok(n) = self.node_mut(a) {
                n.swap_events.inc(event);
            }
        }
    }

    /// Records that the OOM killer killed a task of `id` (`oom_kill`).
    pub fn oom_kill(&mut self, id: MemcgId) {
        self.record_event(id, MemoryEvent::OomKill);
    }

    /// `memory.events` counts of `id` (hierarchical).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn events(&self, id: MemcgId) -> Result<EventCounts, MemcgError> {
        Ok(self.node(id)?.events)
    }

    /// `memory.events.local` counts of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn events_local(&self, id: MemcgId) -> Result<EventCounts, MemcgError> {
        Ok(self.node(id)?.events_local)
    }

    /// `memory.swap.events` counts of `id` (hierarchical).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn swap_events(&self, id: MemcgId) -> Result<SwapEventCounts, MemcgError> {
        Ok(self.node(id)?.swap_events)
    }

    /// Pages held in charge stocks for `id`.
    pub fn stock_pages(&self, id: MemcgId) -> u64 {
        self.stocks.held(id)
    }
}
