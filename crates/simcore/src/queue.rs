//! The event queue: events of any type, delivered in `(time, seq)` order.
//!
//! `seq` is the emission order, unique per queue, so events scheduled for
//! the same instant are delivered in the order they were scheduled: a
//! total, deterministic order that never compares the events themselves
//! (they need no `Ord`).

use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An event with its delivery time and sequence number.
#[derive(Debug, Clone, Copy)]
pub struct Scheduled<E> {
    /// Delivery time.
    pub time: SimTime,
    /// Emission order, unique per queue.
    pub seq: u64,
    /// The event.
    pub event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}

impl<E> Eq for Scheduled<E> {}

impl<E> Ord for Scheduled<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed so that BinaryHeap (a max-heap) pops the earliest first.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A priority queue of events in `(time, seq)` order.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
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
    pub fn push(&mut self, time: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Scheduled { time, seq, event });
    }

    /// Removes and returns the earliest event (the first scheduled among
    /// those at the earliest time).
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        self.heap.pop()
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// `true` when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
