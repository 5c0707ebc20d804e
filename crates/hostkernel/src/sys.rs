//! The crate's only `unsafe` code: forking worker processes, the workers'
//! bodies (mmap, touch, munmap), signals, waits and a few libc queries.
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
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by
    // nobody else; each is wrapped exactly once.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Page size in bytes.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

/// Online CPUs (`_SC_NPROCESSORS_ONLN`), the kernel's `num_online_cpus()`.
pub(crate) fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if v > 0 {
        v as usize
    } else {
        1
    }
}

/// Pins `pid` (0: the calling thread) to CPU `cpu`.
pub(crate) fn pin_to_cpu(pid: i32, cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize || pid < 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (checked above), so CPU_SET stays inside
    // `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid >= 0 names
    // the calling thread (0) or one process, and only its affinity changes.
    cvt(unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// A tmpfs file of `len` bytes (a memfd), zero-filled.
pub(crate) fn memfd(len: usize) -> io::Result<OwnedFd> {
    // SAFETY: memfd_create takes a NUL-terminated name (a static literal)
    // and flags; it only creates a descriptor.
    let fd = cvt(unsafe { libc::memfd_create(c"mmlab-send".as_ptr(), libc::MFD_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by memfd_create and is owned by no one
    // else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let buf = [b'x'; 4096];
    let mut done = 0;
    while done < len {
        let n = buf.len().min(len - done);
        // SAFETY: writes `n` bytes of `buf` (n <= buf.len()) to the owned fd.
        let w = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), n) };
        if w <= 0 {
            return Err(io::Error::last_os_error());
        }
        done += w as usize;
    }
    Ok(fd)
}

/// `sendfile(out, in, &offset, count)`: bytes sent.
pub(crate) fn sendfile(
    out: RawFd,
    input: RawFd,
    offset: &mut i64,
    count: usize,
) -> io::Result<usize> {
    let mut off: libc::off_t = *offset as libc::off_t;
    // SAFETY: `off` is a valid, writable off_t; the descriptors are owned by
    // the caller for the duration of the call.
    let n = unsafe { libc::sendfile(out, input, &mut off, count) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    *offset = off as i64;
    Ok(n as usize)
}

/// Effective user id.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
}

/// `uname()`: (release, version, machine).
pub(crate) fn uname() -> io::Result<(String, String, String)> {
    // SAFETY: utsname is plain old data; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    cvt(unsafe { libc::uname(&mut u) })?;
    fn field(f: &[libc::c_char]) -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    Ok((field(&u.release), field(&u.version), field(&u.machine)))
}

/// Sends `SIGKILL` to `pid` (which must be positive); ESRCH is not an error.
pub(crate) fn kill_pid(pid: i32) -> io::Result<()> {
    if pid <= 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: kill has no memory-safety preconditions; pid > 0 so it
    // targets exactly one process, never a process group.
    let r = unsafe { libc::kill(pid, libc::SIGKILL) };
    if r == -1 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(e);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- signals

/// The process-wide "SIGINT/SIGTERM received" flag, set by [`on_signal`].
/// With the two values below it is the crate's only global state: a signal
/// handler can reach nothing else.
pub(crate) static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// How many [`crate::signals::DeferExit`] guards live: while any does, a
/// first signal only sets [`SIGNALLED`] (cleanup runs in normal code).
pub(crate) static DEFERRING: AtomicUsize = AtomicUsize::new(0);

/// Held by the unit tests that create [`DeferExit`](crate::signals::DeferExit)
/// guards (a tree's creation takes one) while one of them counts
/// [`DEFERRING`]: tests run on parallel threads of one process.
#[cfg(test)]
pub(crate) static DEFERRING_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The message written to stderr before an immediate exit (set once, before
/// the handler is installed; null: none).
static EXIT_MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static EXIT_MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work: atomics, write(2), _exit(2), signal(2),
    // raise(3).
    // ORDERING: SeqCst on every access of the three statics: they are
    // touched rarely (a signal, a guard), and a total order makes "the
    // guard was taken before the cgroup existed" hold without a proof.
    if SIGNALLED.swap(true, Ordering::SeqCst) {
        // A second signal: restore the default action and re-raise, so a
        // process that does not come back can still be stopped (the next
        // run's stale sweep removes what it left).
        // SAFETY: signal() and raise() are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return;
    }
    if DEFERRING.load(Ordering::SeqCst) > 0 {
        // Cleanup pending: the code that owns it polls the flag.
        return;
    }
    let msg = EXIT_MESSAGE.load(Ordering::SeqCst);
    let len = EXIT_MESSAGE_LEN.load(Ordering::SeqCst);
    if !msg.is_null() {
        // SAFETY: `msg` points to `len` bytes of a `&'static [u8]` (stored
        // by `install_signal_handler` before the handler existed); write(2)
        // is async-signal-safe. A short or failed write changes nothing.
        unsafe { libc::write(2, msg.cast_const().cast(), len) };
    }
    // SAFETY: _exit is async-signal-safe; it skips destructors on purpose
    // (an SQLite transaction in progress is rolled back by its journal on
    // the next open, as after `kill -9`).
    unsafe { libc::_exit(128 + sig) }
}

/// The signals the handler takes.
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Installs the process's SIGINT/SIGTERM handler ([`on_signal`]) for the
/// rest of the process, with `message` as what an immediate exit writes.
/// Called once (see `crate::signals::install`).
pub(crate) fn install_signal_handler(message: Option<&'static [u8]>) -> io::Result<()> {
    if let Some(m) = message {
        EXIT_MESSAGE_LEN.store(m.len(), Ordering::SeqCst);
        EXIT_MESSAGE.store(m.as_ptr().cast_mut(), Ordering::SeqCst);
    }
    // SAFETY: sigaction is plain old data; all-zero is a valid value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    sa.sa_flags = libc::SA_RESTART;
    // SAFETY: sa_mask is a valid sigset_t inside `sa`.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    for sig in SIGNALS {
        // SAFETY: `sa` is fully initialised; the handler only uses atomics
        // and async-signal-safe functions; the old action is not wanted.
        cvt(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) })?;
    }
    Ok(())
}

/// The handler currently installed for `sig` (tests).
#[cfg(test)]
pub(crate) fn current_handler(sig: libc::c_int) -> libc::sighandler_t {
    // SAFETY: a query (null new action) into a zeroed, writable struct.
    let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::sigaction(sig, std::ptr::null(), &mut cur) };
    cur.sa_sigaction
}

/// The address of the crate's handler (tests).
#[cfg(test)]
pub(crate) fn our_handler() -> libc::sighandler_t {
    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
}

// ---------------------------------------------------------------- workers

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

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, ns.
pub(crate) fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
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

    #[test]
    fn dropping_a_churning_worker_kills_and_reaps_it() {
        let c = Child::spawn(Job::Churn { pages: 16 }).unwrap();
        let pid = c.pid();
        c.go().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!gone(pid));
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

    #[test]
    fn host_queries() {
        assert!(page_size() >= 4096);
        assert!(online_cpus() >= 1);
        let (release, _, machine) = uname().unwrap();
        assert!(!release.is_empty() && !machine.is_empty());
        let a = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..200_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > a);
    }
}
