//! Experiment 2: `memory.stat` read latency with many groups and writers.
//!
//! G sibling groups under one parent; W writer processes, each in its own
//! group (spread evenly over the G), fault and free memory in a loop; reader
//! threads read `memory.stat` of uniformly random groups (open, read to EOF,
//! close), pausing `period` between reads. Each read's latency is recorded.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cgroup::CgroupTree;
use crate::detect::{Host, RunFacts};
use crate::error::Error;
use crate::experiments::{Event, Observer};
use crate::sys::child::Job;
use crate::worker::Worker;
use simcore::clock::thread_cpu_ns;
use simcore::stats::{Log2Bucket, Log2Histogram, Summary};
use simcore::thread::spawn_scoped;
use simcore::Cancel;
use simcore::Rng;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatReadersConfig {
    /// Group counts to measure (one case per group count × writer count).
    pub groups: Vec<usize>,
    /// Writer counts to measure.
    pub writers: Vec<usize>,
    /// Reader threads.
    pub readers: usize,
    /// Reads per reader thread per case.
    pub reads_per_reader: usize,
    /// Pause between two reads of one reader (serialised as `period_ms`).
    #[serde(with = "crate::serde_ms", rename = "period_ms")]
    pub period: Duration,
    /// Pages each writer maps, touches and unmaps per loop.
    pub writer_pages: usize,
    /// Time the writers run before the readers start (serialised as
    /// `warmup_ms`).
    #[serde(with = "crate::serde_ms", rename = "warmup_ms")]
    pub warmup: Duration,
    /// Seed of the readers' group choice.
    pub seed: u64,
}

impl Default for StatReadersConfig {
    /// 200 and 2000 groups × 0, 1, 2 writers; 1 reader × 2000 reads, 1 ms
    /// apart; writers churn 1 MiB (256 pages at 4 KiB).
    fn default() -> Self {
        StatReadersConfig {
            groups: vec![200, 2000],
            writers: vec![0, 1, 2],
            readers: 1,
            reads_per_reader: 2000,
            period: Duration::from_millis(1),
            writer_pages: 256,
            warmup: Duration::from_millis(200),
            seed: 0x5eed,
        }
    }
}

impl StatReadersConfig {
    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), Error> {
        if self.groups.is_empty() || self.groups.iter().any(|&g| g == 0 || g > 20_000) {
            return Err(Error::Config(
                "stat-readers: groups must be 1..=20000 and non-empty".into(),
            ));
        }
        if self.writers.is_empty()
            || self.readers == 0
            || self.reads_per_reader == 0
            || self.writer_pages == 0
        {
            return Err(Error::Config(
                "stat-readers: writers non-empty; readers, reads_per_reader, writer_pages > 0"
                    .into(),
            ));
        }
        for &g in &self.groups {
            if let Some(&w) = self.writers.iter().find(|&&w| w > g) {
                return Err(Error::Config(format!(
                    "stat-readers: {w} writers need at least {w} groups, got {g}"
                )));
            }
        }
        Ok(())
    }
}

/// One (groups, writers) case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatReadersCase {
    /// Groups under the parent.
    pub groups: usize,
    /// Writer processes.
    pub writers: usize,
    /// Reader threads.
    pub readers: usize,
    /// Read latency summary (wall clock), ns.
    pub latency_ns: Summary,
    /// The reader thread's CPU time per read, ns: the read's own kernel
    /// work without the time the reader waited for a CPU (on a loaded host
    /// the difference to `latency_ns` is scheduling delay).
    pub cpu_ns: Summary,
    /// funclatency-style log2 histogram of the latencies, ns.
    pub histogram_ns: Vec<Log2Bucket>,
    /// Every read's latency in ns, readers concatenated in order.
    pub samples_ns: Vec<u64>,
    /// Reads slower than 1 ms.
    pub over_1ms: usize,
    /// Size of one `memory.stat` read (bytes, from the first read).
    pub stat_bytes: usize,
    /// Wall time of the reading phase.
    pub wall_s: f64,
}

/// The experiment's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatReadersResult {
    /// Host facts.
    pub facts: RunFacts,
    /// The configuration run.
    pub config: StatReadersConfig,
    /// Cases in order: for each group count, each writer count.
    pub cases: Vec<StatReadersCase>,
    /// Time to create the groups, per group count, seconds.
    pub setup_s: Vec<f64>,
    /// Wall time of the whole experiment.
    pub wall_s: f64,
}

impl StatReadersResult {
    /// The case for (groups, writers).
    pub fn case(&self, groups: usize, writers: usize) -> Option<&StatReadersCase> {
        self.cases
            .iter()
            .find(|c| c.groups == groups && c.writers == writers)
    }
}

/// A reader's (wall ns, CPU ns) per read, and the size of its first read.
type ReaderOutput = (Vec<(u64, u64)>, usize);

/// One reader: `n` timed reads of random groups' `memory.stat`.
fn reader(
    files: &[PathBuf],
    n: usize,
    period: Duration,
    seed: u64,
    cancel: &Cancel,
) -> Result<ReaderOutput, Error> {
    let mut rng = Rng::new(seed);
    // One fixed buffer and plain read(2) calls until EOF: exactly open, read,
    // read (0 = EOF), close, as a C reader does (`read_to_end` would add an
    // fstat and an lseek per read for its size hint).
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(n);
    let mut first_len = 0;
    for i in 0..n {
        crate::signals::check(cancel)?;
        let path = &files[rng.below(files.len() as u64) as usize];
        let c0 = thread_cpu_ns().unwrap_or(0);
        let t0 = Instant::now();
        let mut f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            match f.read(&mut buf[len..]) {
                Ok(0) => break,
                Ok(k) => len += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read", path, e)),
            }
        }
        drop(f);
        let dt = t0.elapsed();
        let cpu = thread_cpu_ns().unwrap_or(0).saturating_sub(c0);
        if len == 0 {
            return Err(Error::Parse {
                what: path.display().to_string(),
                detail: "empty memory.stat".into(),
            });
        }
        if i == 0 {
            first_len = len;
        }
        out.push((dt.as_nanos() as u64, cpu));
        if !period.is_zero() {
            std::thread::sleep(period);
        }
    }
    Ok((out, first_len))
}

/// Runs the stat-readers experiment. Everything it creates is removed before
/// it returns, on success, error, cancellation or panic.
pub fn run_stat_readers(
    host: &Host,
    cfg: &StatReadersConfig,
    cancel: &Cancel,
) -> Result<StatReadersResult, Error> {
    run_stat_readers_observed(host, cfg, cancel, &mut |_| {})
}

/// [`run_stat_readers`], reporting [`Event`]s to `obs`.
pub fn run_stat_readers_observed(
    host: &Host,
    cfg: &StatReadersConfig,
    cancel: &Cancel,
    obs: Observer<'_>,
) -> Result<StatReadersResult, Error> {
    cfg.validate()?;
    let start = Instant::now();
    let mut cases = Vec::new();
    let mut setup_s = Vec::new();
    for (gi, &g) in cfg.groups.iter().enumerate() {
        let t = Instant::now();
        let mut tree = CgroupTree::create(host)?;
        obs(Event::TreeCreated { top: tree.top() });
        let top = tree.top().to_path_buf();
        let groups = tree.mkdir_siblings(&top, g, cancel)?;
        let files: Vec<PathBuf> = groups.iter().map(|d| d.join("memory.stat")).collect();
        setup_s.push(t.elapsed().as_secs_f64());
        for (wi, &w) in cfg.writers.iter().enumerate() {
            crate::signals::check(cancel)?;
            let mut workers = Vec::with_capacity(w);
            for k in 0..w {
                let dir = &groups[k * g / w.max(1)];
                let wk = Worker::start(
                    &tree,
                    dir,
                    Job::Churn {
                        pages: cfg.writer_pages,
                    },
                )?;
                obs(Event::WorkerStarted {
                    pid: wk.pid(),
                    cgroup: dir,
                });
                workers.push(wk);
            }
            let t0 = Instant::now();
            while t0.elapsed() < cfg.warmup {
                crate::signals::check(cancel)?;
                std::thread::sleep(Duration::from_millis(10).min(cfg.warmup));
            }
            let t1 = Instant::now();
            let results: Vec<Result<ReaderOutput, Error>> = std::thread::scope(|s| {
                // A reader that cannot be started is an error once the
                // started ones (bounded reads) are done.
                let handles: Vec<_> = (0..cfg.readers)
                    .map(|r| {
                        let files = &files;
                        let seed = cfg.seed ^ ((gi as u64) << 48) ^ ((wi as u64) << 32) ^ r as u64;
                        spawn_scoped(s, "hostkernel-reader", move || {
                            reader(files, cfg.reads_per_reader, cfg.period, seed, cancel)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| match h {
                        Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                        Err(e) => Err(Error::Thread(e)),
                    })
                    .collect()
            });
            let wall = t1.elapsed().as_secs_f64();
            for wk in workers {
                wk.stop()?;
            }
            let mut samples = Vec::with_capacity(cfg.readers * cfg.reads_per_reader);
            let mut cpu_samples = Vec::with_capacity(cfg.readers * cfg.reads_per_reader);
            let mut stat_bytes = 0;
            for r in results {
                let (s, len) = r?;
                samples.extend(s.iter().map(|x| x.0));
                cpu_samples.extend(s.iter().map(|x| x.1 as f64));
                stat_bytes = stat_bytes.max(len);
            }
            let cpu_ns = Summary::of(&cpu_samples)
                .ok_or_else(|| Error::Config("stat-readers: no samples".into()))?;
            let latency_ns = Summary::of(&samples.iter().map(|&s| s as f64).collect::<Vec<_>>())
                .ok_or_else(|| Error::Config("stat-readers: no samples".into()))?;
            cases.push(StatReadersCase {
                groups: g,
                writers: w,
                readers: cfg.readers,
                latency_ns,
                cpu_ns,
                histogram_ns: Log2Histogram::of(&samples).nonempty_range(),
                over_1ms: samples.iter().filter(|&&s| s > 1_000_000).count(),
                samples_ns: samples,
                stat_bytes,
                wall_s: wall,
            });
            obs(Event::Step {
                done: cases.len(),
                total: cfg.groups.len() * cfg.writers.len(),
            });
        }
        tree.close()?;
    }
    Ok(StatReadersResult {
        facts: host.facts().clone(),
        config: cfg.clone(),
        cases,
        setup_s,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_a_partial_scenario() {
        let c: StatReadersConfig =
            serde_json::from_str(r#"{"groups": [10], "period_ms": 0.5}"#).unwrap();
        assert_eq!(c.groups, vec![10]);
        assert_eq!(c.period, Duration::from_micros(500));
        assert_eq!(c.writers, StatReadersConfig::default().writers);
        let back: StatReadersConfig =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        assert!(serde_json::from_str::<StatReadersConfig>(r#"{"period": 1}"#).is_err());
        assert!(serde_json::from_str::<StatReadersConfig>(r#"{"period_ms": -1}"#).is_err());
    }

    #[test]
    fn config_validation() {
        assert!(StatReadersConfig::default().validate().is_ok());
        let bad = StatReadersConfig {
            groups: vec![1],
            writers: vec![2],
            ..Default::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("2 writers need at least 2 groups"));
    }
}
