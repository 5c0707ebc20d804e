//! Limits, swap accounting and `memory.events` of each group.

use super::{EventCounts, MemcgError, MemcgId, MemcgTree, MemoryEvent, PageCounter, ROOT_ID};
use hierstat::PAGE_SIZE;

impl MemcgTree {
    /// The page counter of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory(&self, id: MemcgId) -> Result<&PageCounter, MemcgError> {
        Ok(&self.node(id)?.memory)
    }

    /// `memory.current` in bytes.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_current(&self, id: MemcgId) -> Result<u64, MemcgError> {
        Ok(self.node(id)?.memory.usage() * PAGE_SIZE)
    }

    /// Sets `memory.max` in pages. Usage above it is reclaimed by the next
    /// charge (see [`MemcgTree::try_charge`]).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_max(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.memory.set_max(pages);
        Ok(())
    }

    /// Sets `memory.high` in pages.
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

    /// Sets `memory.swap.max` in pages.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn set_swap_max(&mut self, id: MemcgId, pages: u64) -> Result<(), MemcgError> {
        self.node_mut(id)?.swap.set_max(pages);
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
    /// swapped out); `false` if the space or a `swap.max` does not allow it.
    pub fn try_charge_swap(&mut self, id: MemcgId, nr: u64) -> bool {
        if self.nr_swap_pages(id) < nr {
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

    /// Pages held in charge stocks for `id`.
    pub fn stock_pages(&self, id: MemcgId) -> u64 {
        self.stocks.held(id)
    }
}
