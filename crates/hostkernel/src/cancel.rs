//! Cancellation: a token the experiments poll, optionally tied to SIGINT and
//! SIGTERM.
//!
//! The signal side is the crate's only global state: one `static AtomicBool`
//! (in the `sys` module) that the handler sets; a handler can reach nothing
//! else. The handler does nothing but that (and, on a *second* signal,
//! restores the default action and re-raises it, so a process that does not
//! come back can still be stopped; the next run's stale sweep then removes
//! what it left). The handler is in place only while a token from
//! [`Cancel::with_signals`] lives: the actions before it come back when the
//! last clone drops. Cleanup itself always runs in normal code: the experiment
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
    /// The handler's scope: the previous SIGINT/SIGTERM actions come back
    /// when the last clone of a [`Cancel::with_signals`] token drops.
    signals: Option<Arc<sys::SignalScope>>,
}

impl Cancel {
    /// A token cancelled only by [`Cancel::cancel`].
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Installs the process's SIGINT/SIGTERM handler and returns a token
    /// that also reads "cancelled" once either signal has arrived. While
    /// the token (or a clone) lives, Ctrl-C no longer kills the process
    /// outright: the caller must poll the token (the experiments do) and
    /// exit. When the last clone drops, the actions in place before come
    /// back (drop tokens in the reverse order of their creation).
    pub fn with_signals() -> Result<Cancel, Error> {
        let scope = sys::install_signal_handlers()
            .map_err(|e| Error::io("sigaction", "SIGINT/SIGTERM", e))?;
        Ok(Cancel {
            flag: Arc::default(),
            signals: Some(Arc::new(scope)),
        })
    }

    /// Requests cancellation.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether cancellation was requested (by [`Cancel::cancel`] or, for a
    /// token from [`Cancel::with_signals`], by SIGINT/SIGTERM).
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst) || (self.signals.is_some() && sys::signalled())
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

    /// A caller's own handler comes back when the last token drops
    /// (mmlab's Ctrl-C report after a suite's kernel section).
    #[test]
    fn the_previous_handler_comes_back_when_the_last_token_drops() {
        // SAFETY: SIGTERM set to "ignore" for the test; nothing else in
        // this crate's unit tests installs signal handlers.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
        let c = Cancel::with_signals().unwrap();
        let c2 = c.clone();
        assert_eq!(sys::current_handler(libc::SIGTERM), sys::our_handler());
        drop(c);
        assert_eq!(sys::current_handler(libc::SIGTERM), sys::our_handler());
        assert!(!c2.is_cancelled());
        drop(c2);
        assert_eq!(sys::current_handler(libc::SIGTERM), libc::SIG_IGN);
        // SAFETY: back to the default action.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_DFL) };
    }

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
