//! The process's SIGINT/SIGTERM plumbing: the flag a signal sets, the count
//! of exit-deferring guards, the message an immediate exit writes, and the
//! handler ([`on_signal`]) with its installation. The design these serve
//! is `crate::signals`.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use super::query::cvt;

/// The process-wide "SIGINT/SIGTERM received" flag, set by [`on_signal`].
/// With the two values below it is the crate's only global state: a signal
/// handler can reach nothing else.
pub(crate) static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// How many [`crate::signals::DeferExit`] guards live: while any does, a
/// first signal only sets [`SIGNALLED`] (cleanup runs in normal code).
pub(crate) static DEFERRING: AtomicUsize = AtomicUsize::new(0);

/// The message written to stderr before an immediate exit (set once, before
/// the handler is installed; null: none).
static EXIT_MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static EXIT_MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work: atomics, write(2), _exit(2), signal(2),
    // raise(3).
    // ORDERING: SeqCst on every access of the three statics: they are
    // touched rarely (a signal, a guard), and a total order makes "the
    // guard was taken before the cgroup existed" hold without a proof.
    if SIGNALLED.swap(true, Ordering::SeqCst) {
        // A second signal: restore the default action and re-raise, so a
        // process that does not come back can still be stopped (the next
        // run's stale sweep removes what it left).
        // SAFETY: signal() and raise() are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return;
    }
    if DEFERRING.load(Ordering::SeqCst) > 0 {
        // Cleanup pending: the code that owns it polls the flag.
        return;
    }
    let msg = EXIT_MESSAGE.load(Ordering::SeqCst);
    let len = EXIT_MESSAGE_LEN.load(Ordering::SeqCst);
    if !msg.is_null() {
        // SAFETY: `msg` points to `len` bytes of a `&'static [u8]` (stored
        // by `install_signal_handler` before the handler existed); write(2)
        // is async-signal-safe. A short or failed write changes nothing.
        unsafe { libc::write(2, msg.cast_const().cast(), len) };
    }
    // SAFETY: _exit is async-signal-safe; it skips destructors on purpose
    // (an SQLite transaction in progress is rolled back by its journal on
    // the next open, as after `kill -9`).
    unsafe { libc::_exit(128 + sig) }
}

/// The signals the handler takes.
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Installs the process's SIGINT/SIGTERM handler ([`on_signal`]) for the
/// rest of the process, with `message` as what an immediate exit writes.
/// Called once (see `crate::signals::install`).
pub(crate) fn install_signal_handler(message: Option<&'static [u8]>) -> io::Result<()> {
    if let Some(m) = message {
        EXIT_MESSAGE_LEN.store(m.len(), Ordering::SeqCst);
        EXIT_MESSAGE.store(m.as_ptr().cast_mut(), Ordering::SeqCst);
    }
    // SAFETY: sigaction is plain old data; all-zero is a valid value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler();
    sa.sa_flags = libc::SA_RESTART;
    // SAFETY: sa_mask is a valid sigset_t inside `sa`.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    for sig in SIGNALS {
        // SAFETY: `sa` is fully initialised; the handler only uses atomics
        // and async-signal-safe functions; the old action is not wanted.
        cvt(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) })?;
    }
    Ok(())
}

/// The address of [`on_signal`] as `sigaction` takes it.
pub(super) fn handler() -> libc::sighandler_t {
    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
}
