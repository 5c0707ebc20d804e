//! The priced workloads' runner: tasks on N logical CPUs doing whole
//! kernel operations (a page fault, a send) back to back in virtual time,
//! on a machine described as data ([`crate::machines`]).
//!
//! An operation costs its kernel work outside the memcg code (the
//! machine's figure, or the `[kernel]` table of the cost file), plus what
//! the memcg code does under the policy's engine knobs and kernel path
//! (`lab::kernel::KernelPath`):
//!
//! * **charges** through a per-CPU stock of the path's `stock_pages`: a
//!   charge the stock cannot serve walks the page counters from the group
//!   to the root, one atomic RMW per level on the level's `usage` line,
//!   which every CPU charging below it shares ([`Line::PageCounter`]), then
//!   reads every level's `usage` against its `memory.high` (the check
//!   after a refill); an uncharge refills the stock and drains a stock
//!   over its size with the same walk; a fault's pages are uncharged in
//!   one walk at the region's `munmap`. At the levels with `memory.min` or
//!   `memory.low` set ([`PricedSetup::protected_levels`]) a walk also
//!   propagates the protected usage: two exchanges a level under
//!   [`Protection::EveryCharge`], two reads under
//!   [`Protection::OnChange`], on the `usage` line when the counter shares
//!   it ([`CounterLayout::SharedLine`]), else on a line of their own. With
//!   a shared line, every charge and stat update also reads the group's
//!   `usage` line for the read-mostly fields beside it;
//! * **stat updates**, each its own per-CPU adds plus the policy's
//!   threshold walk ([`ThresholdCounts`]): counts read and folded into
//!   ([`Line::Count`]) and, per level entered, the path's
//!   `lines_per_level` loads (`level_ns`: the line that carries the walk
//!   to the next level on its critical path, the others overlapped unless
//!   they miss L1). A load costs what the machine says for the cache level
//!   the operation left its line in: the first update of an operation
//!   finds a fraction `q` of the walk's lines in L1 and the rest in L2 (`q`
//!   measured on the host, per operation, with an SMT sibling's operation
//!   counted when the tasks fill every thread of a core); later updates of
//!   the same operation find them in L1. The level's own instructions are
//!   the host's replica less its L1 load;
//! * in thread mode, the shared `mmap_lock` taken for write by each
//!   region's `munmap` ([`Line::MmapLock`]).
//!
//! Shared lines are resources ([`Lines::on`] the machine): waiting for a
//! busy line and moving it between CPUs (by their distance) is virtual
//! time. A send is two timelines, the client's CPU (the send, the
//! loopback receive's softirq) and the server's (the `recv`): each pays its
//! own kernel work and memcg work, and a send ends when both have; at
//! depth 0 (the root memcg) it charges and updates nothing, as the kernel
//! does not account the root's sockets. Stocks and per-CPU residues start
//! spread over their range (a steady state, not every CPU refilling at
//! once). The runner is deterministic: CPUs run in `(time, task)` order
//! and nothing is random.

use super::count::{ThresholdCounts, Walk};
use super::lines::{Line, Lines};
use crate::cost::{CostModel, KernelCosts};
use crate::machines::{Machine, OpKind};
use crate::workload::{GroupIdx, TreeShape};
use lab::kernel::{CounterLayout, KernelPath, Protection};
use lab::policy::FlushPolicy;
use simcore::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
    /// The kernel work outside the memcg code of the operation (of its
    /// client side, for a send), ns: the machine's figure, else the cost
    /// file's.
    pub fn base_ns(self, k: &KernelCosts, m: &Machine) -> f64 {
        let (kind, file) = match self {
            Op::FaultAnon => (OpKind::FaultAnon, k.fault_anon_ns),
            Op::FaultCow => (OpKind::FaultCow, k.fault_cow_ns),
            Op::FaultShared => (OpKind::FaultShared, k.fault_shared_ns),
            Op::Send => (OpKind::Send, k.send_ns),
        };
        m.op_ns(kind).unwrap_or(file)
    }

    /// The server side's kernel work outside memcg (a send's `recv`), ns:
    /// the machine's figure, else none (the cost file's `send_ns` is one
    /// client–server pair measured whole).
    pub fn server_ns(self, m: &Machine) -> f64 {
        match self {
            Op::Send => m.op_ns(OpKind::Recv).unwrap_or(0.0),
            _ => 0.0,
        }
    }

    /// The operation whose footprint the first update of the client side
    /// finds.
    pub fn kind(self) -> OpKind {
        match self {
            Op::FaultAnon => OpKind::FaultAnon,
            Op::FaultCow => OpKind::FaultCow,
            Op::FaultShared => OpKind::FaultShared,
            Op::Send => OpKind::Send,
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
    /// The policy: its threshold accounting and its kernel path.
    pub policy: FlushPolicy,
    /// The kernel's periodic forced root flush, if any.
    pub flush_period: Option<SimTime>,
    /// Costs of the host's own work (replicas, the `[kernel]` table).
    pub costs: CostModel,
    /// The machine: latencies, transfers, per-operation figures.
    pub machine: Machine,
    /// Levels below the root with `memory.min`/`memory.low` set (the top
    /// ones), whose protected usage every charge propagates.
    pub protected_levels: u32,
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
    /// adds and threshold walks), `mmap_lock`. A send's two sides are
    /// both counted.
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

/// What one level of the stat walk costs, ns, and the walk's tail.
///
/// A level's lines are loaded by two dependent chains (kernels.md's
/// reading of v2: `css.parent` carries the walk from level to level, and
/// `vmstats_percpu` → `stats_updates` hangs off each level): out-of-order
/// execution overlaps the side chain with the next level, so a level costs
/// its instructions (the host's replica less its one L1 load) and the load
/// of the line that carries the walk, in L1 with probability `q`, else L2.
/// A side line that misses L1 is not hidden: each of the other
/// `lines − 1` pays the L2 penalty with probability `1 − q` (up to three
/// misses a level in all, as 9cee7e8ef3e3's message counts them). The
/// last level's side chain ends the walk: `lines − 1` more loads once.
fn level_ns(k: &KernelCosts, machine: &Machine, lines: u32, q: f64) -> (f64, f64) {
    let instr = (k.rstat_level_ns - Machine::host().l1_ns()).max(0.0);
    let (l1, l2) = (machine.l1_ns(), machine.l2_ns());
    let load = q * l1 + (1.0 - q) * l2;
    let side = f64::from(lines.saturating_sub(1));
    let level = instr + load + side * (1.0 - q) * (l2 - l1);
    (level, side * load)
}

struct Run<'a> {
    s: &'a PricedSetup,
    k: KernelCosts,
    path: KernelPath,
    leaf: GroupIdx,
    levels: Vec<GroupIdx>,
    counts: Option<ThresholdCounts>,
    lines: Lines,
    stocks: Vec<Stock>,
    walk: Walk,
    credit: Vec<f64>,
    /// Whether the next update on a CPU is the first of its operation.
    cold: Vec<bool>,
    /// Per-level cost of a walk and its tail: `[cold (client op), cold
    /// (server op), hot]`.
    level_cost: [(f64, f64); 3],
    measuring: bool,
    out: PricedOutcome,
}

fn ns(v: f64) -> SimTime {
    v.max(0.0).round() as SimTime
}

impl Run<'_> {
    /// Charges `pages` on `cpu`'s stock at `t`.
    fn charge(&mut self, cpu: usize, pages: u64, mut t: SimTime) -> SimTime {
        let start = t;
        t = self.read_neighbours(cpu, t);
        let stock = u64::from(self.path.charge.stock_pages.max(1));
        let st = &mut self.stocks[cpu];
        if st.pages >= pages {
            st.pages -= pages;
        } else {
            let refill = stock.max(pages);
            st.pages += refill - pages;
            t = self.walk_counters(cpu, t);
            // try_charge's check after a refill: every level's usage
            // against its memory.high.
            for i in 0..self.levels.len() {
                t = self
                    .lines
                    .read(cpu as u32, Line::PageCounter(self.levels[i]), t);
            }
        }
        self.part(Part::Charge, t - start);
        t
    }

    /// Uncharges `pages` into `cpu`'s stock at `t`, draining it past its
    /// size.
    fn uncharge(&mut self, cpu: usize, pages: u64, mut t: SimTime) -> SimTime {
        let start = t;
        let stock = u64::from(self.path.charge.stock_pages.max(1));
        let st = &mut self.stocks[cpu];
        st.pages += pages;
        if st.pages > stock {
            st.pages = 0;
            t = self.walk_counters(cpu, t);
        }
        self.part(Part::Charge, t - start);
        t
    }

    /// With the counter sharing its line with read-mostly fields, a read
    /// of the group's `usage` line (those fields), else nothing.
    fn read_neighbours(&mut self, cpu: usize, t: SimTime) -> SimTime {
        match self.path.charge.counter_layout {
            CounterLayout::SharedLine => {
                self.lines.read(cpu as u32, Line::PageCounter(self.leaf), t)
            }
            CounterLayout::OwnLine => t,
        }
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

    /// One page-counter walk from the group to the root (a charge or an
    /// uncharge: both propagate the protected usage).
    fn walk_counters(&mut self, cpu: usize, mut t: SimTime) -> SimTime {
        if self.measuring {
            self.out.counter_walks += 1;
        }
        let rest = ns((self.k.charge_level_ns - self.s.costs.atomic_ns).max(0.0));
        let protected = self.s.protected_levels;
        for i in 0..self.levels.len() {
            let g = self.levels[i];
            t = self.lines.rmw(cpu as u32, Line::PageCounter(g), t);
            t += rest;
            // The root propagates nothing (it has no parent); the top
            // `protected` levels below it have min and low set.
            if g >= 1 && g <= protected {
                let line = match self.path.charge.counter_layout {
                    CounterLayout::SharedLine => Line::PageCounter(g),
                    CounterLayout::OwnLine => Line::Protection(g),
                };
                for _ in 0..2 {
                    t = match self.path.charge.protection {
                        Protection::EveryCharge => self.lines.rmw(cpu as u32, line, t),
                        Protection::OnChange => self.lines.read(cpu as u32, line, t),
                    };
                }
            }
        }
        t
    }

    /// One stat update of `pages` at the leaf on `cpu` at `t`; `server`:
    /// on a send's server side.
    fn update(&mut self, cpu: usize, pages: u64, server: bool, mut t: SimTime) -> SimTime {
        let start = t;
        let measuring = self.measuring;
        if measuring {
            self.out.updates += 1;
        }
        t = self.read_neighbours(cpu, t);
        t += ns(self.k.stat_update_ns);
        let per_level = if std::mem::take(&mut self.cold[cpu]) {
            self.level_cost[usize::from(server)]
        } else {
            self.level_cost[2]
        };
        if let Some(c) = self.counts.as_mut() {
            c.update(cpu, self.leaf, pages, &mut self.walk);
            if measuring {
                self.out.levels += u64::from(self.walk.levels);
                self.out.folds += self.walk.folds.len() as u64;
            }
            if self.walk.levels > 0 {
                t += ns(f64::from(self.walk.levels) * per_level.0 + per_level.1);
            }
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
            t = self.update(cpu, pages, false, t);
        }
        t
    }

    /// One operation of task `task` starting at `t`; returns its end.
    fn op(&mut self, task: usize, done: u64, t: SimTime) -> SimTime {
        let base = ns(self.s.op.base_ns(&self.k, &self.s.machine));
        self.part(Part::Base, base);
        let mut t_client = t + base;
        match self.s.op {
            Op::Send => {
                // The client's CPU sends (charging its skb), takes the
                // loopback receive in softirq (charging the receiver's
                // skb) and the ACK (uncharging its skb); the server's CPU
                // reads (uncharging). Each skmem call updates MEMCG_SOCK.
                let (c, srv) = (2 * task, 2 * task + 1);
                let server = ns(self.s.op.server_ns(&self.s.machine));
                self.part(Part::Base, server);
                if self.s.depth == 0 {
                    // The root memcg's sockets are not accounted
                    // (mem_cgroup_sk_alloc leaves them without a memcg):
                    // no charge, no MEMCG_SOCK update.
                    return t_client.max(t + server);
                }
                self.cold[c] = true;
                self.cold[srv] = true;
                let p = self.k.sock_pages_per_send.round().max(1.0) as u64;
                t_client = self.charge(c, p, t_client);
                t_client = self.update(c, p, false, t_client);
                t_client = self.charge(c, p, t_client);
                t_client = self.update(c, p, false, t_client);
                t_client = self.uncharge(c, p, t_client);
                t_client = self.update(c, p, false, t_client);
                let mut t_server = t + server;
                t_server = self.uncharge(srv, p, t_server);
                t_server = self.update(srv, p, true, t_server);
                t_client.max(t_server)
            }
            op => {
                self.cold[task] = true;
                let mut t = t_client;
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
                t
            }
        }
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
    let m = &setup.machine;
    // An SMT sibling runs the same workload on the same L1 when the busy
    // CPUs outnumber the cores.
    let two = cpus as u32 > m.physical_cores();
    let lines_per_level = setup.policy.path.update.lines_per_level;
    let k = setup.costs.kernel;
    let cold_client = level_ns(&k, m, lines_per_level, m.l1_left(setup.op.kind(), two));
    let cold_server = level_ns(&k, m, lines_per_level, m.l1_left(OpKind::Recv, two));
    let hot = level_ns(&k, m, lines_per_level, 1.0);
    let mut r = Run {
        s: setup,
        k,
        path: setup.policy.path,
        leaf,
        levels: shape.ancestors_inclusive(leaf),
        counts: ThresholdCounts::of_choice(setup.policy, &shape, cpus).map(|mut c| {
            c.stagger_residues();
            c
        }),
        lines: Lines::on(m, atomic),
        // Stocks start spread over their range, as in a steady state where
        // the CPUs' refills and drains are not in phase.
        stocks: (0..cpus)
            .map(|c| Stock {
                pages: c as u64 * u64::from(setup.policy.path.charge.stock_pages) / cpus as u64,
            })
            .collect(),
        walk: Walk::default(),
        credit: vec![0.0; cpus],
        cold: vec![false; cpus],
        level_cost: [cold_client, cold_server, hot],
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
    let spread = ns(setup.op.base_ns(&r.k, m)).max(1);
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
            wait0 = Some(r.lines.wait_ns);
            transfers0 = r.lines.transfers;
        }
        r.measuring = t >= setup.warmup;
        if let (Some(at), Some(c)) = (next_flush, r.counts.as_mut()) {
            if t >= at {
                c.flush(0);
                next_flush = setup.flush_period.map(|p| at + p);
            }
        }
        let end = r.op(task, done[task], t);
        done[task] += 1;
        if r.measuring && end <= end_all {
            r.out.ops_per_task[task] += 1;
        }
        queue.push(Reverse((end, task)));
    }
    r.out.line_wait_ns = r.lines.wait_ns - wait0.unwrap_or(r.lines.wait_ns);
    r.out.transfers = r.lines.transfers - transfers0;
    r.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::Preset;
    use lab::kernel::KernelPolicy;
    use simcore::time::MILLIS;

    fn setup(op: Op, policy: Preset, tasks: usize, depth: u32) -> PricedSetup {
        with(op, FlushPolicy::preset(policy), tasks, depth)
    }

    fn with(op: Op, policy: FlushPolicy, tasks: usize, depth: u32) -> PricedSetup {
        PricedSetup {
            op,
            tasks,
            cpus: tasks,
            depth,
            region_pages: 32768,
            shared_mm: false,
            warmup: MILLIS,
            duration: 2 * MILLIS,
            policy,
            flush_period: None,
            costs: CostModel::defaults(),
            machine: Machine::host().with_cpus(tasks as u32 * 2),
            protected_levels: 0,
        }
    }

    #[test]
    fn one_task_pays_the_base_plus_its_memcg_work() {
        for (p, stock) in [(Preset::Linux5_15, 32.0), (Preset::Linux6_8, 64.0)] {
            let o = run(&setup(Op::FaultAnon, p, 1, 2));
            let k = CostModel::defaults().kernel;
            let per = 1e9 / o.ops_per_sec_per_task();
            assert!(per > k.fault_anon_ns, "{per}");
            assert!(per < k.fault_anon_ns * 1.1, "{per}");
            // Updates and walks are counted from the first operation that
            // starts in the measured window; the last one ends past it.
            let n = o.ops_per_task[0] as f64;
            assert!((o.updates as f64 / n - 6.0).abs() < 0.1, "{}", o.updates);
            // One walk per stock of faults (its era's stock).
            assert!((o.counter_walks as f64 - n / stock).abs() <= 2.0, "{p:?}");
        }
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
    fn v2_pays_three_lines_a_level_and_the_merged_layout_one() {
        let per_op = |k: KernelPolicy, op: Op| {
            let mut s = with(op, FlushPolicy::kernel(k), 4, 4);
            s.machine = Machine::builtin("amd-384").unwrap();
            s.cpus = 4;
            let o = run(&s);
            (
                o.per_op(o.stats_ns),
                o.levels as f64 / o.updates.max(1) as f64,
            )
        };
        for op in [Op::FaultAnon, Op::FaultCow, Op::FaultShared] {
            let (base, l0) = per_op(KernelPolicy::Next20231009, op);
            let (v2, l2) = per_op(KernelPolicy::PerMemcgV2, op);
            let (merged, l1) = per_op(KernelPolicy::PerMemcgMerged, op);
            assert_eq!((l0, l1, l2), (1.0, 5.0, 5.0), "{op:?}");
            assert!(base < merged && merged < v2, "{op:?}: {base} {merged} {v2}");
        }
        // A copy-on-write fault leaves fewer of the lines in L1 than a
        // shared-file fault (measured on the host): its first walk pays
        // more a level.
        let m = Machine::builtin("amd-384").unwrap();
        assert!(m.l1_left(OpKind::FaultCow, false) < m.l1_left(OpKind::FaultShared, false));
    }

    #[test]
    fn the_charge_path_history_costs_what_it_changed() {
        // 22 pairs sending on two sockets, three levels, the top one
        // protected: each 2022 change alone makes the sends faster.
        let send = |path: KernelPath| {
            let mut s = with(
                Op::Send,
                FlushPolicy::kernel(KernelPolicy::Next20231009),
                22,
                3,
            );
            s.machine = Machine::builtin("ixion-44").unwrap();
            s.cpus = 44;
            s.policy.path = path;
            s.protected_levels = 1;
            s.duration = 4 * MILLIS;
            run(&s).ops_per_sec_per_task()
        };
        let old = KernelPath {
            charge: lab::kernel::CHARGE_6_0,
            ..KernelPolicy::Next20231009.path()
        };
        let rc1 = send(old);
        let mut a = old;
        a.charge.protection = Protection::OnChange;
        let mut b = old;
        b.charge.counter_layout = CounterLayout::OwnLine;
        let mut c = old;
        c.charge.stock_pages = 64;
        let all = send(KernelPolicy::Next20231009.path());
        for (name, p) in [("A", a), ("B", b), ("C", c)] {
            let v = send(p);
            assert!(v > rc1, "{name}: {v} vs {rc1}");
            assert!(all >= v * 0.99, "{name}: all three {all} vs {v}");
        }
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
