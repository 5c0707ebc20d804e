//! RAII ownership of a cgroup subtree, and the sweep of subtrees left by a
//! run that was killed (`kill -9`, power loss).
//!
//! Every subtree kernel mode creates is one directory directly under the
//! memory hierarchy's root named
//! `mmlab-kernel.<owner pid>.<owner start time>.<nonce>`. The owner's start
//! time (field 22 of `/proc/<pid>/stat`, clock ticks since boot) makes the
//! owner identity survive pid reuse: a subtree is *stale* when no process
//! with that pid and that start time exists. Nothing else is ever touched:
//! the sweep ignores every name that does not parse exactly.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::detect::{CgroupVersion, Host};
use crate::error::Error;
use crate::sys::query;
use simcore::Cancel;

/// Prefix of every top-level cgroup kernel mode creates.
pub const NAME_PREFIX: &str = "mmlab-kernel.";

/// How long removal keeps retrying one directory (`rmdir` answers `EBUSY`
/// while the kernel finishes tearing down exited tasks).
const RMDIR_PATIENCE: Duration = Duration::from_secs(5);

/// The owner recorded in a subtree's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The owning process id.
    pub pid: i32,
    /// Its start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub start_ticks: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Result<Owner, Error> {
        let pid = std::process::id() as i32;
        let start_ticks = proc_start_ticks(pid)?.ok_or_else(|| Error::Parse {
            what: "/proc/self/stat".into(),
            detail: "own process not found".into(),
        })?;
        Ok(Owner { pid, start_ticks })
    }

    /// Whether the owner is still running (same pid *and* start time).
    pub fn is_alive(&self) -> bool {
        matches!(proc_start_ticks(self.pid), Ok(Some(t)) if t == self.start_ticks)
    }
}

/// Parses the start time (field 22) out of `/proc/<pid>/stat` text. The
/// command name (field 2) may contain spaces and parentheses, so fields are
/// counted after the *last* `)`.
pub fn parse_stat_start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after ')' start at field 3 (state); field 22 is index 19.
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn proc_start_ticks(pid: i32) -> Result<Option<u64>, Error> {
    let path = format!("/proc/{pid}/stat");
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_stat_start_ticks(&text)
            .map(Some)
            .ok_or_else(|| Error::Parse {
                what: path,
                detail: "no start time field".into(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // ESRCH: the process went away while we read.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(None),
        Err(e) => Err(Error::io("read", path, e)),
    }
}

/// Builds a subtree name for `owner`.
pub fn subtree_name(owner: Owner, nonce: u64) -> String {
    format!("{NAME_PREFIX}{}.{}.{nonce}", owner.pid, owner.start_ticks)
}

/// Parses a name made by [`subtree_name`]; `None` for any other name.
pub fn parse_subtree_name(name: &str) -> Option<Owner> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let mut it = rest.split('.');
    let pid: i32 = it.next()?.parse().ok()?;
    let start_ticks: u64 = it.next()?.parse().ok()?;
    let _nonce: u64 = it.next()?.parse().ok()?;
    if it.next().is_some() || pid <= 0 {
        return None;
    }
    Some(Owner { pid, start_ticks })
}

/// What [`sweep_stale`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Stale subtrees removed.
    pub removed: Vec<PathBuf>,
    /// Processes killed inside them.
    pub killed: Vec<i32>,
    /// Stale subtrees that could not be removed.
    pub failed: Vec<PathBuf>,
}

/// Removes kernel-mode subtrees under `base` whose owner is dead, killing any
/// process left in them first. Live owners' subtrees are left alone.
pub fn sweep_stale(base: &Path) -> Result<SweepReport, Error> {
    let mut report = SweepReport::default();
    let entries = std::fs::read_dir(base).map_err(|e| Error::io("read_dir", base, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(parse_subtree_name) else {
            continue;
        };
        if owner.is_alive() {
            continue;
        }
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let left = remove_subtree(&path, &mut report.killed);
        if left.is_empty() {
            report.removed.push(path);
        } else {
            report.failed.push(path);
        }
    }
    Ok(report)
}

/// Pids listed in `dir/cgroup.procs` (empty if the file is gone).
pub fn procs_of(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Every directory of the subtree rooted at `top`, parents before children.
pub fn subtree_dirs(top: &Path) -> Vec<PathBuf> {
    let mut out = vec![top.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            let mut kids: Vec<PathBuf> = rd
                .flatten()
                .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
                .map(|e| e.path())
                .collect();
            kids.sort();
            out.extend(kids);
        }
        i += 1;
    }
    out
}

/// Kills every process in `dir` (never this process) and waits, up to
/// `patience`, for `cgroup.procs` to empty.
fn empty_cgroup(dir: &Path, killed: &mut Vec<i32>, patience: Duration) {
    let me = std::process::id() as i32;
    let deadline = Instant::now() + patience;
    loop {
        let pids: Vec<i32> = procs_of(dir)
            .into_iter()
            .filter(|&p| p != me && p > 0)
            .collect();
        if pids.is_empty() || Instant::now() >= deadline {
            return;
        }
        for p in pids {
            if query::kill_pid(p).is_ok() && !killed.contains(&p) {
                killed.push(p);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `rmdir` with retries while the kernel answers `EBUSY`/`EAGAIN`; a missing
/// directory counts as removed.
fn rmdir_patiently(dir: &Path, patience: Duration) -> bool {
    let deadline = Instant::now() + patience;
    let mut pause = Duration::from_micros(500);
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
            Err(_) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(_) => return !dir.exists(),
        }
    }
}

/// Removes the subtree at `top` children-first, killing the processes in
/// each group first. Returns the directories still present.
pub(crate) fn remove_subtree(top: &Path, killed: &mut Vec<i32>) -> Vec<PathBuf> {
    let dirs = subtree_dirs(top);
    for d in &dirs {
        empty_cgroup(d, killed, RMDIR_PATIENCE);
    }
    let mut left = Vec::new();
    for d in dirs.iter().rev() {
        if !rmdir_patiently(d, RMDIR_PATIENCE) {
            left.push(d.clone());
        }
    }
    left
}

/// An owned cgroup subtree: one uniquely named directory under the memory
/// hierarchy's root and everything created under it. Dropping it (success,
/// error or panic unwinding) kills every process still inside and removes
/// the directories children-first, retrying while the kernel tears down;
/// [`CgroupTree::close`] does the same and reports what could not be removed.
///
/// Processes are placed through [`CgroupTree::add_process`]; on cgroup v2 the
/// memory controller is enabled in a group's `cgroup.subtree_control` before
/// its first child is created (v2 allows processes only in leaves, which the
/// experiments respect).
#[derive(Debug)]
pub struct CgroupTree {
    version: CgroupVersion,
    top: PathBuf,
    delegated: Vec<PathBuf>,
    closed: bool,
    /// Taken before the top directory is made, dropped after the tree is
    /// removed (the last field): while it lives a signal leaves the
    /// cleanup to this owner ([`crate::signals`]).
    _defer: crate::signals::DeferExit,
}

impl CgroupTree {
    /// Sweeps stale subtrees (dead owners) under the host's base, then
    /// creates a new, uniquely named top directory.
    pub fn create(host: &Host) -> Result<CgroupTree, Error> {
        Self::create_in(host.base(), host.version())
    }

    /// As [`CgroupTree::create`], in an explicit base directory of a
    /// hierarchy of the given version.
    pub fn create_in(base: &Path, version: CgroupVersion) -> Result<CgroupTree, Error> {
        sweep_stale(base)?;
        let owner = Owner::current()?;
        let defer = crate::signals::defer_exit();
        for _ in 0..16 {
            let nonce = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let top = base.join(subtree_name(owner, nonce));
            match std::fs::create_dir(&top) {
                Ok(()) => {
                    return Ok(CgroupTree {
                        version,
                        top,
                        delegated: Vec::new(),
                        closed: false,
                        _defer: defer,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(mkdir_error(&top, e)),
            }
        }
        Err(Error::Config("could not find a free subtree name".into()))
    }

    /// The top directory.
    pub fn top(&self) -> &Path {
        &self.top
    }

    /// The hierarchy's version.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Creates `parent/name` (`parent` must be the top or inside it) and
    /// returns its path.
    pub fn mkdir(&mut self, parent: &Path, name: &str) -> Result<PathBuf, Error> {
        if !parent.starts_with(&self.top) {
            return Err(Error::Config(format!(
                "{} is outside the owned subtree {}",
                parent.display(),
                self.top.display()
            )));
        }
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(Error::Config(format!("bad cgroup name {name:?}")));
        }
        if self.version == CgroupVersion::V2 && !self.delegated.iter().any(|d| d == parent) {
            let sc = parent.join("cgroup.subtree_control");
            write_file(&sc, "+memory")?;
            self.delegated.push(parent.to_path_buf());
        }
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| mkdir_error(&dir, e))?;
        Ok(dir)
    }

    /// Creates a chain of `levels` nested groups under the top named
    /// `l2`, `l3`, …; returns the chain (deepest last). The top itself is
    /// level 1 below the hierarchy root.
    pub fn mkdir_chain(&mut self, levels: usize) -> Result<Vec<PathBuf>, Error> {
        let mut chain = Vec::with_capacity(levels);
        let mut at = self.top.clone();
        for i in 0..levels {
            at = self.mkdir(&at, &format!("l{}", i + 2))?;
            chain.push(at.clone());
        }
        Ok(chain)
    }

    /// Creates `count` sibling groups `g00000`, `g00001`, … under `parent`,
    /// polling `cancel` as it goes.
    pub fn mkdir_siblings(
        &mut self,
        parent: &Path,
        count: usize,
        cancel: &Cancel,
    ) -> Result<Vec<PathBuf>, Error> {
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            if i % 32 == 0 {
                crate::signals::check(cancel)?;
            }
            out.push(self.mkdir(parent, &format!("g{i:05}"))?);
        }
        Ok(out)
    }

    /// Moves process `pid` into `dir` (writes `cgroup.procs`).
    pub fn add_process(&self, dir: &Path, pid: i32) -> Result<(), Error> {
        if !dir.starts_with(&self.top) {
            return Err(Error::Config(format!(
                "{} is outside the owned subtree",
                dir.display()
            )));
        }
        write_file(&dir.join("cgroup.procs"), &pid.to_string())
    }

    /// Removes everything now; `Err(Error::Cleanup)` lists what is left.
    pub fn close(mut self) -> Result<(), Error> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> Result<(), Error> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut killed = Vec::new();
        let leftovers = remove_subtree(&self.top, &mut killed);
        if leftovers.is_empty() {
            Ok(())
        } else {
            Err(Error::Cleanup { leftovers })
        }
    }
}

impl Drop for CgroupTree {
    fn drop(&mut self) {
        // Nothing can be reported from a destructor; `close` reports, and
        // the next run's sweep removes whatever this could not.
        let _ = self.cleanup();
    }
}

fn mkdir_error(path: &Path, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => Error::NotWritable {
            path: path.parent().unwrap_or(path).to_path_buf(),
            reason: format!("mkdir {}: {e}", path.display()),
        },
        _ => Error::io("mkdir", path, e),
    }
}

/// Writes `value` to an existing kernel file (no create, no truncate).
pub(crate) fn write_file(path: &Path, value: &str) -> Result<(), Error> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io("open", path, e))?;
    f.write_all(value.as_bytes())
        .map_err(|e| Error::io("write", path, e))
}

/// Reads a kernel file whole.
pub(crate) fn read_file(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))
}

/// Reads a file holding one unsigned integer.
pub(crate) fn read_u64(path: &Path) -> Result<u64, Error> {
    let t = read_file(path)?;
    t.trim().parse().map_err(|_| Error::Parse {
        what: path.display().to_string(),
        detail: format!("not an unsigned integer: {:?}", t.trim()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_reject_others() {
        let o = Owner {
            pid: 4242,
            start_ticks: 987654,
        };
        let n = subtree_name(o, 17);
        assert_eq!(n, "mmlab-kernel.4242.987654.17");
        assert_eq!(parse_subtree_name(&n), Some(o));
        for bad in [
            "process_api",
            "mmlab-kernel.",
            "mmlab-kernel.12.34",
            "mmlab-kernel.12.34.5.6",
            "mmlab-kernel.-3.34.5",
            "mmlab-kernel.x.34.5",
            "mmlab.12.34.5",
        ] {
            assert_eq!(parse_subtree_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn stat_start_time_survives_odd_comm() {
        let line = "1234 (a b) c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 777888 1000 200 18446744073709551615";
        assert_eq!(parse_stat_start_ticks(line), Some(777888));
        assert_eq!(parse_stat_start_ticks("garbage"), None);
        let me = Owner::current().unwrap();
        assert!(me.is_alive());
        assert!(!Owner {
            start_ticks: me.start_ticks + 1,
            ..me
        }
        .is_alive());
    }

    /// The sweep on a plain directory: only dead owners' well-formed names
    /// go; a live owner's (ours) and foreign names stay. (Plain directories
    /// have no cgroup.procs, so no process is touched.)
    #[test]
    fn sweep_removes_only_dead_owners_subtrees() {
        let base = std::env::temp_dir().join(format!("hostkernel-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let me = Owner::current().unwrap();
        // A pid that cannot exist (above pid_max's maximum of 2^22).
        let dead = Owner {
            pid: 4_194_304 + 7,
            start_ticks: 1,
        };
        let reused = Owner {
            pid: me.pid,
            start_ticks: me.start_ticks + 1,
        };
        let live_dir = base.join(subtree_name(me, 1));
        let dead_dir = base.join(subtree_name(dead, 2));
        let reused_dir = base.join(subtree_name(reused, 3));
        let foreign = base.join("process_api");
        for d in [&live_dir, &dead_dir, &reused_dir, &foreign] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::create_dir_all(dead_dir.join("l2/l3")).unwrap();
        let r = sweep_stale(&base).unwrap();
        assert!(r.failed.is_empty(), "{r:?}");
        assert!(r.killed.is_empty());
        let mut removed = r.removed.clone();
        removed.sort();
        let mut want = vec![dead_dir.clone(), reused_dir.clone()];
        want.sort();
        assert_eq!(removed, want);
        assert!(live_dir.exists() && foreign.exists());
        assert!(!dead_dir.exists() && !reused_dir.exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn subtree_dirs_lists_parents_first() {
        let base = std::env::temp_dir().join(format!("hostkernel-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("a/b/c")).unwrap();
        std::fs::create_dir_all(base.join("d")).unwrap();
        std::fs::write(base.join("a/file"), "x").unwrap();
        let dirs = subtree_dirs(&base);
        let rel: Vec<String> = dirs
            .iter()
            .map(|d| d.strip_prefix(&base).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, vec!["", "a", "d", "a/b", "a/b/c"]);
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// cgroup v2 needs `+memory` in a group's `cgroup.subtree_control`
    /// before its children get the memory controller; v1 must not write it.
    /// A plain directory stands in for the hierarchy (the file is created by
    /// hand, as the kernel would provide it).
    #[test]
    fn v2_enables_memory_for_children_once_and_v1_never() {
        // Tree creation takes an exit-deferring guard, which the signals
        // test counts.
        let _guards = crate::sys::test_support::DEFERRING_TESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let base = std::env::temp_dir().join(format!("hostkernel-v2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let mut tree = CgroupTree::create_in(&base, CgroupVersion::V2).unwrap();
        let top = tree.top().to_path_buf();
        assert!(top
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(NAME_PREFIX));
        let sc = top.join("cgroup.subtree_control");
        std::fs::write(&sc, "").unwrap();
        tree.mkdir(&top, "a").unwrap();
        assert_eq!(std::fs::read_to_string(&sc).unwrap(), "+memory");
        std::fs::write(&sc, "").unwrap();
        tree.mkdir(&top, "b").unwrap();
        assert_eq!(
            std::fs::read_to_string(&sc).unwrap(),
            "",
            "written once per parent"
        );
        // Without the file (memory not available) mkdir reports the write.
        let e = tree.mkdir(&top.join("a"), "c").unwrap_err();
        assert!(e.to_string().contains("cgroup.subtree_control"), "{e}");
        assert!(tree.mkdir(&base, "outside").is_err());
        assert!(tree.mkdir(&top, "x/y").is_err());
        std::fs::remove_file(&sc).unwrap();
        tree.close().unwrap();
        assert!(!top.exists());

        let mut v1 = CgroupTree::create_in(&base, CgroupVersion::V1).unwrap();
        let top = v1.top().to_path_buf();
        let chain = v1.mkdir_chain(3).unwrap();
        assert_eq!(chain.last().unwrap(), &top.join("l2/l3/l4"));
        assert!(!top.join("cgroup.subtree_control").exists());
        drop(v1);
        assert!(!top.exists(), "drop removes the subtree children-first");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
