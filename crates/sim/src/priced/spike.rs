//! The stale-read sequence of kernel mode's `stale-read` experiment, in
//! virtual time: a spike charged in a leaf page by page on CPU 0, while a
//! reader on CPU 1 reads the parent's `memory.stat` in a loop (flushing
//! when the parent is over `T`) and the kernel's periodic forced root
//! flush runs every 2 s; then the parent is read, followed until it shows
//! the spike, and the spike is freed.
//!
//! Flushes are not instants here: each visit of (CPU, group) takes its
//! priced time ([`crate::cost::KernelCosts::flush_visit_ns`]) and the
//! charge goes on meanwhile,
//! so an update can land between the visit of the leaf and that of its
//! parent ([`super::count`]).
//! The counts are the policy's ([`ThresholdCounts`]); the parent's value
//! is what the last flush that reached it carried: the pages charged when
//! that flush visited the leaf on the charging CPU.
//!
//! Used by kernel mode's simulated twin (`kernelmode::twin`) to predict
//! the host's lag and how long it lasts.

use super::count::{Flush, ThresholdCounts, Walk};
use crate::cost::CostModel;
use crate::workload::{GroupIdx, TreeShape};
use lab::policy::FlushPolicy;
use simcore::time::{SimTime, MILLIS, SECONDS};

/// Stat updates the unmap of one anonymous page makes (`NR_ANON_MAPPED`
/// and the LRU list, counted with the memcg tracepoints on the host); the
/// rest of [`crate::cost::KernelCosts::updates_per_fault_anon`] is made by
/// the fault.
pub const UNMAP_UPDATES_PER_PAGE: f64 = 2.0;

/// The kernel's periodic flush period (`FLUSH_TIME`).
pub const PERIOD: SimTime = 2 * SECONDS;

/// The sequence to simulate.
#[derive(Debug, Clone)]
pub struct SpikeSetup {
    /// CPUs (the host's online CPUs).
    pub cpus: usize,
    /// The policy (its threshold accounting and resets).
    pub policy: FlushPolicy,
    /// Pages of the spike.
    pub pages: u64,
    /// Repetitions.
    pub repetitions: usize,
    /// A reader on CPU 1 reads the parent in a loop during the charge.
    pub concurrent_reader: bool,
    /// Follow a stale parent for at most this long (0: do not), ms.
    pub follow_ms: f64,
    /// The follow's period, ms.
    pub follow_poll_ms: f64,
    /// Pause after each repetition, ms.
    pub pause_ms: f64,
    /// When the first periodic flush runs, ns (the host's phase is
    /// unknown; the twin takes it from the seed).
    pub periodic_phase: SimTime,
    /// Costs.
    pub costs: CostModel,
}

/// One repetition as the parent's reads saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpikeSample {
    /// Spike pages the parent's read missed right after the charge.
    pub lag: u64,
    /// When followed: ms until a read of the parent lagged by no more than
    /// `T` (the follow's limit when it never did).
    pub stale_for_ms: Option<f64>,
    /// Reads of the parent by the concurrent reader during the charge.
    pub reader_reads: u64,
    /// Of them, reads that flushed.
    pub reader_flushes: u64,
}

/// What the sequence gave.
#[derive(Debug, Clone, PartialEq)]
pub struct SpikeOutcome {
    /// The policy's threshold `T` on this many CPUs, pages.
    pub threshold: u64,
    /// Every repetition.
    pub samples: Vec<SpikeSample>,
}

const PARENT: GroupIdx = 1;
const LEAF: GroupIdx = 2;
const CHARGER: usize = 0;

/// The simulation state.
struct Seq<'a> {
    s: &'a SpikeSetup,
    counts: ThresholdCounts,
    walk: Walk,
    now: SimTime,
    next_periodic: SimTime,
    /// Pages charged (net) so far.
    charged: u64,
    /// The charge the parent's aggregate holds.
    shown: u64,
    credit: f64,
    page_ns: SimTime,
    update_ns: f64,
    visit_ns: SimTime,
    read_ns: SimTime,
}

/// A flush in progress: when its next visit is due.
struct Running {
    flush: Flush,
    at: SimTime,
    /// The charge the leaf's visit on the charging CPU carried.
    carried: Option<u64>,
}

impl Seq<'_> {
    fn begin(&self, g: GroupIdx, at: SimTime) -> Running {
        Running {
            flush: self.counts.begin_flush(g),
            at,
            carried: None,
        }
    }

    /// Makes the visits of `f` due by `until`; true when it is done (its
    /// `at` is then when it ended).
    fn advance(&mut self, f: &mut Running, until: SimTime) -> bool {
        while f.at <= until {
            if self.step(f) {
                return true;
            }
        }
        false
    }

    fn finish(&mut self, mut f: Running) -> SimTime {
        self.advance(&mut f, SimTime::MAX);
        let end = f.at;
        self.counts.end_flush(f.flush);
        end
    }

    /// The periodic flushes due by `t`, run whole (nothing is charged
    /// meanwhile: between phases).
    fn periodic(&mut self, t: SimTime) {
        while self.next_periodic <= t {
            let f = self.begin(0, self.next_periodic);
            self.finish(f);
            self.next_periodic += PERIOD;
        }
    }

    /// One visit of `f` (at its time); true when the flush is done.
    fn step(&mut self, f: &mut Running) -> bool {
        let Some((cpu, g)) = self.counts.visit_next(&mut f.flush) else {
            return true;
        };
        if cpu == CHARGER && g == LEAF {
            f.carried = Some(self.charged);
        }
        if cpu == CHARGER && g == PARENT {
            if let Some(c) = f.carried {
                self.shown = c;
            }
        }
        f.at += self.visit_ns;
        false
    }

    /// One update of a page at the leaf on the charging CPU.
    fn update(&mut self, delta: i64) {
        self.counts
            .update(CHARGER, LEAF, delta.unsigned_abs(), &mut self.walk);
    }

    /// Charges (or frees, `sign < 0`) the spike page by page from `now`.
    /// The reader (if it runs) and the periodic flush act in time order
    /// between the charge's updates: a read, or one flush visit, at a time.
    fn pages(&mut self, sign: i64, updates_per_page: f64, reader: bool, out: &mut SpikeSample) {
        let mut reading: Option<Running> = None;
        let mut flushing: Option<Running> = None;
        let mut reader_at = self.now;
        for _ in 0..self.s.pages {
            self.now += self.page_ns;
            self.credit += updates_per_page;
            while self.credit >= 1.0 {
                self.credit -= 1.0;
                self.now += self.update_ns as SimTime;
                // Everything else due before this update, earliest first.
                loop {
                    let r_at = match (&reading, reader) {
                        (Some(f), _) => f.at,
                        (None, true) => reader_at,
                        (None, false) => SimTime::MAX,
                    };
                    let p_at = flushing.as_ref().map_or(self.next_periodic, |f| f.at);
                    if r_at.min(p_at) > self.now {
                        break;
                    }
                    if p_at <= r_at {
                        let mut f = match flushing.take() {
                            Some(f) => f,
                            None => {
                                self.next_periodic += PERIOD;
                                self.begin(0, p_at)
                            }
                        };
                        if self.step(&mut f) {
                            self.counts.end_flush(f.flush);
                        } else {
                            flushing = Some(f);
                        }
                    } else if let Some(mut f) = reading.take() {
                        if self.step(&mut f) {
                            reader_at = f.at + self.read_ns;
                            self.counts.end_flush(f.flush);
                        } else {
                            reading = Some(f);
                        }
                    } else {
                        out.reader_reads += 1;
                        if self.counts.needs_flush(PARENT) {
                            out.reader_flushes += 1;
                            reading = Some(self.begin(PARENT, reader_at));
                        } else {
                            reader_at += self.read_ns;
                        }
                    }
                }
                self.update(sign);
            }
            if sign > 0 {
                self.charged += 1;
            } else {
                self.charged -= 1;
            }
        }
        for f in [reading, flushing].into_iter().flatten() {
            self.finish(f);
        }
    }

    /// A read of the parent now: flushes over `T`; the pages it misses.
    fn read_parent(&mut self) -> u64 {
        self.periodic(self.now);
        if self.counts.needs_flush(PARENT) {
            let f = self.begin(PARENT, self.now);
            self.now = self.finish(f);
        }
        self.now += self.read_ns;
        self.charged.saturating_sub(self.shown)
    }
}

/// Runs the sequence of `setup`; `None` for a policy that counts nothing
/// (the pre-rstat baseline).
pub fn run(setup: &SpikeSetup) -> Option<SpikeOutcome> {
    let cpus = setup.cpus.max(1);
    let shape = TreeShape::chain(2);
    let counts = ThresholdCounts::of_choice(setup.policy, &shape, cpus)?;
    let k = setup.costs.kernel;
    // A flush callback, measured on the host: every item of the group
    // aggregated, the charging CPU's per-CPU lines read from the flusher's.
    let visit_ns = k.flush_visit_ns.ceil().max(1.0) as SimTime;
    let charge_updates = (k.updates_per_fault_anon - UNMAP_UPDATES_PER_PAGE).max(0.0);
    let mut q = Seq {
        s: setup,
        counts,
        walk: Walk::default(),
        now: 0,
        next_periodic: setup.periodic_phase % PERIOD,
        charged: 0,
        shown: 0,
        credit: 0.0,
        page_ns: k.fault_anon_ns.max(1.0) as SimTime,
        update_ns: k.stat_update_ns + 2.0 * k.rstat_level_ns,
        visit_ns,
        read_ns: super::read_ns(&k).max(1),
    };
    let threshold = q.counts.threshold();
    let reader = setup.concurrent_reader && cpus >= 2;
    let mut samples = Vec::with_capacity(setup.repetitions);
    for _ in 0..setup.repetitions {
        let mut out = SpikeSample::default();
        q.read_parent();
        q.pages(1, charge_updates, reader, &mut out);
        out.lag = q.read_parent();
        if setup.follow_ms > 0.0 && out.lag > threshold {
            let start = q.now;
            let limit = (setup.follow_ms * MILLIS as f64) as SimTime;
            let poll = ((setup.follow_poll_ms * MILLIS as f64) as SimTime).max(1);
            loop {
                q.now += poll;
                let lag = q.read_parent();
                if lag <= threshold || q.now - start >= limit {
                    out.stale_for_ms = Some((q.now - start) as f64 / 1e6);
                    break;
                }
            }
        }
        q.pages(
            -1,
            UNMAP_UPDATES_PER_PAGE,
            false,
            &mut SpikeSample::default(),
        );
        q.read_parent();
        q.now += (setup.pause_ms * MILLIS as f64) as SimTime;
        samples.push(out);
    }
    Some(SpikeOutcome { threshold, samples })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::Preset;

    fn setup(p: Preset, reader: bool) -> SpikeSetup {
        SpikeSetup {
            cpus: 2,
            policy: FlushPolicy::preset(p),
            pages: 4096,
            repetitions: 3,
            concurrent_reader: reader,
            follow_ms: 4000.0,
            follow_poll_ms: 5.0,
            pause_ms: 2.0,
            periodic_phase: 500 * MILLIS,
            costs: CostModel::defaults(),
        }
    }

    #[test]
    fn the_early_break_traps_the_parent_until_the_periodic_flush() {
        let o = run(&setup(Preset::Linux6_17, true)).unwrap();
        assert_eq!(o.threshold, 128);
        for s in &o.samples {
            assert!(s.lag > 2048, "{s:?}");
            let d = s.stale_for_ms.expect("followed");
            assert!(d > 0.0 && d <= 2010.0, "{s:?}");
            assert!(s.reader_flushes > 0);
        }
        // After the first, each charge starts right after the periodic
        // flush that ended the previous follow: stale for nearly 2 s.
        assert!(o.samples[1].stale_for_ms.unwrap() > 1900.0, "{o:?}");
    }

    #[test]
    fn without_the_early_break_or_the_reader_the_parent_is_fresh() {
        for (p, reader) in [(Preset::Linux6_8, true), (Preset::Linux6_17, false)] {
            let o = run(&setup(p, reader)).unwrap();
            for s in &o.samples {
                assert!(s.lag <= o.threshold, "{p:?} reader {reader}: {s:?}");
                assert_eq!(s.stale_for_ms, None);
            }
        }
    }

    #[test]
    fn deterministic() {
        let a = run(&setup(Preset::Linux6_17, true));
        assert_eq!(a, run(&setup(Preset::Linux6_17, true)));
        assert!(run(&SpikeSetup {
            policy: FlushPolicy::pre_rstat(),
            ..setup(Preset::Linux6_17, true)
        })
        .is_none());
    }
}
