//! Real-mode spikes: a usage spike then reads of the leaf and its parent,
//! while other threads keep flushing.
//!
//! Writer threads update leaves back to back; flusher threads read random
//! groups (each read flushing per the policy), so a flush is often in
//! progress — and, on an oversubscribed host, often preempted while it
//! holds the flush lock, as the kernel's flushers were. A checker thread
//! repeatedly adds a spike of `pages` to a random leaf, waits
//! `read_after_us`, reads the leaf (flushing per the policy), then reads
//! its parent the same way, and takes the spike back.
//!
//! * a spike read *misses* the spike when the leaf's value grew by less
//!   than half the spike over a read of the same leaf just before it;
//! * a *child > parent* inconsistency is a parent value below the child's
//!   value by more than the writers can have changed it in between
//!   (`slack`): the parent's exact value is at least the child's.

use super::{spawn_scoped, Gate};
use crate::backend::{FlushReason, StatsBackend};
use crate::cost::Work;
use crate::error::SimError;
use crate::workload::{GroupIdx, TreeShape};
use crate::workload::{SpikeSpec, Targets, WritersSpec};
use simcore::Rng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Setup of a real spikes run.
#[derive(Debug, Clone)]
pub struct SpikesSetup {
    /// Writer threads.
    pub writers: usize,
    /// Writers' update mix.
    pub writer_spec: WritersSpec,
    /// Flusher (reader) threads.
    pub flushers: usize,
    /// Pause between a flusher's reads.
    pub flusher_period: Duration,
    /// Spikes.
    pub spikes: SpikeSpec,
    /// Measured duration.
    pub duration: Duration,
    /// Seed.
    pub seed: u64,
}

/// What a real spikes run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpikesOutcome {
    /// Spike reads done.
    pub spike_reads: u64,
    /// Spike reads that lacked more than half the spike.
    pub missed: u64,
    /// Parent reads checked.
    pub parent_checks: u64,
    /// Parent values below the child's by more than the slack.
    pub child_gt_parent: u64,
    /// Latency of each spike read (ns).
    pub latencies: Vec<u64>,
    /// Reads done by the flusher threads.
    pub flusher_reads: u64,
}

fn read_item0<B: StatsBackend + ?Sized>(b: &B, g: GroupIdx) -> u64 {
    let mut w = Work::default();
    if b.needs_flush(g, FlushReason::Read) {
        b.flush(g, FlushReason::Read, &mut w);
    }
    b.read(g, 0, &mut w).value
}

/// Sleeps `d`, in slices of at most 1 ms, returning early once `stop` is
/// set: a pause longer than the run (a fuzzed 65,536 ms reader period in
/// a 20 ms run) held the run for the whole pause.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    let until = Instant::now() + d;
    // ORDERING: Relaxed; a stop flag, polled.
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= until {
            break;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(1)));
    }
}

/// Runs the spikes workload on `backend` over `shape`.
pub fn run_spikes<B: StatsBackend + ?Sized>(
    backend: &B,
    shape: &TreeShape,
    setup: &SpikesSetup,
) -> Result<SpikesOutcome, SimError> {
    let leaves = shape.targets(Targets::Leaves);
    let all = shape.targets(Targets::All);
    let w = &setup.writer_spec;
    let slack =
        2 * setup.writers as u64 * w.pages[1].max(if w.thp_fraction > 0.0 { 512 } else { 0 });
    // ORDERING: Relaxed; `stop` only ends loops, counts are read after join.
    let stop = AtomicBool::new(false);
    let flusher_reads = AtomicU64::new(0);
    let barrier = Gate::default();
    let mut out = SpikesOutcome::default();
    std::thread::scope(|s| -> Result<(), SimError> {
        let mut failed = None;
        for t in 0..setup.writers {
            let (stop, barrier, leaves) = (&stop, &barrier, &leaves);
            let seed = setup.seed.wrapping_add(1 + t as u64);
            let h = spawn_scoped(s, "mmlab-writer", move || {
                let mut rng = Rng::new(seed);
                // Each writer keeps its own leaves' values non-negative.
                let mut mine = vec![0i64; leaves.len() * w.items as usize];
                barrier.wait();
                loop {
                    for _ in 0..64 {
                        let k = rng.below(leaves.len() as u64) as usize;
                        let item = rng.below(u64::from(w.items)) as usize;
                        let mut p = rng.range_inclusive(w.pages[0], w.pages[1]) as i64;
                        let cell = &mut mine[k * w.items as usize + item];
                        if rng.chance(w.uncharge_fraction) && *cell >= p {
                            p = -p;
                        }
                        *cell += p;
                        backend.add(leaves[k], item, p);
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
            });
            if let Err(e) = h {
                failed = Some(e);
                break;
            }
        }
        for t in 0..setup.flushers {
            if failed.is_some() {
                break;
            }
            let (stop, barrier, all, flusher_reads) = (&stop, &barrier, &all, &flusher_reads);
            let seed = setup.seed.wrapping_add(1000 + t as u64);
            let pause = setup.flusher_period;
            let h = spawn_scoped(s, "mmlab-flusher", move || {
                let mut rng = Rng::new(seed);
                let mut n = 0u64;
                barrier.wait();
                loop {
                    let g = all[rng.below(all.len() as u64) as usize];
                    std::hint::black_box(read_item0(backend, g));
                    n += 1;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    sleep_unless_stopped(pause, stop);
                }
                flusher_reads.fetch_add(n, Ordering::Relaxed);
            });
            if let Err(e) = h {
                failed = Some(e);
                break;
            }
        }
        let checker = {
            let (stop, barrier, leaves) = (&stop, &barrier, &leaves);
            let sp = setup.spikes.clone();
            let seed = setup.seed ^ 0x5911;
            spawn_scoped(s, "mmlab-checker", move || {
                let mut rng = Rng::new(seed);
                let mut o = SpikesOutcome::default();
                let gap = Duration::from_secs_f64(sp.every_ms / 1000.0);
                let after = Duration::from_micros(sp.read_after_us);
                barrier.wait();
                while !stop.load(Ordering::Relaxed) {
                    let g = leaves[rng.below(leaves.len() as u64) as usize];
                    let pre = read_item0(backend, g);
                    backend.add(g, 0, sp.pages as i64);
                    sleep_unless_stopped(after, stop);
                    let t0 = Instant::now();
                    let child = read_item0(backend, g);
                    o.latencies.push(t0.elapsed().as_nanos() as u64);
                    o.spike_reads += 1;
                    if child < pre + sp.pages / 2 {
                        o.missed += 1;
                    }
                    if let Some(p) = shape.parent(g) {
                        let parent = read_item0(backend, p);
                        o.parent_checks += 1;
                        if parent + slack < child {
                            o.child_gt_parent += 1;
                        }
                    }
                    backend.add(g, 0, -(sp.pages as i64));
                    // Until the next spike or the end of the run, whichever
                    // comes first: a gap longer than the run (a spike every
                    // 65 s in a 20 ms run, found by the fuzz test) must not
                    // hold the run past its duration.
                    let next = Instant::now() + gap;
                    while !stop.load(Ordering::Relaxed) {
                        let now = Instant::now();
                        if now >= next {
                            break;
                        }
                        std::thread::sleep((next - now).min(Duration::from_millis(1)));
                    }
                }
                o
            })
        };
        let checker = match checker {
            Ok(c) => Some(c),
            Err(e) => {
                failed = failed.or(Some(e));
                None
            }
        };
        barrier.start(&stop, failed)?;
        std::thread::sleep(setup.duration);
        stop.store(true, Ordering::Relaxed);
        if let Some(checker) = checker {
            out = checker.join().expect("checker thread does not panic");
        }
        Ok(())
    })?;
    out.flusher_reads = flusher_reads.load(Ordering::Relaxed);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baselines::EagerTree;
    use crate::workload::TreeSpec;

    /// A real spikes run on an eager tree (fanout 2 x 3, 2 items): one
    /// writer with `writer_spec`, one flusher reading back to back, a spike
    /// of 10,000 pages every `every_ms`, read at once, for `duration`.
    fn run_on_an_eager_tree(
        writer_spec: WritersSpec,
        every_ms: f64,
        duration: Duration,
    ) -> SpikesOutcome {
        let shape = TreeShape::from_spec(&TreeSpec {
            fanout: vec![2, 3],
            names: vec![],
        });
        let b = EagerTree::new(&shape, 2);
        let setup = SpikesSetup {
            writers: 1,
            writer_spec,
            flushers: 1,
            flusher_period: Duration::ZERO,
            spikes: SpikeSpec {
                every_ms,
                pages: 10_000,
                read_after_us: 0,
            },
            duration,
            seed: 1,
        };
        run_spikes(&b, &shape, &setup).unwrap()
    }

    #[test]
    fn eager_tree_never_misses_nor_inverts() {
        let writer_spec = WritersSpec {
            pages: [1, 4],
            items: 2,
            uncharge_fraction: 0.3,
            ..WritersSpec::default()
        };
        let o = run_on_an_eager_tree(writer_spec, 0.2, Duration::from_millis(30));
        assert!(o.spike_reads > 0);
        assert_eq!(o.missed, 0);
        assert_eq!(o.child_gt_parent, 0);
    }

    /// A gap between spikes longer than the run ends with the run (it slept
    /// the whole gap before: a 65 s spike period held a 20 ms run 65 s).
    #[test]
    fn a_spike_gap_longer_than_the_run_ends_with_it() {
        let t = std::time::Instant::now();
        let o = run_on_an_eager_tree(WritersSpec::default(), 65_536.0, Duration::from_millis(20));
        assert_eq!(o.spike_reads, 1);
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    }
}
