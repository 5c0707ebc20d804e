//! The cgroup hierarchy: directories, `cgroup.subtree_control`, and which
//! memcg each cgroup's processes are charged to.
//!
//! The root always has the memory controller. A child has its own memcg
//! only while its parent's `cgroup.subtree_control` holds `memory`;
//! otherwise its processes are charged to the nearest ancestor that has
//! one, as a css-less cgroup uses its parent's css. Enabling `+memory`
//! creates a memcg for each existing child; disabling it (refused while a
//! child enables it for its own children) removes them, their pages moving
//! to the parent. As in cgroup v2, a non-root cgroup with controllers in
//! its `subtree_control` can hold no processes (the "no internal process"
//! rule): enabling is refused while it has some, and processes cannot join
//! it afterwards.

use super::{Machine, MachineError, Pid};
use crate::memcg::MemcgId;
use std::collections::{BTreeMap, BTreeSet};

/// A cgroup of a [`Machine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CgId(pub usize);

/// The root cgroup.
pub const ROOT_CG: CgId = CgId(0);

#[derive(Debug, Clone)]
pub(crate) struct Cgroup {
    pub(crate) name: String,
    pub(crate) parent: Option<CgId>,
    pub(crate) children: BTreeMap<String, CgId>,
    /// `memory` is in `cgroup.subtree_control`.
    pub(crate) subtree_memory: bool,
    /// Its own memcg, if the memory controller is enabled for it.
    pub(crate) memcg: Option<MemcgId>,
    pub(crate) procs: BTreeSet<Pid>,
}

/// All cgroups.
#[derive(Debug, Clone)]
pub(crate) struct Cgroups {
    nodes: Vec<Option<Cgroup>>,
}

impl Cgroups {
    pub(crate) fn new(root_memcg: MemcgId) -> Self {
        Cgroups {
            nodes: vec![Some(Cgroup {
                name: String::new(),
                parent: None,
                children: BTreeMap::new(),
                subtree_memory: false,
                memcg: Some(root_memcg),
                procs: BTreeSet::new(),
            })],
        }
    }

    pub(crate) fn get(&self, id: CgId) -> Result<&Cgroup, MachineError> {
        self.nodes
            .get(id.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| MachineError::NoEntry(format!("cgroup #{}", id.0)))
    }

    pub(crate) fn get_mut(&mut self, id: CgId) -> Result<&mut Cgroup, MachineError> {
        self.nodes
            .get_mut(id.0)
            .and_then(Option::as_mut)
            .ok_or_else(|| MachineError::NoEntry(format!("cgroup #{}", id.0)))
    }

    /// Looks up `/a/b` (or `/` for the root).
    pub(crate) fn lookup(&self, path: &str) -> Result<CgId, MachineError> {
        let mut id = ROOT_CG;
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            id = *self
                .get(id)?
                .children
                .get(comp)
                .ok_or_else(|| MachineError::NoEntry(path.to_string()))?;
        }
        Ok(id)
    }

    /// The memcg charged for cgroup `id`'s processes.
    pub(crate) fn effective_memcg(&self, mut id: CgId) -> MemcgId {
        loop {
            match self.get(id) {
                Ok(c) => match (c.memcg, c.parent) {
                    (Some(m), _) => return m,
                    (None, Some(p)) => id = p,
                    (None, None) => unreachable!("the root cgroup always has a memcg"),
                },
                Err(_) => unreachable!("cgroup ids of live cgroups only"),
            }
        }
    }

    /// `id` and its descendants, parents first.
    pub(crate) fn subtree(&self, id: CgId) -> Vec<CgId> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(i) = stack.pop() {
            if let Ok(c) = self.get(i) {
                out.push(i);
                stack.extend(c.children.values().rev());
            }
        }
        out
    }

    fn insert(&mut self, c: Cgroup) -> CgId {
        let id = CgId(self.nodes.len());
        self.nodes.push(Some(c));
        id
    }

    fn remove(&mut self, id: CgId) {
        self.nodes[id.0] = None;
    }
}

fn split_path(path: &str) -> Result<(&str, &str), MachineError> {
    let p = path.trim_end_matches('/');
    match p.rsplit_once('/') {
        Some((parent, name)) if !name.is_empty() => {
            Ok((if parent.is_empty() { "/" } else { parent }, name))
        }
        _ => Err(MachineError::Invalid(path.to_string())),
    }
}

impl Machine {
    /// Creates the cgroup `path` (`mkdir`); it gets its own memcg if its
    /// parent enables `+memory`, whose statistics memory is charged to the
    /// parent's memcg.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`] for a missing parent,
    /// [`MachineError::Exists`], memcg errors (an OOM charging the new
    /// group's memory).
    pub fn mkdir(&mut self, path: &str) -> Result<CgId, MachineError> {
        let (parent_path, name) = split_path(path)?;
        let parent = self.cgroups.lookup(parent_path)?;
        let p = self.cgroups.get(parent)?;
        if p.children.contains_key(name) {
            return Err(MachineError::Exists(path.to_string()));
        }
        let memcg = if p.subtree_memory {
            let pm = self.memcg_of_cgroup(parent);
            Some(self.tree.create_on(0, pm, name, &mut self.lru)?)
        } else {
            None
        };
        let id = self.cgroups.insert(Cgroup {
            name: name.to_string(),
            parent: Some(parent),
            children: BTreeMap::new(),
            subtree_memory: false,
            memcg,
            procs: BTreeSet::new(),
        });
        self.cgroups
            .get_mut(parent)?
            .children
            .insert(name.to_string(), id);
        Ok(id)
    }

    /// Removes the cgroup `path` (`rmdir`).
    ///
    /// # Errors
    /// [`MachineError::Busy`] while it has processes or children;
    /// [`MachineError::NoEntry`].
    pub fn rmdir(&mut self, path: &str) -> Result<(), MachineError> {
        let id = self.cgroups.lookup(path)?;
        let c = self.cgroups.get(id)?;
        let Some(parent) = c.parent else {
            return Err(MachineError::Busy(path.to_string()));
        };
        if !c.procs.is_empty() || !c.children.is_empty() {
            return Err(MachineError::Busy(path.to_string()));
        }
        let name = c.name.clone();
        if let Some(m) = c.memcg {
            self.remove_memcg(m)?;
        }
        self.cgroups.get_mut(parent)?.children.remove(&name);
        self.cgroups.remove(id);
        Ok(())
    }

    /// Kills every process of `path`'s subtree, then removes it and its
    /// descendants (`cg_destroy`).
    ///
    /// # Errors
    /// As [`rmdir`](Self::rmdir).
    pub fn destroy(&mut self, path: &str) -> Result<(), MachineError> {
        let id = self.cgroups.lookup(path)?;
        self.kill_cgroup(id)?;
        for c in self.cgroups.subtree(id).into_iter().rev() {
            let p = self.cgroup_path(c)?;
            self.rmdir(&p)?;
        }
        Ok(())
    }

    /// The path of cgroup `id`.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`].
    pub fn cgroup_path(&self, id: CgId) -> Result<String, MachineError> {
        let mut parts = Vec::new();
        let mut i = id;
        while let Some(p) = self.cgroups.get(i)?.parent {
            parts.push(self.cgroups.get(i)?.name.clone());
            i = p;
        }
        parts.reverse();
        Ok(format!("/{}", parts.join("/")))
    }

    /// The cgroup at `path`.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`].
    pub fn cgroup(&self, path: &str) -> Result<CgId, MachineError> {
        self.cgroups.lookup(path)
    }

    /// The memcg of cgroup `path`, if the memory controller is enabled
    /// for it.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`].
    pub fn memcg(&self, path: &str) -> Result<Option<MemcgId>, MachineError> {
        Ok(self.cgroups.get(self.cgroups.lookup(path)?)?.memcg)
    }

    /// Removes a memcg whose cgroup loses the controller or goes away: its
    /// folios and mappings move to the parent (`workingset::Lru`), the
    /// kernel memory processes hold to it is retargeted.
    fn remove_memcg(&mut self, m: MemcgId) -> Result<(), MachineError> {
        let parent = self
            .tree
            .parent(m)?
            .ok_or(MachineError::Invalid("root memcg".into()))?;
        self.procs.reparent_memcg(m, parent);
        self.sockets.reparent_memcg(m, parent);
        self.lru.remove_memcg(&mut self.tree, m)?;
        Ok(())
    }

    /// Writes `cgroup.subtree_control` (`+memory`, `-memory`).
    pub(crate) fn write_subtree_control(
        &mut self,
        id: CgId,
        value: &str,
    ) -> Result<(), MachineError> {
        for tok in value.split_whitespace() {
            let (on, ctrl) = match tok.split_at(1) {
                ("+", c) => (true, c),
                ("-", c) => (false, c),
                _ => return Err(MachineError::Invalid(tok.to_string())),
            };
            if ctrl != "memory" {
                return Err(MachineError::Invalid(format!("controller {ctrl}")));
            }
            let c = self.cgroups.get(id)?;
            if on == c.subtree_memory {
                continue;
            }
            if on {
                if c.memcg.is_none() {
                    return Err(MachineError::Invalid(
                        "memory is not in cgroup.controllers".into(),
                    ));
                }
                if c.parent.is_some() && !c.procs.is_empty() {
                    return Err(MachineError::Busy("cgroup has processes".into()));
                }
                let pm = self.memcg_of_cgroup(id);
                let kids: Vec<(String, CgId)> =
                    c.children.iter().map(|(n, &k)| (n.clone(), k)).collect();
                for (name, k) in kids {
                    let m = self.tree.create_on(0, pm, &name, &mut self.lru)?;
                    self.cgroups.get_mut(k)?.memcg = Some(m);
                }
            } else {
                let kids: Vec<CgId> = c.children.values().copied().collect();
                for &k in &kids {
                    if self.cgroups.get(k)?.subtree_memory {
                        return Err(MachineError::Busy(
                            "a child enables memory for its children".into(),
                        ));
                    }
                }
                for k in kids {
                    if let Some(m) = self.cgroups.get_mut(k)?.memcg.take() {
                        self.remove_memcg(m)?;
                    }
                }
            }
            self.cgroups.get_mut(id)?.subtree_memory = on;
        }
        Ok(())
    }

    /// Moves process `pid` into cgroup `id` (a write to `cgroup.procs`);
    /// its existing charges stay where they are.
    pub(crate) fn migrate(&mut self, pid: Pid, id: CgId) -> Result<(), MachineError> {
        let c = self.cgroups.get(id)?;
        if c.parent.is_some() && c.subtree_memory {
            return Err(MachineError::Busy("no internal processes".into()));
        }
        let from = self.procs.get(pid)?.cgroup;
        self.cgroups.get_mut(from)?.procs.remove(&pid);
        self.cgroups.get_mut(id)?.procs.insert(pid);
        self.procs.get_mut(pid)?.cgroup = id;
        Ok(())
    }

    /// Live processes of cgroup `id` itself (`cgroup.procs`).
    ///
    /// # Errors
    /// [`MachineError::NoEntry`].
    pub fn procs_of(&self, id: CgId) -> Result<Vec<Pid>, MachineError> {
        Ok(self.cgroups.get(id)?.procs.iter().copied().collect())
    }

    /// Kills every process of `id`'s subtree (`cgroup.kill`).
    pub(crate) fn kill_cgroup(&mut self, id: CgId) -> Result<(), MachineError> {
        let pids: Vec<Pid> = self
            .cgroups
            .subtree(id)
            .into_iter()
            .filter_map(|c| self.cgroups.get(c).ok())
            .flat_map(|c| c.procs.iter().copied())
            .collect();
        for p in pids {
            self.exit(p)?;
        }
        Ok(())
    }
}
