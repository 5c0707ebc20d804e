//! `tools/testing/selftests/cgroup/test_kmem.c`, ported step for step onto
//! the model's [`Machine`], with the kernel's tolerances, on every preset
//! at 4 and 64 CPUs (see `common::run_matrix`).
//!
//! `test_kmem_proc_kpagecgroup` reads `/proc/kpagecgroup` (the memcg inode
//! of every physical page frame); the model has no page frames, so it is
//! not ported.

mod common;

use common::*;
use models::machine::{Machine, Pid, ThreadBody};

/// Memory cgroup charging is performed using percpu batches 64 pages big
/// (`MEMCG_CHARGE_BATCH`), whereas memory.stat is exact. So the maximum
/// discrepancy between charge and vmstat entries is number of cpus
/// multiplied by 64 pages.
fn max_vmstat_error(m: &Machine) -> i64 {
    PAGE_SIZE * 64 * m.cpus() as i64
}

/// `KMEM_DEAD_WAIT_RETRIES`.
const KMEM_DEAD_WAIT_RETRIES: u32 = 80;

/// `alloc_dcache(cgroup, n)`: `n` lookups of long missing names.
fn alloc_dcache(m: &mut Machine, pid: Pid, n: u64) -> i32 {
    if m.lookup_missing(pid, n).is_done() {
        0
    } else {
        -1
    }
}

/// This test allocates 100000 of negative dentries with long names. Then
/// it checks that "slab" in memory.stat is larger than 1M. Then it sets
/// memory.high to 1M and checks that at least 1/2 of slab memory has been
/// reclaimed.
fn test_kmem_basic(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "kmem_basic_test", |m, cg| {
        ensure!(
            cg_run(m, cg, |m, pid| alloc_dcache(m, pid, 100000)) == 0,
            "alloc_dcache"
        );
        let slab0 = cg_read_key_long(m, cg, "memory.stat", "slab ");
        ensure!(slab0 >= 1 << 20, "slab0 {slab0}");
        let _ = cg_write(m, cg, "memory.high", "1M");
        // Wait for RCU freeing.
        m.sleep(1_000_000_000);
        let slab1 = cg_read_key_long(m, cg, "memory.stat", "slab ");
        ensure!(slab1 >= 0, "slab1");
        let current = cg_read_long(m, cg, "memory.current");
        ensure!(current >= 0, "current");
        ensure!(
            slab1 < slab0 / 2 && current < slab0 / 2,
            "slab0 {slab0} slab1 {slab1} current {current}"
        );
        Ok(())
    })
}

/// `alloc_kmem_smp`: 2 × nr_cpus threads, each `alloc_dcache(100)`.
fn alloc_kmem_smp(m: &mut Machine, pid: Pid) -> i32 {
    let nr_threads = 2 * m.cpus() as u32;
    if m.spawn_threads(pid, nr_threads, ThreadBody::Lookups(100))
        .is_done()
    {
        0
    } else {
        -1
    }
}

/// `cg_run_in_subcgroups`: creates `times` children one after the other,
/// runs `f` in each, destroys it.
fn cg_run_in_subcgroups(
    m: &mut Machine,
    parent: &str,
    f: impl Fn(&mut Machine, Pid) -> i32,
    times: usize,
) -> i32 {
    for i in 0..times {
        let child = cg_name_indexed(parent, "child", i);
        if cg_create(m, &child) != 0 {
            cg_destroy(m, &child);
            return -1;
        }
        if cg_run(m, &child, &f) != 0 {
            cg_destroy(m, &child);
            return -1;
        }
        cg_destroy(m, &child);
    }
    0
}

/// The test creates and destroys a large number of cgroups. In each cgroup
/// it allocates some slab memory (mostly negative dentries) using
/// 2 * NR_CPUS threads. Then it checks the sanity of numbers on the parent
/// level: the total size of the cgroups should be roughly equal to
/// anon + file + kernel + sock.
fn test_kmem_memcg_deletion(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "kmem_memcg_deletion_test", |m, parent| {
        ensure!(
            cg_write(m, parent, "cgroup.subtree_control", "+memory") == 0,
            "+memory"
        );
        ensure!(
            cg_run_in_subcgroups(m, parent, alloc_kmem_smp, 100) == 0,
            "cg_run_in_subcgroups"
        );
        let current = cg_read_long(m, parent, "memory.current");
        let anon = cg_read_key_long(m, parent, "memory.stat", "anon ");
        let file = cg_read_key_long(m, parent, "memory.stat", "file ");
        let kernel = cg_read_key_long(m, parent, "memory.stat", "kernel ");
        let sock = cg_read_key_long(m, parent, "memory.stat", "sock ");
        ensure!(
            current >= 0 && anon >= 0 && file >= 0 && kernel >= 0 && sock >= 0,
            "reads"
        );
        let sum = anon + file + kernel + sock;
        ensure!(
            (sum - current).abs() < max_vmstat_error(m),
            "memory.current = {current}, anon + file + kernel + sock = {sum} \
             (anon {anon} file {file} kernel {kernel} sock {sock})"
        );
        Ok(())
    })
}

/// The test spawns a process, which spawns 1000 threads. Then it checks
/// that memory.stat's kernel_stack is at least 1000 pages large.
fn test_kmem_kernel_stacks(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "kmem_kernel_stacks_test", |m, cg| {
        let mut stack = -1;
        let rc = cg_run(m, cg, |m, pid| {
            if !m.spawn_threads(pid, 1000, ThreadBody::Sleep).is_done() {
                return -1;
            }
            stack = cg_read_key_long(m, cg, "memory.stat", "kernel_stack ");
            if stack >= 4096 * 1000 {
                0
            } else {
                -1
            }
        });
        ensure!(rc == 0, "kernel_stack {stack} < 1000 pages");
        Ok(())
    })
}

/// This test sequentially creates 30 child cgroups, allocates some kernel
/// memory in each of them, and deletes them. Then it checks that the
/// number of dying cgroups on the parent level is 0.
fn test_kmem_dead_cgroups(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "kmem_dead_cgroups_test", |m, parent| {
        ensure!(
            cg_write(m, parent, "cgroup.subtree_control", "+memory") == 0,
            "+memory"
        );
        ensure!(
            cg_run_in_subcgroups(m, parent, |m, pid| alloc_dcache(m, pid, 100), 30) == 0,
            "cg_run_in_subcgroups"
        );
        // Allow up to ~8s for reclaim of dying descendants to complete.
        let dead = cg_read_key_long_poll(
            m,
            parent,
            "cgroup.stat",
            "nr_dying_descendants ",
            0,
            KMEM_DEAD_WAIT_RETRIES,
            DEFAULT_WAIT_INTERVAL_US,
        );
        ensure!(dead == 0, "nr_dying_descendants {dead}");
        // The model reparents at removal: the children's dentries are the
        // parent's now, none lost.
        let objects = m.tree().objects(
            m.memcg(parent).map_err(|e| e.to_string())?.ok_or("memcg")?,
            m.dentry_cache(),
        );
        ensure!(objects == 30 * 100, "parent holds {objects} dentries");
        Ok(())
    })
}

/// This test creates a sub-tree with 1000 memory cgroups. Then it checks
/// that the memory.current on the parent level is greater than 0 and
/// approximates matches the percpu value from memory.stat.
fn test_percpu_basic(m: &mut Machine, root: &str) -> TestResult {
    let parent = cg_name(root, "percpu_basic_test");
    let ret = (|| {
        ensure!(cg_create(m, &parent) == 0, "create");
        ensure!(
            cg_write(m, &parent, "cgroup.subtree_control", "+memory") == 0,
            "+memory"
        );
        for i in 0..1000 {
            let child = cg_name_indexed(&parent, "child", i);
            ensure!(cg_create(m, &child) == 0, "create child {i}");
        }
        let current = cg_read_long(m, &parent, "memory.current");
        let percpu = cg_read_key_long(m, &parent, "memory.stat", "percpu ");
        let slab = cg_read_key_long(m, &parent, "memory.stat", "slab ");
        ensure!(
            current > 0
                && percpu > 0
                && slab >= 0
                && (current - (percpu + slab)).abs() < max_vmstat_error(m),
            "memory.current {current} percpu {percpu} slab {slab} delta {}",
            current - (percpu + slab)
        );
        Ok(())
    })();
    for i in 0..1000 {
        cg_destroy(m, &cg_name_indexed(&parent, "child", i));
    }
    cg_destroy(m, &parent);
    ret
}

selftests! { test_kmem:
    test_kmem_basic,
    test_kmem_memcg_deletion,
    test_kmem_kernel_stacks,
    test_kmem_dead_cgroups,
    test_percpu_basic,
}
