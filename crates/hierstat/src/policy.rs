//! Flush policy: the knobs the kernel's history turned, and named presets.
//!
//! | preset | threshold | flush scope | concurrent flush | hot path (refault/reclaim) |
//! |---|---|---|---|---|
//! | `linux-5.13` | none: every read flushes | subtree | serialize | none |
//! | `linux-5.15` | global, shards × 32 | root | skip (trylock) | synchronous root flush |
//! | `linux-5.15-async` | global | root | skip | over the threshold, schedule the periodic flush now |
//! | `linux-5.15-ratelimited` | global | root | skip | flush only if the periodic flush is > 2 periods late |
//! | `linux-6.8` | per group, shards × 64 | subtree | serialize | ratelimited subtree flush |
//! | `linux-6.17` | per group, early break | subtree, lock dropped per shard | serialize | ratelimited |
//! | `hierstat` | per group, folded (O(1) update), T = 64 × shards on folded magnitude, residue batch 32, reservations in the reported bound | subtree, disjoint subtrees in parallel | wait only for overlapping flushes | over the eviction group's threshold, ask the background flusher (synchronous subtree flush if none runs) |

use crate::count::MAX_THRESHOLD;
use crate::error::ConfigError;
use std::fmt;
use std::str::FromStr;

/// A policy knob: a plain enum, written (with the `serde` feature) in
/// kebab case.
macro_rules! knob {
    ($(#[$m:meta])* pub enum $name:ident { $($body:tt)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(rename_all = "kebab-case")
        )]
        pub enum $name { $($body)* }
    };
}

knob! {
    /// How much unflushed update magnitude makes a flush necessary.
    #[non_exhaustive]
    pub enum ThresholdRule {
        /// No threshold: every read flushes (5.13, `cgroup_rstat_flush` on each
        /// `memory.stat` read).
        None,
        /// One tree-wide magnitude counter (5.15/5.16 `stats_flush_threshold`).
        Global,
        /// One magnitude counter per group (6.8 `8d59d2214c23`).
        PerGroup,
    }
}

knob! {
    /// How per-group magnitudes are accounted on the update path.
    #[non_exhaustive]
    pub enum ThresholdScheme {
        /// The kernel's exact accounting: every update adds its magnitude to a
        /// per-shard residue of the group *and of every ancestor*, folding each
        /// residue into that group's atomic at `batch` (6.8 `memcg_rstat_updated`).
        /// O(depth) atomics per update. Unfolded error per group ≤ shards × (batch − 1).
        PerAncestor,
        /// Ours: the update adds to the updated group's own per-shard residue
        /// only; when it reaches `batch`, the folded magnitude is added to the
        /// group and to each ancestor. When a (group, shard) pair is first
        /// queued after a flush, `batch − 1` pages (the most its residue can hold
        /// unfolded) are *reserved* in the group and each ancestor. O(1) atomics
        /// per update; O(depth) per `batch` pages and per queued pair. Folded
        /// magnitude plus reservations bound the unflushed magnitude of a
        /// subtree exactly (`read_bounded` reports it); see
        /// [`Policy::strict_bound`] for whether reservations also trigger flushes.
        Folded,
    }
}

knob! {
    /// When the per-group walk stops early (2025 `memcg_rstat_updated` early break).
    #[non_exhaustive]
    pub enum EarlyBreak {
        /// Never: walk to the root.
        Off,
        /// Upstream: stop at the first group already above the threshold `T`.
        /// "flushable(child) ⇒ flushable(ancestors)" then holds only approximately.
        Upstream,
        /// Stop only above `T + shards × (batch − 1)`, which makes the implication
        /// exact for [`ThresholdScheme::PerAncestor`] (and is `T` for
        /// [`ThresholdScheme::Folded`], whose ancestors get the same folds).
        Margin,
    }
}

/// Size of the flush threshold `T` in pages of update magnitude.
///
/// Written as text (its [`FromStr`] and [`Display`](fmt::Display) forms,
/// and its serde form with the `serde` feature): `batch-per-shard`,
/// `sqrt`, `kernel-worst-case`, `N-per-shard`, or `N` fixed pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThresholdSize {
    /// `batch × shards` (the kernel: `MEMCG_CHARGE_BATCH × num_online_cpus()`).
    BatchPerShard,
    /// `batch × isqrt(shards + 2)` (Waiman Long's 2026 proposal).
    BatchSqrtShards,
    /// `batch × shards + shards × (batch − 1)`: the kernel's real worst-case
    /// error for 6.8+ (its threshold plus the per-CPU residue it cannot
    /// see), used as a threshold that the folded accounting enforces exactly.
    KernelWorstCase,
    /// A number of pages per shard, independent of `batch`.
    PagesPerShard(u64),
    /// A fixed number of pages.
    Fixed(u64),
}

knob! {
    /// Which group a threshold-guarded flush flushes: the whole tree or the
    /// read group's subtree (there is nothing between, so the enum is closed).
    pub enum FlushScope {
        /// Always the whole tree (5.15–6.7).
        Root,
        /// The subtree of the group being read (5.13, 6.8+).
        Subtree,
    }
}

/// What a flusher does when another flush is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Concurrency {
    /// Skip: "we just need one flusher and everyone else can benefit"
    /// (5.15 `spin_trylock`, 2023 `stats_flush_ongoing`). Reads may be stale.
    Skip,
    /// Wait for the one tree-wide flush lock (5.13, 6.8+).
    Serialize,
    /// Wait only for flushes of an ancestor or descendant; flushes of
    /// disjoint subtrees run in parallel (ours).
    DisjointParallel,
    /// One flush at a time; a threshold-guarded flush that finds one
    /// running waits for it at most `max_wait_ms`, then checks its
    /// threshold again (the flush it waited for usually made its own
    /// unneeded) and flushes only if still over it; past the wait it skips
    /// and reads what is there. Forced and periodic flushes wait as under
    /// [`Concurrency::Serialize`]. The "ongoing flusher" proposals (J. D.
    /// Brouer, 2024: waiters on a running root flush), with a bound on the
    /// wait.
    WaitOngoing {
        /// The longest a guarded flush waits for a running one (0: skip at
        /// once, as [`Concurrency::Skip`]).
        max_wait_ms: u32,
    },
}

impl Concurrency {
    /// The rule's name in policy files: `skip`, `serialize`,
    /// `disjoint-parallel` or `wait-ongoing` (whose bound is a number of its
    /// own, [`Concurrency::max_wait_ms`]).
    pub fn name(self) -> &'static str {
        match self {
            Concurrency::Skip => "skip",
            Concurrency::Serialize => "serialize",
            Concurrency::DisjointParallel => "disjoint-parallel",
            Concurrency::WaitOngoing { .. } => "wait-ongoing",
        }
    }

    /// The bound of [`Concurrency::WaitOngoing`]'s wait, `None` for the
    /// other rules.
    pub fn max_wait_ms(self) -> Option<u32> {
        match self {
            Concurrency::WaitOngoing { max_wait_ms } => Some(max_wait_ms),
            _ => None,
        }
    }

    /// The rule called `name` ([`Concurrency::name`]), with its wait bound:
    /// `wait-ongoing` needs one and the other rules take none.
    ///
    /// # Errors
    /// A message naming the rules, or the misplaced or missing bound.
    pub fn from_name(name: &str, max_wait_ms: Option<u32>) -> Result<Concurrency, String> {
        let rule = match name {
            "skip" => Concurrency::Skip,
            "serialize" => Concurrency::Serialize,
            "disjoint-parallel" => Concurrency::DisjointParallel,
            "wait-ongoing" => {
                return max_wait_ms
                    .map(|max_wait_ms| Concurrency::WaitOngoing { max_wait_ms })
                    .ok_or_else(|| "`wait-ongoing` needs max_wait_ms".to_string())
            }
            other => {
                return Err(format!(
                    "unknown concurrency `{other}` (known: skip, serialize, disjoint-parallel, \
                     wait-ongoing)"
                ))
            }
        };
        match max_wait_ms {
            Some(_) => Err("max_wait_ms only with `wait-ongoing`".into()),
            None => Ok(rule),
        }
    }
}

knob! {
    /// What the refault / reclaim path does about stale stats.
    #[non_exhaustive]
    pub enum HotPathFlush {
        /// Nothing (5.13 and before: stats were propagated eagerly).
        None,
        /// A threshold-guarded flush per the policy's scope (5.15 root flush;
        /// `hierstat`: subtree of the eviction group).
        Sync,
        /// Flush only if the periodic flush is more than 2 periods late
        /// (5.15.y `9b3016154c91`, 6.8 `mem_cgroup_flush_stats_ratelimited`).
        Ratelimited,
        /// Over the threshold, ask the background flusher to run now and return
        /// (Shakeel's 2022 async attempt,
        /// `20220226002412.113819-1-shakeelb@google.com`); with no background
        /// flusher running, flush synchronously as [`HotPathFlush::Sync`].
        Async,
    }
}

/// All knobs of the flush policy.
///
/// Start from a preset's and change the knobs you need (the struct is
/// `#[non_exhaustive]`, so that a new knob breaks no one's code):
///
/// ```
/// use hierstat::{Preset, ThresholdSize};
///
/// let mut p = Preset::Hierstat.policy();
/// p.threshold_size = ThresholdSize::BatchSqrtShards;
/// p.batch = 16;
/// assert_eq!(p.threshold_pages(1024), 16 * 32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// Threshold rule.
    pub threshold: ThresholdRule,
    /// Per-group accounting scheme (for [`ThresholdRule::PerGroup`]).
    pub scheme: ThresholdScheme,
    /// Early break of the per-group walk.
    pub early_break: EarlyBreak,
    /// Threshold size.
    pub threshold_size: ThresholdSize,
    /// With [`ThresholdScheme::Folded`]: whether the per-pair reservations
    /// count towards the flush trigger (every guarded read is then within
    /// `T` of exact, at the price of flushing wide, lightly updated
    /// subtrees often) or only towards the reported bound (the trigger then
    /// sees folded magnitude, as the kernel's does, and a guarded read is
    /// within `T + reservations`, which `read_bounded` reports).
    pub strict_bound: bool,
    /// Scope of threshold-guarded flushes.
    pub scope: FlushScope,
    /// Concurrent flushers.
    pub concurrency: Concurrency,
    /// Drop the flush lock between shards (6.15 `0efc297a3c49`); otherwise it
    /// is held for the whole flush.
    pub lock_per_shard: bool,
    /// Hot-path flush rule.
    pub hot_path: HotPathFlush,
    /// Per-shard residue batch in pages (`MEMCG_CHARGE_BATCH`: 32 before 6.1, 64 after).
    pub batch: u32,
    /// Period of the background flusher in ns (kernel `FLUSH_TIME` = 2 s).
    pub period_ns: u64,
}

/// The named presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    /// 5.13: rstat for memcg (`2d146aa3aa84`); every `memory.stat` read flushes its subtree.
    Linux5_13,
    /// 5.15: global threshold, root flushes, trylock skip, synchronous root
    /// flush in `workingset_refault` (`1f828223b799`).
    Linux5_15,
    /// 5.15 with the refault flush turned into "schedule the periodic flush now".
    Linux5_15Async,
    /// 5.15.y / 5.18: `mem_cgroup_flush_stats_delayed` (`9b3016154c91`).
    Linux5_15Ratelimited,
    /// 6.8: per-memcg thresholds (`8d59d2214c23`), subtree flushes without
    /// skipping (`7d7ef0a4686a`), ratelimited refault flush (`b00684722262`).
    Linux6_8,
    /// 6.17: early break (2025), lock dropped per CPU (6.15), lockless update
    /// lists (`36df6e3dbd7e`).
    Linux6_17,
    /// Ours: folded O(1) thresholds with the margin rule, parallel disjoint
    /// subtree flushes, threshold-guarded subtree flush on the hot path.
    Hierstat,
}

impl Preset {
    /// Every preset, oldest first.
    pub const ALL: [Preset; 7] = [
        Preset::Linux5_13,
        Preset::Linux5_15,
        Preset::Linux5_15Async,
        Preset::Linux5_15Ratelimited,
        Preset::Linux6_8,
        Preset::Linux6_17,
        Preset::Hierstat,
    ];

    /// The preset's name, as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Linux5_13 => "linux-5.13",
            Preset::Linux5_15 => "linux-5.15",
            Preset::Linux5_15Async => "linux-5.15-async",
            Preset::Linux5_15Ratelimited => "linux-5.15-ratelimited",
            Preset::Linux6_8 => "linux-6.8",
            Preset::Linux6_17 => "linux-6.17",
            Preset::Hierstat => "hierstat",
        }
    }

    /// The preset's knobs.
    pub fn policy(self) -> Policy {
        const FLUSH_TIME: u64 = 2_000_000_000;
        let v515 = Policy {
            threshold: ThresholdRule::Global,
            scheme: ThresholdScheme::Folded,
            early_break: EarlyBreak::Off,
            threshold_size: ThresholdSize::BatchPerShard,
            strict_bound: false,
            scope: FlushScope::Root,
            concurrency: Concurrency::Skip,
            lock_per_shard: false,
            hot_path: HotPathFlush::Sync,
            batch: 32,
            period_ns: FLUSH_TIME,
        };
        let v68 = Policy {
            threshold: ThresholdRule::PerGroup,
            scheme: ThresholdScheme::PerAncestor,
            early_break: EarlyBreak::Off,
            threshold_size: ThresholdSize::BatchPerShard,
            strict_bound: false,
            scope: FlushScope::Subtree,
            concurrency: Concurrency::Serialize,
            lock_per_shard: false,
            hot_path: HotPathFlush::Ratelimited,
            batch: 64,
            period_ns: FLUSH_TIME,
        };
        match self {
            Preset::Linux5_13 => Policy {
                threshold: ThresholdRule::None,
                scope: FlushScope::Subtree,
                concurrency: Concurrency::Serialize,
                hot_path: HotPathFlush::None,
                ..v515
            },
            Preset::Linux5_15 => v515,
            Preset::Linux5_15Async => Policy {
                hot_path: HotPathFlush::Async,
                ..v515
            },
            Preset::Linux5_15Ratelimited => Policy {
                hot_path: HotPathFlush::Ratelimited,
                ..v515
            },
            Preset::Linux6_8 => v68,
            Preset::Linux6_17 => Policy {
                early_break: EarlyBreak::Upstream,
                lock_per_shard: true,
                ..v68
            },
            Preset::Hierstat => Policy {
                scheme: ThresholdScheme::Folded,
                // No early break: a walk that stops at a group being flushed
                // would skip magnitude the flush then subtracts. The walks
                // run once per `batch` pages or per claim, so the break
                // saves little.
                early_break: EarlyBreak::Off,
                // The kernel's threshold, 64 pages per CPU, on folded
                // magnitude; reservations go to the reported bound
                // (`strict_bound: true` makes every guarded read within T,
                // but flushes wide subtrees far more often: stat-readers
                // p99.9 went from 0.2 µs to 104–199 µs).
                threshold_size: ThresholdSize::PagesPerShard(64),
                // A smaller residue batch than the kernel's keeps the per-pair
                // reservation (31 pages) and so the reported bound small;
                // folds walk the ancestors once per 32 pages. (16 missed no
                // event either but cost 1.7x at depth 8; 64 let stale-read
                // miss an event within its wider bound.)
                batch: 32,
                concurrency: Concurrency::DisjointParallel,
                lock_per_shard: true,
                // Over the threshold, hand the flush to the background
                // flusher and decide on the current (bounded) stats: in
                // refault-storm (96 CPUs) the refault latency fell from
                // 1.60x linux-5.15-ratelimited's (a synchronous subtree
                // flush) to 0.99x, with 0.08% of decisions off exact
                // against ratelimited's 5.66%. With no flusher running,
                // the hot path flushes synchronously.
                hot_path: HotPathFlush::Async,
                ..v68
            },
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for an unknown preset name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPreset(pub String);

impl fmt::Display for UnknownPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = Preset::ALL.iter().map(|p| p.name()).collect();
        write!(
            f,
            "unknown policy {:?} (known: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownPreset {}

impl FromStr for Preset {
    type Err = UnknownPreset;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPreset(s.to_string()))
    }
}

impl fmt::Display for ThresholdSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdSize::BatchPerShard => f.write_str("batch-per-shard"),
            ThresholdSize::BatchSqrtShards => f.write_str("sqrt"),
            ThresholdSize::KernelWorstCase => f.write_str("kernel-worst-case"),
            ThresholdSize::PagesPerShard(p) => write!(f, "{p}-per-shard"),
            ThresholdSize::Fixed(t) => write!(f, "{t}"),
        }
    }
}

/// Error for a threshold size that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadThresholdSize(pub String);

impl fmt::Display for BadThresholdSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a threshold size (batch-per-shard, sqrt, kernel-worst-case, \
             N-per-shard, or N fixed pages, N >= 1)",
            self.0
        )
    }
}

impl std::error::Error for BadThresholdSize {}

impl FromStr for ThresholdSize {
    type Err = BadThresholdSize;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadThresholdSize(s.to_string());
        let n = |t: &str| match t.trim().parse::<u64>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(bad()),
        };
        match s.trim() {
            "batch-per-shard" => Ok(ThresholdSize::BatchPerShard),
            "sqrt" | "batch-sqrt-shards" => Ok(ThresholdSize::BatchSqrtShards),
            "kernel-worst-case" => Ok(ThresholdSize::KernelWorstCase),
            t => match t.strip_suffix("-per-shard") {
                Some(p) => n(p).map(ThresholdSize::PagesPerShard),
                None => n(t).map(ThresholdSize::Fixed),
            },
        }
    }
}

/// With the `serde` feature, [`Preset`] and [`ThresholdSize`] are written
/// as their text forms.
#[cfg(feature = "serde")]
mod serde_text {
    use super::{Preset, ThresholdSize};
    use std::str::FromStr;

    macro_rules! as_text {
        ($t:ty) => {
            impl serde::Serialize for $t {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.collect_str(self)
                }
            }

            impl<'de> serde::Deserialize<'de> for $t {
                fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                    <$t>::from_str(&text).map_err(serde::de::Error::custom)
                }
            }
        };
    }

    as_text!(Preset);
    as_text!(ThresholdSize);
}

impl Policy {
    /// The threshold `T` in pages for a tree with `shards` shards
    /// (saturating at `u64::MAX`; [`check`](Self::check) refuses more than
    /// [`MAX_THRESHOLD`]).
    pub fn threshold_pages(&self, shards: usize) -> u64 {
        self.threshold_exact(shards).try_into().unwrap_or(u64::MAX)
    }

    /// `T` without overflow (the sizes multiply two 64-bit numbers).
    fn threshold_exact(&self, shards: usize) -> u128 {
        let (b, n) = (u128::from(self.batch), shards as u128);
        match self.threshold_size {
            ThresholdSize::BatchPerShard => b * n,
            ThresholdSize::BatchSqrtShards => b * u128::from(isqrt(shards as u64 + 2)),
            ThresholdSize::KernelWorstCase => (2 * b).saturating_sub(1) * n,
            ThresholdSize::PagesPerShard(p) => u128::from(p) * n,
            ThresholdSize::Fixed(t) => u128::from(t),
        }
    }

    /// The value above which the per-group walk stops (see [`EarlyBreak`]);
    /// `u64::MAX` when it never stops.
    pub fn break_above(&self, shards: usize) -> u64 {
        let t = self.threshold_pages(shards);
        match (self.early_break, self.scheme) {
            (EarlyBreak::Off, _) => u64::MAX,
            (EarlyBreak::Upstream, _) | (EarlyBreak::Margin, ThresholdScheme::Folded) => t,
            (EarlyBreak::Margin, ThresholdScheme::PerAncestor) => t.saturating_add(
                (shards as u64).saturating_mul(u64::from(self.batch).saturating_sub(1)),
            ),
        }
    }

    /// Checks every knob's range for a tree of `shards` shards: the batch
    /// (1..=2^20 pages, the residue field's width), the threshold (at most
    /// [`MAX_THRESHOLD`] pages, so that counts never near their limit) and
    /// the ratelimit period (at most 2^63 ns).
    ///
    /// # Errors
    /// The first knob out of range.
    pub fn check(&self, shards: usize) -> Result<(), ConfigError> {
        if self.batch == 0 || self.batch > 1 << 20 {
            return Err(ConfigError::Batch(self.batch));
        }
        let t = self.threshold_exact(shards);
        if t > u128::from(MAX_THRESHOLD) {
            return Err(ConfigError::Threshold(
                (t <= u128::from(u64::MAX)).then_some(t),
            ));
        }
        if self.period_ns > 1 << 63 {
            return Err(ConfigError::Period(self.period_ns));
        }
        Ok(())
    }
}

fn isqrt(n: u64) -> u64 {
    let mut x = (n as f64).sqrt() as u64;
    while x * x > n {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= n {
        x += 1;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>().unwrap(), p);
        }
        assert!("linux-4.0".parse::<Preset>().is_err());
    }

    #[test]
    fn sizes_and_concurrency_rules_round_trip_through_their_names() {
        for s in [
            ThresholdSize::BatchPerShard,
            ThresholdSize::BatchSqrtShards,
            ThresholdSize::KernelWorstCase,
            ThresholdSize::PagesPerShard(16),
            ThresholdSize::Fixed(4096),
        ] {
            assert_eq!(s.to_string().parse::<ThresholdSize>(), Ok(s));
        }
        for bad in ["0", "0-per-shard", "x-per-shard", "", "sqrt2"] {
            assert!(bad.parse::<ThresholdSize>().is_err(), "{bad}");
        }
        for c in [
            Concurrency::Skip,
            Concurrency::Serialize,
            Concurrency::DisjointParallel,
            Concurrency::WaitOngoing { max_wait_ms: 50 },
        ] {
            assert_eq!(Concurrency::from_name(c.name(), c.max_wait_ms()), Ok(c));
        }
        assert!(Concurrency::from_name("wait-ongoing", None).is_err());
        assert!(Concurrency::from_name("skip", Some(5)).is_err());
        assert!(Concurrency::from_name("nope", None).is_err());
    }

    #[test]
    fn thresholds() {
        let p = Preset::Linux6_8.policy();
        assert_eq!(p.threshold_pages(96), 64 * 96);
        assert_eq!(Preset::Linux5_15.policy().threshold_pages(96), 32 * 96);
        let s = Policy {
            threshold_size: ThresholdSize::BatchSqrtShards,
            ..p
        };
        assert_eq!(s.threshold_pages(1024), 64 * 32);
        let m = Policy {
            early_break: EarlyBreak::Margin,
            ..p
        };
        assert_eq!(m.break_above(4), 256 + 4 * 63);
    }
}
