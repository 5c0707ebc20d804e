//! The shadow-node shrinker: nodes of 64 slots that hold only shadow
//! entries, how many of them `count_shadow_nodes` would free, and the scan
//! that frees them.

use super::{Lru, SlotState, WorkingsetError, CHUNK, XA_CHUNK_SHIFT};
use crate::memcg::{MemcgId, MemcgTree, Stat};
use hierstat::sim::Simulator as _;

impl Lru {
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
        let mut w = hierstat::sim::WorkCounters::default();
        tree.stats()
            .flush_with(&g, hierstat::FlushKind::Ratelimited, &mut w)?;
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
