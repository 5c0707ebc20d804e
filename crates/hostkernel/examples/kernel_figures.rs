//! Runs the three kernel-mode experiments on this host with modest sizes and
//! prints a readable summary.
//!
//! ```sh
//! cargo run --release -p hostkernel --example kernel_figures            # full (~40 s)
//! cargo run --release -p hostkernel --example kernel_figures -- --quick # ~5 s
//! cargo run --release -p hostkernel --example kernel_figures -- --json out.json
//! # one experiment, other sizes:
//! cargo run --release -p hostkernel --example kernel_figures -- --only update-path --pages 256 --runs 9
//! ```
//!
//! Needs root and a writable memory cgroup controller (v1 or v2); prints
//! "skipped: <reason>" otherwise. Ctrl-C stops it cleanly.

use std::process::ExitCode;

use hostkernel::{
    run_stale_read, run_stat_readers, run_update_path, Cancel, GapSummary, Host, StaleReadConfig,
    StatReadersConfig, UpdatePathConfig,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let json_path = value("--json");
    let opts = Options {
        quick,
        only: value("--only"),
        pages: value("--pages").and_then(|v| v.parse().ok()),
        runs: value("--runs").and_then(|v| v.parse().ok()),
    };
    let host = match Host::detect() {
        Ok(h) => h,
        Err(e) if e.is_host_unsupported() => {
            println!("skipped: {e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cancel = match hostkernel::signals::install(None) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&host, &cancel, &opts, json_path.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(hostkernel::Error::Interrupted) => {
            eprintln!("interrupted; every cgroup and worker was removed");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Command-line choices.
struct Options {
    quick: bool,
    only: Option<String>,
    pages: Option<usize>,
    runs: Option<usize>,
}

impl Options {
    fn wants(&self, name: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == name)
    }
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

fn gap_line(name: &str, g: &GapSummary) -> String {
    format!(
        "{name:>14}: min {:>5}  max {:>5}  p99|gap| {:>5}  mean {:>7.1}  >T {:>3}  >2T {:>3}",
        g.min, g.max, g.abs.p99, g.mean, g.over_threshold, g.over_twice_threshold
    )
}

fn run(
    host: &Host,
    cancel: &Cancel,
    opts: &Options,
    json_path: Option<&str>,
) -> Result<(), hostkernel::Error> {
    let quick = opts.quick;
    let mut all = serde_json::Map::new();
    let f = host.facts();
    println!(
        "host: Linux {} ({}), cgroup {} memory controller at {}, {} online CPUs, page {} B, THP {}",
        f.kernel_release,
        f.machine,
        f.cgroup_version,
        f.memory_mount.display(),
        f.online_cpus,
        f.page_size,
        f.thp_mode.as_deref().unwrap_or("n/a")
    );
    println!(
        "documented flush threshold: MEMCG_CHARGE_BATCH {} x {} CPUs = {} pages\n",
        f.charge_batch, f.online_cpus, f.flush_threshold_pages
    );

    // 1. update path
    if opts.wants("update-path") {
        let mut up = UpdatePathConfig::default();
        if quick {
            up.pages = 1024;
            up.rounds = 5;
            up.runs = 2;
        }
        up.pages = opts.pages.unwrap_or(up.pages);
        up.runs = opts.runs.unwrap_or(up.runs);
        println!(
        "== update-path: mmap {} pages, touch each, munmap; {} rounds (+{} warm-up) x {} runs per depth",
        up.pages, up.rounds, up.warmup_rounds, up.runs
    );
        let u = run_update_path(host, &up, cancel)?;
        println!(
            "{:>5}  {:>14} {:>7}  {:>14} {:>7}  {:>10}  {:>10}",
            "depth", "wall ns/fault", "min", "CPU ns/fault", "min", "touch CPU", "faults/s"
        );
        for d in &u.depths {
            println!(
                "{:>5}  {:>7.0} ±{:>5.0} {:>7.0}  {:>7.0} ±{:>5.0} {:>7.0}  {:>10.0}  {:>10.0}",
                d.depth,
                d.ns_per_fault_mean,
                d.ns_per_fault_stddev,
                d.ns_per_fault_min,
                d.cpu_ns_per_fault_mean,
                d.cpu_ns_per_fault_stddev,
                d.cpu_ns_per_fault_min,
                d.cpu_ns_per_fault_touch_mean,
                d.faults_per_sec_mean
            );
        }
        println!(
            "(ns/fault = one page's share of mmap + touch + munmap; touch CPU = the faults alone)"
        );
        if let (Some(s), Some(p)) = (u.slope_ns_per_level, u.slope_pct_per_level) {
            println!(
                "slope, wall: {s:+.1} ns per level ({p:+.2}% of the shallowest depth per level)"
            );
        }
        if let (Some(s), Some(p)) = (u.slope_cpu_ns_per_level, u.slope_cpu_pct_per_level) {
            println!(
                "slope, CPU:  {s:+.1} ns per level ({p:+.2}% of the shallowest depth per level)"
            );
        }
        if let (Some(r), Some(c)) = (u.ratio_depth4_to_depth2, u.cpu_ratio_depth4_to_depth2) {
            println!(
                "faults/s depth 4 / depth 2: wall {r:.3} ({:+.1}%), CPU {c:.3} ({:+.1}%)",
                (r - 1.0) * 100.0,
                (c - 1.0) * 100.0
            );
        }
        println!();
        all.insert(
            "update_path".into(),
            serde_json::to_value(&u).unwrap_or_default(),
        );
    }

    // 2. stat readers
    if opts.wants("stat-readers") {
        let mut sr = StatReadersConfig::default();
        if quick {
            sr.groups = vec![200];
            sr.reads_per_reader = 500;
        }
        println!(
        "== stat-readers: {} reader(s) x {} reads of a random group's memory.stat, {:?} apart; writers churn {} pages",
        sr.readers, sr.reads_per_reader, sr.period, sr.writer_pages
    );
        let s = run_stat_readers(host, &sr, cancel)?;
        println!(
            "{:>6} {:>7}  {:>7} {:>7} {:>7} {:>7}  {:>5}  {:>8} {:>8}  (µs)",
            "groups", "writers", "p50", "p99", "p99.9", "max", ">1ms", "CPU p50", "CPU p99.9"
        );
        for c in &s.cases {
            let l = &c.latency_ns;
            println!(
                "{:>6} {:>7}  {:>7} {:>7} {:>7} {:>7}  {:>5}  {:>8} {:>8}",
                c.groups,
                c.writers,
                us(l.p50),
                us(l.p99),
                us(l.p999),
                us(l.max),
                c.over_1ms,
                us(c.cpu_ns.p50),
                us(c.cpu_ns.p999)
            );
        }
        if let Some(c) = s.cases.last() {
            println!(
                "\nread latency histogram, {} groups, {} writers (funclatency style):",
                c.groups, c.writers
            );
            println!("{:>21} : {:<6} distribution", "usecs", "count");
            let samples_us: Vec<u64> = c.samples_ns.iter().map(|n| n / 1000).collect();
            let hist = simcore::stats::Log2Histogram::of(&samples_us).nonempty_range();
            let top = hist.iter().map(|b| b.count).max().unwrap_or(1).max(1);
            for b in hist {
                let bar = "*".repeat(((b.count * 40) / top) as usize);
                println!("{:>10} -> {:<8} : {:<6} |{:<40}|", b.lo, b.hi, b.count, bar);
            }
        }
        println!(
            "group creation: {:?} s",
            s.setup_s
                .iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
        println!();
        all.insert(
            "stat_readers".into(),
            serde_json::to_value(&s).unwrap_or_default(),
        );
    }

    // 3. stale read
    if opts.wants("stale-read") {
        let mut st = StaleReadConfig::default();
        if quick {
            st.repetitions = 50;
        }
        println!(
        "== stale-read: spike in a leaf, then the parent's memory.stat read at once; {} repetitions, {:?} apart",
        st.repetitions, st.pause
    );
        let t = run_stale_read(host, &st, cancel)?;
        println!(
            "gap = ({}) - ({}) in pages; threshold T = {} pages",
            t.counter_files.join(" - "),
            t.stat_keys.join(" + "),
            t.threshold_pages
        );
        for c in &t.cases {
            println!(
                "spike {} KiB ({} pages){}",
                c.spike_kib,
                c.spike_pages,
                if c.undercharged > 0 {
                    format!("  [{} undercharged repetitions]", c.undercharged)
                } else {
                    String::new()
                }
            );
            println!("{}", gap_line("before", &c.before));
            println!("{}", gap_line("after charge", &c.after_charge));
            println!("{}", gap_line("after free", &c.after_free));
            println!("{}", gap_line("stat lag (chg)", &c.stat_lag_after_charge));
            println!("{}", gap_line("stat lag (free)", &c.stat_lag_after_free));
            if let Some(w) = c.longest_stale_window {
                println!(
                "{:>14}: {} consecutive repetitions from #{} over {:.0} ms missed > T pages (max {})",
                "beyond T", w.repetitions, w.first, w.duration_ms, w.max_lag
            );
            }
        }
        all.insert(
            "stale_read".into(),
            serde_json::to_value(&t).unwrap_or_default(),
        );
    }
    if let Some(p) = json_path {
        match std::fs::write(p, serde_json::to_string_pretty(&all).unwrap_or_default()) {
            Ok(()) => println!("\nJSON written to {p}"),
            Err(e) => eprintln!("cannot write {p}: {e}"),
        }
    }
    Ok(())
}
