//! Workload plans: processes with VMAs (in creation order, which fixes the
//! top-down `mmap` layout) and threads running small programs of [`Op`]s.
//! The simulator only ever executes plans, so every workload goes through
//! the same code path.

/// Bytes in a base page.
pub const PAGE: u64 = 4096;
/// Bytes in a PMD-mapped THP (and in one page-table page's reach).
pub const HPAGE: u64 = 2 << 20;
/// Base pages per PMD.
pub const HPAGE_PAGES: u64 = HPAGE / PAGE;

/// Maximum number of NUMA nodes the model supports.
pub const MAX_NODES: usize = 8;

/// How a VMA behaves for the scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmaKind {
    /// Private anonymous memory: the scanner's target.
    Anon,
    /// Shared anonymous memory (`VM_SHARED`): scanned, faults marked shared.
    SharedAnon,
    /// Private writable file mapping (a binary's data): scanned.
    FileWritable,
    /// Read-only file mapping (text, shared libraries): `shared_ro` skip.
    FileReadOnly,
    /// PROT_NONE (a stack guard): `inaccessible` skip.
    Inaccessible,
    /// VM_PFNMAP/VM_IO/hugetlb/mixedmap (vvar, vdso): `unsuitable` skip.
    Unsuitable,
}

/// One VMA of a plan.
#[derive(Debug, Clone)]
pub struct VmaPlan {
    /// Label for reports (`buffer`, `stack:4003`, `vma_y`, ...).
    pub name: String,
    /// Behaviour class.
    pub kind: VmaKind,
    /// Size in bytes (page multiple; ≥ 2 MiB VMAs are 2 MiB aligned).
    pub bytes: u64,
    /// `None`: dense, every page can be touched. `Some(n)`: only the top
    /// `n` pages are ever touched (stacks, small data).
    pub touched_pages: Option<u64>,
    /// Fraction of 2 MiB blocks backed by THP (dense VMAs only).
    pub thp_fraction: f64,
    /// Exists from the start (`true`) or created by an [`Op::Mmap`] or
    /// [`Op::SpawnAndJoin`].
    pub at_start: bool,
    /// Placed in the `mmap` area top-down (`true`) or in the low area of
    /// the binary and heap (`false`).
    pub mmap_area: bool,
}

/// One step of a thread program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Write `[from, from + len)` of VMA `vma` sequentially, `passes` times,
    /// sleeping `sleep_ns` after each pass.
    Sweep {
        /// VMA index in the process plan.
        vma: usize,
        /// Offset of the first byte.
        from: u64,
        /// Length in bytes.
        len: u64,
        /// Number of passes.
        passes: u32,
        /// Sleep after each pass, ns.
        sleep_ns: u64,
        /// Part of a convoy: every thread of the process sweeps the same
        /// not-yet-populated pages at once, so each first touch is a fault
        /// taken by every thread in the convoy, serialized on the page-table
        /// lock (see [`CostModel::convoy_fault_ns`](crate::CostModel::convoy_fault_ns)).
        convoy: bool,
    },
    /// Compute on CPU for `ns` without touching memory: runtime and
    /// scheduler ticks accrue (so the thread can run `task_numa_work()`),
    /// but no page is faulted or written.
    Spin {
        /// Duration, ns.
        ns: u64,
    },
    /// Compute on CPU, one scheduler tick at a time, until the process's
    /// `mm->numa_scan_seq` has reached `seq` (the scanner runs on this
    /// thread's CPU time meanwhile). See `premap_passes`.
    SpinUntilScanSeq {
        /// Target `numa_scan_seq`.
        seq: i64,
    },
    /// `set_mempolicy()` of the calling thread: `Some(node)` is `MPOL_BIND`
    /// to that one node (without `MPOL_F_NUMA_BALANCING`, so without
    /// `MPOL_F_MOF`), `None` is `MPOL_DEFAULT`. While bound, the thread's
    /// first touches allocate on the bound node, its hint faults migrate
    /// nothing (`mpol_misplaced()`), and every `task_numa_work()` call it
    /// makes skips every VMA (`vma_policy_mof()`).
    SetMempolicy {
        /// The bound node, or `None` for the default policy.
        bind: Option<u8>,
    },
    /// Sleep (off CPU; no runtime, no ticks).
    Sleep {
        /// Duration, ns.
        ns: u64,
    },
    /// Sleep until virtual time `ns`.
    SleepUntil {
        /// Absolute virtual time, ns.
        ns: u64,
    },
    /// Create VMA `vma` (`mmap`).
    Mmap {
        /// VMA index in the process plan.
        vma: usize,
    },
    /// Create threads `first..first+count` of this process (their stacks
    /// are created with them), then wait for them (`pthread_join`), off
    /// CPU, for the rest of the run.
    SpawnAndJoin {
        /// First thread index in the process plan.
        first: usize,
        /// How many.
        count: usize,
    },
}

/// One thread of a plan.
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    /// Its program.
    pub ops: Vec<Op>,
    /// Its stack VMA (index in the process plan), touched on every step.
    pub stack: Option<usize>,
    /// Running at time 0 (the main thread) or created by a spawn.
    pub at_start: bool,
}

/// One process of a plan. Thread 0 is the main thread (TID = PID).
#[derive(Debug, Clone)]
pub struct ProcessPlan {
    /// VMAs in creation order.
    pub vmas: Vec<VmaPlan>,
    /// Threads; TIDs are `pid + index`.
    pub threads: Vec<ThreadPlan>,
    /// PID of the main thread.
    pub pid: u32,
}

/// A full plan: what the simulator executes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Processes.
    pub processes: Vec<ProcessPlan>,
}

/// First PID handed out; TIDs are consecutive from here.
pub const FIRST_PID: u32 = 4000;
