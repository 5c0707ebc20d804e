//! Cancellation: a token the experiments poll, optionally tied to SIGINT and
//! SIGTERM.
//!
//! The signal side is the crate's only global state: one `static AtomicBool`
//! (in the `sys` module) that the handler sets; a handler can reach nothing
//! else. The handler does nothing but that (and, on a *second* signal,
//! restores the default action and re-raises it, so a process that does not
//! come back can still be stopped; the next run's stale sweep then removes
//! what it left). Cleanup itself always runs in normal code: the experiment
//! sees the flag, returns [`Error::Interrupted`], and the RAII owners
//! ([`crate::CgroupTree`], the worker handles) kill, reap and remove.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::Error;
use crate::sys;

/// A cancellation token. Clones share the same flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    signals: bool,
}

impl Cancel {
    /// A token cancelled only by [`Cancel::cancel`].
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Installs the process's SIGINT/SIGTERM handler (idempotent) and
    /// returns a token that also reads "cancelled" once either signal has
    /// arrived. After this, Ctrl-C no longer kills the process outright: the
    /// caller must poll the token (the experiments do) and exit.
    pub fn with_signals() -> Result<Cancel, Error> {
        sys::install_signal_handlers().map_err(|e| Error::io("sigaction", "SIGINT/SIGTERM", e))?;
        Ok(Cancel {
            flag: Arc::default(),
            signals: true,
        })
    }

    /// Requests cancellation.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether cancellation was requested (by [`Cancel::cancel`] or, for a
    /// token from [`Cancel::with_signals`], by SIGINT/SIGTERM).
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst) || (self.signals && sys::signalled())
    }

    /// `Err(Error::Interrupted)` if cancelled.
    pub fn check(&self) -> Result<(), Error> {
        if self.is_cancelled() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag() {
        let a = Cancel::new();
        let b = a.clone();
        assert!(a.check().is_ok());
        b.cancel();
        assert!(a.is_cancelled());
        assert!(matches!(a.check(), Err(Error::Interrupted)));
        assert!(!Cancel::new().is_cancelled());
    }
}
