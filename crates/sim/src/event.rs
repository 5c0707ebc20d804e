//! Events and the event queue.
//!
//! [`Event`] is a closed enum: every kind of thing that can happen in a
//! simulated stats workload, matched exhaustively by the runner (no boxed
//! payloads, no downcasts). The [`EventQueue`] orders events by
//! `(time, seq)`, where `seq` is the emission order, so events at equal
//! times are delivered in the order they were scheduled: a total,
//! deterministic order.

use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Everything that can happen in the stats simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A writer CPU performs its next burst of stat updates.
    WriterBurst {
        /// Logical CPU index.
        cpu: u32,
    },
    /// A reader wakes up and starts reading a group's stats.
    ReaderWake {
        /// Reader index.
        reader: u32,
    },
    /// A flush lock holder releases the lock; waiters may be granted.
    LockRelease {
        /// The request id that held the lock.
        request: u32,
    },
    /// A read finishes: its value is taken and checked against the oracle.
    ReadDone {
        /// The request id of the read.
        request: u32,
    },
    /// The background (periodic) flusher's tick.
    PeriodicFlush,
    /// A large event (usage spike, reclaim) lands in a group.
    Spike {
        /// Spike index.
        spike: u32,
    },
    /// The read that follows a spike (stale-read scenario).
    SpikeRead {
        /// Spike index.
        spike: u32,
    },
    /// End of the measured interval.
    Stop,
}

/// An event with its delivery time and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled {
    /// Delivery time.
    pub time: SimTime,
    /// Emission order, unique per queue.
    pub seq: u64,
    /// The event.
    pub event: Event,
}

impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reverse so that BinaryHeap (a max-heap) pops the earliest first.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A priority queue of [`Scheduled`] events in `(time, seq)` order.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Scheduled>,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `event` at `time`.
    pub fn push(&mut self, time: SimTime, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Scheduled { time, seq, event });
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<Scheduled> {
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
        q.push(20, Event::Stop);
        q.push(10, Event::ReaderWake { reader: 1 });
        q.push(10, Event::ReaderWake { reader: 2 });
        q.push(5, Event::PeriodicFlush);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|s| s.event).collect();
        assert_eq!(
            order,
            vec![
                Event::PeriodicFlush,
                Event::ReaderWake { reader: 1 },
                Event::ReaderWake { reader: 2 },
                Event::Stop
            ]
        );
    }
}
