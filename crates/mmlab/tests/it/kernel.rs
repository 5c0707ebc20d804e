//! Kernel mode end to end through the `mmlab` binary: a kernel scenario run
//! with `--compare-sim`, stored with its run facts; Ctrl-C mid-run leaves
//! no cgroup and no process. Needs root and a writable memory cgroup
//! controller; where the host lacks either, each test prints
//! `skipped: <reason>` and returns.

use hostkernel::{procs_of, subtree_dirs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{alive, host_or_skip, subtrees_of};

fn mmlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmlab"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const SMALL_STALE: &str = "kind = \"kernel\"\nmode = \"kernel\"\nname = \"stale-small\"\n\
experiment = \"stale-read\"\n\n[stale_read]\nspikes_kib = [64, 1024]\nrepetitions = 10\npause_ms = 1.0\n";

#[test]
fn a_kernel_run_is_compared_with_the_simulation_and_stored_with_its_facts() {
    let Some((_host, _serial)) =
        host_or_skip("a_kernel_run_is_compared_with_the_simulation_and_stored_with_its_facts")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", SMALL_STALE);
    let db = dir.path().join("m.db");
    let o = mmlab()
        .args(["run", file.to_str().unwrap(), "--compare-sim", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for want in [
        "stale-small/kernel/1/0",
        "cgroup_version: v",
        "kernel_release: ",
        "host kernel vs simulated linux-6.17",
        "stat lag p50, 64 KiB spike",
        "threshold_pages",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let show = mmlab()
        .args(["show", "last", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success(), "{shown}");
    assert!(
        shown.contains(&format!("kernel_release: {}", release.trim())),
        "{shown}"
    );
    assert!(shown.contains("cgroup_version: v"), "{shown}");
    assert!(shown.contains("gap_after_charge_pages_64kib"), "{shown}");
}

#[test]
fn compare_sim_refuses_a_simulated_scenario() {
    let o = mmlab()
        .args(["run", "stale-read", "--compare-sim", "--no-store"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--compare-sim"), "{err}");
}

#[test]
fn sigint_mid_run_leaves_no_cgroup_and_no_process() {
    let Some((host, _serial)) = host_or_skip("sigint_mid_run_leaves_no_cgroup_and_no_process")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Two writers and a reader for ~20 s: long enough to be interrupted.
    let file = write(
        dir.path(),
        "r.toml",
        "kind = \"kernel\"\nmode = \"kernel\"\nname = \"readers-long\"\nexperiment = \"stat-readers\"\n\n\
         [stat_readers]\ngroups = [50]\nwriters = [2]\nreads_per_reader = 20000\nperiod_ms = 1.0\n",
    );
    let db = dir.path().join("m.db");
    let mut child = mmlab()
        .args(["run", file.to_str().unwrap(), "--db"])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Wait until both writers run inside the run's subtree.
    let t = Instant::now();
    let (top, workers) = loop {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the run never started its writers"
        );
        if let Some(top) = subtrees_of(&host, pid).into_iter().next() {
            let pids: Vec<i32> = subtree_dirs(&top)
                .iter()
                .flat_map(|d| procs_of(d))
                .collect();
            if pids.len() >= 2 {
                break (top, pids);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let st = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("mmlab did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}: {err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(!top.exists(), "{} left behind", top.display());
    assert!(subtrees_of(&host, pid).is_empty());
    for w in workers {
        assert!(!alive(w), "worker {w} left behind");
    }
    // Nothing was stored for the interrupted run.
    let h = mmlab().args(["history", "--db"]).arg(&db).output().unwrap();
    let listed = String::from_utf8_lossy(&h.stdout);
    assert!(!listed.contains("readers-long"), "{listed}");
}

#[test]
fn without_root_a_kernel_run_says_what_is_missing() {
    // Needs root to drop to an unprivileged user, and setpriv(1).
    let is_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let has_setpriv = Command::new("setpriv")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !is_root || !has_setpriv {
        eprintln!(
            "without_root_a_kernel_run_says_what_is_missing: skipped: needs root and setpriv(1)"
        );
        return;
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_mmlab"))
        .args(["run", "update-path-kernel", "--no-store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("Permission denied") {
        eprintln!("without_root_a_kernel_run_says_what_is_missing: skipped: the binary is not executable by uid 65534");
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("kernel mode needs root (effective uid 0); running as uid 65534"),
        "{err}"
    );
    assert_eq!(err.matches("needs root").count(), 1, "said once: {err}");
}

/// The suite's kernel section goes through the same pipeline as every
/// scenario: its estimate is checked before anything runs (a limit below
/// it refuses the suite up front), and it shows progress (plain lines on a
/// pipe). Without kernel mode the scenario is skipped with the reason.
#[test]
fn the_suite_kernel_section_checks_the_estimate_and_shows_progress() {
    let dir = tempfile::tempdir().unwrap();
    let suite = |extra: &[&str]| {
        mmlab()
            .current_dir(dir.path())
            .args([
                "suite",
                "--quick",
                "--no-store",
                "--only",
                "stale-read-kernel",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let Some((_host, _serial)) =
        host_or_skip("the_suite_kernel_section_checks_the_estimate_and_shows_progress")
    else {
        let o = suite(&[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("stale-read-kernel        skipped: "), "{out}");
        return;
    };
    let o = suite(&["--max-seconds", "0.000001"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("estimate") && err.contains("--force"), "{err}");
    let o = suite(&[]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}\n{err}");
    assert!(err.contains("stale-read-kernel: 0/"), "no progress: {err}");
    assert!(err.contains("run 1 step"), "no progress steps: {err}");
    assert!(out.contains("stale-read-kernel"), "{out}");
}
