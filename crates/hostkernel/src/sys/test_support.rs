//! What the crate's unit tests share about the process-wide signal state:
//! the lock that serialises the tests counting exit-deferring guards, and
//! queries of the installed handler.

/// Held by the unit tests that create [`DeferExit`](crate::signals::DeferExit)
/// guards (a tree's creation takes one) while one of them counts
/// [`DEFERRING`](super::signal::DEFERRING): tests run on parallel threads of one process.
pub(crate) static DEFERRING_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The handler currently installed for `sig` (tests).
pub(crate) fn current_handler(sig: libc::c_int) -> libc::sighandler_t {
    // SAFETY: a query (null new action) into a zeroed, writable struct.
    let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::sigaction(sig, std::ptr::null(), &mut cur) };
    cur.sa_sigaction
}

/// The address of the crate's handler (tests).
pub(crate) fn our_handler() -> libc::sighandler_t {
    super::signal::handler()
}
