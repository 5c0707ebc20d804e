//! Integration tests of the simulator: determinism, analytical checks of
//! the cost and lock model, and the source threads' claims at reduced size.

mod analytical;
mod claims;
mod determinism;
mod estimate_table;
mod real_readers;
mod tolerance;
