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

/// Spawns a scoped thread, turning a failure (the process or user thread
/// limit, memory for its stack) into an error that says what to do.
///
/// # Errors
/// [`crate::error::SimError::Config`] naming the thread and the OS error.
pub fn spawn_scoped<'scope, 'env, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    what: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, crate::error::SimError> {
    std::thread::Builder::new()
        .name(what.to_string())
        .spawn_scoped(s, f)
        .map_err(|e| {
            crate::error::SimError::Config(format!(
                "cannot start thread `{what}`: {e} (thread limit? see `ulimit -u`; lower `threads` or `writers.cpus`)"
            ))
        })
}
