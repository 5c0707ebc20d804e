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
///
/// The engine calls `count` in the middle of its operations (a flush
/// reports each step as it takes it), and may hold its locks then. A sink
/// may call back into the tree (read, update, even flush other groups).
/// A sink that panics does not break the tree: the engine catches the
/// panic where it called the sink, calls the sink no more, completes the
/// operation (every row drained, every flush registration and snapshot
/// given back, as if the sink had returned), and then resumes the panic
/// in the caller of [`Simulator`](crate::sim::Simulator)'s method. Built
/// with `panic = "abort"`, a panic aborts the process as any other.
pub trait WorkSink {
    /// Records `n` units of `work`.
    fn count(&mut self, work: Work, n: u64);
}

/// A caller's sink behind the engine's guard (see [`WorkSink`]): a panic
/// in it is caught at the call and kept, the sink is not called again,
/// and [`finish`](Self::finish) resumes the panic once the operation has
/// completed.
pub(crate) struct Guarded<'a, W: WorkSink + ?Sized> {
    inner: &'a mut W,
    panic: Option<Box<dyn std::any::Any + Send + 'static>>,
}

impl<'a, W: WorkSink + ?Sized> Guarded<'a, W> {
    /// Guards `inner`.
    pub(crate) fn new(inner: &'a mut W) -> Self {
        Guarded { inner, panic: None }
    }

    /// Resumes the sink's panic, if it panicked; call once the operation
    /// has completed.
    pub(crate) fn finish(self) {
        if let Some(p) = self.panic {
            std::panic::resume_unwind(p);
        }
    }

    /// Runs `op` with `inner` guarded, then [`finish`](Self::finish)es:
    /// the operation completes whatever the sink does, and its panic, if
    /// any, reaches the caller afterwards.
    #[inline]
    pub(crate) fn run<R>(inner: &'a mut W, op: impl FnOnce(&mut Self) -> R) -> R {
        let mut work = Guarded::new(inner);
        let r = op(&mut work);
        work.finish();
        r
    }
}

impl<W: WorkSink + ?Sized> WorkSink for Guarded<'_, W> {
    #[inline]
    fn count(&mut self, work: Work, n: u64) {
        if self.panic.is_none() {
            let inner = &mut *self.inner;
            // The sink's own state may be broken by its panic; the engine
            // never looks at it again (it is not called after), and the
            // caller gets the panic back.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.count(work, n);
            }));
            if let Err(p) = r {
                self.panic = Some(p);
            }
        }
    }
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
