//! The page counter: usage and limits of one group (`memory.current`,
//! `memory.max`, `memory.high`, `memory.low`, failcnt).
//!
//! A counter only checks its own limit; the hierarchical charge (every
//! ancestor's counter, undone on failure) is in [`super::charge`]. The model
//! is driven through `&mut` (one simulated machine at a time), so the
//! counters are plain integers: no atomics, no ordering to justify.

/// "No limit" (`max` in the cgroup files).
pub const UNLIMITED: u64 = u64::MAX;

/// Usage and limits of one group, in pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCounter {
    usage: u64,
    max: u64,
    high: u64,
    low: u64,
    failcnt: u64,
    watermark: u64,
}

impl Default for PageCounter {
    fn default() -> Self {
        PageCounter::new()
    }
}

impl PageCounter {
    /// An empty, unlimited counter.
    pub fn new() -> Self {
        PageCounter {
            usage: 0,
            max: UNLIMITED,
            high: UNLIMITED,
            low: 0,
            failcnt: 0,
            watermark: 0,
        }
    }

    /// Charges `nr` pages if that keeps usage within `max`; otherwise counts
    /// a failure and charges nothing.
    pub fn try_charge(&mut self, nr: u64) -> bool {
        match self.usage.checked_add(nr) {
            Some(new) if new <= self.max => {
                self.usage = new;
                self.watermark = self.watermark.max(new);
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
        self.watermark = self.watermark.max(self.usage);
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

    /// The best-effort protection.
    pub fn low(&self) -> u64 {
        self.low
    }

    /// Charges refused by `max`.
    pub fn failcnt(&self) -> u64 {
        self.failcnt
    }

    /// Highest usage seen (`memory.peak`).
    pub fn watermark(&self) -> u64 {
        self.watermark
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

    /// Sets the protection.
    pub fn set_low(&mut self, pages: u64) {
        self.low = pages;
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
}
