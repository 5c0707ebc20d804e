//! Experiment 3: how stale is the parent's `memory.stat` right after a spike?
//!
//! Layout: the tree's top is the *parent*; one leaf under it holds a spike
//! worker. Each repetition:
//!
//! 1. read the parent (stat total and page counter): the *before* gap;
//! 2. the worker maps and touches `spike` bytes (charged to the leaf and so
//!    to the parent's page counter) and answers; at once the parent's
//!    `memory.stat` is read (open, read, close: the kernel flushes first only
//!    if the parent's pending update magnitude exceeds its threshold), then
//!    its page counter: the *after-charge* gap;
//! 3. the worker unmaps; the same reads: the *after-free* gap.
//!
//! The stat's own lag is also reported free of the stock:
//! `spike − (stat after − stat before)` after the charge and
//! `stat after free − stat before` after the free.
//!
//! Gap = page counter − stat total, in pages (see
//! [`crate::stat::stat_total_keys`] for which keys and counters and why).
//! Two kernel mechanisms move it, both sized by `MEMCG_CHARGE_BATCH` (64):
//!
//! * **stats not yet flushed** (rstat): `memory.stat` flushes only when the
//!   group's pending update magnitude exceeds 64 × online CPUs, so right
//!   after a charge the stat can be behind (gap > 0), right after a free
//!   ahead (gap < 0). The magnitude counts *every* stat item a fault touches
//!   (`NR_ANON_MAPPED`, LRU sizes, `pgfault`, `pgpgin`, …), so one item's lag
//!   is well below the threshold.
//! * **per-CPU charge stock**: the page counter is charged 64 pages at a
//!   time per CPU and the surplus kept for later charges, so the counter can
//!   be ahead of the pages in use by up to 64 per CPU (gap > 0), until the
//!   stock is drained or used.
//!
//! The kernel selftests bound |gap| by `PAGE_SIZE × 64 × nprocs`
//! (`MAX_VMSTAT_ERROR`, test_kmem.c); the result counts the repetitions
//! beyond the threshold and beyond twice it (both mechanisms at their bound).
//!
//! # The trap (6.17+: the bound does not hold)
//!
//! With [`StaleReadConfig::concurrent_reader`], a thread on another CPU
//! reads the parent's `memory.stat` in a loop while the spike is charged,
//! as a monitoring agent would. Each of its reads that finds the parent
//! over `T` flushes the parent's subtree, visiting the leaf, then the
//! parent, and zeroing each one's pending count; a fold of the charging
//! CPU between the two visits is kept by the leaf and wiped from the
//! parent, so the leaf's count runs ahead of its parent's. Once the leaf
//! is over `T`, the 2025 early break in `memcg_rstat_updated` stops every
//! update at the leaf: the parent's count stays at or below `T` (at
//! exactly `T` in the traces of the `memcg:memcg_flush_stats` tracepoint)
//! and no read of the parent flushes it until the periodic flush (every
//! 2 s). The parent then misses the whole spike. [`StaleReadConfig::follow_ms`]
//! re-reads the parent after such a charge until it shows the spike: how
//! long the trap lasts. The worker and the reader are pinned to different
//! CPUs (when the host has two), which makes the sequence happen on
//! nearly every charge; without the reader, only a periodic flush that
//! lands during a charge sets the trap (a run now and then).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cgroup::{read_u64, CgroupTree};
use crate::detect::{CgroupVersion, Host, RunFacts};
use crate::error::Error;
use crate::experiments::{Event, Observer};
use crate::stat::{parse_memory_stat, stat_total_bytes, stat_total_keys};
use crate::sys::child::{Job, ACK, CHARGE, FREE};
use crate::worker::Worker;
use simcore::stats::Summary;
use simcore::Cancel;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StaleReadConfig {
    /// Spike sizes in KiB (one case each).
    pub spikes_kib: Vec<u64>,
    /// Repetitions per spike size.
    pub repetitions: usize,
    /// Pause after each repetition (lets the periodic flusher and the
    /// stocks play their part as they would between real events; serialised
    /// as `pause_ms`).
    #[serde(with = "crate::serde_ms", rename = "pause_ms")]
    pub pause: Duration,
    /// A thread reads the parent's `memory.stat` in a loop while each
    /// spike is charged (see the module docs, "The trap").
    #[serde(default)]
    pub concurrent_reader: bool,
    /// After a charge the parent's stat lags by more than the threshold,
    /// re-read it every `follow_poll_ms` until it does not, for at most
    /// this long (0: do not follow).
    #[serde(default)]
    pub follow_ms: f64,
    /// The follow phase's period.
    #[serde(default = "default_follow_poll_ms")]
    pub follow_poll_ms: f64,
}

fn default_follow_poll_ms() -> f64 {
    5.0
}

impl Default for StaleReadConfig {
    /// 64 KiB and 256 KiB (16 and 64 pages at 4 KiB: the update magnitude
    /// of the smaller stays under a 2-CPU threshold), 1 MiB and 16 MiB; 200
    /// repetitions each, 2 ms apart.
    fn default() -> Self {
        StaleReadConfig {
            spikes_kib: vec![64, 256, 1024, 16 * 1024],
            repetitions: 200,
            pause: Duration::from_millis(2),
            concurrent_reader: false,
            follow_ms: 0.0,
            follow_poll_ms: default_follow_poll_ms(),
        }
    }
}

impl StaleReadConfig {
    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), Error> {
        if self.spikes_kib.is_empty()
            || self
                .spikes_kib
                .iter()
                .any(|&k| k == 0 || k > 4 * 1024 * 1024)
        {
            return Err(Error::Config(
                "stale-read: spikes must be 1 KiB..=4 GiB and non-empty".into(),
            ));
        }
        if self.repetitions == 0 {
            return Err(Error::Config("stale-read: repetitions must be > 0".into()));
        }
        if !(0.0..=60_000.0).contains(&self.follow_ms)
            || !(0.1..=10_000.0).contains(&self.follow_poll_ms)
        {
            return Err(Error::Config(
                "stale-read: follow_ms must be 0..=60000 and follow_poll_ms 0.1..=10000".into(),
            ));
        }
        Ok(())
    }
}

/// One repetition's readings of the parent, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StaleReadSample {
    /// When the after-charge read happened, ms since the case started.
    pub t_ms: f64,
    /// Gap before the spike.
    pub gap_before: i64,
    /// Gap right after the spike was charged.
    pub gap_after_charge: i64,
    /// Gap right after the spike was freed.
    pub gap_after_free: i64,
    /// Page counter after the charge minus before (should be ≈ the spike).
    pub counter_delta: i64,
    /// Stat total after the charge minus before.
    pub stat_delta: i64,
    /// Spike pages the stat did not show right after the charge
    /// (`spike − stat_delta`): the rstat staleness alone, free of the charge
    /// stock (0 when the read flushed).
    pub stat_lag_after_charge: i64,
    /// Stat total right after the free minus before the spike: freed pages
    /// the stat still showed (0 when the read flushed).
    pub stat_lag_after_free: i64,
    /// When followed (see [`StaleReadConfig::follow_ms`]): ms from the
    /// after-charge read until a read of the parent lagged by no more
    /// than the threshold (the follow's limit when it never did).
    #[serde(default)]
    pub stale_for_ms: Option<f64>,
    /// The follow ran out before the parent caught up.
    #[serde(default)]
    pub follow_timed_out: bool,
    /// Reads of the parent the concurrent reader made during the charge.
    #[serde(default)]
    pub reader_reads: u64,
    /// How long the repetition waited, before its spike, for the parent's
    /// stat to settle within [`BASELINE_SLACK_THRESHOLDS`] thresholds of its
    /// page counter (0 when it already was; [`TWO_PERIODIC_FLUSHES`] when
    /// it never did, and `gap_before` shows by how much).
    #[serde(default)]
    pub settle_ms: f64,
}

/// Distribution of one gap over the repetitions, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GapSummary {
    /// Smallest (most negative) gap.
    pub min: i64,
    /// Largest gap.
    pub max: i64,
    /// Mean gap.
    pub mean: f64,
    /// Percentiles of |gap|.
    pub abs: Summary,
    /// Repetitions with |gap| > threshold.
    pub over_threshold: usize,
    /// Repetitions with |gap| > 2 × threshold.
    pub over_twice_threshold: usize,
}

impl GapSummary {
    fn of(gaps: &[i64], threshold: u64) -> Option<GapSummary> {
        let abs: Vec<f64> = gaps.iter().map(|g| g.unsigned_abs() as f64).collect();
        Some(GapSummary {
            min: *gaps.iter().min()?,
            max: *gaps.iter().max()?,
            mean: gaps.iter().sum::<i64>() as f64 / gaps.len() as f64,
            abs: Summary::of(&abs)?,
            over_threshold: gaps.iter().filter(|g| g.unsigned_abs() > threshold).count(),
            over_twice_threshold: gaps
                .iter()
                .filter(|g| g.unsigned_abs() > 2 * threshold)
                .count(),
        })
    }
}

/// One spike size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaleReadCase {
    /// Spike size, KiB.
    pub spike_kib: u64,
    /// Spike size, pages.
    pub spike_pages: u64,
    /// Every repetition.
    pub samples: Vec<StaleReadSample>,
    /// Gap before the spike.
    pub before: GapSummary,
    /// Gap right after the charge.
    pub after_charge: GapSummary,
    /// Gap right after the free.
    pub after_free: GapSummary,
    /// [`StaleReadSample::stat_lag_after_charge`] over the repetitions.
    pub stat_lag_after_charge: GapSummary,
    /// [`StaleReadSample::stat_lag_after_free`] over the repetitions.
    pub stat_lag_after_free: GapSummary,
    /// The longest run of consecutive repetitions whose stat lag after the
    /// charge exceeded the threshold: the documented bound broken, for how
    /// long. `None` if no repetition exceeded it.
    pub longest_stale_window: Option<StaleWindow>,
    /// Repetitions whose counter grew by less than the spike minus twice the
    /// threshold (the stocks' reach): the spike was not charged to the
    /// parent, a broken setup. Only meaningful for spikes above 2 × threshold.
    pub undercharged: usize,
    /// Repetitions whose parent missed more than the threshold right after
    /// the charge.
    #[serde(default)]
    pub over_threshold: usize,
    /// [`StaleReadSample::stale_for_ms`] over the followed repetitions.
    #[serde(default)]
    pub stale_for_ms: Option<Summary>,
}

/// Consecutive repetitions whose parent `memory.stat` missed more than the
/// threshold right after the charge.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StaleWindow {
    /// Index of the first repetition.
    pub first: usize,
    /// Repetitions in the run.
    pub repetitions: usize,
    /// Time from the first to the last of them, ms (a lower bound of how
    /// long the stat stayed beyond the bound).
    pub duration_ms: f64,
    /// The largest stat lag in the run, pages.
    pub max_lag: i64,
}

/// Finds the longest run of samples with `stat_lag_after_charge > threshold`.
pub fn longest_stale_window(samples: &[StaleReadSample], threshold: u64) -> Option<StaleWindow> {
    let mut best: Option<StaleWindow> = None;
    let mut i = 0;
    while i < samples.len() {
        if samples[i].stat_lag_after_charge <= threshold as i64 {
            i += 1;
            continue;
        }
        let first = i;
        while i < samples.len() && samples[i].stat_lag_after_charge > threshold as i64 {
            i += 1;
        }
        let run = &samples[first..i];
        let w = StaleWindow {
            first,
            repetitions: run.len(),
            duration_ms: run[run.len() - 1].t_ms - run[0].t_ms,
            max_lag: run
                .iter()
                .map(|s| s.stat_lag_after_charge)
                .max()
                .unwrap_or(0),
        };
        if best.is_none_or(|b| w.repetitions > b.repetitions) {
            best = Some(w);
        }
    }
    best
}

/// The experiment's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaleReadResult {
    /// Host facts.
    pub facts: RunFacts,
    /// The configuration run.
    pub config: StaleReadConfig,
    /// The documented bound, pages: `MEMCG_CHARGE_BATCH × online CPUs`.
    pub threshold_pages: u64,
    /// `memory.stat` keys summed for the stat total.
    pub stat_keys: Vec<String>,
    /// Counter files: the gap uses the first minus the rest.
    pub counter_files: Vec<String>,
    /// One case per spike size.
    pub cases: Vec<StaleReadCase>,
    /// Wall time of the whole experiment.
    pub wall_s: f64,
}

/// Reads the parent: (stat total, page counter), pages. The stat is read
/// first, with plain open/read/close.
struct ParentReader {
    version: CgroupVersion,
    page: u64,
    stat: PathBuf,
    counters: Vec<PathBuf>,
    buf: Vec<u8>,
}

/// A baseline is settled when the parent's stat is within this many flush
/// thresholds of its page counter: one threshold of unflushed updates and
/// at most one of per-CPU charge stock (`MEMCG_CHARGE_BATCH` a CPU).
pub const BASELINE_SLACK_THRESHOLDS: u64 = 2;

/// Two periods of the kernel's periodic flush (`FLUSH_TIME` = 2 s) and
/// 0.5 s for the flush itself and a poll: the flush is a *deferrable*
/// delayed work re-queued 2 s after each run (`stats_flush_dwork`), whose
/// timer does not wake an idle CPU, so one period can stretch past 2 s
/// (2.86 s on a loaded 2-vCPU host). Whatever the trap left unflushed, a
/// periodic flush has landed it by then; it is also the longest a
/// repetition waits for its baseline to settle.
pub const TWO_PERIODIC_FLUSHES: Duration = Duration::from_millis(4500);

impl ParentReader {
    /// Reads `(stat, counter)` once the stat is within
    /// [`BASELINE_SLACK_THRESHOLDS`] thresholds of the counter, polling
    /// every `poll_ms` for at most [`TWO_PERIODIC_FLUSHES`], with the
    /// milliseconds it waited. A spike measured from a stale baseline (an
    /// earlier free or the worker's start-up the stat has not shown yet,
    /// trapped on 6.16+ until the periodic flush) would count that
    /// baseline's error as the spike's lag.
    fn settled(
        &mut self,
        threshold: u64,
        poll_ms: f64,
        cancel: &Cancel,
    ) -> Result<(i64, i64, f64), Error> {
        let slack = (BASELINE_SLACK_THRESHOLDS * threshold) as i64;
        let start = Instant::now();
        loop {
            let (s, c) = self.read()?;
            let waited = start.elapsed();
            if (c - s).abs() <= slack || waited >= TWO_PERIODIC_FLUSHES {
                return Ok((s, c, waited.as_secs_f64() * 1e3));
            }
            crate::signals::check(cancel)?;
            std::thread::sleep(Duration::from_secs_f64(poll_ms / 1e3));
        }
    }

    fn new(version: CgroupVersion, page: u64, parent: &Path) -> ParentReader {
        let counters = counter_files(version)
            .iter()
            .map(|f| parent.join(f))
            .collect();
        ParentReader {
            version,
            page,
            stat: parent.join("memory.stat"),
            counters,
            buf: vec![0; 64 * 1024],
        }
    }

    fn read(&mut self) -> Result<(i64, i64), Error> {
        let mut f =
            std::fs::File::open(&self.stat).map_err(|e| Error::io("open", &self.stat, e))?;
        let mut len = 0;
        loop {
            if len == self.buf.len() {
                self.buf.resize(len * 2, 0);
            }
            match f.read(&mut self.buf[len..]) {
                Ok(0) => break,
                Ok(k) => len += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("read", &self.stat, e)),
            }
        }
        drop(f);
        let text = std::str::from_utf8(&self.buf[..len]).map_err(|_| Error::Parse {
            what: self.stat.display().to_string(),
            detail: "not UTF-8".into(),
        })?;
        let stat = stat_total_bytes(self.version, &parse_memory_stat(text)?)?;
        let mut counter = read_u64(&self.counters[0])? as i64;
        for c in &self.counters[1..] {
            counter -= read_u64(c)? as i64;
        }
        let p = self.page as i64;
        Ok((stat as i64 / p, counter / p))
    }
}

/// Reads `stat` (open, read, close) in a loop while `active` is set, until
/// `stop`; pinned to `cpu` when given. Returns the reads made.
fn concurrent_reader(
    stat: &Path,
    cpu: Option<usize>,
    active: &AtomicBool,
    stop: &AtomicBool,
    reads: &AtomicU64,
) {
    if let Some(c) = cpu {
        // Best effort: unpinned, the sequence still happens, less often.
        let _ = crate::sys::query::pin_to_cpu(0, c);
    }
    let mut buf = vec![0u8; 64 * 1024];
    // ORDERING: Relaxed on both flags; they carry no data, only when to
    // read, and the reads' effect is the kernel's.
    while !stop.load(Ordering::Relaxed) {
        if !active.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        if let Ok(mut f) = std::fs::File::open(stat) {
            while matches!(f.read(&mut buf), Ok(k) if k > 0) {}
            // ORDERING: Relaxed; a statistic read once the thread is joined.
            reads.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The page counter files: v2 `memory.current`; v1 `memory.usage_in_bytes`
/// minus `memory.kmem.usage_in_bytes` (see [`stat_total_keys`]).
pub fn counter_files(version: CgroupVersion) -> &'static [&'static str] {
    match version {
        CgroupVersion::V1 => &["memory.usage_in_bytes", "memory.kmem.usage_in_bytes"],
        CgroupVersion::V2 => &["memory.current"],
    }
}

fn one_case(
    host: &Host,
    cfg: &StaleReadConfig,
    index: usize,
    cancel: &Cancel,
    obs: Observer<'_>,
) -> Result<StaleReadCase, Error> {
    let spike_kib = cfg.spikes_kib[index];
    let page = host.facts().page_size as u64;
    let threshold = host.facts().flush_threshold_pages;
    let spike_pages = (spike_kib * 1024).div_ceil(page);
    let mut tree = CgroupTree::create(host)?;
    obs(Event::TreeCreated { top: tree.top() });
    let parent = tree.top().to_path_buf();
    let leaf = tree.mkdir(&parent, "leaf")?;
    let mut w = Worker::start(
        &tree,
        &leaf,
        Job::Spike {
            pages: spike_pages as usize,
        },
    )?;
    obs(Event::WorkerStarted {
        pid: w.pid(),
        cgroup: &leaf,
    });
    let mut reader = ParentReader::new(host.version(), page, &parent);
    let timeout = Duration::from_secs(10) + Duration::from_micros(50 * spike_pages);
    let mut samples = Vec::with_capacity(cfg.repetitions);
    let case_start = Instant::now();
    let mut ack = [0u8; 1];
    // Two CPUs or more: the worker on CPU 0, the reader on CPU 1.
    let two = host.facts().online_cpus >= 2;
    if cfg.concurrent_reader && two {
        w.pin(0)?;
    }
    let (active, stop, reads) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicU64::new(0),
    );
    let stat_path = parent.join("memory.stat");
    std::thread::scope(|scope| -> Result<(), Error> {
        let _stopper = StopOnDrop(&stop);
        if cfg.concurrent_reader {
            let (a, st, r, path) = (&active, &stop, &reads, stat_path.as_path());
            simcore::thread::spawn_scoped(scope, "stale-read-reader", move || {
                concurrent_reader(path, two.then_some(1), a, st, r)
            })
            .map_err(|e| Error::Worker(format!("concurrent reader: {e}")))?;
        }
        for rep in 0..cfg.repetitions {
            crate::signals::check(cancel)?;
            let (s0, c0, settle_ms) = reader.settled(threshold, cfg.follow_poll_ms, cancel)?;
            // ORDERING: Relaxed (see `concurrent_reader`).
            let reads0 = reads.load(Ordering::Relaxed);
            active.store(true, Ordering::Relaxed);
            w.send(CHARGE)?;
            let charged = w.recv(&mut ack, timeout, cancel);
            active.store(false, Ordering::Relaxed);
            charged?;
            // Let a read under way finish before the after-charge read.
            if cfg.concurrent_reader {
                std::thread::sleep(Duration::from_micros(500));
            }
            let reader_reads = reads.load(Ordering::Relaxed) - reads0;
            let after = Instant::now();
            let t_ms = case_start.elapsed().as_secs_f64() * 1e3;
            let (s1, c1) = reader.read()?;
            let lag = spike_pages as i64 - (s1 - s0);
            let (mut stale_for_ms, mut follow_timed_out) = (None, false);
            if cfg.follow_ms > 0.0 && lag > threshold as i64 {
                let limit = Duration::from_secs_f64(cfg.follow_ms / 1e3);
                let poll = Duration::from_secs_f64(cfg.follow_poll_ms / 1e3);
                loop {
                    crate::signals::check(cancel)?;
                    std::thread::sleep(poll);
                    let (s, _) = reader.read()?;
                    let waited = after.elapsed();
                    if spike_pages as i64 - (s - s0) <= threshold as i64 || waited >= limit {
                        follow_timed_out =
                            waited >= limit && spike_pages as i64 - (s - s0) > threshold as i64;
                        stale_for_ms = Some(waited.as_secs_f64() * 1e3);
                        break;
                    }
                }
            }
            w.send(FREE)?;
            w.recv(&mut ack, timeout, cancel)?;
            let (s2, c2) = reader.read()?;
            if ack[0] != ACK {
                return Err(Error::Worker(format!("spike worker answered {:?}", ack[0])));
            }
            samples.push(StaleReadSample {
                t_ms,
                gap_before: c0 - s0,
                gap_after_charge: c1 - s1,
                gap_after_free: c2 - s2,
                counter_delta: c1 - c0,
                stat_delta: s1 - s0,
                stat_lag_after_charge: lag,
                stat_lag_after_free: s2 - s0,
                stale_for_ms,
                follow_timed_out,
                reader_reads,
                settle_ms,
            });
            obs(Event::Step {
                done: index * cfg.repetitions + rep + 1,
                total: cfg.spikes_kib.len() * cfg.repetitions,
            });
            if !cfg.pause.is_zero() {
                std::thread::sleep(cfg.pause);
            }
        }
        Ok(())
    })?;
    w.finish()?;
    tree.close()?;
    let pick = |f: fn(&StaleReadSample) -> i64| samples.iter().map(f).collect::<Vec<i64>>();
    let none = || Error::Config("stale-read: no samples".into());
    Ok(StaleReadCase {
        spike_kib,
        spike_pages,
        before: GapSummary::of(&pick(|s| s.gap_before), threshold).ok_or_else(none)?,
        after_charge: GapSummary::of(&pick(|s| s.gap_after_charge), threshold).ok_or_else(none)?,
        after_free: GapSummary::of(&pick(|s| s.gap_after_free), threshold).ok_or_else(none)?,
        stat_lag_after_charge: GapSummary::of(&pick(|s| s.stat_lag_after_charge), threshold)
            .ok_or_else(none)?,
        longest_stale_window: longest_stale_window(&samples, threshold),
        over_threshold: samples
            .iter()
            .filter(|s| s.stat_lag_after_charge > threshold as i64)
            .count(),
        stale_for_ms: Summary::of(
            &samples
                .iter()
                .filter_map(|s| s.stale_for_ms)
                .collect::<Vec<f64>>(),
        ),
        stat_lag_after_free: GapSummary::of(&pick(|s| s.stat_lag_after_free), threshold)
            .ok_or_else(none)?,
        // The counter moves by the spike plus the change of the per-CPU
        // stocks: the memcg charge stock (up to a batch per CPU, used or
        // drained when another group charges on that CPU) and the pages the
        // kmem object stock hands back to it. Both are bounded by a batch
        // per CPU, so only a shortfall beyond twice that means the spike was
        // not charged here.
        undercharged: samples
            .iter()
            .filter(|s| s.counter_delta + 2 * (threshold as i64) < spike_pages as i64)
            .count(),
        samples,
    })
}

/// Sets its flag when dropped: stops the concurrent reader on every exit
/// path of the scope that owns it.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        // ORDERING: Relaxed (see `concurrent_reader`).
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs the stale-read experiment. Everything it creates is removed before
/// it returns, on success, error, cancellation or panic.
pub fn run_stale_read(
    host: &Host,
    cfg: &StaleReadConfig,
    cancel: &Cancel,
) -> Result<StaleReadResult, Error> {
    run_stale_read_observed(host, cfg, cancel, &mut |_| {})
}

/// [`run_stale_read`], reporting [`Event`]s to `obs`.
pub fn run_stale_read_observed(
    host: &Host,
    cfg: &StaleReadConfig,
    cancel: &Cancel,
    obs: Observer<'_>,
) -> Result<StaleReadResult, Error> {
    cfg.validate()?;
    let start = Instant::now();
    let mut cases = Vec::new();
    for i in 0..cfg.spikes_kib.len() {
        cases.push(one_case(host, cfg, i, cancel, obs)?);
    }
    Ok(StaleReadResult {
        facts: host.facts().clone(),
        config: cfg.clone(),
        threshold_pages: host.facts().flush_threshold_pages,
        stat_keys: stat_total_keys(host.version())
            .iter()
            .map(|s| s.to_string())
            .collect(),
        counter_files: counter_files(host.version())
            .iter()
            .map(|s| s.to_string())
            .collect(),
        cases,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_summary() {
        let g = GapSummary::of(&[-200, -10, 0, 5, 130, 300], 128).unwrap();
        assert_eq!((g.min, g.max), (-200, 300));
        assert_eq!(g.over_threshold, 3);
        assert_eq!(g.over_twice_threshold, 1);
        assert_eq!(g.abs.max, 300.0);
        assert!(GapSummary::of(&[], 128).is_none());
    }

    #[test]
    fn stale_windows() {
        let mk = |t_ms: f64, lag: i64| StaleReadSample {
            t_ms,
            gap_before: 0,
            gap_after_charge: 0,
            gap_after_free: 0,
            counter_delta: 0,
            stat_delta: 0,
            stat_lag_after_charge: lag,
            stat_lag_after_free: 0,
            stale_for_ms: None,
            follow_timed_out: false,
            reader_reads: 0,
            settle_ms: 0.0,
        };
        let s = [
            mk(0.0, 200),
            mk(1.0, 0),
            mk(2.0, 300),
            mk(3.0, 4096),
            mk(5.5, 129),
            mk(6.0, 128),
        ];
        let w = longest_stale_window(&s, 128).unwrap();
        assert_eq!((w.first, w.repetitions, w.max_lag), (2, 3, 4096));
        assert_eq!(w.duration_ms, 3.5);
        assert!(longest_stale_window(&s[5..], 128).is_none());
        assert!(longest_stale_window(&[], 128).is_none());
    }

    #[test]
    fn counters_per_version() {
        assert_eq!(counter_files(CgroupVersion::V2), ["memory.current"]);
        assert_eq!(counter_files(CgroupVersion::V1)[0], "memory.usage_in_bytes");
        assert!(StaleReadConfig::default().validate().is_ok());
        assert!(StaleReadConfig {
            repetitions: 0,
            ..Default::default()
        }
        .validate()
        .is_err());
    }
}
