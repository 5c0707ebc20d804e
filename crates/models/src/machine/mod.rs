//! A simulated machine behind the cgroup v2 memory interface: the memcg
//! tree and the LRU lists, plus what the kernel's own memory-controller
//! selftests drive them with.
//!
//! * [`cgroup`]: the cgroup hierarchy (`mkdir`/`rmdir`,
//!   `cgroup.subtree_control`, processes): a cgroup has its own memcg only
//!   if its parent enables `+memory`; otherwise it is charged to the
//!   nearest ancestor that has one;
//! * [`fs`]: the file front door: `read`/`write` of `memory.*` and
//!   `cgroup.*` files by path, and open descriptors for `memory.peak`;
//! * [`process`]: processes and their kernel entries (page faults, file
//!   reads, lookups, thread creation), each paying its `memory.high` debt
//!   on the way back to user space; a throttled process sleeps in virtual
//!   time;
//! * [`oom`]: the memcg OOM killer (`oom_score_adj`, `memory.oom.group`);
//! * [`mod@file`]: page cache of temporary files;
//! * [`socket`]: a TCP connection whose send buffer is charged to the
//!   server's memcg.
//!
//! Virtual time advances only when someone sleeps (a test's `sleep`, a
//! throttled process); every kernel entry takes no time. The periodic
//! statistics flusher runs every `FLUSH_TIME` (2 s) of virtual time.
//!
//! ```
//! use models::machine::Machine;
//!
//! let mut m = Machine::new(Machine::config(4))?;
//! m.write("/", "cgroup.subtree_control", "+memory")?;
//! m.mkdir("/memcg_test")?;
//! m.write("/memcg_test", "memory.max", "30M")?;
//! let p = m.spawn("/memcg_test")?;
//! assert!(m.alloc_anon(p, 10 << 20).is_done());
//! let current: u64 = m.read("/memcg_test", "memory.current")?.trim().parse().unwrap();
//! assert!(current >= 10 << 20);
//! assert_eq!(m.read("/memcg_test", "memory.max")?, "31457280\n");
//! # Ok::<(), models::machine::MachineError>(())
//! ```

pub mod cgroup;
mod error;
pub mod file;
pub mod fs;
pub mod oom;
pub mod process;
pub mod socket;

pub use cgroup::CgId;
pub use error::MachineError;
pub use file::FileId;
pub use fs::Fd;
pub use process::{Outcome, Pid, ThreadBody};
pub use socket::SockId;

use crate::memcg::{CacheId, MemcgConfig, MemcgId, MemcgTree, ObjKind};
use crate::workingset::{Lru, PolicyFlush, ShadowLayout};
use hierstat::sim::{ManualClock, Simulator as _, WorkCounters};
use hierstat::{FlushKind, PAGE_SIZE};

/// Size of a dentry (`dentry` in `/proc/slabinfo` of the development
/// host, Linux 6.18 x86-64).
pub const DENTRY_BYTES: u64 = 192;
/// A dentry's external name for a name longer than the inline 32 bytes:
/// the selftests' 110-character names land in the 128-byte kmalloc cache.
pub const DENTRY_NAME_BYTES: u64 = 128;
/// Size of a `task_struct` (`/proc/slabinfo` of the development host).
pub const TASK_STRUCT_BYTES: u64 = 5888;
/// Kernel stack pages of a task (`THREAD_SIZE` = 16 KiB on x86-64).
pub const KERNEL_STACK_PAGES: u64 = 4;
/// Pages one page-table page maps (`PTRS_PER_PTE`).
pub const PTE_SPAN: u32 = 512;

/// The machine (see the module docs).
#[derive(Debug)]
pub struct Machine {
    tree: MemcgTree,
    lru: Lru,
    cgroups: cgroup::Cgroups,
    procs: process::Procs,
    files: file::Files,
    sockets: socket::Sockets,
    fds: fs::Fds,
    dentry: CacheId,
    clock: ManualClock,
    now_ns: u64,
    next_periodic_ns: u64,
    period_ns: u64,
    flush: PolicyFlush,
}

impl Machine {
    /// The configuration of a kernel-like machine of `cpus` CPUs: one node,
    /// the `linux-6.8` preset, 4 GiB of swap, no mount options, a new
    /// group's statistics memory charged to its parent. Change it with
    /// [`MemcgConfig`]'s setters before [`Machine::new`].
    pub fn config(cpus: usize) -> MemcgConfig {
        MemcgConfig::new(cpus, 1)
            .swap_pages((4 << 30) / PAGE_SIZE)
            .charge_group_memory(true)
    }

    /// A machine with only the root cgroup, its memcg tree configured by
    /// `config` (see [`Machine::config`]); the tree's clock is the
    /// machine's virtual clock, whatever `config` says.
    ///
    /// # Errors
    /// Engine errors for a bad CPU or node count.
    pub fn new(config: MemcgConfig) -> Result<Self, MachineError> {
        let clock = ManualClock::new(0);
        let nodes = config.nodes;
        let mut tree = MemcgTree::new(config.clock(clock.clone()))?;
        let period_ns = tree.stats().policy().period_ns;
        let dentry = tree.register_cache(
            "dentry",
            &[
                (ObjKind::SlabReclaimable, DENTRY_BYTES),
                (ObjKind::SlabReclaimable, DENTRY_NAME_BYTES),
            ],
        );
        let root = tree.root();
        Ok(Machine {
            tree,
            lru: Lru::new(nodes, ShadowLayout::default()),
            cgroups: cgroup::Cgroups::new(root),
            procs: process::Procs::default(),
            files: file::Files::default(),
            sockets: socket::Sockets::default(),
            fds: fs::Fds::default(),
            dentry,
            clock,
            now_ns: 0,
            next_periodic_ns: period_ns,
            period_ns,
            flush: PolicyFlush::default(),
        })
    }

    /// The memcg tree.
    pub fn tree(&self) -> &MemcgTree {
        &self.tree
    }

    /// The LRU lists.
    pub fn lru(&self) -> &Lru {
        &self.lru
    }

    /// CPUs.
    pub fn cpus(&self) -> usize {
        self.tree.cpus()
    }

    /// Virtual time in ns.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// The dentry cache (negative dentries of [`Machine::lookup_missing`]).
    pub fn dentry_cache(&self) -> CacheId {
        self.dentry
    }

    /// Lets `ns` of virtual time pass (a test's `sleep`/`usleep`); the
    /// periodic flusher runs at each `FLUSH_TIME` boundary crossed.
    pub fn sleep(&mut self, ns: u64) {
        self.advance_to(self.now_ns + ns);
    }

    fn advance_to(&mut self, t: u64) {
        while self.next_periodic_ns <= t {
            self.now_ns = self.next_periodic_ns;
            self.clock.set(self.now_ns);
            let root = self.tree.stats().root();
            let mut work = WorkCounters::default();
            // The periodic flush cannot fail on the root group.
            let _ = self
                .tree
                .stats()
                .flush_with(&root, FlushKind::Periodic, &mut work);
            self.next_periodic_ns += self.period_ns.max(1);
        }
        self.now_ns = self.now_ns.max(t);
        self.clock.set(self.now_ns);
    }

    /// The memcg charged for what a process of cgroup `cg` allocates.
    pub(crate) fn memcg_of_cgroup(&self, cg: CgId) -> MemcgId {
        self.cgroups.effective_memcg(cg)
    }
}
