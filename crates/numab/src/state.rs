//! Simulator state and the event loop.
//!
//! One logical CPU per running thread; each thread's program advances in
//! steps of one page-table unit (a 2 MiB PMD, or a run of up to 512 4 KiB
//! PTEs in one page-table page that the workload always touches and the
//! scanner always marks together). Events are ordered by (virtual ns,
//! sequence number) in one [`EventQueue`], so ties are broken
//! deterministically.

use crate::cost::{CostModel, Sysctl, NS_PER_MS};
use crate::pids::PidWindows;
use crate::plan::{Op, Plan, VmaKind, HPAGE, HPAGE_PAGES, MAX_NODES, PAGE};
use crate::result::{Counters, ScanEvent, SkipReasons};
use crate::scenario::NumabScenario;
use crate::version::Features;
use crate::ScannerVersion;
use simcore::{EventQueue, Rng};

/// Packed `last_cpupid`: 0 = unset, else `(cpu + 1) << 8 | (pid & 0xff)`.
pub(crate) type CpuPid = u32;

pub(crate) fn pack_cpupid(cpu: u32, tid: u32) -> CpuPid {
    ((cpu + 1) << 8) | (tid & 0xff)
}

/// One page-table unit.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    pub addr: u64,
    pub pages: u32,
    pub huge: bool,
    pub present: bool,
    pub protnone: bool,
    pub nid: u8,
    pub last_cpupid: CpuPid,
    /// Virtual time + 1 of the last `change_prot_numa()` visit; 0 = never.
    pub last_visit: u64,
    /// mmlab: consecutive visits that left this (local) unit unmarked.
    pub local_skips: u8,
}

impl Unit {
    /// Base pages this unit stands for.
    pub fn base_pages(&self) -> u64 {
        if self.huge {
            HPAGE_PAGES
        } else {
            u64::from(self.pages)
        }
    }
}

/// `struct vma_numab_state`, the union of all versions' fields.
#[derive(Debug, Clone)]
pub(crate) struct NumabState {
    pub next_scan: u64,
    pub pids_reset: u64,
    pub pids: PidWindows,
    pub start_scan_seq: i64,
    pub prev_scan_seq: i64,
    pub scan_select: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct Vma {
    pub name: String,
    pub kind: VmaKind,
    pub start: u64,
    pub end: u64,
    pub units: Vec<Unit>,
    pub numab: Option<NumabState>,
    pub exists: bool,
    pub complete_scans: u64,
    /// `mm->numa_scan_seq` when the VMA was created.
    pub created_seq: i64,
    /// Coverage bookkeeping, independent of each version's own: the
    /// address up to which the current sweep of `change_prot_numa()` calls
    /// has covered the VMA contiguously from its start, and in which seq
    /// that sweep began.
    pub cover_next: u64,
    pub cover_seq: i64,
    /// Seq in which the last contiguous sweep that reached the end began.
    pub covered_seq: Option<i64>,
}

impl Vma {
    /// Index range of units whose address lies in `[from, to)`.
    pub fn unit_range(&self, from: u64, to: u64) -> (usize, usize) {
        let lo = self.units.partition_point(|u| u.addr < from);
        let hi = self.units.partition_point(|u| u.addr < to);
        (lo, hi)
    }

    pub fn scannable(&self) -> bool {
        matches!(
            self.kind,
            VmaKind::Anon | VmaKind::SharedAnon | VmaKind::FileWritable
        )
    }
}

/// A process's numa group (all its threads, once they share faults).
#[derive(Debug, Clone, Default)]
pub(crate) struct Group {
    pub refcount: u64,
    /// `[node][priv]` decayed memory faults, summed over members.
    pub faults_mem: [[u64; 2]; MAX_NODES],
    /// `[node]` decayed CPU faults, summed over members.
    pub faults_cpu: [u64; MAX_NODES],
    pub active_nodes: u32,
    pub active_mask: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct Mm {
    pub vmas: Vec<Vma>,
    /// Indices of existing VMAs sorted by start address.
    pub order: Vec<usize>,
    /// `mm->numa_next_scan` in jiffies (see [`crate::Sysctl::jiffies`]);
    /// 0 = unset, as in a freshly exec'd mm.
    pub numa_next_scan: u64,
    pub scan_offset: u64,
    pub scan_seq: i64,
    pub users: u32,
    pub rss_pages: u64,
    pub group: Group,
    /// Threads currently in a convoy sweep.
    pub convoy: u64,
}

impl Mm {
    pub fn rebuild_order(&mut self) {
        let mut order: Vec<usize> = (0..self.vmas.len())
            .filter(|&i| self.vmas[i].exists)
            .collect();
        order.sort_by_key(|&i| self.vmas[i].start);
        self.order = order;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunState {
    NotStarted,
    Running,
    Parked,
    Done,
}

#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub tid: u32,
    pub mm: usize,
    pub cpu: u32,
    pub state: RunState,
    pub runtime: u64,
    pub node_stamp: u64,
    pub period_ms: u32,
    pub period_max_ms: u32,
    pub scan_seq: i64,
    /// The task mempolicy: `Some(node)` for `MPOL_BIND` to one node (no
    /// `MPOL_F_MOF`), `None` for `MPOL_DEFAULT` (the kernel then uses
    /// `preferred_node_policy[]`, which carries `MPOL_F_MOF`).
    pub bind: Option<u8>,
    pub preferred: Option<u8>,
    pub migrate_retry: u64,
    pub faults_mem: [[u64; 2]; MAX_NODES],
    pub faults_cpu: [[u64; 2]; MAX_NODES],
    pub membuf: [[u64; 2]; MAX_NODES],
    pub cpubuf: [[u64; 2]; MAX_NODES],
    pub locality: [u64; 3],
    pub total_faults: u64,
    /// `p->numa_pages_migrated`.
    pub pages_migrated: u64,
    pub in_group: bool,
    pub ops: Vec<Op>,
    pub pc: usize,
    pub pass: u32,
    /// Current sweep: (vma, first unit, end unit, cursor).
    pub sweep: Option<(usize, usize, usize, usize)>,
    pub stack: Option<usize>,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub finish_ns: u64,
    /// Running on its CPU now (not sleeping, parked or done).
    pub on_cpu: bool,
    /// This thread's constant speed factor, per mille of the cost model's
    /// price (SMT siblings, frequency): drawn once from the seed.
    pub speed_permille: u32,
    /// System time of a `task_numa_work()` that ran during the last step,
    /// charged (as CPU and wall time) at the start of the next one.
    pub pending_ns: u64,
}

/// What an entry of the event queue does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Task `ti` runs its next step.
    Step(usize),
    /// Task `ti` runs `task_numa_work()` (the task work queued by its tick;
    /// it runs on the way back to user mode right after that tick).
    NumaWork(usize),
}

/// Upper bound (exclusive) of the seeded offset, in ns, that orders the
/// `task_numa_work()` calls queued by ticks of the same jiffy. Far below
/// one tick, so it never moves a call into another jiffy; it only stands
/// for the arbitrary order in which CPUs that tick together reach the
/// `cmpxchg` on `mm->numa_next_scan`.
pub(crate) const SAME_TICK_ORDER_NS: u32 = 1000;

/// The whole simulated system: the machine, its processes and threads,
/// the scanner state and what the run counted so far.
#[derive(Debug)]
pub(crate) struct Machine {
    pub features: Features,
    pub sysctl: Sysctl,
    pub cost: CostModel,
    pub nodes: usize,
    pub cpus_per_node: u32,
    pub node_capacity: u64,
    pub node_used: [u64; MAX_NODES],
    pub cpu_owner: Vec<Option<usize>>,
    /// Free CPUs in the seeded order new threads take them.
    pub cpu_pool: Vec<u32>,
    pub mms: Vec<Mm>,
    pub tasks: Vec<Task>,
    /// Task indices per process, by plan thread index.
    pub proc_tasks: Vec<Vec<usize>>,
    pub rng: Rng,
    /// Task steps and queued scanner work in `(time, emission order)` order.
    pub queue: EventQueue<Event>,
    pub now: u64,
    pub counters: Counters,
    pub skips: SkipReasons,
    pub sample_ns: u64,
    pub series: Vec<(u64, u64)>,
    pub units_processed: u64,
    pub scans: Vec<ScanEvent>,
    /// Tasks on CPU now (they share memory bandwidth).
    pub running: u32,
    pub ncpus: u32,
}

impl Machine {
    pub fn node_of_cpu(&self, cpu: u32) -> usize {
        (cpu / self.cpus_per_node) as usize
    }

    pub fn task_node(&self, ti: usize) -> usize {
        self.node_of_cpu(self.tasks[ti].cpu)
    }

    /// Builds the initial state from a plan.
    pub fn new(sc: &NumabScenario, plan: &Plan, version: ScannerVersion, seed: u64) -> Machine {
        let mut rng = Rng::new_shifted_stream(seed);
        let nodes = sc.nodes as usize;
        let ncpus = sc.ncpus();
        let mut cpu_pool: Vec<u32> = (0..ncpus).collect();
        rng.shuffle(&mut cpu_pool);
        let mut sim = Machine {
            features: version.features(),
            sysctl: sc.sysctl.clone(),
            cost: sc.cost.clone(),
            nodes,
            cpus_per_node: sc.cpus_per_node,
            node_capacity: (sc.mem_per_node_mib << 20) / PAGE,
            node_used: [0; MAX_NODES],
            cpu_owner: vec![None; ncpus as usize],
            cpu_pool,
            mms: Vec::new(),
            tasks: Vec::new(),
            proc_tasks: Vec::new(),
            rng,
            queue: EventQueue::new(),
            now: 0,
            counters: Counters::default(),
            skips: SkipReasons::default(),
            sample_ns: sc.sample_interval_ms * NS_PER_MS,
            series: Vec::new(),
            units_processed: 0,
            scans: Vec::new(),
            running: 0,
            ncpus,
        };
        for p in &plan.processes {
            sim.add_process(p);
        }
        sim
    }

    fn add_process(&mut self, p: &crate::plan::ProcessPlan) {
        let mm_idx = self.mms.len();
        // Layout: low area grows up from the binary, the mmap area grows
        // down from below the stack gap, in creation order.
        let mut low = 0x5555_5555_4000u64;
        let mut top = 0x7f00_0000_0000u64;
        let mut vmas = Vec::with_capacity(p.vmas.len());
        let main_stack = p.vmas.iter().position(|v| v.name == "stack");
        for (i, v) in p.vmas.iter().enumerate() {
            let align = if v.bytes >= HPAGE { HPAGE } else { PAGE };
            let start = if Some(i) == main_stack {
                0x7ffd_0000_0000 - v.bytes
            } else if v.mmap_area {
                top = (top - v.bytes) & !(align - 1);
                top
            } else {
                let s = low.div_ceil(align) * align;
                low = s + v.bytes + PAGE;
                s
            };
            let end = start + v.bytes;
            let mut units = Vec::new();
            match v.touched_pages {
                Some(n) if n > 0 => {
                    let n = n.min(v.bytes / PAGE);
                    // Top pages of the VMA, split at 2 MiB boundaries.
                    let mut a = end - n * PAGE;
                    while a < end {
                        let block_end = ((a / HPAGE) + 1) * HPAGE;
                        let e = block_end.min(end);
                        units.push(Unit::new(a, ((e - a) / PAGE) as u32, false));
                        a = e;
                    }
                }
                Some(_) => {}
                None => {
                    if matches!(v.kind, VmaKind::Anon | VmaKind::SharedAnon) {
                        let mut a = start;
                        while a < end {
                            let block_end = ((a / HPAGE) + 1) * HPAGE;
                            let e = block_end.min(end);
                            let full = a % HPAGE == 0 && e - a == HPAGE;
                            let huge = full
                                && v.thp_fraction > 0.0
                                && (v.thp_fraction >= 1.0
                                    || self.rng.unit_f64_32() < v.thp_fraction);
                            units.push(Unit::new(a, ((e - a) / PAGE) as u32, huge));
                            a = e;
                        }
                    }
                }
            }
            vmas.push(Vma {
                name: v.name.clone(),
                kind: v.kind,
                start,
                end,
                units,
                numab: None,
                exists: v.at_start,
                complete_scans: 0,
                created_seq: 0,
                cover_next: u64::MAX,
                cover_seq: 0,
                covered_seq: None,
            });
        }
        // fork(): `init_numa_balancing()` of the (single-threaded) parent
        // sets `numa_next_scan = jiffies + scan_delay`, and `dup_mm()`
        // copies it into the child.
        let next_scan =
            self.sysctl.jiffies(0) + self.sysctl.msecs_to_jiffies(self.sysctl.scan_delay_ms);
        let mut mm = Mm {
            vmas,
            order: Vec::new(),
            numa_next_scan: next_scan,
            scan_offset: 0,
            scan_seq: 0,
            users: 0,
            rss_pages: 0,
            group: Group::default(),
            convoy: 0,
        };
        mm.rebuild_order();
        // exec-time pages (binary data, heap, libc data) exist before the
        // workload starts; they sit on the node of the main thread.
        let main_cpu = self.cpu_pool.first().copied().unwrap_or(0);
        let main_node = self.node_of_cpu(main_cpu) as u8;
        for (v, plan) in mm.vmas.iter_mut().zip(&p.vmas) {
            if v.exists && v.scannable() && v.name != "stack" && plan.touched_pages.is_some() {
                for u in v.units.iter_mut() {
                    u.present = true;
                    u.nid = main_node;
                    mm.rss_pages += u.base_pages();
                    self.node_used[main_node as usize] += u.base_pages();
                }
            }
        }
        self.mms.push(mm);
        let mut ids = Vec::new();
        for (i, t) in p.threads.iter().enumerate() {
            let ti = self.tasks.len();
            self.tasks.push(Task {
                tid: p.pid + i as u32,
                mm: mm_idx,
                cpu: 0,
                state: RunState::NotStarted,
                runtime: 0,
                node_stamp: 0,
                period_ms: self.sysctl.scan_delay_ms,
                period_max_ms: self.sysctl.scan_period_max_ms,
                scan_seq: 0,
                bind: None,
                preferred: None,
                migrate_retry: 0,
                faults_mem: [[0; 2]; MAX_NODES],
                faults_cpu: [[0; 2]; MAX_NODES],
                membuf: [[0; 2]; MAX_NODES],
                cpubuf: [[0; 2]; MAX_NODES],
                locality: [0; 3],
                total_faults: 0,
                pages_migrated: 0,
                in_group: false,
                ops: t.ops.clone(),
                pc: 0,
                pass: 0,
                sweep: None,
                stack: t.stack,
                user_ns: 0,
                sys_ns: 0,
                finish_ns: 0,
                on_cpu: false,
                speed_permille: 1000,
                pending_ns: 0,
            });
            ids.push(ti);
        }
        self.proc_tasks.push(ids.clone());
        for (i, t) in p.threads.iter().enumerate() {
            if t.at_start {
                self.start_task(ids[i], 0, None);
            }
        }
    }

    /// Takes a CPU from the pool for task `ti`.
    fn take_cpu(&mut self, ti: usize) {
        let cpu = self.cpu_pool.remove(0);
        self.cpu_owner[cpu as usize] = Some(ti);
        self.tasks[ti].cpu = cpu;
    }

    fn release_cpu(&mut self, ti: usize) {
        let cpu = self.tasks[ti].cpu;
        if self.cpu_owner[cpu as usize] == Some(ti) {
            self.cpu_owner[cpu as usize] = None;
            self.cpu_pool.push(cpu);
        }
    }

    /// `init_numa_balancing()` plus the first scheduling of a task.
    fn start_task(&mut self, ti: usize, at: u64, spawner: Option<usize>) {
        self.take_cpu(ti);
        let spread = self.cost.speed_spread_permille.min(900);
        if spread > 0 {
            let r = self.rng.below_u32(2 * spread + 1);
            self.tasks[ti].speed_permille = 1000 - spread + r;
        }
        let mm = self.tasks[ti].mm;
        if let Some(sp) = spawner {
            self.init_numa_balancing_clone(ti, sp, at);
        }
        self.mms[mm].users += 1;
        // A new thread writes its stack (the clone return, `start_thread()`,
        // the benchmark's `thread()` frame) before its first op, so before
        // any `set_mempolicy()`: the pages are first touched under the
        // policy it was created with (`MPOL_DEFAULT`: its own node). glibc's
        // `struct pthread` at the top of the mapping is written by the
        // creating thread; the model puts it with the others.
        if spawner.is_some() {
            if let Some(st) = self.tasks[ti].stack {
                if !self.mms[mm].vmas[st].units.is_empty() {
                    let (_, sys) = self.touch_stack(ti, st);
                    self.tasks[ti].sys_ns += sys;
                    self.tasks[ti].pending_ns += sys;
                }
            }
        }
        let t = &mut self.tasks[ti];
        t.state = RunState::Running;
        t.scan_seq = self.mms[mm].scan_seq;
        self.push(at, ti);
    }

    /// `init_numa_balancing()` for a `CLONE_VM` child `ti` of `parent`,
    /// created at `at`. It runs in `sched_fork()`, before `copy_mm()`, so
    /// `mm_users` does not count the child yet:
    /// * `node_stamp = min_t(unsigned int, task_scan_max(current),
    ///   current->numa_scan_period * mm_users * NSEC_PER_MSEC) + 2 *
    ///   TICK_NSEC`, which mixes ms and ns and truncates to 32 bits (the
    ///   model keeps both);
    /// * the child's own period is `scan_delay` (set when the task was
    ///   built): it does not inherit its parent's;
    /// * with `mm_users == 1` (the first `pthread_create()` of a
    ///   single-threaded process) the mm's `numa_next_scan` becomes
    ///   `jiffies + scan_delay` and its `numa_scan_seq` 0.
    pub(crate) fn init_numa_balancing_clone(&mut self, ti: usize, parent: usize, at: u64) {
        let mm = self.tasks[ti].mm;
        let users = u64::from(self.mms[mm].users);
        let smax = u64::from(self.task_scan_max_ms(parent));
        let ns = (u64::from(self.tasks[parent].period_ms) * users * NS_PER_MS) as u32;
        let stamp = smax.min(u64::from(ns));
        self.tasks[ti].node_stamp = stamp + 2 * self.sysctl.tick_ns();
        self.tasks[ti].period_ms = self.sysctl.scan_delay_ms;
        if users == 1 {
            let m = &mut self.mms[mm];
            m.numa_next_scan =
                self.sysctl.jiffies(at) + self.sysctl.msecs_to_jiffies(self.sysctl.scan_delay_ms);
            m.scan_seq = 0;
        }
    }

    pub fn push(&mut self, at: u64, ti: usize) {
        self.queue.push(at, Event::Step(ti));
    }

    /// Handles one queue entry at `self.now`.
    pub(crate) fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::Step(ti) => self.step(ti),
            Event::NumaWork(ti) => {
                let cost = self.task_numa_work(ti, self.now);
                self.tasks[ti].sys_ns += cost;
                self.tasks[ti].pending_ns += cost;
            }
        }
    }

    /// Runs until every task finished or `limit_ns`; returns whether the
    /// limit cut the run short.
    pub fn run(&mut self, limit_ns: u64) -> bool {
        while let Some(s) = self.queue.pop() {
            let (at, ev) = (s.time, s.event);
            if at > limit_ns {
                self.now = limit_ns;
                return true;
            }
            self.now = at;
            self.dispatch(ev);
        }
        false
    }

    fn set_on_cpu(&mut self, ti: usize, on: bool) {
        if self.tasks[ti].on_cpu != on {
            self.tasks[ti].on_cpu = on;
            if on {
                self.running += 1;
            } else {
                self.running -= 1;
            }
        }
    }

    /// Cost of writing one page, local or remote: the saturated price
    /// scaled by the share of CPUs currently writing, never below the
    /// single-thread price.
    pub fn page_cost(&self, local: bool) -> u64 {
        let c = &self.cost;
        let sat = if local {
            c.local_page_ns
        } else {
            c.remote_page_ns
        };
        let scaled = sat * u64::from(self.running.max(1)) / u64::from(self.ncpus.max(1));
        let floor = if local {
            c.solo_page_ns
        } else {
            c.solo_page_ns * c.remote_page_ns / c.local_page_ns.max(1)
        };
        scaled.max(floor)
    }

    /// Executes the next step of task `ti` at `self.now`.
    fn step(&mut self, ti: usize) {
        self.set_on_cpu(ti, true);
        loop {
            let pc = self.tasks[ti].pc;
            let Some(op) = self.tasks[ti].ops.get(pc).cloned() else {
                self.finish(ti);
                return;
            };
            match op {
                Op::Spin { ns } => {
                    // One scheduler tick of computation per step, so
                    // `task_tick_numa()` sees the runtime as it accrues.
                    let chunk = ns.min(self.sysctl.tick_ns());
                    if chunk < ns {
                        self.tasks[ti].ops[pc] = Op::Spin { ns: ns - chunk };
                    } else {
                        self.tasks[ti].pc += 1;
                    }
                    if chunk == 0 {
                        continue;
                    }
                    self.spin(ti, chunk);
                    return;
                }
                Op::SpinUntilScanSeq { seq } => {
                    if self.mms[self.tasks[ti].mm].scan_seq >= seq {
                        self.tasks[ti].pc += 1;
                        continue;
                    }
                    self.spin(ti, self.sysctl.tick_ns());
                    return;
                }
                Op::SetMempolicy { bind } => {
                    self.tasks[ti].bind = bind;
                    self.tasks[ti].pc += 1;
                }
                Op::Sleep { ns } => {
                    self.tasks[ti].pc += 1;
                    self.set_on_cpu(ti, false);
                    self.push(self.now + ns, ti);
                    return;
                }
                Op::SleepUntil { ns } => {
                    self.tasks[ti].pc += 1;
                    if ns > self.now {
                        self.set_on_cpu(ti, false);
                        self.push(ns, ti);
                        return;
                    }
                }
                Op::Mmap { vma } => {
                    let mm = self.tasks[ti].mm;
                    self.mms[mm].vmas[vma].exists = true;
                    self.mms[mm].vmas[vma].created_seq = self.mms[mm].scan_seq;
                    self.mms[mm].rebuild_order();
                    self.tasks[ti].pc += 1;
                }
                Op::SpawnAndJoin { first, count } => {
                    self.tasks[ti].pc += 1;
                    self.release_cpu(ti);
                    self.set_on_cpu(ti, false);
                    self.tasks[ti].state = RunState::Parked;
                    let mm = self.tasks[ti].mm;
                    let proc_idx = self.proc_of_mm(mm);
                    // pthread_create() one after another, ~20 µs apart.
                    for k in 0..count {
                        let child = self.proc_tasks[proc_idx][first + k];
                        if let Some(st) = self.tasks[child].stack {
                            self.mms[mm].vmas[st].exists = true;
                            self.mms[mm].vmas[st].created_seq = self.mms[mm].scan_seq;
                            let g = st + 1;
                            if g < self.mms[mm].vmas.len()
                                && self.mms[mm].vmas[g].kind == VmaKind::Inaccessible
                            {
                                self.mms[mm].vmas[g].exists = true;
                            }
                        }
                        self.start_task(child, self.now + 20_000 * k as u64, Some(ti));
                    }
                    self.mms[mm].rebuild_order();
                    return;
                }
                Op::Sweep {
                    vma,
                    from,
                    len,
                    passes,
                    sleep_ns,
                    convoy,
                } => {
                    if passes == 0 || len == 0 {
                        self.tasks[ti].pc += 1;
                        continue;
                    }
                    let (v, lo, hi, cur) = match self.tasks[ti].sweep {
                        Some(s) => s,
                        None => {
                            let mm = self.tasks[ti].mm;
                            if convoy {
                                self.mms[mm].convoy += 1;
                            }
                            let vm = &self.mms[mm].vmas[vma];
                            let (lo, hi) = vm.unit_range(vm.start + from, vm.start + from + len);
                            (vma, lo, hi, lo)
                        }
                    };
                    if lo == hi {
                        self.tasks[ti].pc += 1;
                        self.tasks[ti].sweep = None;
                        continue;
                    }
                    let (user, sys) = self.touch(ti, v, cur, convoy);
                    let (su, ss) = match self.tasks[ti].stack {
                        Some(st) if !self.mms[self.tasks[ti].mm].vmas[st].units.is_empty() => {
                            self.touch_stack(ti, st)
                        }
                        _ => (0, 0),
                    };
                    let jitter = self.jitter(user);
                    let user = jitter + su;
                    let mut dur = user + sys + ss;
                    self.tasks[ti].user_ns += user;
                    self.tasks[ti].sys_ns += sys + ss;
                    let mut sleep = 0;
                    let next = cur + 1;
                    if next == hi {
                        let t = &mut self.tasks[ti];
                        t.pass += 1;
                        if t.pass >= passes {
                            t.pass = 0;
                            t.pc += 1;
                            t.sweep = None;
                            if convoy {
                                let mm = t.mm;
                                self.mms[mm].convoy -= 1;
                            }
                        } else {
                            t.sweep = Some((v, lo, hi, lo));
                            sleep = sleep_ns;
                        }
                    } else {
                        self.tasks[ti].sweep = Some((v, lo, hi, next));
                    }
                    dur += self.account_runtime(ti, dur);
                    if sleep > 0 {
                        // Off CPU once this step's work is done; the
                        // bandwidth share is approximate at that edge.
                        self.set_on_cpu(ti, false);
                    }
                    self.push(self.now + dur + sleep, ti);
                    return;
                }
            }
        }
    }

    /// Computes on CPU for `ns` (one step): user time, the thread's stack
    /// touches, and `task_tick_numa()`.
    fn spin(&mut self, ti: usize, ns: u64) {
        let (_, ss) = match self.tasks[ti].stack {
            Some(st) if !self.mms[self.tasks[ti].mm].vmas[st].units.is_empty() => {
                self.touch_stack(ti, st)
            }
            _ => (0, 0),
        };
        self.tasks[ti].user_ns += ns;
        self.tasks[ti].sys_ns += ss;
        let mut dur = ns + ss;
        dur += self.account_runtime(ti, dur);
        self.push(self.now + dur, ti);
    }

    fn proc_of_mm(&self, mm: usize) -> usize {
        mm
    }

    fn finish(&mut self, ti: usize) {
        self.tasks[ti].state = RunState::Done;
        self.set_on_cpu(ti, false);
        self.tasks[ti].finish_ns = self.now;
        self.release_cpu(ti);
    }

    /// Scales a user-time cost by the seeded per-step jitter.
    fn jitter(&mut self, ns: u64) -> u64 {
        let j = u64::from(self.cost.jitter_permille);
        if j == 0 || ns == 0 {
            return ns;
        }
        let r = u64::from(self.rng.below_u32(2 * j as u32 + 1));
        ns * (1000 - j + r) / 1000
    }

    /// Charges a step of `dur` of CPU time, plus the system time of a
    /// `task_numa_work()` run during the previous step, and runs
    /// `task_tick_numa()` over it; returns that carried-over system time
    /// (the extra wall time of this step).
    ///
    /// A tick that opens the gate queues `task_numa_work()` as an event at
    /// the tick's time instead of running it here, when the step starts:
    /// the `cmpxchg` on `mm->numa_next_scan` is won by the first call in
    /// time, not by the thread whose step happened to begin first (which
    /// favoured threads with long steps, those writing remote memory).
    /// Calls queued by ticks of one jiffy are ordered by a seeded offset
    /// below [`SAME_TICK_ORDER_NS`].
    pub(crate) fn account_runtime(&mut self, ti: usize, dur: u64) -> u64 {
        let carried = std::mem::take(&mut self.tasks[ti].pending_ns);
        let total = dur + carried;
        let r0 = self.tasks[ti].runtime;
        self.tasks[ti].runtime += total;
        if let Some(at) = self.task_tick_numa(ti, r0, total) {
            let order = u64::from(self.rng.below_u32(SAME_TICK_ORDER_NS));
            self.queue.push(at + order, Event::NumaWork(ti));
        }
        carried
    }

    /// `task_tick_numa()` over one step of task `ti` that starts at
    /// `self.now` with `r0` of CPU time and runs on CPU for `dur`. Returns
    /// the virtual time at which `task_numa_work()` is queued, if it is.
    ///
    /// The scheduler tick comes at every multiple of `TICK_NSEC` (all CPUs
    /// in phase) and samples the thread's own CPU time: the gate opens at
    /// the first tick of the step at which `sum_exec_runtime > node_stamp
    /// + numa_scan_period`; a step without such a tick leaves the gate to
    /// the next step. When it opens, `node_stamp` advances by the period it
    /// was tested with (it is not reset to the runtime), a task whose
    /// `node_stamp` was still 0 (a process's main thread) takes
    /// `task_scan_start()` as its period, and work is queued only if
    /// `jiffies` is not before `mm->numa_next_scan`.
    pub(crate) fn task_tick_numa(&mut self, ti: usize, r0: u64, dur: u64) -> Option<u64> {
        let tick = self.sysctl.tick_ns();
        let t = &self.tasks[ti];
        let period_ns = u64::from(t.period_ms) * NS_PER_MS;
        let open = t.node_stamp + period_ns;
        if r0 + dur <= open {
            return None;
        }
        // Wall time at which the runtime first exceeds `open`, then the
        // first tick at or after it (and strictly after the step's start).
        let crossing = self.now + (open + 1).saturating_sub(r0);
        let at = crossing.max(self.now + 1).div_ceil(tick) * tick;
        if at > self.now + dur {
            return None;
        }
        if self.tasks[ti].node_stamp == 0 {
            self.tasks[ti].period_ms = self.task_scan_start_ms(ti);
        }
        self.tasks[ti].node_stamp += period_ns;
        let mm = self.tasks[ti].mm;
        if self.sysctl.jiffies(at) < self.mms[mm].numa_next_scan {
            return None;
        }
        Some(at)
    }

    /// Records `pages` accessed at `self.now`, `local` or not.
    pub fn sample(&mut self, pages: u64, local: bool) {
        let b = (self.now / self.sample_ns) as usize;
        if self.series.len() <= b {
            self.series.resize(b + 1, (0, 0));
        }
        self.series[b].1 += pages;
        if local {
            self.series[b].0 += pages;
        }
    }

    /// Anon RSS of the task's mm, pages.
    pub fn rss_pages(&self, ti: usize) -> u64 {
        self.mms[self.tasks[ti].mm].rss_pages
    }
}

impl Unit {
    fn new(addr: u64, pages: u32, huge: bool) -> Unit {
        Unit {
            addr,
            pages,
            huge,
            present: false,
            protnone: false,
            nid: 0,
            last_cpupid: 0,
            last_visit: 0,
            local_skips: 0,
        }
    }
}

/// The scan-call gating as read in `kernel/sched/fair.c` (v6.5 line
/// numbers: `task_tick_numa` 3208, `task_numa_work` 2979-3000,
/// `init_numa_balancing` 3138), each rule against a timeline computed by
/// hand. `HZ = 250`: one tick, one jiffy, is 4 ms; jiffy `j` starts at
/// `j * 4 ms`.
#[cfg(test)]
mod gate_tests {
    use super::Machine;
    use crate::{builtin_scenario, ScannerVersion};

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;
    /// Base pages of a 3 GiB RSS: `task_scan_min` = 100 ms there.
    const RSS_3G: u64 = (3 << 30) >> 12;

    fn sim() -> Machine {
        let sc = builtin_scenario("numa02").expect("builtin").numab;
        let plan = sc.plan().expect("plan");
        Machine::new(&sc, &plan, ScannerVersion::V6_5, 1)
    }

    /// Runs `task_tick_numa` for a step of `dur` starting at `now` with
    /// the task's runtime equal to `now` (a thread on CPU since time 0).
    fn tick(s: &mut Machine, ti: usize, now: u64, dur: u64) -> Option<u64> {
        s.now = now;
        s.task_tick_numa(ti, now, dur)
    }

    #[test]
    fn gate_opens_at_the_first_tick_past_node_stamp_plus_period() {
        let mut s = sim();
        let ti = 1;
        s.tasks[ti].node_stamp = 8 * MS;
        s.tasks[ti].period_ms = 1000;
        s.mms[0].numa_next_scan = 250;
        // The runtime passes 1.008 s inside [1.000, 1.009]; the next tick
        // after the crossing is 1.012 s, outside the step: nothing yet,
        // and node_stamp does not move.
        assert_eq!(tick(&mut s, ti, S, 9 * MS), None);
        assert_eq!(s.tasks[ti].node_stamp, 8 * MS);
        // The next step [1.009, 1.018] holds the 1.012 s tick: the gate
        // opens there, jiffy 253 >= 250 queues the work, and node_stamp
        // advances by the period (1.008 s), not to the runtime.
        assert_eq!(tick(&mut s, ti, S + 9 * MS, 9 * MS), Some(S + 12 * MS));
        assert_eq!(s.tasks[ti].node_stamp, S + 8 * MS);
        // Next opening: runtime > 2.008 s, first tick 2.012 s.
        assert_eq!(tick(&mut s, ti, 2 * S, 8 * MS), None);
        assert_eq!(
            tick(&mut s, ti, 2 * S + 8 * MS, 8 * MS),
            Some(2 * S + 12 * MS)
        );
        assert_eq!(s.tasks[ti].node_stamp, 2 * S + 8 * MS);
    }

    #[test]
    fn gate_without_the_jiffy_still_advances_node_stamp() {
        let mut s = sim();
        let ti = 1;
        s.tasks[ti].node_stamp = 8 * MS;
        s.tasks[ti].period_ms = 1000;
        // numa_next_scan at jiffy 254 (1.016 s): the 1.012 s opening is in
        // jiffy 253, before it, so no work is queued, but the stamp moved.
        s.mms[0].numa_next_scan = 254;
        assert_eq!(tick(&mut s, ti, S + 9 * MS, 9 * MS), None);
        assert_eq!(s.tasks[ti].node_stamp, S + 8 * MS);
        // Equal jiffies pass (`!time_before`).
        s.mms[0].numa_next_scan = 503;
        assert_eq!(
            tick(&mut s, ti, 2 * S + 9 * MS, 9 * MS),
            Some(2 * S + 12 * MS)
        );
    }

    #[test]
    fn first_opening_of_a_main_thread_takes_task_scan_start() {
        let mut s = sim();
        let ti = 0;
        s.mms[0].rss_pages = RSS_3G;
        assert_eq!(s.task_scan_start_ms(ti), 100);
        s.tasks[ti].node_stamp = 0;
        s.tasks[ti].period_ms = 1000;
        s.mms[0].numa_next_scan = 0;
        // runtime > 0 + 1000 ms at 1.000 s; first tick after it 1.004 s.
        assert_eq!(tick(&mut s, ti, 996 * MS, 8 * MS), Some(1004 * MS));
        // The stamp advances by the period it was tested with (1000 ms),
        // and the period becomes task_scan_start() = 100 ms.
        assert_eq!(s.tasks[ti].node_stamp, S);
        assert_eq!(s.tasks[ti].period_ms, 100);
        // So the next opening is at runtime > 1.1 s: tick 1.104 s.
        assert_eq!(tick(&mut s, ti, 1004 * MS, 92 * MS), None);
        assert_eq!(tick(&mut s, ti, 1096 * MS, 8 * MS), Some(1104 * MS));
        assert_eq!(s.tasks[ti].node_stamp, 1100 * MS);
    }

    #[test]
    fn the_winner_sets_the_next_scan_with_its_own_period() {
        let mut s = sim();
        let (a, b) = (1, 2);
        s.tasks[a].period_ms = 400;
        s.tasks[b].period_ms = 1000;
        s.mms[0].numa_next_scan = 250;
        let stamp_a = s.tasks[a].node_stamp;
        // A at 1.000 s (jiffy 250) wins: next scan = 250 + 100 jiffies.
        let cost = s.task_numa_work(a, S);
        assert_eq!(s.counters.scan_calls, 1);
        assert_eq!(s.mms[0].numa_next_scan, 350);
        // The winner's stamp: + 2 ticks + 32 x the call's system time.
        assert_eq!(s.tasks[a].node_stamp, stamp_a + 8 * MS + 32 * cost);
        // B at 1.396 s (jiffy 349) loses: nothing changes.
        let stamp_b = s.tasks[b].node_stamp;
        assert_eq!(s.task_numa_work(b, 1396 * MS), 0);
        assert_eq!(s.counters.scan_calls, 1);
        assert_eq!(s.mms[0].numa_next_scan, 350);
        assert_eq!(s.tasks[b].node_stamp, stamp_b);
        // B at 1.400 s (jiffy 350) wins with its 1000 ms period.
        s.task_numa_work(b, 1400 * MS);
        assert_eq!(s.counters.scan_calls, 2);
        assert_eq!(s.mms[0].numa_next_scan, 600);
    }

    #[test]
    fn an_unset_next_scan_only_arms_the_scan_delay() {
        let mut s = sim();
        s.mms[0].numa_next_scan = 0;
        assert_eq!(s.task_numa_work(1, 2 * S), 0);
        assert_eq!(s.counters.scan_calls, 0);
        // jiffy 500 + msecs_to_jiffies(1000) = 750.
        assert_eq!(s.mms[0].numa_next_scan, 750);
    }

    #[test]
    fn first_pthread_create_resets_the_mm_and_later_ones_do_not() {
        let mut s = sim();
        // The main thread runs (mm_users 1); the mm has scanned a while.
        assert_eq!(s.mms[0].users, 1);
        s.mms[0].scan_seq = 3;
        s.mms[0].numa_next_scan = 9999;
        s.tasks[0].period_ms = 700;
        s.start_task(1, 2500 * MS, Some(0));
        // sched_fork() with mm_users == 1: next scan = jiffy 625 + 250, seq 0.
        assert_eq!(s.mms[0].scan_seq, 0);
        assert_eq!(s.mms[0].numa_next_scan, 875);
        assert_eq!(s.tasks[1].scan_seq, 0);
        assert_eq!(s.mms[0].users, 2);
        // node_stamp = min(task_scan_max = 60000 (ms, compared as ns),
        // 700 ms x 1 user in ns) + 2 ticks; the child's period is the
        // scan delay, not the parent's 700 ms.
        assert_eq!(s.task_scan_max_ms(0), 60_000);
        assert_eq!(s.tasks[1].node_stamp, 60_000 + 8 * MS);
        assert_eq!(s.tasks[1].period_ms, 1000);
        // The second pthread_create (mm_users 2) leaves the mm alone.
        s.mms[0].scan_seq = 5;
        s.mms[0].numa_next_scan = 9999;
        s.start_task(2, 2600 * MS, Some(0));
        assert_eq!(s.mms[0].scan_seq, 5);
        assert_eq!(s.mms[0].numa_next_scan, 9999);
        assert_eq!(s.tasks[2].scan_seq, 5);
        assert_eq!(s.tasks[2].node_stamp, 60_000 + 8 * MS);
    }

    #[test]
    fn a_bound_scanner_skips_every_vma_and_still_wraps_the_seq() {
        let mut s = sim();
        s.mms[0].numa_next_scan = 250;
        s.tasks[1].bind = Some(0);
        // MPOL_BIND: `!vma_policy_mof()` skips every VMA before
        // numab_state exists; reaching the end wraps the seq.
        s.task_numa_work(1, S);
        assert_eq!(s.mms[0].scan_seq, 1);
        assert_eq!(s.counters.numa_pte_updates, 0);
        assert!(s.skips.mpol_no_mof > 0);
        assert!(s.mms[0].vmas.iter().all(|v| v.numab.is_none()));
        // Back on MPOL_DEFAULT, the next call allocates numab_state at the
        // seq the bound calls left behind.
        s.tasks[1].bind = None;
        s.task_numa_work(1, 2 * S);
        let firsts: Vec<i64> = s.mms[0]
            .vmas
            .iter()
            .filter_map(|v| v.numab.as_ref().map(|n| n.start_scan_seq))
            .collect();
        assert!(!firsts.is_empty());
        assert!(firsts.iter().all(|&q| q == 1), "{firsts:?}");
    }

    #[test]
    fn the_first_call_in_time_wins_not_the_first_step_to_start() {
        use super::{Event, SAME_TICK_ORDER_NS};
        let mut s = sim();
        s.queue = simcore::EventQueue::new();
        let (a, b) = (1, 2);
        s.mms[0].numa_next_scan = 250;
        for t in [a, b] {
            s.tasks[t].period_ms = 1000;
        }
        // A: a long step [1.000, 1.013] s; runtime > 8 ms + 1000 ms at
        // 1.008 s, first tick after it 1.012 s.
        s.tasks[a].node_stamp = 8 * MS;
        s.tasks[a].runtime = S;
        s.now = S;
        assert_eq!(s.account_runtime(a, 13 * MS), 0);
        // B: a shorter step [1.002, 1.009] s that starts later; runtime >
        // 4 ms + 1000 ms at 1.004 s, first tick after it 1.008 s.
        s.tasks[b].node_stamp = 4 * MS;
        s.tasks[b].runtime = S + 2 * MS;
        s.now = S + 2 * MS;
        assert_eq!(s.account_runtime(b, 7 * MS), 0);
        // Running the queued work in time order: B's call at jiffy 252
        // wins and sets the next scan to 252 + 250; A's at jiffy 253 loses.
        while let Some(e) = s.queue.pop() {
            s.now = e.time;
            s.dispatch(e.event);
            assert!(matches!(e.event, Event::NumaWork(_)));
        }
        assert_eq!(s.counters.scan_calls, 1);
        assert_eq!(s.scans[0].tid, s.tasks[b].tid);
        let t = s.scans[0].t_ns;
        assert!((S + 8 * MS..S + 8 * MS + u64::from(SAME_TICK_ORDER_NS)).contains(&t));
        assert_eq!(s.mms[0].numa_next_scan, 502);
        // The call's system time is charged to B's next step, as CPU time
        // and wall time.
        let cost = s.tasks[b].pending_ns;
        assert!(cost > 0);
        assert_eq!(s.tasks[a].pending_ns, 0);
        let r = s.tasks[b].runtime;
        s.now = S + 9 * MS;
        assert_eq!(s.account_runtime(b, 4 * MS), cost);
        assert_eq!(s.tasks[b].runtime, r + 4 * MS + cost);
        assert_eq!(s.tasks[b].pending_ns, 0);
    }

    #[test]
    fn a_new_thread_touches_its_stack_before_its_first_op() {
        let sc = builtin_scenario("numa01-thread-alloc-64")
            .expect("builtin")
            .numab;
        let plan = sc.plan().expect("plan");
        let mut s = Machine::new(&sc, &plan, ScannerVersion::V6_5, 1);
        // Worker 1 of process 0 starts with `set_mempolicy(MPOL_BIND)` to
        // node 0; put it on node 1 to tell the two apart.
        let ti = s.proc_tasks[0][1];
        assert!(matches!(
            s.tasks[ti].ops[0],
            crate::plan::Op::SetMempolicy { bind: Some(0) }
        ));
        let far = s.cpus_per_node;
        s.cpu_pool.retain(|&c| c != far);
        s.cpu_pool.insert(0, far);
        s.start_task(ti, S, Some(s.proc_tasks[0][0]));
        assert_eq!(s.task_node(ti), 1);
        assert_eq!(s.tasks[ti].pc, 0);
        let st = s.tasks[ti].stack.expect("stack");
        let units = &s.mms[0].vmas[st].units;
        // 4 pages at the top of the 8 MiB stack, present on the thread's
        // own node, not on the node of the bind that comes next; the
        // first-touch system time (4 x 1.5 us) waits for the first step.
        assert_eq!(units.iter().map(|u| u.base_pages()).sum::<u64>(), 4);
        assert!(units.iter().all(|u| u.present && u.nid == 1));
        assert_eq!(s.tasks[ti].pending_ns, 4 * 1_500);
    }

    #[test]
    fn a_tiny_period_times_users_wins_the_min_in_nanoseconds() {
        let mut s = sim();
        // With the parent's period at 0 ms the ns product is 0 and the
        // stagger is just the 2 ticks.
        s.tasks[0].period_ms = 0;
        s.start_task(1, S, Some(0));
        assert_eq!(s.tasks[1].node_stamp, 8 * MS);
    }
}
