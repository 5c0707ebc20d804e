//! simcore: what every simulator and measurement of the workspace shares,
//! defined once.
//!
//! * [`rng::Rng`]: the one random number generator (PCG-XSH-RR 64/32 seeded
//!   through SplitMix64) with the distributions the models draw. Its streams
//!   are value-stable: a seed gives the same numbers on every platform and
//!   in every release, so recorded results can be compared byte for byte.
//! * [`time`]: virtual time, integer nanoseconds.
//! * [`queue::EventQueue`]: a priority queue of events of any type in
//!   `(time, emission order)` order, so events scheduled for the same
//!   instant are delivered in the order they were scheduled (a radix heap
//!   on virtual time).
//! * [`stats`]: mean, median, standard deviation, nearest-rank quantiles,
//!   the funclatency-style log2 histogram, a least-squares slope.
//! * [`clock`]: the calling thread's CPU clock.
//! * [`thread`]: the one spawn helper and a start line for measured threads.
//! * [`cancel::Cancel`]: the cancellation token long runs poll.
//!
//! Nothing here reads OS entropy or the wall clock inside a model, and
//! nothing is global: each run owns its generator, its queue and its token.

#![warn(missing_docs)]

pub mod cancel;
pub mod clock;
pub mod queue;
pub mod rng;
pub mod stats;
pub mod thread;
pub mod time;

pub use cancel::Cancel;
pub use queue::{EventQueue, Scheduled};
pub use rng::Rng;
pub use time::SimTime;
