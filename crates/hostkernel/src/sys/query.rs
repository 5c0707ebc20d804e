//! System queries and small calls: page size, online CPUs, CPU pinning, a
//! memfd, `sendfile`, the effective uid, `uname`, `kill`, the clocks, and
//! [`cvt`], the libc return convention the other `sys` files share.
//!
//! The clocks are async-signal-safe: the forked worker's body uses them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A libc call's `-1` as the thread's `errno`.
pub(super) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
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

/// The monotonic clock, ns.
pub(super) fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, ns.
pub(crate) fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

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
