//! Integration tests of the simulator: determinism, analytical checks of
//! the cost and lock model, and the seeds' directions at reduced size.

mod analytical;
mod determinism;
mod directions;
