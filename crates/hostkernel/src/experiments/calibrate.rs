//! Calibration: the host's figures the simulator's `[kernel]` costs are
//! derived from (`mmlab calibrate`). Each is measured in the measuring
//! thread's (or the worker's) CPU time, the median of many, so that a
//! loaded host's scheduling delays stay out:
//!
//! * **faults**: a worker in a group directly under the tree's top faults
//!   `pages` pages per round, `rounds` times, on each mapping of
//!   will-it-scale's page-fault tests (their three mappings): CPU ns per fault,
//!   its `munmap` share included;
//! * **reads**: `open` + `read` + `close` of a one-number file (the page
//!   counter) and of `memory.stat` of random idle groups among 200 (as the
//!   stat-readers experiment reads random groups, their structures cold),
//!   and the number of lines of `memory.stat`;
//! * **a flush visit**: after a worker pinned to CPU 0 charged and freed
//!   enough to put the group over the threshold, a read of the parent
//!   flushes (2 groups on 1 CPU: 2 visits); the next does not: the
//!   difference per visit;
//! * **a send**: 10 KiB `sendfile` over TCP loopback from a tmpfs file,
//!   a client and a server thread of this process (outside the test
//!   groups: the send's work outside memcg);
//! * optionally ([`CalibrateConfig::count_updates`]) the memcg stat
//!   updates per fault, counted with the `memcg:mod_memcg_state`,
//!   `mod_memcg_lruvec_state` and `count_memcg_events` tracepoints
//!   filtered to the worker's group (a run of 1 + N rounds minus a run of
//!   1: N rounds of steady state).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cgroup::CgroupTree;
use crate::detect::{CgroupVersion, Host, RunFacts};
use crate::error::Error;
use crate::sys::child::{Job, Mapping, ACK, CHARGE, FREE};
use crate::sys::query::{self, thread_cpu_ns};
use crate::worker::Worker;
use simcore::stats::median;
use simcore::Cancel;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CalibrateConfig {
    /// Pages per fault round.
    pub pages: usize,
    /// Measured rounds per mapping.
    pub rounds: usize,
    /// Reads per read measurement.
    pub reads: usize,
    /// Sends of 10 KiB.
    pub sends: usize,
    /// Count stat updates per fault with the memcg tracepoints (changes
    /// the host's tracing state while it runs: events enabled and filtered
    /// to the worker's group, then disabled and unfiltered).
    pub count_updates: bool,
}

impl Default for CalibrateConfig {
    /// 1024 pages × 8 rounds, 400 reads, 20 000 sends; no tracing.
    fn default() -> Self {
        CalibrateConfig {
            pages: 1024,
            rounds: 8,
            reads: 400,
            sends: 20_000,
            count_updates: false,
        }
    }
}

/// One mapping's faults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultCost {
    /// `anon`, `file-private`, `file-shared`.
    pub mapping: String,
    /// Median round's CPU ns per fault (touch and unmap).
    pub cpu_ns_per_fault: f64,
    /// Stat updates per fault, when counted.
    pub updates_per_fault: Option<f64>,
}

/// The calibration's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationResult {
    /// Host facts.
    pub facts: RunFacts,
    /// `model name` of `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Depth of the measured group (1: under the hierarchy's root).
    pub depth: usize,
    /// Faults per mapping.
    pub faults: Vec<FaultCost>,
    /// CPU ns of `open` + `read` + `close` of a one-number file.
    pub read_syscall_ns: f64,
    /// CPU ns of the same of `memory.stat`, no flush.
    pub read_stat_ns: f64,
    /// Lines of `memory.stat`.
    pub stat_items: u32,
    /// CPU ns of a read of the parent that flushed, minus one that did not,
    /// per flush visit.
    pub flush_visit_ns: f64,
    /// Wall ns per 10 KiB `sendfile` over loopback (client and server on
    /// their own threads).
    pub send_ns: f64,
}

fn mapping_name(m: Mapping) -> &'static str {
    match m {
        Mapping::Anon => "anon",
        Mapping::FilePrivate => "file-private",
        Mapping::FileShared => "file-shared",
    }
}

/// Runs `rounds` fault rounds of `mapping` in `dir`; the CPU ns per fault
/// of each round (touch and unmap).
fn fault_rounds(
    tree: &CgroupTree,
    dir: &Path,
    pages: usize,
    rounds: usize,
    mapping: Mapping,
    cancel: &Cancel,
) -> Result<Vec<f64>, Error> {
    let mut w = Worker::start(
        tree,
        dir,
        Job::FaultRounds {
            pages,
            rounds,
            mapping,
        },
    )?;
    let per_round = Duration::from_micros(50 * pages as u64) + Duration::from_secs(1);
    let mut out = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut buf = [0u8; 32];
        w.recv(&mut buf, per_round, cancel)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[24..32]);
        out.push(u64::from_ne_bytes(b) as f64 / pages as f64);
    }
    w.finish()?;
    Ok(out)
}

/// The tracefs directory, if mounted.
fn tracefs() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events/memcg/mod_memcg_state").is_dir())
}

const EVENTS: [&str; 3] = [
    "mod_memcg_state",
    "mod_memcg_lruvec_state",
    "count_memcg_events",
];

/// Memcg stat updates of the group with cgroup id `id` while `f` runs.
fn count_events(
    tracing: &Path,
    id: u64,
    f: impl FnOnce() -> Result<(), Error>,
) -> Result<u64, Error> {
    let set = |e: &str, file: &str, v: &str| {
        let p = tracing.join("events/memcg").join(e).join(file);
        std::fs::write(&p, v).map_err(|err| Error::io("write", &p, err))
    };
    let before = count_in_trace(tracing, id)?;
    for e in EVENTS {
        set(e, "filter", &format!("id == {id}"))?;
        set(e, "enable", "1")?;
    }
    let r = f();
    for e in EVENTS {
        let _ = set(e, "enable", "0");
        let _ = set(e, "filter", "0");
    }
    r?;
    Ok(count_in_trace(tracing, id)? - before)
}

fn count_in_trace(tracing: &Path, id: u64) -> Result<u64, Error> {
    let p = tracing.join("trace");
    let text = std::fs::read_to_string(&p).map_err(|e| Error::io("read", &p, e))?;
    let key = format!("memcg_id={id} ");
    Ok(text.lines().filter(|l| l.contains(&key)).count() as u64)
}

/// CPU ns of `open` + `read` to EOF + `close` of `path`, median of `n`.
fn read_cost(path: &Path, n: usize) -> Result<f64, Error> {
    read_cost_of(&[path.to_path_buf()], n, 1)
}

/// The same, of a seeded random one of `paths` each time.
fn read_cost_of(paths: &[PathBuf], n: usize, seed: u64) -> Result<f64, Error> {
    let mut rng = simcore::Rng::new(seed);
    let mut buf = vec![0u8; 64 * 1024];
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let path = &paths[rng.below(paths.len() as u64) as usize];
        let t = thread_cpu_ns();
        let mut f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
        while f.read(&mut buf).map_err(|e| Error::io("read", path, e))? > 0 {}
        drop(f);
        v.push(thread_cpu_ns().saturating_sub(t) as f64);
    }
    Ok(median(&v))
}

/// Wall ns per 10 KiB `sendfile` over TCP loopback.
fn send_cost(sends: usize) -> Result<f64, Error> {
    const MSG: usize = 10 * 1024;
    const FILE: usize = 1 << 20;
    let io =
        |what: &'static str| move |e: std::io::Error| Error::io(what, Path::new("loopback"), e);
    let file = query::memfd(FILE).map_err(io("memfd"))?;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("bind"))?;
    let addr = listener.local_addr().map_err(io("local_addr"))?;
    std::thread::scope(|s| -> Result<f64, Error> {
        let server = simcore::thread::spawn_scoped(s, "calibrate-server", move || {
            let (mut c, _) = listener.accept()?;
            let mut buf = vec![0u8; 64 * 1024];
            while c.read(&mut buf)? > 0 {}
            Ok::<(), std::io::Error>(())
        })
        .map_err(|e| Error::Worker(format!("server thread: {e}")))?;
        let mut c = TcpStream::connect(addr).map_err(io("connect"))?;
        let start = std::time::Instant::now();
        let mut off: i64 = 0;
        for _ in 0..sends {
            if off as usize + MSG > FILE {
                off = 0;
            }
            let mut left = MSG;
            while left > 0 {
                let n = query::sendfile(c.as_raw_fd(), file.as_raw_fd(), &mut off, left)
                    .map_err(io("sendfile"))?;
                if n == 0 {
                    return Err(Error::Worker("sendfile sent nothing".into()));
                }
                left -= n;
            }
        }
        c.flush().map_err(io("flush"))?;
        drop(c);
        server
            .join()
            .map_err(|_| Error::Worker("server thread panicked".into()))?
            .map_err(io("server"))?;
        Ok(start.elapsed().as_nanos() as f64 / sends.max(1) as f64)
    })
}

/// The flush visit: a worker pinned to CPU 0 charges and frees in the
/// leaf; a read of the parent then flushes (leaf and parent on CPU 0), the
/// next does not. Median difference per visit.
fn flush_visit(
    host: &Host,
    parent: &Path,
    leaf: &Path,
    tree: &CgroupTree,
    reads: usize,
    cancel: &Cancel,
) -> Result<f64, Error> {
    let pages = (host.facts().flush_threshold_pages as usize).max(64);
    let mut w = Worker::start(tree, leaf, Job::Spike { pages })?;
    let two = host.facts().online_cpus >= 2;
    if two {
        w.pin(0)?;
    }
    let stat = parent.join("memory.stat");
    // The reads run on a thread of their own, pinned to CPU 1 (the
    // caller's affinity is left alone).
    let diffs = std::thread::scope(|s| {
        let w = &mut w;
        simcore::thread::spawn_scoped(s, "calibrate-flush", move || {
            if two {
                let _ = query::pin_to_cpu(0, 1);
            }
            let mut diffs = Vec::with_capacity(reads);
            let mut ack = [0u8; 1];
            for _ in 0..reads.min(200) {
                crate::signals::check(cancel)?;
                for cmd in [CHARGE, FREE] {
                    w.send(cmd)?;
                    w.recv(&mut ack, Duration::from_secs(10), cancel)?;
                    if ack[0] != ACK {
                        return Err(Error::Worker(format!("spike worker answered {:?}", ack[0])));
                    }
                }
                let flushing = read_cost(&stat, 1)?;
                let plain = read_cost(&stat, 1)?;
                diffs.push(flushing - plain);
            }
            Ok(diffs)
        })
        .map_err(|e| Error::Worker(format!("reader thread: {e}")))?
        .join()
        .map_err(|_| Error::Worker("reader thread panicked".into()))?
    })?;
    w.finish()?;
    // Leaf and parent, on the worker's CPU.
    Ok(median(&diffs).max(0.0) / 2.0)
}

/// `model name` of the first CPU in `/proc/cpuinfo`.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Runs the calibration. Everything it creates is removed before it
/// returns, on success, error, cancellation or panic.
pub fn run_calibration(
    host: &Host,
    cfg: &CalibrateConfig,
    cancel: &Cancel,
) -> Result<CalibrationResult, Error> {
    if cfg.pages == 0 || cfg.rounds == 0 || cfg.reads == 0 {
        return Err(Error::Config(
            "calibrate: pages, rounds and reads must be > 0".into(),
        ));
    }
    let mut tree = CgroupTree::create(host)?;
    let top = tree.top().to_path_buf();
    let mut faults = Vec::new();
    for mapping in [Mapping::Anon, Mapping::FilePrivate, Mapping::FileShared] {
        // One warm-up round (page tables, the memfd's page cache).
        let mut per = fault_rounds(&tree, &top, cfg.pages, cfg.rounds + 1, mapping, cancel)?;
        per.remove(0);
        let updates_per_fault = match (cfg.count_updates, tracefs()) {
            (true, Some(t)) => {
                let id = cgroup_id(&top)?;
                let (small, n) = (256, 3);
                let one = count_events(&t, id, || {
                    fault_rounds(&tree, &top, small, 1, mapping, cancel).map(drop)
                })?;
                let more = count_events(&t, id, || {
                    fault_rounds(&tree, &top, small, 1 + n, mapping, cancel).map(drop)
                })?;
                Some(more.saturating_sub(one) as f64 / (small * n) as f64)
            }
            _ => None,
        };
        faults.push(FaultCost {
            mapping: mapping_name(mapping).into(),
            cpu_ns_per_fault: median(&per),
            updates_per_fault,
        });
    }
    let counter = match host.version() {
        CgroupVersion::V1 => "memory.usage_in_bytes",
        CgroupVersion::V2 => "memory.current",
    };
    let idle = tree.mkdir(&top, "idle")?;
    let groups: Vec<PathBuf> = (0..200)
        .map(|i| tree.mkdir(&idle, &format!("g{i}")))
        .collect::<Result<_, _>>()?;
    let files = |f: &str| groups.iter().map(|g| g.join(f)).collect::<Vec<_>>();
    let read_syscall_ns = read_cost_of(&files(counter), cfg.reads, 1)?;
    let read_stat_ns = read_cost_of(&files("memory.stat"), cfg.reads, 2)?;
    let stat_path = groups[0].join("memory.stat");
    let stat_items = std::fs::read_to_string(&stat_path)
        .map_err(|e| Error::io("read", &stat_path, e))?
        .lines()
        .count() as u32;
    let parent = tree.mkdir(&top, "parent")?;
    let leaf = tree.mkdir(&parent, "leaf")?;
    let flush_visit_ns = flush_visit(host, &parent, &leaf, &tree, cfg.reads, cancel)?;
    tree.close()?;
    let send_ns = send_cost(cfg.sends)?;
    Ok(CalibrationResult {
        facts: host.facts().clone(),
        cpu_model: cpu_model(),
        depth: 1,
        faults,
        read_syscall_ns,
        read_stat_ns,
        stat_items,
        flush_visit_ns,
        send_ns,
    })
}

/// The cgroup id the memcg tracepoints print: the directory's inode.
fn cgroup_id(dir: &Path) -> Result<u64, Error> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir)
        .map(|m| m.ino())
        .map_err(|e| Error::io("stat", dir, e))
}
