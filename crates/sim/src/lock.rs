//! Flush locks as virtual-time resources.
//!
//! A flush holds the lock for its virtual duration. What a second flusher
//! does when it finds the lock held depends on the policy's concurrency rule
//! ([`LockMode`]):
//!
//! * [`LockMode::Serialize`]: it waits (FIFO); the wait is part of its
//!   latency (linux-5.13, linux-6.8, linux-6.17);
//! * [`LockMode::Skip`]: it does not flush at all and reads what is there
//!   (the 5.15–6.7 `trylock` / "flush ongoing" rule);
//! * [`LockMode::DisjointParallel`]: flushes of disjoint subtrees run in
//!   parallel; overlapping ones wait (FIFO among conflicting requests);
//! * [`LockMode::WaitOngoing`]: it waits (FIFO); a guarded (read) flush
//!   waits for at most a bound: the runner withdraws it at the deadline
//!   ([`FlushLock::withdraw`]) and it skips, and once granted it checks its
//!   threshold again. Forced and periodic flushes wait as under
//!   `Serialize`.
//!
//! A flush's scope is its subtree as a preorder interval `[lo, hi]` of the
//! group tree, so two scopes overlap iff one subtree contains the other.
//! Grants happen at request time or at a release, both driven by events, so
//! a waiter is granted exactly when the conflicting holder's hold ends.

use simcore::time::SimTime;
use std::collections::VecDeque;

/// How concurrent flushers interact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// One flusher at a time; the others wait in FIFO order.
    Serialize,
    /// One flusher at a time; the others skip their flush.
    Skip,
    /// Disjoint subtrees flush in parallel; overlapping flushes wait.
    DisjointParallel,
    /// One flusher at a time; a guarded flush waits at most `max_wait`,
    /// then skips; granted after a wait, it flushes only if still needed
    /// ([`hierstat::Concurrency::WaitOngoing`]).
    WaitOngoing {
        /// The longest wait (virtual ns).
        max_wait: SimTime,
    },
}

impl LockMode {
    /// The lock mode of a policy's concurrency rule.
    pub fn for_policy(c: hierstat::Concurrency) -> LockMode {
        match c {
            hierstat::Concurrency::Skip => LockMode::Skip,
            hierstat::Concurrency::Serialize => LockMode::Serialize,
            hierstat::Concurrency::DisjointParallel => LockMode::DisjointParallel,
            hierstat::Concurrency::WaitOngoing { max_wait_ms } => LockMode::WaitOngoing {
                max_wait: u64::from(max_wait_ms) * 1_000_000,
            },
            // A rule this simulator does not model (the enum is
            // non-exhaustive): one tree-wide lock.
            _ => LockMode::Serialize,
        }
    }
}

/// A subtree as an inclusive preorder interval of group indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    /// Preorder index of the subtree's root.
    pub lo: u32,
    /// Largest preorder index inside the subtree.
    pub hi: u32,
}

impl Scope {
    /// `true` when the two subtrees share a group.
    pub fn overlaps(&self, other: &Scope) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }
}

/// What a lock request got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// The lock is held by the requester from now on.
    Granted,
    /// The requester waits; it is granted at a later [`FlushLock::release`].
    Queued,
    /// The lock was busy and the policy skips (no flush).
    Skipped,
}

#[derive(Debug, Clone, Copy)]
struct Holder {
    request: u32,
    scope: Scope,
    until: SimTime,
}

#[derive(Debug, Clone, Copy)]
struct Waiter {
    request: u32,
    scope: Scope,
    since: SimTime,
}

/// A request granted at a release: who, and since when it waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The request id.
    pub request: u32,
    /// When the request was made (its wait is `now - since`).
    pub since: SimTime,
}

/// The flush lock of one simulated stats tree.
#[derive(Debug, Clone)]
pub struct FlushLock {
    mode: LockMode,
    holders: Vec<Holder>,
    waiters: VecDeque<Waiter>,
    acquisitions: u64,
    contended: u64,
    skipped: u64,
    total_wait: SimTime,
}

impl FlushLock {
    /// A free lock with the given concurrency rule.
    pub fn new(mode: LockMode) -> Self {
        FlushLock {
            mode,
            holders: Vec::new(),
            waiters: VecDeque::new(),
            acquisitions: 0,
            contended: 0,
            skipped: 0,
            total_wait: 0,
        }
    }

    /// The concurrency rule.
    pub fn mode(&self) -> LockMode {
        self.mode
    }

    fn conflicts(&self, a: &Scope, b: &Scope) -> bool {
        match self.mode {
            LockMode::Serialize | LockMode::Skip | LockMode::WaitOngoing { .. } => true,
            LockMode::DisjointParallel => a.overlaps(b),
        }
    }

    fn blocked(&self, scope: &Scope, waiters_before: usize) -> bool {
        self.holders.iter().any(|h| self.conflicts(&h.scope, scope))
            || self
                .waiters
                .iter()
                .take(waiters_before)
                .any(|w| self.conflicts(&w.scope, scope))
    }

    /// Requests the lock for `scope` at `now` on behalf of `request`.
    ///
    /// A granted request holds the lock until [`FlushLock::release`]; call
    /// [`FlushLock::set_until`] once its duration is known.
    pub fn request(&mut self, now: SimTime, request: u32, scope: Scope) -> Acquire {
        self.request_as(now, request, scope, self.mode == LockMode::Skip)
    }

    /// As [`FlushLock::request`] for a flush that waits whatever the
    /// policy's rule (a forced flush, a tolerance read's): it is never
    /// [`Acquire::Skipped`].
    pub fn request_waiting(&mut self, now: SimTime, request: u32, scope: Scope) -> Acquire {
        self.request_as(now, request, scope, false)
    }

    fn request_as(&mut self, now: SimTime, request: u32, scope: Scope, skip: bool) -> Acquire {
        if !self.blocked(&scope, self.waiters.len()) {
            self.holders.push(Holder {
                request,
                scope,
                until: SimTime::MAX,
            });
            self.acquisitions += 1;
            return Acquire::Granted;
        }
        self.contended += 1;
        if skip {
            self.skipped += 1;
            return Acquire::Skipped;
        }
        self.waiters.push_back(Waiter {
            request,
            scope,
            since: now,
        });
        Acquire::Queued
    }

    /// Records when the holder `request` will release the lock.
    pub fn set_until(&mut self, request: u32, until: SimTime) {
        if let Some(h) = self.holders.iter_mut().find(|h| h.request == request) {
            h.until = until;
        }
    }

    /// Earliest release time among the holders whose scope conflicts with
    /// `scope` (`None` when nothing conflicting is held).
    pub fn busy_until(&self, scope: Scope) -> Option<SimTime> {
        self.holders
            .iter()
            .filter(|h| self.conflicts(&h.scope, &scope))
            .map(|h| h.until)
            .max()
    }

    /// Releases the lock held by `request` at `now` and grants every waiter
    /// that no longer conflicts (in FIFO order); returns the grants.
    pub fn release(&mut self, request: u32, now: SimTime) -> Vec<Grant> {
        self.holders.retain(|h| h.request != request);
        let mut grants = Vec::new();
        let mut i = 0;
        while i < self.waiters.len() {
            let w = self.waiters[i];
            if self.blocked(&w.scope, i) {
                i += 1;
                continue;
            }
            self.waiters.remove(i);
            self.holders.push(Holder {
                request: w.request,
                scope: w.scope,
                until: SimTime::MAX,
            });
            self.acquisitions += 1;
            self.total_wait += now - w.since;
            grants.push(Grant {
                request: w.request,
                since: w.since,
            });
        }
        grants
    }

    /// Withdraws the waiting request `request` queued at `since` (its wait
    /// ran out: [`LockMode::WaitOngoing`]); `false` if it is not waiting
    /// any more (granted, or an id reused by a later request).
    pub fn withdraw(&mut self, request: u32, since: SimTime) -> bool {
        match self
            .waiters
            .iter()
            .position(|w| w.request == request && w.since == since)
        {
            Some(i) => {
                self.waiters.remove(i);
                self.skipped += 1;
                true
            }
            None => false,
        }
    }

    /// Number of grants so far.
    pub fn acquisitions(&self) -> u64 {
        self.acquisitions
    }

    /// Requests that found the lock busy (waited or skipped).
    pub fn contended(&self) -> u64 {
        self.contended
    }

    /// Requests that skipped their flush because the lock was busy.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Total virtual time spent waiting by granted waiters.
    pub fn total_wait(&self) -> SimTime {
        self.total_wait
    }

    /// Number of requests still waiting.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Scope = Scope { lo: 0, hi: 10 };

    #[test]
    fn serialize_grants_in_fifo_order_at_release() {
        let mut l = FlushLock::new(LockMode::Serialize);
        assert_eq!(l.request(0, 1, ALL), Acquire::Granted);
        l.set_until(1, 100);
        assert_eq!(l.request(5, 2, Scope { lo: 3, hi: 3 }), Acquire::Queued);
        assert_eq!(l.request(6, 3, Scope { lo: 4, hi: 4 }), Acquire::Queued);
        let g = l.release(1, 100);
        assert_eq!(
            g,
            vec![Grant {
                request: 2,
                since: 5
            }]
        );
        assert_eq!(l.total_wait(), 95);
        let g = l.release(2, 150);
        assert_eq!(
            g,
            vec![Grant {
                request: 3,
                since: 6
            }]
        );
    }

    #[test]
    fn skip_mode_skips_when_busy() {
        let mut l = FlushLock::new(LockMode::Skip);
        assert_eq!(l.request(0, 1, ALL), Acquire::Granted);
        assert_eq!(l.request(1, 2, ALL), Acquire::Skipped);
        assert_eq!(l.skipped(), 1);
        assert!(l.release(1, 10).is_empty());
        assert_eq!(l.request(11, 3, ALL), Acquire::Granted);
    }

    #[test]
    fn wait_ongoing_waits_then_can_be_withdrawn() {
        let mut l = FlushLock::new(LockMode::WaitOngoing { max_wait: 50 });
        assert_eq!(l.request(0, 1, ALL), Acquire::Granted);
        l.set_until(1, 100);
        assert_eq!(l.request(10, 2, ALL), Acquire::Queued);
        assert_eq!(l.request(20, 3, ALL), Acquire::Queued);
        // Request 2's wait runs out at 60: it leaves the queue, skipped.
        assert!(l.withdraw(2, 10));
        assert!(!l.withdraw(2, 10), "withdrawn once");
        assert_eq!(l.skipped(), 1);
        // Request 3 is granted at the release; its stale deadline is a no-op.
        assert_eq!(
            l.release(1, 65),
            vec![Grant {
                request: 3,
                since: 20
            }]
        );
        assert!(!l.withdraw(3, 20));
        // An id reused by a later request is not withdrawn by the old deadline.
        assert_eq!(l.request(70, 2, ALL), Acquire::Queued);
        assert!(!l.withdraw(2, 10));
        assert!(l.withdraw(2, 70));
    }

    #[test]
    fn disjoint_subtrees_run_in_parallel_overlapping_wait() {
        let mut l = FlushLock::new(LockMode::DisjointParallel);
        assert_eq!(l.request(0, 1, Scope { lo: 1, hi: 3 }), Acquire::Granted);
        assert_eq!(l.request(0, 2, Scope { lo: 4, hi: 6 }), Acquire::Granted);
        assert_eq!(l.request(0, 3, Scope { lo: 0, hi: 9 }), Acquire::Queued);
        // A later disjoint request must not overtake the queued root flush.
        assert_eq!(l.request(1, 4, Scope { lo: 7, hi: 7 }), Acquire::Queued);
        assert!(l.release(1, 10).is_empty());
        let g = l.release(2, 20);
        assert_eq!(
            g,
            vec![Grant {
                request: 3,
                since: 0
            }]
        );
        let g = l.release(3, 30);
        assert_eq!(
            g,
            vec![Grant {
                request: 4,
                since: 1
            }]
        );
    }
}
