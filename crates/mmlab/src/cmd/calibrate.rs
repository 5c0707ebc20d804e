//! `mmlab calibrate`: measures the simulator's per-unit costs on this host
//! (`sim::calibrate`, which says what each cost is and how it is measured)
//! and saves them as TOML (load them with `--costs FILE`).
//!
//! This command checks that kernel mode can run (unless `--no-kernel`),
//! takes the host kernel's figures for the `[kernel]` table through
//! `hostkernel::run_calibration` when sim asks for them, shows progress and
//! the notes of the measurement, and writes and prints the costs. Its
//! output was checked before anything is measured (`cmd::dispatch`).

use crate::cli::CalibrateArgs;
use anyhow::Result;
use sim::calibrate::{self, HostFault, HostKernel, KernelError};
use sim::cost::CostModel;
use std::io::Write;

/// The host kernel's figures (kernel mode: root, a writable memory
/// controller), in the terms of `sim::calibrate`.
fn measure_host_kernel(quick: bool, count_updates: bool) -> Result<HostKernel, KernelError> {
    let host = kernelmode::host().map_err(|why| format!("kernel mode: {why}"))?;
    let cancel = hostkernel::signals::install(None)?;
    let cfg = hostkernel::CalibrateConfig {
        pages: if quick { 512 } else { 1024 },
        rounds: if quick { 4 } else { 8 },
        reads: if quick { 100 } else { 400 },
        sends: if quick { 5_000 } else { 20_000 },
        count_updates,
    };
    let r = hostkernel::run_calibration(host, &cfg, &cancel)?;
    let f = &r.facts;
    Ok(HostKernel {
        cpu_model: r.cpu_model.clone(),
        online_cpus: f.online_cpus,
        kernel_release: f.kernel_release.clone(),
        cgroup_version: f.cgroup_version.to_string(),
        era: kernelmode::era_preset(&f.kernel_release),
        depth: r.depth as u32,
        faults: r
            .faults
            .iter()
            .map(|fc| HostFault {
                op: calibrate::fault_op(&fc.mapping),
                cpu_ns_per_fault: fc.cpu_ns_per_fault,
                updates_per_fault: fc.updates_per_fault,
            })
            .collect(),
        read_syscall_ns: r.read_syscall_ns,
        read_stat_ns: r.read_stat_ns,
        stat_items: r.stat_items,
        flush_visit_ns: r.flush_visit_ns,
        send_ns: r.send_ns,
    })
}

/// Measures the costs on this host (`kernel`: the `[kernel]` table from
/// kernel mode too), reporting each step to `progress` and each note of the
/// measurement on standard error.
fn calibrate_with(
    quick: bool,
    kernel: bool,
    count_updates: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<CostModel> {
    let mut host = || measure_host_kernel(quick, count_updates);
    let c = calibrate::calibrate(
        &calibrate::Options { quick },
        kernel.then_some(&mut host as &mut dyn FnMut() -> Result<HostKernel, KernelError>),
        progress,
    )?;
    for note in &c.notes {
        eprintln!("mmlab calibrate: {note}");
    }
    Ok(c.costs)
}

/// `mmlab calibrate`.
pub fn cmd_calibrate(args: &CalibrateArgs, out: &mut dyn Write) -> Result<()> {
    let kernel = !args.no_kernel;
    if kernel {
        if let Err(why) = kernelmode::host() {
            anyhow::bail!(
                "the [kernel] costs are measured in kernel mode, which this host cannot run ({why}); \
                 `--no-kernel` keeps the shipped ones"
            );
        }
    }
    let mut pb = crate::pipeline::progress::Reporter::new("calibrate");
    pb.total(calibrate::steps(kernel));
    let m = calibrate_with(args.quick, kernel, args.count_updates, &mut |what| {
        pb.step(what)
    })?;
    pb.finish();
    let text = format!(
        "# Per-unit simulator costs measured by `mmlab calibrate` on the host below.\n{}",
        m.to_toml()
    );
    crate::render::output::write_output(&args.out, text.as_bytes(), out)?;
    if crate::render::output::is_stdout(&args.out) {
        return Ok(());
    }
    let d = CostModel::defaults();
    writeln!(
        out,
        "{:<30} {:>10} {:>10}",
        "cost (ns)", "measured", "default"
    )?;
    for (k, a, b) in [
        ("call_ns", m.call_ns, d.call_ns),
        ("atomic_ns", m.atomic_ns, d.atomic_ns),
        ("shard_scanned_ns", m.shard_scanned_ns, d.shard_scanned_ns),
        ("group_visited_ns", m.group_visited_ns, d.group_visited_ns),
        (
            "counter_aggregated_ns",
            m.counter_aggregated_ns,
            d.counter_aggregated_ns,
        ),
        ("lock_ns", m.lock_ns, d.lock_ns),
        ("item_read_ns", m.item_read_ns, d.item_read_ns),
        ("line_transfer_ns", m.line_transfer_ns, d.line_transfer_ns),
        (
            "kernel.fault_anon_ns",
            m.kernel.fault_anon_ns,
            d.kernel.fault_anon_ns,
        ),
        (
            "kernel.fault_cow_ns",
            m.kernel.fault_cow_ns,
            d.kernel.fault_cow_ns,
        ),
        (
            "kernel.fault_shared_ns",
            m.kernel.fault_shared_ns,
            d.kernel.fault_shared_ns,
        ),
        ("kernel.send_ns", m.kernel.send_ns, d.kernel.send_ns),
        (
            "kernel.charge_level_ns",
            m.kernel.charge_level_ns,
            d.kernel.charge_level_ns,
        ),
        (
            "kernel.stat_update_ns",
            m.kernel.stat_update_ns,
            d.kernel.stat_update_ns,
        ),
        (
            "kernel.rstat_level_ns",
            m.kernel.rstat_level_ns,
            d.kernel.rstat_level_ns,
        ),
        (
            "kernel.read_syscall_ns",
            m.kernel.read_syscall_ns,
            d.kernel.read_syscall_ns,
        ),
        (
            "kernel.read_item_ns",
            m.kernel.read_item_ns,
            d.kernel.read_item_ns,
        ),
        (
            "kernel.flush_visit_ns",
            m.kernel.flush_visit_ns,
            d.kernel.flush_visit_ns,
        ),
        (
            "kernel.updates_per_fault_anon",
            m.kernel.updates_per_fault_anon,
            d.kernel.updates_per_fault_anon,
        ),
        (
            "kernel.stat_items",
            f64::from(m.kernel.stat_items),
            f64::from(d.kernel.stat_items),
        ),
    ] {
        writeln!(out, "{k:<30} {a:>10.2} {b:>10.2}")?;
    }
    writeln!(out, "host: {}", m.host)?;
    writeln!(
        out,
        "\nsaved to {} (use it with --costs {})",
        crate::render::shown(&args.out),
        crate::cmd::path_word(&args.out).unwrap_or_else(|_| "FILE".into())
    )?;
    Ok(())
}
