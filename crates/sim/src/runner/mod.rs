//! The two runners: simulated (virtual time) and real (threads).

pub mod real;
pub mod real_spikes;
pub mod sim;
