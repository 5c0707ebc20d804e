//! Worker processes placed in a cgroup before they fault: a safe layer over
//! the fork protocol in `sys`.

use std::path::Path;
use std::time::Duration;

use crate::cgroup::CgroupTree;
use crate::detect::CgroupVersion;
use crate::error::Error;
use crate::sys::child::{describe_status, Child, Job};
use crate::sys::query;
use simcore::Cancel;

/// A running worker. Dropping it kills and reaps the process.
#[derive(Debug)]
pub(crate) struct Worker {
    child: Child,
}

impl Worker {
    /// Forks a worker for `job`, moves it into `dir` (which must belong to
    /// `tree`), checks that `/proc/<pid>/cgroup` agrees, and only then lets
    /// it start.
    pub(crate) fn start(tree: &CgroupTree, dir: &Path, job: Job) -> Result<Worker, Error> {
        let child = Child::spawn(job).map_err(|e| Error::Worker(format!("fork: {e}")))?;
        let w = Worker { child };
        tree.add_process(dir, w.pid())?;
        let want = cgroup_relative(dir, tree)?;
        match cgroup_of(w.pid(), tree.version()) {
            Some(got) if got == want => {}
            got => {
                return Err(Error::Worker(format!(
                    "worker {} is in memory cgroup {got:?}, expected {want:?}",
                    w.pid()
                )))
            }
        }
        w.child
            .go()
            .map_err(|e| Error::Worker(format!("start worker: {e}")))?;
        Ok(w)
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.pid()
    }

    /// Pins the worker to CPU `cpu`.
    pub(crate) fn pin(&self, cpu: usize) -> Result<(), Error> {
        query::pin_to_cpu(self.pid(), cpu)
            .map_err(|e| Error::Worker(format!("pin worker {} to CPU {cpu}: {e}", self.pid())))
    }

    /// Sends a command byte.
    pub(crate) fn send(&self, b: u8) -> Result<(), Error> {
        self.child
            .send(b)
            .map_err(|e| Error::Worker(format!("command to worker {}: {e}", self.pid())))
    }

    /// Reads exactly `buf.len()` result bytes; `Err(Interrupted)` when
    /// `cancel` fires, `Err(Worker)` if it died or timed out.
    pub(crate) fn recv(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<(), Error> {
        match self
            .child
            .recv_exact(buf, timeout, &|| cancel.is_cancelled())
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Interrupted),
            Err(e) => {
                if cancel.is_cancelled() {
                    return Err(Error::Interrupted);
                }
                let why = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    match self.child.wait() {
                        Ok(st) => format!("exited early ({})", describe_status(st)),
                        Err(w) => format!("exited early (wait: {w})"),
                    }
                } else {
                    e.to_string()
                };
                Err(Error::Worker(format!("worker {}: {why}", self.pid())))
            }
        }
    }

    /// Closes the command pipe and waits for a clean exit (status 0).
    pub(crate) fn finish(mut self) -> Result<(), Error> {
        self.child.close_commands();
        let st = self
            .child
            .wait()
            .map_err(|e| Error::Worker(format!("wait worker: {e}")))?;
        if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 {
            Ok(())
        } else {
            Err(Error::Worker(format!("worker {}", describe_status(st))))
        }
    }

    /// Kills and reaps now.
    pub(crate) fn stop(mut self) -> Result<(), Error> {
        self.child
            .kill_and_reap()
            .map_err(|e| Error::Worker(format!("kill worker: {e}")))
    }
}

/// The cgroup path of `dir` as `/proc/<pid>/cgroup` prints it.
fn cgroup_relative(dir: &Path, tree: &CgroupTree) -> Result<String, Error> {
    let base = tree.top().parent().unwrap_or(tree.top());
    let rel = dir
        .strip_prefix(base)
        .map_err(|_| Error::Config(format!("{} is not under {}", dir.display(), base.display())))?;
    Ok(format!("/{}", rel.display()))
}

/// The memory-controller cgroup of `pid` from `/proc/<pid>/cgroup`.
pub(crate) fn cgroup_of(pid: i32, version: CgroupVersion) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    parse_proc_cgroup(&text, version)
}

/// Finds the memory controller's line in `/proc/<pid>/cgroup` text: on v1
/// the line whose controller list contains `memory`, on v2 the `0::` line.
pub(crate) fn parse_proc_cgroup(text: &str, version: CgroupVersion) -> Option<String> {
    text.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let (_id, ctl, path) = (it.next()?, it.next()?, it.next()?);
        let hit = match version {
            CgroupVersion::V1 => ctl.split(',').any(|c| c == "memory"),
            CgroupVersion::V2 => ctl.is_empty(),
        };
        hit.then(|| path.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cgroup_lines() {
        let t = "9:name=systemd:/\n4:memory:/mmlab-kernel.1.2.3/l2\n1:cpu,cpuacct:/\n0::/x/y:z\n";
        assert_eq!(
            parse_proc_cgroup(t, CgroupVersion::V1).as_deref(),
            Some("/mmlab-kernel.1.2.3/l2")
        );
        assert_eq!(
            parse_proc_cgroup(t, CgroupVersion::V2).as_deref(),
            Some("/x/y:z")
        );
        assert_eq!(parse_proc_cgroup("1:cpu:/\n", CgroupVersion::V1), None);
    }
}
