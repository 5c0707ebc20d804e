//! The stale-read reproducer (`mmlab run stale-read-kernel --reproducer
//! FILE`) run as a kernel developer runs it, under `/bin/sh`, and stopped
//! by every kind of signal a shell can trap: each time its cgroups and its
//! `/dev/shm` file are gone afterwards, no process of it is left, and it
//! ended by the signal it got. Needs root and a writable memory cgroup
//! controller; where the host lacks either, the test prints `skipped:
//! <reason>` and returns. Every wait is on a condition (a line of the
//! script's output, its exit), never a sleep.

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// Where the script makes its groups: the memory controller's root, as
/// the script finds it.
fn memory_root() -> PathBuf {
    if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        return PathBuf::from("/sys/fs/cgroup");
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    mounts
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.len() > 3 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "memory"))
        .map(|f| PathBuf::from(f[1]))
        .expect("a memory controller")
}

/// What one run of the script made: its parent group, its child group and
/// its tmpfs file (named after the script's pid).
struct Made {
    pid: i32,
    parent: PathBuf,
    child: PathBuf,
    file: PathBuf,
}

impl Made {
    fn of(pid: u32) -> Made {
        let parent = memory_root().join(format!("memcg-stale-read-{pid}"));
        Made {
            pid: pid as i32,
            child: parent.join("child"),
            parent,
            file: PathBuf::from(format!("/dev/shm/memcg-stale-read-{pid}")),
        }
    }

    /// Processes still in the script's process group.
    fn processes_left(&self) -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    let after = s.rsplit(')').next().unwrap_or("");
                    let f: Vec<&str> = after.split_whitespace().collect();
                    // state, ppid, pgrp; a zombie is not left running.
                    f.len() > 2 && f[0] != "Z" && f[2] == self.pid.to_string()
                })
            })
            .collect()
    }

    /// What is left behind, in words (empty: nothing).
    fn left(&self) -> Vec<String> {
        let mut v = Vec::new();
        for p in [&self.child, &self.parent, &self.file] {
            if p.exists() {
                v.push(p.display().to_string());
            }
        }
        let procs = self.processes_left();
        if !procs.is_empty() {
            v.push(format!("processes {procs:?}"));
        }
        v
    }

    /// Removes whatever a failed run left, so the host stays clean.
    fn sweep(&self) {
        // SAFETY: kill(2) of the script's own process group.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        let _ = std::fs::remove_file(&self.file);
        for g in [&self.child, &self.parent] {
            for _ in 0..100 {
                if !g.exists() || std::fs::remove_dir(g).is_ok() {
                    break;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// `sh SCRIPT` in its own process group, its output piped, its errors in
/// a file.
fn start(script: &Path, err: &Path) -> Child {
    Command::new("sh")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// One run of the script stopped by `sig`: sent once it has made its
/// groups and charged its file (its `try 1:` line), or, for `SIGPIPE`,
/// its output closed after its first line (as `| head -1` does). `None`
/// when the script ended on its own before the signal (its verdict line
/// printed, nothing left): inconclusive.
fn stopped_by(script: &Path, dir: &Path, sig: i32) -> Option<(ExitStatus, Made, String)> {
    let err = dir.join("stderr.txt");
    let mut child = start(script, &err);
    let made = Made::of(child.id());
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    if sig == libc::SIGPIPE {
        out.read_line(&mut seen).unwrap();
        drop(out);
    } else {
        loop {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap() == 0 {
                break;
            }
            seen.push_str(&line);
            if line.starts_with("try ") {
                // SAFETY: kill(2) of our own child.
                #[allow(unsafe_code)]
                unsafe {
                    libc::kill(made.pid, sig);
                }
                break;
            }
        }
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut rest);
        seen.push_str(&rest);
    }
    let status = child.wait().unwrap();
    seen.push_str(&std::fs::read_to_string(&err).unwrap_or_default());
    let verdict = seen.contains("STALE:") || seen.contains("not reproduced");
    let own_end = status.code().is_some() && (verdict || sig == libc::SIGPIPE);
    (!own_end || !made.left().is_empty()).then_some((status, made, seen))
}

#[test]
fn the_reproducer_cleans_up_on_every_signal_a_shell_can_trap() {
    let Some((_host, _serial)) =
        crate::support::host_or_skip("the_reproducer_cleans_up_on_every_signal_a_shell_can_trap")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("stale.sh");
    let o = Command::new(env!("CARGO_BIN_EXE_mmlab"))
        .args(["run", "stale-read-kernel", "--reproducer"])
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut failures = Vec::new();
    for (name, sig) in [
        ("SIGHUP", libc::SIGHUP),
        ("SIGINT", libc::SIGINT),
        ("SIGQUIT", libc::SIGQUIT),
        ("SIGPIPE", libc::SIGPIPE),
        ("SIGTERM", libc::SIGTERM),
        ("SIGUSR1", libc::SIGUSR1),
        ("SIGALRM", libc::SIGALRM),
    ] {
        // A run that ended before the signal reached it proves nothing:
        // tried again (a few times at most).
        let Some((status, made, seen)) = (0..5).find_map(|_| stopped_by(&script, dir.path(), sig))
        else {
            failures.push(format!("{name}: the script always ended before the signal"));
            continue;
        };
        let left = made.left();
        if !left.is_empty() {
            failures.push(format!(
                "{name}: left {left:?} ({status}); it said:\n{seen}"
            ));
        } else if status.signal() != Some(sig) {
            failures.push(format!(
                "{name}: ended by {status}, not by its signal:\n{seen}"
            ));
        }
        made.sweep();
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
