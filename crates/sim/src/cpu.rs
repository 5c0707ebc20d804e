//! Logical CPUs as virtual-time resources.
//!
//! Each logical CPU runs one thing at a time: work submitted at time `t`
//! starts at `max(t, busy_until)` and occupies the CPU for its duration.

use simcore::time::SimTime;

/// The most logical CPUs a simulation may have.
pub const MAX_CPUS: usize = 1024;

/// A set of logical CPUs with their busy-until times and busy totals.
#[derive(Debug, Clone)]
pub struct Cpus {
    busy_until: Vec<SimTime>,
    busy_total: Vec<SimTime>,
}

impl Cpus {
    /// `n` idle CPUs (callers validate `1..=MAX_CPUS`).
    pub fn new(n: usize) -> Self {
        Cpus {
            busy_until: vec![0; n],
            busy_total: vec![0; n],
        }
    }

    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.busy_until.len()
    }

    /// `true` when there are no CPUs.
    pub fn is_empty(&self) -> bool {
        self.busy_until.is_empty()
    }

    /// Earliest time work submitted at `now` can start on `cpu`.
    pub fn start_time(&self, cpu: usize, now: SimTime) -> SimTime {
        now.max(self.busy_until[cpu])
    }

    /// Runs work of `duration` on `cpu` from `start` (which must be
    /// `>= start_time`); returns the finish time.
    pub fn occupy(&mut self, cpu: usize, start: SimTime, duration: SimTime) -> SimTime {
        debug_assert!(start >= self.busy_until[cpu]);
        let end = start + duration;
        self.busy_until[cpu] = end;
        self.busy_total[cpu] += duration;
        end
    }

    /// Total busy time of `cpu` so far.
    pub fn busy_total(&self, cpu: usize) -> SimTime {
        self.busy_total[cpu]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_queues_behind_busy_cpu() {
        let mut c = Cpus::new(2);
        let s = c.start_time(0, 10);
        assert_eq!(s, 10);
        assert_eq!(c.occupy(0, s, 5), 15);
        assert_eq!(c.start_time(0, 12), 15);
        assert_eq!(c.start_time(1, 12), 12);
        assert_eq!(c.busy_total(0), 5);
    }
}
