//! The flush-threshold accounting of a policy, one update and one flush
//! visit at a time: what an update's walk does (levels entered, counts
//! folded into, counts read) and when a read flushes.
//!
//! The engine ([`crate::engine`]) keeps the statistics; this model keeps
//! only the *counts* that decide flushes, the way each kernel era does:
//!
//! | knob (hierstat `Policy`) | update | flush visit of (group, CPU) |
//! |---|---|---|
//! | `threshold = none` (5.13) | nothing counted | — |
//! | `global` (5.16–6.7) | a per-CPU residue; at `batch` it is folded into the one global count (with a guarded fold, `873f64b791a2`, skipped while the count is above `T`; 5.16's fold is always made) | a root flush zeroes the global count |
//! | `per-group`, `per-ancestor` (6.8) | each level from the group up: its per-CPU residue, at `batch` folded into the level's count unless that count is above `T` | zeroes the (group, CPU) residue, and the group's count if non-zero |
//! | + early break (6.17, 2025) | as 6.8, but the walk stops at the first level whose count is above `T` | as 6.8 |
//! | `per-group`, `folded` (hierstat) | a residue at the updated group; at `batch` folded into the group and every ancestor not above `T` | the count is reduced by what the flush saw (not zeroed) |
//!
//! "Above `T`" is the kernel's `atomic_read(count) > T`, strictly.
//!
//! A kernel flush is not one instant: it visits each CPU in turn and, on
//! each, every updated group of the subtree children first, zeroing as it
//! goes ([`ThresholdCounts::begin_flush`], [`ThresholdCounts::visit_next`]).
//! An update that lands between the visit of a child and the visit of its
//! parent is kept by the child and wiped from the parent, so the child's
//! count runs ahead of its parent's. With the early break, once the child
//! is above `T` every update stops at the child: the parent's count, at or
//! below `T`, never grows, and no read of the parent flushes until a
//! forced (periodic) flush. That is the host's stale read (kernel mode's
//! `stale-read` experiment; docs/fidelity.md), which this model predicts
//! with the same sequence (`kernelmode::twin`). The engine itself resets
//! by snapshot and cannot show it.

use crate::workload::{GroupIdx, TreeShape};
use hierstat::{EarlyBreak, Policy, ThresholdRule, ThresholdScheme};
use lab::kernel::Fold;
use lab::policy::FlushPolicy;

/// How a flush clears a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// The kernel: each visit writes 0 to the (group, CPU) residue and, if
    /// non-zero, to the group's count; concurrent folds in between are lost.
    Zero,
    /// hierstat: the count is reduced by what the flush's snapshot saw, so
    /// folds during the flush stay counted.
    Snapshot,
}

impl Reset {
    /// How `choice` resets: the kernels (era presets, built-in kernel
    /// policies) zero, hierstat and user policies (which run on the
    /// engine) subtract their snapshot.
    pub fn of(choice: FlushPolicy) -> Reset {
        if choice.is_kernel() {
            Reset::Zero
        } else {
            Reset::Snapshot
        }
    }
}

/// What one update's threshold walk did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walk {
    /// Levels whose per-CPU residue the walk added to.
    pub levels: u32,
    /// Counts (by group; the global count is group 0) the walk folded into
    /// with an atomic RMW.
    pub folds: Vec<GroupIdx>,
    /// Counts the walk read (its "already above `T`?" checks).
    pub reads: Vec<GroupIdx>,
}

impl Walk {
    /// Clears the walk for the next update.
    pub fn clear(&mut self) {
        self.levels = 0;
        self.folds.clear();
        self.reads.clear();
    }
}

/// A flush under way: the pass it is in and, for [`Reset::Snapshot`], the
/// counts it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flush {
    /// The flushed group.
    pub group: GroupIdx,
    /// The CPU whose pass comes next.
    next_cpu: usize,
    /// The pass under way: its CPU and its groups, children first.
    pass: Option<usize>,
    list: Vec<GroupIdx>,
    pos: usize,
    snapshot: Vec<(GroupIdx, u64)>,
    root: bool,
}

/// The threshold counts of one policy over one tree and `cpus` CPUs.
#[derive(Debug, Clone)]
pub struct ThresholdCounts {
    rule: ThresholdRule,
    per_ancestor: bool,
    break_above: u64,
    reset: Reset,
    fold_always: bool,
    batch: u64,
    threshold: u64,
    cpus: usize,
    parent: Vec<Option<GroupIdx>>,
    last: Vec<GroupIdx>,
    residue: Vec<u64>,
    count: Vec<u64>,
    on_tree: Vec<bool>,
}

impl ThresholdCounts {
    /// The counts of `policy` (reset per `reset`) over `shape` on `cpus`
    /// CPUs, all zero; a global count's folds are guarded (skipped while
    /// the count is above `T`).
    pub fn new(policy: &Policy, reset: Reset, shape: &TreeShape, cpus: usize) -> Self {
        Self::with_fold(policy, reset, Fold::Guarded, shape, cpus)
    }

    /// As [`ThresholdCounts::new`], a global count's folds made as `fold`
    /// says ([`Fold::Always`]: 5.16's unconditional `atomic_add`, no read).
    pub fn with_fold(
        policy: &Policy,
        reset: Reset,
        fold: Fold,
        shape: &TreeShape,
        cpus: usize,
    ) -> Self {
        let cpus = cpus.max(1);
        let n = shape.len();
        let threshold = policy.threshold_pages(cpus);
        ThresholdCounts {
            rule: match policy.threshold {
                r @ (ThresholdRule::None | ThresholdRule::Global | ThresholdRule::PerGroup) => r,
                // A rule this model does not know (the enum is
                // non-exhaustive): counted as none, every read flushes.
                _ => ThresholdRule::None,
            },
            per_ancestor: policy.scheme == ThresholdScheme::PerAncestor,
            break_above: if policy.early_break == EarlyBreak::Off {
                u64::MAX
            } else {
                policy.break_above(cpus)
            },
            reset,
            fold_always: fold == Fold::Always,
            batch: u64::from(policy.batch).max(1),
            threshold,
            cpus,
            parent: shape.groups().iter().map(|g| g.parent).collect(),
            last: shape.groups().iter().map(|g| g.last).collect(),
            residue: vec![0; n * cpus],
            count: vec![0; n],
            on_tree: vec![false; n * cpus],
        }
    }

    /// The counts of a stats policy choice (its knobs, its kernel path's
    /// global fold); `None` for the pre-rstat baseline, which counts
    /// nothing.
    pub fn of_choice(choice: FlushPolicy, shape: &TreeShape, cpus: usize) -> Option<Self> {
        let policy = choice.knobs()?;
        Some(Self::with_fold(
            &policy,
            Reset::of(choice),
            choice.path.update.global_fold,
            shape,
            cpus,
        ))
    }

    /// Spreads the per-CPU residues evenly over `0..batch` (CPU `c` starts
    /// at `c × batch / cpus`, at every level), as in a steady state where
    /// the CPUs' folds are not in phase; a run that starts every residue
    /// at zero makes every CPU fold in the same instant, a convoy the
    /// kernel does not see.
    pub fn stagger_residues(&mut self) {
        let n = self.parent.len();
        for cpu in 0..self.cpus {
            let r = cpu as u64 * self.batch / self.cpus as u64;
            for g in 0..n {
                self.residue[g * self.cpus + cpu] = r;
            }
        }
    }

    /// The flush threshold `T` in pages.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// The count of `g` (the global count for a global threshold).
    pub fn count(&self, g: GroupIdx) -> u64 {
        self.count[self.slot(g)]
    }

    fn slot(&self, g: GroupIdx) -> usize {
        match self.rule {
            ThresholdRule::Global => 0,
            _ => g as usize,
        }
    }

    fn above(&self, g: GroupIdx) -> bool {
        self.count[self.slot(g)] > self.threshold
    }

    /// Whether a threshold-guarded read of `g` flushes.
    pub fn needs_flush(&self, g: GroupIdx) -> bool {
        match self.rule {
            ThresholdRule::None => true,
            _ => self.above(g),
        }
    }

    fn mark_updated(&mut self, cpu: usize, g: GroupIdx) {
        let mut at = Some(g);
        while let Some(x) = at {
            let k = x as usize * self.cpus + cpu;
            if self.on_tree[k] {
                break;
            }
            self.on_tree[k] = true;
            at = self.parent[x as usize];
        }
    }

    /// One stat update of `magnitude` pages at `g` on `cpu`: the walk's
    /// work into `walk` (cleared first).
    pub fn update(&mut self, cpu: usize, g: GroupIdx, magnitude: u64, walk: &mut Walk) {
        walk.clear();
        let cpu = cpu % self.cpus;
        if magnitude == 0 {
            return;
        }
        self.mark_updated(cpu, g);
        match self.rule {
            ThresholdRule::Global => {
                walk.levels = 1;
                let r = &mut self.residue[cpu];
                *r += magnitude;
                if *r >= self.batch {
                    let x = std::mem::take(r);
                    if self.fold_always {
                        self.count[0] += x;
                        walk.folds.push(0);
                    } else {
                        walk.reads.push(0);
                        if !self.above(0) {
                            self.count[0] += x;
                            walk.folds.push(0);
                        }
                    }
                }
            }
            ThresholdRule::PerGroup if self.per_ancestor => {
                let mut at = Some(g);
                while let Some(m) = at {
                    if self.break_above != u64::MAX {
                        walk.reads.push(m);
                        if self.count[m as usize] > self.break_above {
                            break;
                        }
                    }
                    walk.levels += 1;
                    let k = m as usize * self.cpus + cpu;
                    self.residue[k] += magnitude;
                    if self.residue[k] >= self.batch {
                        let x = std::mem::take(&mut self.residue[k]);
                        if self.break_above == u64::MAX {
                            walk.reads.push(m);
                        }
                        if !self.above(m) {
                            self.count[m as usize] += x;
                            walk.folds.push(m);
                        }
                    }
                    at = self.parent[m as usize];
                }
            }
            ThresholdRule::PerGroup => {
                walk.levels = 1;
                let k = g as usize * self.cpus + cpu;
                self.residue[k] += magnitude;
                if self.residue[k] >= self.batch {
                    let x = std::mem::take(&mut self.residue[k]);
                    let mut at = Some(g);
                    while let Some(m) = at {
                        walk.reads.push(m);
                        if self.count[m as usize] > self.break_above {
                            break;
                        }
                        // A group already above T is skipped (its flush
                        // carries what the skip leaves out).
                        if !self.above(m) {
                            self.count[m as usize] += x;
                            walk.folds.push(m);
                        }
                        at = self.parent[m as usize];
                    }
                }
            }
            // `None` (and any rule `new` counted as none): nothing to count.
            _ => {}
        }
    }

    /// Starts a flush of `g`'s subtree (a root flush also clears a global
    /// count at its end); a snapshot reset records the counts it sees now.
    pub fn begin_flush(&self, g: GroupIdx) -> Flush {
        let (lo, hi) = (g as usize, self.last[g as usize] as usize);
        let snapshot = match self.reset {
            Reset::Zero => Vec::new(),
            Reset::Snapshot => (lo..=hi)
                .map(|x| (x as GroupIdx, self.count[x]))
                .filter(|&(_, c)| c != 0)
                .collect(),
        };
        Flush {
            group: g,
            next_cpu: 0,
            pass: None,
            list: Vec::new(),
            pos: 0,
            snapshot,
            root: self.parent[g as usize].is_none(),
        }
    }

    /// The flush's next visit, made now: `(cpu, group)`, or `None` when
    /// every CPU's pass is done. A CPU's pass begins by taking the
    /// subtree's groups off that CPU's updated tree, children first (the
    /// kernel's `css_rstat_updated_list`): an update after that puts its
    /// group and ancestors back. A visit zeroes the (group, CPU) residue
    /// and, under [`Reset::Zero`], the group's count.
    pub fn visit_next(&mut self, f: &mut Flush) -> Option<(usize, GroupIdx)> {
        while f.pos == f.list.len() {
            if f.next_cpu == self.cpus {
                f.pass = None;
                return None;
            }
            let cpu = f.next_cpu;
            f.next_cpu += 1;
            f.list.clear();
            f.pos = 0;
            let (lo, hi) = (f.group as usize, self.last[f.group as usize] as usize);
            for x in (lo..=hi).rev() {
                let k = x * self.cpus + cpu;
                if self.on_tree[k] {
                    self.on_tree[k] = false;
                    f.list.push(x as GroupIdx);
                }
            }
            f.pass = Some(cpu);
        }
        let cpu = f.pass.expect("a pass is under way");
        let x = f.list[f.pos];
        f.pos += 1;
        if self.rule == ThresholdRule::PerGroup {
            self.residue[x as usize * self.cpus + cpu] = 0;
            if self.reset == Reset::Zero {
                self.count[x as usize] = 0;
            }
        }
        Some((cpu, x))
    }

    /// Ends the flush: a snapshot reset subtracts what the flush saw; a
    /// root flush clears a global count.
    pub fn end_flush(&mut self, f: Flush) {
        for (x, c) in f.snapshot {
            let v = &mut self.count[x as usize];
            *v = v.saturating_sub(c);
        }
        if f.root && self.rule == ThresholdRule::Global {
            self.count[0] = 0;
        }
    }

    /// A whole flush of `g` with no update in between.
    pub fn flush(&mut self, g: GroupIdx) {
        let mut f = self.begin_flush(g);
        while self.visit_next(&mut f).is_some() {}
        self.end_flush(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::Preset;

    fn counts(p: Preset, depth: u32, cpus: usize) -> ThresholdCounts {
        ThresholdCounts::of_choice(FlushPolicy::preset(p), &TreeShape::chain(depth), cpus).unwrap()
    }

    #[test]
    fn per_ancestor_walks_every_level_and_folds_at_batch() {
        let mut c = counts(Preset::Linux6_8, 2, 2);
        let mut w = Walk::default();
        for _ in 0..63 {
            c.update(0, 2, 1, &mut w);
            assert_eq!(w.levels, 3);
            assert!(w.folds.is_empty());
        }
        c.update(0, 2, 1, &mut w);
        assert_eq!(w.folds, vec![2, 1, 0]);
        assert_eq!((c.count(2), c.count(1), c.count(0)), (64, 64, 64));
        assert_eq!(c.threshold(), 128);
        assert!(!c.needs_flush(2));
        for _ in 0..128 {
            c.update(0, 2, 1, &mut w);
        }
        // 6.8 skips the fold once a level is above T, but keeps walking.
        assert!(c.needs_flush(1) && c.count(1) == 192);
        c.update(0, 2, 1, &mut w);
        assert_eq!(w.levels, 3);
        c.flush(0);
        assert_eq!((c.count(2), c.count(0)), (0, 0));
    }

    #[test]
    fn early_break_stops_at_the_first_level_above_t() {
        let mut c = counts(Preset::Linux6_17, 2, 2);
        let mut w = Walk::default();
        for _ in 0..192 {
            c.update(0, 2, 1, &mut w);
        }
        assert_eq!(c.count(2), 192);
        c.update(0, 2, 1, &mut w);
        assert_eq!(w.levels, 0, "{w:?}");
        assert_eq!(w.reads, vec![2]);
    }

    /// The host's stale read: a fold between a child's visit and its
    /// parent's leaves the child ahead; with the early break the parent
    /// then never reaches T until a forced flush.
    #[test]
    fn a_fold_between_visits_traps_the_parent_under_t() {
        for (p, trapped) in [(Preset::Linux6_17, true), (Preset::Linux6_8, false)] {
            let mut c = counts(p, 2, 2);
            let mut w = Walk::default();
            for _ in 0..130 {
                c.update(0, 2, 1, &mut w);
            }
            let mut f = c.begin_flush(1);
            assert_eq!(c.visit_next(&mut f), Some((0, 2)));
            for _ in 0..64 {
                c.update(0, 2, 1, &mut w);
            }
            assert_eq!(c.visit_next(&mut f), Some((0, 1)));
            assert_eq!(c.visit_next(&mut f), None, "nothing updated on CPU 1");
            c.end_flush(f);
            assert_eq!((c.count(2), c.count(1)), (64, 0));
            for _ in 0..10_000 {
                c.update(0, 2, 1, &mut w);
            }
            assert_eq!(!c.needs_flush(1), trapped, "{p:?}: {}", c.count(1));
            if trapped {
                assert_eq!(c.count(1), 128, "stuck at exactly T");
            }
        }
    }

    #[test]
    fn snapshot_reset_keeps_folds_made_during_the_flush() {
        let mut c = counts(Preset::Hierstat, 2, 2);
        let mut w = Walk::default();
        for _ in 0..64 {
            c.update(0, 2, 1, &mut w);
        }
        assert_eq!(w.levels, 1);
        let mut f = c.begin_flush(1);
        c.visit_next(&mut f);
        for _ in 0..32 {
            c.update(1, 2, 1, &mut w);
        }
        while c.visit_next(&mut f).is_some() {}
        c.end_flush(f);
        assert_eq!((c.count(2), c.count(1)), (32, 32));
    }

    #[test]
    fn global_counts_once_and_a_root_flush_clears_it() {
        let mut c = counts(Preset::Linux5_15, 4, 2);
        let mut w = Walk::default();
        for _ in 0..32 {
            c.update(1, 4, 1, &mut w);
            assert_eq!(w.levels, 1);
        }
        assert_eq!(w.folds, vec![0]);
        assert_eq!(c.count(3), 32);
        c.flush(0);
        assert_eq!(c.count(0), 0);
        assert!(counts(Preset::Linux5_13, 1, 1).needs_flush(1));
    }

    /// 5.16's fold is an unconditional atomic add; `873f64b791a2` (6.0)
    /// reads the count first and skips the add once it is above `T`.
    #[test]
    fn an_unconditional_fold_keeps_adding_above_t() {
        let p = Preset::Linux5_15.policy();
        let shape = TreeShape::chain(1);
        let mut w = Walk::default();
        for (fold, folds_above_t) in [(Fold::Always, true), (Fold::Guarded, false)] {
            let mut c = ThresholdCounts::with_fold(&p, Reset::Zero, fold, &shape, 2);
            for _ in 0..(3 * 64) {
                c.update(0, 1, 1, &mut w);
            }
            assert!(c.needs_flush(1), "{fold:?}: above T = 64");
            for _ in 0..31 {
                c.update(0, 1, 1, &mut w);
            }
            c.update(0, 1, 1, &mut w);
            assert_eq!(!w.folds.is_empty(), folds_above_t, "{fold:?}: {w:?}");
            assert_eq!(w.reads.is_empty(), fold == Fold::Always, "{fold:?}: {w:?}");
        }
        let five = ThresholdCounts::of_choice(FlushPolicy::preset(Preset::Linux5_15), &shape, 2);
        let mut five = five.unwrap();
        for _ in 0..32 {
            five.update(0, 1, 1, &mut w);
        }
        assert!(w.reads.is_empty(), "5.15 is priced with its era's fold");
    }
}
