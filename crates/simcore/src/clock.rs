//! The calling thread's CPU clock: the time a thread actually ran, so a
//! measurement on a shared host does not count the time slices other
//! processes took.

/// CPU time consumed by the calling thread, in ns; `None` where the
/// platform has no per-thread CPU clock.
pub fn thread_cpu_ns() -> Option<u64> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Some((t.tv_sec as u64).wrapping_mul(1_000_000_000) + t.tv_nsec as u64)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        None
    }
}

/// A stopwatch on the calling thread's CPU time, falling back to the wall
/// clock where there is no thread CPU clock.
#[derive(Debug)]
pub struct CpuTimer {
    cpu0: Option<u64>,
    wall0: std::time::Instant,
}

impl CpuTimer {
    /// Starts the stopwatch.
    pub fn start() -> CpuTimer {
        CpuTimer {
            cpu0: thread_cpu_ns(),
            wall0: std::time::Instant::now(),
        }
    }

    /// Nanoseconds since [`CpuTimer::start`].
    pub fn elapsed_ns(&self) -> f64 {
        match (self.cpu0, thread_cpu_ns()) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64,
            _ => self.wall0.elapsed().as_nanos() as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_clock_advances_with_work() {
        let a = thread_cpu_ns().unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(thread_cpu_ns().unwrap() > a, "{x}");
        assert!(CpuTimer::start().elapsed_ns() >= 0.0);
    }
}
