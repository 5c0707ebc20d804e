//! simcore: the discrete-event core every simulator in the workspace shares.
//!
//! * [`rng::Rng`]: the one random number generator (PCG-XSH-RR 64/32 seeded
//!   through SplitMix64) with the distributions the models draw. Its streams
//!   are value-stable: a seed gives the same numbers on every platform and
//!   in every release, so recorded results can be compared byte for byte.
//! * [`time`]: virtual time, integer nanoseconds.
//! * [`queue::EventQueue`]: a priority queue of events of any type in
//!   `(time, emission order)` order, so events scheduled for the same
//!   instant are delivered in the order they were scheduled.
//!
//! Nothing here reads OS entropy or the clock, and nothing is global: each
//! run owns its generator and its queue.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::{EventQueue, Scheduled};
pub use rng::Rng;
pub use time::SimTime;
