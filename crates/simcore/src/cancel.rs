//! Cancellation: a token long-running work polls between steps.
//!
//! A [`Cancel`] is cancelled by [`Cancel::cancel`] on any of its clones or,
//! when made with [`Cancel::linked`], also by a process-wide flag that
//! something else sets (the binary's SIGINT/SIGTERM handler: see
//! `hostkernel::signals`). The token itself holds no global state.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation token; clones share their state.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    own: Arc<AtomicBool>,
    linked: Option<&'static AtomicBool>,
}

impl Cancel {
    /// A token cancelled only by [`Cancel::cancel`].
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A token that also reads "cancelled" once `flag` is set (a signal
    /// handler's flag).
    pub fn linked(flag: &'static AtomicBool) -> Cancel {
        Cancel {
            own: Arc::default(),
            linked: Some(flag),
        }
    }

    /// Requests cancellation.
    pub fn cancel(&self) {
        // ORDERING: SeqCst, as the flag a signal handler sets: the token is
        // polled rarely, and a total order keeps the reasoning trivial.
        self.own.store(true, Ordering::SeqCst);
    }

    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        // ORDERING: SeqCst, see `cancel`.
        self.own.load(Ordering::SeqCst) || self.linked.is_some_and(|f| f.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag_and_links_see_theirs() {
        let a = Cancel::new();
        let b = a.clone();
        assert!(!a.is_cancelled());
        b.cancel();
        assert!(a.is_cancelled());
        static FLAG: AtomicBool = AtomicBool::new(false);
        let l = Cancel::linked(&FLAG);
        assert!(!l.is_cancelled());
        FLAG.store(true, Ordering::SeqCst);
        assert!(l.is_cancelled());
    }
}
