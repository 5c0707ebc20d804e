//! Processes and their kernel entries.
//!
//! A process lives in a cgroup and runs on one CPU. What it does is a
//! sequence of kernel entries, each charging what the kernel would charge
//! and, on the way back to user space, paying the `memory.high` debt of
//! its charges ([`crate::memcg::MemcgTree::return_to_user`]); a throttled process sleeps
//! in virtual time. The entries:
//!
//! * an anonymous page fault: the page, and a page-table page for each
//!   512 pages of the region first touched (`GFP_PGTABLE_USER` is
//!   accounted); an `mlock` of a region faults all its pages in one entry,
//!   so only the in-kernel payment of a debt above a batch can stop it;
//! * a `read` of one page of a file (the page cache is charged to the
//!   memcg of the process that extended the file, see [`super::file`]);
//! * a lookup of a missing name: a negative dentry and its external name
//!   (reclaimable slab, freed by the shrinker);
//! * a thread creation: a kernel stack, a `task_struct`, and the first
//!   page of its user stack (with its page-table page).
//!
//! A process keeps what it charged until it frees it or exits; an exit
//! (or a kill) frees its pages, page tables, stacks and files at once
//! (the kernel's OOM reaper does it asynchronously). A charge the OOM
//! killer serves ([`super::oom`]) is retried after a kill, as the kernel
//! retries; a process killed that way stops.
//!
//! `mlock`ed pages are not put on an unevictable list: the selftests that
//! `mlock` also set `memory.swap.max` to 0, which makes anonymous pages
//! unreclaimable as well.

use super::cgroup::CgId;
use super::file::FileId;
use super::{Machine, MachineError, KERNEL_STACK_PAGES, PTE_SPAN, TASK_STRUCT_BYTES};
use crate::memcg::charge::OOM_MAX_PAGES;
use crate::memcg::kmem::OBJCG_POINTER_BYTES;
use crate::memcg::{Charge, ChargeContext, MemcgError, MemcgId, ObjKind};
use hierstat::PAGE_SIZE;

/// A process id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(pub u32);

/// How a process's work ended (for now).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The work is done; the process is alive.
    Done,
    /// The process sleeps (throttled); [`Machine::resume`] or
    /// [`Machine::finish`] continue it.
    Sleeping,
    /// The process was killed (OOM killer, `cgroup.kill`).
    Killed,
    /// A kernel entry failed (an OOM with nothing to kill, ...).
    Failed(MachineError),
}

impl Outcome {
    /// The work completed.
    pub fn is_done(&self) -> bool {
        *self == Outcome::Done
    }
}

/// What each new thread does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadBody {
    /// Sleeps until the process exits (`pthread_wait_fn`).
    Sleep,
    /// Looks up this many missing names on its own CPU, then exits
    /// (`alloc_kmem_fn`).
    Lookups(u64),
}

/// An anonymous region (one `mmap`).
#[derive(Debug, Clone)]
struct Region {
    first: u32,
    /// Pages faulted so far, from the start (faults are sequential).
    faulted: u32,
    /// The memcg charged for each page-table page of the region.
    pte: Vec<Option<MemcgId>>,
}

#[derive(Debug, Clone, Copy)]
enum Work {
    Anon {
        region: usize,
        end: u32,
        one_entry: bool,
    },
    /// `left` more kernel entries each doing `unit` once, with a return to
    /// user space after each.
    Repeat {
        unit: Unit,
        left: u64,
    },
    Lookups {
        left: u64,
    },
}

/// What one entry of a [`Work::Repeat`] does.
#[derive(Debug, Clone, Copy)]
enum Unit {
    /// A one-page `read` of the file.
    ReadPage(FileId),
    /// A `pthread_create` of a thread doing the body.
    NewThread(ThreadBody),
}

/// One process.
#[derive(Debug, Clone)]
pub(crate) struct Process {
    pub(crate) cgroup: CgId,
    pub(crate) cpu: usize,
    pub(crate) oom_score_adj: i32,
    pub(crate) alive: bool,
    regions: Vec<Region>,
    /// Page-granular kernel memory held: (memcg, kind, pages).
    kmem: Vec<(MemcgId, Charge, u64)>,
    /// Byte-granular kernel memory held: (memcg, kind, bytes).
    objs: Vec<(MemcgId, ObjKind, u64)>,
    threads: u32,
    pub(crate) ctx: ChargeContext,
    work: Option<Work>,
    wake_ns: u64,
}

/// All processes (pids from 1).
#[derive(Debug, Clone, Default)]
pub(crate) struct Procs {
    list: Vec<Process>,
    next_cpu: usize,
}

impl Procs {
    pub(crate) fn get(&self, pid: Pid) -> Result<&Process, MachineError> {
        self.list
            .get((pid.0 as usize).wrapping_sub(1))
            .filter(|p| p.alive)
            .ok_or(MachineError::NoProcess(pid))
    }

    pub(crate) fn get_mut(&mut self, pid: Pid) -> Result<&mut Process, MachineError> {
        self.list
            .get_mut((pid.0 as usize).wrapping_sub(1))
            .filter(|p| p.alive)
            .ok_or(MachineError::NoProcess(pid))
    }

    /// Live processes.
    pub(crate) fn alive(&self) -> impl Iterator<Item = (Pid, &Process)> {
        self.list
            .iter()
            .enumerate()
            .filter(|(_, p)| p.alive)
            .map(|(i, p)| (Pid(i as u32 + 1), p))
    }

    /// Kernel memory charged to `m` is now `parent`'s (a removed memcg).
    pub(crate) fn reparent_memcg(&mut self, m: MemcgId, parent: MemcgId) {
        for p in self.list.iter_mut().filter(|p| p.alive) {
            for k in &mut p.kmem {
                if k.0 == m {
                    k.0 = parent;
                }
            }
            for o in &mut p.objs {
                if o.0 == m {
                    o.0 = parent;
                }
            }
            for r in &mut p.regions {
                for e in r.pte.iter_mut().flatten() {
                    if *e == m {
                        *e = parent;
                    }
                }
            }
        }
    }
}

/// What one step of work did.
enum Step {
    /// More to do.
    Continue,
    /// The work is done.
    Finished,
    /// The process stops: killed or failed.
    Stop(Outcome),
}

impl Machine {
    /// Forks a process into cgroup `path` (`cg_run_nowait`'s fork and
    /// `cgroup.procs` write): a kernel stack and a `task_struct` are
    /// charged to it. It runs on the next CPU, round robin.
    ///
    /// # Errors
    /// [`MachineError::Busy`] if `path` is a non-root cgroup with
    /// controllers in its `subtree_control`; [`MachineError::NoEntry`];
    /// charge failures.
    pub fn spawn(&mut self, path: &str) -> Result<Pid, MachineError> {
        let cg = self.cgroups.lookup(path)?;
        let c = self.cgroups.get(cg)?;
        if c.parent.is_some() && c.subtree_memory {
            return Err(MachineError::Busy(format!("{path}: no internal processes")));
        }
        let cpu = self.procs.next_cpu % self.cpus();
        self.procs.next_cpu += 1;
        self.procs.list.push(Process {
            cgroup: cg,
            cpu,
            oom_score_adj: 0,
            alive: true,
            regions: Vec::new(),
            kmem: Vec::new(),
            objs: Vec::new(),
            threads: 0,
            ctx: ChargeContext::default(),
            work: None,
            wake_ns: 0,
        });
        let pid = Pid(self.procs.list.len() as u32);
        self.cgroups.get_mut(cg)?.procs.insert(pid);
        if let Err(e) = self.charge_task(pid, cpu) {
            self.exit(pid)?;
            return Err(e);
        }
        Ok(pid)
    }

    /// Charges a task's kernel stack and `task_struct` on `cpu`.
    fn charge_task(&mut self, pid: Pid, cpu: usize) -> Result<(), MachineError> {
        let m = self.memcg_of(pid)?;
        let mut ctx = self.procs.get(pid)?.ctx;
        let r = self.tree.charge_in(
            cpu,
            m,
            0,
            Charge::KernelStack,
            KERNEL_STACK_PAGES,
            &mut self.lru,
            &mut ctx,
        );
        self.procs.get_mut(pid)?.ctx = ctx;
        r?;
        self.procs
            .get_mut(pid)?
            .kmem
            .push((m, Charge::KernelStack, KERNEL_STACK_PAGES));
        let bytes = TASK_STRUCT_BYTES + OBJCG_POINTER_BYTES;
        let r = self.tree.charge_obj(
            cpu,
            m,
            0,
            ObjKind::SlabUnreclaimable,
            bytes,
            &mut self.lru,
            &mut ctx,
        );
        self.procs.get_mut(pid)?.ctx = ctx;
        r?;
        self.procs
            .get_mut(pid)?
            .objs
            .push((m, ObjKind::SlabUnreclaimable, bytes));
        Ok(())
    }

    /// The memcg process `pid` charges now.
    pub(crate) fn memcg_of(&self, pid: Pid) -> Result<MemcgId, MachineError> {
        Ok(self.memcg_of_cgroup(self.procs.get(pid)?.cgroup))
    }

    /// Whether `pid` is alive.
    pub fn alive(&self, pid: Pid) -> bool {
        self.procs.get(pid).is_ok()
    }

    /// The CPU `pid` runs on.
    ///
    /// # Errors
    /// [`MachineError::NoProcess`].
    pub fn cpu_of(&self, pid: Pid) -> Result<usize, MachineError> {
        Ok(self.procs.get(pid)?.cpu)
    }

    /// Sets `/proc/PID/oom_score_adj` (-1000..=1000; -1000 makes the
    /// process unkillable by the OOM killer).
    ///
    /// # Errors
    /// [`MachineError::NoProcess`], [`MachineError::Invalid`].
    pub fn set_oom_score_adj(&mut self, pid: Pid, adj: i32) -> Result<(), MachineError> {
        if !(-1000..=1000).contains(&adj) {
            return Err(MachineError::Invalid(format!("oom_score_adj {adj}")));
        }
        self.procs.get_mut(pid)?.oom_score_adj = adj;
        Ok(())
    }

    fn add_region(&mut self, pid: Pid, pages: u32) -> Result<usize, MachineError> {
        let m = self.memcg_of(pid)?;
        let first = self.lru.add_mapping(m, 0, false, pages, 1)?;
        let p = self.procs.get_mut(pid)?;
        p.regions.push(Region {
            first,
            faulted: 0,
            pte: vec![None; pages.div_ceil(PTE_SPAN) as usize],
        });
        Ok(p.regions.len() - 1)
    }

    fn queue(&mut self, pid: Pid, work: Work) -> Result<(), MachineError> {
        let p = self.procs.get_mut(pid)?;
        if p.work.is_some() {
            return Err(MachineError::Busy(format!("{pid:?} is busy")));
        }
        p.work = Some(work);
        Ok(())
    }

    /// `malloc` + touching every page of `bytes` of anonymous memory (one
    /// page fault each), then runs to completion ([`finish`](Self::finish)).
    pub fn alloc_anon(&mut self, pid: Pid, bytes: u64) -> Outcome {
        match self.begin_alloc_anon(pid, bytes, false) {
            Ok(()) => self.finish(pid),
            Err(e) => Outcome::Failed(e),
        }
    }

    /// Queues an anonymous allocation of `bytes` (`mlock`: all its pages
    /// faulted in one kernel entry); run it with [`resume`](Self::resume)
    /// or [`finish`](Self::finish).
    ///
    /// # Errors
    /// [`MachineError::NoProcess`], [`MachineError::Busy`] if work is
    /// pending.
    pub fn begin_alloc_anon(
        &mut self,
        pid: Pid,
        bytes: u64,
        mlock: bool,
    ) -> Result<(), MachineError> {
        let pages = bytes.div_ceil(PAGE_SIZE) as u32;
        let region = self.add_region(pid, pages)?;
        self.queue(
            pid,
            Work::Anon {
                region,
                end: pages,
                one_entry: mlock,
            },
        )
    }

    /// Frees every anonymous region of `pid` (`free`/`munmap`): pages,
    /// swap entries and page tables.
    ///
    /// # Errors
    /// [`MachineError::NoProcess`]; accounting errors.
    pub fn free_anon(&mut self, pid: Pid) -> Result<(), MachineError> {
        let p = self.procs.get_mut(pid)?;
        let cpu = p.cpu;
        let regions = std::mem::take(&mut p.regions);
        for r in regions {
            self.free_region(cpu, &r)?;
        }
        Ok(())
    }

    fn free_region(&mut self, cpu: usize, r: &Region) -> Result<(), MachineError> {
        for s in r.first..r.first + r.faulted {
            self.lru.free(&mut self.tree, cpu, s)?;
        }
        for m in r.pte.iter().flatten() {
            self.tree.uncharge_kind(cpu, *m, 0, Charge::Pagetables, 1)?;
        }
        Ok(())
    }

    /// Reads `bytes` more of `file` the way the selftests' `alloc_pagecache`
    /// does: the file grows by `bytes` (`ftruncate`), then as many
    /// one-page `read`s as the new size has pages run from the file's
    /// shared offset (those past the end read nothing). Runs to completion.
    pub fn alloc_pagecache(&mut self, pid: Pid, file: FileId, bytes: u64) -> Outcome {
        let r = (|| {
            let m = self.memcg_of(pid)?;
            let size = self.extend_file(file, bytes.div_ceil(PAGE_SIZE), m)?;
            let unit = Unit::ReadPage(file);
            self.queue(pid, Work::Repeat { unit, left: size })
        })();
        match r {
            Ok(()) => self.finish(pid),
            Err(e) => Outcome::Failed(e),
        }
    }

    /// `n` lookups of missing names (`stat` of a non-existent path): each
    /// leaves a negative dentry charged to `pid`'s memcg. Runs to
    /// completion.
    pub fn lookup_missing(&mut self, pid: Pid, n: u64) -> Outcome {
        match self.queue(pid, Work::Lookups { left: n }) {
            Ok(()) => self.finish(pid),
            Err(e) => Outcome::Failed(e),
        }
    }

    /// Creates `n` threads doing `body`. Runs to completion.
    pub fn spawn_threads(&mut self, pid: Pid, n: u32, body: ThreadBody) -> Outcome {
        let work = Work::Repeat {
            unit: Unit::NewThread(body),
            left: n.into(),
        };
        match self.queue(pid, work) {
            Ok(()) => self.finish(pid),
            Err(e) => Outcome::Failed(e),
        }
    }

    /// Threads of `pid` alive (besides the main one).
    ///
    /// # Errors
    /// [`MachineError::NoProcess`].
    pub fn threads(&self, pid: Pid) -> Result<u32, MachineError> {
        Ok(self.procs.get(pid)?.threads)
    }

    /// Runs `pid`'s pending work until it is done, the process sleeps
    /// (throttled) or stops.
    pub fn resume(&mut self, pid: Pid) -> Outcome {
        self.run_work(pid, false)
    }

    /// Runs `pid`'s pending work to its end, sleeping through throttling
    /// (virtual time passes).
    pub fn finish(&mut self, pid: Pid) -> Outcome {
        self.run_work(pid, true)
    }

    fn run_work(&mut self, pid: Pid, through_sleeps: bool) -> Outcome {
        loop {
            let Ok(p) = self.procs.get(pid) else {
                return Outcome::Killed;
            };
            let (wake, work) = (p.wake_ns, p.work);
            if wake > self.now_ns {
                if !through_sleeps {
                    return Outcome::Sleeping;
                }
                self.advance_to(wake);
            }
            let Some(work) = work else {
                return Outcome::Done;
            };
            let step = self.step(pid, work);
            // The step may have killed the process.
            let Ok(p) = self.procs.get_mut(pid) else {
                return Outcome::Killed;
            };
            match step {
                Ok(Step::Continue) => {}
                Ok(Step::Finished) => p.work = None,
                Ok(Step::Stop(o)) => {
                    p.work = None;
                    return o;
                }
                Err(e) => {
                    p.work = None;
                    return Outcome::Failed(e);
                }
            }
            let sleep = std::mem::take(&mut p.ctx.sleep_ns);
            if sleep > 0 {
                p.wake_ns = self.now_ns + sleep;
            }
        }
    }

    /// Pays the debt of a kernel entry of `pid` on the way back to user
    /// space.
    fn return_to_user(&mut self, pid: Pid, cpu: usize) -> Result<(), MachineError> {
        let m = self.memcg_of(pid)?;
        let mut ctx = self.procs.get(pid)?.ctx;
        let r = self.tree.return_to_user(cpu, m, &mut self.lru, &mut ctx);
        self.procs.get_mut(pid)?.ctx = ctx;
        Ok(r?)
    }

    /// One unit of `work`; the process's `work` field is updated.
    fn step(&mut self, pid: Pid, work: Work) -> Result<Step, MachineError> {
        let cpu = self.procs.get(pid)?.cpu;
        match work {
            Work::Anon {
                region,
                end,
                one_entry,
            } => {
                let next = self.procs.get(pid)?.regions[region].faulted;
                if next >= end {
                    if one_entry {
                        self.return_to_user(pid, cpu)?;
                    }
                    return Ok(Step::Finished);
                }
                if let Some(stop) = self.fault_anon(pid, cpu, region, next)? {
                    return Ok(Step::Stop(stop));
                }
                if !one_entry {
                    self.return_to_user(pid, cpu)?;
                }
                Ok(Step::Continue)
            }
            Work::Repeat { unit, left } => {
                if left == 0 {
                    return Ok(Step::Finished);
                }
                let stop = match unit {
                    Unit::ReadPage(file) => self.read_file_page(pid, cpu, file)?,
                    Unit::NewThread(body) => self.create_thread(pid, cpu, body)?,
                };
                if let Some(stop) = stop {
                    return Ok(Step::Stop(stop));
                }
                self.procs.get_mut(pid)?.work = Some(Work::Repeat {
                    unit,
                    left: left - 1,
                });
                self.return_to_user(pid, cpu)?;
                Ok(Step::Continue)
            }
            Work::Lookups { left } => {
                if left == 0 {
                    return Ok(Step::Finished);
                }
                let (done, stop) = self.lookups(pid, cpu, left)?;
                if let Some(stop) = stop {
                    return Ok(Step::Stop(stop));
                }
                self.procs.get_mut(pid)?.work = Some(Work::Lookups { left: left - done });
                Ok(Step::Continue)
            }
        }
    }

    /// Runs `op` (a charge for `pid`) until it succeeds, the OOM killer
    /// kills `pid`, or it fails for good. `Ok(None)`: done.
    fn with_oom_retry<T>(
        &mut self,
        pid: Pid,
        mut op: impl FnMut(&mut Machine, &mut ChargeContext) -> Result<T, MachineError>,
    ) -> Result<Result<T, Outcome>, MachineError> {
        loop {
            let mut ctx = self.procs.get(pid)?.ctx;
            let r = op(self, &mut ctx);
            if let Ok(p) = self.procs.get_mut(pid) {
                p.ctx = ctx;
            }
            match r {
                Ok(v) => return Ok(Ok(v)),
                Err(MachineError::Memcg(MemcgError::Oom { over, nr, .. }))
                    if nr <= OOM_MAX_PAGES =>
                {
                    let killed = self.out_of_memory(over)?;
                    if killed.contains(&pid) || !self.alive(pid) {
                        return Ok(Err(Outcome::Killed));
                    }
                    if killed.is_empty() {
                        return Ok(Err(Outcome::Failed(MachineError::Memcg(MemcgError::Oom {
                            memcg: over,
                            over,
                            nr,
                        }))));
                    }
                }
                Err(e) => return Ok(Err(Outcome::Failed(e))),
            }
        }
    }

    /// Faults page `index` of `region` (and its page-table page).
    fn fault_anon(
        &mut self,
        pid: Pid,
        cpu: usize,
        region: usize,
        index: u32,
    ) -> Result<Option<Outcome>, MachineError> {
        let chunk = (index / PTE_SPAN) as usize;
        if self.procs.get(pid)?.regions[region].pte[chunk].is_none() {
            let m = self.memcg_of(pid)?;
            let r = self.with_oom_retry(pid, |mm, ctx| {
                Ok(mm
                    .tree
                    .charge_in(cpu, m, 0, Charge::Pagetables, 1, &mut mm.lru, ctx)?)
            })?;
            if let Err(o) = r {
                return Ok(Some(o));
            }
            self.procs.get_mut(pid)?.regions[region].pte[chunk] = Some(m);
        }
        let slot = self.procs.get(pid)?.regions[region].first + index;
        let r = self.with_oom_retry(pid, |mm, ctx| {
            mm.lru
                .access_in(&mut mm.tree, cpu, slot, &mut mm.flush, ctx)
                .map_err(MachineError::from)
        })?;
        if let Err(o) = r {
            return Ok(Some(o));
        }
        self.procs.get_mut(pid)?.regions[region].faulted = index + 1;
        Ok(None)
    }

    fn read_file_page(
        &mut self,
        pid: Pid,
        cpu: usize,
        file: FileId,
    ) -> Result<Option<Outcome>, MachineError> {
        let Some(slot) = self.file_read_slot(file)? else {
            return Ok(None);
        };
        let r = self.with_oom_retry(pid, |mm, ctx| {
            mm.lru
                .access_in(&mut mm.tree, cpu, slot, &mut mm.flush, ctx)
                .map_err(MachineError::from)
        })?;
        Ok(r.err())
    }

    fn lookup_one(&mut self, pid: Pid, cpu: usize) -> Result<Option<Outcome>, MachineError> {
        let m = self.memcg_of(pid)?;
        let cache = self.dentry;
        let r = self.with_oom_retry(pid, |mm, ctx| {
            Ok(mm.tree.alloc_object(cpu, m, 0, cache, &mut mm.lru, ctx)?)
        })?;
        Ok(r.err())
    }

    /// Up to `n` lookups, each a kernel entry, on `cpu`; stops after an
    /// entry that left the process a sleep to take. Returns the lookups
    /// done and why it stopped early, if it did.
    fn lookups(
        &mut self,
        pid: Pid,
        cpu: usize,
        n: u64,
    ) -> Result<(u64, Option<Outcome>), MachineError> {
        for i in 0..n {
            if let Some(stop) = self.lookup_one(pid, cpu)? {
                return Ok((i, Some(stop)));
            }
            if self.procs.get(pid)?.ctx.pages_over_high > 0 {
                self.return_to_user(pid, cpu)?;
                if self.procs.get(pid)?.ctx.sleep_ns > 0 {
                    return Ok((i + 1, None));
                }
            }
        }
        Ok((n, None))
    }

    /// Creates one thread: kernel stack and `task_struct` on the parent's
    /// CPU, the first page of its user stack on its own; then its body.
    fn create_thread(
        &mut self,
        pid: Pid,
        cpu: usize,
        body: ThreadBody,
    ) -> Result<Option<Outcome>, MachineError> {
        let m = self.memcg_of(pid)?;
        let n = self.procs.get(pid)?.threads;
        let tcpu = (cpu + 1 + n as usize) % self.cpus();
        let bytes = TASK_STRUCT_BYTES + OBJCG_POINTER_BYTES;
        let r = self.with_oom_retry(pid, |mm, ctx| {
            mm.tree.charge_in(
                cpu,
                m,
                0,
                Charge::KernelStack,
                KERNEL_STACK_PAGES,
                &mut mm.lru,
                ctx,
            )?;
            if let Err(e) = mm.tree.charge_obj(
                cpu,
                m,
                0,
                ObjKind::SlabUnreclaimable,
                bytes,
                &mut mm.lru,
                ctx,
            ) {
                mm.tree
                    .uncharge_kind(cpu, m, 0, Charge::KernelStack, KERNEL_STACK_PAGES)?;
                return Err(e.into());
            }
            Ok(())
        })?;
        if let Err(o) = r {
            return Ok(Some(o));
        }
        // The user stack: of its 8 MiB mapping only the top page is
        // touched (and the page-table page that maps it); the model maps
        // just that page.
        let region = self.add_region(pid, 1)?;
        if let Some(o) = self.fault_anon(pid, tcpu, region, 0)? {
            return Ok(Some(o));
        }
        match body {
            ThreadBody::Sleep => {
                let p = self.procs.get_mut(pid)?;
                p.threads += 1;
                p.kmem.push((m, Charge::KernelStack, KERNEL_STACK_PAGES));
                p.objs.push((m, ObjKind::SlabUnreclaimable, bytes));
            }
            ThreadBody::Lookups(k) => {
                let mut left = k;
                while left > 0 {
                    let (done, stop) = self.lookups(pid, tcpu, left)?;
                    if let Some(o) = stop {
                        return Ok(Some(o));
                    }
                    left -= done;
                }
                // The thread exits: its stacks and task_struct go.
                let r = self.procs.get_mut(pid)?.regions.remove(region);
                self.free_region(tcpu, &r)?;
                self.tree
                    .uncharge_kind(tcpu, m, 0, Charge::KernelStack, KERNEL_STACK_PAGES)?;
                self.tree
                    .uncharge_obj(tcpu, m, 0, ObjKind::SlabUnreclaimable, bytes)?;
            }
        }
        Ok(None)
    }

    /// Ends process `pid` (exit or kill): frees its anonymous memory, page
    /// tables, kernel stacks and `task_struct`s, closes its files and
    /// sockets, leaves its cgroup.
    ///
    /// # Errors
    /// [`MachineError::NoProcess`]; accounting errors.
    pub fn exit(&mut self, pid: Pid) -> Result<(), MachineError> {
        let p = self.procs.get_mut(pid)?;
        p.alive = false;
        p.work = None;
        let cpu = p.cpu;
        let cg = p.cgroup;
        let regions = std::mem::take(&mut p.regions);
        let kmem = std::mem::take(&mut p.kmem);
        let objs = std::mem::take(&mut p.objs);
        p.threads = 0;
        for r in regions {
            self.free_region(cpu, &r)?;
        }
        for (m, kind, pages) in kmem {
            self.tree.uncharge_kind(cpu, m, 0, kind, pages)?;
        }
        for (m, kind, bytes) in objs {
            self.tree.uncharge_obj(cpu, m, 0, kind, bytes)?;
        }
        self.close_files_of(pid, cpu)?;
        self.close_sockets_of(pid, cpu)?;
        self.cgroups.get_mut(cg)?.procs.remove(&pid);
        Ok(())
    }

    /// Resident and swapped-out anonymous pages and page-table pages of
    /// `pid` (the OOM killer's badness).
    pub(crate) fn footprint(&self, pid: Pid) -> Result<u64, MachineError> {
        let p = self.procs.get(pid)?;
        let mut pages = 0;
        for r in &p.regions {
            pages += r.pte.iter().flatten().count() as u64;
            for s in r.first..r.first + r.faulted {
                if !matches!(self.lru.state(s)?, crate::workingset::SlotState::Empty) {
                    pages += 1;
                }
            }
        }
        Ok(pages)
    }
}
