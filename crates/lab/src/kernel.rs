//! The kernel path a flush policy is priced at, and the built-in kernel
//! policies: the kernels the source threads compared.
//!
//! The engine runs a policy's knobs (`hierstat::Policy`); the priced
//! workloads (`sim::priced`) also need how the kernel lays out what an
//! update and a charge touch, which the knobs do not say. Two kernels with
//! the same knobs can differ there: v2 of the per-memcg threshold series
//! and 6.8 as merged both walk every ancestor, but v2 touches three cache
//! lines a level and 6.8, after `9cee7e8ef3e3`, one. A [`KernelPath`] says
//! it:
//!
//! | part | field | values |
//! |---|---|---|
//! | update (`memcg_rstat_updated`) | [`UpdatePath::lines_per_level`] | distinct cache lines one level of the walk loads (v2: 3; 6.8: 1) |
//! | | [`UpdatePath::global_fold`] | a global count's fold: [`Fold::Always`] (5.16, `5b3be698a872`) or [`Fold::Guarded`], skipped while the count is over the threshold (`873f64b791a2`, 6.0) |
//! | charge (`try_charge`, page counters) | [`ChargePath::stock_pages`] | the per-CPU stock (`MEMCG_CHARGE_BATCH`: 32, 64 from `1813e51eece0`, 6.1) |
//! | | [`ChargePath::counter_layout`] | a page counter's `usage` on its own line ([`CounterLayout::OwnLine`], 6.1) or sharing it with the read-mostly limits ([`CounterLayout::SharedLine`]) |
//! | | [`ChargePath::protection`] | `propagate_protected_usage` per level and charge: an exchange on every charge ([`Protection::EveryCharge`], before 6.1) or only when the protected usage changes ([`Protection::OnChange`]) |
//!
//! The three charge-path changes are Shakeel Butt's "memcg: optimize
//! charge codepath" (Aug 2022, merged for 6.1; the 72-CPU netperf of its
//! cover letter, Message-ID `20220825000506.239406-1-shakeelb@google.com`:
//! (A) fewer atomics for low/min, (B) `usage` apart from `high`, (C) batch
//! 64). `docs/policies.md` shows how to replay such a history with the
//! `[[policy]]` knobs.
//!
//! | built-in | engine | update path | charge path |
//! |---|---|---|---|
//! | `next-20231009` | one global threshold, batch 64, root flushes, skip if one runs | global count, guarded fold | stock 64, own line, on change |
//! | `per-memcg-v2` | per-memcg thresholds on every ancestor (`8d59d2214c23` as posted in v2) | 3 lines a level | as above |
//! | `per-memcg-merged` | the same knobs | 1 per-CPU line a level (`9cee7e8ef3e3`) | as above |
//!
//! The era presets carry their era's path ([`preset_path`]).

use hierstat::{
    Concurrency, EarlyBreak, FlushScope, HotPathFlush, Policy, Preset, ThresholdRule,
    ThresholdScheme, ThresholdSize,
};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How a fold into a global count behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fold {
    /// Always an atomic add (5.16 `5b3be698a872`, backported to 5.15.18).
    Always,
    /// A read first, the add only while the count is at most the threshold
    /// (`873f64b791a2`, 6.0).
    Guarded,
}

/// Where a page counter's `usage` sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterLayout {
    /// On its own cache line (6.1, "mm: page_counter: rearrange struct
    /// page_counter fields").
    OwnLine,
    /// On one line with the read-mostly fields (limits, protection, the
    /// parent pointer): every charge that writes `usage` takes them from
    /// the CPUs that read them.
    SharedLine,
}

/// What `propagate_protected_usage` does at each level of a charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protection {
    /// Exchanges `min_usage` and `low_usage` on every charge of a level
    /// with `memory.min` or `memory.low` set (before 6.1).
    EveryCharge,
    /// Reads them and exchanges only when the protected usage changes
    /// (6.1, "mm: page_counter: remove unneeded atomic ops for low/min").
    OnChange,
}

/// How the update path's walk (`memcg_rstat_updated`) lays out what it
/// touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdatePath {
    /// Distinct cache lines one level of the walk loads, one after the
    /// other (v2: `memcg->vmstats_percpu` and `memcg->css.parent`, two
    /// lines of the memcg every CPU reads, and this CPU's `stats_updates`;
    /// after `9cee7e8ef3e3` one per-CPU line). No one writes them in the
    /// common case, so they cost what the cache level the workload leaves
    /// them in costs, shared or not.
    pub lines_per_level: u32,
    /// A global count's fold.
    pub global_fold: Fold,
}

/// How the charge path is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChargePath {
    /// Pages the per-CPU charge stock holds.
    pub stock_pages: u32,
    /// Where a page counter's `usage` sits.
    pub counter_layout: CounterLayout,
    /// Protection propagation per level and charge.
    pub protection: Protection,
}

/// The kernel path a policy is priced at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelPath {
    /// The stat update's walk.
    pub update: UpdatePath,
    /// The charge.
    pub charge: ChargePath,
}

/// The charge path of 6.1 and later (all three of the 2022 series).
pub const CHARGE_6_1: ChargePath = ChargePath {
    stock_pages: 64,
    counter_layout: CounterLayout::OwnLine,
    protection: Protection::OnChange,
};

/// The charge path before 6.1.
pub const CHARGE_6_0: ChargePath = ChargePath {
    stock_pages: 32,
    counter_layout: CounterLayout::SharedLine,
    protection: Protection::EveryCharge,
};

/// One per-CPU line a level (6.8 after `9cee7e8ef3e3`, and hierstat's own
/// residue row); a global count is folded only while under the threshold.
pub const UPDATE_PER_CPU: UpdatePath = UpdatePath {
    lines_per_level: 1,
    global_fold: Fold::Guarded,
};

/// The path of a preset's era: 5.13 and 5.15(.y) with the charge path
/// before 6.1 and the unconditional global fold; 6.8 and later with 6.1's
/// charge path and 6.8's per-CPU walk; hierstat as 6.8.
pub fn preset_path(p: Preset) -> KernelPath {
    match p {
        Preset::Linux5_13
        | Preset::Linux5_15
        | Preset::Linux5_15Async
        | Preset::Linux5_15Ratelimited => KernelPath {
            update: UpdatePath {
                global_fold: Fold::Always,
                ..UPDATE_PER_CPU
            },
            charge: CHARGE_6_0,
        },
        _ => KernelPath {
            update: UPDATE_PER_CPU,
            charge: CHARGE_6_1,
        },
    }
}

/// A built-in kernel policy: a kernel the source threads compared, its
/// engine knobs and its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelPolicy {
    /// `next-20231009`, the base of source 000's netperf runs: one global
    /// threshold (`MEMCG_CHARGE_BATCH` 64 since `1813e51eece0`), its fold
    /// guarded by a read (`873f64b791a2`), root flushes that skip while one
    /// runs (`stats_flush_ongoing`), the ratelimited refault flush.
    Next20231009,
    /// v2 of Yosry Ahmed's series (source 000, patch 3 as posted,
    /// `8d59d2214c23` in the merged form): per-memcg thresholds, every
    /// update walking every ancestor; each level loads
    /// `memcg->vmstats_percpu` and `memcg->css.parent` (two lines of the
    /// memcg, read by every CPU) and `stats_updates` at the end of this
    /// CPU's ~1.2 KB `memcg_vmstats_percpu` (its own line). Subtree
    /// flushes that serialize (patch 5).
    PerMemcgV2,
    /// The same series as merged for 6.8, with `9cee7e8ef3e3` ("optimize
    /// parent iteration in memcg_rstat_updated()"): `stats_updates`, the
    /// per-CPU parent pointer and `vmstats` on one per-CPU line, so a
    /// level loads one line, this CPU's own ("O(3N) to O(2+N)").
    PerMemcgMerged,
}

impl KernelPolicy {
    /// Every built-in kernel policy, oldest first.
    pub const ALL: [KernelPolicy; 3] = [
        KernelPolicy::Next20231009,
        KernelPolicy::PerMemcgV2,
        KernelPolicy::PerMemcgMerged,
    ];

    /// The name (`-p`, reports, the store).
    pub fn name(self) -> &'static str {
        match self {
            KernelPolicy::Next20231009 => "next-20231009",
            KernelPolicy::PerMemcgV2 => "per-memcg-v2",
            KernelPolicy::PerMemcgMerged => "per-memcg-merged",
        }
    }

    /// One line for `mmlab list`.
    pub fn description(self) -> &'static str {
        match self {
            KernelPolicy::Next20231009 => {
                "source 000's base: one global threshold, guarded fold (873f64b791a2), batch 64"
            }
            KernelPolicy::PerMemcgV2 => {
                "source 000 patch 3 (v2): per-memcg thresholds on every ancestor, 3 lines a level"
            }
            KernelPolicy::PerMemcgMerged => {
                "per-memcg thresholds as merged in 6.8: 1 per-CPU line a level (9cee7e8ef3e3)"
            }
        }
    }

    /// The engine's knobs.
    pub fn knobs(self) -> Policy {
        match self {
            KernelPolicy::Next20231009 => {
                let mut p = Preset::Linux5_15.policy();
                p.threshold = ThresholdRule::Global;
                p.threshold_size = ThresholdSize::BatchPerShard;
                p.scope = FlushScope::Root;
                p.concurrency = Concurrency::Skip;
                p.hot_path = HotPathFlush::Ratelimited;
                p.batch = 64;
                p
            }
            KernelPolicy::PerMemcgV2 | KernelPolicy::PerMemcgMerged => {
                let mut p = Preset::Linux6_8.policy();
                p.threshold = ThresholdRule::PerGroup;
                p.scheme = ThresholdScheme::PerAncestor;
                p.early_break = EarlyBreak::Off;
                p
            }
        }
    }

    /// The kernel path.
    pub fn path(self) -> KernelPath {
        let update = match self {
            KernelPolicy::Next20231009 | KernelPolicy::PerMemcgMerged => UPDATE_PER_CPU,
            KernelPolicy::PerMemcgV2 => UpdatePath {
                lines_per_level: 3,
                global_fold: Fold::Guarded,
            },
        };
        KernelPath {
            update,
            charge: CHARGE_6_1,
        }
    }
}

impl fmt::Display for KernelPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The base of a user policy, and the built-in policies that run on the
/// engine: a preset or a built-in kernel policy, written as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Base {
    /// A hierstat preset (an era, or ours).
    Preset(Preset),
    /// A built-in kernel policy.
    Kernel(KernelPolicy),
}

impl Base {
    /// Every base: the presets, then the kernel policies.
    pub fn all() -> impl Iterator<Item = Base> {
        Preset::ALL
            .into_iter()
            .map(Base::Preset)
            .chain(KernelPolicy::ALL.into_iter().map(Base::Kernel))
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Base::Preset(p) => p.name(),
            Base::Kernel(k) => k.name(),
        }
    }

    /// The engine's knobs.
    pub fn knobs(self) -> Policy {
        match self {
            Base::Preset(p) => p.policy(),
            Base::Kernel(k) => k.knobs(),
        }
    }

    /// The kernel path.
    pub fn path(self) -> KernelPath {
        match self {
            Base::Preset(p) => preset_path(p),
            Base::Kernel(k) => k.path(),
        }
    }
}

impl From<Preset> for Base {
    fn from(p: Preset) -> Base {
        Base::Preset(p)
    }
}

impl From<KernelPolicy> for Base {
    fn from(k: KernelPolicy) -> Base {
        Base::Kernel(k)
    }
}

impl fmt::Display for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBase(pub String);

impl fmt::Display for UnknownBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Base::all().map(Base::name).collect();
        write!(f, "unknown base `{}` (known: {})", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownBase {}

impl FromStr for Base {
    type Err = UnknownBase;
    fn from_str(s: &str) -> Result<Base, UnknownBase> {
        Base::all()
            .find(|b| b.name() == s)
            .ok_or_else(|| UnknownBase(s.to_string()))
    }
}

impl Serialize for Base {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Base {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Base, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        let names: Vec<&str> = Base::all().map(Base::name).collect();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(n.parse::<Base>().unwrap().name(), *n);
            assert!(!names[..i].contains(n), "{n} twice");
        }
        assert!("linux-9".parse::<Base>().is_err());
    }

    #[test]
    fn the_compared_kernels_differ_where_the_threads_say() {
        let (base, v2, merged) = (
            KernelPolicy::Next20231009,
            KernelPolicy::PerMemcgV2,
            KernelPolicy::PerMemcgMerged,
        );
        assert_eq!(base.knobs().threshold, ThresholdRule::Global);
        assert_eq!(base.knobs().batch, 64);
        assert_eq!(v2.knobs(), merged.knobs(), "the same engine knobs");
        assert_eq!(v2.path().update.lines_per_level, 3);
        assert_eq!(merged.path().update.lines_per_level, 1);
        assert_eq!(base.path().update.global_fold, Fold::Guarded);
        assert_eq!(
            preset_path(Preset::Linux5_15).update.global_fold,
            Fold::Always
        );
        assert_eq!(preset_path(Preset::Linux5_15).charge.stock_pages, 32);
        assert_eq!(preset_path(Preset::Linux6_8).charge, CHARGE_6_1);
    }
}
