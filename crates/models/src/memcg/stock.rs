//! The per-CPU charge stock (`memcg_stock`).
//!
//! A charge takes `max(nr, BATCH)` pages from the page counters and keeps
//! the excess in the CPU's stock, cached for one group; the next small
//! charge of that group on that CPU is served from the stock without
//! touching the counters. Pages in a stock are charged (they count in
//! `memory.current`) but belong to nobody, so `memory.current` exceeds the
//! sum of the `memory.stat` items by up to `cpus × BATCH` pages: the
//! selftests' `MAX_VMSTAT_ERROR`.

use super::MemcgId;

/// One CPU's stock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stock {
    /// The group whose pages are cached.
    pub cached: Option<MemcgId>,
    /// Pages cached.
    pub nr_pages: u64,
}

/// Pages drained from a stock: uncharge them from `memcg`'s counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// The group the pages were charged to.
    pub memcg: MemcgId,
    /// Pages to uncharge.
    pub nr_pages: u64,
}

/// The stocks of every CPU.
#[derive(Debug, Clone)]
pub struct Stocks {
    cpus: Vec<Stock>,
    batch: u64,
}

impl Stocks {
    /// Empty stocks for `cpus` CPUs with a batch of `batch` pages.
    pub fn new(cpus: usize, batch: u64) -> Self {
        Stocks {
            cpus: vec![Stock::default(); cpus],
            batch,
        }
    }

    /// The batch size in pages.
    pub fn batch(&self) -> u64 {
        self.batch
    }

    /// Number of CPUs.
    pub fn cpus(&self) -> usize {
        self.cpus.len()
    }

    /// One CPU's stock.
    pub fn get(&self, cpu: usize) -> Stock {
        self.cpus[cpu]
    }

    /// Takes `nr` pages of `memcg` from `cpu`'s stock if it holds enough.
    pub fn consume(&mut self, cpu: usize, memcg: MemcgId, nr: u64) -> bool {
        let s = &mut self.cpus[cpu];
        if nr <= self.batch && s.cached == Some(memcg) && s.nr_pages >= nr {
            s.nr_pages -= nr;
            true
        } else {
            false
        }
    }

    /// Puts `nr` charged pages of `memcg` in `cpu`'s stock. Returns what
    /// must be uncharged: the previous group's stock when it is replaced,
    /// and the whole stock when it grows beyond the batch.
    pub fn refill(&mut self, cpu: usize, memcg: MemcgId, nr: u64) -> Vec<Drained> {
        let mut out = Vec::new();
        let batch = self.batch;
        let s = &mut self.cpus[cpu];
        if s.cached != Some(memcg) {
            out.extend(Self::take(s));
            s.cached = Some(memcg);
        }
        s.nr_pages += nr;
        if s.nr_pages > batch {
            out.extend(Self::take(s));
        }
        out
    }

    fn take(s: &mut Stock) -> Option<Drained> {
        let d = s.cached.filter(|_| s.nr_pages > 0).map(|memcg| Drained {
            memcg,
            nr_pages: s.nr_pages,
        });
        *s = Stock::default();
        d
    }

    /// Empties `cpu`'s stock.
    pub fn drain(&mut self, cpu: usize) -> Option<Drained> {
        Self::take(&mut self.cpus[cpu])
    }

    /// Empties every stock whose group satisfies `pred`
    /// (`drain_all_stock` for a subtree, or a group being removed).
    pub fn drain_where(&mut self, mut pred: impl FnMut(MemcgId) -> bool) -> Vec<Drained> {
        self.cpus
            .iter_mut()
            .filter(|s| s.cached.is_some_and(&mut pred))
            .filter_map(Self::take)
            .collect()
    }

    /// Total pages held in all stocks for `memcg`.
    pub fn held(&self, memcg: MemcgId) -> u64 {
        self.cpus
            .iter()
            .filter(|s| s.cached == Some(memcg))
            .map(|s| s.nr_pages)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_refill_and_drain() {
        let a = MemcgId(2);
        let b = MemcgId(3);
        let mut s = Stocks::new(2, 64);
        assert!(!s.consume(0, a, 1));
        assert!(s.refill(0, a, 63).is_empty());
        assert!(s.consume(0, a, 60));
        assert!(!s.consume(0, a, 4));
        assert!(!s.consume(1, a, 1));
        // Switching groups drains the old stock.
        assert_eq!(
            s.refill(0, b, 10),
            vec![Drained {
                memcg: a,
                nr_pages: 3
            }]
        );
        // Growing beyond the batch drains everything.
        assert_eq!(
            s.refill(0, b, 60),
            vec![Drained {
                memcg: b,
                nr_pages: 70
            }]
        );
        assert_eq!(s.get(0), Stock::default());
        s.refill(1, a, 5);
        assert_eq!(s.held(a), 5);
        assert_eq!(
            s.drain_where(|m| m == a),
            vec![Drained {
                memcg: a,
                nr_pages: 5
            }]
        );
    }
}
