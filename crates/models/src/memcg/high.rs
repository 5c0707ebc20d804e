//! The `memory.high` / `memory.swap.high` debt a task pays on its way back
//! to user space (`mem_cgroup_handle_over_high`; cgroup-v2.rst: "memory
//! usage throttle limit ... the processes of the cgroup are throttled and
//! put under heavy reclaim pressure").
//!
//! The debt is the pages the task charged while a group of its hierarchy
//! was over its high limit. Paying it:
//!
//! 1. every group from the task's up to (not including) the root that is
//!    above `memory.high` counts a `high` event and is reclaimed by the
//!    debt (by a cluster on retries);
//! 2. the throttling penalty grows with the square of the largest relative
//!    overage `(usage − high) / high` among those groups (the swap overage
//!    adds its own, counting `memory.swap.events` `high`), scaled by the
//!    debt in batches: `overage² × 1 s / 2^14` per 64 pages, with the
//!    overage in units of `2^-20`, clamped to 2 s per return;
//! 3. a penalty of at most 10 ms is forgiven; while reclaim makes progress
//!    (or for 16 more tries) the task reclaims again instead of sleeping;
//!    then it sleeps the penalty.
//!
//! The kernel counts the penalty in jiffies; the model uses nanoseconds
//! with the same formula, so a penalty is not rounded to a tick.

use super::reclaim::{ScanControl, MAX_RECLAIM_RETRIES, SWAP_CLUSTER_MAX};
use super::ROOT_ID;
use super::{ChargeContext, MemcgError, MemcgId, MemcgTree, MemoryEvent, Reclaim, SwapEvent};

/// Fixed-point precision of an overage (`MEMCG_DELAY_PRECISION_SHIFT`).
const PRECISION_SHIFT: u32 = 20;
/// Scaling of the squared overage (`MEMCG_DELAY_SCALING_SHIFT`).
const SCALING_SHIFT: u32 = 14;
/// The longest sleep per return to user space (2 s).
pub const MAX_HIGH_DELAY_NS: u64 = 2_000_000_000;
/// Penalties up to this are forgiven (a hundredth of a second).
pub const MIN_HIGH_DELAY_NS: u64 = 10_000_000;
/// The nominal charge the penalty is scaled to (`MEMCG_CHARGE_BATCH`).
const NOMINAL_BATCH: u64 = 64;

/// `(usage − high) / high` in units of `2^-20` (0 at or below `high`).
pub fn overage(usage: u64, high: u64) -> u64 {
    if usage <= high {
        return 0;
    }
    let high = high.max(1);
    (u128::from(usage - high) << PRECISION_SHIFT).div_euclid(u128::from(high)) as u64
}

/// The sleep, in ns, for a debt of `nr_pages` at the largest overage
/// `max_overage` (unclamped).
pub fn high_delay_ns(max_overage: u64, nr_pages: u64) -> u64 {
    if max_overage == 0 {
        return 0;
    }
    let sq = u128::from(max_overage) * u128::from(max_overage);
    let per_batch = (sq * 1_000_000_000) >> (PRECISION_SHIFT + SCALING_SHIFT);
    (per_batch * u128::from(nr_pages) / u128::from(NOMINAL_BATCH)).min(u128::from(u64::MAX)) as u64
}

impl MemcgTree {
    /// Groups from `id` up to the root, the root excluded.
    fn below_root(&self, id: MemcgId) -> Vec<MemcgId> {
        self.ancestors(id).filter(|&a| a != ROOT_ID).collect()
    }

    /// Reclaims `nr` pages from every group above its `memory.high` from
    /// `id` up (`reclaim_high`), counting `high` events.
    fn reclaim_high(
        &mut self,
        cpu: usize,
        id: MemcgId,
        nr: u64,
        reclaim: &mut dyn Reclaim,
    ) -> Result<u64, MemcgError> {
        let sc = ScanControl::default();
        let mut got = 0;
        for a in self.below_root(id) {
            let m = &self.node(a)?.memory;
            if m.usage() <= m.high() {
                continue;
            }
            self.record_event(a, MemoryEvent::High);
            got += self.try_to_free_pages(cpu, a, nr, &sc, reclaim);
        }
        Ok(got)
    }

    /// The largest memory overage from `id` up.
    fn memory_max_overage(&self, id: MemcgId) -> u64 {
        self.below_root(id)
            .into_iter()
            .filter_map(|a| self.node(a).ok())
            .map(|n| overage(n.memory.usage(), n.memory.high()))
            .max()
            .unwrap_or(0)
    }

    /// The largest swap overage from `id` up; each group over its
    /// `memory.swap.high` counts a swap `high` event.
    fn swap_max_overage(&mut self, id: MemcgId) -> u64 {
        let mut max = 0;
        for a in self.below_root(id) {
            let Ok(n) = self.node(a) else { continue };
            let o = overage(n.swap.usage(), n.swap.high());
            if o > 0 {
                self.record_swap_event(a, SwapEvent::High);
            }
            max = max.max(o);
        }
        max
    }

    /// Pays the task's `memory.high` debt (see the module docs): reclaim,
    /// then the throttling sleep added to `ctx.sleep_ns`. Called on the
    /// way back to user space, and inside a charge whose debt exceeds a
    /// batch.
    ///
    /// # Errors
    /// Unknown group; internal accounting errors.
    pub fn handle_over_high(
        &mut self,
        cpu: usize,
        id: MemcgId,
        reclaim: &mut dyn Reclaim,
        ctx: &mut ChargeContext,
    ) -> Result<(), MemcgError> {
        let nr = std::mem::take(&mut ctx.pages_over_high);
        if nr == 0 {
            return Ok(());
        }
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut ask = nr;
        loop {
            let reclaimed = self.reclaim_high(cpu, id, ask, reclaim)?;
            let mem = high_delay_ns(self.memory_max_overage(id), nr);
            let swap = high_delay_ns(self.swap_max_overage(id), nr);
            let penalty = mem.saturating_add(swap).min(MAX_HIGH_DELAY_NS);
            if penalty <= MIN_HIGH_DELAY_NS {
                return Ok(());
            }
            if reclaimed > 0 || retries > 0 {
                if reclaimed == 0 {
                    retries -= 1;
                }
                ask = SWAP_CLUSTER_MAX;
                continue;
            }
            ctx.sleep_ns += penalty;
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_is_quadratic_in_the_overage() {
        assert_eq!(overage(30, 30), 0);
        assert_eq!(overage(60, 30), 1 << 20);
        // 100% over: 2^40 × 1 s >> 34 = 64 s per batch.
        assert_eq!(high_delay_ns(1 << 20, 64), 64_000_000_000);
        assert_eq!(high_delay_ns(1 << 19, 64), 16_000_000_000);
        assert_eq!(high_delay_ns(1 << 20, 32), 32_000_000_000);
        // 1 MiB over 30 MiB: ~71 ms.
        let o = overage(31 << 8, 30 << 8);
        assert_eq!(high_delay_ns(o, 64) / 1_000_000, 71);
        assert_eq!(high_delay_ns(0, 64), 0);
    }
}
