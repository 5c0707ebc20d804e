//! The two runners: simulated (virtual time) and real (threads), and the
//! exact oracle that judges the simulated runner's reads.

pub mod oracle;
pub mod real;
pub mod real_spikes;
pub mod sim;
