//! The selftests' `cgroup_util` for the model: the same helpers, reading
//! and writing a [`Machine`]'s interface files; and the matrix every ported
//! test runs on (every preset, 4 and 64 CPUs; more CPU counts with
//! `MMLAB_SELFTEST_CPUS=4,64,128,256`).

#![allow(dead_code)]

use hierstat::Preset;
use models::machine::{Fd, Machine, MachineConfig, Pid};

/// What a ported test returns: `Err` names the failed check.
pub type TestResult = Result<(), String>;

/// Fails the test with a message unless `cond` holds (the C tests'
/// `if (!cond) goto cleanup;`).
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// `MB(x)`.
pub const fn mb(x: i64) -> i64 {
    x << 20
}

/// `PAGE_SIZE`.
pub const PAGE_SIZE: i64 = 4096;

/// `DEFAULT_WAIT_INTERVAL_US` of `cgroup_util.h`: the interval of the
/// polling reads.
pub const DEFAULT_WAIT_INTERVAL_US: u64 = 100 * 1000;

/// `values_close()` of `cgroup_util.h`: `|a − b| ≤ (a + b) / 100 × err`,
/// integer arithmetic, relative to the sum.
pub fn values_close(a: i64, b: i64, err: i64) -> bool {
    (a - b).abs() <= (a + b) / 100 * err
}

/// `cg_name(root, name)`.
pub fn cg_name(root: &str, name: &str) -> String {
    format!("{}/{}", root.trim_end_matches('/'), name)
}

/// `cg_name_indexed(root, name, i)`.
pub fn cg_name_indexed(root: &str, name: &str, i: usize) -> String {
    format!("{}/{}_{}", root.trim_end_matches('/'), name, i)
}

/// `cg_create`: 0 or -1.
pub fn cg_create(m: &mut Machine, cg: &str) -> i32 {
    if m.mkdir(cg).is_ok() {
        0
    } else {
        -1
    }
}

/// `cg_destroy`: kills the subtree's processes, removes it; a missing
/// cgroup is fine.
pub fn cg_destroy(m: &mut Machine, cg: &str) {
    if m.cgroup(cg).is_ok() {
        m.destroy(cg).expect("cg_destroy");
    }
}

/// Runs `test` on a new cgroup `cg_name(root, name)` and destroys the
/// cgroup whatever `test` returns: a C test's `cg_create(cg)` … `cleanup:
/// cg_destroy(cg)`. A failed `cg_create` fails with "create".
pub fn with_cgroup(
    m: &mut Machine,
    root: &str,
    name: &str,
    test: impl FnOnce(&mut Machine, &str) -> TestResult,
) -> TestResult {
    let cg = cg_name(root, name);
    let ret = if cg_create(m, &cg) == 0 {
        test(m, &cg)
    } else {
        Err("create".into())
    };
    cg_destroy(m, &cg);
    ret
}

/// `cg_read`.
pub fn cg_read(m: &mut Machine, cg: &str, file: &str) -> Option<String> {
    m.read(cg, file).ok()
}

/// `atol`: the leading integer of `s` (0 if none).
pub fn atol(s: &str) -> i64 {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(s.len(), |(i, _)| i);
    s[..end].parse().unwrap_or(0)
}

/// `cg_read_long`: -1 on error.
pub fn cg_read_long(m: &mut Machine, cg: &str, file: &str) -> i64 {
    m.read(cg, file).map_or(-1, |s| atol(&s))
}

/// `cg_read_key_long`: the number after the first occurrence of `key`
/// (`strstr`), -1 if absent.
pub fn cg_read_key_long(m: &mut Machine, cg: &str, file: &str, key: &str) -> i64 {
    let Ok(s) = m.read(cg, file) else { return -1 };
    match s.find(key) {
        Some(i) => atol(&s[i + key.len()..]),
        None => -1,
    }
}

/// `cg_read_key_long_poll`: re-reads every `interval_us` of virtual time
/// until the value equals `expected`, at most `retries` times; returns the
/// last value.
pub fn cg_read_key_long_poll(
    m: &mut Machine,
    cg: &str,
    file: &str,
    key: &str,
    expected: i64,
    retries: u32,
    interval_us: u64,
) -> i64 {
    let mut v = -1;
    for _ in 0..retries {
        v = cg_read_key_long(m, cg, file, key);
        if v == expected || v < 0 {
            break;
        }
        m.sleep(interval_us * 1000);
    }
    v
}

/// `cg_read_strcmp`: 0 when equal.
pub fn cg_read_strcmp(m: &mut Machine, cg: &str, file: &str, expected: &str) -> i32 {
    match m.read(cg, file) {
        Ok(s) if s == expected => 0,
        _ => -1,
    }
}

/// `cg_read_strstr`: 0 when `needle` is found.
pub fn cg_read_strstr(m: &mut Machine, cg: &str, file: &str, needle: &str) -> i32 {
    match m.read(cg, file) {
        Ok(s) if s.contains(needle) => 0,
        _ => -1,
    }
}

/// `cg_write`: 0 or a negative errno.
pub fn cg_write(m: &mut Machine, cg: &str, file: &str, value: &str) -> i32 {
    match m.write(cg, file, value) {
        Ok(()) => 0,
        Err(e) => e.errno(),
    }
}

/// `cg_open`.
pub fn cg_open(m: &mut Machine, cg: &str, file: &str) -> Option<Fd> {
    m.open(cg, file).ok()
}

/// `cg_read_long_fd`.
pub fn cg_read_long_fd(m: &mut Machine, fd: Fd) -> i64 {
    m.read_fd(fd).map_or(-1, |s| atol(&s))
}

/// `write(fd, ...)`: bytes written or -1.
pub fn write_fd(m: &mut Machine, fd: Fd, value: &str) -> i64 {
    match m.write_fd(fd, value) {
        Ok(()) => value.len() as i64,
        Err(_) => -1,
    }
}

/// `cg_run`: forks into `cg`, runs `f` in the child; the child's exit
/// status, or -1 if it was killed.
pub fn cg_run(m: &mut Machine, cg: &str, f: impl FnOnce(&mut Machine, Pid) -> i32) -> i32 {
    let Ok(pid) = m.spawn(cg) else { return -1 };
    let r = f(m, pid);
    if !m.alive(pid) {
        return -1;
    }
    m.exit(pid).expect("exit");
    r
}

/// `cg_run_nowait`: forks into `cg` and runs `f` up to where the child
/// would wait (its `noexit` loop); the pid, or `None` if the fork or the
/// move into `cg` failed.
pub fn cg_run_nowait(
    m: &mut Machine,
    cg: &str,
    f: impl FnOnce(&mut Machine, Pid) -> i32,
) -> Option<Pid> {
    let pid = m.spawn(cg).ok()?;
    f(m, pid);
    Some(pid)
}

/// `alloc_anon(cgroup, size)`: malloc, touch, free.
pub fn alloc_anon(m: &mut Machine, pid: Pid, size: i64) -> i32 {
    if !m.alloc_anon(pid, size as u64).is_done() {
        return -1;
    }
    m.free_anon(pid).map_or(-1, |_| 0)
}

/// `alloc_anon_noexit(cgroup, size)`: malloc and touch, then wait.
pub fn alloc_anon_noexit(m: &mut Machine, pid: Pid, size: i64) -> i32 {
    if m.alloc_anon(pid, size as u64).is_done() {
        0
    } else {
        -1
    }
}

/// The CPU counts of the matrix.
pub fn cpu_counts() -> Vec<usize> {
    std::env::var("MMLAB_SELFTEST_CPUS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![4, 64])
}

/// A machine as the selftests find it: `+memory` in the root's
/// `cgroup.subtree_control` (their `main()` enables it), swap on.
pub fn machine(preset: Preset, cpus: usize) -> Machine {
    let mut m = Machine::new(MachineConfig::new(cpus).preset(preset)).expect("machine");
    m.write("/", "cgroup.subtree_control", "+memory")
        .expect("+memory");
    m
}

/// Runs `test` on a fresh machine for every preset and CPU count; panics
/// with every failing combination.
pub fn run_matrix(name: &str, test: fn(&mut Machine, &str) -> TestResult) {
    let mut failures = Vec::new();
    for preset in Preset::ALL {
        for cpus in cpu_counts() {
            let mut m = machine(preset, cpus);
            if let Err(e) = test(&mut m, "/") {
                failures.push(format!("{name} [{preset}, {cpus} CPUs]: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The `#[test]`s of a ported selftest file, in a module named after the C
/// file: `selftests! { test_kmem: test_kmem_basic, ... }` makes
/// `test_kmem::test_kmem_basic`, which runs the file's `test_kmem_basic`
/// on the matrix ([`run_matrix`]).
#[macro_export]
macro_rules! selftests {
    ($file:ident: $($test:ident),+ $(,)?) => {
        mod $file {
            $(
                #[test]
                fn $test() {
                    $crate::common::run_matrix(stringify!($test), super::$test);
                }
            )+
        }
    };
}
