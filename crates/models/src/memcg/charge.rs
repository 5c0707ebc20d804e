//! Hierarchical charging.
//!
//! [`MemcgTree::try_charge`] serves a small charge from the CPU's stock;
//! otherwise it charges `max(nr, BATCH)` pages to the page counter of the
//! group and every ancestor, undoing the levels already charged when one
//! refuses. On a refusal it first retries with exactly `nr` pages, then
//! counts a `max` event on the group whose limit was hit, reclaims from that
//! group's subtree (through [`Reclaim`]), drains the subtree's stocks once,
//! and retries while reclaim makes progress. When nothing more can be
//! reclaimed the charge fails with [`MemcgError::Oom`] after counting an
//! `oom` event: never silently. After a successful charge every ancestor
//! above `memory.high` counts a `high` event and is reclaimed back under it.
//!
//! Reclaim walks the subtree in preorder and skips groups at or below
//! `memory.low` unless nothing else was reclaimable; reclaiming a protected
//! group counts a `low` event on it.

use super::{MemcgError, MemcgId, MemcgTree, MemoryEvent, Stat};

/// Frees pages of a group when a charge needs room.
pub trait Reclaim {
    /// Reclaims up to `nr` pages charged to `group` itself (not its
    /// children), on behalf of a charge that hit `target`'s limit, running on
    /// `cpu`. Freed pages must be uncharged through
    /// [`MemcgTree::uncharge`] (and their statistics updated). Returns the
    /// number of pages freed.
    fn reclaim(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        group: MemcgId,
        target: MemcgId,
        nr: u64,
    ) -> u64;
}

/// A [`Reclaim`] that can free nothing: every charge over a limit fails
/// with an OOM once the stocks are drained.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReclaim;

impl Reclaim for NoReclaim {
    fn reclaim(&mut self, _: &mut MemcgTree, _: usize, _: MemcgId, _: MemcgId, _: u64) -> u64 {
        0
    }
}

/// Reclaim rounds without progress before a charge gives up
/// (`MAX_RECLAIM_RETRIES`).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Least pages a reclaim round asks for (`SWAP_CLUSTER_MAX`).
pub const RECLAIM_MIN: u64 = 32;

/// What a page charged through [`MemcgTree::charge`] is, which decides the
/// statistics it updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Charge {
    /// Anonymous memory (`anon`, on the inactive anon list).
    Anon,
    /// Page cache (`file`, on the inactive file list).
    File,
    /// tmpfs/shm (`shmem` and `file`, on the swap-backed inactive anon list).
    Shmem,
    /// Kernel stacks (`kernel`, `kernel_stack`).
    KernelStack,
    /// Page tables (`kernel`, `pagetables`).
    Pagetables,
    /// Reclaimable slab (`kernel`, `slab_reclaimable`).
    SlabReclaimable,
    /// Unreclaimable slab (`kernel`, `slab_unreclaimable`).
    SlabUnreclaimable,
    /// Per-CPU memory (`kernel`, `percpu`).
    Percpu,
    /// Socket buffers (`sock`, not kernel memory in memcg's accounting).
    Sock,
    /// vmalloc (`kernel`, `vmalloc`).
    Vmalloc,
}

impl Charge {
    /// The statistics updates of `pages` pages of this kind: `(stat, delta)`.
    pub fn stats(self, pages: i64) -> Vec<(Stat, i64)> {
        let bytes = pages * hierstat::PAGE_SIZE as i64;
        match self {
            Charge::Anon => vec![(Stat::Anon, pages), (Stat::InactiveAnon, pages)],
            Charge::File => vec![(Stat::File, pages), (Stat::InactiveFile, pages)],
            Charge::Shmem => vec![
                (Stat::Shmem, pages),
                (Stat::File, pages),
                (Stat::InactiveAnon, pages),
            ],
            Charge::KernelStack => vec![(Stat::Kernel, pages), (Stat::KernelStack, bytes)],
            Charge::Pagetables => vec![(Stat::Kernel, pages), (Stat::Pagetables, pages)],
            Charge::SlabReclaimable => {
                vec![(Stat::Kernel, pages), (Stat::SlabReclaimable, bytes)]
            }
            Charge::SlabUnreclaimable => {
                vec![(Stat::Kernel, pages), (Stat::SlabUnreclaimable, bytes)]
            }
            Charge::Percpu => vec![(Stat::Kernel, pages), (Stat::Percpu, bytes)],
            Charge::Sock => vec![(Stat::Sock, pages)],
            Charge::Vmalloc => vec![(Stat::Kernel, pages), (Stat::Vmalloc, pages)],
        }
    }
}

impl MemcgTree {
    /// Charges `nr` pages to the counters of `id` and every ancestor, or
    /// charges nothing and returns the first group (from `id` up) whose
    /// `max` refused.
    fn counters_try_charge(&mut self, id: MemcgId, nr: u64) -> Result<(), MemcgId> {
        let chain: Vec<MemcgId> = self.ancestors(id).collect();
        for (i, &a) in chain.iter().enumerate() {
            let ok = self.nodes_mut_counter(a).is_some_and(|c| c.try_charge(nr));
            if !ok {
                for &b in &chain[..i] {
                    if let Some(c) = self.nodes_mut_counter(b) {
                        c.uncharge(nr);
                    }
                }
                return Err(a);
            }
        }
        Ok(())
    }

    fn nodes_mut_counter(&mut self, id: MemcgId) -> Option<&mut super::PageCounter> {
        self.node_mut(id).ok().map(|n| &mut n.memory)
    }

    /// Removes `nr` pages from the counters of `id` and its ancestors.
    pub(crate) fn counters_uncharge(&mut self, id: MemcgId, nr: u64) -> Result<(), MemcgError> {
        let usage = self.node(id)?.memory.usage();
        if usage < nr {
            return Err(MemcgError::Underflow {
                memcg: id,
                nr,
                usage,
            });
        }
        let chain: Vec<MemcgId> = self.ancestors(id).collect();
        for a in chain {
            if let Some(c) = self.nodes_mut_counter(a) {
                c.uncharge(nr);
            }
        }
        Ok(())
    }

    /// Charges `nr` pages to `id` on `cpu` (see the module docs).
    ///
    /// # Errors
    /// [`MemcgError::Oom`] when a limit cannot be met by reclaim;
    /// unknown group or CPU.
    pub fn try_charge(
        &mut self,
        cpu: usize,
        id: MemcgId,
        nr: u64,
        reclaim: &mut dyn Reclaim,
    ) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        self.node(id)?;
        if nr == 0 || self.stocks.consume(cpu, id, nr) {
            return Ok(());
        }
        let mut batch = nr.max(self.stocks.batch());
        let mut drained = false;
        let mut retries = MAX_RECLAIM_RETRIES;
        loop {
            let over = match self.counters_try_charge(id, batch) {
                Ok(()) => break,
                Err(over) => over,
            };
            if batch > nr {
                batch = nr;
                continue;
            }
            self.record_event(over, MemoryEvent::Max);
            // Reclaim what the charge needs (at least a cluster), plus any
            // excess left by a lowered `memory.max`.
            let m = &self.node(over)?.memory;
            let need = (m.usage() + nr).saturating_sub(m.max()).max(RECLAIM_MIN);
            let reclaimed = self.reclaim_subtree(cpu, over, need, reclaim);
            if self.node(over)?.memory.margin() >= nr {
                continue;
            }
            if !drained {
                drained = true;
                self.drain_subtree_stocks(over)?;
                continue;
            }
            if reclaimed > 0 && retries > 0 {
                retries -= 1;
                continue;
            }
            self.record_event(over, MemoryEvent::Oom);
            return Err(MemcgError::Oom {
                memcg: id,
                over,
                nr,
            });
        }
        if batch > nr {
            for d in self.stocks.refill(cpu, id, batch - nr) {
                self.counters_uncharge(d.memcg, d.nr_pages)?;
            }
        }
        self.reclaim_high(cpu, id, reclaim)?;
        Ok(())
    }

    /// Every ancestor above `memory.high` counts a `high` event and is
    /// reclaimed towards it.
    fn reclaim_high(
        &mut self,
        cpu: usize,
        id: MemcgId,
        reclaim: &mut dyn Reclaim,
    ) -> Result<(), MemcgError> {
        let chain: Vec<MemcgId> = self.ancestors(id).collect();
        for a in chain {
            let m = &self.node(a)?.memory;
            if m.usage() > m.high() {
                let excess = m.usage() - m.high();
                self.record_event(a, MemoryEvent::High);
                self.reclaim_subtree(cpu, a, excess, reclaim);
            }
        }
        Ok(())
    }

    fn drain_subtree_stocks(&mut self, id: MemcgId) -> Result<(), MemcgError> {
        let sub: std::collections::HashSet<MemcgId> = self.subtree(id).into_iter().collect();
        for d in self.stocks.drain_where(|m| sub.contains(&m)) {
            self.counters_uncharge(d.memcg, d.nr_pages)?;
        }
        Ok(())
    }

    /// Drains every CPU's stock back to the counters (`drain_all_stock`).
    ///
    /// # Errors
    /// Only on an internal accounting error.
    pub fn drain_all_stocks(&mut self) -> Result<(), MemcgError> {
        for d in self.stocks.drain_where(|_| true) {
            self.counters_uncharge(d.memcg, d.nr_pages)?;
        }
        Ok(())
    }

    /// Reclaims up to `nr` pages from `target`'s subtree; returns the pages
    /// freed (see the module docs for `memory.low`).
    pub fn reclaim_subtree(
        &mut self,
        cpu: usize,
        target: MemcgId,
        nr: u64,
        reclaim: &mut dyn Reclaim,
    ) -> u64 {
        let groups = self.subtree(target);
        let mut got = 0;
        for respect_low in [true, false] {
            for &g in &groups {
                if got >= nr {
                    break;
                }
                let protected = self
                    .node(g)
                    .map(|n| n.memory.usage() <= n.memory.low() && n.memory.low() > 0)
                    .unwrap_or(false);
                if protected && respect_low {
                    continue;
                }
                let freed = reclaim.reclaim(self, cpu, g, target, nr - got);
                if protected && freed > 0 {
                    self.record_event(g, MemoryEvent::Low);
                }
                got += freed;
            }
            if got > 0 {
                break;
            }
        }
        got
    }

    /// Uncharges `nr` pages from `id` and its ancestors (pages freed; no
    /// statistics change: the owner updates those).
    ///
    /// # Errors
    /// [`MemcgError::Underflow`], [`MemcgError::UnknownMemcg`].
    pub fn uncharge(&mut self, id: MemcgId, nr: u64) -> Result<(), MemcgError> {
        self.counters_uncharge(id, nr)
    }

    /// Charges `pages` pages of `kind` on `node` to `id` and updates the
    /// kind's statistics (see [`Charge::stats`]).
    ///
    /// # Errors
    /// As [`try_charge`](Self::try_charge); on error no statistic changes.
    pub fn charge(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        kind: Charge,
        pages: u64,
        reclaim: &mut dyn Reclaim,
    ) -> Result<(), MemcgError> {
        self.try_charge(cpu, id, pages, reclaim)?;
        for (stat, d) in kind.stats(pages as i64) {
            self.mod_stat(cpu, id, node, stat, d)?;
        }
        Ok(())
    }

    /// Frees `pages` pages of `kind` charged by [`charge`](Self::charge).
    ///
    /// # Errors
    /// [`MemcgError::Underflow`] (nothing changes), unknown group or CPU.
    pub fn uncharge_kind(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        kind: Charge,
        pages: u64,
    ) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        self.counters_uncharge(id, pages)?;
        for (stat, d) in kind.stats(-(pages as i64)) {
            self.mod_stat(cpu, id, node, stat, d)?;
        }
        Ok(())
    }
}
