//! The two runners: simulated (virtual time) and real (threads), and the
//! exact oracle that judges the simulated runner's reads.

pub mod oracle;
pub mod real;
pub mod real_spikes;
pub mod sim;

use crate::error::SimError;

pub use simcore::thread::Gate;

/// Spawns a scoped runner thread ([`simcore::thread::spawn_scoped`]); a
/// failure (a thread or address-space limit) is [`lab::RunError::Thread`].
///
/// # Errors
/// The thread cannot be started.
pub fn spawn_scoped<'scope, 'env, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    what: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, SimError> {
    Ok(simcore::thread::spawn_scoped(s, what, f)?)
}
