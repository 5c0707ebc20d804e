//! The one import point for synchronization primitives: no other file of
//! the crate names `std::sync`.
//!
//! Under `--cfg loom` every atomic, lock and `Arc` that the update/flush
//! protocol uses comes from loom, so the model checker explores the
//! engine's real code; otherwise they come from `std`.
//!
//! A few items are `std`'s under loom too ([`std_only`]); each is outside
//! every model, for the reason given there.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicU8, Ordering},
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicU8, Ordering},
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

/// `std`'s items, under loom too. None of them takes part in the protocol
/// the loom models check:
///
/// * `OnceLock`: loom has none. The sections it creates lazily (a
///   chunk's shared cells and snapshots, a parent's `pending`, a group's
///   far row table) are created eagerly under loom where a model could
///   race on them (see `rows.rs`), and `pending` is created under the
///   structure lock before any flush can see it;
/// * `compiler_fence`: the owner path's light barrier, which loom cannot
///   model (it models the asymmetric barrier as `SeqCst` fences on both
///   sides, see `update.rs`);
/// * `StdArc`: the clock (a user's `dyn Clock`, read outside the protocol)
///   and the tree's identity tag (compared, never synchronized through);
/// * `StdMutex`, `StdMutexGuard`: the process-wide seat pool (`seat.rs`),
///   a `static` (loom's locks cannot be built in a constant), taken once
///   per thread, outside the models (loom threads share the OS thread's
///   seat; the models pick their lanes explicitly);
/// * `StdAtomicU64`, `StdAtomicBool`: statistics of the background flusher
///   thread and the manual clock, which no model runs; the flag that says
///   a tree's state may have a second handle (`engine.rs`, `CoreRef`),
///   read only through `&mut` of a handle, to pick the sole writer's path,
///   which no model runs (a sole writer has no other thread).
pub(crate) mod std_only {
    #[cfg_attr(loom, allow(unused_imports))] // the flusher's, not built under loom
    pub(crate) use std::sync::atomic::{
        compiler_fence, AtomicBool as StdAtomicBool, AtomicU64 as StdAtomicU64,
    };
    pub(crate) use std::sync::OnceLock;
    pub(crate) use std::sync::{Arc as StdArc, Mutex as StdMutex, MutexGuard as StdMutexGuard};
}

/// Locks a mutex, ignoring poisoning. A work sink's panic never unwinds
/// through the engine: it is caught where the sink is called, and the
/// operation completes before it is resumed (see `WorkSink`), so no lock is
/// poisoned by one. A lock poisoned by any other panic (an engine bug) is
/// taken all the same: the tree keeps counting rather than failing every
/// later call.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Takes a mutex if it is free, ignoring poisoning as [`lock`] does (a
/// poisoned lock is free: a `try_lock` that took poisoning for "held"
/// would skip every later flush of a tree whose flush once panicked).
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
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
/// | 4 `Leaf` | `active` (the registry's own mutex), `wake`, the saturation table: short critical sections that take nothing else (a condvar wait releases them) | flush entry/exit, the background flusher, async requests, saturation |
/// | 5 `Row` | one shard's row arena (`rows.rs`): allocates or frees a row, takes nothing else | an update's first touch of a (group, shard), `reap` |
///
/// Updates take no lock but `Row`, once per (group, shard) row (the seat
/// pool in `seat.rs`, taken once per thread, is a leaf too). `Row` ranks
/// above every other lock because an update may run anywhere a work sink
/// is called (the simulator's probes inject updates inside flushes). A flush under `lock_per_shard` (linux-6.17) must
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
    Row = 5,
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

/// Loads a word written once, before the caller's view of it was
/// published to it (and never written again while the caller uses it).
/// ORDERING: Relaxed: the publication ordered it. Under loom, an unsynced
/// load: loom checks that no write races it, and explores no interleaving
/// for it (it is not part of the protocol the models check).
#[inline(always)]
#[cfg_attr(loom, allow(unsafe_code))] // loom's unsynced load
pub(crate) fn load_immutable(word: &AtomicU64) -> u64 {
    #[cfg(loom)]
    // SAFETY: the caller's guarantee (one write, published before); loom
    // itself checks that no write races the load.
    return unsafe { word.unsync_load() };
    #[cfg(not(loom))]
    word.load(Ordering::Relaxed)
}

/// Loads a word that goes once from 0 to its final value with a Release
/// store, at any time (a lazily created section's address, see
/// `rows.rs`). ORDERING: Acquire; pairs with that store. Under loom the
/// value is set before anything is published (the sections exist from the
/// start there, see `rows.rs`), so it is read as [`load_immutable`].
#[inline(always)]
pub(crate) fn load_published(word: &AtomicU64) -> u64 {
    #[cfg(loom)]
    return load_immutable(word);
    #[cfg(not(loom))]
    word.load(Ordering::Acquire)
}

/// [`load_immutable`] for a byte.
#[inline(always)]
#[cfg_attr(loom, allow(unsafe_code))] // loom's unsynced load
pub(crate) fn load_immutable_u8(byte: &AtomicU8) -> u8 {
    #[cfg(loom)]
    // SAFETY: as for `load_immutable`.
    return unsafe { byte.unsync_load() };
    #[cfg(not(loom))]
    byte.load(Ordering::Relaxed)
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

/// Aligns `T` to 128 bytes (a cache-line pair, because the adjacent-line
/// prefetcher of x86 pulls lines in pairs), so it shares no line with
/// anything else (as `crossbeam_utils::CachePadded`, at the width this
/// crate's layout tests assert).
#[repr(C, align(128))]
#[derive(Debug, Default)]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
