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
//! CPUs (when the host has two) and run at real-time priority
//! ([`RACE_PRIORITY`]), so that they run side by side; without the
//! reader, only a periodic flush that lands during a charge sets the trap
//! (a run now and then).
//!
//! # The trap's odds
//!
//! The trap is a race: a flush traps the parent only when one of the
//! charge's stat updates lands in its *window*, between the zeroing of the
//! leaf's pending count (the end of its visit on the charging CPU) and the
//! parent's (the end of the parent's visit). The experiment measures what
//! the odds are made of, for the twin (`sim::priced::spike::trap_odds`)
//! to predict them:
//!
//! * the reader's flush passes over the charging CPU, traced
//!   ([`FlushPasses`]): how many it made during each charge, the first
//!   one's duration and the later ones' ([`StaleReadSample::first_pass_ns`],
//!   [`StaleReadSample::later_pass_ns`]);
//! * the parent's share of such a pass ([`FlushShare`]), measured before
//!   the cases on a chain: a flush of a leaf and its parent against one of
//!   a leaf and five levels, the difference being four clean visits;
//! * the charge's time ([`StaleReadSample::charge_ms`]), which with the
//!   updates a page makes gives their rate.
//!
//! # Independent repetitions
//!
//! A trapped parent stays trapped until the periodic flush, and the next
//! repetition's charge would start on a trapped parent. With the
//! concurrent reader each repetition therefore ends by reading the *leaf*
//! (over `T`, it flushes the subtree below it and clears the trap) before
//! the free, so that every repetition starts clean and costs milliseconds;
//! [`StaleReadConfig::follow_repetitions`] bounds how many trapped
//! repetitions are first followed until the periodic flush.

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
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

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
    /// Follow at most this many trapped repetitions per spike size (none:
    /// every one). A trapped repetition that is not followed is cleared
    /// at once by a read of the leaf (see "Independent repetitions"), so
    /// that many repetitions cost milliseconds rather than a periodic
    /// flush's 2 s each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_repetitions: Option<usize>,
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
            follow_repetitions: None,
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
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
    /// Wall time of the charge: from the command to the worker's answer,
    /// ms (the spike's faults, and the worker's wake-up).
    #[serde(default)]
    pub charge_ms: f64,
    /// Flushes of the parent the concurrent reader made while the spike
    /// was charged, counted by their CPU-0 pass (`None`: the kernel's
    /// flush passes could not be traced, see [`FlushPasses`]).
    #[serde(default)]
    pub reader_flushes: Option<u32>,
    /// The first of them: its CPU-0 pass (the leaf's and the parent's
    /// visits on the charging CPU), ns.
    #[serde(default)]
    pub first_pass_ns: Option<f64>,
    /// The others' CPU-0 passes, ns: their median.
    #[serde(default)]
    pub later_pass_ns: Option<f64>,
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
    /// [`StaleReadSample::first_pass_ns`] over the repetitions.
    #[serde(default)]
    pub first_pass_ns: Option<Summary>,
    /// [`StaleReadSample::later_pass_ns`] over the repetitions that had
    /// more than one flush.
    #[serde(default)]
    pub later_pass_ns: Option<Summary>,
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
    /// The parent's share of a flush pass, measured before the cases
    /// (with the concurrent reader, where the kernel's flush passes can
    /// be traced).
    #[serde(default)]
    pub flush_share: Option<FlushShare>,
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

/// Whether a parent whose page counter is `gap` pages ahead of its stat
/// total is settled: at most [`BASELINE_SLACK_THRESHOLDS`] thresholds
/// ahead (one threshold of unflushed updates, at most one of per-CPU
/// charge stock), and not behind by more than half a threshold. The stat
/// can only be *ahead* of the counter by pages it still shows that were
/// freed: a parent trapped through the free (a trap set late in the
/// charge, whose leaf crossed `T` during the free) shows part of the
/// freed spike until the periodic flush.
pub fn is_settled(gap: i64, threshold: u64) -> bool {
    let t = threshold as i64;
    (-t / 2..=BASELINE_SLACK_THRESHOLDS as i64 * t).contains(&gap)
}

/// Two periods of the kernel's periodic flush (`FLUSH_TIME` = 2 s) and
/// 0.5 s for the flush itself and a poll: the flush is a *deferrable*
/// delayed work re-queued 2 s after each run (`stats_flush_dwork`), whose
/// timer does not wake an idle CPU, so one period can stretch past 2 s
/// (2.86 s on a loaded 2-vCPU host). Whatever the trap left unflushed, a
/// periodic flush has landed it by then; it is also the longest a
/// repetition waits for its baseline to settle.
pub const TWO_PERIODIC_FLUSHES: Duration = Duration::from_millis(4500);

impl ParentReader {
    /// Reads `(stat, counter)` once the stat is settled (see
    /// [`is_settled`]), polling every `poll_ms` for at most
    /// [`TWO_PERIODIC_FLUSHES`], with the milliseconds it waited. A spike
    /// measured from a stale baseline (an earlier free or the worker's
    /// start-up the stat has not shown yet, trapped on 6.16+ until the
    /// periodic flush) would count that baseline's error as the spike's
    /// lag.
    fn settled(
        &mut self,
        threshold: u64,
        poll_ms: f64,
        cancel: &Cancel,
    ) -> Result<(i64, i64, f64), Error> {
        let start = Instant::now();
        loop {
            let (s, c) = self.read()?;
            let waited = start.elapsed();
            if is_settled(c - s, threshold) || waited >= TWO_PERIODIC_FLUSHES {
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
/// `stop`; pinned to `cpu` when given. Publishes its thread id in `tid`
/// first (the flush passes it makes are traced by it).
fn concurrent_reader(stat: &Path, cpu: Option<usize>, flags: &ReaderFlags) {
    if let Some(c) = cpu {
        // Best effort: unpinned, the sequence still happens, less often.
        let _ = crate::sys::query::pin_to_cpu(0, c);
    }
    boost(0);
    // ORDERING: Relaxed on every flag; they carry no data, only when to
    // read, and the reads' effect is the kernel's.
    flags
        .tid
        .store(current_tid().unwrap_or(-1), Ordering::Relaxed);
    let mut buf = vec![0u8; 64 * 1024];
    while !flags.stop.load(Ordering::Relaxed) {
        if !flags.active.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        if let Ok(mut f) = std::fs::File::open(stat) {
            while matches!(f.read(&mut buf), Ok(k) if k > 0) {}
            // ORDERING: Relaxed; a statistic read once the thread is joined.
            flags.reads.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The concurrent reader's flags and counters.
#[derive(Debug, Default)]
struct ReaderFlags {
    active: AtomicBool,
    stop: AtomicBool,
    reads: AtomicU64,
    /// The reader's thread id once it runs (0 before, −1 unknown).
    tid: AtomicI32,
}

impl ReaderFlags {
    /// The reader's thread id, waiting up to [`READER_START_LIMIT`] for
    /// it to start.
    fn wait_tid(&self) -> Option<i32> {
        let start = Instant::now();
        loop {
            // ORDERING: Relaxed (see `concurrent_reader`).
            match self.tid.load(Ordering::Relaxed) {
                0 if start.elapsed() < READER_START_LIMIT => {
                    std::thread::sleep(Duration::from_micros(100))
                }
                t if t > 0 => return Some(t),
                _ => return None,
            }
        }
    }
}

/// The real-time priority (`SCHED_FIFO`, the lowest) of the spike's
/// worker and of the concurrent reader, best effort (nice −20 where it is
/// refused). The trap is a race between the two, pinned to two CPUs so
/// that they run side by side; on a loaded host they must also keep those
/// CPUs through a charge: a worker or a reader that waits for its CPU
/// (the other tasks' time slices, 4 ms each) makes flushes without a
/// charge beside them, and the repetition measures the scheduler rather
/// than the flush. Nice alone does not do it where the host groups tasks
/// by session (autogroups): a session's tasks share one weight. The
/// kernel's real-time throttling (95% of each second by default) bounds
/// what the two can take; they spin only while a spike is charged.
pub const RACE_PRIORITY: i32 = 1;

/// Raises `pid` (0: the calling thread) to [`RACE_PRIORITY`], or to nice
/// −20 where that is refused; best effort.
fn boost(pid: i32) {
    if crate::sys::query::set_fifo(pid, RACE_PRIORITY).is_err() {
        let _ = crate::sys::query::set_nice(pid, -20);
    }
}

/// How long a charge waits for the concurrent reader to be reading.
pub const READER_START_LIMIT: Duration = Duration::from_millis(200);

/// Waits until the concurrent reader has finished a read since `reads0`
/// (at most [`READER_START_LIMIT`]): the charge then starts under a reader
/// that is already looping, as a monitoring agent's would. Without the
/// wait the reader, asleep between spikes, could wake after a short
/// spike's charge (a loaded host's wake-up latency), and the repetition
/// would measure the scheduler rather than the flush.
fn wait_for_reader(reads: &AtomicU64, reads0: u64, cancel: &Cancel) -> Result<(), Error> {
    let start = Instant::now();
    // ORDERING: Relaxed (see `concurrent_reader`).
    while reads.load(Ordering::Relaxed) == reads0 && start.elapsed() < READER_START_LIMIT {
        crate::signals::check(cancel)?;
        std::thread::sleep(Duration::from_micros(50));
    }
    Ok(())
}

/// The kernel's flush passes over CPU 0 made by one thread, traced with
/// the `cgroup:cgroup_rstat_locked` and `cgroup:cgroup_rstat_unlock`
/// tracepoints (Linux 6.10+) in a tracefs instance of this process's own:
/// nothing of the host's tracing state changes, and the instance is
/// removed when this is dropped. A flush of a memcg subtree takes the
/// rstat lock once per CPU and visits, under it, every group of the
/// subtree updated on that CPU, children first; the events' `cpu` field
/// is the CPU whose pass it is, so filtering on `cpu == 0` keeps the
/// passes over the charging CPU, whose visits of the leaf and the parent
/// hold the trap's window. Timestamps are the monotonic clock's, ns (the
/// instance's `raw` output); markers written with [`FlushPasses::mark`]
/// share the clock.
#[derive(Debug)]
pub struct FlushPasses {
    dir: PathBuf,
    events: Vec<PathBuf>,
    locked: u32,
    unlock: u32,
    marker: Option<std::fs::File>,
}

/// A read of a [`FlushPasses`] instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassTrace {
    /// CPU-0 passes in order: (lock taken, lock released), ns.
    pub passes: Vec<(u64, u64)>,
    /// Markers in order: (when, text).
    pub marks: Vec<(u64, String)>,
}

impl PassTrace {
    /// Durations (ns) of the passes that took the lock at or after `from`
    /// and before `to`.
    pub fn between(&self, from: u64, to: u64) -> Vec<f64> {
        self.passes
            .iter()
            .filter(|&&(a, _)| a >= from && a < to)
            .map(|&(a, b)| b.saturating_sub(a) as f64)
            .collect()
    }

    /// The time of the first marker reading `text` at or after `from`.
    pub fn mark_at(&self, text: &str, from: u64) -> Option<u64> {
        self.marks
            .iter()
            .find(|(t, m)| *t >= from && m == text)
            .map(|&(t, _)| t)
    }
}

const TRACE_EVENTS: [&str; 2] = ["cgroup_rstat_locked", "cgroup_rstat_unlock"];
const INSTANCE_PREFIX: &str = "mmlab-stale-";

/// The tracefs mount that has the cgroup rstat tracepoints.
fn tracefs() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events/cgroup/cgroup_rstat_locked/id").is_file())
}

/// Parses the `raw` output of an instance: `PID CPU TS type: ID` for an
/// event, `PID CPU TS # IP TEXT` for a marker; pairs each lock with the
/// unlock that follows it.
pub fn parse_pass_trace(text: &str, locked: u32, unlock: u32) -> PassTrace {
    let mut out = PassTrace::default();
    let mut open: Option<u64> = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split_whitespace();
        let (Some(_pid), Some(_cpu), Some(ts)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Ok(ts) = ts.parse::<u64>() else { continue };
        match f.next() {
            Some("type:") => match f.next().and_then(|id| id.parse::<u32>().ok()) {
                Some(id) if id == locked => open = Some(ts),
                Some(id) if id == unlock => {
                    if let Some(a) = open.take() {
                        out.passes.push((a, ts));
                    }
                }
                _ => {}
            },
            Some("#") => {
                let _ip = f.next();
                out.marks.push((ts, f.collect::<Vec<_>>().join(" ")));
            }
            _ => {}
        }
    }
    out
}

/// The calling thread's id, from `/proc/thread-self` (`PID/task/TID`).
fn current_tid() -> Option<i32> {
    std::fs::read_link("/proc/thread-self")
        .ok()?
        .file_name()?
        .to_str()?
        .parse()
        .ok()
}

impl FlushPasses {
    /// Starts tracing the CPU-0 passes of thread `tid`; `None` where
    /// tracefs, the tracepoints or an instance are not available (an
    /// older kernel, no tracefs, not permitted).
    pub fn start(tid: i32) -> Option<FlushPasses> {
        let fs = tracefs()?;
        let id = |e: &str| -> Option<u32> {
            std::fs::read_to_string(fs.join("events/cgroup").join(e).join("id"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let (locked, unlock) = (id(TRACE_EVENTS[0])?, id(TRACE_EVENTS[1])?);
        let instances = fs.join("instances");
        sweep_instances(&instances);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // ORDERING: Relaxed; a counter for unique names.
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = instances.join(format!("{INSTANCE_PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let mut me = FlushPasses {
            events: TRACE_EVENTS
                .iter()
                .map(|e| dir.join("events/cgroup").join(e))
                .collect(),
            dir,
            locked,
            unlock,
            marker: None,
        };
        let set = |p: PathBuf, v: &str| crate::cgroup::write_file(&p, v).ok();
        set(me.dir.join("trace_clock"), "mono")?;
        set(me.dir.join("options/raw"), "1")?;
        set(me.dir.join("buffer_size_kb"), "256")?;
        for e in &me.events {
            set(
                e.join("filter"),
                &format!("common_pid == {tid} && cpu == 0"),
            )?;
            set(e.join("enable"), "1")?;
        }
        me.marker = std::fs::OpenOptions::new()
            .write(true)
            .open(me.dir.join("trace_marker"))
            .ok();
        Some(me)
    }

    /// Writes a marker (best effort: a lost marker only loses the passes
    /// it would have delimited).
    pub fn mark(&mut self, text: &str) {
        use std::io::Write;
        if let Some(m) = &mut self.marker {
            let _ = m.write_all(text.as_bytes());
        }
    }

    /// Everything traced so far.
    pub fn read(&self) -> Option<PassTrace> {
        let text = std::fs::read_to_string(self.dir.join("trace")).ok()?;
        Some(parse_pass_trace(&text, self.locked, self.unlock))
    }
}

impl Drop for FlushPasses {
    fn drop(&mut self) {
        self.marker = None;
        for e in &self.events {
            let _ = crate::cgroup::write_file(&e.join("enable"), "0");
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Removes the instances of dead processes (a run killed by `SIGKILL`).
fn sweep_instances(instances: &Path) {
    let Ok(rd) = std::fs::read_dir(instances) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(INSTANCE_PREFIX))
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// The parent's share of a flush pass over the charging CPU, measured on a
/// chain of groups (see "The trap's odds" in the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlushShare {
    /// Clean levels the long flush visits beyond the short one.
    pub extra_levels: usize,
    /// Flushes of each kind measured.
    pub samples: usize,
    /// Median CPU-0 pass of the short flush (the leaf and its parent), ns.
    pub short_pass_ns: f64,
    /// Median CPU-0 pass of the long flush (the leaf and every level up
    /// to the chain's top), ns.
    pub long_pass_ns: f64,
    /// One clean visit over the short pass:
    /// `(long − short) / (extra_levels × short)`.
    pub share: f64,
    /// The share's lower bound: from the medians' intervals at
    /// [`INTERVAL_CONFIDENCE`] each ([`simcore::stats::median_interval`]),
    /// the long pass's lowest and the short pass's highest (`share` where
    /// the samples are too few for an interval).
    #[serde(default)]
    pub share_low: f64,
    /// The share's upper bound (the long pass's highest, the short pass's
    /// lowest).
    #[serde(default)]
    pub share_high: f64,
}

/// The confidence of each interval a measured input of the trap's odds
/// carries (the flush share's two medians here, the reader's pass medians
/// in kernel mode): 99.9%, the complement of the trap test's level
/// (`kernelmode::claims::TRAP_TEST_LEVEL`), so that a host that follows
/// the model fails the test by chance through an input about as rarely as
/// through its own trials.
pub const INTERVAL_CONFIDENCE: f64 = 0.999;

impl FlushShare {
    /// The share from the two kinds of passes; `None` without both.
    pub fn of(short: &[f64], long: &[f64], extra_levels: usize) -> Option<FlushShare> {
        if short.is_empty() || long.is_empty() || extra_levels == 0 {
            return None;
        }
        let (s, l) = (simcore::stats::median(short), simcore::stats::median(long));
        let share = |l: f64, s: f64| (l - s) / (extra_levels as f64 * s);
        let ci = |x: &[f64], m: f64| {
            simcore::stats::median_interval(x, INTERVAL_CONFIDENCE).unwrap_or((m, m))
        };
        let ((s_lo, s_hi), (l_lo, l_hi)) = (ci(short, s), ci(long, l));
        Some(FlushShare {
            extra_levels,
            samples: short.len().min(long.len()),
            short_pass_ns: s,
            long_pass_ns: l,
            share: share(l, s),
            share_low: share(l_lo, s_hi),
            share_high: share(l_hi, s_lo),
        })
    }
}

/// Clean levels the calibration's long flush visits beyond its short one.
pub const SHARE_EXTRA_LEVELS: usize = 4;
/// Flushes of each kind the calibration times.
pub const SHARE_SAMPLES: usize = 400;

/// Times flushes of two subtrees of one tree, each charged and freed `T`
/// pages at a time by a worker pinned to CPU 0 in its leaf: a *short*
/// flush of `s` (its leaf and `s`: the stale-read experiment's pair) and
/// a *long* one of `l1` (its leaf and `l5` … `l1`: four levels more). The
/// levels above a leaf were not written on CPU 0 (a stat update writes the
/// updated group's per-CPU counters only), as the experiment's parent was
/// not: the long pass minus the short one is four such clean visits. Each
/// flush is a read by a thread pinned to CPU 1, once the charge or the
/// free is done (no update races it), and every group of both subtrees is
/// flushed as often (twice a sample), so that their lines are as warm.
/// `None` with one CPU, or where the passes cannot be traced.
fn measure_flush_share(
    host: &Host,
    cancel: &Cancel,
    obs: Observer<'_>,
) -> Result<Option<FlushShare>, Error> {
    if host.facts().online_cpus < 2 || tracefs().is_none() {
        return Ok(None);
    }
    let pages = (host.facts().flush_threshold_pages as usize).max(64);
    let mut tree = CgroupTree::create(host)?;
    obs(Event::TreeCreated { top: tree.top() });
    let top = tree.top().to_path_buf();
    let short = tree.mkdir(&top, "s")?;
    let short_leaf = tree.mkdir(&short, "leaf")?;
    let mut long = vec![tree.mkdir(&top, "l1")?];
    for i in 2..=SHARE_EXTRA_LEVELS + 1 {
        let next = tree.mkdir(&long[long.len() - 1], &format!("l{i}"))?;
        long.push(next);
    }
    let long_leaf = tree.mkdir(&long[long.len() - 1], "leaf")?;
    let mut workers = Vec::new();
    for leaf in [&short_leaf, &long_leaf] {
        let w = Worker::start(&tree, leaf, Job::Spike { pages })?;
        obs(Event::WorkerStarted {
            pid: w.pid(),
            cgroup: leaf,
        });
        w.pin(0)?;
        boost(w.pid());
        workers.push(w);
    }
    let targets = [short.join("memory.stat"), long[0].join("memory.stat")];
    let passes = std::thread::scope(|s| {
        let (workers, targets) = (&mut workers, &targets);
        simcore::thread::spawn_scoped(s, "stale-read-share", move || {
            let _ = crate::sys::query::pin_to_cpu(0, 1);
            boost(0);
            let Some(mut tr) = current_tid().and_then(FlushPasses::start) else {
                return Ok(None);
            };
            let mut ack = [0u8; 1];
            for _ in 0..SHARE_SAMPLES / 2 {
                for (i, (w, stat)) in workers.iter_mut().zip(targets).enumerate() {
                    for cmd in [CHARGE, FREE] {
                        crate::signals::check(cancel)?;
                        w.send(cmd)?;
                        w.recv(&mut ack, Duration::from_secs(10), cancel)?;
                        tr.mark(["short", "long"][i]);
                        read_whole(stat)?;
                        tr.mark("end");
                    }
                }
            }
            Ok::<_, Error>(tr.read())
        })
        .map_err(|e| Error::Worker(format!("flush-share thread: {e}")))?
        .join()
        .map_err(|_| Error::Worker("flush-share thread panicked".into()))?
    })?;
    for w in workers {
        w.finish()?;
    }
    tree.close()?;
    let Some(t) = passes else { return Ok(None) };
    let of = |name: &str| -> Vec<f64> {
        t.marks
            .iter()
            .filter(|(_, m)| m == name)
            .filter_map(|&(at, _)| {
                let end = t.mark_at("end", at)?;
                match t.between(at, end).as_slice() {
                    [one] => Some(*one),
                    _ => None,
                }
            })
            .collect()
    };
    Ok(FlushShare::of(
        &of("short"),
        &of("long"),
        SHARE_EXTRA_LEVELS,
    ))
}

/// Reads a file to its end (open, read, close) and drops the bytes.
fn read_whole(path: &Path) -> Result<(), Error> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("read", path, e)),
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
    let leaf_stat = leaf.join("memory.stat");
    let timeout = Duration::from_secs(10) + Duration::from_micros(50 * spike_pages);
    let mut samples = Vec::with_capacity(cfg.repetitions);
    let case_start = Instant::now();
    let mut ack = [0u8; 1];
    // Two CPUs or more: the worker on CPU 0, the reader on CPU 1.
    let two = host.facts().online_cpus >= 2;
    if cfg.concurrent_reader && two {
        w.pin(0)?;
        boost(w.pid());
    }
    let flags = ReaderFlags::default();
    let stat_path = parent.join("memory.stat");
    let mut followed = 0;
    let trace = std::thread::scope(|scope| -> Result<Option<PassTrace>, Error> {
        let _stopper = StopOnDrop(&flags.stop);
        let mut passes = None;
        if cfg.concurrent_reader {
            let (f, path) = (&flags, stat_path.as_path());
            simcore::thread::spawn_scoped(scope, "stale-read-reader", move || {
                concurrent_reader(path, two.then_some(1), f)
            })
            .map_err(|e| Error::Worker(format!("concurrent reader: {e}")))?;
            if two {
                passes = flags.wait_tid().and_then(FlushPasses::start);
            }
        }
        for rep in 0..cfg.repetitions {
            crate::signals::check(cancel)?;
            let (s0, c0, settle_ms) = reader.settled(threshold, cfg.follow_poll_ms, cancel)?;
            // ORDERING: Relaxed (see `concurrent_reader`).
            let reads0 = flags.reads.load(Ordering::Relaxed);
            flags.active.store(true, Ordering::Relaxed);
            if cfg.concurrent_reader {
                wait_for_reader(&flags.reads, reads0, cancel)?;
            }
            let reads0 = flags.reads.load(Ordering::Relaxed);
            if let Some(p) = &mut passes {
                p.mark(&format!("c{rep}"));
            }
            let charge_start = Instant::now();
            w.send(CHARGE)?;
            let charged = w.recv(&mut ack, timeout, cancel);
            let charge_ms = charge_start.elapsed().as_secs_f64() * 1e3;
            if let Some(p) = &mut passes {
                p.mark(&format!("e{rep}"));
            }
            flags.active.store(false, Ordering::Relaxed);
            charged?;
            // Let a read under way finish before the after-charge read.
            if cfg.concurrent_reader {
                std::thread::sleep(Duration::from_micros(500));
            }
            let reader_reads = flags.reads.load(Ordering::Relaxed) - reads0;
            let after = Instant::now();
            let t_ms = case_start.elapsed().as_secs_f64() * 1e3;
            let (s1, c1) = reader.read()?;
            let lag = spike_pages as i64 - (s1 - s0);
            let (mut stale_for_ms, mut follow_timed_out) = (None, false);
            let follow = cfg.follow_repetitions.is_none_or(|n| followed < n);
            if cfg.follow_ms > 0.0 && lag > threshold as i64 && follow {
                followed += 1;
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
            if cfg.concurrent_reader {
                // Independent repetitions: a leaf over T is flushed here, so
                // that a trap (followed or not) ends before the free.
                read_whole(&leaf_stat)?;
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
                charge_ms,
                reader_flushes: None,
                first_pass_ns: None,
                later_pass_ns: None,
            });
            obs(Event::Step {
                done: index * cfg.repetitions + rep + 1,
                total: cfg.spikes_kib.len() * cfg.repetitions,
            });
            if !cfg.pause.is_zero() {
                std::thread::sleep(cfg.pause);
            }
        }
        Ok(passes.and_then(|p| p.read()))
    })?;
    if let Some(t) = &trace {
        assign_passes(&mut samples, t);
    }
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
        first_pass_ns: Summary::of(
            &samples
                .iter()
                .filter_map(|s| s.first_pass_ns)
                .collect::<Vec<f64>>(),
        ),
        later_pass_ns: Summary::of(
            &samples
                .iter()
                .filter_map(|s| s.later_pass_ns)
                .collect::<Vec<f64>>(),
        ),
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

/// Gives each sample the reader's CPU-0 passes made while its spike was
/// charged (between the markers `c{rep}` and `e{rep}`).
fn assign_passes(samples: &mut [StaleReadSample], t: &PassTrace) {
    for (rep, s) in samples.iter_mut().enumerate() {
        let Some(from) = t.mark_at(&format!("c{rep}"), 0) else {
            continue;
        };
        let Some(to) = t.mark_at(&format!("e{rep}"), from) else {
            continue;
        };
        let p = t.between(from, to);
        s.reader_flushes = Some(p.len() as u32);
        s.first_pass_ns = p.first().copied();
        s.later_pass_ns = (p.len() > 1).then(|| simcore::stats::median(&p[1..]));
    }
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
    let flush_share = if cfg.concurrent_reader {
        measure_flush_share(host, cancel, obs)?
    } else {
        None
    };
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
        flush_share,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_traces_pair_locks_with_unlocks_and_keep_markers() {
        // An instance's `raw` output: events are `PID CPU TS type: ID`,
        // markers `PID CPU TS # IP TEXT`.
        let text = "# tracer: nop\n\
            4242 1 1000 # 0 c0\n\
            4242 1 1100 type: 501\n\
            4242 1 1900 type: 502\n\
            4242 1 5000 type: 501\n\
            4242 1 5600 type: 502\n\
            4242 1 5700 type: 777\n\
            4242 1 5800 type: 502\n\
            garbage line\n\
            4242 1 6000 # 0 e0\n\
            4242 1 7000 type: 501\n";
        let t = parse_pass_trace(text, 501, 502);
        // An unlock without a lock, an unknown id and a lock never
        // released are dropped.
        assert_eq!(t.passes, vec![(1100, 1900), (5000, 5600)]);
        assert_eq!(
            t.marks,
            vec![(1000, "c0".to_string()), (6000, "e0".to_string())]
        );
        let c = t.mark_at("c0", 0).unwrap();
        let e = t.mark_at("e0", c).unwrap();
        assert_eq!(t.between(c, e), vec![800.0, 600.0]);
        assert_eq!(t.mark_at("c0", 1001), None);
        let mut samples = vec![StaleReadSample::default(); 2];
        assign_passes(&mut samples, &t);
        assert_eq!(samples[0].reader_flushes, Some(2));
        assert_eq!(samples[0].first_pass_ns, Some(800.0));
        assert_eq!(samples[0].later_pass_ns, Some(600.0));
        // No markers for the second repetition: nothing assigned.
        assert_eq!(samples[1].reader_flushes, None);
    }

    #[test]
    fn flush_share_and_its_bounds() {
        // Short passes around 1,000 ns, long around 1,800: four clean
        // visits of 200 ns, a share of 0.2.
        let short: Vec<f64> = (0..101).map(|i| 950.0 + f64::from(i)).collect();
        let long: Vec<f64> = (0..101).map(|i| 1750.0 + f64::from(i)).collect();
        let f = FlushShare::of(&short, &long, 4).unwrap();
        assert_eq!((f.short_pass_ns, f.long_pass_ns), (1000.0, 1800.0));
        assert!((f.share - 0.2).abs() < 1e-12, "{f:?}");
        assert!(f.share_low < f.share && f.share < f.share_high, "{f:?}");
        // The bounds pair the long pass's low end with the short's high.
        let (s_lo, s_hi) = simcore::stats::median_interval(&short, INTERVAL_CONFIDENCE).unwrap();
        let (l_lo, l_hi) = simcore::stats::median_interval(&long, INTERVAL_CONFIDENCE).unwrap();
        assert!((f.share_low - (l_lo - s_hi) / (4.0 * s_hi)).abs() < 1e-12);
        assert!((f.share_high - (l_hi - s_lo) / (4.0 * s_lo)).abs() < 1e-12);
        // Too few samples for an interval: the bounds are the share.
        let f = FlushShare::of(&[1000.0; 3], &[1800.0; 3], 4).unwrap();
        assert_eq!((f.share_low, f.share_high), (f.share, f.share));
        assert!(FlushShare::of(&[], &long, 4).is_none());
        assert!(FlushShare::of(&short, &long, 0).is_none());
    }

    #[test]
    fn settled_baselines() {
        // Up to two thresholds ahead (unflushed updates and charge stock),
        // at most half a threshold behind (a trapped free).
        for (gap, ok) in [
            (0, true),
            (256, true),
            (257, false),
            (-64, true),
            (-65, false),
        ] {
            assert_eq!(is_settled(gap, 128), ok, "{gap}");
        }
    }

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
            stat_lag_after_charge: lag,
            ..Default::default()
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
