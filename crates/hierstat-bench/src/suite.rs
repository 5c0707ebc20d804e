//! The engine suite: every case `mmlab bench` reports, the ratios it
//! derives from them and their targets, measured in one interleaved run.

use crate::flush::Evictor;
use crate::harness::{run_rounds, Case, Figure, Samples};
use crate::{cases, flush, percpu, threads, BenchError};
use hierstat::Preset;
use std::collections::BTreeMap;
use std::rc::Rc;
use Target::{Above, AtLeast, AtMost, Shows};

/// How long the suite measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Repetitions (rounds) of every case.
    pub reps: usize,
    /// Operations per repetition of a one-thread case.
    pub ops: u64,
    /// Operations per thread per repetition of a two-thread case.
    pub thread_ops: u64,
    /// Warm flushes per repetition of a flush case.
    pub flushes: u64,
    /// Cold flushes per repetition of a cold flush case (each evicts the
    /// caches first: 128 MiB written).
    pub cold_flushes: u64,
    /// Flushes per repetition of the barrier cases.
    pub barrier_flushes: u64,
    /// Shards of the trees (the owner path's trees need one for the
    /// measuring thread's seat).
    pub shards: usize,
}

impl Options {
    /// `mmlab bench`'s: 9 repetitions (`quick`: 3, and fifth as many
    /// operations each), on as many shards as the host has CPUs.
    pub fn standard(quick: bool) -> Options {
        let shards = std::thread::available_parallelism().map_or(2, |n| n.get());
        if quick {
            Options {
                reps: 3,
                ops: 200_000,
                thread_ops: 1_600_000,
                flushes: 10,
                cold_flushes: 2,
                barrier_flushes: 400,
                shards,
            }
        } else {
            Options {
                reps: 9,
                ops: 1_000_000,
                thread_ops: 8_000_000,
                flushes: 50,
                cold_flushes: 5,
                barrier_flushes: 2_000,
                shards,
            }
        }
    }
}

/// What a ratio is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// At most this.
    AtMost(f64),
    /// At least this.
    AtLeast(f64),
    /// Above this.
    Above(f64),
    /// No target: what the ratio shows.
    Shows(&'static str),
}

impl Target {
    /// Whether `v` meets the target (`None`: no target).
    pub fn met(&self, v: f64) -> Option<bool> {
        match *self {
            Target::AtMost(t) => Some(v <= t),
            Target::AtLeast(t) => Some(v >= t),
            Target::Above(t) => Some(v > t),
            Target::Shows(_) => None,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::AtMost(t) => write!(f, "≤ {t}"),
            Target::AtLeast(t) => write!(f, "≥ {t}"),
            Target::Above(t) => write!(f, "> {t}"),
            Target::Shows(what) => f.write_str(what),
        }
    }
}

/// A ratio of two cases of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioDef {
    /// Its name.
    pub name: &'static str,
    /// The numerator's case.
    pub num: &'static str,
    /// The denominator's case.
    pub den: &'static str,
    /// Its target.
    pub target: Target,
}

const fn ratio(
    name: &'static str,
    num: &'static str,
    den: &'static str,
    target: Target,
) -> RatioDef {
    RatioDef {
        name,
        num,
        den,
        target,
    }
}

/// The suite's fixed ratios (each taken within every repetition, then
/// summarized; `docs/json.md` lists them); [`ratios`] adds the per-CPU
/// mode's at every thread count.
// One row a ratio, as a table (rustfmt would spread each over six lines).
#[rustfmt::skip]
pub const RATIOS: &[RatioDef] = &[
    //    name                                            numerator case                         denominator case                     target
    ratio("hierstat_depth1_vs_atomic",                     "hierstat_update_depth1",              "atomic_fetch_add",                  AtMost(2.0)),
    ratio("hierstat_depth1_vs_plain",                      "hierstat_update_depth1",              "plain_add",                         Shows("the physical ratio")),
    ratio("hierstat_counter_vs_plain",                     "hierstat_counter_add_depth1",         "plain_add",                         Shows("the physical ratio")),
    ratio("hierstat_counter_vs_atomic",                    "hierstat_counter_add_depth1",         "atomic_fetch_add",                  Shows("the bound handle's cost")),
    ratio("hierstat_shared_path_vs_plain",                 "hierstat_shared_path_depth1",         "plain_add",                         Shows("the physical ratio")),
    ratio("hierstat_shared_path_vs_atomic",                "hierstat_shared_path_depth1",         "atomic_fetch_add",                  AtMost(1.3)),
    ratio("hierstat_beyond_shards_vs_two_fetch_adds",      "hierstat_beyond_shards_depth1",       "two_fetch_adds",                    Shows("the shared path over its two RMWs")),
    ratio("hierstat_depth8_vs_depth1",                     "hierstat_update_depth8",              "hierstat_update_depth1",            AtMost(1.5)),
    ratio("hierstat_2threads_vs_1thread",                  "hierstat_update_2threads",            "hierstat_update_depth1",            AtMost(1.3)),
    ratio("shared_atomic_vs_hierstat_2threads",            "shared_atomic_2threads",              "hierstat_update_2threads",          AtLeast(3.0)),
    ratio("hierstat_vs_sharded_2threads",                  "hierstat_update_2threads",            "sharded_counter_2threads",          AtMost(1.25)),
    ratio("pre-rstat_vs_hierstat_depth4",                  "pre-rstat_update_depth4",             "hierstat_update_depth4",            Above(1.0)),
    ratio("linux-6.8_vs_linux-5.15_depth4",                "linux-6.8_update_depth4",             "linux-5.15_update_depth4",          Shows("the per-group threshold cost")),
    ratio("percpu_1thread_vs_atomic",                      "percpu_update_1threads",              "atomic_fetch_add",                  Shows("against one uncontended fetch_add")),
    ratio("percpu_2threads_side_by_side_vs_shared_atomic", "percpu_update_2threads_side_by_side", "shared_atomic_2threads",            AtMost(0.35)),
    ratio("percpu_counter_vs_plain",                       "percpu_counter_add_1threads",         "plain_add_1threads",                Shows("the bound handle in the per-CPU mode")),
    ratio("flush_100k_vs_10k",                             "hierstat_flush_100_dirty_100k",       "hierstat_flush_100_dirty_10k",      AtMost(1.5)),
    ratio("flush_100k_vs_10k_cold",                        "hierstat_flush_100_dirty_100k_cold",  "hierstat_flush_100_dirty_10k_cold", Shows("the tree's size, from memory")),
];

/// The per-CPU mode's ratios at `threads` threads: against the same
/// threads' shared `fetch_add` and plain adds (the targets), and
/// against per-thread owner rows.
fn percpu_ratios(threads: usize) -> [RatioDef; 3] {
    // The names live as long as the process (built once, see `ratios`).
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let num = leak(format!("percpu_update_{threads}threads"));
    let vs = |what: &str, den: String, target| {
        ratio(
            leak(format!("percpu_{threads}threads_vs_{what}")),
            num,
            leak(den),
            target,
        )
    };
    [
        vs(
            "shared_fetch_add",
            format!("shared_fetch_add_{threads}threads"),
            Target::AtMost(0.35),
        ),
        vs(
            "plain",
            format!("plain_add_{threads}threads"),
            Target::AtMost(4.0),
        ),
        vs(
            "owner",
            format!("owner_update_{threads}threads"),
            Target::Shows("against a row per thread"),
        ),
    ]
}

/// Every ratio of the suite: [`RATIOS`], then the per-CPU mode's at each
/// of [`percpu::THREADS`].
pub fn ratios() -> &'static [RatioDef] {
    static ALL: std::sync::OnceLock<Vec<RatioDef>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = RATIOS.to_vec();
        v.extend(percpu::THREADS.iter().flat_map(|&t| percpu_ratios(t)));
        v
    })
}

/// The derived figure of the heavy barrier: the membarrier flush minus
/// the fenced one, within each repetition.
pub const BARRIER: &str = "hierstat_flush_barrier";

/// The suite's cases, in the order every round runs them (one-thread
/// cases, two-thread cases, flushes), built outside any timed region.
///
/// # Errors
/// A case that would not measure its name (see [`BenchError::Setup`]); the
/// engine's; a thread that cannot start.
pub fn cases(o: &Options) -> Result<Vec<Case<'static>>, BenchError> {
    let (n, sh) = (o.ops, o.shards);
    let mut v = vec![
        cases::atomic_fetch_add(n),
        cases::two_fetch_adds(n),
        cases::plain_add(n),
        cases::metrics_counter(n),
    ];
    for d in [1u32, 4, 8] {
        v.push(cases::update(Preset::Hierstat, d, sh, n)?);
    }
    for p in [Preset::Linux6_8, Preset::Linux5_15] {
        v.push(cases::update(p, 4, sh, n)?);
    }
    v.push(cases::counter_add(sh, n)?);
    v.push(cases::shared_path(sh, n)?);
    v.push(cases::beyond_shards(n)?);
    for d in [1u32, 4, 8] {
        v.push(cases::eager_update(d, n));
    }
    v.push(cases::read_clean(sh, n)?);
    v.push(cases::read_bounded(sh, n)?);
    // The per-CPU mode, where the host has it (its ratios are NaN where
    // not).
    if percpu::available() {
        for t in percpu::THREADS {
            v.push(percpu::percpu_update(t, n)?);
            v.push(percpu::shared_fetch_add(t, n));
            v.push(percpu::plain_add(t, n));
            v.push(percpu::owner_update(t, n)?);
        }
        v.push(percpu::percpu_counter(1, n)?);
        v.push(percpu::percpu_update_side_by_side(o.thread_ops)?);
    }
    v.push(threads::hierstat_update_2threads(sh, o.thread_ops)?);
    v.push(threads::shared_atomic_2threads(o.thread_ops));
    v.push(threads::sharded_counter_2threads(o.thread_ops));
    for groups in [10_000, 100_000] {
        v.push(flush::flush_warm(groups, sh, o.flushes)?);
    }
    let evict = Rc::new(Evictor::default());
    for groups in [10_000, 100_000] {
        v.push(flush::flush_cold(
            groups,
            sh,
            o.cold_flushes,
            evict.clone(),
        )?);
    }
    for m in [true, false] {
        v.push(flush::flush_one_leaf(m, sh, o.barrier_flushes)?);
    }
    Ok(v)
}

/// A ratio's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioFigure {
    /// Its definition.
    pub def: RatioDef,
    /// Median and range over the repetitions.
    pub figure: Figure,
}

/// What one run of the suite measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// Repetitions of every case.
    pub reps: usize,
    /// Every case's ns per operation, and [`BARRIER`]'s ns per flush.
    pub ns_per_op: BTreeMap<String, Figure>,
    /// The [`RATIOS`], by name.
    pub ratios: BTreeMap<String, RatioFigure>,
    /// The raw repetitions.
    pub samples: Samples,
}

impl Report {
    /// The report of `samples` over `reps` repetitions.
    pub fn of(samples: Samples, reps: usize) -> Report {
        let mut ns_per_op: BTreeMap<String, Figure> = samples
            .names()
            .map(|n| (n.to_string(), samples.figure(n)))
            .collect();
        let mut barrier = samples.difference(
            "hierstat_flush_1_leaf_membarrier",
            "hierstat_flush_1_leaf_fences",
        );
        barrier.median = barrier.median.max(0.0);
        ns_per_op.insert(BARRIER.into(), barrier);
        let ratios = ratios()
            .iter()
            .map(|&def| {
                (
                    def.name.to_string(),
                    RatioFigure {
                        def,
                        figure: samples.ratio(def.num, def.den),
                    },
                )
            })
            .collect();
        Report {
            reps,
            ns_per_op,
            ratios,
            samples,
        }
    }
}

/// Builds the cases (`progress(0)` once they are) and runs `o.reps`
/// interleaved rounds (`progress(round)` after each).
///
/// # Errors
/// As [`cases()`] and [`run_rounds`].
pub fn run(o: &Options, progress: &mut dyn FnMut(usize)) -> Result<Report, BenchError> {
    let mut cs = cases(o)?;
    progress(0);
    let samples = run_rounds(&mut cs, o.reps, progress)?;
    Ok(Report::of(samples, o.reps))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Enough shards for every test thread to own one (tests run in
    /// parallel, each thread taking a seat).
    const SHARDS: usize = 64;

    #[test]
    fn every_ratio_names_two_cases_of_the_suite() {
        let o = Options {
            reps: 1,
            ops: 10,
            thread_ops: 512,
            flushes: 1,
            cold_flushes: 1,
            barrier_flushes: 2,
            shards: SHARDS,
        };
        let names: Vec<String> = cases(&o)
            .unwrap()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        for r in ratios() {
            if r.num.starts_with("percpu") && !percpu::available() {
                continue;
            }
            assert!(names.iter().any(|n| n == r.num), "{}: {}", r.name, r.num);
            assert!(names.iter().any(|n| n == r.den), "{}: {}", r.name, r.den);
        }
        let mut uniq = names.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), names.len(), "{names:?}");
    }

    #[test]
    fn targets_read_as_written() {
        assert_eq!(Target::AtMost(1.5).to_string(), "≤ 1.5");
        assert_eq!(Target::AtMost(1.5).met(1.5), Some(true));
        assert_eq!(Target::Above(1.0).met(1.0), Some(false));
        assert_eq!(Target::Shows("x").met(9.0), None);
    }
}
