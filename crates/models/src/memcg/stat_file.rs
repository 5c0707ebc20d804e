//! `memory.stat` and `memory.numa_stat` text in the kernel's format.
//!
//! Reading either file makes the policy's read-side flush of the group
//! (threshold-guarded under the 5.16+ and 6.8+ presets, exact under
//! `linux-5.13`), or for a reader that states an error budget
//! ([`MemcgTree::memory_stat_within`]) only the part of it that budget
//! needs, then prints hierarchical values: sizes in bytes, events
//! and `workingset_*` in counts. `slab` follows `slab_unreclaimable` as the
//! sum of both slab items; `pgscan`/`pgsteal` precede their
//! kswapd/direct/khugepaged split as sums; `hugetlb` appears only with the
//! `memory_hugetlb_accounting` mount option.

use super::{Class, MemcgError, MemcgId, MemcgTree, Slot, Stat};
use hierstat::sim::Simulator as _;
use hierstat::{
    sim::WorkCounters, FlushKind, FlushOutcome, OnBusy, ReadItem, Tolerance, Unit, Within,
    WithinFlush, PAGE_SIZE,
};
use std::fmt::Write as _;

impl MemcgTree {
    /// The value of `stat` for `id` as the file shows it: hierarchical,
    /// as of the last flush, converted to bytes for sizes. Does not flush.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn stat_value(&self, id: MemcgId, stat: Stat) -> Result<u64, MemcgError> {
        self.stat_value_node(id, stat, None)
    }

    /// As [`stat_value`](Self::stat_value) for one node of a per-node item
    /// (`None`: all nodes).
    ///
    /// # Errors
    /// Unknown group or node; per-node reads of non-node items.
    pub fn stat_value_node(
        &self,
        id: MemcgId,
        stat: Stat,
        node: Option<usize>,
    ) -> Result<u64, MemcgError> {
        let g = self.group(id)?;
        let raw = match self.schema().slot(stat) {
            Slot::Node(item) => self.stats().read_node(g, item, node)?,
            Slot::Plain(item) => self.stats().read(g, item)?,
        };
        Ok(match stat.unit() {
            Unit::Pages => raw * PAGE_SIZE,
            Unit::Bytes | Unit::Count => raw,
        })
    }

    /// The value of `stat` in pages (bytes items rounded down), as the
    /// kernel's `memcg_page_state` would return it. Does not flush.
    ///
    /// # Errors
    /// Unknown group or node.
    pub fn stat_pages(
        &self,
        id: MemcgId,
        stat: Stat,
        node: Option<usize>,
    ) -> Result<u64, MemcgError> {
        let v = self.stat_value_node(id, stat, node)?;
        Ok(match stat.unit() {
            Unit::Pages | Unit::Bytes => v / PAGE_SIZE,
            Unit::Count => v,
        })
    }

    /// The *local* (this group only) value of a per-node `stat` on `node`
    /// in pages, as of the last flush (`lruvec_page_state_local`).
    ///
    /// # Errors
    /// Unknown group or node.
    pub fn stat_local_pages(
        &self,
        id: MemcgId,
        stat: Stat,
        node: usize,
    ) -> Result<u64, MemcgError> {
        let g = self.group(id)?;
        let raw = match self.schema().slot(stat) {
            Slot::Node(item) => self.stats().read_node_local(g, item, Some(node))?,
            Slot::Plain(item) => self.stats().read_local(g, item)?,
        };
        Ok(match stat.unit() {
            Unit::Pages | Unit::Count => raw,
            Unit::Bytes => raw / PAGE_SIZE,
        })
    }

    /// The policy's read-side flush of `id` (what opening `memory.stat`
    /// does), with its engine work added to the tree's work counters.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn flush_for_read(&mut self, id: MemcgId) -> Result<FlushOutcome, MemcgError> {
        let g = self.group(id)?.clone();
        Ok(self.stats.flush_with(&g, FlushKind::Read, &mut self.work)?)
    }

    /// `memory.stat` of `id`: flushes per the policy, then formats.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_stat(&mut self, id: MemcgId) -> Result<String, MemcgError> {
        self.flush_for_read(id)?;
        self.format_memory_stat(id)
    }

    /// `memory.stat` of `id` read within `tolerance` of each item (an
    /// absolute budget in pages for sizes, bytes items included, and in
    /// counts for events): hierstat's `read_many_within`
    /// over every item the file prints flushes only what could break a
    /// budget, then formats. Returns the text and the reads (one per item
    /// of [`Stat::ALL`] shown, in order: each value's bound fits its budget
    /// unless `met` is false, which only a saturated item makes).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`]; an invalid tolerance.
    pub fn memory_stat_within(
        &mut self,
        id: MemcgId,
        tolerance: Tolerance,
    ) -> Result<(String, Vec<Within>, WithinFlush), MemcgError> {
        let g = self.group(id)?.clone();
        let reads: Vec<(ReadItem, Tolerance)> = Stat::ALL
            .iter()
            .filter(|&&st| st != Stat::Hugetlb || self.hugetlb_accounting())
            .map(|&st| {
                let t = match (st.unit(), tolerance) {
                    (Unit::Bytes, Tolerance::Absolute(a)) => {
                        Tolerance::Absolute(a.saturating_mul(PAGE_SIZE))
                    }
                    (Unit::Bytes, Tolerance::Either { relative, absolute }) => Tolerance::Either {
                        relative,
                        absolute: absolute.saturating_mul(PAGE_SIZE),
                    },
                    (_, t) => t,
                };
                match self.schema().slot(st) {
                    Slot::Node(item) => (ReadItem::Node(item, None), t),
                    Slot::Plain(item) => (ReadItem::Item(item), t),
                }
            })
            .collect();
        let mut out = Vec::with_capacity(reads.len());
        let done =
            self.stats
                .read_many_within_with(&g, &reads, OnBusy::Wait, &mut out, &mut self.work)?;
        Ok((self.format_memory_stat(id)?, out, done))
    }

    /// `stats` of `id` on NUMA node `node` (per-node items; other items
    /// their value) read within `tolerance` each, in the items' units:
    /// hierstat's `read_many_within`, which flushes only what could break a
    /// budget. What a refault that states an error budget reads of its
    /// eviction lruvec (`crate::workingset::RefaultFlush::flush_lruvec`).
    /// `out` receives one read per stat, in order; the engine's work goes
    /// to `work`, not to the tree's counters. Returns what it flushed.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`]; a node out of range or an invalid
    /// tolerance (then nothing is read or flushed).
    pub fn lruvec_within(
        &self,
        id: MemcgId,
        node: usize,
        stats: &[Stat],
        tolerance: Tolerance,
        out: &mut Vec<Within>,
        work: &mut WorkCounters,
    ) -> Result<WithinFlush, MemcgError> {
        let g = self.group(id)?;
        let reads: Vec<(ReadItem, Tolerance)> = stats
            .iter()
            .map(|&st| match self.schema().slot(st) {
                Slot::Node(item) => (ReadItem::Node(item, Some(node)), tolerance),
                Slot::Plain(item) => (ReadItem::Item(item), tolerance),
            })
            .collect();
        out.clear();
        Ok(self
            .stats
            .read_many_within_with(g, &reads, OnBusy::Wait, out, work)?)
    }

    /// `memory.stat` of `id` as of the last flush (no flush).
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn format_memory_stat(&self, id: MemcgId) -> Result<String, MemcgError> {
        let mut s = String::new();
        for &stat in Stat::ALL {
            if stat == Stat::Hugetlb && !self.hugetlb_accounting() {
                continue;
            }
            if stat == Stat::PgscanKswapd {
                let scan = self.stat_sum(
                    id,
                    &[
                        Stat::PgscanKswapd,
                        Stat::PgscanDirect,
                        Stat::PgscanKhugepaged,
                    ],
                )?;
                let steal = self.stat_sum(
                    id,
                    &[
                        Stat::PgstealKswapd,
                        Stat::PgstealDirect,
                        Stat::PgstealKhugepaged,
                    ],
                )?;
                let _ = writeln!(s, "pgscan {scan}");
                let _ = writeln!(s, "pgsteal {steal}");
            }
            let _ = writeln!(s, "{} {}", stat.name(), self.stat_value(id, stat)?);
            if stat == Stat::SlabUnreclaimable {
                let slab = self.stat_sum(id, &[Stat::SlabReclaimable, Stat::SlabUnreclaimable])?;
                let _ = writeln!(s, "slab {slab}");
            }
        }
        Ok(s)
    }

    fn stat_sum(&self, id: MemcgId, stats: &[Stat]) -> Result<u64, MemcgError> {
        stats.iter().map(|&st| self.stat_value(id, st)).sum()
    }

    /// `memory.numa_stat` of `id`: every per-node item as
    /// `name N0=value N1=value ...`; flushes per the policy first.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_numa_stat(&mut self, id: MemcgId) -> Result<String, MemcgError> {
        self.flush_for_read(id)?;
        let mut s = String::new();
        let shown = |s: &&Stat| {
            matches!(s.class(), Class::Node | Class::NodeEvent)
                && (**s != Stat::Hugetlb || self.hugetlb_accounting())
        };
        for &stat in Stat::ALL.iter().filter(shown) {
            let _ = write!(s, "{}", stat.name());
            for n in 0..self.nr_nodes() {
                let _ = write!(s, " N{n}={}", self.stat_value_node(id, stat, Some(n))?);
            }
            s.push('\n');
        }
        Ok(s)
    }

    /// `memory.events` of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_events(&self, id: MemcgId) -> Result<String, MemcgError> {
        Ok(self.events(id)?.format())
    }

    /// `memory.events.local` of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_events_local(&self, id: MemcgId) -> Result<String, MemcgError> {
        Ok(self.events_local(id)?.format())
    }

    /// `memory.swap.events` of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn memory_swap_events(&self, id: MemcgId) -> Result<String, MemcgError> {
        Ok(self.swap_events(id)?.format())
    }
}

/// Parses one key of a `memory.stat`-style text (`key value` lines), as
/// the selftests' `cg_read_key_long` does.
pub fn read_key(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}
