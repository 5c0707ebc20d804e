//! The bound contract (`hierstat::Bounded`) checked *while updaters run*,
//! on real threads, on every preset that reports bounds: not at barriers,
//! but at any instant a read can happen.
//!
//! Each updater publishes, per group and item, before each `add` the
//! magnitude it starts, and after it the signed sum and magnitude it has
//! completed, into every ancestor's sums too (a subtree's exact value
//! counts its removed descendants). A read of `(group, item)` loads the
//! completed sums first, reads, then loads the started magnitude: with
//! `exact` the completed sum before the read and `c` the magnitude started
//! by the end of the read minus that completed before it (what ran
//! concurrently, or may have), a bound `Some(b)` must satisfy
//! `|signed − exact| ≤ b + c` (the contract's own terms).
//!
//! Around them: the background flusher (every 100 µs to 1 ms), a thread
//! issuing random forced, guarded, ratelimited, hot-path and async flushes
//! of random subtrees, and groups removed and created again (updaters keep
//! writing their old handles for a while: late updates to zombies). Trees
//! of random shape up to depth 8, 2 shards and 3 to 6 updaters, so that
//! some take the shared path, membarrier on and off (seeds 0, 1 on, 2, 3
//! off, and so on), big updates (over the thresholds) on even seeds only.
//!
//! `bounds_hold_while_updaters_run_per_cpu` runs the same in the per-CPU
//! mode (`Config::per_cpu`, restartable sequences on per-CPU rows), where
//! the host has it.
//!
//! A binary of its own: the updaters' seats (which decide the owner and
//! shared paths) must not be taken by other tests' threads.
//!
//! Size: a fraction of a second per seed and 2 seeds per policy in CI.
//! `HIERSTAT_LONG=1` runs 1,000 groups, 20 seeds and 3 s per seed
//! (`HIERSTAT_LIVE_MS` and `HIERSTAT_LIVE_SEEDS` override); run it in a
//! release build with `--nocapture` for the counts:
//!
//! ```text
//! HIERSTAT_LONG=1 cargo test -p hierstat --release --test live -- --nocapture
//! ```

use hierstat::sim::{Shard, Simulator};
use hierstat::{
    Concurrency, Config, Group, HierStats, Policy, Preset, Schema, ThresholdRule, ThresholdSize,
    Unit,
};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A small deterministic generator (the tests' own).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What the updaters published for one (group, item), in the item's unit.
/// Every access is `SeqCst`: the check orders them against the read.
#[derive(Default)]
struct Sums {
    /// Magnitude of the updates started.
    begun_mag: AtomicU64,
    /// Signed sum of the updates completed.
    done_sum: AtomicI64,
    /// Magnitude of the updates completed.
    done_mag: AtomicU64,
}

/// The size of a run.
#[derive(Clone, Copy)]
struct Size {
    groups: usize,
    batch: Option<u32>,
    membarrier: Option<bool>,
    updaters: Option<usize>,
    seeds: u64,
    per_seed: Duration,
}

impl Size {
    fn from_env() -> Size {
        let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<u64>().ok());
        let long = std::env::var("HIERSTAT_LONG").is_ok_and(|v| v == "1");
        let (groups, seeds, ms) = if long {
            (1_000, 20, 3_000)
        } else {
            (100, 2, 300)
        };
        Size {
            groups: env("HIERSTAT_LIVE_GROUPS").map_or(groups, |g| g as usize),
            batch: env("HIERSTAT_LIVE_BATCH").map(|b| b as u32),
            membarrier: env("HIERSTAT_LIVE_MEMBARRIER").map(|m| m != 0),
            updaters: env("HIERSTAT_LIVE_UPDATERS").map(|u| u as usize),
            seeds: env("HIERSTAT_LIVE_SEEDS").unwrap_or(seeds),
            per_seed: Duration::from_millis(env("HIERSTAT_LIVE_MS").unwrap_or(ms)),
        }
    }
}

/// What one policy's runs counted.
#[derive(Default)]
struct Counts {
    reads: u64,
    bounded: u64,
    zero_bounds: u64,
    /// Bounded reads of a (group, item) that updaters were writing
    /// meanwhile (started before the read ended, not done before it
    /// began).
    racing: u64,
    violations: u64,
    updates: u64,
    groups_churned: u64,
    first: Vec<String>,
}

/// The tree of one seed: fixed groups (checked) and churned leaves (never
/// checked themselves: their exact sums span their incarnations; their
/// parents' sums count every incarnation).
struct Shape {
    /// Parent slot of each slot (`usize::MAX` for the root, slot 0).
    parent: Vec<usize>,
    /// Slots `fixed..` are churned leaves.
    fixed: usize,
    /// Per slot: itself and its ancestors.
    chain: Vec<Vec<usize>>,
}

impl Shape {
    fn new(groups: usize, rng: &mut Rng) -> Shape {
        let fixed = groups - groups / 5;
        let mut parent = vec![usize::MAX];
        let mut depth = vec![0u32];
        for i in 1..groups {
            // A few top-level groups, then random parents above depth 8
            // (churned leaves hang under fixed groups only).
            let p = loop {
                let p = if i <= 6 {
                    0
                } else {
                    rng.below(i.min(fixed) as u64) as usize
                };
                if depth[p] < 8 {
                    break p;
                }
            };
            parent.push(p);
            depth.push(depth[p] + 1);
        }
        let chain = (0..groups)
            .map(|mut s| {
                let mut c = vec![s];
                while parent[s] != usize::MAX {
                    s = parent[s];
                    c.push(s);
                }
                c
            })
            .collect();
        Shape {
            parent,
            fixed,
            chain,
        }
    }
}

/// The policies checked: every preset (linux-5.13 has no threshold
/// accounting and must never report a bound), hierstat with a bounded
/// wait and with a threshold 64 times wider (under its own `T` of 64 pages
/// a shard, a busy group is soon above it and reports no bound: most of
/// hierstat's bounded reads are of quiet groups, `Some(0)`), and a global
/// threshold under a per-pass gate.
fn policies() -> Vec<(String, Policy)> {
    let mut v: Vec<(String, Policy)> = Preset::ALL
        .iter()
        .map(|p| (p.name().to_string(), p.policy()))
        .collect();
    let mut wait = Preset::Hierstat.policy();
    wait.concurrency = Concurrency::WaitOngoing { max_wait_ms: 1 };
    v.push(("hierstat wait-ongoing 1 ms".into(), wait));
    let mut wide = Preset::Hierstat.policy();
    wide.threshold_size = ThresholdSize::PagesPerShard(64 * 64);
    v.push(("hierstat, T 4096 pages a shard".into(), wide));
    let mut global_per_pass = Preset::Linux5_15.policy();
    global_per_pass.concurrency = Concurrency::Serialize;
    global_per_pass.lock_per_shard = true;
    v.push(("linux-5.15, per-pass gate".into(), global_per_pass));
    v
}

#[test]
fn bounds_hold_while_updaters_run() {
    bounds_hold(false);
}

/// The same in the per-CPU mode (`Config::per_cpu`): the updaters' `add`s
/// run in restartable sequences on per-CPU rows (the explicit-shard ones
/// still take the shared path). Skipped, saying why, where the mode is not
/// available.
#[test]
fn bounds_hold_while_updaters_run_per_cpu() {
    let mut b = Schema::builder();
    b.event("x", Unit::Count);
    let t = HierStats::new(b.build().unwrap(), Config::default().per_cpu(true)).unwrap();
    if t.mode() != hierstat::Mode::PerCpu {
        eprintln!("per-CPU mode unavailable here ({}): skipped", t.mode());
        return;
    }
    bounds_hold(true);
}

fn bounds_hold(per_cpu: bool) {
    let size = Size::from_env();
    let mut failed = Vec::new();
    let only = std::env::var("HIERSTAT_LIVE_POLICY").ok();
    for (name, policy) in policies() {
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let mut c = Counts::default();
        for seed in 0..size.seeds {
            run_seed(policy, seed, size, per_cpu, &mut c);
        }
        let name = if per_cpu {
            format!("{name} (per-CPU)")
        } else {
            name
        };
        eprintln!(
            "{name}: {} groups x {} seeds x {} ms: {} updates, {} groups churned, \
             {} reads, {} bounded ({} of them Some(0), {} racing updates), {} violations",
            size.groups,
            size.seeds,
            size.per_seed.as_millis(),
            c.updates,
            c.groups_churned,
            c.reads,
            c.bounded,
            c.zero_bounds,
            c.racing,
            c.violations
        );
        for f in &c.first {
            eprintln!("  {name}: {f}");
        }
        if policy.threshold == ThresholdRule::None {
            assert_eq!(c.bounded, 0, "{name} has no threshold accounting");
        } else {
            // A run that checked no bound proved nothing.
            assert!(c.bounded > 100, "{name}: only {} bounded reads", c.bounded);
        }
        if c.violations > 0 {
            failed.push(format!(
                "{name}: {} violations ({})",
                c.violations, c.first[0]
            ));
        }
    }
    assert!(failed.is_empty(), "bound violations: {failed:#?}");
}

/// One seed of one policy: updaters, flushers, churn and the checking
/// reader (this thread) for `size.per_seed`; then a quiescent check that
/// everything adds up exactly.
fn run_seed(mut policy: Policy, seed: u64, size: Size, per_cpu: bool, c: &mut Counts) {
    if let Some(b) = size.batch {
        policy.batch = b;
    }
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EED);
    let mut b = Schema::builder();
    let items = [
        b.event("ev", Unit::Count),
        b.state("pages", Unit::Pages),
        b.state("bytes", Unit::Bytes),
    ];
    let cfg = Config::with_policy(policy)
        .shards(2)
        .membarrier(per_cpu || size.membarrier.unwrap_or(seed / 2 % 2 == 0))
        .per_cpu(per_cpu);
    let t = HierStats::new(b.build().unwrap(), cfg).unwrap();
    let shards = t.shards() as u64;
    let shape = Shape::new(size.groups, &mut rng);
    let n = shape.parent.len();
    let mut handles: Vec<Group> = vec![t.root()];
    for s in 1..n {
        let g = t
            .create(&handles[shape.parent[s]], &format!("g{s}"))
            .unwrap();
        handles.push(g);
    }
    let fixed: Vec<Group> = handles[..shape.fixed].to_vec();
    // The churned leaves' current incarnations.
    let churned = Mutex::new(handles[shape.fixed..].to_vec());
    drop(handles);
    let sums: Vec<[Sums; 3]> = (0..n).map(|_| Default::default()).collect();
    let updaters = size.updaters.unwrap_or(3 + (seed % 4) as usize);
    let period = Duration::from_micros(100 + rng.below(900));
    let flusher = t.start_flusher(period).unwrap();
    let stop = AtomicBool::new(false);
    let updates = AtomicU64::new(0);
    let generations = AtomicU64::new(0);
    std::thread::scope(|sc| {
        let (t, shape, sums, stop, fixed, churned) = (&t, &shape, &sums, &stop, &fixed, &churned);
        let (items, updates, generations) = (&items, &updates, &generations);
        for th in 0..updaters {
            sc.spawn(move || {
                let mut r = Rng(seed * 1_000_003 + th as u64 * 7 + 1);
                let mut mine = churned.lock().unwrap().clone();
                let mut i = 0u64;
                while !stop.load(SeqCst) {
                    if i % 128 == 0 {
                        mine.clone_from(&churned.lock().unwrap());
                    }
                    i += 1;
                    let slot = r.below(n as u64) as usize;
                    let g = if slot < shape.fixed {
                        &fixed[slot]
                    } else {
                        &mine[slot - shape.fixed]
                    };
                    let k = r.below(3) as usize;
                    // Even seeds: big updates too, which put groups over
                    // their thresholds; odd seeds: small ones, which keep
                    // more groups bounded.
                    let mut d = match (seed % 2, r.below(16)) {
                        (0, 0) => 5_000 + r.below(5_000) as i64,
                        (0, 1..=3) => 33 + r.below(200) as i64,
                        (1, 0) => 33 + r.below(32) as i64,
                        _ => 1 + r.below(31) as i64,
                    };
                    if k != 0 && r.below(3) == 0 {
                        d = -d;
                    }
                    if k == 2 {
                        // Bytes: pages and a part of one.
                        d = d * 4096 - (d.signum() * r.below(4096) as i64);
                    }
                    let m = d.unsigned_abs();
                    for &a in &shape.chain[slot] {
                        sums[a][k].begun_mag.fetch_add(m, SeqCst);
                    }
                    if r.below(4) == 0 {
                        let s = Shard(r.below(shards) as usize);
                        t.add_with(s, g, items[k], d, &mut ()).unwrap();
                    } else {
                        t.add(g, items[k], d).unwrap();
                    }
                    for &a in &shape.chain[slot] {
                        sums[a][k].done_sum.fetch_add(d, SeqCst);
                        sums[a][k].done_mag.fetch_add(m, SeqCst);
                    }
                }
                updates.fetch_add(i, SeqCst);
            });
        }
        // Random flushes of random subtrees, and churn.
        sc.spawn(move || {
            let mut r = Rng(seed + 77);
            while !stop.load(SeqCst) {
                let slot = r.below(n as u64) as usize;
                let g = if slot < shape.fixed {
                    fixed[slot].clone()
                } else {
                    churned.lock().unwrap()[slot - shape.fixed].clone()
                };
                match r.below(64) {
                    0..=7 => t.request_async_flush(),
                    8..=31 => drop(t.flush_forced(&g).unwrap()),
                    32..=43 => drop(t.flush(&g).unwrap()),
                    44..=49 => drop(t.flush_ratelimited(&g).unwrap()),
                    50..=61 => drop(t.flush_hot_path(&g).unwrap()),
                    _ => {
                        // Remove a churned leaf and create it again: the
                        // updaters' old handles write the zombie a while.
                        let c = shape.fixed + r.below((n - shape.fixed) as u64) as usize;
                        let gen = generations.fetch_add(1, SeqCst);
                        let parent = &fixed[shape.parent[c]];
                        let new = t.create(parent, &format!("g{c}.{gen}")).unwrap();
                        let old =
                            std::mem::replace(&mut churned.lock().unwrap()[c - shape.fixed], new);
                        t.remove(old).unwrap();
                    }
                }
            }
        });
        // The checking reader.
        let deadline = Instant::now() + size.per_seed;
        let mut r = Rng(seed + 991);
        while Instant::now() < deadline {
            for _ in 0..64 {
                let slot = r.below(shape.fixed as u64) as usize;
                let k = r.below(3) as usize;
                let s = &sums[slot][k];
                let done_mag = s.done_mag.load(SeqCst);
                let exact = s.done_sum.load(SeqCst);
                let read = t.read_bounded(&fixed[slot], items[k]).unwrap();
                let begun_mag = s.begun_mag.load(SeqCst);
                c.reads += 1;
                let Some(bound) = read.bound else { continue };
                c.bounded += 1;
                c.zero_bounds += u64::from(bound == 0);
                let concurrent = begun_mag - done_mag;
                c.racing += u64::from(concurrent > 0);
                let gap = read.signed.abs_diff(exact);
                if gap > bound.saturating_add(concurrent) {
                    c.violations += 1;
                    if c.first.len() < 5 {
                        c.first.push(format!(
                            "seed {seed}, {} (depth {}), item {}: value {}, exact {exact}, \
                             bound {bound}, concurrent {concurrent}",
                            fixed[slot].path(),
                            shape.chain[slot].len() - 1,
                            ["ev", "pages", "bytes"][k],
                            read.signed,
                        ));
                    }
                }
            }
        }
        stop.store(true, SeqCst);
    });
    flusher.stop();
    c.updates += updates.load(SeqCst);
    c.groups_churned += generations.load(SeqCst);
    // Quiescent: one root flush lands everything, exactly.
    t.flush_forced(&t.root()).unwrap();
    for (slot, g) in fixed.iter().enumerate() {
        for (k, &item) in items.iter().enumerate() {
            assert_eq!(
                t.read_signed(g, item).unwrap(),
                sums[slot][k].done_sum.load(SeqCst),
                "seed {seed}, {} item {k} after the final root flush",
                g.path()
            );
        }
    }
    drop(churned);
    t.verify_clean().unwrap();
}
