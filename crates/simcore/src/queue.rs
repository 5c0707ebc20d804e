//! The event queue: events of any type, delivered in `(time, seq)` order.
//!
//! `seq` is the emission order, unique per queue, so events scheduled for
//! the same instant are delivered in the order they were scheduled: a
//! total, deterministic order that never compares the events themselves
//! (they need no `Ord`).
//!
//! # How
//!
//! A radix heap on the delivery time (Ahuja, Mehlhorn, Orlin and Tarjan's
//! monotone priority queue). A simulation never schedules into its past, so
//! every pending time is at least `last`, the time of the last event
//! delivered. Bucket 0 holds the events at `last`; bucket `b ≥ 1` holds
//! those whose time first differs from `last` in bit `b − 1`. Delivering
//! takes bucket 0 from its front; when it is empty, the lowest non-empty
//! bucket's earliest time becomes `last` and that bucket's events move to
//! lower buckets. Every move lowers an event's bucket, so an event moves at
//! most 64 times (a handful in practice), along vectors read and written in
//! order, where a binary heap of the same size walks its tree's levels in
//! cache-missing jumps at every delivery.
//!
//! Ties are delivered in emission order: the events of one time always
//! share a bucket (the bucket is a function of the time), a push appends the
//! newest `seq`, and events move between buckets in order, so a bucket's
//! events of one time are in `seq` order.
//!
//! Scheduling into the past (a time before `last`) stays correct: the queue
//! lowers `last` to that time and places every pending event again, which
//! costs a pass over everything pending; the simulators of this workspace
//! never do it.

use crate::time::SimTime;
use std::collections::VecDeque;

/// An event with its delivery time and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled<E> {
    /// Delivery time.
    pub time: SimTime,
    /// Emission order, unique per queue.
    pub seq: u64,
    /// The event.
    pub event: E,
}

/// Buckets above bucket 0: one per bit of a [`SimTime`].
const BITS: usize = SimTime::BITS as usize;

/// A priority queue of events in `(time, seq)` order.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// No pending event is earlier: the time of the last event delivered
    /// (0 before the first), or of an event scheduled before it.
    last: SimTime,
    /// Bucket 0: the events at `last`, in `seq` order.
    now: VecDeque<Scheduled<E>>,
    /// `later[i]`: the events whose time first differs from `last` in bit
    /// `i` (the bucket `i + 1` of the module docs), those of one time in
    /// `seq` order.
    later: Vec<Vec<Scheduled<E>>>,
    /// Bit `i` is set when `later[i]` is not empty.
    occupied: u64,
    len: usize,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            last: 0,
            now: VecDeque::new(),
            later: (0..BITS).map(|_| Vec::new()).collect(),
            occupied: 0,
            len: 0,
            next_seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `event` at `time`.
    ///
    /// A time before the last delivered event's is delivered next like any
    /// other, but costs a pass over every pending event (see the module docs).
    pub fn push(&mut self, time: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if time < self.last {
            self.rebase(time);
        }
        self.place(Scheduled { time, seq, event });
        self.len += 1;
    }

    /// Removes and returns the earliest event (the first scheduled among
    /// those at the earliest time).
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        if self.now.is_empty() {
            if self.occupied == 0 {
                return None;
            }
            self.advance();
        }
        let s = self.now.pop_front();
        debug_assert!(s.is_some(), "advance fills bucket 0");
        self.len -= usize::from(s.is_some());
        s
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `s` to its bucket (after the events of its time there, which
    /// it follows in `seq` order).
    #[inline]
    fn place(&mut self, s: Scheduled<E>) {
        let diff = s.time ^ self.last;
        if diff == 0 {
            self.now.push_back(s);
        } else {
            let i = (BITS - 1) - diff.leading_zeros() as usize;
            self.later[i].push(s);
            self.occupied |= 1 << i;
        }
    }

    /// With bucket 0 empty: makes the earliest pending time `last` and
    /// moves the lowest non-empty bucket's events down (its earliest into
    /// bucket 0).
    fn advance(&mut self) {
        let i = self.occupied.trailing_zeros() as usize;
        let mut bucket = std::mem::take(&mut self.later[i]);
        self.occupied &= !(1 << i);
        self.last = bucket
            .iter()
            .map(|s| s.time)
            .min()
            .expect("an occupied bucket has events");
        // Every event of bucket `i` agrees with the new `last` above bit
        // `i`, so each lands in bucket 0 or in a lower (empty) bucket, in
        // order; the other buckets keep theirs, as their times still first
        // differ from the new `last` in the same bit.
        for s in bucket.drain(..) {
            self.place(s);
        }
        // Keep the allocation for the bucket's next events.
        self.later[i] = bucket;
    }

    /// Lowers `last` to `time` and places every pending event again (those
    /// of one time come from one bucket, in order).
    #[cold]
    fn rebase(&mut self, time: SimTime) {
        let mut all: Vec<Scheduled<E>> = self.now.drain(..).collect();
        for b in &mut self.later {
            all.append(b);
        }
        self.occupied = 0;
        self.last = time;
        for s in all {
            self.place(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn pops_in_time_then_emission_order() {
        let mut q = EventQueue::new();
        q.push(20, "stop");
        q.push(10, "reader 1");
        q.push(10, "reader 2");
        q.push(5, "flush");
        assert_eq!(q.len(), 4);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|s| s.event).collect();
        assert_eq!(order, vec!["flush", "reader 1", "reader 2", "stop"]);
        assert!(q.is_empty());
    }

    #[test]
    fn events_need_no_ordering() {
        struct Opaque(f64);
        let mut q = EventQueue::new();
        q.push(3, Opaque(f64::NAN));
        q.push(1, Opaque(0.5));
        let s = q.pop().expect("two queued");
        assert_eq!((s.time, s.event.0), (1, 0.5));
    }

    #[test]
    fn ties_keep_emission_order_across_buckets() {
        // Two events at 100 scheduled far apart in the queue's life: the
        // first waits in a high bucket, the second is pushed once 100 is
        // close (after deliveries at 64 and 96), into a lower one.
        let mut q = EventQueue::new();
        q.push(100, 'a');
        q.push(64, 'x');
        q.push(96, 'y');
        assert_eq!(q.pop().map(|s| s.event), Some('x'));
        assert_eq!(q.pop().map(|s| s.event), Some('y'));
        q.push(100, 'b');
        q.push(96, 'c');
        let rest: Vec<_> = std::iter::from_fn(|| q.pop())
            .map(|s| (s.time, s.seq, s.event))
            .collect();
        assert_eq!(rest, vec![(96, 4, 'c'), (100, 0, 'a'), (100, 3, 'b')]);
    }

    #[test]
    fn extreme_times_and_the_past() {
        let mut q = EventQueue::new();
        q.push(u64::MAX, "end of time");
        q.push(0, "start");
        q.push(1 << 63, "half");
        assert_eq!(q.pop().map(|s| s.event), Some("start"));
        assert_eq!(q.pop().map(|s| s.event), Some("half"));
        // Into the past: delivered next, then the rest in order.
        q.push(7, "late");
        q.push(u64::MAX, "end again");
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).map(|s| s.event).collect();
        assert_eq!(rest, vec!["late", "end of time", "end again"]);
        assert!(q.is_empty() && q.pop().is_none());
    }

    /// One step of a queue's life: push at `now + offset` (or before now,
    /// when `back`), or pop.
    #[derive(Debug, Clone)]
    enum Op {
        Push { offset: u64, back: bool },
        Pop,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let offset = prop_oneof![
            Just(0u64),
            0u64..4,
            0u64..1_000,
            0u64..100_000_000,
            any::<u64>(),
        ];
        let op = prop_oneof![
            3 => (offset, prop::bool::weighted(0.02))
                .prop_map(|(offset, back)| Op::Push { offset, back }),
            2 => Just(Op::Pop),
        ];
        prop::collection::vec(op, 0..400)
    }

    proptest! {
        /// Any interleaving of pushes and pops delivers exactly what a
        /// binary heap ordered by `(time, seq)` delivers.
        #[test]
        fn matches_a_binary_heap(ops in ops()) {
            let mut q = EventQueue::new();
            let mut oracle = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            for op in ops {
                match op {
                    Op::Push { offset, back } => {
                        let t = if back {
                            now.saturating_sub(offset)
                        } else {
                            now.saturating_add(offset)
                        };
                        q.push(t, seq);
                        oracle.push(Reverse((t, seq)));
                        seq += 1;
                    }
                    Op::Pop => {
                        let got = q.pop().map(|s| (s.time, s.seq, s.event));
                        let want = oracle.pop().map(|Reverse((t, s))| (t, s, s));
                        prop_assert_eq!(got, want);
                        if let Some((t, _, _)) = got {
                            now = t;
                        }
                    }
                }
                prop_assert_eq!(q.len(), oracle.len());
            }
            while let Some(Reverse((t, s))) = oracle.pop() {
                prop_assert_eq!(q.pop().map(|x| (x.time, x.seq, x.event)), Some((t, s, s)));
            }
            prop_assert!(q.is_empty() && q.pop().is_none());
        }
    }
}
