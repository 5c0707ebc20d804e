//! Mappings and their slots: what each slot holds, grouped in 64-slot
//! nodes like the xarray's so that shadow-only nodes can be counted.

use super::{Chunk, Lru, Mapping, Slot, SlotState, WorkingsetError, CHUNK};
use crate::memcg::MemcgId;

impl Lru {
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

    /// Changes a slot's state, keeping the shadow-node accounting.
    pub(crate) fn set_state(&mut self, slot: u32, new: SlotState) {
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
}
