//! The tests' and examples' own small deterministic generator (a 64-bit
//! LCG; its values are stable, so a seed names the same run everywhere).
//! Included with `#[path]` by each test binary and example that draws.

/// A small deterministic generator: `Rng(seed)`.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next value (31 bits).
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
