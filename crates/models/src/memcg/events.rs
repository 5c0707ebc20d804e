//! `memory.events`, `memory.events.local` and `memory.swap.events`.
//!
//! An event is counted in the group's local file and in the hierarchical
//! file of the group and every ancestor below the root (the root has no
//! `memory.events`), as cgroup v2 does without the `memory_localevents`
//! mount option.

use std::fmt::Write as _;

/// A `memory.events` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryEvent {
    /// Reclaimed while below its effective `memory.low`, because nothing
    /// unprotected was left to reclaim.
    Low,
    /// Usage went over `memory.high`: reclaim or throttling followed.
    High,
    /// A charge hit `memory.max` (reclaim was tried).
    Max,
    /// A charge failed after reclaim and the OOM killer was invoked.
    Oom,
    /// A process of the group was killed by the OOM killer.
    OomKill,
    /// A whole `memory.oom.group` group was killed.
    OomGroupKill,
}

impl MemoryEvent {
    /// All entries, in file order.
    pub const ALL: [MemoryEvent; 6] = [
        MemoryEvent::Low,
        MemoryEvent::High,
        MemoryEvent::Max,
        MemoryEvent::Oom,
        MemoryEvent::OomKill,
        MemoryEvent::OomGroupKill,
    ];

    /// Name in the file.
    pub fn name(self) -> &'static str {
        match self {
            MemoryEvent::Low => "low",
            MemoryEvent::High => "high",
            MemoryEvent::Max => "max",
            MemoryEvent::Oom => "oom",
            MemoryEvent::OomKill => "oom_kill",
            MemoryEvent::OomGroupKill => "oom_group_kill",
        }
    }
}

/// Event counts of one group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounts {
    counts: [u64; 6],
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

/// A `memory.swap.events` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SwapEvent {
    /// Swap usage went over `memory.swap.high`: the group's allocations
    /// are throttled.
    High,
    /// A swap-out was refused because it would exceed `memory.swap.max`.
    Max,
    /// A swap-out failed: `memory.swap.max` or no free swap space.
    Fail,
}

impl SwapEvent {
    /// All entries, in file order.
    pub const ALL: [SwapEvent; 3] = [SwapEvent::High, SwapEvent::Max, SwapEvent::Fail];

    /// Name in the file.
    pub fn name(self) -> &'static str {
        match self {
            SwapEvent::High => "high",
            SwapEvent::Max => "max",
            SwapEvent::Fail => "fail",
        }
    }
}

/// Swap event counts of one group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwapEventCounts {
    counts: [u64; 3],
}

impl SwapEventCounts {
    /// Count of `e`.
    pub fn get(&self, e: SwapEvent) -> u64 {
        self.counts[e as usize]
    }

    /// Adds one `e`.
    pub fn inc(&mut self, e: SwapEvent) {
        self.counts[e as usize] += 1;
    }

    /// The file text (`high 0\nmax 0\nfail 0\n`).
    pub fn format(&self) -> String {
        let mut s = String::new();
        for e in SwapEvent::ALL {
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
        assert_eq!(
            c.format(),
            "low 0\nhigh 0\nmax 0\noom 2\noom_kill 0\noom_group_kill 0\n"
        );
        let mut s = SwapEventCounts::default();
        s.inc(SwapEvent::Fail);
        assert_eq!(s.format(), "high 0\nmax 0\nfail 1\n");
    }
}
