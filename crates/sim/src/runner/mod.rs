//! The two runners: simulated (virtual time) and real (threads), and the
//! exact oracle that judges the simulated runner's reads.

pub mod oracle;
pub mod real;
pub mod real_spikes;
pub mod sim;

/// A start line for the threads of a real-mode run: they wait on it until
/// every thread is spawned, then all start at once. Unlike a `Barrier`, it
/// does not need the number of threads in advance, so when a spawn fails
/// (a thread limit) the threads already started are let go instead of
/// waiting forever.
#[derive(Debug, Default)]
pub struct Gate {
    open: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
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
    pub fn start<E>(
        &self,
        stop: &std::sync::atomic::AtomicBool,
        failed: Option<E>,
    ) -> Result<(), E> {
        if failed.is_some() {
            // ORDERING: Relaxed; the threads only poll the flag to end
            // their loops (they are joined by the scope).
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.open();
        failed.map_or(Ok(()), Err)
    }
}

/// Stack of a runner thread (std's default, made explicit so that the
/// address-space check below knows it).
const THREAD_STACK: usize = 2 << 20;

/// Address space a spawn must leave free, beyond the new thread's stack,
/// for that thread's own start-up (its signal stack, its thread-local
/// destructors) and the rest of the run. Under an address-space limit
/// (`ulimit -v`) a spawn that just fits succeeds, and the new thread then
/// aborts the whole process when it cannot map its signal stack; refusing
/// the spawn while this much is still free turns that into the error
/// below.
const SPAWN_RESERVE: u64 = 32 << 20;

/// Spawns a scoped thread, turning a failure (the process or user thread
/// limit, memory for its stack, an address-space limit too close) into an
/// error that says what to do.
///
/// # Errors
/// [`crate::error::SimError::Config`] naming the thread and the OS error.
pub fn spawn_scoped<'scope, 'env, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    what: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, crate::error::SimError> {
    let refuse = |why: String| {
        crate::error::SimError::Config(format!(
            "cannot start thread `{what}`: {why} (thread limit? see `ulimit -u` and `ulimit -v`; lower `threads` or `writers.cpus`)"
        ))
    };
    if let Some(left) = address_space_left() {
        if left < THREAD_STACK as u64 + SPAWN_RESERVE {
            return Err(refuse(format!(
                "the address-space limit leaves {} MiB, under the {} MiB a thread needs with its margin",
                left >> 20,
                (THREAD_STACK as u64 + SPAWN_RESERVE) >> 20
            )));
        }
    }
    std::thread::Builder::new()
        .name(what.to_string())
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
