//! `memory.events` and `memory.events.local`.
//!
//! An event is counted in the group's local file and in the hierarchical
//! file of the group and every ancestor below the root (the root has no
//! `memory.events`), as cgroup v2 does.

use std::fmt::Write as _;

/// A `memory.events` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryEvent {
    /// Reclaimed below `memory.low` because nothing else was reclaimable.
    Low,
    /// Usage went over `memory.high`.
    High,
    /// A charge hit `memory.max` (reclaim was tried).
    Max,
    /// A charge failed after reclaim: the OOM killer would be invoked.
    Oom,
    /// A process was killed by the OOM killer.
    OomKill,
}

impl MemoryEvent {
    /// All entries, in file order.
    pub const ALL: [MemoryEvent; 5] = [
        MemoryEvent::Low,
        MemoryEvent::High,
        MemoryEvent::Max,
        MemoryEvent::Oom,
        MemoryEvent::OomKill,
    ];

    /// Name in the file.
    pub fn name(self) -> &'static str {
        match self {
            MemoryEvent::Low => "low",
            MemoryEvent::High => "high",
            MemoryEvent::Max => "max",
            MemoryEvent::Oom => "oom",
            MemoryEvent::OomKill => "oom_kill",
        }
    }
}

/// Event counts of one group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounts {
    counts: [u64; 5],
}

impl EventCounts {
    /// Count of `e`.
    pub fn get(&self, e: MemoryEvent) -> u64 {
        self.counts[e as usize]
    }

    /// Adds one `e`.
    pub fn inc(&mut self, e: MemoryEvent) {
        self.counts[e as usize] += 1;
    }

    /// The file text (`low 0\nhigh 0\n...`).
    pub fn format(&self) -> String {
        let mut s = String::new();
        for e in MemoryEvent::ALL {
            let _ = writeln!(s, "{} {}", e.name(), self.get(e));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_lists_every_event() {
        let mut c = EventCounts::default();
        c.inc(MemoryEvent::Oom);
        c.inc(MemoryEvent::Oom);
        assert_eq!(c.format(), "low 0\nhigh 0\nmax 0\noom 2\noom_kill 0\n");
    }
}
