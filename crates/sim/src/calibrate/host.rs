//! The `[kernel]` table from kernel mode: what the host's kernel measured
//! (`hostkernel::run_calibration`, taken by the caller, which knows the
//! host), turned into the model's per-unit costs.

use crate::cost::CostModel;
use crate::priced::{machine, Op, PricedSetup};
use hierstat::Preset;
use lab::policy::FlushPolicy;

/// One mapping's faults as the host measured them.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFault {
    /// The priced operation of that mapping (see [`fault_op`]).
    pub op: Op,
    /// CPU ns per fault (touch and unmap).
    pub cpu_ns_per_fault: f64,
    /// Stat updates per fault, when counted.
    pub updates_per_fault: Option<f64>,
}

/// The priced fault of a mapping named as kernel mode names it: `anon`,
/// `file-private` (a copy-on-write fault), anything else a shared file
/// mapping.
pub fn fault_op(mapping: &str) -> Op {
    match mapping {
        "anon" => Op::FaultAnon,
        "file-private" => Op::FaultCow,
        _ => Op::FaultShared,
    }
}

/// What kernel mode measured on the host, in the model's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct HostKernel {
    /// The CPU (`model name` of `/proc/cpuinfo`).
    pub cpu_model: String,
    /// CPUs online.
    pub online_cpus: usize,
    /// The kernel release.
    pub kernel_release: String,
    /// `v1` or `v2`.
    pub cgroup_version: String,
    /// The flush-policy preset of the kernel's era (the model's memcg work
    /// in a fault is priced under it).
    pub era: Preset,
    /// Depth of the measured group (1: under the hierarchy's root).
    pub depth: u32,
    /// Faults per mapping.
    pub faults: Vec<HostFault>,
    /// CPU ns of `open` + `read` + `close` of a one-number file.
    pub read_syscall_ns: f64,
    /// CPU ns of the same of `memory.stat`, no flush.
    pub read_stat_ns: f64,
    /// Lines of `memory.stat`.
    pub stat_items: u32,
    /// CPU ns per flush visit.
    pub flush_visit_ns: f64,
    /// Wall ns per 10 KiB `sendfile` over loopback.
    pub send_ns: f64,
}

/// The memcg work the model puts in one fault of `op` at `depth` under the
/// host era's preset: what a measured fault is reduced by to give the
/// rest of the fault.
fn modelled_memcg_ns(m: &CostModel, op: Op, depth: u32, cpus: usize, era: Preset) -> f64 {
    let mut costs = m.clone();
    costs.kernel.fault_anon_ns = 0.0;
    costs.kernel.fault_cow_ns = 0.0;
    costs.kernel.fault_shared_ns = 0.0;
    let o = machine::run(&PricedSetup {
        op,
        tasks: 1,
        cpus,
        depth,
        region_pages: 1024,
        shared_mm: false,
        warmup: 50_000,
        duration: 500_000,
        policy: FlushPolicy::preset(era),
        flush_period: Some(2_000_000_000),
        costs,
        machine: crate::machines::Machine::host().with_cpus(cpus as u32),
        protected_levels: 0,
    });
    1e9 / o.ops_per_sec_per_task().max(1.0)
}

/// Sets `m`'s `[kernel]` table from the host's figures (on top of the
/// replicas already in `m`), and its `host` line to name the machine
/// (`date`: the day of the measurement).
pub fn apply(m: &mut CostModel, h: &HostKernel, date: &str) {
    let k = &mut m.kernel;
    for fc in &h.faults {
        if let Some(u) = fc.updates_per_fault {
            match fc.op {
                Op::FaultAnon => k.updates_per_fault_anon = u,
                Op::FaultCow => k.updates_per_fault_cow = u,
                _ => k.updates_per_fault_shared = u,
            }
        }
    }
    k.read_syscall_ns = h.read_syscall_ns;
    k.stat_items = h.stat_items.max(1);
    k.read_item_ns = ((h.read_stat_ns - h.read_syscall_ns) / f64::from(k.stat_items)).max(0.0);
    k.flush_visit_ns = h.flush_visit_ns;
    k.send_ns = h.send_ns;
    let snapshot = m.clone();
    for fc in &h.faults {
        let memcg = modelled_memcg_ns(&snapshot, fc.op, h.depth, h.online_cpus, h.era);
        let rest = (fc.cpu_ns_per_fault - memcg).max(1.0);
        match fc.op {
            Op::FaultAnon => m.kernel.fault_anon_ns = rest,
            Op::FaultCow => m.kernel.fault_cow_ns = rest,
            _ => m.kernel.fault_shared_ns = rest,
        }
    }
    m.host = format!(
        "{} ({} CPUs), Linux {}, cgroup {} (mmlab calibrate, {date})",
        h.cpu_model, h.online_cpus, h.kernel_release, h.cgroup_version
    );
}
