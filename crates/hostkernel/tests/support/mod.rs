//! What the kernel-mode tests of every crate share (`hostkernel`,
//! `kernelmode` and `mmlab` include this file): the host or a printed skip,
//! one kernel test at a time, and the checks that nothing was left behind.

// Each test binary uses its own part of the support.
#![allow(dead_code)]

use hostkernel::{parse_subtree_name, Host};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The kernel tests of one binary run one at a time: each creates
/// subtrees, every subtree creation sweeps stale ones, and each test checks
/// that no subtree of its process is left.
static SERIAL: Mutex<()> = Mutex::new(());

/// The host and the serial lock, or `None` after printing why kernel mode
/// cannot run here.
pub fn host_or_skip(test: &str) -> Option<(Host, MutexGuard<'static, ()>)> {
    match Host::detect() {
        Ok(h) => Some((h, SERIAL.lock().unwrap_or_else(|e| e.into_inner()))),
        Err(e) if e.is_host_unsupported() => {
            eprintln!("{test}: skipped: {e}");
            None
        }
        Err(e) => panic!("{test}: detection failed: {e}"),
    }
}

/// Whether process `pid` runs (a zombie still has `/proc/<pid>`: its state
/// is checked too).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// Waits up to `within` for `pid` to be gone; whether it is.
pub fn wait_gone(pid: i32, within: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < within {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    !alive(pid)
}

/// Top-level subtrees of `owner_pid` under the host's base.
pub fn subtrees_of(host: &Host, owner_pid: i32) -> Vec<PathBuf> {
    std::fs::read_dir(host.base())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(parse_subtree_name)
                .is_some_and(|o| o.pid == owner_pid)
        })
        .map(|e| e.path())
        .collect()
}

/// Top-level subtrees of this process.
pub fn own_subtrees(host: &Host) -> Vec<PathBuf> {
    subtrees_of(host, std::process::id() as i32)
}
