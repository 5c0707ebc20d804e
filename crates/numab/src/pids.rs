//! Access-PID bookkeeping: `hash_32`, the per-VMA PID windows and the RFC
//! 2/6 disjoint-VMA ratelimit.

/// `GOLDEN_RATIO_32` from `include/linux/hash.h`.
pub const GOLDEN_RATIO_32: u32 = 0x61C8_8647;

/// Fibonacci hash of `val` into `bits` bits (`hash_32()`): multiply by the
/// 32-bit golden ratio and keep the top `bits` bits.
pub fn hash_32(val: u32, bits: u32) -> u32 {
    debug_assert!((1..=32).contains(&bits));
    val.wrapping_mul(GOLDEN_RATIO_32) >> (32 - bits)
}

/// Bit of a task in a 64-bit PID window: `hash_32(pid, ilog2(BITS_PER_LONG))`.
pub fn pid_bit(tid: u32) -> u64 {
    1u64 << hash_32(tid, 6)
}

/// Number of distinct PID-window bits used by `count` consecutive TIDs
/// starting at `first_tid`.
pub fn distinct_bits(first_tid: u32, count: u32) -> u32 {
    let mut w = 0u64;
    for t in first_tid..first_tid + count {
        w |= pid_bit(t);
    }
    w.count_ones()
}

/// `VMA_4M` of RFC 2/6.
pub const VMA_4M: u32 = 1 << 22;
/// `VMA_RATELIMIT_SCALEDOWN_F` of RFC 2/6.
pub const VMA_RATELIMIT_SCALEDOWN_F: u32 = 7;

/// RFC 2/6 `vma_scan_ratelimit()`, exactly as written: the VMA size is
/// truncated to 32 bits (so 4 GiB wraps to 0), and a PID-inactive VMA is
/// forced through once every `ratelimit + 1` visits.
pub fn vma_scan_ratelimit(vma_bytes: u64) -> u32 {
    let size = vma_bytes as u32; // `unsigned int vma_size` in the patch
    let ratelimit = VMA_4M
        .checked_div(size)
        .map_or(0, |r| r >> VMA_RATELIMIT_SCALEDOWN_F);
    1 + ratelimit
}

/// The PID windows of one VMA (`pids_active[2]`, `access_pids[2]` before
/// v6.7): `[0]` is the previous window, `[1]` the current one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PidWindows {
    /// Previous and current windows.
    pub w: [u64; 2],
}

impl PidWindows {
    /// Records a hint fault by `tid` in the current window.
    pub fn record(&mut self, tid: u32) {
        self.w[1] |= pid_bit(tid);
    }

    /// Whether `tid`'s bit is set in either window.
    pub fn contains(&self, tid: u32) -> bool {
        (self.w[0] | self.w[1]) & pid_bit(tid) != 0
    }

    /// Rotates: the current window becomes the previous one.
    pub fn rotate(&mut self) {
        self.w[0] = self.w[1];
        self.w[1] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_32_reference_values() {
        assert_eq!(hash_32(0, 6), 0);
        assert_eq!(hash_32(1, 6), 24);
        assert_eq!(hash_32(2, 6), 48);
        assert_eq!(hash_32(3, 6), 9);
        assert_eq!(hash_32(1, 32), GOLDEN_RATIO_32);
        assert_eq!(hash_32(u32::MAX, 32), GOLDEN_RATIO_32.wrapping_neg());
    }

    #[test]
    fn consecutive_tids_spread_like_the_research_table() {
        // The distinct bits of `hash_32(tid, 6)` over consecutive TIDs, as
        // the kernel's `vma_is_accessed()` PID hash gives them: 8→8, 16→16,
        // 32→32, 48→45–47, 64→55, ≥96→64 (computed from the kernel's
        // hash_32 and golden ratio).
        for first in [1000u32, 4242, 123_456] {
            assert_eq!(distinct_bits(first, 8), 8);
            assert_eq!(distinct_bits(first, 16), 16);
            assert_eq!(distinct_bits(first, 32), 32);
            let b48 = distinct_bits(first, 48);
            assert!((44..=48).contains(&b48), "{first}: {b48}");
            assert_eq!(distinct_bits(first, 96), 64, "{first}");
            assert_eq!(distinct_bits(first, 128), 64);
        }
    }

    #[test]
    fn rfc_ratelimit_table_follows_the_code_not_the_comment() {
        assert_eq!(vma_scan_ratelimit(4 << 10), 9);
        assert_eq!(vma_scan_ratelimit(8 << 10), 5);
        assert_eq!(vma_scan_ratelimit(16 << 10), 3);
        assert_eq!(vma_scan_ratelimit(32 << 10), 2);
        assert_eq!(vma_scan_ratelimit(64 << 10), 1);
        assert_eq!(vma_scan_ratelimit(4 << 20), 1);
        assert_eq!(vma_scan_ratelimit(3 << 30), 1);
        // 32-bit truncation: exactly 4 GiB is size 0, 4 GiB + 4 KiB is 4 KiB.
        assert_eq!(vma_scan_ratelimit(4 << 30), 1);
        assert_eq!(vma_scan_ratelimit((4 << 30) + 4096), 9);
    }

    #[test]
    fn windows_rotate() {
        let mut w = PidWindows::default();
        w.record(77);
        assert!(w.contains(77));
        w.rotate();
        assert!(w.contains(77));
        w.rotate();
        assert!(!w.contains(77));
    }
}
