//! The group tree: create (the new group's statistics memory charged to
//! its parent), remove (charges stay with the ancestors, kernel objects and
//! statistics move to the parent, the id is freed), lookup and walks.

use super::kmem::{percpu_full_size, OBJCG_POINTER_BYTES};
use super::{
    ChargeContext, GroupBytes, MemcgError, MemcgId, MemcgNode, MemcgTree, NoReclaim, ObjKind,
    Reclaim, ROOT_ID,
};
use hierstat::Group;

impl MemcgTree {
    /// Whether `id` names a live group.
    pub fn exists(&self, id: MemcgId) -> bool {
        self.node(id).is_ok()
    }

    /// The engine group of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn group(&self, id: MemcgId) -> Result<&Group, MemcgError> {
        Ok(&self.node(id)?.group)
    }

    /// The parent of `id` (`None` for the root).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn parent(&self, id: MemcgId) -> Result<Option<MemcgId>, MemcgError> {
        Ok(self.node(id)?.parent)
    }

    /// The children of `id`, in creation order.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn children(&self, id: MemcgId) -> Result<&[MemcgId], MemcgError> {
        Ok(&self.node(id)?.children)
    }

    /// The group's path (`/`, `/system.slice`, ...).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn path(&self, id: MemcgId) -> Result<&str, MemcgError> {
        Ok(self.node(id)?.group.path())
    }

    /// `id` and its ancestors, from `id` up to the root.
    pub fn ancestors(&self, id: MemcgId) -> impl Iterator<Item = MemcgId> + '_ {
        std::iter::successors(Some(id), move |&i| self.node(i).ok().and_then(|n| n.parent))
            .filter(move |&i| self.exists(i))
    }

    /// Whether `a` is `b` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, a: MemcgId, b: MemcgId) -> bool {
        self.ancestors(b).any(|x| x == a)
    }

    /// `id`'s subtree in preorder (parents before children).
    pub fn subtree(&self, id: MemcgId) -> Vec<MemcgId> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(i) = stack.pop() {
            if let Ok(n) = self.node(i) {
                out.push(i);
                stack.extend(n.children.iter().rev());
            }
        }
        out
    }

    /// Every live group in preorder.
    pub fn ids(&self) -> Vec<MemcgId> {
        self.subtree(ROOT_ID)
    }

    /// Looks a group up by path.
    ///
    /// # Errors
    /// Engine errors for an unknown or malformed path.
    pub fn lookup(&self, path: &str) -> Result<MemcgId, MemcgError> {
        let g = self.stats.lookup(path)?;
        self.ids()
            .into_iter()
            .find(|&i| {
                self.nodes[i.0 as usize]
                    .as_ref()
                    .is_some_and(|n| n.group.same(&g))
            })
            .ok_or_else(|| MemcgError::Engine(hierstat::Error::UnknownGroup(path.to_string())))
    }

    /// Bytes of per-CPU memory a group's creation charges to its parent:
    /// its per-CPU statistics (a current and a previous value for each of
    /// the schema's slots, as the kernel's `memcg_vmstats_percpu` and
    /// `lruvec_stats_percpu` keep) on every CPU, with the per-CPU
    /// allocator's overhead ([`percpu_full_size`]).
    pub fn group_percpu_bytes(&self) -> u64 {
        let per_cpu = 2 * 8 * self.schema().schema().slots() as u64;
        percpu_full_size(per_cpu, self.cpus())
    }

    /// Bytes of slab a group's creation charges to its parent: its
    /// hierarchical and pending statistics arrays (2 × 8 bytes a slot),
    /// plus the slab's cgroup pointer.
    pub fn group_slab_bytes(&self) -> u64 {
        2 * 8 * self.schema().schema().slots() as u64 + OBJCG_POINTER_BYTES
    }

    /// Creates a group `name` under `parent` on CPU 0 (see
    /// [`create_on`](Self::create_on)).
    ///
    /// # Errors
    /// As [`create_on`](Self::create_on).
    pub fn create(&mut self, parent: MemcgId, name: &str) -> Result<MemcgId, MemcgError> {
        self.create_on(0, parent, name, &mut NoReclaim)
    }

    /// Creates a group `name` under `parent` by a task on `cpu`; it gets the
    /// lowest free id. With [`MemcgTree::charges_group_memory`], its
    /// statistics memory is charged to `parent` (`percpu` and
    /// `slab_unreclaimable`), reclaiming through `reclaim` if `parent` is
    /// at its limit.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`], [`MemcgError::TooManyGroups`], engine
    /// errors for a bad or duplicate name, [`MemcgError::Oom`] if the
    /// parent cannot hold the new group's memory (nothing is created).
    pub fn create_on(
        &mut self,
        cpu: usize,
        parent: MemcgId,
        name: &str,
        reclaim: &mut dyn Reclaim,
    ) -> Result<MemcgId, MemcgError> {
        self.check_cpu(cpu)?;
        let pg = self.node(parent)?.group.clone();
        let id = match self.free_ids.first().copied() {
            Some(i) => i,
            None if self.nodes.len() <= u16::MAX as usize => self.nodes.len() as u16,
            None => return Err(MemcgError::TooManyGroups),
        };
        let own = if self.charges_group_memory() {
            let own = GroupBytes {
                percpu: self.group_percpu_bytes(),
                slab: self.group_slab_bytes(),
            };
            let mut ctx = ChargeContext::default();
            self.charge_obj(
                cpu,
                parent,
                0,
                ObjKind::Percpu,
                own.percpu,
                reclaim,
                &mut ctx,
            )?;
            if let Err(e) = self.charge_obj(
                cpu,
                parent,
                0,
                ObjKind::SlabUnreclaimable,
                own.slab,
                reclaim,
                &mut ctx,
            ) {
                self.uncharge_obj(cpu, parent, 0, ObjKind::Percpu, own.percpu)?;
                return Err(e);
            }
            own
        } else {
            GroupBytes::default()
        };
        let group = match self.stats.create(&pg, name) {
            Ok(g) => g,
            Err(e) => {
                self.uncharge_group_memory(cpu, parent, own)?;
                return Err(e.into());
            }
        };
        self.free_ids.remove(&id);
        let id = MemcgId(id);
        if self.nodes.len() <= id.0 as usize {
            self.nodes.resize_with(id.0 as usize + 1, || None);
        }
        let mut node = MemcgNode::new(group, Some(parent));
        node.own_bytes = own;
        self.nodes[id.0 as usize] = Some(node);
        self.node_mut(parent)?.children.push(id);
        Ok(id)
    }

    fn uncharge_group_memory(
        &mut self,
        cpu: usize,
        parent: MemcgId,
        own: GroupBytes,
    ) -> Result<(), MemcgError> {
        if own.percpu > 0 {
            self.uncharge_obj(cpu, parent, 0, ObjKind::Percpu, own.percpu)?;
        }
        if own.slab > 0 {
            self.uncharge_obj(cpu, parent, 0, ObjKind::SlabUnreclaimable, own.slab)?;
        }
        Ok(())
    }

    /// Removes a group without children, by a task on CPU 0. Its stocks
    /// are drained; pages still charged to it stay charged to its
    /// ancestors (whose counters include them); its reclaimable kernel
    /// objects and leftover kernel bytes move to the parent
    /// (`memcg_reparent_objcgs`, `memcg_reparent_list_lrus`); its
    /// statistics fold into the parent (nothing lost); the statistics
    /// memory its creation charged to the parent is freed. Its id becomes
    /// free for reuse: stale shadow entries may then name another group,
    /// as in the kernel.
    ///
    /// Owners of pages charged to the group must move them to the parent
    /// first (see `workingset::Lru::remove_memcg`); later uncharges then go
    /// to the parent. The kernel keeps an offline group "dying" until its
    /// last page is freed; the model reparents at once.
    ///
    /// # Errors
    /// [`MemcgError::RemoveRoot`], [`MemcgError::NotEmpty`],
    /// [`MemcgError::UnknownMemcg`].
    pub fn remove(&mut self, id: MemcgId) -> Result<(), MemcgError> {
        self.remove_on(0, id)
    }

    /// As [`remove`](Self::remove), by a task on `cpu` (where the group's
    /// statistics memory is freed).
    ///
    /// # Errors
    /// As [`remove`](Self::remove).
    pub fn remove_on(&mut self, cpu: usize, id: MemcgId) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        let n = self.node(id)?;
        let Some(parent) = n.parent else {
            return Err(MemcgError::RemoveRoot);
        };
        if !n.children.is_empty() {
            return Err(MemcgError::NotEmpty(id));
        }
        self.drain_stocks_of(id)?;
        self.reparent_kmem(id, parent)?;
        // The group's remaining usage becomes the parent's own.
        let n = self.nodes[id.0 as usize]
            .take()
            .ok_or(MemcgError::UnknownMemcg(id))?;
        self.free_ids.insert(id.0);
        let p = self.node_mut(parent)?;
        p.children.retain(|&c| c != id);
        self.stats.remove(n.group)?;
        self.uncharge_group_memory(cpu, parent, n.own_bytes)?;
        Ok(())
    }
}
