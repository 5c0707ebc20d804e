//! The one PCG32 generator every model and the simulator draw from.
//!
//! PCG-XSH-RR (64-bit state, 32-bit output, O'Neill 2014) with its state and
//! stream derived from a seed through SplitMix64, so nearby seeds give
//! unrelated streams. Nothing here reads OS entropy or the clock. Users add
//! the distributions they need on top (`numab::rng`, `sim::rng`).

/// SplitMix64 step: advances `state` and returns a well-mixed 64-bit value.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A deterministic PCG32 generator.
#[derive(Debug, Clone)]
pub struct Pcg32 {
    state: u64,
    inc: u64,
}

const PCG_MULT: u64 = 6_364_136_223_846_793_005;

impl Pcg32 {
    /// A generator whose whole stream is a function of `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let init_state = splitmix64(&mut sm);
        let stream = splitmix64(&mut sm);
        Pcg32::with_stream(init_state, stream << 1)
    }

    /// A generator from an initial state and a stream selector (its low bit
    /// is forced to 1), seeded the way the PCG reference does.
    pub fn with_stream(init_state: u64, stream: u64) -> Self {
        let mut rng = Pcg32 {
            state: 0,
            inc: stream | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(init_state);
        rng.next_u32();
        rng
    }

    /// Next 32 uniformly distributed bits.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }
}
