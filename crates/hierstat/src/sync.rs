//! The one import point for synchronization primitives.
//!
//! Under `--cfg loom` every atomic, lock and `Arc` the engine uses comes from
//! loom, so the model checker explores the engine's real code; otherwise they
//! come from `std`.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering},
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering},
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

/// The engine's lock order. Every operation takes locks in increasing rank
/// only, and never waits for a lock of a rank lower than or equal to one it
/// holds:
///
/// | rank | lock | held by |
/// |---|---|---|
/// | 1 `Gate` | a flush's exclusion: the tree-wide `flush_lock` (for a whole flush, or for one shard pass under `lock_per_shard`), or a registration in `active` (disjoint-parallel flushes, `verify`) | flushes, `verify` |
/// | 2 `Structure` | the `structure` RwLock (row table, names) | flushes (read, per pass under `lock_per_shard`), `verify` (read), `create`/`remove`/`reap`/`lookup` |
/// | 3 `ShardTree` | one shard's updated tree (`trees[s]`), one at a time | flush passes, `reap`, `verify` |
/// | 4 `Leaf` | `active` (the registry's own mutex), `wake`: short critical sections that take nothing else (a condvar wait releases them) | flush entry/exit, the background flusher, async requests |
///
/// Updates take no lock (the shard-slot pool in `shard.rs`, taken once per
/// thread, is a leaf too). A flush under `lock_per_shard` (linux-6.17) must
/// therefore take its pass lock *before* the structure lock, pass by pass:
/// holding the structure lock while waiting for the flush lock deadlocked
/// against `verify` (flush lock, then structure) with a writer queued on the
/// structure lock, since a queued writer blocks new readers.
///
/// Debug builds check the order at every acquisition ([`ranked`]): taking a
/// lock of a rank not above every rank the thread holds panics at once, so
/// the tests catch an inversion even in runs that do not happen to deadlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    Gate = 1,
    Structure = 2,
    ShardTree = 3,
    Leaf = 4,
}

/// Proof that the current thread holds a lock of some rank (debug builds:
/// checked and tracked per thread; release builds and loom: zero-sized).
#[derive(Debug)]
#[must_use]
pub(crate) struct Held {
    #[cfg(all(debug_assertions, not(loom)))]
    rank: Rank,
}

#[cfg(all(debug_assertions, not(loom)))]
std::thread_local! {
    /// Bit `r` set while the thread holds a lock of rank `r`.
    static HELD: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// Records that the current thread is about to take a lock of `rank`;
/// keep the result alive as long as the lock is held. Debug builds panic
/// if the thread already holds a lock of this rank or a higher one.
#[inline]
pub(crate) fn ranked(rank: Rank) -> Held {
    #[cfg(all(debug_assertions, not(loom)))]
    {
        let bit = 1u8 << rank as u8;
        HELD.with(|h| {
            let held = h.get();
            assert!(
                held & !(bit - 1) == 0,
                "lock order violated: taking a {rank:?} lock while holding ranks {held:#b}"
            );
            h.set(held | bit);
        });
        Held { rank }
    }
    #[cfg(not(all(debug_assertions, not(loom))))]
    {
        let _ = rank;
        Held {}
    }
}

#[cfg(all(debug_assertions, not(loom)))]
impl Drop for Held {
    fn drop(&mut self) {
        let bit = 1u8 << self.rank as u8;
        let _ = HELD.try_with(|h| h.set(h.get() & !bit));
    }
}

/// A lock guard together with its rank token.
#[derive(Debug)]
pub(crate) struct Ranked<G> {
    guard: G,
    _held: Held,
}

impl<G> Ranked<G> {
    /// Takes a lock of `rank` with `take`, checking the order first.
    #[inline]
    pub(crate) fn take(rank: Rank, take: impl FnOnce() -> G) -> Self {
        let held = ranked(rank);
        Ranked {
            guard: take(),
            _held: held,
        }
    }
}

impl<G> Ranked<G> {
    /// Pairs a guard taken after [`ranked`] with its token.
    #[inline]
    pub(crate) fn with(guard: G, held: Held) -> Self {
        Ranked { guard, _held: held }
    }
}

impl<G: std::ops::Deref> std::ops::Deref for Ranked<G> {
    type Target = G::Target;
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: std::ops::DerefMut> std::ops::DerefMut for Ranked<G> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

/// Locks one shard's updated tree (rank `ShardTree`).
pub(crate) fn lock_tree<T>(m: &Mutex<T>) -> Ranked<MutexGuard<'_, T>> {
    Ranked::take(Rank::ShardTree, || lock(m))
}

/// How a tree's owner path and its flushers fence each other (see
/// `update.rs`), decided when the tree is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Barriers {
    /// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` for flushers, a
    /// compiler fence for updaters (the process is registered for it).
    Membarrier,
    /// No membarrier (kernels without private expedited membarrier,
    /// sandboxes that forbid it, loom, or on request): owners take the
    /// shared path, and the flusher's barrier is a `SeqCst` fence.
    Fences,
}

impl Barriers {
    /// Membarrier where the kernel offers it and registration succeeds
    /// (registration is per process and idempotent), else fences.
    pub(crate) fn detect(allow_membarrier: bool) -> Self {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        if allow_membarrier {
            use rustix::thread::{membarrier, membarrier_query, MembarrierCommand as Cmd};
            let q = membarrier_query();
            if q.contains_command(Cmd::PrivateExpedited)
                && q.contains_command(Cmd::RegisterPrivateExpedited)
                && membarrier(Cmd::RegisterPrivateExpedited).is_ok()
            {
                return Barriers::Membarrier;
            }
        }
        let _ = allow_membarrier;
        Barriers::Fences
    }

    /// The flusher's side: on return, every thread of the process that
    /// was running has executed a full memory barrier.
    ///
    /// # Panics
    /// If the kernel refuses a membarrier the process registered for,
    /// which it documents it does not do: carrying on would risk lost
    /// updates.
    pub(crate) fn heavy(self) {
        match self {
            #[cfg(all(target_os = "linux", not(loom), not(miri)))]
            Barriers::Membarrier => {
                use rustix::thread::{membarrier, MembarrierCommand as Cmd};
                let mut tries = 0;
                while let Err(e) = membarrier(Cmd::PrivateExpedited) {
                    tries += 1;
                    assert!(
                        e == rustix::io::Errno::INTR && tries < 100,
                        "membarrier(PRIVATE_EXPEDITED) failed after registration: {e}"
                    );
                }
            }
            _ => fence_seqcst(),
        }
    }
}

/// A `SeqCst` fence (loom's under `--cfg loom`).
#[inline]
pub(crate) fn fence_seqcst() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

/// An `Acquire` fence (loom's under `--cfg loom`).
#[inline]
pub(crate) fn fence_acquire() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::Acquire);
    #[cfg(not(loom))]
    std::sync::atomic::fence(Ordering::Acquire);
}
