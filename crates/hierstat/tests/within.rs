//! Tolerance reads (`HierStats::read_within`) against an oracle: every
//! result within its bound of the exact value and its bound within its
//! budget; the flush work monotone in the tolerance and never more than a
//! forced flush's; tolerance 0 the forced flush's exact value; the partial
//! flush leaving every group's `read_bounded` contract and the engine's
//! invariants intact. Each case replays one random history into one tree
//! per tolerance (explicit shards: deterministic), on every preset.

use hierstat::sim::{Shard, Simulator, WorkCounters};
use hierstat::{
    Concurrency, Config, EarlyBreak, FlushKind, Group, HierStats, ItemId, OnBusy, Preset, ReadItem,
    Schema, ThresholdRule, ThresholdScheme, Tolerance, Unit, Within, WithinFlush,
};
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Items: pages (state), bytes (state), an event count.
const UNITS: [u64; 3] = [1, 4096, 1];

#[derive(Debug, Clone)]
enum Op {
    Add {
        group: usize,
        item: usize,
        delta: i64,
        shard: usize,
    },
    Flush {
        group: usize,
        forced: bool,
    },
}

#[derive(Debug, Clone)]
struct History {
    /// `parent[i] < i` for every group but the root (0).
    parent: Vec<usize>,
    shards: usize,
    ops: Vec<Op>,
    /// The group read.
    read: usize,
}

fn history() -> impl Strategy<Value = History> {
    (2usize..14, prop::sample::select(vec![1usize, 2, 4])).prop_flat_map(|(n, shards)| {
        let parents: Vec<BoxedStrategy<usize>> = (1..n).map(|i| (0..i).boxed()).collect();
        let op = prop_oneof![
            8 => (0..n, 0usize..3, 1i64..300, any::<bool>(), 0..shards).prop_map(
                |(group, item, mag, neg, shard)| Op::Add {
                    group,
                    item,
                    // Events only count up; states go both ways.
                    delta: if neg && item != 2 { -mag } else { mag } * UNITS[item] as i64,
                    shard,
                }
            ),
            1 => (0..n, any::<bool>()).prop_map(|(group, forced)| Op::Flush { group, forced }),
        ];
        (parents, prop::collection::vec(op, 0..80), 0..n).prop_map(move |(p, ops, read)| {
            let mut parent = vec![usize::MAX];
            parent.extend(p);
            History {
                parent,
                shards,
                ops,
                read,
            }
        })
    })
}

struct Replayed {
    t: HierStats,
    groups: Vec<Group>,
    items: [ItemId; 3],
    /// Exact subtree sums per group and item.
    exact: Vec<[i64; 3]>,
}

fn replay(preset: Preset, h: &History) -> Replayed {
    let mut b = Schema::builder();
    let items = [
        b.state("pages", Unit::Pages),
        b.state("bytes", Unit::Bytes),
        b.event("ev", Unit::Count),
    ];
    let t = HierStats::new(b.build().unwrap(), Config::preset(preset).shards(h.shards)).unwrap();
    let mut groups = vec![t.root()];
    for i in 1..h.parent.len() {
        let g = t.create(&groups[h.parent[i]], &format!("g{i}")).unwrap();
        groups.push(g);
    }
    let mut exact = vec![[0i64; 3]; groups.len()];
    for op in &h.ops {
        match *op {
            Op::Add {
                group,
                item,
                delta,
                shard,
            } => {
                t.add_with(Shard(shard), &groups[group], items[item], delta, &mut ())
                    .unwrap();
                let mut a = group;
                loop {
                    exact[a][item] += delta;
                    if a == 0 {
                        break;
                    }
                    a = h.parent[a];
                }
            }
            Op::Flush { group, forced } => {
                let kind = if forced {
                    FlushKind::Forced
                } else {
                    FlushKind::Read
                };
                t.flush_with(&groups[group], kind, &mut ()).unwrap();
            }
        }
    }
    Replayed {
        t,
        groups,
        items,
        exact,
    }
}

/// The same page budget for every item (bytes: in bytes).
fn reads(r: &Replayed, pages: u64) -> Vec<(ReadItem, Tolerance)> {
    (0..3)
        .map(|k| {
            (
                ReadItem::Item(r.items[k]),
                Tolerance::Absolute(pages.saturating_mul(UNITS[k])),
            )
        })
        .collect()
}

/// A read's flush did no more work than `than` did, counter by counter.
fn work_at_most(work: &WorkCounters, than: &WorkCounters, what: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        work.groups_visited <= than.groups_visited
            && work.counters_aggregated <= than.counters_aggregated
            && work.shards_scanned <= than.shards_scanned,
        "{what}: {work:?} vs {than:?}"
    );
    Ok(())
}

/// [`work_at_most`], and no more atomics and lock acquisitions either: a
/// tolerance read of one group, planning included, against a forced flush
/// of the group (issue 37: "never more than a forced flush of the group").
/// Under a per-pass gate (`per_pass`) the plan takes the structure lock
/// once more than the flush's passes do (each takes its own) and holds a
/// reference to each of the `left` groups (no lock keeps their ids from
/// being recycled): one lock acquisition and `left` atomics more are
/// allowed there.
fn all_work_at_most(
    work: &WorkCounters,
    than: &WorkCounters,
    per_pass: bool,
    left: u64,
    what: &str,
) -> Result<(), TestCaseError> {
    work_at_most(work, than, what)?;
    let (locks, atomics) = if per_pass { (1, left) } else { (0, 0) };
    prop_assert!(
        work.atomics + work.list_pops <= than.atomics + than.list_pops + atomics
            && work.lock_acquisitions <= than.lock_acquisitions + locks,
        "{what}: {work:?} vs {than:?}"
    );
    Ok(())
}

/// The tree is intact: every group's `read_bounded` is within its bound of
/// the exact value, and the tree's invariants hold.
fn intact(r: &Replayed, what: &str) -> Result<(), TestCaseError> {
    for (i, g) in r.groups.iter().enumerate() {
        for k in 0..3 {
            let b = r.t.read_bounded(g, r.items[k]).unwrap();
            if let Some(bound) = b.bound {
                prop_assert!(
                    b.signed.abs_diff(r.exact[i][k]) <= bound,
                    "{what}: {} item {k}: {} vs exact {}, bound {bound}",
                    g.path(),
                    b.signed,
                    r.exact[i][k]
                );
            }
        }
    }
    r.t.verify()
        .map_err(|v| TestCaseError::fail(format!("{what}: {v}")))
}

fn check_results(
    r: &Replayed,
    h: &History,
    got: &[Within],
    what: &str,
) -> Result<(), TestCaseError> {
    for (k, w) in got.iter().enumerate() {
        prop_assert!(w.met, "{what}: item {k} not met: {w:?}");
        let bound = w.read.bound.unwrap();
        prop_assert!(bound <= w.budget, "{what}: item {k}: {w:?}");
        let exact = r.exact[h.read][k];
        prop_assert!(
            w.read.signed.abs_diff(exact) <= bound,
            "{what}: item {k}: {} vs exact {exact}, bound {bound} ({:?})",
            w.read.signed,
            w.flush
        );
    }
    Ok(())
}

/// A scrape of the whole tree with one page budget: every group within
/// its bound of the exact value and its bound within its budget, the work
/// no more than a forced root flush's, and the invariants intact.
fn subtree_read(preset: Preset, h: &History, pages: u64) -> Result<(), TestCaseError> {
    let forced = replay(preset, h);
    let mut forced_work = WorkCounters::default();
    forced
        .t
        .flush_with(&forced.t.root(), FlushKind::Forced, &mut forced_work)
        .unwrap();
    let r = replay(preset, h);
    let what = format!("{} subtree read, budget {pages} pages", preset.name());
    let mut work = WorkCounters::default();
    let mut seen = 0;
    let mut bad = None;
    let flush =
        r.t.read_subtree_within_with(
            &r.t.root(),
            &reads(&r, pages),
            OnBusy::Wait,
            |g, ws| {
                let i = r.groups.iter().position(|x| x.same(g)).unwrap();
                seen += 1;
                for (k, w) in ws.iter().enumerate() {
                    let exact = r.exact[i][k];
                    let ok = w.met
                        && w.read
                            .bound
                            .is_some_and(|b| b <= w.budget && w.read.signed.abs_diff(exact) <= b);
                    if !ok && bad.is_none() {
                        bad = Some(format!("{} item {k}: {w:?}, exact {exact}", g.path()));
                    }
                }
            },
            &mut work,
        )
        .unwrap();
    prop_assert!(bad.is_none(), "{what}: {}", bad.unwrap());
    prop_assert_eq!(seen, r.groups.len());
    match flush {
        WithinFlush::Partial { .. } => &SUBTREE_PARTIAL,
        _ => &NONE,
    }
    .fetch_add(1, Relaxed);
    work_at_most(&work, &forced_work, &what)?;
    intact(&r, &what)?;
    // Scraped again with no update between: where the partial flush
    // resets its opened groups (see `resets_opened`) and every group has a
    // bound, every bound is what the first scrape left, within its budget:
    // no flush (each budget is capped at the threshold, or an opened
    // group's left counts could pass it and leave it with no bound).
    let bounded = r
        .groups
        .iter()
        .all(|g| r.t.error_bound_pages(g).unwrap().is_some());
    if matches!(flush, WithinFlush::Partial { .. }) && resets_opened(preset) {
        prop_assert!(bounded, "{}: a group with no bound after the scrape", what);
        let second =
            r.t.read_subtree_within_with(
                &r.t.root(),
                &reads(&r, pages),
                OnBusy::Wait,
                |_, _| {},
                &mut WorkCounters::default(),
            )
            .unwrap();
        prop_assert_eq!(second, WithinFlush::None, "{}, scraped again", what);
        SUBTREE_AGAIN.fetch_add(1, Relaxed);
    }
    r.t.flush_forced(&r.t.root()).unwrap();
    r.t.verify_clean()
        .map_err(|v| TestCaseError::fail(format!("{what}: {v}")))?;
    Ok(())
}

const BUDGETS: [u64; 8] = [0, 1, 8, 31, 64, 512, 4096, 1 << 40];

fn one_preset(preset: Preset, h: &History) -> Result<(), TestCaseError> {
    // The forced flush's work and values.
    let forced = replay(preset, h);
    let mut forced_work = WorkCounters::default();
    forced
        .t
        .flush_with(&forced.groups[h.read], FlushKind::Forced, &mut forced_work)
        .unwrap();
    let mut prev: Option<WorkCounters> = None;
    for &pages in &BUDGETS {
        let r = replay(preset, h);
        let what = format!("{} budget {pages} pages", preset.name());
        let mut out = Vec::new();
        let mut work = WorkCounters::default();
        let flush =
            r.t.read_many_within_with(
                &r.groups[h.read],
                &reads(&r, pages),
                OnBusy::Wait,
                &mut out,
                &mut work,
            )
            .unwrap();
        check_results(&r, h, &out, &what)?;
        match flush {
            WithinFlush::Partial { .. } => &PARTIAL,
            WithinFlush::Full => &FULL,
            _ => &NONE,
        }
        .fetch_add(1, Relaxed);
        if pages == 0 {
            // Tolerance 0 is the forced flush: its work, its exact values
            // (or no flush at all, where the bound was 0 already).
            prop_assert!(
                matches!(flush, WithinFlush::Full | WithinFlush::None),
                "{}: {:?}",
                what,
                flush
            );
            for (k, w) in out.iter().enumerate() {
                let v = forced
                    .t
                    .read_signed(&forced.groups[h.read], forced.items[k])
                    .unwrap();
                prop_assert_eq!(w.read.signed, v, "{}: item {}", what, k);
                prop_assert_eq!(w.read.bound, Some(0));
            }
            if flush == WithinFlush::Full {
                prop_assert_eq!(work.groups_visited, forced_work.groups_visited);
                prop_assert_eq!(work.counters_aggregated, forced_work.counters_aggregated);
            }
        }
        // Never more than the forced flush's.
        let p = preset.policy();
        let per_pass = p.lock_per_shard && p.concurrency == Concurrency::Serialize;
        let left = match flush {
            WithinFlush::Partial { left, .. } => u64::from(left),
            _ => 0,
        };
        all_work_at_most(&work, &forced_work, per_pass, left, &what)?;
        // Monotone in the tolerance.
        if let Some(p) = prev {
            work_at_most(&work, &p, &format!("{what}, after a smaller budget"))?;
        }
        prev = Some(work);
        // The partial flush left every bound and the invariants intact.
        intact(&r, &what)?;
        // A second read with the same budget: within its bound; and where
        // the partial flush resets its opened groups by what it carried
        // (folded scheme, one flush at a time, no early break: see
        // `flush.rs`, "A partial flush's opened groups"), with no update in
        // between the read group's bound is what was left, within the
        // budget: no flush at all. (Unless what was left counts more than
        // the threshold: the engine then reports no bound.)
        let after = r.t.error_bound_pages(&r.groups[h.read]).unwrap();
        let mut again = WorkCounters::default();
        let second =
            r.t.read_many_within_with(
                &r.groups[h.read],
                &reads(&r, pages),
                OnBusy::Wait,
                &mut out,
                &mut again,
            )
            .unwrap();
        check_results(&r, h, &out, &format!("{what}, again"))?;
        if matches!(flush, WithinFlush::Partial { .. }) && resets_opened(preset) && after.is_some()
        {
            prop_assert_eq!(
                second,
                WithinFlush::None,
                "{}, again (bound {:?})",
                what,
                after
            );
            PARTIAL_THEN_NONE.fetch_add(1, Relaxed);
        }
        subtree_read(preset, h, pages)?;
        r.t.flush_forced(&r.t.root()).unwrap();
        for (i, g) in r.groups.iter().enumerate() {
            for k in 0..3 {
                prop_assert_eq!(r.t.read_signed(g, r.items[k]).unwrap(), r.exact[i][k]);
            }
        }
        r.t.verify_clean()
            .map_err(|v| TestCaseError::fail(format!("{what}: {v}")))?;
    }
    Ok(())
}

/// Whether a partial flush under `preset` resets its opened groups by what
/// it carried (and nothing keeps them flagged or over a break level).
fn resets_opened(preset: Preset) -> bool {
    let p = preset.policy();
    p.threshold == ThresholdRule::PerGroup
        && p.scheme == ThresholdScheme::Folded
        && p.early_break == EarlyBreak::Off
        && !(p.lock_per_shard && p.concurrency == Concurrency::Serialize)
}

/// What the property's reads flushed, over all cases (a run that made no
/// partial flush proved little).
static PARTIAL: AtomicU64 = AtomicU64::new(0);
static FULL: AtomicU64 = AtomicU64::new(0);
static NONE: AtomicU64 = AtomicU64::new(0);
static SUBTREE_PARTIAL: AtomicU64 = AtomicU64::new(0);
static SUBTREE_AGAIN: AtomicU64 = AtomicU64::new(0);
static PARTIAL_THEN_NONE: AtomicU64 = AtomicU64::new(0);

#[test]
fn tolerance_reads_against_an_oracle() {
    let cases = std::env::var("WITHIN_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(128);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    runner
        .run(&history(), |h| {
            for p in Preset::ALL {
                one_preset(p, &h)?;
            }
            Ok(())
        })
        .unwrap();
    let (p, f, n) = (
        PARTIAL.load(Relaxed),
        FULL.load(Relaxed),
        NONE.load(Relaxed),
    );
    let sp = SUBTREE_PARTIAL.load(Relaxed);
    eprintln!(
        "{cases} cases x 7 presets x {} budgets: {p} partial, {f} whole, {n} no flush \
         (reads and scrapes); {sp} partial scrapes; {} partial reads read again, {} \
         partial scrapes scraped again",
        BUDGETS.len(),
        PARTIAL_THEN_NONE.load(Relaxed),
        SUBTREE_AGAIN.load(Relaxed)
    );
    // Coverage floors, far below what a run counts (at 128 cases, four
    // runs: 151-233 partial flushes, 1,103-1,196 partial scrapes; a floor
    // of `cases` partial flushes failed a run).
    assert!(p > u64::from(cases) / 2, "only {p} partial flushes");
    assert!(sp > u64::from(cases) / 2, "only {sp} partial scrapes");
    let again = PARTIAL_THEN_NONE.load(Relaxed);
    assert!(
        again > u64::from(cases) / 8,
        "only {again} partial reads read again"
    );
}

/// A relative tolerance: budgets follow the values; the exact read of a
/// zero item needs the whole flush, `Either` does not.
#[test]
fn relative_and_either_tolerances() {
    let mut b = Schema::builder();
    let anon = b.state("anon", Unit::Pages);
    let zero = b.state("zero", Unit::Pages);
    let t = HierStats::new(
        b.build().unwrap(),
        Config::preset(Preset::Hierstat).shards(2),
    )
    .unwrap();
    let p = t.create(&t.root(), "p").unwrap();
    let big = t.create(&p, "big").unwrap();
    let small: Vec<Group> = (0..8)
        .map(|i| t.create(&p, &format!("s{i}")).unwrap())
        .collect();
    t.add(&big, anon, 1_000_000).unwrap();
    t.flush_forced(&p).unwrap();
    t.add(&big, anon, 50_000).unwrap();
    for s in &small {
        t.add(s, anon, 5).unwrap();
    }
    let read = |item: ItemId, tol| {
        let mut out = Vec::new();
        let f = t
            .read_many_within(&p, &[(item.into(), tol)], OnBusy::Wait, &mut out)
            .unwrap();
        (f, out[0])
    };
    // 1% of ~1M: the 50,000 pages of /p/big must go, the small ones may
    // stay; but /p keeps what is left in its count, which the threshold
    // (64 pages x 2 shards) caps: four of the small groups' 31-page
    // reservations fit, not eight.
    let (f, w) = read(anon, Tolerance::Relative(0.01));
    assert!(w.met, "{w:?}");
    assert!(
        matches!(f, WithinFlush::Partial { left: 4, opened: 1 }),
        "{f:?}"
    );
    assert!(w.read.value >= 1_050_000 && w.read.value <= 1_050_040);
    // The zero item with 1%: exact needed, the whole subtree.
    let (f, w) = read(zero, Tolerance::Relative(0.01));
    assert_eq!((f, w.read.bound, w.met), (WithinFlush::Full, Some(0), true));
    // Bad fractions are errors.
    for bad in [f64::NAN, -0.5, f64::INFINITY] {
        assert!(matches!(
            t.read_within(&p, anon, Tolerance::Relative(bad)),
            Err(hierstat::Error::InvalidTolerance(_))
        ));
    }
    for s in &small {
        t.add(s, anon, 5).unwrap();
    }
    let (f, w) = read(
        zero,
        Tolerance::Either {
            relative: 0.01,
            absolute: 4096,
        },
    );
    assert!(w.met && f == WithinFlush::None, "{f:?} {w:?}");
}
