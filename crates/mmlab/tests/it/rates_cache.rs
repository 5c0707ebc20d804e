//! The host-speed cache of the pre-run estimates (`pipeline::rates`):
//! whatever is left at the cache's or the lock's path (the lock of a
//! process killed while it measured, a lock another process holds, a
//! directory, a FIFO, a link to `/dev/zero`), `mmlab run X --estimate`
//! finishes promptly and says what it did, instead of waiting silently or
//! reading without end (issue 35).
//!
//! Each case runs the binary with its own cache folder
//! (`XDG_CACHE_HOME`), under `ulimit -v` (a read without end fails instead
//! of exhausting the host), with a deadline past which it counts as a hang.

use crate::common::TINY_READERS;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// Longer than a debug build's measurement on a busy 2-CPU host, shorter
/// than the 120 s the unfixed lock waited.
const DEADLINE: Duration = Duration::from_secs(90);

/// Address-space limit of the binary (`ulimit -v`, KiB).
const VMEM_LIMIT_KIB: u64 = 4 << 20;

/// `dir` with the scenario `tiny.toml`; its cache folder is `dir/cache`.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), TINY_READERS).unwrap();
    std::fs::create_dir_all(cache_dir(dir.path())).unwrap();
    dir
}

fn cache_dir(dir: &Path) -> PathBuf {
    dir.join("cache").join("mmlab")
}

fn cache(dir: &Path) -> PathBuf {
    cache_dir(dir).join("rates.toml")
}

fn lock(dir: &Path) -> PathBuf {
    cache_dir(dir).join("rates.toml.lock")
}

/// `mmlab run tiny.toml --estimate` in `dir`, its cache in `dir/cache`,
/// its stderr lines sent to the receiver as they come.
fn estimate(dir: &Path) -> (Child, Receiver<String>) {
    let script = format!(
        "ulimit -v {VMEM_LIMIT_KIB} 2>/dev/null; exec {} run tiny.toml --estimate",
        env!("CARGO_BIN_EXE_mmlab")
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Waits for `child` to exit, at most [`DEADLINE`] (then kills it and
/// fails): its success and its stderr.
fn finish(what: &str, mut child: Child, rx: &Receiver<String>) -> (bool, String) {
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            let seen: Vec<String> = rx.try_iter().collect();
            panic!(
                "{what}: still running after {DEADLINE:?} (a hang); stderr so far: {}",
                seen.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The reader thread ends with the pipe.
    let mut err = Vec::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(10)) {
        err.push(l);
    }
    (status.success(), err.join("\n"))
}

/// The lock of a process killed (`kill -9`) while it measured is no
/// lock: the next command measures at once, without waiting.
#[test]
fn a_killed_measurement_leaves_no_lock_that_blocks() {
    let dir = setup();
    let d = dir.path();
    let (mut first, _rx) = estimate(d);
    let t = Instant::now();
    while !lock(d).exists() {
        assert!(t.elapsed() < DEADLINE, "the first process never locked");
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first process ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    first.kill().unwrap(); // SIGKILL: no destructor runs
    first.wait().unwrap();
    let (child, rx) = estimate(d);
    let (ok, err) = finish("after a kill -9", child, &rx);
    assert!(ok, "{err}");
    assert!(!err.contains("waiting"), "{err}");
    assert!(err.contains("measured this host's"), "{err}");
    assert!(cache(d).is_file(), "{err}");
}

/// A lock another process holds is waited for, saying so, and the
/// command goes on once it is released.
#[test]
fn a_held_lock_is_waited_for_with_a_message() {
    let dir = setup();
    let d = dir.path();
    let held = std::fs::File::create(lock(d)).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let (child, rx) = estimate(d);
    let t = Instant::now();
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) if l.contains("waiting for another mmlab") => break,
            Ok(l) => seen.push(l),
            Err(_) => {}
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no message while the lock is held; stderr: {}",
            seen.join("\n")
        );
    }
    drop(held);
    let (ok, err) = finish("after the lock was released", child, &rx);
    assert!(ok, "{err}");
    assert!(err.contains("cached in"), "{err}");
}

/// A directory at the lock's path cannot be locked: the command measures
/// for itself without the cache and says so.
#[test]
fn a_lock_path_that_is_a_directory_is_not_waited_for() {
    let dir = setup();
    let d = dir.path();
    std::fs::create_dir(lock(d)).unwrap();
    let (child, rx) = estimate(d);
    let (ok, err) = finish("a directory as the lock", child, &rx);
    assert!(ok, "{err}");
    assert!(
        err.contains("cannot lock") && err.contains("not cached"),
        "{err}"
    );
}

/// A FIFO at the cache's path is neither read (it would block until a
/// writer came) nor replaced.
#[test]
fn a_fifo_cache_is_not_read() {
    let dir = setup();
    let d = dir.path();
    assert!(Command::new("mkfifo")
        .arg(cache(d))
        .status()
        .unwrap()
        .success());
    let (child, rx) = estimate(d);
    let (ok, err) = finish("a FIFO as the cache", child, &rx);
    assert!(ok, "{err}");
    assert!(err.contains("FIFO") && err.contains("not cached"), "{err}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(cache(d))
        .unwrap()
        .file_type()
        .is_fifo());
}

/// A link to `/dev/zero` at the cache's path is not read (it never ends).
#[test]
fn a_cache_linked_to_dev_zero_is_not_read() {
    let dir = setup();
    let d = dir.path();
    std::os::unix::fs::symlink("/dev/zero", cache(d)).unwrap();
    let (child, rx) = estimate(d);
    let (ok, err) = finish("/dev/zero as the cache", child, &rx);
    assert!(ok, "{err}");
    assert!(
        err.contains("a device") && err.contains("not cached"),
        "{err}"
    );
}
