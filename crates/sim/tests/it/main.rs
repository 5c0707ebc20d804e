//! Integration tests of the simulator: determinism, analytical checks of
//! the cost and lock model, and the seeds' claims at reduced size.

mod analytical;
mod claims;
mod determinism;
