//! Restartable sequences: the per-CPU mode's critical sections, and the
//! detection that decides at construction whether a tree can use them.
//!
//! # What a section does
//!
//! In the per-CPU mode ([`Config::per_cpu`](crate::Config::per_cpu)) a
//! group has one row per CPU that wrote it, and any thread running on CPU
//! `c` writes row `c` with plain loads and stores. What makes that safe is
//! Linux's restartable sequences (`rseq(2)`, registered for every thread by
//! glibc 2.35 and later): a *critical section* is a range of instructions,
//! described to the kernel by a descriptor (start, length, abort address)
//! that the thread stores in its `struct rseq` (`rseq_cs`) before entering
//! it. If the thread is preempted, migrated or signalled while its
//! instruction pointer is inside the range, the kernel does not resume it
//! there: it jumps to the abort address, which here counts the abort and
//! starts over. A section's only effect that counts is its last
//! instruction, a single store (the *commit*): it either executes on the CPU
//! whose number the section read at its start, with no other thread having
//! run on that CPU since, or the section is restarted.
//!
//! [`Rseq::add`], the update's section, in order:
//!
//! 1. arm: store the descriptor's address into `rseq_cs`;
//! 2. read the current CPU `c` (`cpu_id`); `c` beyond the table: leave
//!    (the caller takes the shared path);
//! 3. load the group's row on `c` from its row table; none: leave (the
//!    caller allocates it and comes back);
//! 4. load the row's residue and subtract the update's magnitude (it may
//!    go negative: the caller folds it, see `update.rs`); load the cell and
//!    add the delta, leaving on signed overflow (the caller saturates);
//! 5. store the residue (not the commit: a section restarted after it
//!    subtracts again, which only over-counts a magnitude, never loses
//!    one), then store the cell: the commit.
//!
//! [`Rseq::credit`] is the fold's section: on a given CPU (it leaves if
//! the thread runs elsewhere), add pages back to a residue, at most up to
//! empty; its commit is the residue's store.
//!
//! Every section is this module's assembly (x86-64 and aarch64; on other
//! targets the per-CPU mode is not offered). The descriptors live in the
//! `__rseq_cs` section (writable: they hold absolute addresses, relocated
//! at load), 32-byte aligned as the ABI asks; each abort handler, with the
//! sections' other exits, is out of the hot code in `__rseq_failure`,
//! preceded by the 4-byte signature glibc registered (`RSEQ_SIG`).
//!
//! # Detection
//!
//! [`Rseq::detect`] offers the mode only if glibc registered the thread's
//! area (`__rseq_size` > 0, found with `dlsym` so that the library still
//! loads where glibc lacks the symbol), the kernel offers
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` and the process registers for it
//! (the flushers' barrier, see `update/writers.rs`), and the process is not
//! under ThreadSanitizer (whose runtime, found by its `__tsan_init`, cannot
//! see the sections' stores). Under Miri the mode is never offered; under
//! loom it is *modelled* (see [`model`]): loom runs no assembly, so the
//! sections are loom operations with the kernel's abort rule played by a
//! per-CPU generation word.
//!
//! # Restarts
//!
//! Each thread counts the sections it restarted (an abort: preemption,
//! migration, a signal, a flusher's membarrier) in a thread-local counter,
//! read by [`thread_restarts`](crate::thread_restarts): a diagnostic, bumped
//! off the hot path (the sections count their aborts in a register).

#[cfg(not(loom))]
use crate::mode::Fallback;
use crate::rows::OwnerRow;
#[cfg(loom)]
pub(crate) use model::Rseq;
#[cfg(not(loom))]
pub(crate) use real::Rseq;

std::thread_local! {
    /// Sections this thread restarted.
    static RESTARTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Adds `n` restarts to the thread's count (cold: only when a section
/// aborted).
#[cold]
#[inline(never)]
fn count_restarts(n: u64) {
    let _ = RESTARTS.try_with(|c| c.set(c.get() + n));
}

/// The calling thread's restarted sections so far (see the module docs).
pub(crate) fn restarts() -> u64 {
    RESTARTS.try_with(std::cell::Cell::get).unwrap_or(0)
}

/// How an update's section ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Committed on `cpu`, into `row`, leaving the residue at `left`.
    Committed,
    /// The CPU is beyond the row table: nothing written.
    Far,
    /// The group has no row on `cpu` yet: nothing written.
    NoRow,
    /// The cell's sum would leave `i64`: nothing written.
    Overflow,
}

/// What an update's section did (see [`Rseq::add`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome<'a> {
    pub(crate) status: Status,
    /// The CPU the section ran on.
    pub(crate) cpu: usize,
    /// The group's row on `cpu` (`None` for [`Status::Far`] and
    /// [`Status::NoRow`]).
    pub(crate) row: Option<OwnerRow<'a>>,
    /// The residue the section stored (as `i64`: negative once the
    /// residue reached `batch`, see `header.rs`).
    pub(crate) left: u64,
}

impl Status {
    #[cfg(not(loom))]
    fn of(code: u64) -> Status {
        match code {
            0 => Status::Committed,
            1 => Status::Far,
            2 => Status::NoRow,
            _ => Status::Overflow,
        }
    }
}

/// Why a tree asked for the per-CPU mode does not get it here, if it does
/// not (the platform's part; the kernel's membarrier is checked by the
/// caller, `Writers::new`).
#[cfg(not(loom))]
#[cfg(any(
    miri,
    not(all(
        target_os = "linux",
        target_env = "gnu",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))
))]
fn platform() -> Result<isize, Fallback> {
    if cfg!(miri) {
        Err(Fallback::Checker)
    } else {
        Err(Fallback::Platform)
    }
}

#[cfg(not(loom))]
#[cfg(all(
    not(miri),
    target_os = "linux",
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[allow(clippy::unnecessary_wraps)] // the other platforms' version fails
fn platform() -> Result<isize, Fallback> {
    use std::ffi::{c_char, c_void, CStr};
    extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    let find = |name: &CStr| {
        // SAFETY: `dlsym` with `RTLD_DEFAULT` (a null handle in glibc) and
        // a NUL-terminated name only looks the symbol up.
        unsafe { dlsym(std::ptr::null_mut(), name.as_ptr()) }
    };
    // `scripts/sanitizers.sh` builds ThreadSanitizer runs with
    // `--cfg hierstat_tsan`: `dlsym` does not find `__tsan_init` where the
    // runtime is linked statically without exporting it (a fresh CI
    // clone's build got the per-CPU mode under TSan, which then reported
    // the sections' stores as races).
    if cfg!(hierstat_tsan) || !find(c"__tsan_init").is_null() {
        return Err(Fallback::Checker);
    }
    let size = find(c"__rseq_size");
    let offset = find(c"__rseq_offset");
    if size.is_null() || offset.is_null() {
        return Err(Fallback::NotRegistered);
    }
    // SAFETY: glibc defines `__rseq_size` as a `const unsigned int` and
    // `__rseq_offset` as a `const ptrdiff_t`, set before any user code runs
    // and never changed; `dlsym` returned their addresses.
    let (size, offset) = unsafe { (*size.cast::<u32>(), *offset.cast::<isize>()) };
    // A registered area holds at least the fields the sections use
    // (`cpu_id` at 4, `rseq_cs` at 8): 20 bytes in the original ABI. glibc
    // reports 0 when it did not register (the `glibc.pthread.rseq=0`
    // tunable, or a kernel without rseq).
    if size < 20 {
        return Err(Fallback::NotRegistered);
    }
    Ok(offset)
}

/// The number of CPUs the kernel may ever report (`cpu_id` is below it),
/// the per-CPU mode's shard count; `None` where unknown.
#[cfg(not(loom))]
pub(crate) fn possible_cpus() -> Option<usize> {
    #[cfg(all(not(miri), target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn get_nprocs_conf() -> std::ffi::c_int;
        }
        // SAFETY: a glibc function without arguments or preconditions.
        let n = unsafe { get_nprocs_conf() };
        if n > 0 {
            return Some(n as usize);
        }
    }
    None
}

#[cfg(not(loom))]
mod real {
    use super::{count_restarts, Outcome, Status};
    use crate::mode::Fallback;
    use crate::rows::owner_row_at;
    use crate::sync::AtomicU64;
    use crate::table::{CpuTable, Entry};

    /// The section's descriptor, for `concat!` into `asm!` (label 24, in
    /// `__rseq_cs`: the section from 22 to 23, the abort handler at 25).
    macro_rules! descriptor {
        () => {
            concat!(
                ".pushsection __rseq_cs, \"aw\"\n",
                ".balign 32\n",
                "24:\n",
                ".long 0, 0\n",
                ".quad 22f, 23f - 22f, 25f\n",
                ".popsection\n",
            )
        };
    }

    /// The start of a section's asm: its `descriptor!`, `{aborts}`
    /// zeroed, then (label 27, where an abort restarts) the descriptor's
    /// address stored in the thread's `rseq_cs`; the section's first
    /// instruction follows (22). Uses `{tmp}` and `{base}` (`Rseq::base`).
    #[cfg(target_arch = "x86_64")]
    macro_rules! arm {
        () => {
            concat!(
                descriptor!(),
                "xor {aborts:e}, {aborts:e}\n",
                "27:\n",
                "lea {tmp}, [rip + 24b]\n",
                "mov qword ptr fs:[{base} + 8], {tmp}\n",
                "22:\n",
            )
        };
    }

    /// aarch64's `arm!`.
    #[cfg(target_arch = "aarch64")]
    macro_rules! arm {
        () => {
            concat!(
                descriptor!(),
                "mov {aborts}, xzr\n",
                "27:\n",
                "adrp {tmp}, 24b\n",
                "add {tmp}, {tmp}, :lo12:24b\n",
                "str {tmp}, [{base}, #8]\n",
                "22:\n",
            )
        };
    }

    /// The end of a section's asm after its commit (23): `{tmp}` = 0 (the
    /// status code), the exit (26); then, in `__rseq_failure`, glibc's
    /// signature, the abort handler (25: `{aborts}` += 1, arm again at 27)
    /// and status 1 at label 28 (the caller's other statuses and the
    /// `.popsection` follow).
    #[cfg(target_arch = "x86_64")]
    macro_rules! commit_and_abort {
        () => {
            concat!(
                "23:\n",
                "xor {tmp:e}, {tmp:e}\n",
                "26:\n",
                ".pushsection __rseq_failure, \"ax\"\n",
                ".long 0x53053053\n",
                "25:\n",
                "inc {aborts}\n",
                "jmp 27b\n",
                "28:\n",
                "mov {tmp:e}, 1\n",
                "jmp 26b\n",
            )
        };
    }

    /// aarch64's `commit_and_abort!`.
    #[cfg(target_arch = "aarch64")]
    macro_rules! commit_and_abort {
        () => {
            concat!(
                "23:\n",
                "mov {tmp}, #0\n",
                "26:\n",
                ".pushsection __rseq_failure, \"ax\"\n",
                ".inst 0xd428bc00\n",
                "25:\n",
                "add {aborts}, {aborts}, #1\n",
                "b 27b\n",
                "28:\n",
                "mov {tmp}, #1\n",
                "b 26b\n",
            )
        };
    }

    /// The update's section body (22 to the commit, see `Rseq::add_asm`):
    /// the CPU (status 1 at 28 past the table), its row (status 2 at 29
    /// if none), the residue's countdown, the cell's add (status 3 at 32
    /// if it overflows), then the residue's store and the cell's, the
    /// commit.
    #[cfg(target_arch = "x86_64")]
    macro_rules! add_body {
        () => {
            concat!(
                "mov {cpu:e}, dword ptr fs:[{base} + 4]\n",
                "cmp {cpu}, {len}\n",
                "jae 28f\n",
                "mov {row}, qword ptr [{near} + {cpu} * 8]\n",
                "test {row}, {row}\n",
                "jz 29f\n",
                "mov {left}, qword ptr [{row} + 8]\n",
                "sub {left}, {mag}\n",
                "mov {tmp}, qword ptr [{row} + {cell}]\n",
                "add {tmp}, {delta}\n",
                "jo 32f\n",
                "mov qword ptr [{row} + 8], {left}\n",
                "mov qword ptr [{row} + {cell}], {tmp}\n",
            )
        };
    }

    /// aarch64's `add_body!`.
    #[cfg(target_arch = "aarch64")]
    macro_rules! add_body {
        () => {
            concat!(
                "ldr {cpu:w}, [{base}, #4]\n",
                "cmp {cpu}, {len}\n",
                "b.hs 28f\n",
                "ldr {row}, [{near}, {cpu}, lsl #3]\n",
                "cbz {row}, 29f\n",
                "ldr {left}, [{row}, #8]\n",
                "sub {left}, {left}, {mag}\n",
                "ldr {tmp}, [{row}, {cell}]\n",
                "adds {tmp}, {tmp}, {delta}\n",
                "b.vs 32f\n",
                "str {left}, [{row}, #8]\n",
                "str {tmp}, [{row}, {cell}]\n",
            )
        };
    }

    /// The update's statuses 2 (no row) and 3 (overflow), in `__rseq_failure`.
    #[cfg(target_arch = "x86_64")]
    macro_rules! add_statuses {
        () => {
            concat!(
                "29:\n",
                "mov {tmp:e}, 2\n",
                "jmp 26b\n",
                "32:\n",
                "mov {tmp:e}, 3\n",
                "jmp 26b\n",
            )
        };
    }

    /// aarch64's `add_statuses!`.
    #[cfg(target_arch = "aarch64")]
    macro_rules! add_statuses {
        () => {
            concat!(
                "29:\n",
                "mov {tmp}, #2\n",
                "b 26b\n",
                "32:\n",
                "mov {tmp}, #3\n",
                "b 26b\n",
            )
        };
    }

    /// The fold's section body (see `Rseq::credit`): on CPU `{cpu}` only
    /// (status 1 at 28 otherwise), `{res}` += `{pages}`, at most up to
    /// `{empty}`; the store commits.
    #[cfg(target_arch = "x86_64")]
    macro_rules! credit_body {
        () => {
            concat!(
                "mov {tmp:e}, dword ptr fs:[{base} + 4]\n",
                "cmp {tmp}, {cpu}\n",
                "jne 28f\n",
                "mov {tmp}, qword ptr [{res}]\n",
                "add {tmp}, {pages}\n",
                "cmp {tmp}, {empty}\n",
                "cmovg {tmp}, {empty}\n",
                "mov qword ptr [{res}], {tmp}\n",
            )
        };
    }

    /// aarch64's `credit_body!`.
    #[cfg(target_arch = "aarch64")]
    macro_rules! credit_body {
        () => {
            concat!(
                "ldr {tmp:w}, [{base}, #4]\n",
                "cmp {tmp}, {cpu}\n",
                "b.ne 28f\n",
                "ldr {tmp}, [{res}]\n",
                "add {tmp}, {tmp}, {pages}\n",
                "cmp {tmp}, {empty}\n",
                "csel {tmp}, {empty}, {tmp}, gt\n",
                "str {tmp}, [{res}]\n",
            )
        };
    }

    /// The per-CPU mode's sections for this process (see the module docs):
    /// where the thread's `struct rseq` is, relative to its thread
    /// pointer.
    #[derive(Debug)]
    pub(crate) struct Rseq {
        /// glibc's `__rseq_offset`.
        #[cfg_attr(
            not(any(target_arch = "x86_64", target_arch = "aarch64")),
            allow(dead_code)
        )]
        offset: isize,
    }

    impl Rseq {
        /// The sections, if this process can run them (see the module
        /// docs); `cpus`: whether the platform said how many CPUs it has.
        pub(crate) fn detect() -> Result<Rseq, Fallback> {
            let offset = super::platform()?;
            Ok(Rseq { offset })
        }

        /// The update's section (see the module docs) on the current CPU's
        /// row of `table`: adds `delta` to the cell at byte offset `cell`
        /// (a checked slot's, see `rows::cell_offset`) and subtracts `mag`
        /// from the row's residue. `_model_cpu` is loom's (real threads run
        /// where the kernel puts them).
        #[inline(always)]
        pub(crate) fn add<'a>(
            &self,
            _model_cpu: usize,
            table: CpuTable<'a>,
            cell: usize,
            delta: i64,
            mag: u64,
        ) -> Outcome<'a> {
            let (code, cpu, row, left, aborts) =
                self.add_asm(table.entries.as_ptr(), table.len, cell, delta, mag);
            if aborts != 0 {
                count_restarts(aborts);
            }
            Outcome {
                status: Status::of(code),
                cpu,
                // SAFETY: a non-null `row` was loaded from an entry of
                // `table`, whose store lives for `'a` (see `CpuTable`).
                row: std::ptr::NonNull::new(row as *mut AtomicU64)
                    .map(|p| unsafe { owner_row_at(p) }),
                left,
            }
        }

        /// The update's section (see the module docs): `near` is the
        /// group's row table (`len` entries, one per CPU), `cell` the byte
        /// offset of the cell in a row. Returns (status code, cpu, row,
        /// residue left, aborts).
        #[inline(always)]
        fn add_asm(
            &self,
            near: *const Entry,
            len: usize,
            cell: usize,
            delta: i64,
            mag: u64,
        ) -> (u64, usize, usize, u64, u64) {
            let (code, cpu, row, left, aborts): (u64, usize, usize, u64, u64);
            // SAFETY: the section reads the thread's `struct rseq` (at
            // `fs:[offset]` on x86-64, at the thread pointer plus the offset
            // on aarch64: `base`; glibc registered it: `detect`; the
            // descriptor's address goes to `rseq_cs`), the table's
            // first `len` entries (`near` points at them, alive while the
            // caller's group handle is) and, when an entry is not null, the
            // row it holds: a row of the tree's store, alive as long as the
            // table, whose words 1 (residue) and `cell / 8` (a cell: the
            // caller passes a checked slot's) it reads and writes. Only
            // threads running on the row's CPU write those words (each in a
            // section like this one, which the kernel restarts rather than
            // resume after another ran there); flushers only read them
            // (with atomic loads). The descriptor is in `__rseq_cs`, its
            // abort handler preceded by glibc's signature (x86-64:
            // 0x53053053; aarch64: 0xd428bc00, a `brk`). The asm clobbers
            // memory and flags (the defaults) and keeps to its registers.
            unsafe {
                std::arch::asm!(
                    arm!(),
                    add_body!(),
                    commit_and_abort!(),
                    add_statuses!(),
                    ".popsection",
                    base = in(reg) self.base(),
                    near = in(reg) near,
                    len = in(reg) len,
                    cell = in(reg) cell,
                    delta = in(reg) delta,
                    mag = in(reg) mag,
                    tmp = out(reg) code,
                    cpu = out(reg) cpu,
                    row = out(reg) row,
                    left = out(reg) left,
                    aborts = out(reg) aborts,
                    options(nostack),
                );
            }
            (code, cpu, row, left, aborts)
        }

        /// What the sections address the thread's `struct rseq` with:
        /// x86-64, glibc's offset from the `fs` base; aarch64, its address
        /// (the thread pointer plus the offset).
        #[inline(always)]
        fn base(&self) -> usize {
            #[cfg(target_arch = "x86_64")]
            {
                self.offset as usize
            }
            #[cfg(target_arch = "aarch64")]
            {
                let tp: usize;
                // SAFETY: reads the thread pointer register; no memory
                // access.
                unsafe {
                    std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags));
                }
                tp.wrapping_add_signed(self.offset)
            }
        }

        /// The fold's section (see the module docs): on CPU `cpu` only,
        /// adds `pages` back to the residue word `res` (as `i64`), at most
        /// up to `empty`. Returns whether it committed (false: the thread
        /// no longer runs on `cpu`, nothing written).
        ///
        /// `res` must be the residue word of a live row on `cpu`.
        #[inline(never)]
        pub(crate) fn credit(
            &self,
            _model_cpu: usize,
            cpu: usize,
            res: &AtomicU64,
            pages: u64,
            empty: u64,
        ) -> bool {
            let (code, aborts): (u64, u64);
            // SAFETY: as for `add_asm`: the thread's `struct rseq` (at
            // `base`), and `res`, a residue word that only threads on
            // `cpu` write, in sections; written here only if the thread
            // runs on `cpu`, by the commit.
            unsafe {
                std::arch::asm!(
                    arm!(),
                    credit_body!(),
                    commit_and_abort!(),
                    ".popsection",
                    base = in(reg) self.base(),
                    cpu = in(reg) cpu,
                    res = in(reg) res.as_ptr(),
                    pages = in(reg) pages,
                    empty = in(reg) empty,
                    tmp = out(reg) code,
                    aborts = out(reg) aborts,
                    options(nostack),
                );
            }
            if aborts != 0 {
                count_restarts(aborts);
            }
            code == 0
        }

        /// The flushers' barrier (see `update/writers.rs`): on return,
        /// every other running thread of the process has executed a full
        /// memory barrier and any critical section it was in has been
        /// restarted.
        ///
        /// # Panics
        /// If the kernel refuses the membarrier the process registered
        /// for (it documents that it does not): carrying on would risk lost
        /// updates.
        pub(crate) fn membarrier(&self) {
            #[cfg(target_os = "linux")]
            {
                use rustix::thread::{membarrier, MembarrierCommand as Cmd};
                let mut tries = 0;
                while let Err(e) = membarrier(Cmd::PrivateExpeditedRseq) {
                    tries += 1;
                    assert!(
                        e == rustix::io::Errno::INTR && tries < 100,
                        "membarrier(PRIVATE_EXPEDITED_RSEQ) failed after registration: {e}"
                    );
                }
            }
        }
    }
}

/// The per-CPU mode under loom: no assembly, the kernel's rule modelled.
///
/// A CPU is a lock and a generation word. A section arms by reading its
/// CPU's generation; its loads are plain loom loads, in the engine's
/// order; each of its stores happens under the CPU's lock, and only if the
/// generation is still the one it armed with, else the section restarts
/// (an abort, counted). The commit, the last store, also advances the
/// generation, so any other section armed on that CPU before it restarts:
/// the kernel's "preempted or migrated inside the section" (a thread that
/// ran between another's start and its commit). The flushers' membarrier
/// takes each CPU's lock and advances its generation: the kernel's IPI,
/// which stops the CPU between two instructions, runs a full barrier there
/// and restarts the section in progress, if any. A store before the commit
/// (the residue) may thus be followed by an abort, as on the hardware.
#[cfg(loom)]
pub(crate) mod model {
    use super::{count_restarts, Outcome, Status};
    use crate::mode::Fallback;
    use crate::rows::{owner_row_at, RESIDUE_OFFSET};
    use crate::sync::{lock, AtomicU64, Mutex, Ordering};
    use crate::table::{load_entry, CpuTable};

    /// One modelled CPU.
    #[derive(Debug)]
    struct Cpu {
        /// Held for each store of a section and for the barrier's visit.
        lock: Mutex<()>,
        /// Advanced by every commit and every barrier. ORDERING: a commit
        /// stores it Release and a section arms by loading it Acquire, so a
        /// section that arms after a commit (a later thread on the CPU, or
        /// the restart of one it aborted) reads what that commit and every
        /// earlier one wrote, as a CPU runs its threads one after another;
        /// an arming load that reads an older value is caught at the
        /// section's next store (under the lock, where every access is
        /// Relaxed) and restarts it.
        gen: AtomicU64,
    }

    /// The modelled sections of a tree of `cpus` CPUs.
    #[derive(Debug)]
    pub(crate) struct Rseq {
        cpus: Box<[Cpu]>,
    }

    impl Rseq {
        /// Always available (on `cpus` modelled CPUs).
        #[allow(clippy::unnecessary_wraps)]
        pub(crate) fn detect_on(cpus: usize) -> Result<Rseq, Fallback> {
            Ok(Rseq {
                cpus: (0..cpus)
                    .map(|_| Cpu {
                        lock: Mutex::new(()),
                        gen: AtomicU64::new(0),
                    })
                    .collect(),
            })
        }

        /// Runs `store` as a section's store on `cpu` if no commit or
        /// barrier happened there since the section armed at `gen`;
        /// `commit`: the section's last store, which advances the
        /// generation.
        fn store_if(&self, cpu: usize, gen: u64, commit: bool, store: impl FnOnce()) -> bool {
            let c = &self.cpus[cpu];
            let _held = lock(&c.lock);
            // ORDERING: Relaxed; under the CPU's lock (see `Cpu::gen`).
            if c.gen.load(Ordering::Relaxed) != gen {
                return false;
            }
            store();
            if commit {
                // ORDERING: Release (see `Cpu::gen`).
                c.gen.store(gen + 1, Ordering::Release);
            }
            true
        }

        /// The update's section on modelled CPU `cpu` (see the module
        /// docs and [`Rseq::add`](super::real) for the real one): the same
        /// steps, as loom operations.
        pub(crate) fn add<'a>(
            &self,
            cpu: usize,
            table: CpuTable<'a>,
            cell: usize,
            delta: i64,
            mag: u64,
        ) -> Outcome<'a> {
            let mut aborts = 0;
            let out = loop {
                // ORDERING: Acquire; the arming read (see `Cpu::gen`).
                let gen = self.cpus[cpu].gen.load(Ordering::Acquire);
                if cpu >= table.len {
                    break Outcome {
                        status: Status::Far,
                        cpu,
                        row: None,
                        left: 0,
                    };
                }
                // SAFETY: `table` has `len` entries, alive for `'a`, and
                // `cpu < len`.
                let entry = unsafe { table.entries.add(cpu).as_ref() };
                // SAFETY: an entry of a live table.
                let Some(addr) = (unsafe { load_entry(entry) }) else {
                    break Outcome {
                        status: Status::NoRow,
                        cpu,
                        row: None,
                        left: 0,
                    };
                };
                let p = std::ptr::NonNull::new(addr.as_ptr()).expect("a row address");
                // SAFETY: loaded from an entry of `table` (see `CpuTable`).
                let row = unsafe { owner_row_at(p) };
                // SAFETY: `p` is a live row (see `rows.rs`), whose word
                // `RESIDUE_OFFSET / 8` is its residue and word `cell / 8`
                // the caller's cell.
                let (res, c) =
                    unsafe { (p.add(RESIDUE_OFFSET / 8).as_ref(), p.add(cell / 8).as_ref()) };
                let row = Some(row);
                // ORDERING: Relaxed loads and stores, as the real section's
                // plain ones: the CPU's lock orders the sections of one CPU,
                // the flushers' barrier (see `membarrier`) the rest.
                let left = res.load(Ordering::Relaxed).wrapping_sub(mag);
                let Some(v) = (c.load(Ordering::Relaxed) as i64).checked_add(delta) else {
                    break Outcome {
                        status: Status::Overflow,
                        cpu,
                        row,
                        left: 0,
                    };
                };
                if !self.store_if(cpu, gen, false, || res.store(left, Ordering::Relaxed)) {
                    aborts += 1;
                    continue;
                }
                if !self.store_if(cpu, gen, true, || c.store(v as u64, Ordering::Relaxed)) {
                    aborts += 1;
                    continue;
                }
                break Outcome {
                    status: Status::Committed,
                    cpu,
                    row,
                    left,
                };
            };
            if aborts != 0 {
                count_restarts(aborts);
            }
            out
        }

        /// The fold's section (see the real one): `model_cpu` is where the
        /// thread runs, `cpu` where it must.
        pub(crate) fn credit(
            &self,
            model_cpu: usize,
            cpu: usize,
            res: &AtomicU64,
            pages: u64,
            empty: u64,
        ) -> bool {
            if model_cpu != cpu {
                return false;
            }
            loop {
                // ORDERING: Acquire, as in `add`.
                let gen = self.cpus[cpu].gen.load(Ordering::Acquire);
                let v = (res.load(Ordering::Relaxed).wrapping_add(pages) as i64).min(empty as i64);
                if self.store_if(cpu, gen, true, || res.store(v as u64, Ordering::Relaxed)) {
                    return true;
                }
                count_restarts(1);
            }
        }

        /// The flushers' barrier: a full fence, then each CPU visited
        /// (its lock taken, its generation advanced: the section in
        /// progress there restarts), then a full fence.
        pub(crate) fn membarrier(&self) {
            crate::sync::fence_seqcst();
            for c in self.cpus.iter() {
                let _held = lock(&c.lock);
                // ORDERING: Relaxed; under the CPU's lock.
                c.gen.fetch_add(1, Ordering::Relaxed);
            }
            crate::sync::fence_seqcst();
        }
    }
}
