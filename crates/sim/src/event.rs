//! Events and the event queue.
//!
//! [`Event`] is a closed enum: every kind of thing that can happen in a
//! simulated stats workload, matched exhaustively by the runner (no boxed
//! payloads, no downcasts). They are delivered by the shared
//! [`simcore::EventQueue`] in `(time, seq)` order, `seq` being the emission
//! order: a total, deterministic order.

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
    /// A read's bounded wait for the flush lock runs out
    /// ([`crate::lock::LockMode::WaitOngoing`]): if it still waits, it
    /// skips its flush.
    WaitTimeout {
        /// The request id of the read.
        request: u32,
        /// When it started waiting (request ids are reused).
        since: u64,
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

/// The stats simulator's queue: [`Event`]s in `(time, seq)` order.
pub type EventQueue = simcore::EventQueue<Event>;

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
