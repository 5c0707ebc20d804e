//! The pre-run estimate against the CPU time of the run it estimates.
//!
//! * `the_estimate_holds_on_a_sample` (CI): a few short scenarios whose
//!   flush work the policy decides, each estimated and run under the
//!   policies at both ends of the knobs, within 3x of its CPU time at the
//!   rates the probes measure here.
//! * `estimate_table` (ignored; the table in `docs/estimates.md`): every
//!   built-in simulated scenario under every policy it accepts, the user
//!   policies of `scenarios/policies/` and of `extreme-policies.toml` on
//!   the scenarios that run flush policies, and `stat-readers` with
//!   1,000,000 readers. Regenerate with
//!
//!   ```sh
//!   cargo test --release -p sim --test it estimate_table -- --ignored --nocapture
//!   ```
//!
//!   which prints the table (and writes it to `target/estimate-table.md`);
//!   `MMLAB_TABLE_ONLY=stat-readers,refault-storm` runs only the rows of
//!   those scenarios, `MMLAB_TABLE_MAX_S` (default 300) is the most CPU
//!   seconds one row may be estimated at to be run.

use lab::estimate::{measure_rates, spin, REFERENCE_SPEED};
use lab::{Context, Overrides, PolicyFile, Rates, RunOptions, Scenario, UserPolicy};
use simcore::clock::CpuTimer;
use std::fmt::Write as _;
use std::time::Duration;

/// The factor every row must be within.
const WITHIN: f64 = 3.0;

/// The user policies at the ends of the knobs.
const EXTREME: &str = include_str!("extreme-policies.toml");

/// The host's rates (its probes run here) and its loop's speed per CPU
/// second now: estimates in CPU seconds of this host.
struct Host {
    rates: Rates,
    loop_per_cpu_s: f64,
}

impl Host {
    fn measure() -> Host {
        let ctx = Context::default();
        let per_class = measure_rates(&sim::catalog(), &ctx).expect("the probes run");
        let (_, loop_per_cpu_s) = spin(Duration::from_millis(300));
        Host {
            rates: Rates {
                per_class,
                ..Rates::default()
            },
            loop_per_cpu_s,
        }
    }

    /// `sc`'s estimated CPU seconds on this host.
    fn estimate(&self, sc: &Scenario) -> f64 {
        sc.estimate(&Context::default()).cpu_seconds(&self.rates) * REFERENCE_SPEED
            / self.loop_per_cpu_s
    }
}

/// `sc` run once, on this thread: its CPU seconds at the loop speed the
/// rates were measured at (the loop's speed is measured around the run,
/// as around the probes: a run beside a busy hyperthread sibling counts at
/// full speed).
fn cpu_seconds(host: &Host, sc: &Scenario) -> f64 {
    let opts = RunOptions::default();
    let (_, before) = spin(Duration::from_millis(20));
    let t = CpuTimer::start();
    let report = sc
        .run(&opts, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", sc.name()));
    let s = t.elapsed_ns() / 1e9;
    let (_, after) = spin(Duration::from_millis(20));
    let s = s * (before + after) / 2.0 / host.loop_per_cpu_s;
    if std::env::var_os("MMLAB_TABLE_DEBUG").is_some() {
        for (p, r) in &report.policies {
            for (m, v) in &r.metrics {
                let mean = v.values.iter().sum::<f64>() / v.values.len().max(1) as f64;
                eprintln!("  {p} {m} = {mean:.4e}");
            }
        }
    }
    s
}

/// `sc` under `policy` alone, one run.
fn one(sc: &Scenario, policy: &str) -> Scenario {
    let mut s = sc.clone();
    s.apply(&Overrides {
        policies: vec![policy.to_string()],
        runs: Some(1),
        ..Overrides::default()
    });
    s
}

fn extreme() -> Vec<UserPolicy> {
    PolicyFile::parse("extreme-policies.toml", EXTREME)
        .expect("the extreme policies parse")
        .policy
}

/// One row: `(scenario, policy, estimated CPU s, measured CPU s)`, the
/// measurement `None` when the estimate is over `max_s`.
type Row = (String, String, f64, Option<f64>);

fn row(host: &Host, label: &str, sc: &Scenario, policy: &str, max_s: f64) -> Row {
    let s = one(sc, policy);
    let est = host.estimate(&s);
    let measured = (est <= max_s).then(|| cpu_seconds(host, &s));
    let r = (label.to_string(), policy.to_string(), est, measured);
    eprintln!("{}", line(&r));
    r
}

fn ratio(r: &Row) -> Option<f64> {
    r.3.map(|m| m / r.2.max(1e-9))
}

fn line(r: &Row) -> String {
    match (r.3, ratio(r)) {
        (Some(m), Some(q)) => format!(
            "| `{}` | `{}` | {:.2} s | {:.2} s | {:.2}x |",
            r.0, r.1, r.2, m, q
        ),
        _ => format!("| `{}` | `{}` | {:.0} s | not run | |", r.0, r.1, r.2),
    }
}

/// A small stat-readers (the probes' shape, shorter) and a short storm:
/// the workloads whose flush work the policy decides.
const SAMPLE_READERS: &str = r#"
kind = "stats"
name = "sample-readers"
workload = "stat-readers"
mode = "sim"
policies = ["hierstat"]
runs = 1
seed = 3
duration_ms = 40
cpus = 64

[tree]
fanout = [8, 20]

[writers]
rate_per_cpu = 4000.0
targets = "leaves"
pages = [1, 8]
uncharge_fraction = 0.3
items = 8
burst = 4

[readers]
count = 400
period_ms = 10.0
targets = "all"
items = 8
"#;

const SAMPLE_STORM: &str = r#"
name = "sample-storm"
kind = "refault"
mode = "sim"
runs = 1
seed = 3
policies = ["hierstat"]

[refault]
cpus = 48
nodes = 2
duration_ms = 150
warmup_ms = 50
services = 60

[refault.background]
updates_per_sec_per_cpu = 12000.0
burst = 8
"#;

/// The sample: each workload under the policies that flush least and
/// most (and a preset between), estimated within 3x of its CPU time.
#[test]
fn the_estimate_holds_on_a_sample() {
    let host = Host::measure();
    let mut rows = Vec::new();
    for text in [SAMPLE_READERS, SAMPLE_STORM] {
        let mut sc = sim::catalog().parse("sample.toml", text).unwrap();
        sc.add_policies(&extreme()).unwrap();
        for p in [
            "linux-5.13",
            "linux-6.8",
            "root-every-page",
            "huge-threshold",
        ] {
            if sc.known_policies().iter().any(|k| k == p) {
                rows.push(row(&host, sc.name(), &sc, p, f64::INFINITY));
            }
        }
    }
    let off: Vec<String> = rows
        .iter()
        .filter(|r| ratio(r).is_some_and(|q| !(1.0 / WITHIN..=WITHIN).contains(&q)))
        .map(line)
        .collect();
    assert!(
        off.is_empty(),
        "off by more than {WITHIN}x:\n{}",
        off.join("\n")
    );
}

/// The table of `docs/estimates.md` (see the module documentation).
#[test]
#[ignore = "runs every built-in simulated scenario under every policy (minutes); see the module docs"]
fn estimate_table() {
    let only: Option<Vec<String>> = std::env::var("MMLAB_TABLE_ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let max_s: f64 = std::env::var("MMLAB_TABLE_MAX_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300.0);
    let wanted = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|n| n == name));
    let host = Host::measure();
    let catalog = sim::catalog();
    let mut user = extreme();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/policies");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("scenarios/policies")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        user.extend(
            PolicyFile::parse(&f.display().to_string(), &text)
                .unwrap()
                .policy,
        );
    }
    let mut rows = Vec::new();
    for name in catalog.builtin_names() {
        let mut sc = catalog.builtin(name).unwrap().unwrap();
        if sc.mode() != lab::report::Mode::Sim || !wanted(name) {
            continue;
        }
        for p in sc.known_policies() {
            rows.push(row(&host, name, &sc, &p, max_s));
        }
        if sc.add_policies(&user).is_ok() {
            for u in &user {
                rows.push(row(&host, name, &sc, u.name(), max_s));
            }
        }
    }
    if wanted("stat-readers-1m") {
        let (_, text) = catalog
            .builtins()
            .find(|(n, _)| *n == "stat-readers")
            .unwrap();
        let big = text.replace("count = 20000", "count = 1000000");
        assert_ne!(big, *text, "the readers' count is replaced");
        let sc = catalog.parse("stat-readers-1m", &big).unwrap();
        for p in sc.policies().to_vec() {
            rows.push(row(
                &host,
                "stat-readers, 1,000,000 readers",
                &sc,
                &p,
                max_s,
            ));
        }
    }
    let mut md = String::from(
        "| scenario | policy | estimated CPU | measured CPU | measured / estimated |\n\
         |---|---|---|---|---|\n",
    );
    for r in &rows {
        let _ = writeln!(md, "{}", line(r));
    }
    println!("{md}");
    let out = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/estimate-table.md"
    );
    std::fs::write(out, &md).unwrap();
    let off: Vec<String> = rows
        .iter()
        .filter(|r| ratio(r).is_some_and(|q| !(1.0 / WITHIN..=WITHIN).contains(&q)))
        .map(line)
        .collect();
    assert!(
        off.is_empty(),
        "off by more than {WITHIN}x:\n{}",
        off.join("\n")
    );
}

/// Calibration runs: every `*.toml` of `$MMLAB_RUNS_DIR`, each policy
/// alone, the least CPU time of `$MMLAB_RUNS_REPEAT` runs (default 2) and
/// the run's counted work.
#[test]
#[ignore = "a calibration aid: runs the scenarios of $MMLAB_RUNS_DIR"]
fn estimate_runs() {
    let Some(dir) = std::env::var_os("MMLAB_RUNS_DIR") else {
        return;
    };
    let repeat: usize = std::env::var("MMLAB_RUNS_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let host = Host::measure();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for f in files {
        // The extreme policies may be named in the file's list.
        let text = std::fs::read_to_string(&f).unwrap() + "\n" + EXTREME;
        let sc = sim::catalog()
            .parse(&f.display().to_string(), &text)
            .unwrap();
        for p in sc.policies().to_vec() {
            let s = one(&sc, &p);
            let est = host.estimate(&s);
            let mut best = f64::INFINITY;
            let mut report = None;
            for _ in 0..repeat {
                let opts = RunOptions::default();
                let (_, before) = spin(Duration::from_millis(20));
                let t = CpuTimer::start();
                let r = s.run(&opts, &mut |_| {}).unwrap();
                let cpu = t.elapsed_ns() / 1e9;
                let (_, after) = spin(Duration::from_millis(20));
                // At the loop speed measured with the rates.
                let cpu = cpu * (before + after) / 2.0 / host.loop_per_cpu_s;
                if cpu < best {
                    best = cpu;
                    report = Some(r);
                }
            }
            // The model's nanoseconds, before any rate.
            let ns = s.estimate(&Context::default()).work / 1e9;
            let mut line = format!(
                "RUN {} {p} cpu={best:.3} est={est:.3} model={ns:.3}",
                f.file_stem().unwrap().to_string_lossy()
            );
            for (_, r) in &report.unwrap().policies {
                for (m, v) in &r.metrics {
                    let mean = v.values.iter().sum::<f64>() / v.values.len().max(1) as f64;
                    if !m.ends_with("latency_ns") {
                        let _ = write!(line, " {m}={mean:.4e}");
                    }
                }
            }
            println!("{line}");
        }
    }
}
