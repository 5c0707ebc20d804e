//! The page counter: usage and limits of one group (`memory.current`,
//! `memory.max`, `memory.high`, `memory.low`, `memory.min`, failcnt,
//! `memory.peak`), or of its swap (`memory.swap.*`).
//!
//! A counter only checks its own limit; the hierarchical charge (every
//! ancestor's counter, undone on failure) is in [`super::charge`], the
//! effective protection computed from `min`/`low` in [`super::protection`].
//! The model is driven through `&mut` (one simulated machine at a time), so
//! the counters are plain integers: no atomics, no ordering to justify.

/// "No limit" (`max` in the cgroup files).
pub const UNLIMITED: u64 = u64::MAX;

/// Usage and limits of one group, in pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCounter {
    usage: u64,
    max: u64,
    high: u64,
    low: u64,
    min: u64,
    failcnt: u64,
    watermark: u64,
    /// Highest usage since the last per-descriptor peak reset (any
    /// descriptor's); see [`super::peak`].
    local_watermark: u64,
}

impl Default for PageCounter {
    fn default() -> Self {
        PageCounter::new()
    }
}

impl PageCounter {
    /// An empty, unlimited, unprotected counter.
    pub fn new() -> Self {
        PageCounter {
            usage: 0,
            max: UNLIMITED,
            high: UNLIMITED,
            low: 0,
            min: 0,
            failcnt: 0,
            watermark: 0,
            local_watermark: 0,
        }
    }

    fn raise_watermarks(&mut self) {
        self.watermark = self.watermark.max(self.usage);
        self.local_watermark = self.local_watermark.max(self.usage);
    }

    /// Charges `nr` pages if that keeps usage within `max`; otherwise counts
    /// a failure and charges nothing.
    pub fn try_charge(&mut self, nr: u64) -> bool {
        match self.usage.checked_add(nr) {
            Some(new) if new <= self.max => {
                self.usage = new;
                self.raise_watermarks();
                true
            }
            _ => {
                self.failcnt += 1;
                false
            }
        }
    }

    /// Charges `nr` pages regardless of `max` (the kernel's
    /// `page_counter_charge`, used when a charge must not fail).
    pub fn force_charge(&mut self, nr: u64) {
        self.usage = self.usage.saturating_add(nr);
        self.raise_watermarks();
    }

    /// Removes `nr` pages; returns `false` (and changes nothing) if that
    /// would make usage negative.
    pub fn uncharge(&mut self, nr: u64) -> bool {
        match self.usage.checked_sub(nr) {
            Some(u) => {
                self.usage = u;
                true
            }
            None => false,
        }
    }

    /// Pages in use (`memory.current` / `PAGE_SIZE`).
    pub fn usage(&self) -> u64 {
        self.usage
    }

    /// The hard limit.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The throttling limit.
    pub fn high(&self) -> u64 {
        self.high
    }

    /// The best-effort protection (`memory.low`).
    pub fn low(&self) -> u64 {
        self.low
    }

    /// The hard protection (`memory.min`).
    pub fn min(&self) -> u64 {
        self.min
    }

    /// Charges refused by `max`.
    pub fn failcnt(&self) -> u64 {
        self.failcnt
    }

    /// Highest usage seen (`memory.peak` read through a descriptor that
    /// never reset it).
    pub fn watermark(&self) -> u64 {
        self.watermark
    }

    /// Highest usage since the most recent per-descriptor reset.
    pub fn local_watermark(&self) -> u64 {
        self.local_watermark
    }

    /// Starts a new local watermark at the current usage (a write to a
    /// `memory.peak` descriptor); returns the one it replaces.
    pub fn reset_local_watermark(&mut self) -> u64 {
        std::mem::replace(&mut self.local_watermark, self.usage)
    }

    /// Pages that can still be charged before `max`.
    pub fn margin(&self) -> u64 {
        self.max.saturating_sub(self.usage)
    }

    /// Sets the hard limit (usage above it is reclaimed by the caller).
    pub fn set_max(&mut self, pages: u64) {
        self.max = pages;
    }

    /// Sets the throttling limit.
    pub fn set_high(&mut self, pages: u64) {
        self.high = pages;
    }

    /// Sets the best-effort protection.
    pub fn set_low(&mut self, pages: u64) {
        self.low = pages;
    }

    /// Sets the hard protection.
    pub fn set_min(&mut self, pages: u64) {
        self.min = pages;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_refuses_and_counts_failures() {
        let mut c = PageCounter::new();
        c.set_max(10);
        assert!(c.try_charge(6));
        assert!(!c.try_charge(5));
        assert_eq!(c.usage(), 6);
        assert_eq!(c.failcnt(), 1);
        assert!(c.try_charge(4));
        assert_eq!(c.margin(), 0);
        assert!(c.uncharge(10));
        assert!(!c.uncharge(1));
        assert_eq!(c.watermark(), 10);
        c.force_charge(20);
        assert_eq!(c.usage(), 20);
    }

    #[test]
    fn local_watermark_restarts_at_usage() {
        let mut c = PageCounter::new();
        c.force_charge(50);
        c.uncharge(40);
        assert_eq!(c.reset_local_watermark(), 50);
        assert_eq!(c.local_watermark(), 10);
        c.force_charge(5);
        assert_eq!(c.local_watermark(), 15);
        assert_eq!(c.watermark(), 50);
    }
}
