//! Hierarchical charging.
//!
//! [`MemcgTree::try_charge_in`] serves a small charge from the CPU's stock;
//! otherwise it charges `max(nr, BATCH)` pages to the page counter of the
//! group and every ancestor, undoing the levels already charged when one
//! refuses. On a refusal it first retries with exactly `nr` pages, then
//! counts a `max` event on the group whose limit was hit, reclaims `nr`
//! pages from that group's subtree ([`super::reclaim`]), and retries if the
//! margin is there; otherwise it drains the subtree's stocks once, retries
//! while reclaim makes progress for a small charge, and up to
//! [`MAX_RECLAIM_RETRIES`] times without. When that fails the charge fails
//! with [`MemcgError::Oom`]; for a charge of up to 8 pages
//! (`PAGE_ALLOC_COSTLY_ORDER`) an `oom` event is counted first, as the
//! kernel invokes the OOM killer only for those (a THP charge fails and
//! the fault falls back to small pages). Killing is the caller's business
//! ([`crate::machine`] has the OOM killer); it retries the charge after a
//! kill, as the kernel does.
//!
//! A successful charge that leaves the group or an ancestor above
//! `memory.high` (or its swap above `memory.swap.high`) adds the charged
//! batch to the task's debt ([`ChargeContext`]), paid on its return to
//! user space ([`super::high`]), or at once when the debt exceeds a batch
//! (a large allocation inside one system call).
//!
//! User pages (anon, file, shmem) are uncharged straight from the
//! counters; kernel memory and socket pages go back through the CPU's
//! stock (`refill_stock`), as the kernel's kmem and skmem uncharges do.

use super::reclaim::{ScanControl, MAX_RECLAIM_RETRIES};
use super::{MemcgError, MemcgId, MemcgTree, MemoryEvent, Reclaim, Stat};

/// The largest charge, in pages, for which a failure invokes the OOM
/// killer (`1 << PAGE_ALLOC_COSTLY_ORDER`).
pub const OOM_MAX_PAGES: u64 = 8;

/// What the charging task carries from a charge to its return to user
/// space (`current->memcg_nr_pages_over_high` and the throttling it got).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChargeContext {
    /// Pages charged while the group or an ancestor was above its high
    /// limit, not yet paid for.
    pub pages_over_high: u64,
    /// Throttling sleep the task owes, in ns: the caller sleeps it (and
    /// sets it back to 0).
    pub sleep_ns: u64,
}

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
    /// Reclaimable slab (`kernel`, `slab_reclaimable`), whole pages.
    SlabReclaimable,
    /// Unreclaimable slab (`kernel`, `slab_unreclaimable`), whole pages.
    SlabUnreclaimable,
    /// Per-CPU memory (`kernel`, `percpu`), whole pages.
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

    /// Whether an uncharge goes back through the CPU's charge stock (kernel
    /// memory and sockets) rather than straight to the counters (user
    /// pages).
    pub fn uncharges_to_stock(self) -> bool {
        !matches!(self, Charge::Anon | Charge::File | Charge::Shmem)
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

    /// Puts `nr` charged pages of `id` in `cpu`'s stock (`refill_stock`),
    /// uncharging what the stock gives back.
    pub(crate) fn refill_stock(
        &mut self,
        cpu: usize,
        id: MemcgId,
        nr: u64,
    ) -> Result<(), MemcgError> {
        for d in self.stocks.refill(cpu, id, nr) {
            self.counters_uncharge(d.memcg, d.nr_pages)?;
        }
        Ok(())
    }

    /// Charges `nr` pages to `id` on `cpu` as one kernel entry: the charge
    /// ([`try_charge_in`](Self::try_charge_in)) and, on the way back to
    /// user space, the `memory.high` debt (whose throttling sleep is
    /// dropped: use `try_charge_in` to see it).
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
        let mut ctx = ChargeContext::default();
        self.try_charge_in(cpu, id, nr, reclaim, &mut ctx)?;
        self.handle_over_high(cpu, id, reclaim, &mut ctx)
    }

    /// Charges `nr` pages to `id` on `cpu` for a task whose debt is `ctx`
    /// (see the module docs).
    ///
    /// # Errors
    /// [`MemcgError::Oom`] when a limit cannot be met by reclaim;
    /// unknown group or CPU.
    pub fn try_charge_in(
        &mut self,
        cpu: usize,
        id: MemcgId,
        nr: u64,
        reclaim: &mut dyn Reclaim,
        ctx: &mut ChargeContext,
    ) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        self.node(id)?;
        if nr == 0 || self.stocks.consume(cpu, id, nr) {
            return Ok(());
        }
        let batch_pages = self.stocks.batch();
        let mut batch = nr.max(batch_pages);
        let mut drained = false;
        let mut retries = MAX_RECLAIM_RETRIES;
        let sc = ScanControl::default();
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
            let reclaimed = self.try_to_free_pages(cpu, over, nr, &sc, reclaim);
            if self.node(over)?.memory.margin() >= nr {
                continue;
            }
            if !drained {
                drained = true;
                self.drain_subtree_stocks(over)?;
                continue;
            }
            if reclaimed > 0 && nr <= OOM_MAX_PAGES {
                continue;
            }
            if retries > 0 {
                retries -= 1;
                continue;
            }
            if nr <= OOM_MAX_PAGES {
                self.record_event(over, MemoryEvent::Oom);
            }
            return Err(MemcgError::Oom {
                memcg: id,
                over,
                nr,
            });
        }
        if batch > nr {
            self.refill_stock(cpu, id, batch - nr)?;
        }
        let over_high = self.ancestors(id).any(|a| {
            self.node(a)
                .is_ok_and(|n| n.memory.usage() > n.memory.high() || n.swap.usage() > n.swap.high())
        });
        if over_high {
            ctx.pages_over_high += batch;
            if ctx.pages_over_high > batch_pages {
                self.handle_over_high(cpu, id, reclaim, ctx)?;
            }
        }
        Ok(())
    }

    /// Drains the stocks (page and object) of every CPU that caches a group
    /// of `id`'s subtree (`drain_all_stock`; the kernel drains remote CPUs
    /// asynchronously, the model at once).
    pub(crate) fn drain_subtree_stocks(&mut self, id: MemcgId) -> Result<(), MemcgError> {
        let sub: std::collections::HashSet<MemcgId> = self.subtree(id).into_iter().collect();
        self.drain_stocks_where(|m| sub.contains(&m))
    }

    /// Drains the stocks that cache `id` itself (a removal).
    pub(crate) fn drain_stocks_of(&mut self, id: MemcgId) -> Result<(), MemcgError> {
        self.drain_stocks_where(|m| m == id)
    }

    /// Drains every CPU's stocks back to the counters (`drain_all_stock`
    /// of the root).
    ///
    /// # Errors
    /// Only on an internal accounting error.
    pub fn drain_all_stocks(&mut self) -> Result<(), MemcgError> {
        self.drain_stocks_where(|_| true)
    }

    fn drain_stocks_where(
        &mut self,
        mut pred: impl FnMut(MemcgId) -> bool,
    ) -> Result<(), MemcgError> {
        for cpu in 0..self.cpus() {
            if self.obj_stocks.cached(cpu).is_some_and(&mut pred) {
                self.drain_obj_stock(cpu)?;
            }
            if self.stocks.get(cpu).cached.is_some_and(&mut pred) {
                if let Some(d) = self.stocks.drain(cpu) {
                    self.counters_uncharge(d.memcg, d.nr_pages)?;
                }
            }
        }
        Ok(())
    }

    /// Uncharges `nr` pages from `id` and its ancestors (user pages freed;
    /// no statistics change: the owner updates those).
    ///
    /// # Errors
    /// [`MemcgError::Underflow`], [`MemcgError::UnknownMemcg`].
    pub fn uncharge(&mut self, id: MemcgId, nr: u64) -> Result<(), MemcgError> {
        self.counters_uncharge(id, nr)
    }

    /// Charges `pages` pages of `kind` on `node` to `id` and updates the
    /// kind's statistics (see [`Charge::stats`]), as one kernel entry.
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
        let mut ctx = ChargeContext::default();
        self.charge_in(cpu, id, node, kind, pages, reclaim, &mut ctx)?;
        self.handle_over_high(cpu, id, reclaim, &mut ctx)
    }

    /// As [`charge`](Self::charge) for a task whose debt is `ctx`.
    ///
    /// # Errors
    /// As [`try_charge_in`](Self::try_charge_in).
    #[allow(clippy::too_many_arguments)]
    pub fn charge_in(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        kind: Charge,
        pages: u64,
        reclaim: &mut dyn Reclaim,
        ctx: &mut ChargeContext,
    ) -> Result<(), MemcgError> {
        self.try_charge_in(cpu, id, pages, reclaim, ctx)?;
        for (stat, d) in kind.stats(pages as i64) {
            self.mod_stat(cpu, id, node, stat, d)?;
        }
        Ok(())
    }

    /// Frees `pages` pages of `kind` charged by [`charge`](Self::charge):
    /// user pages leave the counters at once, kernel and socket pages go
    /// to `cpu`'s stock.
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
        let usage = self.node(id)?.memory.usage();
        if usage < pages {
            return Err(MemcgError::Underflow {
                memcg: id,
                nr: pages,
                usage,
            });
        }
        if kind.uncharges_to_stock() {
            self.refill_stock(cpu, id, pages)?;
        } else {
            self.counters_uncharge(id, pages)?;
        }
        for (stat, d) in kind.stats(-(pages as i64)) {
            self.mod_stat(cpu, id, node, stat, d)?;
        }
        Ok(())
    }
}
