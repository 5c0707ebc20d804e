//! The process's one SIGINT/SIGTERM design, for the `mmlab` binary and for
//! every kernel run (and any other program on this crate).
//!
//! [`install`] puts one handler in place for the rest of the process and
//! returns a [`Cancel`] token linked to its flag. What a signal does
//! depends on whether cleanup is pending:
//!
//! * **nothing to clean up** (no [`DeferExit`] guard alive): the process
//!   writes the message given to [`install`] to stderr and exits at once
//!   with `128 + signal` (130 for Ctrl-C). Whatever it was doing needs no
//!   cleanup: a simulation holds only memory, and a results-store
//!   transaction in progress is rolled back by SQLite's journal.
//! * **cleanup pending** (a guard alive: every [`crate::CgroupTree`] holds
//!   one from before its first `mkdir` until its last `rmdir`): the first
//!   signal only sets the flag. The experiment polls its token, returns
//!   [`crate::Error::Interrupted`], and the RAII owners kill, reap and
//!   remove; the caller then exits (mmlab with 130). A second signal
//!   restores the default action and re-raises it, so a process that does
//!   not come back can still be stopped; the next run's
//!   [`crate::sweep_stale`] removes what it left.
//!
//! The handler itself does only async-signal-safe work (atomics, `write`,
//! `_exit`, `raise`), in the crate's private `sys` module.

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use simcore::Cancel;

use crate::error::Error;
use crate::sys::signal;

/// Installs the process's SIGINT/SIGTERM handler (the first call; later
/// calls keep it and its message) and returns a token that reads
/// "cancelled" once a signal arrived. `exit_message` is written to stderr
/// when a signal ends the process at once (nothing to clean up).
///
/// # Errors
/// `sigaction` failed.
pub fn install(exit_message: Option<&'static [u8]>) -> Result<Cancel, Error> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| signal::install_signal_handler(exit_message).map_err(|e| e.to_string()))
        .clone()
        .map_err(|e| Error::io("sigaction", "SIGINT/SIGTERM", std::io::Error::other(e)))?;
    Ok(Cancel::linked(&signal::SIGNALLED))
}

/// Whether SIGINT or SIGTERM arrived since [`install`].
pub fn signalled() -> bool {
    // ORDERING: SeqCst, as the handler's accesses (see `sys::signal::on_signal`).
    signal::SIGNALLED.load(Ordering::SeqCst)
}

/// While one lives, a first signal only sets the flag instead of ending
/// the process: the owner has cleanup to do in normal code.
#[derive(Debug)]
pub struct DeferExit(());

/// Defers the immediate exit until the returned guard drops.
pub fn defer_exit() -> DeferExit {
    // ORDERING: SeqCst, as the handler's load (see `sys::signal::on_signal`): the
    // guard is counted before the caller creates what needs cleanup.
    signal::DEFERRING.fetch_add(1, Ordering::SeqCst);
    DeferExit(())
}

impl Drop for DeferExit {
    fn drop(&mut self) {
        // ORDERING: SeqCst, see `defer_exit`.
        signal::DEFERRING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `Err(Error::Interrupted)` once `cancel` reads cancelled: the check the
/// experiments make between their steps.
pub(crate) fn check(cancel: &Cancel) -> Result<(), Error> {
    if cancel.is_cancelled() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One handler for the process, installed once; tokens see its flag;
    /// guards nest.
    #[test]
    fn one_handler_linked_tokens_and_nested_guards() {
        let _counting = crate::sys::test_support::DEFERRING_TESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let a = install(None).unwrap();
        let b = install(Some(b"ignored\n")).unwrap();
        use crate::sys::test_support::{current_handler, our_handler};
        assert_eq!(current_handler(libc::SIGTERM), our_handler());
        assert_eq!(current_handler(libc::SIGINT), our_handler());
        assert!(!a.is_cancelled() && !b.is_cancelled());
        let g1 = defer_exit();
        let g2 = defer_exit();
        assert_eq!(signal::DEFERRING.load(Ordering::SeqCst), 2);
        drop(g1);
        drop(g2);
        assert_eq!(signal::DEFERRING.load(Ordering::SeqCst), 0);
        let own = Cancel::new();
        assert!(check(&own).is_ok());
        own.cancel();
        assert!(matches!(check(&own), Err(Error::Interrupted)));
    }
}
