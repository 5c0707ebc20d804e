//! The simulation's one random number generator.
//!
//! A PCG-XSH-RR 64/32 generator (O'Neill 2014) seeded through SplitMix64, so
//! that nearby seeds (`seed`, `seed + 1`, ...) give unrelated streams. It is
//! small, fast, fully deterministic across platforms, and never touches OS
//! entropy. Only the simulation state owns one; components draw from it
//! through the runner.

pub use models::rng::splitmix64;
use models::rng::Pcg32;

/// Deterministic PCG32 generator with helpers for the distributions the
/// workloads use.
#[derive(Debug, Clone)]
pub struct SimRng {
    pcg: Pcg32,
}

impl SimRng {
    /// Creates a generator from a seed; every seed gives a distinct stream.
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let state = splitmix64(&mut sm);
        let stream = splitmix64(&mut sm);
        SimRng {
            pcg: Pcg32::with_stream(state, stream),
        }
    }

    /// Next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        self.pcg.next_u32()
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        (u64::from(self.next_u32()) << 32) | u64::from(self.next_u32())
    }

    /// Uniform integer in `0..n` (Lemire's multiply-shift with rejection);
    /// returns 0 when `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        loop {
            let x = self.next_u64();
            let m = u128::from(x) * u128::from(n);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// Uniform integer in the inclusive range `lo..=hi` (`lo` if `hi < lo`).
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// Uniform float in `[0, 1)` with 53 bits of precision.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit_f64() < p
    }

    /// Exponentially distributed integer with the given mean (Poisson
    /// arrivals); at least 1.
    pub fn exp_ns(&mut self, mean: u64) -> u64 {
        let u = 1.0 - self.unit_f64(); // (0, 1]
        let v = -(u.ln()) * mean as f64;
        (v as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_different_seed_differs() {
        let mut a = SimRng::new(7);
        let mut b = SimRng::new(7);
        let mut c = SimRng::new(8);
        let sa: Vec<u64> = (0..16).map(|_| a.next_u64()).collect();
        let sb: Vec<u64> = (0..16).map(|_| b.next_u64()).collect();
        let sc: Vec<u64> = (0..16).map(|_| c.next_u64()).collect();
        assert_eq!(sa, sb);
        assert_ne!(sa, sc);
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = SimRng::new(1);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn exp_mean_is_close() {
        let mut r = SimRng::new(3);
        let n = 20_000;
        let sum: u64 = (0..n).map(|_| r.exp_ns(1000)).sum();
        let mean = sum as f64 / n as f64;
        assert!((900.0..1100.0).contains(&mean), "mean {mean}");
    }

    #[test]
    fn unit_is_in_unit_interval() {
        let mut r = SimRng::new(11);
        for _ in 0..1000 {
            let u = r.unit_f64();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
