//! Integration tests on the host's own kernel. They need root and a writable
//! memory cgroup controller; where the host lacks either, each test prints
//! `skipped: <reason>` and returns.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hostkernel::{
    procs_of, run_stale_read, run_stale_read_observed, run_stat_readers, run_stat_readers_observed,
    run_update_path, run_update_path_observed, subtree_dirs, sweep_stale, Cancel, Error, Event,
    Host, StaleReadConfig, StatReadersConfig, UpdatePathConfig, NAME_PREFIX,
};

mod support;
use support::{alive, host_or_skip, subtrees_of, wait_gone};

#[test]
fn facts_describe_this_host() {
    let Some((host, _serial)) = host_or_skip("facts_describe_this_host") else {
        return;
    };
    let f = host.facts();
    assert!(!f.kernel_release.is_empty());
    assert!(f.online_cpus >= 1);
    assert!(f.page_size >= 4096 && f.page_size.is_power_of_two());
    assert_eq!(
        f.flush_threshold_pages,
        f.charge_batch * f.online_cpus as u64
    );
    assert!(f.charge_batch == 32 || f.charge_batch == 64);
    assert!(host.base().join("memory.stat").exists());
    let json = serde_json::to_string(f).unwrap();
    assert!(json.contains("\"cgroup_version\":\"v"), "{json}");
}

#[test]
fn update_path_measures_every_depth() {
    let Some((host, _serial)) = host_or_skip("update_path_measures_every_depth") else {
        return;
    };
    let cfg = UpdatePathConfig {
        depths: vec![1, 2, 4],
        pages: 512,
        rounds: 3,
        warmup_rounds: 1,
        runs: 2,
    };
    let mut tops = Vec::new();
    let mut workers = Vec::new();
    let mut steps = Vec::new();
    let r = run_update_path_observed(&host, &cfg, &Cancel::new(), &mut |e| match e {
        Event::TreeCreated { top } => tops.push(top.to_path_buf()),
        Event::Step { done, total } => steps.push((done, total)),
        Event::WorkerStarted { pid, cgroup } => {
            // The worker's cgroup is `depth` levels below the root.
            let depth = cgroup
                .strip_prefix(host.base())
                .unwrap()
                .components()
                .count();
            workers.push((pid, depth));
        }
        _ => {}
    })
    .unwrap();
    assert_eq!(r.depths.len(), 3);
    assert_eq!(tops.len(), 6, "one fresh subtree per (run, depth)");
    assert_eq!(steps, (1..=6).map(|d| (d, 6)).collect::<Vec<_>>());
    let mut depths: Vec<usize> = workers.iter().map(|w| w.1).collect();
    depths.sort();
    assert_eq!(depths, vec![1, 1, 2, 2, 4, 4]);
    for d in &r.depths {
        assert_eq!(d.runs.len(), 2);
        for run in &d.runs {
            assert_eq!(run.round_cycle_ns.len(), 3);
            // A real fault costs between 50 ns and 1 ms.
            assert!(run.ns_per_fault > 50.0 && run.ns_per_fault < 1e6, "{run:?}");
            assert!(run.ns_per_fault_touch <= run.ns_per_fault);
            assert!((run.faults_per_sec * run.ns_per_fault - 1e9).abs() < 1.0);
        }
    }
    assert!(r.ratio_depth4_to_depth2.is_some());
    assert!(r.slope_ns_per_level.is_some());
    for t in &tops {
        assert!(!t.exists(), "{} left behind", t.display());
    }
    for (pid, _) in workers {
        assert!(!alive(pid), "worker {pid} left behind");
    }
    assert_eq!(r.facts, *host.facts());
    serde_json::to_string(&r).unwrap();
}

#[test]
fn stat_readers_time_real_reads() {
    let Some((host, _serial)) = host_or_skip("stat_readers_time_real_reads") else {
        return;
    };
    let cfg = StatReadersConfig {
        groups: vec![30],
        writers: vec![0, 2],
        readers: 2,
        reads_per_reader: 100,
        period: Duration::ZERO,
        writer_pages: 64,
        warmup: Duration::from_millis(20),
        seed: 1,
    };
    let mut writers_seen = Vec::new();
    let mut top = None;
    let r = run_stat_readers_observed(&host, &cfg, &Cancel::new(), &mut |e| match e {
        Event::WorkerStarted { pid, cgroup } => {
            // A churning writer really is in its group while it runs.
            assert!(procs_of(cgroup).contains(&pid));
            writers_seen.push(pid);
        }
        Event::TreeCreated { top: t } => top = Some(t.to_path_buf()),
        _ => {}
    })
    .unwrap();
    assert_eq!(r.cases.len(), 2);
    assert_eq!(writers_seen.len(), 2);
    for c in &r.cases {
        assert_eq!(c.samples_ns.len(), 200);
        assert_eq!(c.latency_ns.count, 200);
        assert!(c.latency_ns.min > 0.0 && c.latency_ns.p50 <= c.latency_ns.p999);
        assert_eq!(c.histogram_ns.iter().map(|b| b.count).sum::<u64>(), 200);
        // A v1 or v2 memory.stat is well over 300 bytes.
        assert!(c.stat_bytes > 300, "{}", c.stat_bytes);
    }
    assert!(!top.unwrap().exists());
    for pid in writers_seen {
        assert!(!alive(pid), "writer {pid} left behind");
    }
}

#[test]
fn stale_read_sees_the_spike_in_the_parent() {
    let Some((host, _serial)) = host_or_skip("stale_read_sees_the_spike_in_the_parent") else {
        return;
    };
    let page = host.facts().page_size as u64;
    let threshold = host.facts().flush_threshold_pages;
    // A spike four times the threshold: the counter must move by it.
    let big_kib = 4 * threshold * page / 1024;
    let cfg = StaleReadConfig {
        spikes_kib: vec![64, big_kib],
        repetitions: 20,
        pause: Duration::ZERO,
        ..Default::default()
    };
    let mut top = None;
    let mut last_step = None;
    let r = run_stale_read_observed(&host, &cfg, &Cancel::new(), &mut |e| match e {
        Event::TreeCreated { top: t } => top = Some(t.to_path_buf()),
        Event::Step { done, total } => last_step = Some((done, total)),
        _ => {}
    })
    .unwrap();
    assert_eq!(last_step, Some((40, 40)));
    assert_eq!(r.threshold_pages, threshold);
    assert_eq!(r.cases.len(), 2);
    for c in &r.cases {
        assert_eq!(c.samples.len(), 20);
        assert_eq!(c.undercharged, 0, "spike not charged to the parent: {c:?}");
        for s in &c.samples {
            // The stat shows between none and all of the spike, never more
            // (give or take the few pages of the worker's own stack).
            assert!(
                (-8..=c.spike_pages as i64 + 8).contains(&s.stat_delta),
                "{s:?}"
            );
            assert_eq!(s.stat_lag_after_charge, c.spike_pages as i64 - s.stat_delta);
        }
    }
    let top = top.unwrap();
    assert!(!top.exists(), "{} left behind", top.display());
}

/// The early break's trap (6.16+): a reader flushing the parent while a
/// spike is charged leaves the parent's count at the threshold; the
/// parent then misses the spike until the periodic flush. Older kernels
/// keep the bound. Needs two CPUs (the reader beside the worker).
///
/// One period of the periodic flush can stretch past 2 s (see
/// [`hostkernel::TWO_PERIODIC_FLUSHES`]): what this test holds the kernel
/// to is that the trap ends by a periodic flush, not by a reader: within
/// two periods, never "forever".
#[test]
fn a_concurrent_reader_traps_the_parent_until_the_periodic_flush() {
    let Some((host, _serial)) =
        host_or_skip("a_concurrent_reader_traps_the_parent_until_the_periodic_flush")
    else {
        return;
    };
    if host.facts().online_cpus < 2 {
        eprintln!("skipped: one CPU, the reader cannot run beside the worker");
        return;
    }
    let release = &host.facts().kernel_release;
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let version: (u32, u32) = (
        it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
        it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
    );
    let threshold = host.facts().flush_threshold_pages;
    let page = host.facts().page_size as u64;
    let cfg = StaleReadConfig {
        spikes_kib: vec![32 * threshold * page / 1024],
        repetitions: 4,
        pause: Duration::from_millis(2),
        concurrent_reader: true,
        follow_ms: 6000.0,
        follow_poll_ms: 5.0,
        follow_repetitions: None,
    };
    let r = run_stale_read(&host, &cfg, &Cancel::new()).unwrap();
    let c = &r.cases[0];
    let trapped: Vec<_> = c
        .samples
        .iter()
        .filter(|s| s.stat_lag_after_charge > threshold as i64)
        .collect();
    assert!(c.samples.iter().all(|s| s.reader_reads > 0), "{c:?}");
    // Every spike is measured from a settled baseline (a stale one would
    // count its own error as the spike's lag, and never catch up).
    let slack = (hostkernel::BASELINE_SLACK_THRESHOLDS * threshold) as i64;
    assert!(
        c.samples.iter().all(|s| s.gap_before.abs() <= slack),
        "{:?}",
        c.samples
    );
    if version >= (6, 16) {
        // A race: each of the charge's ~60 flushes traps the parent when
        // an update lands in its window; for a spike of 32 T the twin
        // predicts ~99.6% a repetition (docs/fidelity.md), so at least
        // one of four.
        assert!(!trapped.is_empty(), "{release}: {:?}", c.samples);
        let stale: Vec<_> = trapped.iter().map(|s| s.stale_for_ms).collect();
        let settle: Vec<_> = c.samples.iter().map(|s| s.settle_ms).collect();
        eprintln!(
            "{release}: trapped samples stale for {stale:.0?} ms; baselines settled in {settle:.0?} ms"
        );
        for s in &trapped {
            let d = s.stale_for_ms.expect("followed");
            assert!(
                !s.follow_timed_out && d <= hostkernel::TWO_PERIODIC_FLUSHES.as_secs_f64() * 1e3,
                "stale past two periods of the periodic flush: {s:?}"
            );
        }
    } else {
        assert!(trapped.is_empty(), "{release}: {:?}", c.samples);
    }
}

/// The trap's measured inputs: the reader's flush passes over the
/// charging CPU (traced with the `cgroup_rstat_locked`/`_unlock`
/// tracepoints, 6.10+) and the parent's share of a pass, with its bounds;
/// the tracefs instance is removed afterwards.
#[test]
fn the_reader_s_flush_passes_are_traced_and_the_share_measured() {
    let Some((host, _serial)) =
        host_or_skip("the_reader_s_flush_passes_are_traced_and_the_share_measured")
    else {
        return;
    };
    if host.facts().online_cpus < 2 {
        eprintln!("skipped: one CPU, the reader cannot run beside the worker");
        return;
    }
    let tracefs = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events/cgroup/cgroup_rstat_locked/id").is_file());
    let Some(tracefs) = tracefs else {
        eprintln!("skipped: no tracefs with the cgroup_rstat_locked tracepoint (Linux 6.10+)");
        return;
    };
    let threshold = host.facts().flush_threshold_pages;
    let page = host.facts().page_size as u64;
    let cfg = StaleReadConfig {
        spikes_kib: vec![2 * threshold * page / 1024],
        // 40, not 12: with 12 the floor below needed 11 traced of 12, and
        // a run beside a loom build and a workspace test traced 4.
        repetitions: 40,
        pause: Duration::from_millis(1),
        concurrent_reader: true,
        follow_ms: 0.0,
        follow_poll_ms: 5.0,
        follow_repetitions: Some(0),
    };
    let r = run_stale_read(&host, &cfg, &Cancel::new()).unwrap();
    let f = r
        .flush_share
        .expect("measured where the passes can be traced");
    assert!(f.samples > 10, "{f:?}");
    assert!(
        f.short_pass_ns > 0.0 && f.long_pass_ns > f.short_pass_ns,
        "{f:?}"
    );
    assert!(f.share_low <= f.share && f.share <= f.share_high, "{f:?}");
    assert!(f.share > 0.0 && f.share < 1.0, "{f:?}");
    let c = &r.cases[0];
    assert!(
        c.samples.iter().all(|s| s.reader_flushes.is_some()),
        "{c:?}"
    );
    assert!(c.samples.iter().all(|s| s.charge_ms > 0.0), "{c:?}");
    for s in &c.samples {
        let n = s.reader_flushes.unwrap();
        assert_eq!(s.first_pass_ns.is_some(), n > 0, "{s:?}");
        assert_eq!(s.later_pass_ns.is_some(), n > 1, "{s:?}");
        // A pass over one CPU of a two-group subtree: more than 100 ns,
        // less than 10 ms.
        assert!(
            s.first_pass_ns.is_none_or(|p| p > 100.0 && p < 1e7),
            "{s:?}"
        );
    }
    // Some repetition gave the race a chance.
    assert!(
        c.samples.iter().any(|s| s.reader_flushes > Some(0)),
        "{c:?}"
    );
    let ours = format!("mmlab-stale-{}-", std::process::id());
    let left: Vec<_> = std::fs::read_dir(tracefs.join("instances"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&ours))
        .collect();
    assert!(left.is_empty(), "tracefs instances left behind: {left:?}");
}

#[test]
fn calibration_measures_every_figure_and_leaves_nothing_behind() {
    let Some((host, _serial)) =
        host_or_skip("calibration_measures_every_figure_and_leaves_nothing_behind")
    else {
        return;
    };
    let cfg = hostkernel::CalibrateConfig {
        pages: 256,
        rounds: 2,
        reads: 30,
        sends: 500,
        count_updates: false,
    };
    let r = hostkernel::run_calibration(&host, &cfg, &Cancel::new()).unwrap();
    assert_eq!(r.faults.len(), 3);
    for f in &r.faults {
        assert!(f.cpu_ns_per_fault > 10.0, "{f:?}");
        assert_eq!(f.updates_per_fault, None);
    }
    assert!(r.read_stat_ns > r.read_syscall_ns * 0.5, "{r:?}");
    assert!(r.stat_items >= 10 && r.send_ns > 100.0, "{r:?}");
    assert!(support::own_subtrees(&host).is_empty());
}

#[test]
fn cancel_from_an_observer_cleans_up_on_the_error_path() {
    let Some((host, _serial)) = host_or_skip("cancel_from_an_observer_cleans_up_on_the_error_path")
    else {
        return;
    };
    let cancel = Cancel::new();
    let mut seen = Vec::new();
    let mut top = None;
    let cfg = StatReadersConfig {
        groups: vec![40],
        writers: vec![1],
        reads_per_reader: 1_000_000,
        ..Default::default()
    };
    let r = run_stat_readers_observed(&host, &cfg, &cancel, &mut |e| match e {
        Event::TreeCreated { top: t } => top = Some(t.to_path_buf()),
        Event::WorkerStarted { pid, .. } => {
            seen.push(pid);
            cancel.cancel();
        }
        _ => {}
    });
    assert!(matches!(r, Err(Error::Interrupted)), "{r:?}");
    let top = top.unwrap();
    assert!(!top.exists(), "{} left behind", top.display());
    assert_eq!(seen.len(), 1);
    assert!(wait_gone(seen[0], Duration::from_secs(2)));
}

#[test]
fn a_panic_mid_run_leaves_nothing_behind() {
    let Some((host, _serial)) = host_or_skip("a_panic_mid_run_leaves_nothing_behind") else {
        return;
    };
    let mut top = None;
    let mut worker = None;
    let cfg = UpdatePathConfig {
        depths: vec![3],
        pages: 256,
        rounds: 1000,
        runs: 1,
        warmup_rounds: 0,
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_update_path_observed(&host, &cfg, &Cancel::new(), &mut |e| match e {
            Event::TreeCreated { top: t } => top = Some(subtree_dirs(t)),
            Event::WorkerStarted { pid, cgroup } => {
                worker = Some(pid);
                top.as_mut().unwrap().push(cgroup.to_path_buf());
                assert!(alive(pid));
                panic!("observer panics while worker {pid} runs");
            }
            _ => {}
        })
    }));
    assert!(r.is_err(), "the panic must propagate");
    let dirs = top.unwrap();
    assert!(dirs.len() >= 2, "{dirs:?}");
    for d in &dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    let pid = worker.unwrap();
    assert!(!alive(pid), "worker {pid} left behind");
}

/// The probe process, killed and reaped however the test ends.
struct Probe(std::process::Child);

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `hostkernel-run update-path` (a few seconds of work) and waits until
/// a worker runs in its subtree.
fn start_probe(host: &Host) -> (Probe, PathBuf, Vec<i32>) {
    let child = Probe(
        Command::new(env!("CARGO_BIN_EXE_hostkernel-run"))
            .arg("update-path")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id() as i32;
    let t = Instant::now();
    loop {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "probe never started a worker"
        );
        if let Some(top) = subtrees_of(host, pid).into_iter().next() {
            let pids: Vec<i32> = subtree_dirs(&top)
                .iter()
                .flat_map(|d| procs_of(d))
                .collect();
            if !pids.is_empty() {
                return (child, top, pids);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_exit(child: &mut Probe, within: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            return st;
        }
        if t.elapsed() > within {
            panic!("probe did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn sigint_mid_run_removes_every_cgroup_and_process() {
    let Some((host, _serial)) = host_or_skip("sigint_mid_run_removes_every_cgroup_and_process")
    else {
        return;
    };
    let (mut child, top, workers) = start_probe(&host);
    signal(child.0.id(), "-INT");
    let st = wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(st.code(), Some(130), "exit status {st:?}");
    assert!(!top.exists(), "{} left behind", top.display());
    assert!(subtrees_of(&host, child.0.id() as i32).is_empty());
    for w in workers {
        assert!(!alive(w), "worker {w} left behind");
    }
}

#[test]
fn kill_9_leaves_a_stale_subtree_that_the_sweep_removes() {
    let Some((host, _serial)) =
        host_or_skip("kill_9_leaves_a_stale_subtree_that_the_sweep_removes")
    else {
        return;
    };
    let (mut child, top, workers) = start_probe(&host);
    signal(child.0.id(), "-KILL");
    wait_exit(&mut child, Duration::from_secs(10));
    // PR_SET_PDEATHSIG: the workers die with their parent.
    for &w in &workers {
        assert!(
            wait_gone(w, Duration::from_secs(5)),
            "worker {w} outlived its parent"
        );
    }
    assert!(
        top.exists(),
        "nothing ran the cleanup, so the subtree must still be there"
    );
    let report = sweep_stale(host.base()).unwrap();
    assert!(report.removed.contains(&top), "{report:?}");
    assert!(!top.exists());
    assert!(top
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with(NAME_PREFIX));
}

#[test]
fn small_default_shapes_run_end_to_end() {
    // The three public entry points without observers, tiny sizes.
    let Some((host, _serial)) = host_or_skip("small_default_shapes_run_end_to_end") else {
        return;
    };
    let c = Cancel::new();
    let u = run_update_path(
        &host,
        &UpdatePathConfig {
            depths: vec![2, 4],
            pages: 128,
            rounds: 2,
            warmup_rounds: 0,
            runs: 1,
        },
        &c,
    )
    .unwrap();
    assert!(u.ratio_depth4_to_depth2.unwrap() > 0.0);
    let s = run_stat_readers(
        &host,
        &StatReadersConfig {
            groups: vec![5],
            writers: vec![1],
            reads_per_reader: 20,
            period: Duration::ZERO,
            warmup: Duration::ZERO,
            ..Default::default()
        },
        &c,
    )
    .unwrap();
    assert_eq!(s.cases[0].samples_ns.len(), 20);
    // Nothing of ours is left under the base (the kernel tests are serial).
    assert!(subtrees_of(&host, std::process::id() as i32).is_empty());
}

/// Runs the probe inside a private mount namespace after `setup` (a shell
/// snippet) and returns (exit code, stderr); `None` if `unshare` is missing.
fn probe_in_namespace(setup: &str) -> Option<(Option<i32>, String)> {
    let script = format!(
        "{setup} && exec {} update-path --small",
        env!("CARGO_BIN_EXE_hostkernel-run")
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .ok()?;
    Some((
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn missing_or_read_only_controller_is_reported_as_a_skip() {
    let Some((host, _serial)) =
        host_or_skip("missing_or_read_only_controller_is_reported_as_a_skip")
    else {
        return;
    };
    let mount = host.controller().mount_point.display().to_string();
    let Some((code, err)) = probe_in_namespace(&format!("umount -l {mount}")) else {
        eprintln!("missing_or_read_only_controller_is_reported_as_a_skip: skipped: no unshare(1)");
        return;
    };
    assert_eq!(code, Some(77), "{err}");
    assert!(
        err.contains("skipped: no memory cgroup controller"),
        "{err}"
    );
    // A read-only bind remount in the private namespace only.
    let (code, err) = probe_in_namespace(&format!("mount -o remount,bind,ro {mount}")).unwrap();
    assert_eq!(code, Some(77), "{err}");
    assert!(
        err.contains(&format!(
            "skipped: memory cgroup controller at {mount} is not writable"
        )),
        "{err}"
    );
    // The host's own mount is untouched.
    assert!(Host::detect().is_ok());
}
