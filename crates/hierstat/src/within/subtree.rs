//! A tolerance read of every group of a subtree
//! ([`HierStats::read_subtree_within`](crate::HierStats::read_subtree_within)):
//! a scrape, each group with its own budgets, served by *one* partial
//! flush of the subtree's root instead of one flush per group (each of
//! which would scan every shard).
//!
//! # The plan
//!
//! Every group `n` has a bound `b(n)` and a page budget `B(n)` (its items'
//! smallest, as for one group). The flush leaves an antichain `L` of
//! subtrees; afterwards an opened group's bound is the sum of the bounds of
//! the left groups below it, a left group's (and its descendants') is its
//! own, and a carried group's is 0. So the plan must give every opened
//! `n` `Σ_{l ∈ L below n} b(l) ≤ B(n)`, and every group inside a left
//! subtree `b ≤ B`:
//!
//! 1. a group is **clean** when it and all its descendants fit their own
//!    budgets; `L` starts as the maximal clean subtrees (the root's clean
//!    subtree means no flush at all);
//! 2. children before parents, each group that is not clean makes its own
//!    sum fit: while the left groups below it sum to more than its budget,
//!    the largest is opened (replaced by its children, all clean; a leaf
//!    is simply carried). Opening only lowers the sums of the groups above,
//!    so a group's constraint, once met, stays met;
//! 3. the groups not clean and with no left group below are carried; the
//!    others, and the root, are opened.
//!
//! The bounds after the flush hold for the reason `within.rs` gives for one
//! group (each opened group is the root of that argument for its own left
//! descendants). A group whose bound still does not fit (a relative budget
//! whose value moved, a racing update) is read again alone
//! ([`Core::read_within`]), after the shared flush.

use super::{page_budget, OnBusy, Req, Within, WithinFlush};
use crate::dirty::IdMap;
use crate::engine::Core;
use crate::flush::outcome::FlushOutcome;
use crate::flush::partial::Plan;
use crate::flush::state::{Gate, Wait};
use crate::policy::{ThresholdRule, ThresholdScheme};
use crate::state::GroupState;
use crate::sync::Arc;
use crate::work::{Work, WorkSink};

/// The subtree as the planner sees it.
struct Groups {
    /// Pre-order (parents first, children by name).
    nodes: Vec<Arc<GroupState>>,
    /// Index of each node's parent (`usize::MAX` for the subtree's root).
    parent: Vec<usize>,
    /// Indexes of each node's children.
    children: Vec<Vec<usize>>,
}

impl Core {
    /// The live groups of `root`'s subtree (see [`Groups`]).
    fn subtree_groups<W: WorkSink>(&self, root: &Arc<GroupState>, work: &mut W) -> Groups {
        let all = self.all_groups();
        work.count(Work::LockAcquired, 1);
        work.count(Work::Atomic, all.len() as u64);
        let mut index: IdMap<usize> = IdMap::default();
        let mut g = Groups {
            nodes: Vec::new(),
            parent: Vec::new(),
            children: Vec::new(),
        };
        for n in all {
            // Pre-order: a group of the subtree comes after its parent.
            let parent = if Arc::ptr_eq(&n, root) {
                usize::MAX
            } else {
                match n.hot.parent.as_ref().and_then(|p| index.get(&p.hot.id)) {
                    Some(&p) => p,
                    None => continue,
                }
            };
            let i = g.nodes.len();
            if parent != usize::MAX {
                g.children[parent].push(i);
            } else if !g.nodes.is_empty() {
                continue;
            }
            index.insert(n.hot.id, i);
            g.nodes.push(n);
            g.parent.push(parent);
            g.children.push(Vec::new());
        }
        g
    }

    /// A tolerance read of every group of `root`'s subtree (see the module
    /// docs); `visit` gets each group, parents first, with one [`Within`]
    /// per request. Returns what the shared flush did.
    pub(crate) fn read_subtree_within<W: WorkSink>(
        &self,
        root: &Arc<GroupState>,
        reqs: &[Req],
        on_busy: OnBusy,
        visit: &mut dyn FnMut(&Arc<GroupState>, &[Within]),
        work: &mut W,
    ) -> WithinFlush {
        let g = self.subtree_groups(root, work);
        let n = g.nodes.len();
        let k = reqs.len();
        let mut reads: Vec<Within> = Vec::with_capacity(n * k);
        let mut one = Vec::with_capacity(k);
        // 1. The bounds as they are.
        let judge_all = |reads: &mut Vec<Within>, one: &mut Vec<Within>| {
            reads.clear();
            let mut fits = Vec::with_capacity(n);
            for node in &g.nodes {
                fits.push(self.judge(node, reqs, None, WithinFlush::None, one));
                reads.extend_from_slice(one);
            }
            fits
        };
        let mut fits = judge_all(&mut reads, &mut one);
        let flush = 'flush: {
            if fits.iter().all(|&f| f) {
                break 'flush WithinFlush::None;
            }
            let wait = match on_busy {
                OnBusy::Wait => Wait::Block,
                OnBusy::ReturnBest => Wait::No,
            };
            let Some((gate, waited)) = self.flushes.enter(&self.params.policy, root, wait, work)
            else {
                for w in &mut reads {
                    w.flush = WithinFlush::Busy;
                }
                break 'flush WithinFlush::Busy;
            };
            if waited {
                fits = judge_all(&mut reads, &mut one);
                if fits.iter().all(|&f| f) {
                    break 'flush WithinFlush::None;
                }
            }
            // 2. Plan, flush, read with the composed bounds.
            let bounds: Vec<u64> = g
                .nodes
                .iter()
                .map(|node| self.error_bound(node).unwrap_or(u64::MAX))
                .collect();
            // As for one group (`Core::plan`): where the flush resets its
            // opened groups by what it carries (folded scheme, not a
            // per-pass gate), an opened group keeps its left groups'
            // counts, and above the threshold a count bounds nothing; so
            // each budget is capped at the threshold, or the group would
            // read with no bound until a whole flush and the next scrape
            // would flush it again.
            let resets = !matches!(gate, Gate::PerPass)
                && self.params.policy.scheme == ThresholdScheme::Folded;
            let budgets: Vec<u64> = (0..n)
                .map(|i| page_budget(reqs, &reads[i * k..(i + 1) * k]))
                .map(|b| {
                    if resets {
                        b.min(self.params.threshold)
                    } else {
                        b
                    }
                })
                .collect();
            let done = match plan(&g, &bounds, &budgets, self.params.policy.threshold) {
                Some((left, composed)) => {
                    // `g` holds every group of the subtree: no id is
                    // recycled while the flush runs.
                    let set = (0..n).filter(|&i| left[i]).map(|i| &*g.nodes[i]);
                    let plan = Plan::new(root, set, Vec::new(), composed[0]);
                    self.flush_subtree(root, &gate, Some(&plan), work);
                    self.flushes.record(FlushOutcome::Flushed { root: false });
                    let done = WithinFlush::Partial {
                        left: plan.left() as u32,
                        opened: plan.opened() as u32,
                    };
                    reads.clear();
                    for (i, node) in g.nodes.iter().enumerate() {
                        fits[i] = self.judge(node, reqs, Some(composed[i]), done, &mut one);
                        reads.extend_from_slice(&one);
                    }
                    done
                }
                None => {
                    self.flush_subtree(root, &gate, None, work);
                    let is_root = root.hot.parent.is_none();
                    self.flushes.record(FlushOutcome::Flushed { root: is_root });
                    reads.clear();
                    for (i, node) in g.nodes.iter().enumerate() {
                        fits[i] = self.judge(node, reqs, Some(0), WithinFlush::Full, &mut one);
                        reads.extend_from_slice(&one);
                    }
                    WithinFlush::Full
                }
            };
            drop(gate);
            if done == WithinFlush::Full && root.hot.parent.is_none() {
                self.reap_if_any();
            }
            // 3. A group still over its budget, alone.
            for i in 0..n {
                if !fits[i] {
                    self.read_within(&g.nodes[i], reqs, on_busy, &mut one, work);
                    reads[i * k..(i + 1) * k].copy_from_slice(&one);
                }
            }
            done
        };
        for (i, node) in g.nodes.iter().enumerate() {
            visit(node, &reads[i * k..(i + 1) * k]);
        }
        flush
    }
}

/// The plan of the module docs for `g` with each group's bound (pages,
/// `u64::MAX` for none) and budget: which groups are left, and each
/// group's composed bound afterwards (the sum of the left bounds below
/// it, or its own bound inside a left subtree). `None` for a whole flush.
fn plan(
    g: &Groups,
    bound: &[u64],
    budget: &[u64],
    rule: ThresholdRule,
) -> Option<(Vec<bool>, Vec<u64>)> {
    let n = g.nodes.len();
    if rule != ThresholdRule::PerGroup {
        return None;
    }
    // Children before parents: reverse pre-order.
    let mut clean = vec![false; n];
    for i in (0..n).rev() {
        clean[i] = bound[i] <= budget[i] && g.children[i].iter().all(|&c| clean[c]);
    }
    let mut left = vec![false; n];
    for i in 1..n {
        left[i] = clean[i] && !clean[g.parent[i]];
    }
    // Each group that is not clean makes its own sum fit.
    let mut heap = std::collections::BinaryHeap::new();
    let mut stack = Vec::new();
    for i in (0..n).rev() {
        if clean[i] {
            continue;
        }
        heap.clear();
        stack.clear();
        stack.extend_from_slice(&g.children[i]);
        let mut sum = 0u64;
        while let Some(c) = stack.pop() {
            if left[c] {
                heap.push((bound[c], std::cmp::Reverse(c)));
                sum = sum.saturating_add(bound[c]);
            } else {
                stack.extend_from_slice(&g.children[c]);
            }
        }
        while sum > budget[i] {
            let Some((b, std::cmp::Reverse(c))) = heap.pop() else {
                break;
            };
            left[c] = false;
            sum -= b;
            for &d in &g.children[c] {
                left[d] = true;
                heap.push((bound[d], std::cmp::Reverse(d)));
                sum = sum.saturating_add(bound[d]);
            }
        }
    }
    if !left.iter().any(|&l| l) {
        return None;
    }
    // Composed bounds: inside a left subtree its own; else the left sum.
    let mut inside = vec![false; n];
    for i in 0..n {
        inside[i] = left[i] || (i > 0 && inside[g.parent[i]]);
    }
    let mut composed = vec![0u64; n];
    for i in (0..n).rev() {
        composed[i] = if inside[i] {
            bound[i]
        } else {
            g.children[i].iter().fold(0u64, |s, &c| {
                s.saturating_add(if left[c] { bound[c] } else { composed[c] })
            })
        };
    }
    Some((left, composed))
}
