//! Workingset refault detection over per-(memcg, node) LRU lists.
//!
//! * [`shadow`]: shadow entries packed as the kernel packs them;
//! * [`lruvec`]: the four LRU lists of a (memcg, node) and its
//!   hierarchical non-resident age;
//! * [`refault`]: the workingset size rule and the refault flush policy;
//! * [`reclaim`](self::reclaim): the [`Reclaim`](crate::memcg::Reclaim)
//!   implementation (shrink active/inactive lists, evict to shadows).
//!
//! Memory is a set of *mappings* (a file's page cache or an anonymous
//! region backed by swap), each owned by a memcg and placed on one node; a
//! mapping is an array of slots holding a resident folio, a shadow entry,
//! a swapped-out page without shadow, or nothing. Slots are grouped in
//! 64-slot nodes like the xarray's, so the shrinker can count the nodes
//! that hold only shadows.
//!
//! [`Lru::access`] is a page access: a hit marks the page accessed (a
//! second access of an inactive file page activates it, aging the
//! non-resident clock); a miss charges the owner memcg (reclaiming through
//! this very LRU if a limit is hit) and inserts the page; a miss on a
//! shadow entry is a *refault*: the workingset test runs with the stats
//! flush chosen by a [`RefaultFlush`] and the page is activated (and
//! restored) if it is recent, with the statistics updates the kernel makes.
//! Every refault also reports the decision exact statistics would give
//! (the list sizes are kept exactly beside the statistics).

pub mod lruvec;
pub mod reclaim;
pub mod refault;
pub mod shadow;

pub use lruvec::{LruList, LruSizes, Lruvec};
pub use refault::{is_recent, workingset_size, NoFlush, PolicyFlush, RefaultFlush, RefaultInfo};
pub use shadow::{Shadow, ShadowLayout, Unpacked};

use crate::memcg::{MemcgError, MemcgId, MemcgTree, Stat};
use thiserror::Error;

/// Slots per shadow node (`XA_CHUNK_SIZE`).
pub const XA_CHUNK_SHIFT: u32 = 6;
const CHUNK: u32 = 1 << XA_CHUNK_SHIFT;

/// Errors of the workingset model.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WorkingsetError {
    /// The memcg model refused (OOM, unknown group ...).
    #[error(transparent)]
    Memcg(#[from] MemcgError),
    /// No such slot.
    #[error("no slot {0}")]
    UnknownSlot(u32),
    /// A mapping on a node the model does not have.
    #[error("node {node} out of range ({nodes} nodes)")]
    NodeOutOfRange {
        /// Requested node.
        node: usize,
        /// Nodes.
        nodes: usize,
    },
}

impl From<hierstat::Error> for WorkingsetError {
    fn from(e: hierstat::Error) -> Self {
        WorkingsetError::Memcg(MemcgError::Engine(e))
    }
}

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// Nothing (never faulted, freed, or a file shadow dropped).
    Empty,
    /// A resident folio on an LRU list.
    Resident,
    /// An evicted page's shadow entry (anon: swapped out).
    Shadow(Shadow),
    /// An anonymous page in swap whose shadow was dropped.
    Swapped,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    state: SlotState,
    mapping: u32,
    stamp: u32,
    active: bool,
    referenced: bool,
    workingset: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Chunk {
    present: u8,
    shadows: u8,
}

/// A range of slots owned by one memcg on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// First slot.
    pub first: u32,
    /// Number of slots.
    pub len: u32,
    /// Owning memcg (charged for its pages).
    pub owner: MemcgId,
    /// NUMA node of its pages.
    pub node: usize,
    /// Page cache (else anonymous, swap-backed).
    pub file: bool,
    /// Pages per folio (1, or 512 for THPs).
    pub nr: u64,
    shadow_only: u64,
}

/// What an access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The page was resident; `activated` if this access promoted it.
    Hit {
        /// Promoted to the active list.
        activated: bool,
    },
    /// The page was not resident and had no shadow.
    Miss,
    /// The page refaulted (it had a shadow entry).
    Refault(RefaultInfo),
}

/// Counters of the model's activity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LruCounters {
    /// Folios evicted to shadows.
    pub evictions: u64,
    /// Refaults (misses on a shadow).
    pub refaults: u64,
    /// Refaults activated.
    pub activations: u64,
    /// Refaults whose decision differed from the exact one.
    pub mismatches: u64,
}

/// The LRU lists, slots and shadows of a machine.
#[derive(Debug)]
pub struct Lru {
    layout: ShadowLayout,
    nodes: usize,
    lruvecs: Vec<Lruvec>,
    slots: Vec<Slot>,
    mappings: Vec<Mapping>,
    chunks: Vec<Chunk>,
    scan_credit: f64,
    counters: LruCounters,
}

impl Lru {
    /// An empty model for `nodes` nodes with the given shadow layout.
    pub fn new(nodes: usize, layout: ShadowLayout) -> Self {
        Lru {
            layout,
            nodes: nodes.max(1),
            lruvecs: Vec::new(),
            slots: Vec::new(),
            mappings: Vec::new(),
            chunks: Vec::new(),
            scan_credit: 0.0,
            counters: LruCounters::default(),
        }
    }

    /// The shadow layout.
    pub fn layout(&self) -> &ShadowLayout {
        &self.layout
    }

    /// Activity counters.
    pub fn counters(&self) -> LruCounters {
        self.counters
    }

    /// Adds a mapping of `len` folios of `nr` pages owned by `owner` on
    /// `node`; returns its first slot. Mappings start on a shadow-node
    /// boundary.
    ///
    /// # Errors
    /// [`WorkingsetError::NodeOutOfRange`].
    pub fn add_mapping(
        &mut self,
        owner: MemcgId,
        node: usize,
        file: bool,
        len: u32,
        nr: u64,
    ) -> Result<u32, WorkingsetError> {
        if node >= self.nodes {
            return Err(WorkingsetError::NodeOutOfRange {
                node,
                nodes: self.nodes,
            });
        }
        let first = (self.slots.len() as u32).div_ceil(CHUNK) * CHUNK;
        let idx = self.mappings.len() as u32;
        self.mappings.push(Mapping {
            first,
            len,
            owner,
            node,
            file,
            nr: nr.max(1),
            shadow_only: 0,
        });
        let end = first as usize + len as usize;
        self.slots.resize(
            end,
            Slot {
                state: SlotState::Empty,
                mapping: idx,
                stamp: 0,
                active: false,
                referenced: false,
                workingset: false,
            },
        );
        // Padding slots between mappings stay Empty and belong to this one.
        self.chunks
            .resize(end.div_ceil(CHUNK as usize), Chunk::default());
        Ok(first)
    }

    /// The mapping holding `slot`.
    ///
    /// # Errors
    /// [`WorkingsetError::UnknownSlot`].
    pub fn mapping_of(&self, slot: u32) -> Result<&Mapping, WorkingsetError> {
        let s = self
            .slots
            .get(slot as usize)
            .ok_or(WorkingsetError::UnknownSlot(slot))?;
        Ok(&self.mappings[s.mapping as usize])
    }

    /// What `slot` holds.
    ///
    /// # Errors
    /// [`WorkingsetError::UnknownSlot`].
    pub fn state(&self, slot: u32) -> Result<SlotState, WorkingsetError> {
        self.slots
            .get(slot as usize)
            .map(|s| s.state)
            .ok_or(WorkingsetError::UnknownSlot(slot))
    }

    /// Whether the folio in `slot` is on an active list.
    pub fn is_active(&self, slot: u32) -> bool {
        self.slots.get(slot as usize).is_some_and(|s| s.active)
    }

    fn lv_index(&self, id: MemcgId, node: usize) -> usize {
        id.0 as usize * self.nodes + node
    }

    pub(crate) fn lv(&mut self, id: MemcgId, node: usize) -> &mut Lruvec {
        let i = self.lv_index(id, node);
        if self.lruvecs.len() <= i {
            self.lruvecs.resize_with(i + 1, Lruvec::default);
        }
        &mut self.lruvecs[i]
    }

    /// The lruvec of (`id`, `node`), if it was ever used.
    pub fn lruvec(&self, id: MemcgId, node: usize) -> Option<&Lruvec> {
        self.lruvecs.get(self.lv_index(id, node))
    }

    /// Non-resident age of (`id`, `node`).
    pub fn nonresident_age(&self, id: MemcgId, node: usize) -> u64 {
        self.lruvec(id, node).map_or(0, |l| l.nonresident_age)
    }

    /// Sets the non-resident age of (`id`, `node`) (tests of counter wrap).
    pub fn set_nonresident_age(&mut self, id: MemcgId, node: usize, age: u64) {
        self.lv(id, node).nonresident_age = age;
    }

    /// Exact hierarchical list sizes of `id`'s subtree on `node`: the
    /// oracle the statistics approximate.
    pub fn exact_sizes(&self, tree: &MemcgTree, id: MemcgId, node: usize) -> LruSizes {
        let mut s = LruSizes::default();
        for g in tree.subtree(id) {
            if let Some(l) = self.lruvec(g, node) {
                s.add(&l.sizes());
            }
        }
        s
    }

    /// `workingset_age_nonresident`: ages (`id`, `node`) and every ancestor.
    pub(crate) fn age_nonresident(&mut self, tree: &MemcgTree, id: MemcgId, node: usize, nr: u64) {
        let chain: Vec<MemcgId> = tree.ancestors(id).collect();
        for a in chain {
            self.lv(a, node).nonresident_age += nr;
        }
    }

    /// Changes a slot's state, keeping the shadow-node accounting.
    fn set_state(&mut self, slot: u32, new: SlotState) {
        let present = |s: SlotState| matches!(s, SlotState::Resident | SlotState::Shadow(_));
        let shadow = |s: SlotState| matches!(s, SlotState::Shadow(_));
        let old = self.slots[slot as usize].state;
        let c = &mut self.chunks[(slot / CHUNK) as usize];
        let only = |c: &Chunk| c.present > 0 && c.present == c.shadows;
        let before = only(c);
        c.present = c.present + u8::from(present(new)) - u8::from(present(old));
        c.shadows = c.shadows + u8::from(shadow(new)) - u8::from(shadow(old));
        let after = only(c);
        let m = &mut self.mappings[self.slots[slot as usize].mapping as usize];
        match (before, after) {
            (false, true) => m.shadow_only += 1,
            (true, false) => m.shadow_only -= 1,
            _ => {}
        }
        self.slots[slot as usize].state = new;
    }

    fn folio_stats(file: bool, nr: u64) -> [(Stat, bool); 2] {
        let base = if file { Stat::File } else { Stat::Anon };
        let thp = if file { Stat::FileThp } else { Stat::AnonThp };
        [(base, true), (thp, nr >= 512)]
    }

    /// Statistics of a folio entering (`sign = 1`) or leaving (`-1`) memory.
    fn account_folio(
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
    fn activate_resident(
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

    /// A page access on `cpu` (see the module docs).
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
        tree.try_charge(cpu, m.owner, m.nr, self)?;
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
    fn workingset_refault(
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
            info.flush = flush.flush(tree, ev);
            let age = self.nonresident_age(ev, node);
            info.distance = self.layout.refault_distance(age, up.eviction);
            info.swap = tree.nr_swap_pages(ev) > 0;
            let stats = LruSizes {
                inactive_anon: tree.stat_pages(ev, Stat::InactiveAnon, Some(node))?,
                active_anon: tree.stat_pages(ev, Stat::ActiveAnon, Some(node))?,
                inactive_file: tree.stat_pages(ev, Stat::InactiveFile, Some(node))?,
                active_file: tree.stat_pages(ev, Stat::ActiveFile, Some(node))?,
            };
            let exact = self.exact_sizes(tree, ev, node);
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

    /// Removes memcg `id`: its folios move to its parent's lists, its
    /// mappings to the parent, then the memcg itself is removed.
    ///
    /// # Errors
    /// As [`MemcgTree::remove`].
    pub fn remove_memcg(
        &mut self,
        tree: &mut MemcgTree,
        id: MemcgId,
    ) -> Result<(), WorkingsetError> {
        let parent = tree.parent(id)?.ok_or(MemcgError::RemoveRoot)?;
        if !tree.children(id)?.is_empty() {
            return Err(MemcgError::NotEmpty(id).into());
        }
        for m in self.mappings.iter_mut().filter(|m| m.owner == id) {
            m.owner = parent;
        }
        for node in 0..self.nodes {
            let mut lv = std::mem::take(self.lv(id, node));
            for l in LruList::ALL {
                let slots = &self.slots;
                let moved = lv.drain_live(l, |sl, st| slots[sl as usize].stamp == st);
                for sl in moved {
                    let s = self.slots[sl as usize];
                    let nr = self.mappings[s.mapping as usize].nr;
                    self.lv(parent, node).push_tail(l, sl, s.stamp, nr);
                }
            }
        }
        tree.remove(id)?;
        Ok(())
    }

    /// Shadow-only nodes of mappings owned by `id` on `node` (what the
    /// shadow shrinker's list_lru holds).
    pub fn shadow_nodes(&self, id: MemcgId, node: usize) -> u64 {
        self.mappings
            .iter()
            .filter(|m| m.owner == id && m.node == node)
            .map(|m| m.shadow_only)
            .sum()
    }

    /// Shadow nodes of all mappings.
    pub fn total_shadow_nodes(&self) -> u64 {
        self.mappings.iter().map(|m| m.shadow_only).sum()
    }

    /// `count_shadow_nodes`: how many shadow nodes of (`id`, `node`) the
    /// shrinker would free. Nodes are allowed up to `pages >> 3` where
    /// `pages` is the group's local LRU and slab size on the node, read
    /// after a ratelimited flush.
    ///
    /// # Errors
    /// Unknown group.
    pub fn count_shadow_nodes(
        &self,
        tree: &mut MemcgTree,
        id: MemcgId,
        node: usize,
    ) -> Result<u64, WorkingsetError> {
        let nodes = self.shadow_nodes(id, node);
        if nodes == 0 {
            return Ok(0);
        }
        let g = tree.group(id)?.clone();
        let mut w = hierstat::WorkCounters::default();
        tree.stats()
            .flush_with(&g, hierstat::FlushKind::Ratelimited, &mut w);
        let mut pages = 0;
        for st in [
            Stat::InactiveAnon,
            Stat::ActiveAnon,
            Stat::InactiveFile,
            Stat::ActiveFile,
            Stat::Unevictable,
            Stat::SlabReclaimable,
            Stat::SlabUnreclaimable,
        ] {
            pages += tree.stat_local_pages(id, st, node)?;
        }
        let max_nodes = pages >> (XA_CHUNK_SHIFT - 3);
        Ok(nodes.saturating_sub(max_nodes))
    }

    /// Frees up to `nr` shadow-only nodes of (`id`, `node`) (the shrinker's
    /// scan): their file shadows are dropped, anon ones become plain
    /// swapped pages; each node counts `workingset_nodereclaim`. Returns
    /// the nodes freed.
    ///
    /// # Errors
    /// Unknown group.
    pub fn scan_shadow_nodes(
        &mut self,
        tree: &mut MemcgTree,
        cpu: usize,
        id: MemcgId,
        node: usize,
        nr: u64,
    ) -> Result<u64, WorkingsetError> {
        let mut freed = 0;
        for mi in 0..self.mappings.len() {
            let m = self.mappings[mi];
            if m.owner != id || m.node != node || m.shadow_only == 0 {
                continue;
            }
            let first_chunk = m.first / CHUNK;
            let last_chunk = (m.first + m.len).div_ceil(CHUNK);
            for c in first_chunk..last_chunk {
                if freed >= nr {
                    return Ok(freed);
                }
                let ch = self.chunks[c as usize];
                if !(ch.present > 0 && ch.present == ch.shadows) {
                    continue;
                }
                for sl in c * CHUNK..((c + 1) * CHUNK).min(self.slots.len() as u32) {
                    if matches!(self.slots[sl as usize].state, SlotState::Shadow(_)) {
                        let to = if m.file {
                            SlotState::Empty
                        } else {
                            SlotState::Swapped
                        };
                        self.set_state(sl, to);
                    }
                }
                tree.mod_stat(cpu, id, node, Stat::WorkingsetNodereclaim, 1)?;
                freed += 1;
            }
        }
        Ok(freed)
    }
}
