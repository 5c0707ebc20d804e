//! The group tree: create, remove (charges stay with the ancestors,
//! statistics fold into the parent, the id is freed), lookup and walks.

use super::{EventCounts, MemcgError, MemcgId, MemcgNode, MemcgTree, PageCounter, ROOT_ID};
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

    /// Creates a group `name` under `parent`; it gets the lowest free id.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`], [`MemcgError::TooManyGroups`], engine
    /// errors for a bad or duplicate name.
    pub fn create(&mut self, parent: MemcgId, name: &str) -> Result<MemcgId, MemcgError> {
        let pg = self.node(parent)?.group.clone();
        let id = match self.free_ids.first().copied() {
            Some(i) => i,
            None if self.nodes.len() <= u16::MAX as usize => self.nodes.len() as u16,
            None => return Err(MemcgError::TooManyGroups),
        };
        let group = self.stats.create(&pg, name)?;
        self.free_ids.remove(&id);
        let id = MemcgId(id);
        if self.nodes.len() <= id.0 as usize {
            self.nodes.resize_with(id.0 as usize + 1, || None);
        }
        self.nodes[id.0 as usize] = Some(MemcgNode {
            group,
            parent: Some(parent),
            children: Vec::new(),
            memory: PageCounter::new(),
            swap: PageCounter::new(),
            events: EventCounts::default(),
            events_local: EventCounts::default(),
        });
        self.node_mut(parent)?.children.push(id);
        Ok(id)
    }

    /// Removes a group without children. Its charge stocks are drained;
    /// pages still charged to it stay charged to its ancestors (whose
    /// counters include them) and its statistics are folded into the parent
    /// (nothing lost). Its id becomes free for reuse: stale shadow entries
    /// may then name another group, as in the kernel.
    ///
    /// Owners of pages charged to the group must move them to the parent
    /// first (see `workingset::Lru::remove_memcg`); later uncharges then go
    /// to the parent.
    ///
    /// # Errors
    /// [`MemcgError::RemoveRoot`], [`MemcgError::NotEmpty`],
    /// [`MemcgError::UnknownMemcg`].
    pub fn remove(&mut self, id: MemcgId) -> Result<(), MemcgError> {
        let n = self.node(id)?;
        let Some(parent) = n.parent else {
            return Err(MemcgError::RemoveRoot);
        };
        if !n.children.is_empty() {
            return Err(MemcgError::NotEmpty(id));
        }
        for d in self.stocks.drain_where(|m| m == id) {
            self.counters_uncharge(d.memcg, d.nr_pages)?;
        }
        // The group's remaining usage becomes the parent's own.
        let n = self.nodes[id.0 as usize]
            .take()
            .ok_or(MemcgError::UnknownMemcg(id))?;
        self.free_ids.insert(id.0);
        let p = self.node_mut(parent)?;
        p.children.retain(|&c| c != id);
        self.stats.remove(n.group)?;
        Ok(())
    }
}
