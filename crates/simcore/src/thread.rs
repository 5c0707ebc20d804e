//! Starting threads: the one spawn helper of the workspace ([`spawn_scoped`])
//! and a start line for the threads of a measurement ([`Gate`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// A start line: threads [`Gate::wait`] on it until [`Gate::open`], then
/// all start at once. Unlike a `Barrier` it does not need the number of
/// threads in advance, so when a spawn fails (a thread limit) the threads
/// already started are let go instead of waiting forever.
#[derive(Debug, Default)]
pub struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    /// Waits until [`Gate::open`].
    pub fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Lets every waiting (and every later) thread go.
    pub fn open(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Starts the run once every spawn was tried: opens the gate and, if a
    /// spawn `failed`, first sets `stop` so the threads already started see
    /// it at once and return, then hands the failure back.
    ///
    /// # Errors
    /// `failed`, if any.
    pub fn start<E>(&self, stop: &AtomicBool, failed: Option<E>) -> Result<(), E> {
        if failed.is_some() {
            // ORDERING: Relaxed; the threads only poll the flag to end
            // their loops (they are joined by their scope).
            stop.store(true, Ordering::Relaxed);
        }
        self.open();
        failed.map_or(Ok(()), Err)
    }
}

/// A thread that could not be started: its name and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnError {
    /// The thread's name.
    pub thread: String,
    /// The OS error, or the address-space check that refused it.
    pub reason: String,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot start thread `{}`: {} (thread limit? see `ulimit -u` and `ulimit -v`)",
            self.thread, self.reason
        )
    }
}

impl std::error::Error for SpawnError {}

/// Stack of a spawned thread (std's default, made explicit so that the
/// address-space check knows it).
pub const THREAD_STACK: usize = 2 << 20;

/// Address space a spawn must leave free, beyond the new thread's stack,
/// for that thread's own start-up (its signal stack, its thread-local
/// destructors) and the rest of the run. Under an address-space limit
/// (`ulimit -v`) a spawn that just fits succeeds, and the new thread then
/// aborts the whole process when it cannot map its signal stack; refusing
/// the spawn while this much is still free turns that into an error.
pub const SPAWN_RESERVE: u64 = 32 << 20;

/// Spawns a named scoped thread with a [`THREAD_STACK`] stack, turning a
/// failure (the process or user thread limit, memory for its stack, an
/// address-space limit too close) into a [`SpawnError`].
///
/// # Errors
/// The thread cannot be started.
pub fn spawn_scoped<'scope, 'env, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, SpawnError> {
    let refuse = |reason: String| SpawnError {
        thread: name.to_string(),
        reason,
    };
    let need = THREAD_STACK as u64 + SPAWN_RESERVE;
    if let Some(left) = address_space_left() {
        if left < need {
            return Err(refuse(format!(
                "the address-space limit leaves {} MiB, under the {} MiB a thread needs with its margin",
                left >> 20,
                need >> 20
            )));
        }
    }
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(THREAD_STACK)
        .spawn_scoped(s, f)
        .map_err(|e| refuse(e.to_string()))
}

/// Bytes of address space the process may still map under its
/// `RLIMIT_AS`, or `None` where there is no limit (or it cannot be read):
/// the soft limit from `/proc/self/limits` less `VmSize` from
/// `/proc/self/status`.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?;
    let limit: u64 = soft.parse().ok()?; // "unlimited" does not parse
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmSize:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(limit.saturating_sub(kib.saturating_mul(1024)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gated_threads_start_together_and_a_failure_stops_them() {
        let gate = Gate::default();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = spawn_scoped(s, "simcore-test", || {
                gate.wait();
                stop.load(Ordering::Relaxed)
            })
            .unwrap();
            let r = gate.start(&stop, Some("no thread"));
            assert_eq!(r, Err("no thread"));
            assert!(h.join().unwrap(), "the started thread saw the stop");
        });
        let e = SpawnError {
            thread: "t".into(),
            reason: "EAGAIN".into(),
        };
        assert!(e.to_string().starts_with("cannot start thread `t`: EAGAIN"));
    }
}
