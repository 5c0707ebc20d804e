//! numa02: one process whose main thread first touches the buffer, then
//! threads that each work on their own slice.

use super::{
    add_thread_stack, buffer_vma, check_aligned, exec_vmas, main_thread, mib, one_process,
    premap_ops, worker_thread,
};
use crate::plan::{Op, Plan, FIRST_PID};
use crate::{NumabError, WorkloadSpec};

#[allow(clippy::too_many_arguments)]
fn numa02_plan(
    buffer_mib: u64,
    passes: u32,
    threads: u32,
    thp: f64,
    stack_kib: u64,
    stack_pages: u64,
    premap_passes: u32,
) -> Result<Plan, NumabError> {
    let size = mib(buffer_mib);
    check_aligned("buffer", size)?;
    let slice = size / u64::from(threads);
    check_aligned("per-thread slice", slice)?;
    let pid = FIRST_PID;
    let mut vmas = exec_vmas(stack_pages);
    vmas.push(buffer_vma(size, thp));
    let buffer = vmas.len() - 1;
    let n = threads as usize;
    let mut main_ops = premap_ops(&mut vmas[buffer], premap_passes, buffer);
    main_ops.extend([
        // BINDMAP: the main thread zeroes the buffer node-chunk by
        // node-chunk; without HARD_BIND that is one sequential sweep.
        Op::Sweep {
            vma: buffer,
            from: 0,
            len: size,
            passes: 1,
            sleep_ns: 0,
            convoy: false,
        },
        Op::SpawnAndJoin { first: 1, count: n },
    ]);
    let mut ts = vec![main_thread(main_ops)];
    for i in 0..n {
        let tid = pid + 1 + i as u32;
        let stack = add_thread_stack(&mut vmas, tid, stack_kib, stack_pages);
        ts.push(worker_thread(
            vec![Op::Sweep {
                vma: buffer,
                from: slice * i as u64,
                len: slice,
                passes,
                sleep_ns: 0,
                convoy: false,
            }],
            stack,
        ));
    }
    Ok(one_process(pid, vmas, ts))
}

/// The plan of a `numa02` workload on `ncpus` CPUs (threads default to all
/// of them).
pub(crate) fn plan(w: &WorkloadSpec, ncpus: u32) -> Result<Plan, NumabError> {
    match w {
        WorkloadSpec::Numa02 {
            buffer_mib,
            passes,
            threads,
            thp_fraction,
            stack_kib,
            stack_pages,
            premap_passes,
        } => numa02_plan(
            *buffer_mib,
            *passes,
            threads.unwrap_or(ncpus).max(1),
            *thp_fraction,
            *stack_kib,
            *stack_pages,
            *premap_passes,
        ),
        _ => unreachable!("called for the numa02 workload only"),
    }
}
