//! The RFC cover letter's disjoint-VMA corner cases in one process.

use super::{
    add_thread_stack, check_aligned, exec_vmas, main_thread, mib, one_process, worker_thread,
};
use crate::cost::CostModel;
use crate::plan::{Op, Plan, VmaKind, VmaPlan, FIRST_PID, PAGE};
use crate::{NumabError, WorkloadSpec};

/// Parameters of the disjoint-VMA plan (see [`WorkloadSpec::Disjoint`]).
struct DisjointParams {
    sets: [u32; 3],
    sizes: [u64; 5],
    duty: u32,
    d_start_s: u64,
    late_s: u64,
    duration_s: u64,
    thp: f64,
    stack_kib: u64,
    stack_pages: u64,
}

fn disjoint_plan(d: &DisjointParams, cost: &CostModel) -> Result<Plan, NumabError> {
    let [s1, s2, s3] = d.sets;
    if s1 == 0 || s2 == 0 || s3 == 0 {
        return Err(NumabError::BadScenario(
            "every thread set needs a thread".into(),
        ));
    }
    if d.duty == 0 || d.duty > 100 {
        return Err(NumabError::BadScenario(
            "set2_duty_percent must be 1..=100".into(),
        ));
    }
    if d.late_s >= d.duration_s || d.d_start_s >= d.duration_s {
        return Err(NumabError::BadScenario(
            "d_start_s and late_s must precede duration_s".into(),
        ));
    }
    let names = ["vma_x", "vma_y", "vma_z", "vma_w", "vma_v"];
    for (n, s) in names.iter().zip(d.sizes) {
        check_aligned(n, mib(s))?;
    }
    let pid = FIRST_PID;
    let mut vmas = exec_vmas(d.stack_pages);
    let mut idx = [0usize; 5];
    for (k, (n, s)) in names.iter().zip(d.sizes).enumerate() {
        vmas.push(VmaPlan {
            name: (*n).to_string(),
            kind: VmaKind::Anon,
            bytes: mib(s),
            touched_pages: None,
            thp_fraction: d.thp,
            at_start: k != 4,
            mmap_area: true,
        });
        idx[k] = vmas.len() - 1;
    }
    let [x, y, z, w, v] = idx;
    let dur = d.duration_s * 1_000_000_000;
    let sweep_ns = |bytes: u64| (bytes / PAGE).max(1) * cost.local_page_ns;
    let passes_for = |bytes: u64, busy_ns: u64| -> u32 {
        (busy_ns / sweep_ns(bytes).max(1)).clamp(1, u64::from(u32::MAX)) as u32
    };
    let total = (s1 + s2 + s3) as usize;
    let mut ts = vec![main_thread(vec![
        // (d) the allocator zeroes vma_w and goes idle.
        Op::Sweep {
            vma: w,
            from: 0,
            len: mib(d.sizes[3]),
            passes: 1,
            sleep_ns: 0,
            convoy: false,
        },
        Op::SpawnAndJoin {
            first: 1,
            count: total,
        },
    ])];
    let slices = |bytes: u64, n: u32| -> Result<u64, NumabError> {
        let s = bytes / u64::from(n);
        check_aligned("disjoint slice", s)?;
        Ok(s)
    };
    let sx = slices(mib(d.sizes[0]), s1)?;
    let sy = slices(mib(d.sizes[1]), s2)?;
    let sw = slices(mib(d.sizes[3]), s3)?;
    let sv = slices(mib(d.sizes[4]), s3)?;
    for i in 0..total {
        let tid = pid + 1 + i as u32;
        let stack = add_thread_stack(&mut vmas, tid, d.stack_kib, d.stack_pages);
        let mut ops = Vec::new();
        if i < s1 as usize {
            let k = i as u64;
            if i == 0 {
                // (c) vma_z: written once, then never again.
                ops.push(Op::Sweep {
                    vma: z,
                    from: 0,
                    len: mib(d.sizes[2]),
                    passes: 1,
                    sleep_ns: 0,
                    convoy: false,
                });
            }
            ops.push(Op::Sweep {
                vma: x,
                from: sx * k,
                len: sx,
                passes: passes_for(sx, dur),
                sleep_ns: 0,
                convoy: false,
            });
        } else if i < (s1 + s2) as usize {
            // (a)+(b): a large VMA worked on part-time.
            let k = (i - s1 as usize) as u64;
            let busy = sweep_ns(sy);
            let sleep = busy * u64::from(100 - d.duty) / u64::from(d.duty);
            let passes = (dur / (busy + sleep).max(1)).max(1) as u32;
            ops.push(Op::Sweep {
                vma: y,
                from: sy * k,
                len: sy,
                passes,
                sleep_ns: sleep,
                convoy: false,
            });
        } else {
            let k = (i - (s1 + s2) as usize) as u64;
            let first_phase = (d.late_s.saturating_sub(d.d_start_s)) * 1_000_000_000;
            ops.push(Op::SleepUntil {
                ns: d.d_start_s * 1_000_000_000,
            });
            // (d) work on the idle allocator's memory.
            ops.push(Op::Sweep {
                vma: w,
                from: sw * k,
                len: sw,
                passes: passes_for(sw, first_phase),
                sleep_ns: 0,
                convoy: false,
            });
            ops.push(Op::SleepUntil {
                ns: d.late_s * 1_000_000_000,
            });
            if k == 0 {
                // (e) a VMA created after several full passes.
                ops.push(Op::Mmap { vma: v });
            } else {
                ops.push(Op::Sleep { ns: 1_000_000 });
            }
            let rest = (d.duration_s - d.late_s) * 1_000_000_000;
            ops.push(Op::Sweep {
                vma: v,
                from: sv * k,
                len: sv,
                passes: passes_for(sv, rest),
                sleep_ns: 0,
                convoy: false,
            });
        }
        ts.push(worker_thread(ops, stack));
    }
    Ok(one_process(pid, vmas, ts))
}

/// The plan of a `disjoint` workload.
pub(crate) fn plan(w: &WorkloadSpec, cost: &CostModel) -> Result<Plan, NumabError> {
    match w {
        WorkloadSpec::Disjoint {
            set1_threads,
            set2_threads,
            set3_threads,
            vma_x_mib,
            vma_y_mib,
            vma_z_mib,
            vma_w_mib,
            vma_v_mib,
            set2_duty_percent,
            d_start_s,
            late_s,
            duration_s,
            thp_fraction,
            stack_kib,
            stack_pages,
        } => disjoint_plan(
            &DisjointParams {
                sets: [*set1_threads, *set2_threads, *set3_threads],
                sizes: [*vma_x_mib, *vma_y_mib, *vma_z_mib, *vma_w_mib, *vma_v_mib],
                duty: *set2_duty_percent,
                d_start_s: *d_start_s,
                late_s: *late_s,
                duration_s: *duration_s,
                thp: *thp_fraction,
                stack_kib: *stack_kib,
                stack_pages: *stack_pages,
            },
            cost,
        ),
        _ => unreachable!("called for the disjoint workload only"),
    }
}
