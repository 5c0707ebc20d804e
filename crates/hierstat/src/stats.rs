//! [`HierStats`]: the tree, its shards and the shared core.

use crate::clock::Clock;
use crate::config::{Config, MAX_SHARDS};
use crate::count::{Count, COUNT_LIMIT};
use crate::error::{ConfigError, Error};
use crate::group::Group;
use crate::node::{CachePadded, Node, TreeTag};
use crate::policy::Policy;
use crate::saturation::SaturationTable;
use crate::schema::Schema;
use crate::slab::Slab;
use crate::sync::{
    Arc, AtomicBool, AtomicU64, Condvar, Mutex, Rank, Ranked, RwLock, RwLockReadGuard,
    RwLockWriteGuard,
};
use crate::tree::Structure;
use crate::updated::{ListHead, ShardTree};
use std::collections::BTreeMap;

/// Hierarchical per-shard statistics for a tree of groups.
///
/// Updates write the caller's shard of the group and, at most once per
/// flush, queue the group on that shard's lock-free update list. Reads return
/// the last flushed hierarchical (or local) aggregate. Flushes visit only the
/// (group, shard) pairs updated since the last flush, children before
/// parents, under the configured [`Policy`].
///
/// ```
/// use hierstat::{Config, HierStats, Preset, Schema, Unit};
///
/// let mut b = Schema::builder();
/// let anon = b.state("anon", Unit::Bytes);
/// let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(4))?;
/// let web = stats.create(&stats.root(), "web")?;
/// let api = stats.create(&web, "api")?;
/// stats.add(&api, anon, 8192)?;
/// stats.flush_forced(&web).unwrap();
/// assert_eq!(stats.read(&web, anon)?, 8192);
/// assert_eq!(stats.read_local(&web, anon)?, 0);
/// # Ok::<(), hierstat::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct HierStats {
    pub(crate) core: Arc<Core>,
}

/// State shared by every handle, the flushers and the background thread.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) schema: Schema,
    pub(crate) policy: Policy,
    pub(crate) shards: usize,
    /// Threshold `T` in pages.
    pub(crate) threshold: u64,
    /// Updates stop counting a group above this: the policy's early break
    /// (see `EarlyBreak`), at most `COUNT_LIMIT` (see `count.rs`).
    pub(crate) break_above: u64,
    pub(crate) batch: u64,
    pub(crate) clock: std::sync::Arc<dyn Clock>,
    /// This tree's identity (see `TreeTag`).
    pub(crate) tree: TreeTag,
    pub(crate) root: Arc<Node>,
    /// Per-shard lock-free update lists.
    pub(crate) lists: Box<[ListHead]>,
    /// Per-shard persistent updated trees.
    pub(crate) trees: Box<[Mutex<ShardTree>]>,
    pub(crate) structure: RwLock<Structure>,
    /// The tree-wide flush lock (Serialize / Skip).
    pub(crate) flush_lock: Mutex<()>,
    /// Roots of running flushes (DisjointParallel).
    pub(crate) active: Mutex<Vec<Arc<Node>>>,
    pub(crate) active_cv: Condvar,
    /// Tree-wide threshold count (`ThresholdRule::Global`, see `count.rs`).
    pub(crate) global_updates: CachePadded<Count>,
    /// Global threshold: pages flushes took out of residues whose data has
    /// not reached the root's aggregates yet (a root flush lands them; a
    /// subtree flush leaves them in its parent's `pending`). Bound only.
    /// ORDERING: as `Node::in_flight`.
    pub(crate) global_in_flight: AtomicU64,
    /// Items that left `i64`'s range (see `saturation.rs`); rank `Leaf`.
    pub(crate) saturated: Mutex<SaturationTable>,
    /// Flushes in progress (between `flush_subtree`'s first drain and its
    /// threshold reset). While there are none, an owner's fold skips the
    /// threshold counters of groups already above `T` (see
    /// `Core::add_up`). ORDERING: see `FlushingGuard` and `add_up`.
    pub(crate) flushing: CachePadded<AtomicU64>,
    /// Clock time of the last root flush start. ORDERING: Relaxed; a timestamp.
    pub(crate) last_root_flush: AtomicU64,
    /// An async flush was requested and not yet served.
    pub(crate) async_requested: AtomicBool,
    /// Background flushers running (started and not yet stopped). An async
    /// hot path with none to serve it flushes synchronously instead.
    /// ORDERING: Relaxed; a mode hint (see `flush_entry`).
    pub(crate) flushers: AtomicU64,
    /// How owners and flushers fence each other.
    pub(crate) barriers: crate::sync::Barriers,
    /// Shards whose owner may take the plain path: all of them where the
    /// flushers have membarrier, none where they have only fences (an
    /// owner would then pay a `SeqCst` fence per update, no cheaper than
    /// the shared path's two RMWs).
    pub(crate) ownable: usize,
    /// The threshold accounting walks the ancestors' residues on every
    /// update (kernel-exact per-group accounting).
    pub(crate) walks_ancestors: bool,
    /// Per shard: an owner wrote this tree's owner cells on the shard (set
    /// once, see `update.rs`): flushes of the shard need the heavy barrier.
    pub(crate) owned: Box<[AtomicBool]>,
    /// Per shard: a shared-path writer wrote this tree on the shard (set
    /// once; for error bounds).
    pub(crate) shared_used: Box<[AtomicBool]>,
    /// Set flags in `owned` and `shared_used`: the residues per (group,
    /// shard) that error bounds must cover, summed over shards.
    /// ORDERING: Relaxed; a size for bounds.
    pub(crate) residue_lanes: AtomicU64,
    /// Removed groups whose rows are not recycled yet: their residues count
    /// in the global error bound like live groups'. ORDERING: Relaxed; a
    /// size for bounds, updated under the structure lock.
    pub(crate) zombie_rows: AtomicU64,
    /// Wakes the background flusher (async requests, stop).
    pub(crate) wake: Mutex<u64>,
    pub(crate) wake_cv: Condvar,
    /// Counters of flush outcomes, for observability.
    pub(crate) flush_stats: FlushStatCounters,
}

/// Atomic counters of flush outcomes. ORDERING: Relaxed; statistics only.
#[derive(Debug, Default)]
pub(crate) struct FlushStatCounters {
    pub(crate) flushes: AtomicU64,
    pub(crate) root_flushes: AtomicU64,
    pub(crate) skipped: AtomicU64,
    pub(crate) not_needed: AtomicU64,
    pub(crate) ratelimited: AtomicU64,
    pub(crate) async_requests: AtomicU64,
}

impl HierStats {
    /// Creates a tree holding only its root.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for 0 or more than 1024 shards, or a policy
    /// knob out of range (see [`Policy::check`](crate::Policy::check)).
    pub fn new(schema: Schema, config: Config) -> Result<Self, Error> {
        let Config {
            shards,
            policy,
            clock,
            membarrier,
        } = config;
        if shards == 0 || shards > MAX_SHARDS {
            return Err(ConfigError::Shards(shards).into());
        }
        policy.check(shards)?;
        let barriers = crate::sync::Barriers::detect(membarrier);
        // Owners write with plain stores only where flushers can issue the
        // heavy barrier (see `update.rs`).
        // Under Miri (which cannot run membarrier) owners keep the plain
        // path and fence after their writes, so that Miri checks its
        // unsafe row pointers and its races (see `update.rs`).
        let ownable = if barriers == crate::sync::Barriers::Membarrier || cfg!(miri) {
            shards
        } else {
            0
        };
        let mut slab = Slab::new(shards, ownable, schema.slots(), policy.batch as u64);
        let (row, rows) = slab.alloc().expect("an empty slab has room for the root");
        let tree = TreeTag::new();
        let root = Arc::new(Node::new(
            row,
            rows,
            None,
            schema.slots(),
            String::new(),
            tree.clone(),
        ));
        let structure = Structure {
            nodes: vec![Some(root.clone())],
            children: vec![BTreeMap::new()],
            zombies: Vec::new(),
            slab,
            live: 0,
            reaped: Default::default(),
        };
        let now = clock.now_ns();
        let core = Core {
            threshold: policy.threshold_pages(shards),
            break_above: policy.break_above(shards).min(COUNT_LIMIT),
            batch: policy.batch as u64,
            schema,
            policy,
            shards,
            clock,
            tree,
            root,
            lists: (0..shards).map(|_| ListHead::default()).collect(),
            trees: (0..shards)
                .map(|_| Mutex::new(ShardTree::default()))
                .collect(),
            structure: RwLock::new(structure),
            flush_lock: Mutex::new(()),
            active: Mutex::new(Vec::new()),
            active_cv: Condvar::new(),
            global_updates: CachePadded(Count::new()),
            global_in_flight: AtomicU64::new(0),
            saturated: Mutex::new(SaturationTable::default()),
            flushing: CachePadded(AtomicU64::new(0)),
            last_root_flush: AtomicU64::new(now),
            async_requested: AtomicBool::new(false),
            flushers: AtomicU64::new(0),
            zombie_rows: AtomicU64::new(0),
            barriers,
            ownable,
            walks_ancestors: policy.threshold == crate::policy::ThresholdRule::PerGroup
                && policy.scheme == crate::policy::ThresholdScheme::PerAncestor,
            owned: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            shared_used: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            residue_lanes: AtomicU64::new(0),
            wake: Mutex::new(0),
            wake_cv: Condvar::new(),
            flush_stats: FlushStatCounters::default(),
        };
        Ok(HierStats {
            core: Arc::new(core),
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.core.schema
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.core.policy
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.core.shards
    }

    /// The flush threshold `T` in pages of update magnitude.
    pub fn threshold_pages(&self) -> u64 {
        self.core.threshold
    }

    /// Whether a thread that owns its shard updates with plain loads and
    /// stores: the kernel offers private expedited `membarrier(2)` and the
    /// configuration allows it ([`Config::membarrier`]). Otherwise every
    /// update takes the shared (atomic) path.
    pub fn owner_path(&self) -> bool {
        self.core.ownable > 0
    }

    /// The clock's current time in ns.
    pub fn now_ns(&self) -> u64 {
        self.core.clock.now_ns()
    }
}

impl Core {
    /// `group`'s node, if the group belongs to this tree: the one check
    /// every entry point makes (a compare of the handle's copy of its
    /// tree's identity).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    #[inline(always)]
    pub(crate) fn own<'g>(&self, group: &'g Group) -> Result<&'g Arc<Node>, Error> {
        self.check(group)?;
        Ok(&group.node)
    }

    /// Whether `group` belongs to this tree ([`own`](Self::own) without the
    /// node).
    ///
    /// # Errors
    /// [`Error::ForeignGroup`].
    #[inline(always)]
    pub(crate) fn check(&self, group: &Group) -> Result<(), Error> {
        if group.tree == self.tree.id() {
            Ok(())
        } else {
            Err(foreign(group))
        }
    }

    /// The structure lock for reading (rank `Structure`, see `sync::Rank`).
    pub(crate) fn read_structure(&self) -> Ranked<RwLockReadGuard<'_, Structure>> {
        Ranked::take(Rank::Structure, || match self.structure.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        })
    }

    /// The structure lock for writing (rank `Structure`).
    pub(crate) fn write_structure(&self) -> Ranked<RwLockWriteGuard<'_, Structure>> {
        Ranked::take(Rank::Structure, || match self.structure.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        })
    }
}

#[cold]
#[inline(never)]
fn foreign(group: &Group) -> Error {
    Error::ForeignGroup(group.path().to_string())
}
