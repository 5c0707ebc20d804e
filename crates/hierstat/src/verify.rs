//! Invariant checks, for tests and for users who want to audit a tree.
//!
//! Notation: `A[n]` = `agg`, `P[n]` = `pending`, `F[n]` = `local` (what was
//! flushed of `n`'s own updates).

use crate::slab::QUEUED;
use crate::stats::HierStats;
use crate::sync::{lock_tree, Ordering};
use crate::updated::NONE;
use std::fmt;

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Violation {}

impl HierStats {
    /// Checks, while excluding flushes:
    /// * conservation `A[n] + P[n] == F[n] + Σ A[children(n)]` for every
    ///   group (removed groups count as children of their parent) and slot
    ///   that is not saturated;
    /// * the tree shape on every shard: on-tree ⇒ parent on-tree.
    ///
    /// # Errors
    /// The first violation found.
    pub fn verify(&self) -> Result<(), Violation> {
        let core = &self.core;
        let root = core.root.clone();
        let _gate = core.enter_for_verify(&root);
        let st = core.read_structure();
        let slots = core.schema.slots();
        let n_rows = st.nodes.len();
        let mut child_sum = vec![0i64; n_rows * slots];
        for (&r, acc) in &st.reaped {
            child_sum[r as usize * slots..(r as usize + 1) * slots].copy_from_slice(acc);
        }
        for node in st.nodes.iter().flatten() {
            let p = node.parent_row();
            if p != NONE {
                for k in 0..slots {
                    // ORDERING: Relaxed; flushes are excluded.
                    let v = node.agg[k].load(Ordering::Relaxed);
                    let e = &mut child_sum[p as usize * slots + k];
                    *e = e.wrapping_add(v);
                }
            }
        }
        for node in st.nodes.iter().flatten() {
            let r = node.hot.row as usize;
            // A saturated item is pinned, not summed (its ancestors are
            // saturated with it).
            let saturated = core.saturated_slots(node);
            for k in 0..slots {
                if saturated.as_ref().is_some_and(|sat| sat.get(k).is_some()) {
                    continue;
                }
                let a = node.agg[k].load(Ordering::Relaxed);
                let p = node.pending().map_or(0, |ps| ps[k].load(Ordering::Relaxed));
                let f = node.local[k].load(Ordering::Relaxed);
                if a.wrapping_add(p) != f.wrapping_add(child_sum[r * slots + k]) {
                    return Err(Violation(format!(
                        "conservation broken at {:?} slot {k}: A {a} + P {p} != F {f} + ΣA(children) {}",
                        node.path,
                        child_sum[r * slots + k]
                    )));
                }
            }
        }
        for s in 0..core.shards {
            lock_tree(&core.trees[s])
                .check_shape(|r| st.parent_row(r))
                .map_err(|e| Violation(format!("shard {s}: {e}")))?;
        }
        Ok(())
    }

    /// After quiescence and a forced root flush: every claim is clear, every
    /// update list and updated tree is empty and every counter is zero.
    ///
    /// # Errors
    /// The first (group, shard) that is not clean.
    pub fn verify_clean(&self) -> Result<(), Violation> {
        let core = &self.core;
        let st = core.read_structure();
        for s in 0..core.shards {
            if lock_tree(&core.trees[s]).len() != 0 {
                return Err(Violation(format!("shard {s}: updated tree not empty")));
            }
            if core.lists[s].take_all_peek() != 0 {
                return Err(Violation(format!("shard {s}: update list not empty")));
            }
            for node in st.nodes.iter().flatten() {
                let rows = &node.hot.rows;
                // ORDERING: Relaxed; quiescent.
                if rows.header(s).load(Ordering::Relaxed) & QUEUED != 0 {
                    return Err(Violation(format!(
                        "{:?} still queued on shard {s}",
                        node.path
                    )));
                }
                for k in 0..core.schema.slots() {
                    if rows.unflushed(s, k) != 0 {
                        return Err(Violation(format!(
                            "{:?} slot {k} unflushed on shard {s}",
                            node.path
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}
