//! The stale-read sequence of kernel mode's `stale-read` experiment, in
//! virtual time: a spike charged in a leaf page by page on CPU 0, while a
//! reader on CPU 1 reads the parent's `memory.stat` in a loop (flushing
//! when the parent is over `T`) and the kernel's periodic forced root
//! flush runs every 2 s; then the parent is read, followed until it shows
//! the spike, the leaf is read (which ends a trap the follow did not),
//! and the spike is freed.
//!
//! # The trap, and its odds
//!
//! A flush of the parent's subtree visits, on each CPU, the leaf, then the
//! parent, and each visit ends by zeroing that group's pending count. A
//! stat update made on the charging CPU between the two zeroings (in the
//! *window*: the parent's visit) is counted by the leaf and not by the
//! parent: under the early break of 6.16+ ("if this level needs a flush,
//! its ancestors do"), the update finds the parent still over `T` and
//! stops there. The leaf is then ahead of its parent, crosses `T` first,
//! and from then on every update stops at the leaf: the parent's count
//! stays at or below `T` and no read of the parent flushes it until the
//! periodic flush. The parent misses every page charged after the leaf's
//! visit of that flush (the counts are [`super::count`]'s).
//!
//! The spike's stat updates are modelled as arriving at independent
//! random instants (a Poisson process) at the charge's rate: `u` instants
//! per charged page, where `u` is the fault's updates less the one that
//! is batched (the LRU size update, made when the per-CPU LRU batch of
//! [`LRU_BATCH`] pages drains: one instant for that many pages). A flush
//! whose window lasts `W` while pages take `τ` each then traps the parent
//! with probability
//!
//! ```text
//! q(W) = 1 − exp(−u · W / τ)
//! ```
//!
//! From a clean start (leaf and parent counted alike) the reader flushes
//! the parent each time its count passes `T`, that is every
//! `(⌊T / batch⌋ + 1) · batch / u_page` pages or so (three batches of 64
//! at 4 updates a page: 48 pages), a read later; the flushes that come
//! while more than `T` pages of the spike are still to be charged are the
//! repetition's chances, and the parent misses more than `T` with
//! probability
//!
//! ```text
//! P = 1 − Π (1 − q_i),   over the flushes i with S − k_i > T,
//! ```
//!
//! `k_i` the pages charged at flush `i`'s visit of the leaf. A charge's
//! first flush finds the parent's counters out of the reader's cache (its
//! window is longer: [`Window::first_ns`]), the later ones in it
//! ([`Window::later_ns`]). [`trap_odds`] computes `P` on the sequence
//! itself (the flushes of a charge with no hit, at eight phases of the
//! reader's loop); [`run`] draws each flush's hit with the same `q` to
//! give the lags and how long they last.
//!
//! Used by kernel mode's simulated twin (`kernelmode::twin`), with the
//! windows and the charge's rate the host measured (or, where it could
//! not, a priced flush visit and the priced fault).

use super::count::{ThresholdCounts, Walk};
use crate::cost::CostModel;
use crate::workload::{GroupIdx, TreeShape};
use lab::policy::FlushPolicy;
use simcore::time::{SimTime, MILLIS, SECONDS};
use simcore::Rng;

/// Stat updates the unmap of one anonymous page makes (`NR_ANON_MAPPED`
/// and the LRU list, counted with the memcg tracepoints on the host); the
/// rest of [`crate::cost::KernelCosts::updates_per_fault_anon`] is made by
/// the fault.
pub const UNMAP_UPDATES_PER_PAGE: f64 = 2.0;

/// Of a charged page's stat updates, those made in a batch: the LRU size
/// update, made when the per-CPU LRU batch drains.
pub const BATCHED_UPDATES_PER_PAGE: f64 = 1.0;

/// Pages the per-CPU LRU batch holds before it drains (`FOLIO_BATCH_SIZE`
/// in `mm/swap.c`): the batched updates of that many pages come at once.
pub const LRU_BATCH: f64 = 31.0;

/// The kernel's periodic flush period (`FLUSH_TIME`).
pub const PERIOD: SimTime = 2 * SECONDS;

/// Phases of the reader's loop [`trap_odds`] averages over.
pub const PHASES: u32 = 8;

/// How long after a charge the parent is read (the host's experiment lets
/// a read of the reader's under way finish first).
pub const AFTER_CHARGE_WAIT: SimTime = MILLIS / 2;

/// The trap's window: the parent's visit in a flush that visits the leaf
/// and then the parent on the charging CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// In a charge's first flush, ns.
    pub first_ns: f64,
    /// In its later flushes, ns.
    pub later_ns: f64,
}

impl Window {
    /// Both windows a priced flush visit ([`crate::cost::KernelCosts::flush_visit_ns`]).
    pub fn priced(costs: &CostModel) -> Window {
        let v = costs.kernel.flush_visit_ns.max(0.0);
        Window {
            first_ns: v,
            later_ns: v,
        }
    }
}

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
    /// Follow at most this many trapped repetitions (`None`: all); the
    /// others are ended by the read of the leaf.
    pub follow_repetitions: Option<usize>,
    /// Pause after each repetition, ms.
    pub pause_ms: f64,
    /// When the first periodic flush runs, ns (the host's phase is
    /// unknown; the twin takes it from the seed).
    pub periodic_phase: SimTime,
    /// The trap's window.
    pub window: Window,
    /// Time per charged page, ns (`None`: the priced fault and its
    /// updates).
    pub page_ns: Option<f64>,
    /// Seed of the window draws and of the reader's phase.
    pub seed: u64,
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

/// The odds that a repetition traps its parent (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct TrapOdds {
    /// The policy's threshold `T`, pages.
    pub threshold: u64,
    /// Stat-update instants per charged page (`u`).
    pub instants_per_page: f64,
    /// Time per charged page, ns (`τ`).
    pub page_ns: f64,
    /// The window.
    pub window: Window,
    /// `q` of a charge's first flush.
    pub hit_first: f64,
    /// `q` of its later flushes.
    pub hit_later: f64,
    /// Pages charged at each reader flush of a charge with no hit (the
    /// reader's middle phase).
    pub flushes_at: Vec<u64>,
    /// Of them, the chances: flushes with more than `T` pages to go (mean
    /// over the reader's phases).
    pub chances: f64,
    /// The chance that the periodic flush comes due between the charge's
    /// start and the parent's read (and ends a trap).
    pub periodic: f64,
    /// The probability that the parent misses more than `T` pages right
    /// after the charge (mean over the reader's phases).
    pub probability: f64,
}

const PARENT: GroupIdx = 1;
const LEAF: GroupIdx = 2;
const CHARGER: usize = 0;

/// The hit draws: `q` of a first and of a later flush of a charge.
struct Hits {
    first: f64,
    later: f64,
    rng: Rng,
    /// Draw at all (off: the charge's flushes never hit, but `force`).
    on: bool,
    /// The flush of a charge (by its index in the charge) that hits when
    /// the draws are off.
    force: Option<u32>,
}

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
    hits: Hits,
    /// Flushes made so far during the charge under way (`None`: no charge
    /// under way).
    charge_flushes: Option<u32>,
    /// Pages charged at each flush's visit of the leaf during a charge.
    flushed_at: Vec<u64>,
}

impl Seq<'_> {
    /// A flush of `g`'s subtree, made whole at `now`: the charge's updates
    /// are not interleaved with its visits, except that during a charge an
    /// update lands between the leaf's visit and the parent's on the
    /// charging CPU with the window's probability. Returns the visits.
    fn flush(&mut self, g: GroupIdx) -> u64 {
        let mut f = self.counts.begin_flush(g);
        let mut carried = None;
        let mut visits = 0;
        while let Some((cpu, x)) = self.counts.visit_next(&mut f) {
            visits += 1;
            if cpu != CHARGER {
                continue;
            }
            if x == LEAF {
                carried = Some(self.charged);
                if let Some(n) = self.charge_flushes.as_mut() {
                    self.flushed_at.push(self.charged);
                    let q = if *n == 0 {
                        self.hits.first
                    } else {
                        self.hits.later
                    };
                    let hit = if self.hits.on {
                        self.hits.rng.chance(q)
                    } else {
                        self.hits.force == Some(*n)
                    };
                    *n += 1;
                    if hit && self.parent_visit_follows(&f) {
                        // One of the charge's own updates, made now.
                        self.update(1);
                        self.credit -= 1.0;
                    }
                }
            } else if x == PARENT {
                if let Some(c) = carried {
                    self.shown = c;
                }
            }
        }
        self.counts.end_flush(f);
        visits
    }

    /// Whether the flush visits the parent after the leaf (a flush of the
    /// parent or the root; a flush of the leaf alone has no window).
    fn parent_visit_follows(&self, f: &super::count::Flush) -> bool {
        f.group != LEAF
    }

    /// The periodic flushes due by `t`.
    fn periodic(&mut self, t: SimTime) {
        while self.next_periodic <= t {
            self.flush(0);
            self.next_periodic += PERIOD;
        }
    }

    /// One update of a page at the leaf on the charging CPU.
    fn update(&mut self, delta: i64) {
        self.counts
            .update(CHARGER, LEAF, delta.unsigned_abs(), &mut self.walk);
    }

    /// Charges (or frees, `sign < 0`) the spike page by page from `now`.
    /// The reader (if it runs, from `reader_at`) and the periodic flush
    /// act in time order between the charge's updates.
    fn pages(
        &mut self,
        sign: i64,
        updates_per_page: f64,
        reader_at: Option<SimTime>,
        out: &mut SpikeSample,
    ) {
        self.charge_flushes = (sign > 0).then_some(0);
        let mut reader_at = reader_at;
        for _ in 0..self.s.pages {
            self.now += self.page_ns;
            self.credit += updates_per_page;
            while self.credit >= 1.0 {
                self.credit -= 1.0;
                self.now += self.update_ns as SimTime;
                // Everything else due before this update, earliest first.
                loop {
                    let r_at = reader_at.unwrap_or(SimTime::MAX);
                    // A raced charge holds both CPUs (the worker and the
                    // reader run at real-time priority): the periodic
                    // flush, a normal task, runs when it ends.
                    let p_at = if reader_at.is_some() {
                        SimTime::MAX
                    } else {
                        self.next_periodic
                    };
                    if r_at.min(p_at) > self.now {
                        break;
                    }
                    if p_at <= r_at {
                        let t = self.next_periodic;
                        self.periodic(t);
                    } else {
                        out.reader_reads += 1;
                        let mut took = 0;
                        if self.counts.needs_flush(PARENT) {
                            out.reader_flushes += 1;
                            took = self.flush(PARENT) * self.visit_ns;
                        }
                        reader_at = Some(r_at + took + self.read_ns);
                    }
                }
                // (An update a window took ahead of time is in the credit.)
                self.update(sign);
            }
            if sign > 0 {
                self.charged += 1;
            } else {
                self.charged -= 1;
            }
        }
        self.charge_flushes = None;
        let now = self.now;
        self.periodic(now);
    }

    /// A read of `g` now: flushes over `T`.
    fn read(&mut self, g: GroupIdx) {
        self.periodic(self.now);
        if self.counts.needs_flush(g) {
            let visits = self.flush(g);
            self.now += visits * self.visit_ns;
        }
        self.now += self.read_ns;
    }

    /// A read of the parent now: the pages it misses.
    fn read_parent(&mut self) -> u64 {
        self.read(PARENT);
        self.charged.saturating_sub(self.shown)
    }
}

/// The sequence's state for `setup`; `None` for a policy that counts
/// nothing (the pre-rstat baseline).
fn seq(setup: &SpikeSetup, draw: bool) -> Option<Seq<'_>> {
    let cpus = setup.cpus.max(1);
    let shape = TreeShape::chain(2);
    let counts = ThresholdCounts::of_choice(setup.policy, &shape, cpus)?;
    let k = setup.costs.kernel;
    let update_ns = k.stat_update_ns + 2.0 * k.rstat_level_ns;
    let page_ns = setup
        .page_ns
        .unwrap_or(k.fault_anon_ns + charge_updates(setup) * update_ns)
        .max(1.0);
    let odds = hit_odds(setup, page_ns);
    Some(Seq {
        s: setup,
        counts,
        walk: Walk::default(),
        now: 0,
        next_periodic: setup.periodic_phase % PERIOD,
        charged: 0,
        shown: 0,
        credit: 0.0,
        // The page's own work; its updates are timed one by one.
        page_ns: (page_ns - charge_updates(setup) * update_ns).max(1.0) as SimTime,
        update_ns,
        // A flush callback, measured on the host: every item of the group
        // aggregated, the charging CPU's per-CPU lines read from the
        // flusher's (it times the reader; the window is [`Window`]).
        visit_ns: k.flush_visit_ns.ceil().max(1.0) as SimTime,
        read_ns: super::read_ns(&k).max(1),
        hits: Hits {
            first: odds.0,
            later: odds.1,
            rng: Rng::new(setup.seed),
            on: draw,
            force: None,
        },
        charge_flushes: None,
        flushed_at: Vec::new(),
    })
}

/// Stat updates a charged page makes.
fn charge_updates(setup: &SpikeSetup) -> f64 {
    (setup.costs.kernel.updates_per_fault_anon - UNMAP_UPDATES_PER_PAGE).max(0.0)
}

/// Update instants per charged page: the page's updates, its batched ones
/// counted once per [`LRU_BATCH`] pages.
fn instants_per_page(setup: &SpikeSetup) -> f64 {
    let u = charge_updates(setup);
    let batched = BATCHED_UPDATES_PER_PAGE.min(u);
    u - batched + batched / LRU_BATCH
}

/// `q` of a first and of a later flush, pages taking `page_ns`.
fn hit_odds(setup: &SpikeSetup, page_ns: f64) -> (f64, f64) {
    let rate = instants_per_page(setup) / page_ns.max(1.0);
    let q = |w: f64| 1.0 - (-rate * w.max(0.0)).exp();
    (q(setup.window.first_ns), q(setup.window.later_ns))
}

/// The reader's first read of a charge: `phase` of a read after its start.
fn reader_start(q: &Seq<'_>, phase: f64) -> SimTime {
    q.now + (phase * q.read_ns as f64) as SimTime
}

/// The odds of the trap for `setup` (see the module docs); `None` for a
/// policy that counts nothing, or without a concurrent reader on two CPUs.
pub fn trap_odds(setup: &SpikeSetup) -> Option<TrapOdds> {
    if !setup.concurrent_reader || setup.cpus < 2 {
        return None;
    }
    let base = seq(setup, false)?;
    let page_ns = base.page_ns as f64 + charge_updates(setup) * base.update_ns;
    let threshold = base.counts.threshold();
    let (first, later) = (base.hits.first, base.hits.later);
    let (mut probability, mut chances, mut flushes_at) = (0.0, 0.0, Vec::new());
    // One charge, well before the periodic flush, hitting at flush `hit`
    // alone (`None`: at none); the flushes it made and the parent's lag.
    let charge = |phase: f64, hit: Option<u32>| -> Option<(Vec<u64>, u64)> {
        let mut q = seq(setup, false)?;
        q.next_periodic = SimTime::MAX;
        q.hits.force = hit;
        let at = reader_start(&q, phase);
        q.pages(
            1,
            charge_updates(setup),
            Some(at),
            &mut SpikeSample::default(),
        );
        q.now += AFTER_CHARGE_WAIT;
        let lag = q.read_parent();
        Some((std::mem::take(&mut q.flushed_at), lag))
    };
    for i in 0..PHASES {
        let phase = (f64::from(i) + 0.5) / f64::from(PHASES);
        let (at, _) = charge(phase, None)?;
        // Whether a hit at flush n alone leaves the parent more than T
        // behind (the early break's doing: without it, never).
        let mut miss = 1.0;
        for n in 0..at.len() as u32 {
            if miss < 1e-12 {
                break;
            }
            if charge(phase, Some(n))?.1 > threshold {
                chances += 1.0 / f64::from(PHASES);
                miss *= 1.0 - if n == 0 { first } else { later };
            }
        }
        probability += (1.0 - miss) / f64::from(PHASES);
        if i == PHASES / 2 {
            flushes_at = at;
        }
    }
    // A periodic flush due during the charge, or before the parent is
    // read, ends the trap: it runs when the raced charge ends, and shows
    // the parent everything (no update races it then).
    let exposed = setup.pages as f64 * page_ns + AFTER_CHARGE_WAIT as f64;
    let periodic = (exposed / PERIOD as f64).min(1.0);
    probability *= 1.0 - periodic;
    Some(TrapOdds {
        threshold,
        periodic,
        instants_per_page: instants_per_page(setup),
        page_ns,
        window: setup.window,
        hit_first: first,
        hit_later: later,
        flushes_at,
        chances,
        probability,
    })
}

/// Runs the sequence of `setup`, each flush of a charge trapping the
/// parent with its drawn odds; `None` for a policy that counts nothing
/// (the pre-rstat baseline).
pub fn run(setup: &SpikeSetup) -> Option<SpikeOutcome> {
    let mut q = seq(setup, true)?;
    let threshold = q.counts.threshold();
    let reader = setup.concurrent_reader && setup.cpus >= 2;
    let charge = charge_updates(setup);
    let mut samples = Vec::with_capacity(setup.repetitions);
    let mut followed = 0;
    for _ in 0..setup.repetitions {
        let mut out = SpikeSample::default();
        // Settle: a parent still showing part of a freed spike (trapped
        // through the free) is waited for, until the periodic flush.
        q.read_parent();
        if q.shown > q.charged + threshold / 2 {
            q.now = q.next_periodic;
            q.read_parent();
        }
        let at = reader.then(|| {
            let phase = q.hits.rng.unit_f64();
            reader_start(&q, phase)
        });
        q.pages(1, charge, at, &mut out);
        q.now += AFTER_CHARGE_WAIT;
        out.lag = q.read_parent();
        let follow = setup.follow_repetitions.is_none_or(|n| followed < n);
        if setup.follow_ms > 0.0 && out.lag > threshold && follow {
            followed += 1;
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
        if reader {
            q.read(LEAF);
        }
        q.pages(
            -1,
            UNMAP_UPDATES_PER_PAGE,
            None,
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
            follow_repetitions: None,
            pause_ms: 2.0,
            periodic_phase: 500 * MILLIS,
            window: Window::priced(&CostModel::defaults()),
            page_ns: None,
            seed: 7,
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
        // Without the early break a hit costs nothing: the parent's count
        // keeps growing and its next read flushes.
        let o = trap_odds(&setup(Preset::Linux6_8, true)).unwrap();
        assert!(o.hit_first > 0.99 && !o.flushes_at.is_empty(), "{o:?}");
        assert_eq!((o.chances, o.probability), (0.0, 0.0));
        let mut s = setup(Preset::Linux6_8, true);
        s.repetitions = 20;
        assert!(run(&s).unwrap().samples.iter().all(|x| x.lag <= 128));
    }

    /// A 1 MiB spike (256 pages) with the host's measured figures of a
    /// stored run (windows 960/362 ns, 1,731 ns a page).
    fn one_mib(window: Window) -> SpikeSetup {
        SpikeSetup {
            pages: 256,
            follow_ms: 0.0,
            window,
            page_ns: Some(1731.0),
            ..setup(Preset::Linux6_17, true)
        }
    }

    #[test]
    fn the_odds_follow_the_window() {
        let w = |f: f64, l: f64| Window {
            first_ns: f,
            later_ns: l,
        };
        let o = trap_odds(&one_mib(w(960.0, 362.0))).unwrap();
        // q = 1 - exp(-u W / tau), u = 4 - 1 + 1/31 instants a page.
        let u = 4.0 - 1.0 + 1.0 / LRU_BATCH;
        assert!((o.instants_per_page - u).abs() < 1e-9, "{o:?}");
        let q = |w: f64| 1.0 - (-u * w / 1731.0).exp();
        assert!((o.hit_first - q(960.0)).abs() < 1e-9, "{o:?}");
        assert!((o.hit_later - q(362.0)).abs() < 1e-9, "{o:?}");
        // Flushes every ~48 pages: about two with more than T = 128
        // pages of the 256 to go.
        assert!((1.0..=3.0).contains(&o.chances), "{o:?}");
        assert!(o.flushes_at.len() >= 3, "{o:?}");
        assert!(o.probability > 0.5 && o.probability < 0.99, "{o:?}");
        // At most the odds of every chance hitting; at least the first's.
        let mut last = 0.0;
        for f in [0.0, 100.0, 400.0, 960.0, 3000.0, 1e6] {
            let p = trap_odds(&one_mib(w(f, f * 0.4))).unwrap().probability;
            assert!(p >= last, "{f}: {p} < {last}");
            last = p;
        }
        assert_eq!(trap_odds(&one_mib(w(0.0, 0.0))).unwrap().probability, 0.0);
        assert!(last > 0.99, "{last}");
        // No reader, no odds.
        let mut s = one_mib(w(960.0, 362.0));
        s.concurrent_reader = false;
        assert!(trap_odds(&s).is_none());
    }

    #[test]
    fn the_simulated_race_traps_as_often_as_the_odds_say() {
        // The sequence draws each flush's hit with the same q: over many
        // repetitions its trapped fraction is the odds' probability.
        let mut s = one_mib(Window {
            first_ns: 700.0,
            later_ns: 250.0,
        });
        s.repetitions = 2000;
        let p = trap_odds(&s).unwrap().probability;
        let o = run(&s).unwrap();
        let k = o.samples.iter().filter(|x| x.lag > o.threshold).count() as f64;
        let f = k / s.repetitions as f64;
        // Four standard deviations of a binomial fraction.
        let sd = (p * (1.0 - p) / s.repetitions as f64).sqrt();
        assert!((f - p).abs() <= 4.0 * sd, "simulated {f}, odds {p}");
        // Trapped, the parent misses what came after the trapping flush's
        // visit of the leaf: more than T, less than the spike.
        for x in o.samples.iter().filter(|x| x.lag > o.threshold) {
            assert!(x.lag <= 256, "{x:?}");
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
