//! The per-CPU mode (`Config::per_cpu`: restartable sequences on per-CPU
//! rows) on real threads, where loom cannot reach: the kernel's restarts
//! themselves. Updaters run while another thread flips their CPU affinity
//! (`sched_setaffinity`, forcing migrations) and another sends them
//! `SIGUSR1` (a no-op handler: every signal delivered inside a section
//! restarts it), with flushes racing them; after millions of updates every
//! group's value is exact. Each test prints its updates and the sections
//! restarted (`hierstat::thread_restarts`), and skips, saying why, where
//! the host has no per-CPU mode.
//!
//! A binary of its own: its signal handler is process-wide. Sizes:
//! `HIERSTAT_PERCPU_UPDATES` updates per thread (default 1,000,000 in a
//! release build, 100,000 in a debug one), `HIERSTAT_PERCPU_SEEDS` seeds
//! of the oracle test (default 20).
//!
//! ```text
//! cargo test -p hierstat --release --test percpu -- --nocapture
//! ```

#![cfg(target_os = "linux")]
// libc calls: sigaction, tgkill, sched_setaffinity, gettid (each block
// says why it is sound).
#![allow(unsafe_code)]
// The oracle indexes its groups and items by number.
#![allow(clippy::needless_range_loop)]

use hierstat::sim::Simulator;
use hierstat::{
    Config, FlushKind, Group, HierStats, ItemId, Mode, NodeItemId, Preset, Schema, Unit,
};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::SeqCst};

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

fn env(k: &str, default: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Items: an event, a page gauge, a byte gauge; a per-node gauge.
fn schema() -> (Schema, [ItemId; 3], NodeItemId) {
    let mut b = Schema::builder();
    let items = [
        b.event("ev", Unit::Count),
        b.state("pages", Unit::Pages),
        b.state("bytes", Unit::Bytes),
    ];
    let lru = b.node_state("lru", Unit::Pages);
    (b.nodes(2).build().unwrap(), items, lru)
}

/// A tree under `preset` that asks for the per-CPU mode: it has it, or
/// runs in the per-thread mode it fell back to (printed once), which the
/// tests then check instead (a ThreadSanitizer build: see
/// `scripts/sanitizers.sh`).
fn asked_tree(preset: Preset) -> (HierStats, [ItemId; 3], NodeItemId) {
    let (s, items, lru) = schema();
    let t = HierStats::new(s, Config::preset(preset).per_cpu(true).shards(8)).unwrap();
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| eprintln!("mode: {}", t.mode()));
    (t, items, lru)
}

/// A per-CPU tree under `preset`, or `None` (printed) where the host has
/// no per-CPU mode.
fn percpu_tree(preset: Preset) -> Option<(HierStats, [ItemId; 3], NodeItemId)> {
    let (t, items, lru) = asked_tree(preset);
    if t.mode() != Mode::PerCpu {
        eprintln!("per-CPU mode unavailable here ({}): skipped", t.mode());
        return None;
    }
    Some((t, items, lru))
}

extern "C" fn on_signal(_: libc::c_int) {}

/// Installs the no-op `SIGUSR1` handler (restarting interrupted system
/// calls).
fn install_handler() {
    // SAFETY: a zeroed `sigaction` is a valid value to fill in; the handler
    // does nothing, so it is async-signal-safe; `sigaction` only reads
    // `sa`.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
}

fn gettid() -> i32 {
    // SAFETY: no arguments, no preconditions.
    unsafe { libc::gettid() }
}

/// Sends `SIGUSR1` to thread `tid` of this process; whether it was sent.
fn signal(tid: i32) -> bool {
    // SAFETY: tgkill with this process's id; a thread that has exited
    // makes it fail (ESRCH), which is fine.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGUSR1) == 0 }
}

/// Restricts thread `tid` (0: the caller) to `cpus`; whether it took.
fn pin(tid: i32, cpus: &[usize]) -> bool {
    // SAFETY: a zeroed `cpu_set_t` is the empty set; `CPU_SET` writes
    // within it (the CPUs are below the host's count, far below
    // `CPU_SETSIZE`); `sched_setaffinity` only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The CPUs this process may run on.
fn cpus() -> Vec<usize> {
    // SAFETY: as in `pin`; `sched_getaffinity` writes the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// `threads` updaters make `per_thread` updates each to three groups
/// (`/a`, `/a/b`, `/a/c`; random items, signs and sizes, some per-node),
/// while one thread flips their affinity between single CPUs and all of
/// them, one sends them signals, and one flushes; then every value is
/// exact. Returns (updates, restarts, signals sent, affinity changes).
fn churn(preset: Preset, threads: usize, per_thread: u64) -> (u64, u64, u64, u64) {
    let (t, items, lru) = asked_tree(preset);
    install_handler();
    let a = t.create(&t.root(), "a").unwrap();
    let groups = [
        a.clone(),
        t.create(&a, "b").unwrap(),
        t.create(&a, "c").unwrap(),
    ];
    let all = cpus();
    let tids: Vec<AtomicI32> = (0..threads).map(|_| AtomicI32::new(0)).collect();
    let done = AtomicBool::new(false);
    let (signals, flips) = (AtomicU64::new(0), AtomicU64::new(0));
    // Per updater: its sums per (group, item), and per node of `lru`.
    let results = std::thread::scope(|s| {
        let (t, groups, tids, done, all) = (&t, &groups, &tids, &done, &all);
        let (signals, flips) = (&signals, &flips);
        let hs: Vec<_> = (0..threads)
            .map(|th| {
                s.spawn(move || {
                    tids[th].store(gettid(), SeqCst);
                    let mut r = Rng(th as u64 * 7919 + 1);
                    let mut sums = [[0i64; 3]; 3];
                    let mut nodes = [[0i64; 2]; 3];
                    for _ in 0..per_thread {
                        let gi = r.below(3) as usize;
                        let k = r.below(3) as usize;
                        let big = r.below(64) == 0;
                        let mut d = 1 + r.below(if big { 5000 } else { 40 }) as i64;
                        if k != 0 && r.below(3) == 0 {
                            d = -d;
                        }
                        if k == 2 {
                            d = d * 4096 - d.signum() * r.below(4096) as i64;
                        }
                        if r.below(16) == 0 {
                            let node = r.below(2) as usize;
                            t.add_node(&groups[gi], lru, node, d).unwrap();
                            nodes[gi][node] += d;
                        } else {
                            t.add(&groups[gi], items[k], d).unwrap();
                            sums[gi][k] += d;
                        }
                    }
                    (sums, nodes, hierstat::thread_restarts())
                })
            })
            .collect();
        // Migrations: each updater alone on one CPU, then another, then on
        // all of them.
        s.spawn(move || {
            let mut i = 0usize;
            while !done.load(SeqCst) {
                for tid in tids.iter().map(|t| t.load(SeqCst)).filter(|&t| t != 0) {
                    let set = match i % 3 {
                        2 => all.clone(),
                        j => vec![all[(i / 3 + j) % all.len()]],
                    };
                    if pin(tid, &set) {
                        flips.fetch_add(1, SeqCst);
                    }
                }
                i += 1;
            }
        });
        // Signals.
        s.spawn(move || {
            while !done.load(SeqCst) {
                for tid in tids.iter().map(|t| t.load(SeqCst)).filter(|&t| t != 0) {
                    if signal(tid) {
                        signals.fetch_add(1, SeqCst);
                    }
                }
            }
        });
        // Flushes of every kind, of every group.
        let flusher = s.spawn(move || {
            let mut r = Rng(99);
            while !done.load(SeqCst) {
                let g = if r.below(4) == 0 {
                    t.root()
                } else {
                    groups[r.below(3) as usize].clone()
                };
                let kind =
                    [FlushKind::Forced, FlushKind::Read, FlushKind::HotPath][r.below(3) as usize];
                t.flush_with(&g, kind, &mut ()).unwrap();
            }
        });
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        done.store(true, SeqCst);
        flusher.join().unwrap();
        results
    });
    t.flush_forced(&t.root()).unwrap();
    let mut restarts = 0;
    let mut want = [[0i64; 3]; 3];
    let mut want_nodes = [[0i64; 2]; 3];
    for (sums, nodes, r) in &results {
        restarts += r;
        for g in 0..3 {
            for k in 0..3 {
                want[g][k] += sums[g][k];
            }
            for n in 0..2 {
                want_nodes[g][n] += nodes[g][n];
            }
        }
    }
    // `/a` holds its children's too.
    for k in 0..3 {
        let own = want[0][k];
        let sub = own + want[1][k] + want[2][k];
        assert_eq!(
            t.read_signed(&groups[0], items[k]).unwrap(),
            sub,
            "/a item {k}"
        );
        assert_eq!(
            t.read_local(&groups[0], items[k]).unwrap(),
            own.max(0) as u64,
            "/a item {k}, local"
        );
        for g in 1..3 {
            assert_eq!(
                t.read_signed(&groups[g], items[k]).unwrap(),
                want[g][k],
                "{} item {k}",
                groups[g].path()
            );
        }
    }
    for n in 0..2 {
        let sub = want_nodes[0][n] + want_nodes[1][n] + want_nodes[2][n];
        assert_eq!(
            t.read_node(&groups[0], lru, Some(n)).unwrap(),
            sub.max(0) as u64,
            "/a node {n}"
        );
    }
    t.verify_clean().unwrap();
    for g in &groups {
        assert!(t.rows_of(g).unwrap() <= t.shards());
    }
    (
        threads as u64 * per_thread,
        restarts,
        signals.load(SeqCst),
        flips.load(SeqCst),
    )
}

fn per_thread() -> u64 {
    env(
        "HIERSTAT_PERCPU_UPDATES",
        if cfg!(debug_assertions) {
            100_000
        } else {
            1_000_000
        },
    )
}

/// Where the per-CPU mode is unavailable (a ThreadSanitizer build), the
/// same churn runs on the per-thread mode the tree fell back to (8 shards:
/// the 4 updaters own theirs), exact all the same, with no restart to
/// count.
#[test]
fn migrations_and_signals_lose_nothing() {
    let per_cpu = asked_tree(Preset::Hierstat).0.mode() == Mode::PerCpu;
    for preset in [Preset::Hierstat, Preset::Linux6_8, Preset::Linux5_15] {
        let (updates, restarts, signals, flips) = churn(preset, 4, per_thread());
        eprintln!(
            "{}: {updates} updates by 4 threads, exact; {restarts} sections restarted, \
             {signals} signals sent, {flips} affinity changes",
            preset.name()
        );
        assert!(
            !per_cpu || restarts > 0,
            "no section was ever restarted: the test forced no abort"
        );
    }
}

/// Many more threads than CPUs: no seat, no shared path, one row per CPU.
#[test]
fn a_thousand_threads_write_one_row_per_cpu() {
    let Some((t, items, _)) = percpu_tree(Preset::Hierstat) else {
        return;
    };
    let g = t.create(&t.root(), "g").unwrap();
    for _ in 0..20 {
        std::thread::scope(|s| {
            for _ in 0..50 {
                s.spawn(|| {
                    for _ in 0..100 {
                        t.add(&g, items[0], 1).unwrap();
                    }
                });
            }
        });
    }
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read(&g, items[0]).unwrap(), 100_000);
    let rows = t.rows_of(&g).unwrap();
    eprintln!("1,000 threads on {} CPUs: {rows} rows", cpus().len());
    assert!(rows <= t.shards() && rows <= cpus().len().max(1) * 2);
    assert_eq!(t.shards_written().shared, 0, "no shared path");
}

/// The oracle, 20 seeds: random creates, removes, updates (each on a CPU
/// this thread is first pinned to: a migration between most updates),
/// per-node updates and flushes of every kind; after each step every
/// group's bounded read holds (`|signed − exact| ≤ bound`), and after each
/// forced root flush every value is exact.
#[test]
fn the_oracle_agrees_after_every_step() {
    let Some(_) = percpu_tree(Preset::Hierstat) else {
        return;
    };
    let all = cpus();
    for preset in [Preset::Hierstat, Preset::Linux6_8, Preset::Linux5_15] {
        for seed in 0..env("HIERSTAT_PERCPU_SEEDS", 20) {
            oracle_seed(preset, seed, &all);
        }
    }
    pin(0, &all);
}

fn oracle_seed(preset: Preset, seed: u64, cpus: &[usize]) {
    let (t, items, _) = percpu_tree(preset).expect("checked by the caller");
    let mut r = Rng(seed * 31 + 7);
    let mut groups: Vec<Group> = vec![t.root()];
    let mut parent: Vec<Option<usize>> = vec![None];
    let mut removed = vec![false];
    let mut local: Vec<[i64; 3]> = vec![[0; 3]];
    let exact = |g: usize, k: usize, parent: &[Option<usize>], local: &[[i64; 3]]| -> i64 {
        (0..local.len())
            .filter(|&m| {
                let mut c = Some(m);
                while let Some(x) = c {
                    if x == g {
                        return true;
                    }
                    c = parent[x];
                }
                false
            })
            .map(|m| local[m][k])
            .sum()
    };
    for step in 0..400 {
        match r.below(20) {
            0 | 1 => {
                let live: Vec<usize> = (0..groups.len()).filter(|&i| !removed[i]).collect();
                let p = live[r.below(live.len() as u64) as usize];
                if let Ok(g) = t.create(&groups[p], &format!("g{step}")) {
                    groups.push(g);
                    parent.push(Some(p));
                    removed.push(false);
                    local.push([0; 3]);
                }
            }
            2 => {
                let i = r.below(groups.len() as u64) as usize;
                if i != 0 && !removed[i] && t.remove(groups[i].clone()).is_ok() {
                    removed[i] = true;
                }
            }
            3 => {
                let i = r.below(groups.len() as u64) as usize;
                let kind = [
                    FlushKind::Forced,
                    FlushKind::Read,
                    FlushKind::Ratelimited,
                    FlushKind::HotPath,
                ][r.below(4) as usize];
                t.flush_with(&groups[i], kind, &mut ()).unwrap();
            }
            _ => {
                let i = r.below(groups.len() as u64) as usize;
                let k = r.below(3) as usize;
                let mut d = [1, 2, 31, 32, 33, 63, 64, 65, 200][r.below(9) as usize];
                if k != 0 && r.below(3) == 0 {
                    d = -d;
                }
                pin(0, &[cpus[r.below(cpus.len() as u64) as usize]]);
                t.add(&groups[i], items[k], d).unwrap();
                local[i][k] += d;
            }
        }
        for g in 0..groups.len() {
            for k in 0..3 {
                let b = t.read_bounded(&groups[g], items[k]).unwrap();
                let want = exact(g, k, &parent, &local);
                if let Some(bound) = b.bound {
                    assert!(
                        b.signed.abs_diff(want) <= bound,
                        "{} seed {seed} step {step}: {} item {k}: {} of {want}, bound {bound}",
                        preset.name(),
                        groups[g].path(),
                        b.signed
                    );
                }
            }
        }
    }
    t.flush_forced(&t.root()).unwrap();
    for g in 0..groups.len() {
        for k in 0..3 {
            assert_eq!(
                t.read_signed(&groups[g], items[k]).unwrap(),
                exact(g, k, &parent, &local),
                "{} seed {seed}: {} item {k} after a root flush",
                preset.name(),
                groups[g].path()
            );
        }
    }
    t.verify_clean().unwrap();
}
