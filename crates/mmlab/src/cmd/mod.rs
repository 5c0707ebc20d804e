//! One module per command of the `mmlab` binary.

pub mod bench;
pub mod calibrate;
pub mod kernel;
pub mod run;
pub mod store;
pub mod suite;
pub mod sweep;
