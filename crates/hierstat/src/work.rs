//! Work counters: what each update or flush did, for the simulator's cost
//! model. Free when unused: callers pass `&mut ()`, whose [`WorkSink`]
//! methods are empty and inline away.

/// One kind of engine work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Work {
    /// A shard pass of a flush (lock, drain, extract).
    ShardScanned,
    /// A (group, shard) pair visited by a flush.
    GroupVisited,
    /// A counter slot read (and, if non-zero, folded) by a flush.
    CounterAggregated,
    /// An atomic read-modify-write.
    Atomic,
    /// A node popped from a shard's lock-free update list.
    ListPop,
    /// A lock taken.
    LockAcquired,
    /// A lock that was found held (the caller waited).
    LockWaited,
    /// A process-wide (heavy) memory barrier issued by a flush pass over a
    /// shard that an owner thread writes with plain stores.
    Barrier,
}

/// Receives work reports.
pub trait WorkSink {
    /// Records `n` units of `work`.
    fn count(&mut self, work: Work, n: u64);
}

impl WorkSink for () {
    #[inline(always)]
    fn count(&mut self, _: Work, _: u64) {}
}

/// Work totals, accumulated over any number of operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkCounters {
    /// Shard passes.
    pub shards_scanned: u64,
    /// (group, shard) pairs visited.
    pub groups_visited: u64,
    /// Counter slots aggregated.
    pub counters_aggregated: u64,
    /// Atomic read-modify-writes.
    pub atomics: u64,
    /// Update-list pops.
    pub list_pops: u64,
    /// Locks taken.
    pub lock_acquisitions: u64,
    /// Locks found held.
    pub lock_waits: u64,
    /// Heavy (process-wide) barriers.
    pub barriers: u64,
}

impl WorkSink for WorkCounters {
    #[inline]
    fn count(&mut self, work: Work, n: u64) {
        let f = match work {
            Work::ShardScanned => &mut self.shards_scanned,
            Work::GroupVisited => &mut self.groups_visited,
            Work::CounterAggregated => &mut self.counters_aggregated,
            Work::Atomic => &mut self.atomics,
            Work::ListPop => &mut self.list_pops,
            Work::LockAcquired => &mut self.lock_acquisitions,
            Work::LockWaited => &mut self.lock_waits,
            Work::Barrier => &mut self.barriers,
        };
        *f += n;
    }
}

impl std::ops::AddAssign for WorkCounters {
    fn add_assign(&mut self, o: Self) {
        self.shards_scanned += o.shards_scanned;
        self.groups_visited += o.groups_visited;
        self.counters_aggregated += o.counters_aggregated;
        self.atomics += o.atomics;
        self.list_pops += o.list_pops;
        self.lock_acquisitions += o.lock_acquisitions;
        self.lock_waits += o.lock_waits;
        self.barriers += o.barriers;
    }
}
