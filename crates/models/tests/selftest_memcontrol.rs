//! `tools/testing/selftests/cgroup/test_memcontrol.c`, ported step for
//! step onto the model's [`Machine`], with the kernel's tolerances, on
//! every preset at 4 and 64 CPUs (see `common::run_matrix`).
//!
//! Port of the upstream file as of 2025 (`test_memcg_current_peak`,
//! `test_memcg_protection` for min and low, `test_memcg_reclaim`,
//! `test_memcg_swap_max_peak`, ...), with the December 2025 change to
//! `test_memcg_sock` that polls `memory.stat` for `sock` to reach 0 for up
//! to 3 s (30 × 100 ms: `FLUSH_TIME` plus slack) instead of reading it
//! once. The system under test always has swap (`is_swap_enabled()`), no
//! `memory_localevents` and no `memory_recursiveprot`.
//!
//! What a C child process does runs as a closure given the child's pid
//! (`cg_run`, `cg_run_nowait`); a `noexit` child stays alive until the test
//! destroys its cgroup.

// The C tests' failure conditions are kept as written (`if (!min && rc)`).
#![allow(clippy::nonminimal_bool)]

mod common;

use common::*;
use models::machine::{Machine, Outcome, Pid};

const HAS_LOCALEVENTS: bool = false;
const HAS_RECURSIVEPROT: bool = false;
/// `MEMCG_SOCKSTAT_WAIT_RETRIES`.
const MEMCG_SOCKSTAT_WAIT_RETRIES: u32 = 30;
/// `OOM_SCORE_ADJ_MIN`.
const OOM_SCORE_ADJ_MIN: i32 = -1000;

/// This test creates two nested cgroups with and without enabling the
/// memory controller.
fn test_memcg_subtree_control(m: &mut Machine, root: &str) -> TestResult {
    let parent = cg_name(root, "memcg_test_0");
    let child = cg_name(root, "memcg_test_0/memcg_test_1");
    let parent2 = cg_name(root, "memcg_test_1");
    let child2 = cg_name(root, "memcg_test_1/memcg_test_1");
    let ret = (|| {
        ensure!(cg_create(m, &parent) == 0, "create parent");
        ensure!(
            cg_write(m, &parent, "cgroup.subtree_control", "+memory") == 0,
            "+memory"
        );
        ensure!(cg_create(m, &child) == 0, "create child");
        ensure!(
            cg_read_strstr(m, &child, "cgroup.controllers", "memory") == 0,
            "child lacks memory in cgroup.controllers"
        );
        // Create two nested cgroups without enabling memory controller.
        ensure!(cg_create(m, &parent2) == 0, "create parent2");
        ensure!(cg_create(m, &child2) == 0, "create child2");
        ensure!(
            cg_read(m, &child2, "cgroup.controllers").is_some(),
            "read child2 controllers"
        );
        ensure!(
            cg_read_strstr(m, &child2, "cgroup.controllers", "memory") != 0,
            "child2 has memory in cgroup.controllers"
        );
        Ok(())
    })();
    cg_destroy(m, &child2);
    cg_destroy(m, &parent2);
    cg_destroy(m, &child);
    cg_destroy(m, &parent);
    ret
}

fn alloc_anon_50m_check(m: &mut Machine, cg: &str, pid: Pid) -> TestResult {
    let size = mb(50);
    ensure!(m.alloc_anon(pid, size as u64).is_done(), "malloc");
    let current = cg_read_long(m, cg, "memory.current");
    ensure!(current >= size, "current {current} < size");
    ensure!(values_close(size, current, 3), "size vs current {current}");
    let anon = cg_read_key_long(m, cg, "memory.stat", "anon ");
    ensure!(anon >= 0, "no anon");
    ensure!(
        values_close(anon, current, 3),
        "anon {anon} vs current {current}"
    );
    m.free_anon(pid).map_err(|e| e.to_string())?;
    Ok(())
}

fn alloc_pagecache_50m_check(m: &mut Machine, cg: &str, pid: Pid) -> TestResult {
    let size = mb(50);
    let fd = m.tmpfile(Some(pid));
    let ret = (|| {
        ensure!(
            m.alloc_pagecache(pid, fd, size as u64).is_done(),
            "alloc_pagecache"
        );
        let current = cg_read_long(m, cg, "memory.current");
        ensure!(current >= size, "current {current} < size");
        let file = cg_read_key_long(m, cg, "memory.stat", "file ");
        ensure!(file >= 0, "no file");
        ensure!(
            values_close(file, current, 10),
            "file {file} vs current {current}"
        );
        Ok(())
    })();
    if m.alive(pid) {
        m.close_file(fd).map_err(|e| e.to_string())?;
    }
    ret
}

/// Runs a check as a child of `cg` (`cg_run`): 0 or -1, and why it
/// failed.
fn run_check(
    m: &mut Machine,
    cg: &str,
    f: impl FnOnce(&mut Machine, &str, Pid) -> TestResult,
) -> (i32, String) {
    let mut why = String::new();
    let rc = cg_run(m, cg, |m, pid| match f(m, cg, pid) {
        Ok(()) => 0,
        Err(e) => {
            why = e;
            -1
        }
    });
    (rc, why)
}

/// This test creates a memory cgroup, allocates some anonymous memory and
/// some pagecache and checks memory.current, memory.peak, and some
/// memory.stat values.
fn test_memcg_current_peak(m: &mut Machine, root: &str) -> TestResult {
    let memcg = cg_name(root, "memcg_test");
    let mut fds = Vec::new();
    let ret = (|| {
        ensure!(cg_create(m, &memcg) == 0, "create");
        let current = cg_read_long(m, &memcg, "memory.current");
        ensure!(current == 0, "initial current {current}");
        let peak = cg_read_long(m, &memcg, "memory.peak");
        ensure!(peak == 0, "initial peak {peak}");
        let (rc, why) = run_check(m, &memcg, alloc_anon_50m_check);
        ensure!(rc == 0, "alloc_anon_50M_check: {why}");
        let peak = cg_read_long(m, &memcg, "memory.peak");
        ensure!(peak >= mb(50), "peak {peak}");
        // A few FDs for the same memory.peak file, closed in a different
        // order than written.
        let peak_fd = cg_open(m, &memcg, "memory.peak").ok_or("open peak_fd")?;
        fds.push(peak_fd);
        let peak_fd2 = cg_open(m, &memcg, "memory.peak").ok_or("open peak_fd2")?;
        fds.push(peak_fd2);
        let peak_fd3 = cg_open(m, &memcg, "memory.peak").ok_or("open peak_fd3")?;
        fds.push(peak_fd3);
        let reset = "reset\n\0";
        for fd in [peak_fd, peak_fd2, peak_fd3] {
            ensure!(write_fd(m, fd, reset) == reset.len() as i64, "reset write");
        }
        // A completely independent read isn't affected by the FD-local
        // resets.
        let peak = cg_read_long(m, &memcg, "memory.peak");
        ensure!(peak >= mb(50), "global peak after resets {peak}");
        fds.retain(|&f| f != peak_fd2);
        m.close_fd(peak_fd2).map_err(|e| e.to_string())?;
        let peak_fd4 = cg_open(m, &memcg, "memory.peak").ok_or("open peak_fd4")?;
        fds.push(peak_fd4);
        ensure!(
            write_fd(m, peak_fd4, reset) == reset.len() as i64,
            "reset fd4"
        );
        let peak = cg_read_long_fd(m, peak_fd);
        ensure!((0..=mb(30)).contains(&peak), "fd peak after reset {peak}");
        let (rc, why) = run_check(m, &memcg, alloc_pagecache_50m_check);
        ensure!(rc == 0, "alloc_pagecache_50M_check: {why}");
        let peak = cg_read_long(m, &memcg, "memory.peak");
        ensure!(peak >= mb(50), "peak after pagecache {peak}");
        // Make sure everything is back to normal.
        let peak = cg_read_long_fd(m, peak_fd);
        ensure!(peak >= mb(50), "fd peak {peak}");
        let peak = cg_read_long_fd(m, peak_fd4);
        ensure!(peak >= mb(50), "fd4 peak {peak}");
        for fd in [peak_fd3, peak_fd4] {
            fds.retain(|&f| f != fd);
            m.close_fd(fd).map_err(|e| e.to_string())?;
        }
        Ok(())
    })();
    for fd in fds {
        let _ = m.close_fd(fd);
    }
    cg_destroy(m, &memcg);
    ret
}

/// `alloc_pagecache_50M_noexit`: 50M of the shared file, then wait.
fn alloc_pagecache_50m_noexit(m: &mut Machine, pid: Pid, fd: models::machine::FileId) -> i32 {
    if m.alloc_pagecache(pid, fd, mb(50) as u64).is_done() {
        0
    } else {
        -1
    }
}

/// `reclaim_until()`: reclaims from `memcg` through memory.reclaim until
/// usage reaches `goal`; false if memory.reclaim's results make no sense.
fn reclaim_until(m: &mut Machine, memcg: &str, goal: i64) -> bool {
    let mut reclaimed = false;
    for _ in 0..5 {
        let current = cg_read_long(m, memcg, "memory.current");
        if current < goal || values_close(current, goal, 3) {
            break;
        } else if reclaimed {
            // Did memory.reclaim return 0 incorrectly?
            return false;
        }
        let to_reclaim = current - goal;
        let err = cg_write(m, memcg, "memory.reclaim", &to_reclaim.to_string());
        if err == 0 {
            reclaimed = true;
        } else if err != -11 {
            return false;
        }
    }
    reclaimed
}

/// First, this test creates the following hierarchy:
/// A       memory.min = 0,    memory.max = 200M
/// A/B     memory.min = 50M
/// A/B/C   memory.min = 75M,  memory.current = 50M
/// A/B/D   memory.min = 25M,  memory.current = 50M
/// A/B/E   memory.min = 0,    memory.current = 50M
/// A/B/F   memory.min = 500M, memory.current = 0
/// (or memory.low if we test soft protection), then A/G allocates 148M:
/// B ~= 50M, C ~= 29M, D ~= 21M, E ~= 0, F = 0. Then more than there is
/// unprotected memory: min protects, low gives way with low events. Then
/// memory.reclaim brings C to 10M despite its own protection.
fn test_memcg_protection(m: &mut Machine, root: &str, min: bool) -> TestResult {
    let attribute = if min { "memory.min" } else { "memory.low" };
    let fd = m.tmpfile(None);
    let parent = [
        cg_name(root, "memcg_test_0"),
        cg_name(&cg_name(root, "memcg_test_0"), "memcg_test_1"),
        cg_name(&cg_name(root, "memcg_test_0"), "memcg_test_2"),
    ];
    let children: Vec<String> = (0..4)
        .map(|i| cg_name_indexed(&parent[1], "child_memcg", i))
        .collect();
    let ret = (|| {
        ensure!(cg_create(m, &parent[0]) == 0, "create A");
        ensure!(
            cg_read_long(m, &parent[0], attribute) == 0,
            "{attribute} != 0"
        );
        ensure!(
            cg_write(m, &parent[0], "cgroup.subtree_control", "+memory") == 0,
            "A +memory"
        );
        ensure!(cg_write(m, &parent[0], "memory.max", "200M") == 0, "A max");
        ensure!(
            cg_write(m, &parent[0], "memory.swap.max", "0") == 0,
            "A swap.max"
        );
        ensure!(cg_create(m, &parent[1]) == 0, "create B");
        ensure!(
            cg_write(m, &parent[1], "cgroup.subtree_control", "+memory") == 0,
            "B +memory"
        );
        ensure!(cg_create(m, &parent[2]) == 0, "create G");
        for (i, child) in children.iter().enumerate() {
            ensure!(cg_create(m, child) == 0, "create child {i}");
            if i > 2 {
                continue;
            }
            cg_run_nowait(m, child, |m, pid| alloc_pagecache_50m_noexit(m, pid, fd));
        }
        ensure!(cg_write(m, &parent[1], attribute, "50M") == 0, "B");
        ensure!(cg_write(m, &children[0], attribute, "75M") == 0, "C");
        ensure!(cg_write(m, &children[1], attribute, "25M") == 0, "D");
        ensure!(cg_write(m, &children[2], attribute, "0") == 0, "E");
        ensure!(cg_write(m, &children[3], attribute, "500M") == 0, "F");
        let mut attempts = 0;
        while !values_close(cg_read_long(m, &parent[1], "memory.current"), mb(150), 3) {
            if attempts > 5 {
                break;
            }
            attempts += 1;
            m.sleep(1_000_000_000);
        }
        let rc = cg_run(m, &parent[2], |m, pid| alloc_anon(m, pid, mb(148)));
        ensure!(rc == 0, "G alloc_anon 148M: {rc}");
        let b = cg_read_long(m, &parent[1], "memory.current");
        ensure!(values_close(b, mb(50), 3), "B current {b} !~ 50M");
        let c: Vec<i64> = children
            .iter()
            .map(|ch| cg_read_long(m, ch, "memory.current"))
            .collect();
        ensure!(values_close(c[0], mb(29), 15), "C {} !~ 29M (15%)", c[0]);
        ensure!(values_close(c[1], mb(21), 20), "D {} !~ 21M (20%)", c[1]);
        ensure!(c[3] == 0, "F {} != 0", c[3]);
        let rc = cg_run(m, &parent[2], |m, pid| alloc_anon(m, pid, mb(170)));
        ensure!(
            !(min && rc == 0),
            "memory.min did not prevent allocating 170M"
        );
        ensure!(
            !(!min && rc != 0),
            "memory.low prevents from allocating anon memory"
        );
        let current = if min { mb(50) } else { mb(30) };
        let b = cg_read_long(m, &parent[1], "memory.current");
        ensure!(values_close(b, current, 3), "B current {b} !~ {current}");
        ensure!(
            reclaim_until(m, &children[0], mb(10)),
            "reclaim_until C 10M"
        );
        if min {
            return Ok(());
        }
        // Child 2 has memory.low=0, but some low protection may still be
        // distributed down from its parent with memory.low=50M if cgroup2
        // memory_recursiveprot mount option is enabled. Ignore the low
        // event count in this case.
        for (i, child) in children.iter().enumerate() {
            let ignore_low_events_index = if HAS_RECURSIVEPROT { 2 } else { usize::MAX };
            let no_low_events_index = 1;
            let oom = cg_read_key_long(m, child, "memory.events", "oom ");
            let low = cg_read_key_long(m, child, "memory.events", "low ");
            ensure!(oom == 0, "child {i} oom {oom}");
            if i == ignore_low_events_index {
                continue;
            }
            ensure!(
                !(i <= no_low_events_index && low <= 0),
                "child {i}: low {low}, expected > 0"
            );
            ensure!(
                !(i > no_low_events_index && low != 0),
                "child {i}: low {low}, expected 0"
            );
        }
        Ok(())
    })();
    for ch in children.iter().rev() {
        cg_destroy(m, ch);
    }
    for p in parent.iter().rev() {
        cg_destroy(m, p);
    }
    let _ = m.close_file(fd);
    ret
}

fn test_memcg_min(m: &mut Machine, root: &str) -> TestResult {
    test_memcg_protection(m, root, true)
}

fn test_memcg_low(m: &mut Machine, root: &str) -> TestResult {
    test_memcg_protection(m, root, false)
}

fn alloc_pagecache_max_30m(m: &mut Machine, cg: &str, pid: Pid) -> TestResult {
    let size = mb(50);
    let high = cg_read_long(m, cg, "memory.high");
    let max = cg_read_long(m, cg, "memory.max");
    ensure!(
        !(high != mb(30) && max != mb(30)),
        "neither high nor max is 30M"
    );
    let fd = m.tmpfile(Some(pid));
    let ret = (|| {
        ensure!(
            m.alloc_pagecache(pid, fd, size as u64).is_done(),
            "alloc_pagecache"
        );
        let current = cg_read_long(m, cg, "memory.current");
        ensure!(
            values_close(current, mb(30), 5),
            "current {current} !~ 30M (5%)"
        );
        Ok(())
    })();
    if m.alive(pid) {
        m.close_file(fd).map_err(|e| e.to_string())?;
    }
    ret
}

/// This test checks that memory.high limits the amount of memory which
/// can be consumed by either anonymous memory or pagecache.
fn test_memcg_high(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "memcg_test", |m, memcg| {
        ensure!(
            cg_read_strcmp(m, memcg, "memory.high", "max\n") == 0,
            "high != max"
        );
        ensure!(cg_write(m, memcg, "memory.swap.max", "0") == 0, "swap.max");
        ensure!(cg_write(m, memcg, "memory.high", "30M") == 0, "high");
        let rc = cg_run(m, memcg, |m, pid| alloc_anon(m, pid, mb(31)));
        ensure!(rc == 0, "alloc_anon 31M: {rc}");
        let (rc, _) = run_check(m, memcg, alloc_pagecache_50m_check);
        ensure!(rc != 0, "alloc_pagecache_50M_check passed under high 30M");
        let (rc, why) = run_check(m, memcg, alloc_pagecache_max_30m);
        ensure!(rc == 0, "alloc_pagecache_max_30M: {why}");
        let high = cg_read_key_long(m, memcg, "memory.events", "high ");
        ensure!(high > 0, "high events {high}");
        Ok(())
    })
}

/// This test checks that memory.high is able to throttle big single shot
/// allocation i.e. large allocation within one kernel entry.
fn test_memcg_high_sync(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "memcg_test", |m, memcg| {
        let pre_high = cg_read_key_long(m, memcg, "memory.events", "high ");
        let pre_max = cg_read_key_long(m, memcg, "memory.events", "max ");
        ensure!(pre_high >= 0 && pre_max >= 0, "events");
        ensure!(cg_write(m, memcg, "memory.swap.max", "0") == 0, "swap.max");
        ensure!(cg_write(m, memcg, "memory.high", "30M") == 0, "high");
        ensure!(cg_write(m, memcg, "memory.max", "140M") == 0, "max");
        // memcg_prepare_for_wait(): watch memory.events.
        let before = m.read(memcg, "memory.events").map_err(|e| e.to_string())?;
        // cg_run_nowait(alloc_anon_mlock, 200M): the child runs until it
        // blocks; the watcher wakes at the first modification.
        let pid = m.spawn(memcg).map_err(|e| e.to_string())?;
        m.begin_alloc_anon(pid, mb(200) as u64, true)
            .map_err(|e| e.to_string())?;
        let o = m.resume(pid);
        // cg_wait_for(fd)
        let after = m.read(memcg, "memory.events").map_err(|e| e.to_string())?;
        ensure!(after != before, "memory.events unchanged ({o:?})");
        let post_high = cg_read_key_long(m, memcg, "memory.events", "high ");
        let post_max = cg_read_key_long(m, memcg, "memory.events", "max ");
        ensure!(post_high >= 0 && post_max >= 0, "events");
        ensure!(
            !(pre_high == post_high || pre_max != post_max),
            "high {pre_high} -> {post_high}, max {pre_max} -> {post_max} ({o:?})"
        );
        Ok(())
    })
}

/// This test checks that memory.max limits the amount of memory which can
/// be consumed by either anonymous memory or pagecache.
fn test_memcg_max(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "memcg_test", |m, memcg| {
        ensure!(
            cg_read_strcmp(m, memcg, "memory.max", "max\n") == 0,
            "max != max"
        );
        ensure!(cg_write(m, memcg, "memory.swap.max", "0") == 0, "swap.max");
        ensure!(cg_write(m, memcg, "memory.max", "30M") == 0, "max");
        // Should be killed by OOM killer.
        let rc = cg_run(m, memcg, |m, pid| alloc_anon(m, pid, mb(100)));
        ensure!(rc != 0, "alloc_anon 100M under max 30M was not killed");
        let (rc, why) = run_check(m, memcg, alloc_pagecache_max_30m);
        ensure!(rc == 0, "alloc_pagecache_max_30M: {why}");
        let current = cg_read_long(m, memcg, "memory.current");
        ensure!(current <= mb(30) && current != 0, "current {current}");
        let max = cg_read_key_long(m, memcg, "memory.events", "max ");
        ensure!(max > 0, "max events {max}");
        Ok(())
    })
}

/// This test checks that memory.reclaim reclaims the given amount of
/// memory (from both anon and file, if possible).
fn test_memcg_reclaim(m: &mut Machine, root: &str) -> TestResult {
    let fd = m.tmpfile(None);
    let ret = with_cgroup(m, root, "memcg_test", |m, memcg| {
        let current = cg_read_long(m, memcg, "memory.current");
        ensure!(current == 0, "initial current {current}");
        cg_run_nowait(m, memcg, |m, pid| alloc_pagecache_50m_noexit(m, pid, fd));
        // Swap is enabled: reclaim from both anon and file.
        cg_run_nowait(m, memcg, |m, pid| alloc_anon_noexit(m, pid, mb(50)));
        let expected_usage = mb(100);
        let mut retries = 5;
        while !values_close(cg_read_long(m, memcg, "memory.current"), expected_usage, 10) {
            ensure!(
                retries > 0,
                "failed to allocate {expected_usage} for memcg reclaim test"
            );
            retries -= 1;
            m.sleep(1_000_000_000);
        }
        // Reclaim until current reaches 30M, this makes sure we hit both
        // anon and file if swap is enabled.
        ensure!(reclaim_until(m, memcg, mb(30)), "reclaim_until 30M");
        Ok(())
    });
    let _ = m.close_file(fd);
    ret
}

fn alloc_anon_50m_check_swap(m: &mut Machine, cg: &str, pid: Pid, mem_max: i64) -> TestResult {
    let size = mb(50);
    ensure!(m.alloc_anon(pid, size as u64).is_done(), "malloc");
    let mem_current = cg_read_long(m, cg, "memory.current");
    ensure!(
        mem_current != 0 && values_close(mem_current, mem_max, 3),
        "mem_current {mem_current} !~ {mem_max}"
    );
    let swap_current = cg_read_long(m, cg, "memory.swap.current");
    ensure!(
        swap_current != 0 && values_close(mem_current + swap_current, size, 3),
        "mem {mem_current} + swap {swap_current} !~ 50M"
    );
    m.free_anon(pid).map_err(|e| e.to_string())?;
    Ok(())
}

/// This test checks that memory.swap.max limits the amount of anonymous
/// memory which can be swapped out. Additionally, it verifies that
/// memory.swap.peak reflects the high watermark and can be reset.
fn test_memcg_swap_max_peak(m: &mut Machine, root: &str) -> TestResult {
    let memcg = cg_name(root, "memcg_test");
    let reset = "foobarbaz\0";
    let mut fds = Vec::new();
    let ret = (|| {
        ensure!(cg_create(m, &memcg) == 0, "create");
        ensure!(
            cg_read_long(m, &memcg, "memory.swap.current") == 0,
            "swap.current != 0"
        );
        let swap_peak_fd = cg_open(m, &memcg, "memory.swap.peak").ok_or("open swap.peak")?;
        fds.push(swap_peak_fd);
        let mem_peak_fd = cg_open(m, &memcg, "memory.peak").ok_or("open peak")?;
        fds.push(mem_peak_fd);
        ensure!(
            cg_read_long(m, &memcg, "memory.swap.peak") == 0,
            "swap.peak"
        );
        ensure!(cg_read_long_fd(m, swap_peak_fd) == 0, "swap peak fd");
        // Switch the swap and mem fds into local-peak tracking mode.
        ensure!(
            write_fd(m, swap_peak_fd, reset) == reset.len() as i64,
            "reset swap fd"
        );
        ensure!(cg_read_long_fd(m, swap_peak_fd) == 0, "swap peak fd");
        ensure!(cg_read_long(m, &memcg, "memory.peak") == 0, "peak");
        ensure!(cg_read_long_fd(m, mem_peak_fd) == 0, "mem peak fd");
        ensure!(
            write_fd(m, mem_peak_fd, reset) == reset.len() as i64,
            "reset mem fd"
        );
        ensure!(cg_read_long_fd(m, mem_peak_fd) == 0, "mem peak fd");
        ensure!(cg_read_strcmp(m, &memcg, "memory.max", "max\n") == 0, "max");
        ensure!(
            cg_read_strcmp(m, &memcg, "memory.swap.max", "max\n") == 0,
            "swap.max"
        );
        ensure!(
            cg_write(m, &memcg, "memory.swap.max", "30M") == 0,
            "swap.max"
        );
        ensure!(cg_write(m, &memcg, "memory.max", "30M") == 0, "max");
        // Should be killed by OOM killer.
        let rc = cg_run(m, &memcg, |m, pid| alloc_anon(m, pid, mb(100)));
        ensure!(rc != 0, "alloc_anon 100M was not killed");
        let oom = cg_read_key_long(m, &memcg, "memory.events", "oom ");
        ensure!(oom == 1, "oom {oom}");
        let kill = cg_read_key_long(m, &memcg, "memory.events", "oom_kill ");
        ensure!(kill == 1, "oom_kill {kill}");
        let peak = cg_read_long(m, &memcg, "memory.peak");
        ensure!(peak >= mb(29), "peak {peak}");
        let peak = cg_read_long(m, &memcg, "memory.swap.peak");
        ensure!(peak >= mb(29), "swap.peak {peak}");
        let peak = cg_read_long_fd(m, mem_peak_fd);
        ensure!(peak >= mb(29), "mem fd peak {peak}");
        let peak = cg_read_long_fd(m, swap_peak_fd);
        ensure!(peak >= mb(29), "swap fd peak {peak}");
        // Open, reset and close the peak on another FD to make sure
        // multiple extant fds don't corrupt the linked-list.
        ensure!(
            cg_write(m, &memcg, "memory.swap.peak", reset) == 0,
            "swap.peak write"
        );
        ensure!(cg_write(m, &memcg, "memory.peak", reset) == 0, "peak write");
        // Actually reset on the fds.
        ensure!(
            write_fd(m, swap_peak_fd, reset) == reset.len() as i64,
            "reset swap fd"
        );
        ensure!(
            write_fd(m, mem_peak_fd, reset) == reset.len() as i64,
            "reset mem fd"
        );
        let peak = cg_read_long_fd(m, swap_peak_fd);
        ensure!(peak <= mb(10), "swap fd after reset {peak}");
        // The cgroup is now empty, but there may be a page or two
        // associated with the open FD accounted to it.
        let peak = cg_read_long_fd(m, mem_peak_fd);
        ensure!(peak <= mb(1), "mem fd after reset {peak}");
        ensure!(cg_read_long(m, &memcg, "memory.peak") >= mb(29), "peak");
        ensure!(
            cg_read_long(m, &memcg, "memory.swap.peak") >= mb(29),
            "swap.peak"
        );
        let (rc, why) = run_check(m, &memcg, |m, cg, pid| {
            alloc_anon_50m_check_swap(m, cg, pid, mb(30))
        });
        ensure!(rc == 0, "alloc_anon_50M_check_swap: {why}");
        let max = cg_read_key_long(m, &memcg, "memory.events", "max ");
        ensure!(max > 0, "max events {max}");
        ensure!(cg_read_long(m, &memcg, "memory.peak") >= mb(29), "peak");
        ensure!(
            cg_read_long(m, &memcg, "memory.swap.peak") >= mb(29),
            "swap.peak"
        );
        let peak = cg_read_long_fd(m, mem_peak_fd);
        ensure!(peak >= mb(29), "mem fd {peak}");
        let peak = cg_read_long_fd(m, swap_peak_fd);
        ensure!(peak >= mb(19), "swap fd {peak}");
        Ok(())
    })();
    for fd in fds {
        if m.close_fd(fd).is_err() {
            return Err("close".into());
        }
    }
    cg_destroy(m, &memcg);
    ret
}

/// This test disables swapping and tries to allocate anonymous memory up
/// to OOM. Then it checks for oom and oom_kill events in memory.events.
fn test_memcg_oom_events(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "memcg_test", |m, memcg| {
        ensure!(cg_write(m, memcg, "memory.max", "30M") == 0, "max");
        ensure!(cg_write(m, memcg, "memory.swap.max", "0") == 0, "swap.max");
        let rc = cg_run(m, memcg, |m, pid| alloc_anon(m, pid, mb(100)));
        ensure!(rc != 0, "not killed");
        ensure!(
            cg_read_strcmp(m, memcg, "cgroup.procs", "") == 0,
            "procs left"
        );
        let oom = cg_read_key_long(m, memcg, "memory.events", "oom ");
        ensure!(oom == 1, "oom {oom}");
        let kill = cg_read_key_long(m, memcg, "memory.events", "oom_kill ");
        ensure!(kill == 1, "oom_kill {kill}");
        Ok(())
    })
}

/// `tcp_client`: reads 1 MiB at a time, up to 16 times, until
/// memory.current minus what was there before is close to `sock`.
fn tcp_client(m: &mut Machine, cgroup: &str, server: Pid) -> TestResult {
    let allocated = cg_read_long(m, cgroup, "memory.current");
    // The client (the test runner) runs outside the cgroup, on CPU 0.
    let sk = m.tcp_connect(server, 0).map_err(|e| e.to_string())?;
    let mut pass = false;
    let mut last = (0, 0);
    for _ in 0..0x10 {
        let n = m.tcp_recv(sk, 0x100000).map_err(|e| e.to_string())?;
        ensure!(n > 0, "read");
        let current = cg_read_long(m, cgroup, "memory.current");
        let sock = cg_read_key_long(m, cgroup, "memory.stat", "sock ");
        ensure!(current >= 0 && sock >= 0, "reads");
        last = (current - allocated, sock);
        // Exclude the memory not related to socket connection.
        if values_close(current - allocated, sock, 10) {
            pass = true;
            break;
        }
    }
    m.tcp_close(sk).map_err(|e| e.to_string())?;
    ensure!(
        pass,
        "current - allocated {} never close to sock {}",
        last.0,
        last.1
    );
    Ok(())
}

/// This test checks socket memory accounting: a TCP server in the cgroup
/// writes to its socket; the client interleaves reads with checks that
/// memory.current and memory.stat's sock are similar.
fn test_memcg_sock(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "memcg_test", |m, memcg| {
        let server = cg_run_nowait(m, memcg, |_, _| 0).ok_or("server")?;
        tcp_client(m, memcg, server)?;
        ensure!(!m.alive(server), "server did not exit");
        ensure!(cg_read_long(m, memcg, "memory.current") >= 0, "current");
        // memory.stat is updated asynchronously via the memcg rstat
        // flushing worker, which runs every 2 s (FLUSH_TIME): poll for up
        // to 3 s for sock to drop to zero.
        let sock_post = cg_read_key_long_poll(
            m,
            memcg,
            "memory.stat",
            "sock ",
            0,
            MEMCG_SOCKSTAT_WAIT_RETRIES,
            DEFAULT_WAIT_INTERVAL_US,
        );
        ensure!(sock_post == 0, "sock {sock_post} after the server exited");
        Ok(())
    })
}

/// `cg_test_proc_killed`: waits up to 1 s for cgroup.procs to empty.
fn cg_test_proc_killed(m: &mut Machine, cg: &str) -> bool {
    for _ in 0..10 {
        if cg_read_strcmp(m, cg, "cgroup.procs", "") == 0 {
            return true;
        }
        m.sleep(100_000_000);
    }
    false
}

/// The OOM of the `memory.oom.group` tests: a process holding 60M in
/// `parent` (where it can join), two holding 1M in `child`, then a third
/// in `child` allocating 100M, which must be killed along with every other
/// process of `child`.
fn oom_in_child(m: &mut Machine, parent: &str, child: &str) -> TestResult {
    cg_run_nowait(m, parent, |m, pid| alloc_anon_noexit(m, pid, mb(60)));
    cg_run_nowait(m, child, |m, pid| alloc_anon_noexit(m, pid, mb(1)));
    cg_run_nowait(m, child, |m, pid| alloc_anon_noexit(m, pid, mb(1)));
    let rc = cg_run(m, child, |m, pid| alloc_anon(m, pid, mb(100)));
    ensure!(rc != 0, "not killed");
    ensure!(cg_test_proc_killed(m, child), "child processes survive");
    Ok(())
}

/// OOM with memory.oom.group set on the leaf: every process of the leaf
/// is killed, and oom_kill events reach the parent.
fn test_memcg_oom_group_leaf_events(m: &mut Machine, root: &str) -> TestResult {
    let parent = cg_name(root, "memcg_test_0");
    let child = cg_name(root, "memcg_test_0/memcg_test_1");
    let ret = (|| {
        ensure!(cg_create(m, &parent) == 0, "create parent");
        ensure!(cg_create(m, &child) == 0, "create child");
        ensure!(
            cg_write(m, &parent, "cgroup.subtree_control", "+memory") == 0,
            "+memory"
        );
        ensure!(cg_write(m, &child, "memory.max", "50M") == 0, "max");
        ensure!(cg_write(m, &child, "memory.swap.max", "0") == 0, "swap.max");
        ensure!(
            cg_write(m, &child, "memory.oom.group", "1") == 0,
            "oom.group"
        );
        // The parent has controllers in its subtree_control: the 60M
        // process cannot join it (no internal processes), as in the kernel.
        oom_in_child(m, &parent, &child)?;
        let kills = cg_read_key_long(m, &child, "memory.events", "oom_kill ");
        ensure!(kills > 0, "child oom_kill {kills}");
        let parent_oom_events = cg_read_key_long(m, &parent, "memory.events", "oom_kill ");
        // Without memory_localevents the parent counts its children's
        // events; with it, none.
        ensure!(
            !(HAS_LOCALEVENTS && parent_oom_events != 0),
            "parent oom_kill {parent_oom_events}"
        );
        ensure!(
            !(!HAS_LOCALEVENTS && parent_oom_events <= 0),
            "parent oom_kill {parent_oom_events}"
        );
        Ok(())
    })();
    cg_destroy(m, &child);
    cg_destroy(m, &parent);
    ret
}

/// OOM with memory.oom.group set on the parent: every process of the
/// parent and of the leaf is killed.
fn test_memcg_oom_group_parent_events(m: &mut Machine, root: &str) -> TestResult {
    let parent = cg_name(root, "memcg_test_0");
    let child = cg_name(root, "memcg_test_0/memcg_test_1");
    let ret = (|| {
        ensure!(cg_create(m, &parent) == 0, "create parent");
        ensure!(cg_create(m, &child) == 0, "create child");
        ensure!(cg_write(m, &parent, "memory.max", "80M") == 0, "max");
        ensure!(
            cg_write(m, &parent, "memory.swap.max", "0") == 0,
            "swap.max"
        );
        ensure!(
            cg_write(m, &parent, "memory.oom.group", "1") == 0,
            "oom.group"
        );
        oom_in_child(m, &parent, &child)?;
        ensure!(cg_test_proc_killed(m, &parent), "parent processes survive");
        Ok(())
    })();
    cg_destroy(m, &child);
    cg_destroy(m, &parent);
    ret
}

/// OOM with memory.oom.group set: every process is killed except those
/// with OOM_SCORE_ADJ_MIN.
fn test_memcg_oom_group_score_events(m: &mut Machine, root: &str) -> TestResult {
    with_cgroup(m, root, "memcg_test_0", |m, memcg| {
        ensure!(cg_write(m, memcg, "memory.max", "50M") == 0, "max");
        ensure!(cg_write(m, memcg, "memory.swap.max", "0") == 0, "swap.max");
        ensure!(
            cg_write(m, memcg, "memory.oom.group", "1") == 0,
            "oom.group"
        );
        let safe_pid =
            cg_run_nowait(m, memcg, |m, pid| alloc_anon_noexit(m, pid, mb(1))).ok_or("safe")?;
        ensure!(
            m.set_oom_score_adj(safe_pid, OOM_SCORE_ADJ_MIN).is_ok(),
            "set_oom_adj_score"
        );
        cg_run_nowait(m, memcg, |m, pid| alloc_anon_noexit(m, pid, mb(1)));
        let rc = cg_run(m, memcg, |m, pid| alloc_anon(m, pid, mb(100)));
        ensure!(rc != 0, "not killed");
        let kills = cg_read_key_long(m, memcg, "memory.events", "oom_kill ");
        ensure!(kills == 3, "oom_kill {kills}, expected 3");
        ensure!(
            m.alive(safe_pid),
            "the OOM_SCORE_ADJ_MIN process was killed"
        );
        m.exit(safe_pid).map_err(|e| e.to_string())?;
        Ok(())
    })
}

selftests! { test_memcontrol:
    test_memcg_subtree_control,
    test_memcg_current_peak,
    test_memcg_min,
    test_memcg_low,
    test_memcg_high,
    test_memcg_high_sync,
    test_memcg_max,
    test_memcg_reclaim,
    test_memcg_oom_events,
    test_memcg_swap_max_peak,
    test_memcg_sock,
    test_memcg_oom_group_leaf_events,
    test_memcg_oom_group_parent_events,
    test_memcg_oom_group_score_events,
}

/// `alloc_anon_mlock`-style single-entry allocation that is not throttled
/// runs to `max`: the test above can fail.
#[test]
fn high_sync_fails_without_synchronous_throttling() {
    let mut m = machine(hierstat::Preset::Linux6_8, 4);
    m.mkdir("/g").unwrap();
    m.write("/g", "memory.swap.max", "0").unwrap();
    m.write("/g", "memory.max", "140M").unwrap();
    let pid = m.spawn("/g").unwrap();
    m.begin_alloc_anon(pid, mb(200) as u64, true).unwrap();
    // Without memory.high nothing throttles: the entry runs into max and
    // the OOM killer.
    assert_eq!(m.resume(pid), Outcome::Killed);
    assert!(cg_read_key_long(&mut m, "/g", "memory.events", "max ") > 0);
}
