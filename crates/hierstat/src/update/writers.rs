//! Who writes each shard of a tree, and how owners and flushers fence each
//! other ([`Writers`]): the owner path's half of the tree's state. The
//! update paths themselves are in `update.rs`.

use crate::mode::{Fallback, Mode};
use crate::rseq::Rseq;
use crate::sync::{AtomicBool, AtomicU64, Barriers, Ordering};
use crate::work::{Work, WorkSink};

/// Who writes each shard, and how owners and flushers fence each other:
/// the owner path's half of the tree's state.
#[derive(Debug)]
pub(crate) struct Writers {
    /// How owners and flushers fence each other.
    barriers: Barriers,
    /// The per-CPU mode's sections, if the tree runs in it (the shards are
    /// then the CPUs, see `rseq.rs`): its flushers' barrier is the rseq
    /// membarrier, and no shard is ownable.
    rseq: Option<Rseq>,
    /// Why the per-CPU mode was asked for and not given, if it was.
    fallback: Option<Fallback>,
    /// Shards whose owner may take the plain path: all of them where the
    /// flushers have membarrier, none where they have only fences (an
    /// owner would then pay a `SeqCst` fence per update, no cheaper than
    /// the shared path's two RMWs).
    ownable: usize,
    /// Per shard: an owner wrote this tree's owner cells on the shard (set
    /// once, see `Core::claim_owned` (`update.rs`)): flushes of the shard need the
    /// heavy barrier.
    owned: Box<[AtomicBool]>,
    /// Per shard: a shared-path writer wrote this tree on the shard (set
    /// once; for error bounds).
    shared_used: Box<[AtomicBool]>,
    /// Set flags in `owned` and `shared_used`: the residues per (group,
    /// shard) that error bounds must cover, summed over shards.
    /// ORDERING: Relaxed; a size for bounds.
    residue_lanes: AtomicU64,
}

impl Writers {
    /// The writers of a tree of `shards` shards; `membarrier`: whether
    /// flushers may use membarrier (see `Config::membarrier`); `rseq`: the
    /// per-CPU mode's sections if the tree runs in it (see [`choose`]),
    /// `fallback` why not if it was asked for.
    pub(crate) fn new(
        shards: usize,
        membarrier: bool,
        rseq: Option<Rseq>,
        fallback: Option<Fallback>,
    ) -> Self {
        let barriers = if rseq.is_some() {
            // The rseq membarrier (see `choose`), not this one.
            Barriers::Fences
        } else {
            Barriers::detect(membarrier)
        };
        // Owners write with plain stores only where flushers can issue the
        // heavy barrier. Under Miri (which cannot run membarrier) owners
        // keep the plain path and fence after their writes, so that Miri
        // checks its unsafe row pointers and its races. In the per-CPU mode
        // no thread owns a shard.
        let ownable = if rseq.is_some() {
            0
        } else if barriers == Barriers::Membarrier || cfg!(miri) {
            shards
        } else {
            0
        };
        Writers {
            barriers,
            rseq,
            fallback,
            ownable,
            owned: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            shared_used: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            residue_lanes: AtomicU64::new(0),
        }
    }

    /// Shards `0..ownable` may be written by their owners' plain path.
    #[inline(always)]
    pub(crate) fn ownable(&self) -> usize {
        self.ownable
    }

    /// The per-CPU mode's sections, if the tree runs in it.
    #[inline(always)]
    pub(crate) fn rseq(&self) -> Option<&Rseq> {
        self.rseq.as_ref()
    }

    /// How the tree's implicit updates write (see [`Mode`]).
    pub(crate) fn mode(&self) -> Mode {
        let fallback = self.fallback;
        if self.rseq.is_some() {
            Mode::PerCpu
        } else if self.ownable > 0 {
            Mode::Owner { fallback }
        } else {
            Mode::Shared { fallback }
        }
    }

    /// The residues per (group, shard) a bound must cover: one per shard,
    /// plus one for each shard that both its owner and the shared path
    /// wrote (each keeps a residue). ORDERING: Relaxed; a size for bounds.
    pub(crate) fn lanes(&self, shards: usize) -> u64 {
        (shards as u64).max(self.residue_lanes.load(Ordering::Relaxed))
    }

    /// How many shards their owners wrote, and how many the shared path
    /// wrote. ORDERING: Relaxed; flags set once, read for diagnostics.
    pub(crate) fn written(&self) -> (usize, usize) {
        let count = |f: &[AtomicBool]| f.iter().filter(|b| b.load(Ordering::Relaxed)).count();
        (count(&self.owned), count(&self.shared_used))
    }

    /// Marks shard `s` written by its owner, once; the caller fences after
    /// (see `Core::claim_owned` (`update.rs`)).
    pub(super) fn announce_owner(&self, s: usize) {
        // ORDERING: Relaxed; set once per (tree, shard), ordered by the
        // caller's fence that follows.
        if !self.owned[s].load(Ordering::Relaxed) && !self.owned[s].swap(true, Ordering::Relaxed) {
            // ORDERING: Relaxed; a count for error bounds.
            self.residue_lanes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Marks shard `s` written through the shared path, once.
    #[inline(always)]
    pub(super) fn announce_shared(&self, s: usize) {
        // ORDERING: Relaxed; a flag set once per (tree, shard), read only
        // for error bounds.
        if !self.shared_used[s].load(Ordering::Relaxed)
            && !self.shared_used[s].swap(true, Ordering::Relaxed)
        {
            self.residue_lanes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The flusher's side, after a pass has dequeued its rows and before it
    /// reads any cell: a `SeqCst` fence — which acquires the shared
    /// writers' Release header RMWs that the drain's clears read, and
    /// orders the owner-flag check (see `Core::claim_owned` (`update.rs`)) — then, if
    /// an owner ever wrote this tree on shard `s`, the heavy barrier (the
    /// flusher's half of the owner path's asymmetric barrier, see the
    /// module docs).
    pub(crate) fn barrier_before_reading<W: WorkSink>(&self, s: usize, work: &mut W) {
        crate::sync::fence_seqcst();
        // ORDERING: Relaxed, after the `SeqCst` fence: see `Core::claim_owned`.
        if self.owned[s].load(Ordering::Relaxed) {
            match &self.rseq {
                // Per-CPU rows: see `Core::update_percpu` (`update.rs`).
                Some(r) => r.membarrier(),
                None => self.barriers.heavy(),
            }
            work.count(Work::Barrier, 1);
        }
    }
}

/// The per-CPU mode asked for (`per_cpu`) on a tree of `shards` shards,
/// membarrier allowed or not: its sections and its shard count (the
/// possible CPUs), or why it runs without them (and `shards` unchanged).
///
/// Besides the sections (see `rseq.rs`), the mode needs the flushers'
/// barrier, `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ`, for which the process
/// registers here (once per process is enough; registering again is
/// harmless).
pub(crate) fn choose(
    per_cpu: bool,
    membarrier: bool,
    shards: usize,
) -> (Option<Rseq>, usize, Option<Fallback>) {
    if !per_cpu {
        return (None, shards, None);
    }
    #[cfg(loom)]
    {
        // Modelled on the configured shards (see `rseq::model`).
        let _ = membarrier;
        return (Rseq::detect_on(shards).ok(), shards, None);
    }
    #[cfg(not(loom))]
    {
        let fail = |why| (None, shards, Some(why));
        let rseq = match Rseq::detect() {
            Ok(r) => r,
            Err(why) => return fail(why),
        };
        let cpus = match crate::rseq::possible_cpus() {
            Some(n) if n <= crate::config::MAX_SHARDS => n,
            _ => return fail(Fallback::Cpus),
        };
        if !membarrier || !register_rseq_membarrier() {
            return fail(Fallback::NoMembarrier);
        }
        (Some(rseq), cpus, None)
    }
}

/// Registers the process for `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ`;
/// whether the kernel offers and accepted it.
#[cfg(not(loom))]
fn register_rseq_membarrier() -> bool {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        use rustix::thread::{membarrier, membarrier_query, MembarrierCommand as Cmd};
        let q = membarrier_query();
        q.contains_command(Cmd::PrivateExpeditedRseq)
            && q.contains_command(Cmd::RegisterPrivateExpeditedRseq)
            && membarrier(Cmd::RegisterPrivateExpeditedRseq).is_ok()
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    false
}
