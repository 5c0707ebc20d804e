//! The workload generators (autonuma-benchmark's numa01,
//! numa01_THREAD_ALLOC and numa02, plus the RFC's disjoint-VMA corner
//! cases), each producing a [`Plan`](crate::plan::Plan), and the pieces
//! they share: the exec'd process's VMAs, thread stacks, the pre-map phase.

pub(crate) mod disjoint;
pub(crate) mod numa01;
pub(crate) mod numa02;

use crate::plan::{Op, Plan, ProcessPlan, ThreadPlan, VmaKind, VmaPlan, HPAGE, PAGE};
use crate::NumabError;

pub(crate) fn mib(x: u64) -> u64 {
    x << 20
}

/// Static VMAs of a freshly exec'd process, in creation order: the binary
/// (text read-only, data writable), heap, shared library text and data,
/// vvar/vdso and the main stack.
pub(crate) fn exec_vmas(stack_pages: u64) -> Vec<VmaPlan> {
    let v = |name: &str, kind, bytes, touched: Option<u64>, mmap_area| VmaPlan {
        name: name.to_string(),
        kind,
        bytes,
        touched_pages: touched,
        thp_fraction: 0.0,
        at_start: true,
        mmap_area,
    };
    vec![
        v("text", VmaKind::FileReadOnly, 64 * PAGE, None, false),
        v("data", VmaKind::FileWritable, 4 * PAGE, Some(4), false),
        v("heap", VmaKind::Anon, 33 * PAGE, Some(8), false),
        v("libc.text", VmaKind::FileReadOnly, 1536 * PAGE, None, true),
        v("libc.data", VmaKind::FileWritable, 8 * PAGE, Some(8), true),
        v("vvar", VmaKind::Unsuitable, 4 * PAGE, None, true),
        v("vdso", VmaKind::FileReadOnly, 2 * PAGE, None, true),
        v("stack", VmaKind::Anon, 132 * PAGE, Some(stack_pages), true),
    ]
}

/// Adds the guard + stack VMAs of one new thread; returns the stack index.
pub(crate) fn add_thread_stack(
    vmas: &mut Vec<VmaPlan>,
    tid: u32,
    stack_kib: u64,
    stack_pages: u64,
) -> usize {
    vmas.push(VmaPlan {
        name: format!("stack:{tid}"),
        kind: VmaKind::Anon,
        bytes: stack_kib << 10,
        touched_pages: Some(stack_pages.max(1)),
        thp_fraction: 0.0,
        at_start: false,
        mmap_area: true,
    });
    let idx = vmas.len() - 1;
    vmas.push(VmaPlan {
        name: format!("guard:{tid}"),
        kind: VmaKind::Inaccessible,
        bytes: PAGE,
        touched_pages: None,
        thp_fraction: 0.0,
        at_start: false,
        mmap_area: true,
    });
    idx
}

/// The main thread's ops before `malloc()` returns the buffer: with
/// `premap_passes > 0` it computes until the scanner has made that many
/// passes, then maps the buffer (which then does not exist at start).
pub(crate) fn premap_ops(buffer_plan: &mut VmaPlan, premap_passes: u32, buffer: usize) -> Vec<Op> {
    if premap_passes == 0 {
        return Vec::new();
    }
    buffer_plan.at_start = false;
    vec![
        Op::SpinUntilScanSeq {
            seq: i64::from(premap_passes),
        },
        Op::Mmap { vma: buffer },
    ]
}

pub(crate) fn check_aligned(what: &str, bytes: u64) -> Result<(), NumabError> {
    if bytes == 0 || bytes % HPAGE != 0 {
        return Err(NumabError::BadScenario(format!(
            "{what} = {bytes} bytes is not a positive multiple of 2 MiB"
        )));
    }
    Ok(())
}

/// Index of the main thread's stack among [`exec_vmas`].
const MAIN_STACK: usize = 7;

/// The main thread (TID = PID): on the exec'd main stack, running at time 0.
pub(crate) fn main_thread(ops: Vec<Op>) -> ThreadPlan {
    ThreadPlan {
        ops,
        stack: Some(MAIN_STACK),
        at_start: true,
    }
}

/// A worker thread on its own `stack` VMA, created by a spawn.
pub(crate) fn worker_thread(ops: Vec<Op>, stack: usize) -> ThreadPlan {
    ThreadPlan {
        ops,
        stack: Some(stack),
        at_start: false,
    }
}

/// A plan of one process.
pub(crate) fn one_process(pid: u32, vmas: Vec<VmaPlan>, threads: Vec<ThreadPlan>) -> Plan {
    Plan {
        processes: vec![ProcessPlan { vmas, threads, pid }],
    }
}

/// The benchmark's `malloc()`ed buffer: private anonymous memory of
/// `bytes` in the mmap area, a `thp` fraction of it THP-backed.
pub(crate) fn buffer_vma(bytes: u64, thp: f64) -> VmaPlan {
    VmaPlan {
        name: "buffer".into(),
        kind: VmaKind::Anon,
        bytes,
        touched_pages: None,
        thp_fraction: thp,
        at_start: true,
        mmap_area: true,
    }
}
