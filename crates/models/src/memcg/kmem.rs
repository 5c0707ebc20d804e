//! Byte-granular kernel memory: slab objects and per-CPU allocations
//! charged through the per-CPU object stock, and caches of reclaimable
//! objects with their shrinker.
//!
//! **Charging bytes** (`obj_cgroup_charge`): a CPU's object stock caches
//! charged-but-unused bytes of one group. An object is served from it when
//! it holds enough bytes of that group; otherwise whole pages are charged
//! through the page path ([`MemcgTree::try_charge_in`], counted in
//! `kernel`) and the rest of the last page goes to the stock. Freed bytes
//! go back to the stock; whole pages beyond a page of bytes leave it
//! (uncharged from `kernel` and put in the page stock, `refill_stock`).
//! When a stock switches groups, its whole pages are given back and the
//! sub-page remainder is kept by the group (`nr_charged_bytes`) for the
//! next stock that caches it.
//!
//! **Slab statistics** are batched in the same stock (`mod_objcg_state`):
//! a CPU accumulates one group's and one node's `slab_reclaimable` and
//! `slab_unreclaimable` deltas and hands them to the statistics engine
//! when one exceeds a page, or when the stock switches group or node.
//! `percpu` is updated directly, as the kernel does.
//!
//! Each slab object is charged with the objcg pointer its slab keeps for
//! it (8 bytes, `obj_full_size`); a per-CPU allocation of `s` bytes a CPU
//! costs `s × cpus` plus a pointer per 4 bytes (`pcpu_obj_full_size`).
//!
//! **Reclaimable caches** ([`MemcgTree::register_cache`]): objects such as
//! negative dentries, each made of one or more slab objects, kept per
//! (group, node) as on the kernel's memcg-aware `list_lru`s and freed by
//! the shrinker ([`MemcgTree::shrink_slab`]) during reclaim. A removed
//! group's objects move to its parent (`memcg_reparent_list_lrus`).

use super::{ChargeContext, MemcgError, MemcgId, MemcgTree, Reclaim, Stat};
use hierstat::PAGE_SIZE;
use std::collections::BTreeMap;

/// Bytes a slab keeps per object for its cgroup (`sizeof(struct
/// obj_cgroup *)`), charged with the object.
pub const OBJCG_POINTER_BYTES: u64 = 8;

/// Smallest per-CPU allocation unit (`PCPU_MIN_ALLOC_SIZE`).
const PCPU_MIN_ALLOC_SIZE: u64 = 4;

/// What a byte-granular kernel allocation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjKind {
    /// An object of a reclaimable slab cache (`slab_reclaimable`).
    SlabReclaimable,
    /// An object of an unreclaimable slab cache (`slab_unreclaimable`).
    SlabUnreclaimable,
    /// A per-CPU allocation (`percpu`).
    Percpu,
}

impl ObjKind {
    /// The `memory.stat` item it is counted in.
    pub fn stat(self) -> Stat {
        match self {
            ObjKind::SlabReclaimable => Stat::SlabReclaimable,
            ObjKind::SlabUnreclaimable => Stat::SlabUnreclaimable,
            ObjKind::Percpu => Stat::Percpu,
        }
    }
}

/// Bytes charged for a per-CPU allocation of `size` bytes on each of
/// `cpus` CPUs (`pcpu_obj_full_size`).
pub fn percpu_full_size(size: u64, cpus: usize) -> u64 {
    size * cpus as u64 + size / PCPU_MIN_ALLOC_SIZE * OBJCG_POINTER_BYTES
}

/// One CPU's object stock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ObjStock {
    cached: Option<MemcgId>,
    node: usize,
    nr_bytes: u64,
    slab_reclaimable: i64,
    slab_unreclaimable: i64,
}

/// The object stocks of every CPU.
#[derive(Debug, Clone)]
pub struct ObjStocks {
    cpus: Vec<ObjStock>,
}

impl ObjStocks {
    /// Empty stocks for `cpus` CPUs.
    pub fn new(cpus: usize) -> Self {
        ObjStocks {
            cpus: vec![ObjStock::default(); cpus],
        }
    }

    /// The group `cpu`'s stock caches.
    pub fn cached(&self, cpu: usize) -> Option<MemcgId> {
        self.cpus[cpu].cached
    }

    /// Charged bytes held by `cpu`'s stock.
    pub fn bytes(&self, cpu: usize) -> u64 {
        self.cpus[cpu].nr_bytes
    }

    /// Charged bytes held for `memcg` in all stocks.
    pub fn held(&self, memcg: MemcgId) -> u64 {
        self.cpus
            .iter()
            .filter(|s| s.cached == Some(memcg))
            .map(|s| s.nr_bytes)
            .sum()
    }
}

/// A cache of reclaimable kernel objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectCache {
    /// Name (`dentry`, ...).
    pub name: String,
    /// The slab objects one object is made of (kind, bytes).
    pub parts: Vec<(ObjKind, u64)>,
}

/// A registered [`ObjectCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheId(pub usize);

/// The reclaimable caches and their objects per (group, node).
#[derive(Debug, Clone, Default)]
pub(crate) struct Caches {
    caches: Vec<ObjectCache>,
    objects: BTreeMap<(MemcgId, usize, CacheId), u64>,
}

impl Caches {
    /// Freeable objects of `id` over all caches and nodes.
    pub(crate) fn freeable(&self, id: MemcgId) -> u64 {
        self.objects
            .range((id, 0, CacheId(0))..)
            .take_while(|((g, _, _), _)| *g == id)
            .map(|(_, &n)| n)
            .sum()
    }

    fn of(&self, id: MemcgId) -> Vec<((MemcgId, usize, CacheId), u64)> {
        self.objects
            .range((id, 0, CacheId(0))..)
            .take_while(|((g, _, _), _)| *g == id)
            .map(|(&k, &n)| (k, n))
            .collect()
    }
}

impl MemcgTree {
    /// Charges a kernel allocation of `bytes` bytes of `kind` on `node` to
    /// `id` through `cpu`'s object stock (see the module docs); `bytes` is
    /// what is charged (use [`percpu_full_size`] and
    /// [`OBJCG_POINTER_BYTES`] for the kernel's overheads).
    ///
    /// # Errors
    /// As [`try_charge_in`](Self::try_charge_in); on error nothing changes.
    #[allow(clippy::too_many_arguments)]
    pub fn charge_obj(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        kind: ObjKind,
        bytes: u64,
        reclaim: &mut dyn Reclaim,
        ctx: &mut ChargeContext,
    ) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        self.node(id)?;
        let s = &mut self.obj_stocks.cpus[cpu];
        if s.cached == Some(id) && s.nr_bytes >= bytes {
            s.nr_bytes -= bytes;
        } else {
            let pages = bytes.div_ceil(PAGE_SIZE);
            self.try_charge_in(cpu, id, pages, reclaim, ctx)?;
            self.mod_stat(cpu, id, node, Stat::Kernel, pages as i64)?;
            let left = pages * PAGE_SIZE - bytes;
            if left > 0 {
                self.refill_obj_stock(cpu, id, left, false)?;
            }
        }
        self.account_obj(cpu, id, node, kind, bytes as i64)
    }

    /// Frees a kernel allocation charged by [`charge_obj`](Self::charge_obj).
    ///
    /// # Errors
    /// Unknown group or CPU; internal accounting errors.
    pub fn uncharge_obj(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        kind: ObjKind,
        bytes: u64,
    ) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        self.node(id)?;
        self.refill_obj_stock(cpu, id, bytes, true)?;
        self.account_obj(cpu, id, node, kind, -(bytes as i64))
    }

    fn account_obj(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        kind: ObjKind,
        delta: i64,
    ) -> Result<(), MemcgError> {
        match kind {
            ObjKind::Percpu => self.mod_stat(cpu, id, node, Stat::Percpu, delta),
            ObjKind::SlabReclaimable | ObjKind::SlabUnreclaimable => {
                self.mod_slab_state(cpu, id, node, kind, delta)
            }
        }
    }

    /// Makes `cpu`'s object stock cache `id` (draining the previous group
    /// and taking `id`'s leftover bytes); returns whether it switched.
    fn cache_obj_stock(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
    ) -> Result<bool, MemcgError> {
        if self.obj_stocks.cpus[cpu].cached == Some(id) {
            return Ok(false);
        }
        self.drain_obj_stock(cpu)?;
        let leftover = std::mem::take(&mut self.node_mut(id)?.nr_charged_bytes);
        self.obj_stocks.cpus[cpu] = ObjStock {
            cached: Some(id),
            node,
            nr_bytes: leftover,
            slab_reclaimable: 0,
            slab_unreclaimable: 0,
        };
        Ok(true)
    }

    /// Puts `bytes` charged bytes of `id` in `cpu`'s object stock; whole
    /// pages beyond a page leave it when `allow_uncharge` or when the stock
    /// switched groups (`refill_obj_stock`).
    fn refill_obj_stock(
        &mut self,
        cpu: usize,
        id: MemcgId,
        bytes: u64,
        allow_uncharge: bool,
    ) -> Result<(), MemcgError> {
        let node = self.obj_stocks.cpus[cpu].node;
        let switched = self.cache_obj_stock(cpu, id, node)?;
        let s = &mut self.obj_stocks.cpus[cpu];
        s.nr_bytes += bytes;
        if (allow_uncharge || switched) && s.nr_bytes > PAGE_SIZE {
            let pages = s.nr_bytes / PAGE_SIZE;
            s.nr_bytes %= PAGE_SIZE;
            self.uncharge_obj_pages(cpu, id, pages)?;
        }
        Ok(())
    }

    /// Whole pages of kernel memory leave `kernel` and go to the page
    /// stock (`obj_cgroup_uncharge_pages`).
    fn uncharge_obj_pages(
        &mut self,
        cpu: usize,
        id: MemcgId,
        pages: u64,
    ) -> Result<(), MemcgError> {
        self.mod_stat(cpu, id, 0, Stat::Kernel, -(pages as i64))?;
        self.refill_stock(cpu, id, pages)
    }

    /// Adds a slab statistics delta through `cpu`'s object stock
    /// (`mod_objcg_state`).
    fn mod_slab_state(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        kind: ObjKind,
        delta: i64,
    ) -> Result<(), MemcgError> {
        if !self.cache_obj_stock(cpu, id, node)? && self.obj_stocks.cpus[cpu].node != node {
            self.flush_obj_stats(cpu)?;
            self.obj_stocks.cpus[cpu].node = node;
        }
        let s = &mut self.obj_stocks.cpus[cpu];
        let acc = if kind == ObjKind::SlabReclaimable {
            &mut s.slab_reclaimable
        } else {
            &mut s.slab_unreclaimable
        };
        // The first delta is always cached; later ones leave with the
        // accumulated value once it exceeds a page.
        let out = if *acc == 0 {
            *acc = delta;
            0
        } else {
            *acc += delta;
            if acc.unsigned_abs() > PAGE_SIZE {
                std::mem::take(acc)
            } else {
                0
            }
        };
        if out != 0 {
            self.mod_stat(cpu, id, node, kind.stat(), out)?;
        }
        Ok(())
    }

    /// Hands `cpu`'s cached slab statistics to the engine.
    fn flush_obj_stats(&mut self, cpu: usize) -> Result<(), MemcgError> {
        let s = self.obj_stocks.cpus[cpu];
        let Some(id) = s.cached else { return Ok(()) };
        let st = &mut self.obj_stocks.cpus[cpu];
        st.slab_reclaimable = 0;
        st.slab_unreclaimable = 0;
        self.mod_stat(cpu, id, s.node, Stat::SlabReclaimable, s.slab_reclaimable)?;
        self.mod_stat(
            cpu,
            id,
            s.node,
            Stat::SlabUnreclaimable,
            s.slab_unreclaimable,
        )
    }

    /// Empties `cpu`'s object stock (`drain_obj_stock`): whole pages go to
    /// the page stock, the sub-page rest to the group's leftover, cached
    /// statistics to the engine.
    pub(crate) fn drain_obj_stock(&mut self, cpu: usize) -> Result<(), MemcgError> {
        let s = self.obj_stocks.cpus[cpu];
        let Some(id) = s.cached else { return Ok(()) };
        self.flush_obj_stats(cpu)?;
        self.obj_stocks.cpus[cpu] = ObjStock::default();
        let pages = s.nr_bytes / PAGE_SIZE;
        if pages > 0 {
            self.uncharge_obj_pages(cpu, id, pages)?;
        }
        self.node_mut(id)?.nr_charged_bytes += s.nr_bytes % PAGE_SIZE;
        Ok(())
    }

    /// Registers a cache of reclaimable objects, each made of `parts`
    /// (slab objects: kind and size; the per-object cgroup pointer is
    /// added when charged).
    pub fn register_cache(&mut self, name: &str, parts: &[(ObjKind, u64)]) -> CacheId {
        self.caches.caches.push(ObjectCache {
            name: name.to_string(),
            parts: parts.to_vec(),
        });
        CacheId(self.caches.caches.len() - 1)
    }

    /// The cache `cache`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownCache`].
    pub fn cache(&self, cache: CacheId) -> Result<&ObjectCache, MemcgError> {
        self.caches
            .caches
            .get(cache.0)
            .ok_or(MemcgError::UnknownCache(cache.0))
    }

    /// Allocates one object of `cache` for `id` on `node`, charging each
    /// of its slab objects.
    ///
    /// # Errors
    /// As [`charge_obj`](Self::charge_obj); on error nothing is charged.
    #[allow(clippy::too_many_arguments)]
    pub fn alloc_object(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        cache: CacheId,
        reclaim: &mut dyn Reclaim,
        ctx: &mut ChargeContext,
    ) -> Result<(), MemcgError> {
        let n = self.cache(cache)?.parts.len();
        for i in 0..n {
            let (kind, size) = self.caches.caches[cache.0].parts[i];
            let bytes = size + OBJCG_POINTER_BYTES;
            if let Err(e) = self.charge_obj(cpu, id, node, kind, bytes, reclaim, ctx) {
                for j in 0..i {
                    let (k, s) = self.caches.caches[cache.0].parts[j];
                    self.uncharge_obj(cpu, id, node, k, s + OBJCG_POINTER_BYTES)?;
                }
                return Err(e);
            }
        }
        *self.caches.objects.entry((id, node, cache)).or_default() += 1;
        Ok(())
    }

    /// Frees up to `n` objects of `cache` held by `id` on `node`; returns
    /// how many were freed.
    ///
    /// # Errors
    /// Unknown group, CPU or cache.
    pub fn free_objects(
        &mut self,
        cpu: usize,
        id: MemcgId,
        node: usize,
        cache: CacheId,
        n: u64,
    ) -> Result<u64, MemcgError> {
        let parts = self.cache(cache)?.parts.clone();
        let have = self
            .caches
            .objects
            .get(&(id, node, cache))
            .copied()
            .unwrap_or(0);
        let n = n.min(have);
        for _ in 0..n {
            for &(kind, size) in &parts {
                self.uncharge_obj(cpu, id, node, kind, size + OBJCG_POINTER_BYTES)?;
            }
        }
        if n == have {
            self.caches.objects.remove(&(id, node, cache));
        } else if let Some(c) = self.caches.objects.get_mut(&(id, node, cache)) {
            *c -= n;
        }
        Ok(n)
    }

    /// Objects of `cache` held by `id` (all nodes).
    pub fn objects(&self, id: MemcgId, cache: CacheId) -> u64 {
        self.caches
            .of(id)
            .into_iter()
            .filter(|((_, _, c), _)| *c == cache)
            .map(|(_, n)| n)
            .sum()
    }

    /// The shrinker's pass over `id`: frees `fraction` (rounded up) of
    /// each of its reclaimable caches on each node; returns the objects
    /// freed.
    pub fn shrink_slab(&mut self, cpu: usize, id: MemcgId, fraction: f64) -> u64 {
        let mut freed = 0;
        for ((g, node, cache), n) in self.caches.of(id) {
            let scan = ((n as f64 * fraction).ceil() as u64).min(n);
            // Accounting errors cannot happen for objects this tree
            // charged; treat one as nothing freed.
            freed += self.free_objects(cpu, g, node, cache, scan).unwrap_or(0);
        }
        freed
    }

    /// Moves `id`'s objects and leftover bytes to `parent` (a removal).
    pub(crate) fn reparent_kmem(&mut self, id: MemcgId, parent: MemcgId) -> Result<(), MemcgError> {
        for ((_, node, cache), n) in self.caches.of(id) {
            self.caches.objects.remove(&(id, node, cache));
            *self
                .caches
                .objects
                .entry((parent, node, cache))
                .or_default() += n;
        }
        let bytes = std::mem::take(&mut self.node_mut(id)?.nr_charged_bytes);
        self.node_mut(parent)?.nr_charged_bytes += bytes;
        Ok(())
    }

    /// Bytes of kernel memory held for `id` outside its objects: in object
    /// stocks and its leftover (`nr_charged_bytes`).
    pub fn obj_stock_bytes(&self, id: MemcgId) -> u64 {
        self.obj_stocks.held(id) + self.node(id).map_or(0, |n| n.nr_charged_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percpu_full_size_adds_a_pointer_per_unit() {
        assert_eq!(percpu_full_size(16, 4), 64 + 32);
    }
}
