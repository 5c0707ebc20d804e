//! Shared cache lines as resources in virtual time: an atomic RMW on a
//! line another CPU wrote last waits for the line and pays a transfer; a
//! read pays a transfer once per write it has not seen yet.
//!
//! A transfer costs one figure ([`Lines::new`]) or what the machine says
//! for the two CPUs' distance ([`Lines::on`]: a sibling thread, an L3
//! complex, a socket, across sockets; a contended RMW's hand-off or a
//! read of a modified line). Contention is queueing: an RMW waits until
//! the line is free, so a line many CPUs write serializes them.

use crate::machines::Machine;
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
    /// A page counter's protection tracking (`min_usage`, `low_usage`)
    /// when it is not on the `usage` line.
    Protection(u32),
}

#[derive(Debug, Clone, Copy)]
struct State {
    owner: u32,
    free_at: SimTime,
    version: u64,
}

/// What a transfer costs.
#[derive(Debug, Clone, Default)]
enum Transfers {
    /// The same for any two CPUs, ns.
    #[default]
    Uniform,
    /// By distance on a machine: `(rmw, read)` ns for sibling, L3
    /// complex, socket, remote.
    Machine(Box<Machine>, [(SimTime, SimTime); 4]),
}

/// The lines' states and what each CPU has seen of them.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    transfer: SimTime,
    transfers_by: Transfers,
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

    /// Lines on `machine`: a transfer costs what the machine states for
    /// the distance between the CPUs (rounded, at least 1 ns); an
    /// uncontended RMW `atomic_ns`.
    pub fn on(machine: &Machine, atomic_ns: u64) -> Lines {
        use crate::machines::Distance as D;
        let ns = |v: f64| (v.max(1.0)).round() as SimTime;
        let costs = [D::Sibling, D::Ccx, D::Socket, D::Remote].map(|d| {
            (
                ns(machine.rmw_transfer_ns(d)),
                ns(machine.read_transfer_ns(d)),
            )
        });
        Lines {
            transfer: costs[2].0,
            transfers_by: Transfers::Machine(Box::new(machine.clone()), costs),
            atomic: atomic_ns.max(1),
            ..Lines::default()
        }
    }

    /// `(rmw, read)` transfer cost from `from`'s cache to `to`.
    fn cost(&self, from: u32, to: u32) -> (SimTime, SimTime) {
        use crate::machines::Distance as D;
        match &self.transfers_by {
            Transfers::Uniform => (self.transfer, self.transfer),
            Transfers::Machine(m, c) => match m.distance(from, to) {
                D::Same => (self.atomic, 0),
                D::Sibling => c[0],
                D::Ccx => c[1],
                D::Socket => c[2],
                D::Remote => c[3],
            },
        }
    }

    /// An atomic RMW of `line` by `cpu` starting at `t`; returns its end.
    pub fn rmw(&mut self, cpu: u32, line: Line, t: SimTime) -> SimTime {
        let atomic = self.atomic;
        let owner = self.lines.get(&line).map_or(cpu, |st| st.owner);
        let transfer = self.cost(owner, cpu).0;
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
        let (owner, version, free_at) = (st.owner, st.version, st.free_at);
        let start = t.max(free_at);
        self.wait_ns += start - t;
        self.transfers += 1;
        self.seen.insert((line, cpu), version);
        start + self.cost(owner, cpu).1
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

    #[test]
    fn a_machine_prices_transfers_by_distance() {
        let m = Machine::builtin("ixion-44").unwrap();
        let mut l = Lines::on(&m, 10);
        let a = Line::PageCounter(0);
        let near = m.rmw_transfer_ns(crate::machines::Distance::Socket).round() as u64;
        let far = m.rmw_transfer_ns(crate::machines::Distance::Remote).round() as u64;
        assert!(far > near);
        assert_eq!(l.rmw(0, a, 0), 10, "first touch: owned");
        assert_eq!(l.rmw(1, a, 100), 100 + near, "same socket");
        assert_eq!(l.rmw(40, a, 1000), 1000 + far, "other socket");
        let read = m
            .read_transfer_ns(crate::machines::Distance::Remote)
            .round() as u64;
        assert_eq!(l.read(2, a, 5000), 5000 + read);
    }
}
