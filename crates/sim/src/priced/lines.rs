//! Shared cache lines as resources in virtual time: an atomic RMW on a
//! line another CPU wrote last waits for the line and pays a transfer; a
//! read pays a transfer once per write it has not seen yet.

use simcore::time::SimTime;
use std::collections::HashMap;

/// A line the priced workloads share between CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Line {
    /// A group's threshold count (the global count is group 0's).
    Count(u32),
    /// A group's page counter (`usage`).
    PageCounter(u32),
    /// A process's `mmap_lock` (thread mode: every thread's).
    MmapLock,
}

#[derive(Debug, Clone, Copy)]
struct State {
    owner: u32,
    free_at: SimTime,
    version: u64,
}

/// The lines' states and what each CPU has seen of them.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    transfer: SimTime,
    atomic: SimTime,
    lines: HashMap<Line, State>,
    seen: HashMap<(Line, u32), u64>,
    /// Virtual time spent waiting for busy lines.
    pub wait_ns: u64,
    /// Transfers paid.
    pub transfers: u64,
}

impl Lines {
    /// Lines whose transfer costs `transfer_ns` and whose uncontended RMW
    /// costs `atomic_ns` (both at least 1 ns).
    pub fn new(transfer_ns: u64, atomic_ns: u64) -> Lines {
        Lines {
            transfer: transfer_ns.max(1),
            atomic: atomic_ns.max(1),
            ..Lines::default()
        }
    }

    /// An atomic RMW of `line` by `cpu` starting at `t`; returns its end.
    pub fn rmw(&mut self, cpu: u32, line: Line, t: SimTime) -> SimTime {
        let (transfer, atomic) = (self.transfer, self.atomic);
        let st = self.lines.entry(line).or_insert(State {
            owner: cpu,
            free_at: 0,
            version: 0,
        });
        let start = t.max(st.free_at);
        self.wait_ns += start - t;
        let end = if st.owner == cpu {
            start + atomic
        } else {
            self.transfers += 1;
            start + transfer
        };
        st.owner = cpu;
        st.free_at = end;
        st.version += 1;
        let v = st.version;
        self.seen.insert((line, cpu), v);
        end
    }

    /// A read of `line` by `cpu` at `t`: free if `cpu` wrote it last or
    /// has read it since its last write, else one transfer after the
    /// line is free; returns its end.
    pub fn read(&mut self, cpu: u32, line: Line, t: SimTime) -> SimTime {
        let Some(st) = self.lines.get(&line) else {
            return t;
        };
        if st.owner == cpu || self.seen.get(&(line, cpu)) == Some(&st.version) {
            return t;
        }
        let start = t.max(st.free_at);
        self.wait_ns += start - t;
        self.transfers += 1;
        self.seen.insert((line, cpu), st.version);
        start + self.transfer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmws_queue_and_reads_pay_once_per_write() {
        let mut l = Lines::new(100, 10);
        let a = Line::PageCounter(1);
        assert_eq!(l.rmw(0, a, 0), 10);
        assert_eq!(l.rmw(0, a, 20), 30);
        // Another CPU waits for nothing (free at 30) but pays a transfer.
        assert_eq!(l.rmw(1, a, 25), 130);
        // CPU 0 arrives while CPU 1 holds it until 130.
        assert_eq!(l.rmw(0, a, 100), 230);
        assert_eq!(l.wait_ns, 5 + 30);
        assert_eq!(l.read(1, a, 300), 400);
        assert_eq!(l.read(1, a, 500), 500, "already seen");
        assert_eq!(l.read(0, a, 500), 500, "its own write");
        assert_eq!(l.read(2, Line::MmapLock, 7), 7, "never written");
    }
}
