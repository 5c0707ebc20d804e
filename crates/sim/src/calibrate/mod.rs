//! Calibration: the simulator's per-unit costs ([`CostModel`]) measured on
//! this host, beside the model they feed. `mmlab calibrate` calls
//! [`calibrate`] and writes the result as the cost file `--costs` reads.
//!
//! * `atomic_ns`: an uncontended `fetch_add`;
//! * `lock_ns`: an uncontended `Mutex` lock + unlock;
//! * `call_ns`: an engine update's time minus its atomics' cost;
//! * `shard_scanned_ns`, `group_visited_ns`, `counter_aggregated_ns`: a
//!   non-negative least-squares fit of forced flushes' time against their
//!   work counters (after subtracting their locks and atomics), over trees
//!   of several shard counts, dirty-set sizes and item counts
//!   ([`fit::flush_samples`]); a coefficient the fit pins at 0 keeps the
//!   shipped default, with a note;
//! * `item_read_ns`: one `read_bounded`;
//! * `line_transfer_ns`: half a ping-pong round trip between two threads
//!   (kept at the default on a single-CPU host, or above
//!   [`units::MAX_PLAUSIBLE_TRANSFER_NS`]).
//!
//! The `[kernel]` table ([`crate::cost::KernelCosts`]):
//!
//! * `rstat_level_ns`, `charge_level_ns`, `stat_update_ns`: [`replicas`] of
//!   one level of `memcg_rstat_updated`'s walk, of one page-counter level
//!   and of a stat update's two per-CPU adds;
//! * with kernel mode, from what the host's kernel measured
//!   ([`HostKernel`], which the caller takes with
//!   `hostkernel::run_calibration`: this crate does not touch the host):
//!   the faults per mapping less their modelled memcg work (charge and stat
//!   updates under the host era's preset, at the measured depth), the
//!   `memory.stat` syscalls and lines, a flush visit, a loopback send, the
//!   stat updates per fault when counted; the `host` line then names the
//!   machine ([`host::apply`]).
//!
//! Every figure is rounded to 0.01 ns. Times are the thread CPU clock's
//! (the line transfer's, the wall clock's), the minimum of a few
//! measurements: on a shared host the minimum is the best estimate of an
//! uncontended cost.

pub mod fit;
pub mod host;
pub mod replicas;
pub mod units;

pub use host::{fault_op, HostFault, HostKernel};

use crate::cost::CostModel;
use hierstat::sim::Simulator as _;
use hierstat::{
    sim::{Shard, WorkCounters},
    Config, HierStats, Preset, Schema, Unit,
};
use simcore::clock::CpuTimer;
use std::hint::black_box;
use thiserror::Error;
use units::min_of;

/// How long to measure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Shorter measurements (noisier): a tenth of the operations, three
    /// shard counts in the flush fit instead of four.
    pub quick: bool,
}

/// The measured costs and what the measurement has to say about them.
#[derive(Debug, Clone)]
pub struct Calibration {
    /// The costs (`host` names where they come from).
    pub costs: CostModel,
    /// Figures that were not measured and why (a flush cost the fit pinned
    /// at 0 keeps its default), one line each.
    pub notes: Vec<String>,
}

/// A failed kernel-mode measurement, as the caller's closure reports it.
pub type KernelError = Box<dyn std::error::Error + Send + Sync>;

/// Why a calibration failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// The engine refused an operation (a bug).
    #[error("engine: {0}")]
    Engine(#[from] hierstat::Error),
    /// The kernel-mode measurement failed.
    #[error("{0}")]
    Kernel(KernelError),
}

/// The steps [`calibrate`] reports through its `progress`, with the
/// kernel-mode step or without.
pub fn steps(kernel: bool) -> u64 {
    5 + u64::from(kernel)
}

/// Today's date (UTC) as `YYYY-MM-DD`: the `host` line's.
pub fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Measures the costs on this host. `kernel`, when given, takes the host
/// kernel's figures (kernel mode) once the engine's and the replicas' are
/// measured; `progress` is called after each of [`steps`] steps with what
/// was measured.
///
/// # Errors
/// The engine's (none for the trees measured); `kernel`'s.
pub fn calibrate(
    opts: &Options,
    kernel: Option<&mut dyn FnMut() -> Result<HostKernel, KernelError>>,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    let quick = opts.quick;
    let n: u64 = if quick { 200_000 } else { 2_000_000 };
    let mut notes = Vec::new();
    let mut m = CostModel::defaults();
    m.atomic_ns = min_of(5, || units::atomic_ns(n));
    m.lock_ns = min_of(5, || units::lock_ns(n / 4));
    progress("atomic and lock");
    // Engine update: time and atomics per call.
    {
        let mut b = Schema::builder();
        let it = b.state("s", Unit::Pages);
        let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(4))?;
        let g = stats.create(&stats.root(), "a")?;
        let mut wc = WorkCounters::default();
        stats.add_with(Shard(0), &g, it, 1, &mut wc)?;
        let per_call_atomics = {
            let mut w = WorkCounters::default();
            for _ in 0..1000 {
                stats.add_with(Shard(0), &g, it, 1, &mut w)?;
            }
            (w.atomics + w.list_pops) as f64 / 1000.0
        };
        let t_add = min_of(5, || {
            let t = CpuTimer::start();
            for _ in 0..n {
                let _ = stats.add_with(Shard(0), black_box(&g), it, 1, &mut ());
            }
            t.elapsed_ns() / n as f64
        });
        m.call_ns = (t_add - per_call_atomics * m.atomic_ns).max(0.1);
        // Reads.
        stats.flush_forced(&stats.root())?;
        m.item_read_ns = min_of(5, || {
            let t = CpuTimer::start();
            for _ in 0..n / 4 {
                black_box(stats.read_bounded(black_box(&g), it).ok());
            }
            t.elapsed_ns() / (n / 4) as f64
        });
    }
    progress("engine update and read");
    // Flush fit.
    let samples = fit::flush_samples(quick)?;
    let rows: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| {
            vec![
                s.work.shards_scanned as f64,
                s.work.groups_visited as f64,
                s.work.counters_aggregated as f64,
            ]
        })
        .collect();
    let y: Vec<f64> = samples
        .iter()
        .map(|s| {
            let known = s.work.lock_acquisitions as f64 * m.lock_ns
                + (s.work.atomics + s.work.list_pops) as f64 * m.atomic_ns
                + m.call_ns;
            (s.ns - known).max(0.0)
        })
        .collect();
    let x = fit::nnls(&rows, &y);
    // A coefficient the non-negative fit pinned at 0 was not measured (its
    // work is collinear with another's on this host's samples): keep the
    // shipped default for it rather than claim the work is free.
    let defaults = CostModel::defaults();
    let fitted = [
        ("shard_scanned_ns", x[0], defaults.shard_scanned_ns),
        ("group_visited_ns", x[1], defaults.group_visited_ns),
        (
            "counter_aggregated_ns",
            x[2],
            defaults.counter_aggregated_ns,
        ),
    ];
    let mut kept = [0.0; 3];
    for (i, (name, v, d)) in fitted.iter().enumerate() {
        kept[i] = if *v > 0.005 {
            *v
        } else {
            notes.push(format!(
                "{name}: the fit gave {v:.3} ns; keeping the default {d} ns"
            ));
            *d
        };
    }
    m.shard_scanned_ns = kept[0];
    m.group_visited_ns = kept[1];
    m.counter_aggregated_ns = kept[2];
    progress("flush fit");
    let transfer = min_of(3, || {
        units::line_transfer_ns(if quick { 20_000 } else { 100_000 }).unwrap_or(f64::INFINITY)
    });
    if transfer <= units::MAX_PLAUSIBLE_TRANSFER_NS {
        m.line_transfer_ns = transfer;
    }
    progress("line transfer");
    m.kernel.rstat_level_ns = replicas::rstat_level_ns(n / 8);
    m.kernel.charge_level_ns = min_of(5, || replicas::charge_level_ns(n / 4));
    m.kernel.stat_update_ns = min_of(5, || replicas::stat_update_ns(n / 4));
    let date = today();
    m.host = format!(
        "engine and replica costs: this host ({} CPUs, mmlab calibrate, {date}); the rest of [kernel]: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        CostModel::defaults().host
    );
    progress("kernel replicas");
    if let Some(kernel) = kernel {
        let h = kernel().map_err(CalibrateError::Kernel)?;
        host::apply(&mut m, &h, &date);
        progress("host kernel");
    }
    round(&mut m);
    Ok(Calibration { costs: m, notes })
}

/// Rounds every cost to 0.01 ns, for a readable file.
fn round(m: &mut CostModel) {
    let k = &mut m.kernel;
    for v in [
        &mut m.call_ns,
        &mut m.atomic_ns,
        &mut m.shard_scanned_ns,
        &mut m.group_visited_ns,
        &mut m.counter_aggregated_ns,
        &mut m.lock_ns,
        &mut m.item_read_ns,
        &mut m.line_transfer_ns,
        &mut k.fault_anon_ns,
        &mut k.fault_cow_ns,
        &mut k.fault_shared_ns,
        &mut k.send_ns,
        &mut k.charge_level_ns,
        &mut k.stat_update_ns,
        &mut k.rstat_level_ns,
        &mut k.read_syscall_ns,
        &mut k.read_item_ns,
        &mut k.flush_visit_ns,
        &mut k.updates_per_fault_anon,
        &mut k.updates_per_fault_cow,
        &mut k.updates_per_fault_shared,
    ] {
        *v = (*v * 100.0).round() / 100.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_is_a_calendar_day() {
        let d = today();
        assert_eq!(d.len(), 10, "{d}");
        assert!(d.starts_with("20"), "{d}");
        assert_eq!(&d[4..5], "-");
    }

    #[test]
    fn a_host_kernel_sets_the_kernel_table_and_the_host_line() {
        let mut m = CostModel::defaults();
        let h = HostKernel {
            cpu_model: "Some CPU".into(),
            online_cpus: 2,
            kernel_release: "6.18.0".into(),
            cgroup_version: "v2".into(),
            era: Preset::Linux6_17,
            depth: 1,
            faults: vec![HostFault {
                op: fault_op("anon"),
                cpu_ns_per_fault: 1e6,
                updates_per_fault: Some(3.0),
            }],
            read_syscall_ns: 1000.0,
            read_stat_ns: 5000.0,
            stat_items: 40,
            flush_visit_ns: 20.0,
            send_ns: 3000.0,
        };
        host::apply(&mut m, &h, "2026-01-02");
        assert_eq!(m.kernel.updates_per_fault_anon, 3.0);
        assert_eq!(m.kernel.read_item_ns, 100.0);
        assert!(m.kernel.fault_anon_ns > 1.0 && m.kernel.fault_anon_ns < 1e6);
        assert_eq!(
            m.host,
            "Some CPU (2 CPUs), Linux 6.18.0, cgroup v2 (mmlab calibrate, 2026-01-02)"
        );
        assert_eq!(fault_op("file-private"), crate::priced::Op::FaultCow);
        assert_eq!(fault_op("file-shared"), crate::priced::Op::FaultShared);
    }
}
