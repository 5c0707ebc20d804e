//! Forked worker processes: the parent's side ([`Child`]: spawn, the
//! command bytes, results, kill and wait), and the child's body
//! ([`child_main`]: mmap, touch, munmap on raw system calls).
//!
//! # Why fork without exec
//!
//! A worker must be in its cgroup *before* it faults a single measured page.
//! The library cannot assume that the host binary (the `mmlab` CLI, a test
//! harness, an example) has a hidden "worker" entry point to re-exec into, so
//! the worker is a forked copy of the caller that never returns to Rust code
//! that could allocate or take a lock: after `fork` in a multi-threaded
//! process only async-signal-safe operations are allowed, and the child body
//! ([`child_main`]) uses nothing but raw system calls on stack values and on
//! memory it maps itself. This is exactly what `Command::pre_exec` closures
//! run under, minus the `exec`.
//!
//! Protocol: the parent forks; the child closes every inherited descriptor
//! except its two pipe ends, asks the kernel to `SIGKILL` it if the parent
//! dies (`PR_SET_PDEATHSIG`), and blocks on a "go" byte. The parent writes
//! the child's pid into the cgroup's `cgroup.procs` and only then sends
//! "go"; so every page the job faults is charged to that cgroup.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::query::{cvt, kill_pid, now_ns, page_size, thread_cpu_ns};

/// The byte that starts a worker's job.
pub(crate) const GO: u8 = b'g';
/// Spike job: charge the spike (mmap + touch), then answer [`ACK`].
pub(crate) const CHARGE: u8 = b'c';
/// Spike job: free the spike (munmap), then answer [`ACK`].
pub(crate) const FREE: u8 = b'f';
/// A spike worker's answer once a command is done.
pub(crate) const ACK: u8 = b'k';

/// What a fault round maps (will-it-scale's page_fault1, 2 and 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapping {
    /// Private anonymous memory: each fault allocates and zeroes a page.
    Anon,
    /// A private mapping of a tmpfs file (a memfd): each write fault
    /// copies the file's page into a new anonymous one.
    FilePrivate,
    /// A shared mapping of a tmpfs file: each write fault maps the file's
    /// page, already in the page cache after the first round.
    FileShared,
}

/// What a worker does once it is in its cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Job {
    /// `rounds` times: mmap `pages` pages (per `mapping`; a file mapping's
    /// memfd is created and sized once, in the cgroup), write one byte to
    /// each, munmap; after each round write four native-endian `u64` to
    /// the result pipe: wall ns from mmap to the last touch, wall ns from
    /// mmap to munmap's return, and the same two intervals in the worker's
    /// CPU time (time it was descheduled excluded).
    FaultRounds {
        pages: usize,
        rounds: usize,
        mapping: Mapping,
    },
    /// Forever (until killed): mmap `pages`, touch them, munmap.
    Churn { pages: usize },
    /// On [`CHARGE`]: mmap and touch `pages`; on [`FREE`]: munmap; each
    /// answered with [`ACK`]; any other byte or EOF ends the worker.
    Spike { pages: usize },
}

/// A forked worker process, owned: dropping it kills (`SIGKILL`) and reaps it.
#[derive(Debug)]
pub(crate) struct Child {
    pid: libc::pid_t,
    to_child: Option<OwnedFd>,
    from_child: OwnedFd,
    reaped: bool,
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by
    // nobody else; each is wrapped exactly once.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Child {
    /// Forks a worker for `job`. It waits for [`Child::go`] before doing
    /// anything measurable.
    pub(crate) fn spawn(job: Job) -> io::Result<Child> {
        let page = page_size();
        let (cmd_r, cmd_w) = pipe_cloexec()?;
        let (res_r, res_w) = pipe_cloexec()?;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: fork is sound here because the child only runs
        // `child_main`, which performs raw system calls on stack values and
        // memory it maps itself, never allocates, never takes a lock and
        // never returns (it ends in `_exit`). The parent continues normally.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            child_main(job, page, parent, cmd_r.as_raw_fd(), res_w.as_raw_fd());
        }
        drop(cmd_r);
        drop(res_w);
        Ok(Child {
            pid,
            to_child: Some(cmd_w),
            from_child: res_r,
            reaped: false,
        })
    }

    /// The worker's pid.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Sends one command byte.
    pub(crate) fn send(&self, byte: u8) -> io::Result<()> {
        let fd = self
            .to_child
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))?;
        // SAFETY: `fd` is an open pipe we own; the buffer is one valid byte.
        let n = unsafe { libc::write(fd.as_raw_fd(), (&byte as *const u8).cast(), 1) };
        if n == 1 {
            Ok(())
        } else if n == -1 {
            Err(io::Error::last_os_error())
        } else {
            Err(io::Error::from(io::ErrorKind::WriteZero))
        }
    }

    /// Starts the job (after the worker was placed in its cgroup).
    pub(crate) fn go(&self) -> io::Result<()> {
        self.send(GO)
    }

    /// Closes the command pipe (a spike worker then exits).
    pub(crate) fn close_commands(&mut self) {
        self.to_child = None;
    }

    /// Reads exactly `buf.len()` bytes of results. Waits in slices of at
    /// most 50 ms so that `stop()` is polled; returns `Ok(false)` if `stop`
    /// said so, `Err(UnexpectedEof)` if the worker went away, `Err(TimedOut)`
    /// past `timeout`.
    pub(crate) fn recv_exact(
        &self,
        buf: &mut [u8],
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<bool> {
        let deadline = Instant::now() + timeout;
        let fd = self.from_child.as_raw_fd();
        let mut got = 0;
        while got < buf.len() {
            if stop() {
                return Ok(false);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(io::Error::from(io::ErrorKind::TimedOut));
            }
            let slice = (deadline - now).min(Duration::from_millis(50));
            if !poll_readable(fd, slice)? {
                continue;
            }
            let rest = &mut buf[got..];
            // SAFETY: `rest` is a valid writable buffer of `rest.len()` bytes.
            let n = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
            if n == -1 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            got += n as usize;
        }
        Ok(true)
    }

    /// Kills (`SIGKILL`) and reaps the worker; idempotent.
    pub(crate) fn kill_and_reap(&mut self) -> io::Result<()> {
        if self.reaped {
            return Ok(());
        }
        kill_pid(self.pid)?;
        self.wait().map(|_| ())
    }

    /// Waits for the worker to exit; returns its raw wait status.
    pub(crate) fn wait(&mut self) -> io::Result<i32> {
        let mut status = 0;
        loop {
            // SAFETY: `status` is a valid int; `pid` is our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.reaped = true;
                return Ok(status);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                if e.raw_os_error() == Some(libc::ECHILD) {
                    self.reaped = true;
                }
                return Err(e);
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.to_child = None;
        let _ = self.kill_and_reap();
    }
}

/// Describes a raw wait status ("exited with 3", "killed by signal 9").
pub(crate) fn describe_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status:#x}")
    }
}

fn poll_readable(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().clamp(0, i32::MAX as u128) as libc::c_int;
    // SAFETY: `p` is one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r == -1 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(r > 0)
}

// ------------------------------------------------------ the child's side
//
// Everything below runs in the forked child: raw syscalls only, no
// allocation, no locks, no panics (no indexing, no unwrap), ends in _exit.

fn child_exit(code: libc::c_int) -> ! {
    // SAFETY: _exit is async-signal-safe and skips atexit handlers and
    // stdio flushing, which belong to the parent.
    unsafe { libc::_exit(code) }
}

fn child_read_byte(fd: RawFd) -> Option<u8> {
    let mut b = 0u8;
    loop {
        // SAFETY: reads one byte into a valid stack variable.
        let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        if n == 1 {
            return Some(b);
        }
        // SAFETY: __errno_location returns this thread's errno pointer.
        if n == -1 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return None;
    }
}

fn child_write_all(fd: RawFd, buf: *const u8, len: usize) -> bool {
    let mut done = 0usize;
    while done < len {
        // SAFETY: `buf` points to `len` readable bytes (a stack array of the
        // caller); `done < len` keeps the range inside it.
        let n = unsafe { libc::write(fd, buf.add(done).cast(), len - done) };
        if n > 0 {
            done += n as usize;
            continue;
        }
        // SAFETY: see child_read_byte.
        if n == -1 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return false;
    }
    true
}

/// Maps `pages` anonymous pages (THP disabled for the range, so every page
/// is its own fault) and writes one byte to each. Returns the mapping.
fn child_map_touch(pages: usize, page: usize) -> Option<*mut u8> {
    child_map_touch_fd(pages, page, -1, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS)
}

/// As [`child_map_touch`], mapping `fd` (or anonymous memory for `-1`)
/// with `flags`.
fn child_map_touch_fd(pages: usize, page: usize, fd: RawFd, flags: i32) -> Option<*mut u8> {
    let len = pages.checked_mul(page)?;
    // SAFETY: a new mapping at an address the kernel picks (of `fd`, a
    // memfd this process created and sized, or anonymous); no existing
    // memory is affected.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: [p, p+len) is the mapping just created. Failure of the
    // advice is harmless (THP may be compiled out).
    unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    let base = p.cast::<u8>();
    let mut i = 0;
    while i < pages {
        // SAFETY: i < pages, so i*page < len: inside the fresh mapping,
        // which is readable and writable. A volatile write so the fault
        // really happens.
        unsafe { std::ptr::write_volatile(base.add(i * page), 1u8) };
        i += 1;
    }
    Some(base)
}

fn child_unmap(p: *mut u8, pages: usize, page: usize) {
    // SAFETY: `p` is a mapping of exactly pages*page bytes made by
    // child_map_touch and not used afterwards.
    unsafe { libc::munmap(p.cast(), pages * page) };
}

fn child_main(job: Job, page: usize, parent: libc::pid_t, cmd: RawFd, res: RawFd) -> ! {
    // SAFETY: async-signal-safe system calls only (whole block); the
    // closure below is called only inside it.
    unsafe {
        // The worker is disposable: Ctrl-C and SIGTERM end it at once
        // (the parent inherited handler would only set the parent's flag).
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        // Die with the parent (a `kill -9` of the parent leaves no worker).
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(3);
        }
        // Close every inherited descriptor except stdio and our two pipes,
        // so other workers' pipes see EOF when their owner closes them.
        let (lo, hi) = if cmd < res { (cmd, res) } else { (res, cmd) };
        let close = |a: i64, b: i64| {
            if a <= b {
                libc::close_range(a as libc::c_uint, b as libc::c_uint, 0);
            }
        };
        close(3, lo as i64 - 1);
        close(lo as i64 + 1, hi as i64 - 1);
        close(hi as i64 + 1, libc::c_uint::MAX as i64);
    }
    if child_read_byte(cmd) != Some(GO) {
        child_exit(4);
    }
    match job {
        Job::FaultRounds {
            pages,
            rounds,
            mapping,
        } => {
            let (fd, flags) = match mapping {
                Mapping::Anon => (-1, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS),
                Mapping::FilePrivate | Mapping::FileShared => {
                    // SAFETY: memfd_create takes a NUL-terminated name (a
                    // static literal) and flags; it only creates a descriptor.
                    let fd = unsafe { libc::memfd_create(c"mmlab-faults".as_ptr(), 0) };
                    let Some(len) = pages.checked_mul(page) else {
                        child_exit(5)
                    };
                    // SAFETY: ftruncate on the memfd just created.
                    if fd < 0 || unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
                        child_exit(5)
                    }
                    let shared = if mapping == Mapping::FileShared {
                        libc::MAP_SHARED
                    } else {
                        libc::MAP_PRIVATE
                    };
                    (fd, shared)
                }
            };
            let mut r = 0;
            while r < rounds {
                let c0 = thread_cpu_ns();
                let t0 = now_ns();
                let Some(p) = child_map_touch_fd(pages, page, fd, flags) else {
                    child_exit(5)
                };
                let t1 = now_ns();
                let c1 = thread_cpu_ns();
                child_unmap(p, pages, page);
                let t2 = now_ns();
                let c2 = thread_cpu_ns();
                let vals = [
                    t1.wrapping_sub(t0),
                    t2.wrapping_sub(t0),
                    c1.wrapping_sub(c0),
                    c2.wrapping_sub(c0),
                ];
                let mut out = [0u8; 32];
                let mut i = 0;
                while i < 4 {
                    let b = vals[i].to_ne_bytes();
                    let mut j = 0;
                    while j < 8 {
                        out[8 * i + j] = b[j];
                        j += 1;
                    }
                    i += 1;
                }
                if !child_write_all(res, out.as_ptr(), out.len()) {
                    child_exit(6);
                }
                r += 1;
            }
            child_exit(0)
        }
        Job::Churn { pages } => {
            let mut n: u32 = 0;
            loop {
                let Some(p) = child_map_touch(pages, page) else {
                    child_exit(5)
                };
                child_unmap(p, pages, page);
                n = n.wrapping_add(1);
                // SAFETY: getppid has no preconditions.
                if n % 64 == 0 && unsafe { libc::getppid() } != parent {
                    child_exit(7);
                }
            }
        }
        Job::Spike { pages } => {
            let mut held: Option<*mut u8> = None;
            loop {
                match child_read_byte(cmd) {
                    Some(CHARGE) => {
                        if held.is_none() {
                            held = child_map_touch(pages, page);
                            if held.is_none() {
                                child_exit(5);
                            }
                        }
                    }
                    Some(FREE) => {
                        if let Some(p) = held.take() {
                            child_unmap(p, pages, page);
                        }
                    }
                    _ => child_exit(0),
                }
                let ack = [ACK];
                if !child_write_all(res, ack.as_ptr(), 1) {
                    child_exit(6);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The fork protocol without cgroups: runs anywhere, no root needed.
    use super::*;

    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => {
                s.rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next())
                    == Some("Z")
            }
            Err(_) => true,
        }
    }

    #[test]
    fn fault_rounds_report_every_round_and_exit_cleanly() {
        let mut c = Child::spawn(Job::FaultRounds {
            mapping: Mapping::Anon,
            pages: 64,
            rounds: 3,
        })
        .unwrap();
        c.go().unwrap();
        for _ in 0..3 {
            let mut buf = [0u8; 32];
            assert!(c
                .recv_exact(&mut buf, Duration::from_secs(10), &|| false)
                .unwrap());
            let w = |i: usize| u64::from_ne_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
            let (touch, cycle) = (w(0), w(1));
            assert!(touch > 0 && cycle >= touch, "touch {touch} cycle {cycle}");
            // 64 faults take more than 64 × 50 ns of wall and of CPU time.
            assert!(touch > 64 * 50 && w(2) > 64 * 50, "{touch} {}", w(2));
        }
        let st = c.wait().unwrap();
        assert_eq!(describe_status(st), "exited with status 0");
        let mut buf = [0u8; 1];
        // The pipe is at EOF now.
        let e = c
            .recv_exact(&mut buf, Duration::from_secs(1), &|| false)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn spike_worker_answers_each_command() {
        let mut c = Child::spawn(Job::Spike { pages: 32 }).unwrap();
        c.go().unwrap();
        for cmd in [CHARGE, FREE, CHARGE, FREE] {
            c.send(cmd).unwrap();
            let mut ack = [0u8; 1];
            assert!(c
                .recv_exact(&mut ack, Duration::from_secs(10), &|| false)
                .unwrap());
            assert_eq!(ack[0], ACK);
        }
        c.close_commands();
        assert_eq!(describe_status(c.wait().unwrap()), "exited with status 0");
    }

    /// Minor faults of `pid` so far (`/proc/<pid>/stat` field 10), or
    /// `None` once it is gone.
    fn minor_faults(pid: i32) -> Option<u64> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command's closing parenthesis: state (field 3) first.
        s.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(7)?
            .parse()
            .ok()
    }

    #[test]
    fn dropping_a_churning_worker_kills_and_reaps_it() {
        let c = Child::spawn(Job::Churn { pages: 16 }).unwrap();
        let pid = c.pid();
        let before = minor_faults(pid).expect("the worker runs");
        c.go().unwrap();
        // Churning: 64 rounds of 16 faults, far more than the forked
        // child's own start-up faults (it only runs a few raw syscalls).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(!gone(pid), "the worker died while churning");
            if minor_faults(pid).is_some_and(|n| n >= before + 64 * 16) {
                break;
            }
            assert!(Instant::now() < deadline, "the worker never churned");
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(c);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists() || gone(pid));
    }

    #[test]
    fn recv_stops_when_told_and_times_out() {
        // A worker that never starts sends nothing.
        let c = Child::spawn(Job::Churn { pages: 1 }).unwrap();
        let mut buf = [0u8; 1];
        assert!(!c
            .recv_exact(&mut buf, Duration::from_secs(5), &|| true)
            .unwrap());
        let e = c
            .recv_exact(&mut buf, Duration::from_millis(60), &|| false)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn a_worker_that_is_not_started_exits_when_its_pipe_closes() {
        let mut c = Child::spawn(Job::Spike { pages: 1 }).unwrap();
        c.close_commands();
        assert_eq!(describe_status(c.wait().unwrap()), "exited with status 4");
    }
}
