//! The one import point for synchronization primitives.
//!
//! Under `--cfg loom` every atomic, lock and `Arc` the engine uses comes from
//! loom, so the model checker explores the engine's real code; otherwise they
//! come from `std`. No other module imports `std::sync` directly.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering},
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering},
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

/// Locks a mutex, ignoring poisoning: every structure the engine guards is
/// left consistent at each unlock (a panicking flusher leaves at worst a
/// delta in `pending`, which the next flush picks up), so a poisoned lock
/// carries no broken invariant.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Yields the processor (loom: lets the model checker schedule another
/// thread, which a spin loop needs under loom).
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}
