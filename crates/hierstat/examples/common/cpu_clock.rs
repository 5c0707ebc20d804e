//! The calling thread's own CPU time, for the examples that time loops on
//! a shared host (time spent descheduled by other processes' load is not
//! counted); wall time where the OS has no thread CPU clock at hand.

/// Nanoseconds of the calling thread's CPU time (Linux), else of wall time
/// since the first call.
pub fn thread_cpu_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}
