//! The workload of the `serve_workload` example, shared with the
//! Prometheus end-to-end test: a systemd-like memory-cgroup tree (the
//! lab's `memory.stat` schema from `models`, 2 NUMA nodes) that real writer
//! threads charge, uncharge and fault on, as the `stat-readers-real`
//! scenario's writers do.

use hierstat::{Config, Group, HierStats, Preset};
use models::memcg::{MemcgSchema, Slot, Stat};
use simcore::Rng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// NUMA nodes of the tree.
pub const NODES: usize = 2;

/// Builds the tree: `/init.scope`, eight `system.slice` services, a user
/// session, and `pods` Kubernetes pods (two containers each) under
/// `kubepods.slice`. Returns the groups that writers charge: every leaf,
/// plus the root (processes of the root cgroup).
pub fn systemd_tree(stats: &HierStats, pods: usize) -> Vec<Group> {
    let root = stats.root();
    let mk = |p: &Group, n: &str| stats.create(p, n).expect("fresh names");
    let mut targets = vec![root.clone(), mk(&root, "init.scope")];
    let system = mk(&root, "system.slice");
    for s in [
        "systemd-journald",
        "sshd",
        "containerd",
        "kubelet",
        "nginx",
        "postgresql",
        "cron",
        "dbus",
    ] {
        targets.push(mk(&system, &format!("{s}.service")));
    }
    let user = mk(&mk(&root, "user.slice"), "user-1000.slice");
    targets.push(mk(&user, "user@1000.service"));
    targets.push(mk(&user, "session-1.scope"));
    let kube = mk(&root, "kubepods.slice");
    let classes = [
        mk(&kube, "kubepods-burstable.slice"),
        mk(&kube, "kubepods-besteffort.slice"),
    ];
    for i in 0..pods {
        let class = &classes[i % 2];
        let pod = mk(
            class,
            &format!(
                "{}-pod{i:04}.slice",
                class.name().trim_end_matches(".slice")
            ),
        );
        for c in 0..2 {
            targets.push(mk(&pod, &format!("cri-containerd-{i:04}{c}.scope")));
        }
    }
    targets
}

/// A running workload: the tree and its writer threads.
#[derive(Debug)]
pub struct Workload {
    /// The tree.
    pub stats: HierStats,
    stop: Arc<AtomicBool>,
    updates: Arc<AtomicU64>,
    writers: Vec<JoinHandle<()>>,
}

impl Workload {
    /// Builds the tree and starts `threads` writers; each pauses 1 ms
    /// after every `burst` updates (0: never), which keeps a 2-core host
    /// usable.
    pub fn start(threads: usize, pods: usize, burst: u64, seed: u64) -> Workload {
        let ms = MemcgSchema::new(NODES).expect("valid schema");
        let stats = HierStats::new(
            ms.schema().clone(),
            Config::preset(Preset::Hierstat).shards(threads.max(1)),
        )
        .expect("valid config");
        let targets = systemd_tree(&stats, pods);
        let stop = Arc::new(AtomicBool::new(false));
        let updates = Arc::new(AtomicU64::new(0));
        let writers = (0..threads)
            .map(|t| {
                let (stats, ms, targets) = (stats.clone(), ms.clone(), targets.clone());
                let (stop, updates) = (stop.clone(), updates.clone());
                std::thread::Builder::new()
                    .name(format!("writer-{t}"))
                    .spawn(move || {
                        let mut rng =
                            Rng::new(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                        writer(&stats, &ms, &targets, &mut rng, burst, &stop, &updates)
                    })
                    .expect("spawn writer")
            })
            .collect();
        Workload {
            stats,
            stop,
            updates,
            writers,
        }
    }

    /// Updates done so far.
    pub fn updates(&self) -> u64 {
        // ORDERING: Relaxed; a progress counter.
        self.updates.load(Ordering::Relaxed)
    }

    /// Stops the writers and returns the number of updates done.
    pub fn stop(mut self) -> u64 {
        self.halt();
        self.updates()
    }

    fn halt(&mut self) {
        // ORDERING: Relaxed; the joins below synchronize.
        self.stop.store(true, Ordering::Relaxed);
        for w in self.writers.drain(..) {
            w.join().expect("writer panicked");
        }
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.halt();
    }
}

/// State items a writer charges and later uncharges (never more than it
/// charged itself, so that every shard's counters stay non-negative).
pub const CHARGED: [Stat; 4] = [Stat::Anon, Stat::File, Stat::Kernel, Stat::Sock];
/// Events a writer counts beside a charge.
pub const EVENTS: [Stat; 4] = [
    Stat::Pgfault,
    Stat::Pgmajfault,
    Stat::Pgactivate,
    Stat::PgscanKswapd,
];

fn writer(
    stats: &HierStats,
    ms: &MemcgSchema,
    targets: &[Group],
    rng: &mut Rng,
    burst: u64,
    stop: &AtomicBool,
    updates: &AtomicU64,
) {
    // What this thread holds: [target][charged stat][node].
    let mut held = vec![[[0i64; NODES]; CHARGED.len()]; targets.len()];
    let mut done = 0u64;
    // ORDERING: Relaxed; a stop flag, joined afterwards.
    while !stop.load(Ordering::Relaxed) {
        let t = rng.below(targets.len() as u64) as usize;
        let g = &targets[t];
        let k = rng.below(CHARGED.len() as u64) as usize;
        let node = rng.below(NODES as u64) as usize;
        let pages = 1 + rng.below(8) as i64;
        // Uncharge 30% of the time, what this thread holds at most.
        let delta = if rng.below(10) < 3 {
            -pages.min(held[t][k][node])
        } else {
            pages
        };
        held[t][k][node] += delta;
        let r = match ms.slot(CHARGED[k]) {
            Slot::Node(item) => stats.add_node(g, item, node, delta),
            Slot::Plain(item) => stats.add(g, item, delta),
        };
        r.expect("valid update");
        if delta > 0 {
            let e = EVENTS[rng.below(EVENTS.len() as u64) as usize];
            if let Slot::Plain(item) = ms.slot(e) {
                stats.add(g, item, pages).expect("valid event");
            }
        }
        done += 1;
        if done % 256 == 0 {
            // ORDERING: Relaxed; a progress counter.
            updates.fetch_add(256, Ordering::Relaxed);
        }
        if burst > 0 && done % burst == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
