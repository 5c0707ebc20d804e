//! The priced workloads' runner: tasks on N logical CPUs doing whole
//! kernel operations (a page fault, a send) back to back in virtual time.
//!
//! An operation costs its kernel work outside the memcg code (from the
//! `[kernel]` costs, measured on the host), plus what the memcg code does
//! under the policy:
//!
//! * **charges** through a per-CPU stock of `CHARGE_BATCH` pages: a charge
//!   the stock cannot serve walks the page counters from the group to the
//!   root, one atomic RMW per level on a line every CPU of the group
//!   shares ([`Line::PageCounter`]), and refills the stock; an uncharge
//!   refills it and drains a stock over the batch with the same walk; a
//!   fault's pages are uncharged in one walk at the region's `munmap`;
//! * **stat updates**, each its own per-CPU adds plus the policy's
//!   threshold walk ([`ThresholdCounts`]): levels entered, counts read and
//!   folded into ([`Line::Count`]);
//! * in thread mode, the shared `mmap_lock` taken for write by each
//!   region's `munmap` ([`Line::MmapLock`]).
//!
//! Shared lines are resources ([`Lines`]): waiting for a busy line and
//! moving it between CPUs is virtual time. The runner is deterministic:
//! CPUs run in `(time, cpu)` order and nothing is random.

use super::count::{ThresholdCounts, Walk};
use super::lines::{Line, Lines};
use crate::cost::{CostModel, KernelCosts};
use crate::workload::{GroupIdx, TreeShape};
use lab::policy::FlushPolicy;
use simcore::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pages a per-CPU charge stock holds (`MEMCG_CHARGE_BATCH` since 6.1).
pub const CHARGE_BATCH: u64 = 64;

/// What one task does, over and over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// will-it-scale `page_fault1`: a write fault on private anonymous
    /// memory (a page allocated, zeroed and charged).
    FaultAnon,
    /// `page_fault2`: a write fault on a private file mapping (a page
    /// allocated, copied and charged).
    FaultCow,
    /// `page_fault3`: a write fault on a shared file mapping (the page is
    /// in the page cache: nothing allocated or charged).
    FaultShared,
    /// netperf `TCP_SENDFILE` of 10 KiB over loopback: a client CPU and a
    /// server CPU, socket memory charged and uncharged on both sides.
    Send,
}

impl Op {
    /// The kernel work outside the memcg code, ns.
    pub fn base_ns(self, k: &KernelCosts) -> f64 {
        match self {
            Op::FaultAnon => k.fault_anon_ns,
            Op::FaultCow => k.fault_cow_ns,
            Op::FaultShared => k.fault_shared_ns,
            Op::Send => k.send_ns,
        }
    }

    /// Pages one operation charges (faults: the new page).
    pub fn charged_pages(self) -> u64 {
        match self {
            Op::FaultAnon | Op::FaultCow => 1,
            Op::FaultShared | Op::Send => 0,
        }
    }

    /// Stat updates one fault makes (sends: see [`run`]).
    pub fn updates(self, k: &KernelCosts) -> f64 {
        match self {
            Op::FaultAnon => k.updates_per_fault_anon,
            Op::FaultCow => k.updates_per_fault_cow,
            Op::FaultShared => k.updates_per_fault_shared,
            Op::Send => 0.0,
        }
    }
}

/// One priced run.
#[derive(Debug, Clone)]
pub struct PricedSetup {
    /// The operation.
    pub op: Op,
    /// Tasks (will-it-scale: processes or threads; netperf: clients, each
    /// with a server on its own CPU).
    pub tasks: usize,
    /// Logical CPUs (every task and server has its own).
    pub cpus: usize,
    /// Depth of the group every task runs in (root = 0).
    pub depth: u32,
    /// Faults: pages mapped, touched and unmapped per region.
    pub region_pages: u64,
    /// Thread mode: the tasks share one process.
    pub shared_mm: bool,
    /// Virtual time run before the measurement starts (the first folds
    /// and stock refills of every CPU at once are not the steady state).
    pub warmup: SimTime,
    /// Measured virtual duration.
    pub duration: SimTime,
    /// The policy (its threshold accounting).
    pub policy: FlushPolicy,
    /// The kernel's periodic forced root flush, if any.
    pub flush_period: Option<SimTime>,
    /// Costs.
    pub costs: CostModel,
}

/// What a priced run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PricedOutcome {
    /// Operations completed by each task within the duration.
    pub ops_per_task: Vec<u64>,
    /// The measured duration, ns.
    pub duration: SimTime,
    /// Virtual ns spent, summed over tasks, by part: the work outside
    /// memcg, charges (stock and page-counter walks), stat updates (their
    /// adds and threshold walks), `mmap_lock`.
    pub base_ns: f64,
    /// See `base_ns`.
    pub charge_ns: f64,
    /// See `base_ns`.
    pub stats_ns: f64,
    /// See `base_ns`.
    pub mm_ns: f64,
    /// Page-counter walks (charges and uncharges).
    pub counter_walks: u64,
    /// Stat updates and the levels their walks entered.
    pub updates: u64,
    /// See `updates`.
    pub levels: u64,
    /// Folds into shared counts.
    pub folds: u64,
    /// Time spent waiting for busy lines, and line transfers.
    pub line_wait_ns: u64,
    /// See `line_wait_ns`.
    pub transfers: u64,
}

impl PricedOutcome {
    /// Mean operations per second per task.
    pub fn ops_per_sec_per_task(&self) -> f64 {
        let n = self.ops_per_task.len().max(1) as f64;
        let total: u64 = self.ops_per_task.iter().sum();
        total as f64 / n / (self.duration as f64 / 1e9)
    }

    /// Mean ns per operation of one part (`part_ns / ops`).
    pub fn per_op(&self, part_ns: f64) -> f64 {
        part_ns / self.ops_per_task.iter().sum::<u64>().max(1) as f64
    }
}

struct Stock {
    pages: u64,
}

#[derive(Clone, Copy)]
enum Part {
    Base,
    Charge,
    Stats,
    Mm,
}

struct Machine<'a> {
    s: &'a PricedSetup,
    k: KernelCosts,
    leaf: GroupIdx,
    levels: Vec<GroupIdx>,
    counts: Option<ThresholdCounts>,
    lines: Lines,
    stocks: Vec<Stock>,
    walk: Walk,
    credit: Vec<f64>,
    measuring: bool,
    out: PricedOutcome,
}

fn ns(v: f64) -> SimTime {
    v.max(0.0).round() as SimTime
}

impl Machine<'_> {
    /// Charges `pages` on `cpu`'s stock at `t`.
    fn charge(&mut self, cpu: usize, pages: u64, mut t: SimTime) -> SimTime {
        let start = t;
        let st = &mut self.stocks[cpu];
        if st.pages >= pages {
            st.pages -= pages;
        } else {
            let refill = CHARGE_BATCH.max(pages);
            st.pages += refill - pages;
            t = self.walk_counters(cpu, t);
        }
        self.part(Part::Charge, t - start);
        t
    }

    /// Uncharges `pages` into `cpu`'s stock at `t`, draining it past the
    /// batch.
    fn uncharge(&mut self, cpu: usize, pages: u64, mut t: SimTime) -> SimTime {
        let start = t;
        let st = &mut self.stocks[cpu];
        st.pages += pages;
        if st.pages > CHARGE_BATCH {
            st.pages = 0;
            t = self.walk_counters(cpu, t);
        }
        self.part(Part::Charge, t - start);
        t
    }

    /// Adds `ns` to a part of the measured time.
    fn part(&mut self, part: Part, ns: SimTime) {
        if !self.measuring {
            return;
        }
        let v = ns as f64;
        match part {
            Part::Base => self.out.base_ns += v,
            Part::Charge => self.out.charge_ns += v,
            Part::Stats => self.out.stats_ns += v,
            Part::Mm => self.out.mm_ns += v,
        }
    }

    /// One page-counter walk from the group to the root.
    fn walk_counters(&mut self, cpu: usize, mut t: SimTime) -> SimTime {
        if self.measuring {
            self.out.counter_walks += 1;
        }
        let rest = ns((self.k.charge_level_ns - self.s.costs.atomic_ns).max(0.0));
        for i in 0..self.levels.len() {
            t = self
                .lines
                .rmw(cpu as u32, Line::PageCounter(self.levels[i]), t);
            t += rest;
        }
        t
    }

    /// One stat update of `pages` at the leaf on `cpu` at `t`.
    fn update(&mut self, cpu: usize, pages: u64, mut t: SimTime) -> SimTime {
        let start = t;
        let measuring = self.measuring;
        if measuring {
            self.out.updates += 1;
        }
        t += ns(self.k.stat_update_ns);
        if let Some(c) = self.counts.as_mut() {
            c.update(cpu, self.leaf, pages, &mut self.walk);
            if measuring {
                self.out.levels += u64::from(self.walk.levels);
                self.out.folds += self.walk.folds.len() as u64;
            }
            t += ns(f64::from(self.walk.levels) * self.k.rstat_level_ns);
            for &g in &self.walk.reads {
                t = self.lines.read(cpu as u32, Line::Count(g), t);
            }
            for &g in &self.walk.folds {
                t = self.lines.rmw(cpu as u32, Line::Count(g), t);
            }
        }
        self.part(Part::Stats, t - start);
        t
    }

    /// `n` whole updates of the fractional `per_op` owed by `cpu`.
    fn updates(&mut self, cpu: usize, per_op: f64, pages: u64, mut t: SimTime) -> SimTime {
        self.credit[cpu] += per_op;
        while self.credit[cpu] >= 1.0 {
            self.credit[cpu] -= 1.0;
            t = self.update(cpu, pages, t);
        }
        t
    }

    /// One operation of task `task` starting at `t`; returns its end.
    fn op(&mut self, task: usize, done: u64, t: SimTime) -> SimTime {
        let base = ns(self.s.op.base_ns(&self.k));
        self.part(Part::Base, base);
        let mut t = t + base;
        match self.s.op {
            Op::Send => {
                // The client's CPU sends (charging its skb), takes the
                // loopback receive in softirq (charging the receiver's
                // skb) and the ACK (uncharging its skb); the server's CPU
                // reads (uncharging). Each skmem call updates MEMCG_SOCK.
                let (c, srv) = (2 * task, 2 * task + 1);
                let p = self.k.sock_pages_per_send.round().max(1.0) as u64;
                t = self.charge(c, p, t);
                t = self.update(c, p, t);
                t = self.charge(c, p, t);
                t = self.update(c, p, t);
                t = self.uncharge(c, p, t);
                t = self.update(c, p, t);
                t = self.uncharge(srv, p, t);
                t = self.update(srv, p, t);
            }
            op => {
                let pages = op.charged_pages();
                if pages > 0 {
                    t = self.charge(task, pages, t);
                }
                t = self.updates(task, op.updates(&self.k), 1, t);
                if (done + 1) % self.s.region_pages.max(1) == 0 {
                    // munmap: the region's pages uncharged in one walk.
                    if pages > 0 {
                        let start = t;
                        t = self.walk_counters(task, t);
                        self.part(Part::Charge, t - start);
                    }
                    if self.s.shared_mm {
                        let start = t;
                        t = self.lines.rmw(task as u32, Line::MmapLock, t);
                        t = self.lines.rmw(task as u32, Line::MmapLock, t);
                        self.part(Part::Mm, t - start);
                    }
                }
            }
        }
        t
    }
}

/// Runs the priced workload of `setup`.
pub fn run(setup: &PricedSetup) -> PricedOutcome {
    let shape = TreeShape::chain(setup.depth);
    let leaf = setup.depth as GroupIdx;
    let cpus = match setup.op {
        Op::Send => setup.cpus.max(2 * setup.tasks),
        _ => setup.cpus.max(setup.tasks),
    };
    let atomic = ns(setup.costs.atomic_ns).max(1);
    let mut m = Machine {
        s: setup,
        k: setup.costs.kernel,
        leaf,
        levels: shape.ancestors_inclusive(leaf),
        counts: ThresholdCounts::of_choice(setup.policy, &shape, cpus),
        lines: Lines::new(setup.costs.line_transfer(), atomic),
        stocks: (0..cpus).map(|_| Stock { pages: 0 }).collect(),
        walk: Walk::default(),
        credit: vec![0.0; cpus],
        measuring: false,
        out: PricedOutcome {
            ops_per_task: vec![0; setup.tasks],
            duration: setup.duration,
            ..PricedOutcome::default()
        },
    };
    let mut next_flush = setup.flush_period;
    let end_all = setup.warmup + setup.duration;
    // Tasks start one base operation apart in turn, not all at once.
    let spread = ns(setup.op.base_ns(&m.k)).max(1);
    let mut queue: BinaryHeap<Reverse<(SimTime, usize)>> = (0..setup.tasks)
        .map(|t| Reverse((spread * t as SimTime / setup.tasks as SimTime, t)))
        .collect();
    let mut done = vec![0u64; setup.tasks];
    let (mut wait0, mut transfers0) = (None, 0);
    while let Some(Reverse((t, task))) = queue.pop() {
        if t >= end_all {
            continue;
        }
        if t >= setup.warmup && wait0.is_none() {
            wait0 = Some(m.lines.wait_ns);
            transfers0 = m.lines.transfers;
        }
        m.measuring = t >= setup.warmup;
        if let (Some(at), Some(c)) = (next_flush, m.counts.as_mut()) {
            if t >= at {
                c.flush(0);
                next_flush = setup.flush_period.map(|p| at + p);
            }
        }
        let end = m.op(task, done[task], t);
        done[task] += 1;
        if m.measuring && end <= end_all {
            m.out.ops_per_task[task] += 1;
        }
        queue.push(Reverse((end, task)));
    }
    m.out.line_wait_ns = m.lines.wait_ns - wait0.unwrap_or(m.lines.wait_ns);
    m.out.transfers = m.lines.transfers - transfers0;
    m.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::Preset;
    use simcore::time::MILLIS;

    fn setup(op: Op, policy: Preset, tasks: usize, depth: u32) -> PricedSetup {
        PricedSetup {
            op,
            tasks,
            cpus: tasks,
            depth,
            region_pages: 32768,
            shared_mm: false,
            warmup: MILLIS,
            duration: 2 * MILLIS,
            policy: FlushPolicy::Preset(policy),
            flush_period: None,
            costs: CostModel::defaults(),
        }
    }

    #[test]
    fn one_task_pays_the_base_plus_its_memcg_work() {
        let o = run(&setup(Op::FaultAnon, Preset::Linux5_15, 1, 2));
        let k = CostModel::defaults().kernel;
        let per = 1e9 / o.ops_per_sec_per_task();
        assert!(per > k.fault_anon_ns, "{per}");
        assert!(per < k.fault_anon_ns * 1.1, "{per}");
        // Updates and walks are counted from the first operation that
        // starts in the measured window; the last one ends past it.
        let n = o.ops_per_task[0] as f64;
        assert!((o.updates as f64 / n - 6.0).abs() < 0.1, "{}", o.updates);
        // One walk per 64 faults.
        assert!((o.counter_walks as f64 - n / 64.0).abs() <= 2.0);
    }

    #[test]
    fn per_ancestor_walks_cost_more_deeper_and_early_break_less() {
        let ops = |p, d| run(&setup(Op::FaultShared, p, 4, d)).ops_per_sec_per_task();
        let (g2, g4) = (ops(Preset::Linux5_15, 2), ops(Preset::Linux5_15, 4));
        let (a2, a4) = (ops(Preset::Linux6_8, 2), ops(Preset::Linux6_8, 4));
        assert!(a2 < g2 && a4 < g4, "6.8 walks every level");
        assert!(a4 < a2, "deeper costs more under 6.8");
        assert!(
            (g4 / g2 - 1.0).abs() < 0.01,
            "the global count is one level"
        );
        // 6.17 stops at the leaf once it is above T: as cheap as 5.15.
        let b4 = ops(Preset::Linux6_17, 4);
        assert!(b4 > a4, "{b4} vs {a4}");
    }

    #[test]
    fn sends_use_two_cpus_and_contend_on_the_counters() {
        let one = run(&setup(Op::Send, Preset::Linux5_15, 1, 4));
        let many = run(&setup(Op::Send, Preset::Linux5_15, 22, 4));
        assert!(many.transfers > one.transfers);
        assert!(many.ops_per_sec_per_task() <= one.ops_per_sec_per_task());
        let a = run(&setup(Op::Send, Preset::Linux5_15, 22, 4));
        assert_eq!(a, many, "deterministic");
    }
}
