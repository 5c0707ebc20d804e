//! numa01 and numa01_THREAD_ALLOC: two processes, each with its own
//! buffer and threads.

use super::{
    add_thread_stack, buffer_vma, check_aligned, exec_vmas, main_thread, mib, premap_ops,
    worker_thread,
};
use crate::plan::{Op, Plan, ProcessPlan, FIRST_PID};
use crate::{Numa01Spec, NumabError, WorkloadSpec};

/// The node `NO_BIND_FORCE_SAME_NODE` binds to: the benchmark takes
/// `(time(NULL) & 1) + 1` as the node mask, node 0 or 1; the model's CPU
/// permutation is seeded, so by symmetry node 0 stands for either.
const FORCE_NODE: u8 = 0;

fn numa01_plan(p: &Numa01Spec, threads: u32, thread_alloc: bool) -> Result<Plan, NumabError> {
    let size = mib(p.buffer_mib);
    check_aligned("buffer", size)?;
    let slice = if thread_alloc {
        size / u64::from(threads)
    } else {
        size
    };
    check_aligned("per-thread slice", slice)?;
    if thread_alloc && slice * u64::from(threads) != size {
        return Err(NumabError::BadScenario(
            "buffer is not divisible into equal 2 MiB-aligned slices".into(),
        ));
    }
    let mut processes = Vec::new();
    // fork() first: parent PID P, child P+1; each process's threads follow.
    let nthreads = threads as usize;
    for proc_idx in 0..2u32 {
        let pid = FIRST_PID + proc_idx * (threads + 2);
        let mut vmas = exec_vmas(p.stack_pages);
        vmas.push(buffer_vma(size, p.thp_fraction));
        let buffer = vmas.len() - 1;
        let mut main_ops = premap_ops(&mut vmas[buffer], p.premap_passes, buffer);
        main_ops.push(Op::SpawnAndJoin {
            first: 1,
            count: nthreads,
        });
        let mut threads = vec![main_thread(main_ops)];
        for i in 0..nthreads {
            let tid = pid + 1 + i as u32;
            let stack = add_thread_stack(&mut vmas, tid, p.stack_kib, p.stack_pages);
            let from = if thread_alloc { slice * i as u64 } else { 0 };
            let mut ops = Vec::with_capacity(4);
            if p.force_same_node {
                ops.push(Op::SetMempolicy {
                    bind: Some(FORCE_NODE),
                });
            }
            ops.push(Op::Sweep {
                vma: buffer,
                from: 0,
                len: size,
                passes: 1,
                sleep_ns: 0,
                convoy: true,
            });
            if p.force_same_node {
                ops.push(Op::SetMempolicy { bind: None });
            }
            ops.push(Op::Sweep {
                vma: buffer,
                from,
                len: slice,
                passes: p.passes,
                sleep_ns: 0,
                convoy: false,
            });
            threads.push(worker_thread(ops, stack));
        }
        processes.push(ProcessPlan { vmas, threads, pid });
    }
    Ok(Plan { processes })
}

/// Threads per process: the file's, or half of the CPUs.
fn threads_of(p: &Numa01Spec, ncpus: u32) -> u32 {
    p.threads.unwrap_or(ncpus / 2).max(1)
}

/// The plan of a `numa01` or `numa01-thread-alloc` workload on `ncpus`
/// CPUs (threads default to half of them per process).
pub(crate) fn plan(w: &WorkloadSpec, ncpus: u32) -> Result<Plan, NumabError> {
    match w {
        WorkloadSpec::Numa01(p) => numa01_plan(p, threads_of(p, ncpus), false),
        WorkloadSpec::Numa01ThreadAlloc(p) => numa01_plan(p, threads_of(p, ncpus), true),
        _ => unreachable!("called for the numa01 workloads only"),
    }
}
