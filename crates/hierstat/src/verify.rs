//! Invariant checks, for tests and for users who want to audit a tree
//! (reached through [`Simulator`](crate::sim::Simulator)).
//!
//! Notation: `A[n]` = `agg`, `P[n]` = `pending`, `F[n]` = `local` (what was
//! flushed of `n`'s own updates).

use crate::dirty::NONE;
use crate::engine::Core;
use crate::sync::Ordering;
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

impl Core {
    /// See [`Simulator::verify`](crate::sim::Simulator::verify).
    pub(crate) fn verify(&self) -> Result<(), Violation> {
        let _gate = self.enter_for_verify();
        let st = self.groups.read();
        let slots = self.params.schema.slots();
        let n_ids = st.ids();
        let mut child_sum = vec![0i64; n_ids * slots];
        for (&r, acc) in st.reaped() {
            child_sum[r as usize * slots..(r as usize + 1) * slots].copy_from_slice(acc);
        }
        for g in st.all() {
            let p = g.parent_id();
            if p != NONE {
                for k in 0..slots {
                    // ORDERING: Relaxed; flushes are excluded.
                    let v = g.agg[k].load(Ordering::Relaxed);
                    let e = &mut child_sum[p as usize * slots + k];
                    *e = e.wrapping_add(v);
                }
            }
        }
        for g in st.all() {
            let r = g.hot.id as usize;
            // A saturated item is pinned, not summed (its ancestors are
            // saturated with it).
            let saturated = self.saturation.slots_of(g);
            for k in 0..slots {
                if saturated.as_ref().is_some_and(|sat| sat.get(k).is_some()) {
                    continue;
                }
                let a = g.agg[k].load(Ordering::Relaxed);
                let p = g.pending().map_or(0, |ps| ps[k].load(Ordering::Relaxed));
                let f = g.local[k].load(Ordering::Relaxed);
                if a.wrapping_add(p) != f.wrapping_add(child_sum[r * slots + k]) {
                    return Err(Violation(format!(
                        "conservation broken at {:?} slot {k}: A {a} + P {p} != F {f} + ΣA(children) {}",
                        g.path,
                        child_sum[r * slots + k]
                    )));
                }
            }
        }
        for s in 0..self.params.shards {
            self.dirty
                .tree(s)
                .check_shape(|r| st.parent_id(r))
                .map_err(|e| Violation(format!("shard {s}: {e}")))?;
        }
        Ok(())
    }

    /// See [`Simulator::verify_clean`](crate::sim::Simulator::verify_clean).
    pub(crate) fn verify_clean(&self) -> Result<(), Violation> {
        let st = self.groups.read();
        for s in 0..self.params.shards {
            if self.dirty.tree(s).len() != 0 {
                return Err(Violation(format!("shard {s}: dirty tree not empty")));
            }
            if !self.dirty.list(s).is_empty_quiescent() {
                return Err(Violation(format!("shard {s}: update list not empty")));
            }
            for g in st.all() {
                let Some(row) = g.hot.rows.row(s) else {
                    continue;
                };
                if row.header().queued_quiescent() {
                    return Err(Violation(format!("{:?} still queued on shard {s}", g.path)));
                }
                for k in 0..self.params.schema.slots() {
                    if row.unflushed(k) != 0 {
                        return Err(Violation(format!(
                            "{:?} slot {k} unflushed on shard {s}",
                            g.path
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}
