//! Shadow entries: what an evicted page leaves in its page-cache (or swap
//! cache) slot.
//!
//! The layout is the kernel's on 64-bit: an xarray *value* entry (low tag
//! bit set), holding from the low end the workingset bit, the node id
//! (`NODES_SHIFT` bits), the memcg id (16 bits) and, above them, the
//! eviction timestamp: the eviction lruvec's non-resident age at eviction,
//! shifted right by `bucket_order` and truncated to the bits left
//! (`EVICTION_MASK`). Refault distances are computed modulo those bits, so
//! a wrapped counter still gives the right distance as long as the true
//! distance fits.

/// Bits of the memcg id (`MEM_CGROUP_ID_SHIFT`).
pub const MEM_CGROUP_ID_SHIFT: u32 = 16;
/// Bits of the workingset flag (`WORKINGSET_SHIFT`).
pub const WORKINGSET_SHIFT: u32 = 1;
/// Tag bits of an xarray value entry (`BITS_PER_LONG - BITS_PER_XA_VALUE`).
pub const XA_VALUE_TAG_BITS: u32 = 1;
/// Default node-id bits (`NODES_SHIFT` of x86-64 distribution kernels).
pub const DEFAULT_NODES_SHIFT: u32 = 10;

/// A packed shadow entry (an xarray value entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shadow(pub u64);

impl Shadow {
    /// Whether the word is an xarray value entry (tag bit set).
    pub fn is_value(self) -> bool {
        self.0 & 1 == 1
    }
}

/// The fields of a shadow entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unpacked {
    /// Id of the memcg whose lruvec was aged by the eviction.
    pub memcg: u16,
    /// NUMA node of the evicted page.
    pub node: u32,
    /// Eviction timestamp in pages (already shifted left by `bucket_order`).
    pub eviction: u64,
    /// The page was in the workingset (had been active) when evicted.
    pub workingset: bool,
}

/// The packing parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShadowLayout {
    nodes_shift: u32,
    bucket_order: u32,
}

impl Default for ShadowLayout {
    fn default() -> Self {
        ShadowLayout::new(DEFAULT_NODES_SHIFT, 0)
    }
}

/// Position of the most significant set bit, 1-based (`fls_long`; 0 for 0).
fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

impl ShadowLayout {
    /// A layout with `nodes_shift` node bits (clamped to 0..=16) and the
    /// given bucket order (clamped below the timestamp width).
    pub fn new(nodes_shift: u32, bucket_order: u32) -> Self {
        let mut l = ShadowLayout {
            nodes_shift: nodes_shift.min(16),
            bucket_order: 0,
        };
        l.bucket_order = bucket_order.min(l.timestamp_bits() - 1);
        l
    }

    /// The layout `workingset_init` computes for a machine of `total_pages`:
    /// evictions are grouped in buckets of `2^bucket_order` pages so that a
    /// distance as large as memory still fits the timestamp bits.
    pub fn for_memory(nodes_shift: u32, total_pages: u64) -> Self {
        let l = ShadowLayout::new(nodes_shift, 0);
        let max_order = fls(total_pages.saturating_sub(1));
        ShadowLayout::new(nodes_shift, max_order.saturating_sub(l.timestamp_bits()))
    }

    /// Node-id bits.
    pub fn nodes_shift(&self) -> u32 {
        self.nodes_shift
    }

    /// Bucket order.
    pub fn bucket_order(&self) -> u32 {
        self.bucket_order
    }

    /// Bits below the timestamp (`EVICTION_SHIFT`).
    pub fn eviction_shift(&self) -> u32 {
        XA_VALUE_TAG_BITS + WORKINGSET_SHIFT + self.nodes_shift + MEM_CGROUP_ID_SHIFT
    }

    /// Timestamp bits.
    pub fn timestamp_bits(&self) -> u32 {
        64 - self.eviction_shift()
    }

    /// `EVICTION_MASK`.
    pub fn eviction_mask(&self) -> u64 {
        u64::MAX >> self.eviction_shift()
    }

    /// Packs an eviction at non-resident age `age` (in pages).
    pub fn pack(&self, memcg: u16, node: u32, age: u64, workingset: bool) -> Shadow {
        let node_mask = (1u64 << self.nodes_shift) - 1;
        let mut v = (age >> self.bucket_order) & self.eviction_mask();
        v = (v << MEM_CGROUP_ID_SHIFT) | u64::from(memcg);
        v = (v << self.nodes_shift) | (u64::from(node) & node_mask);
        v = (v << WORKINGSET_SHIFT) | u64::from(workingset);
        Shadow((v << XA_VALUE_TAG_BITS) | 1)
    }

    /// Unpacks a shadow entry; `None` if it is not a value entry.
    pub fn unpack(&self, s: Shadow) -> Option<Unpacked> {
        if !s.is_value() {
            return None;
        }
        let mut v = s.0 >> XA_VALUE_TAG_BITS;
        let workingset = v & 1 == 1;
        v >>= WORKINGSET_SHIFT;
        let node = (v & ((1u64 << self.nodes_shift) - 1)) as u32;
        v >>= self.nodes_shift;
        let memcg = (v & 0xffff) as u16;
        v >>= MEM_CGROUP_ID_SHIFT;
        Some(Unpacked {
            memcg,
            node,
            eviction: v << self.bucket_order,
            workingset,
        })
    }

    /// Refault distance: evictions and activations of the eviction lruvec
    /// between the eviction (`eviction`, from [`unpack`](Self::unpack)) and
    /// now (`refault_age`), modulo the timestamp bits.
    pub fn refault_distance(&self, refault_age: u64, eviction: u64) -> u64 {
        refault_age.wrapping_sub(eviction) & self.eviction_mask()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_widths_on_64_bit() {
        let l = ShadowLayout::default();
        assert_eq!(l.eviction_shift(), 28);
        assert_eq!(l.timestamp_bits(), 36);
        assert_eq!(l.eviction_mask(), (1 << 36) - 1);
        // 64 GiB of 4 KiB pages: no bucketing needed.
        assert_eq!(ShadowLayout::for_memory(10, 16 << 20).bucket_order(), 0);
        // 2^40 pages need 4 bits of bucketing.
        assert_eq!(ShadowLayout::for_memory(10, 1 << 40).bucket_order(), 4);
    }
}
