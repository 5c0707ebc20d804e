//! Fixtures shared by the integration tests.

// Each test binary uses its own part of the fixtures.
#![allow(dead_code)]

pub mod sample;

use lab::report::{Mode, PolicyResult, RunReport};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{ChildStderr, Command, Output, Stdio};

/// The binary under test, its standard input closed.
pub fn mmlab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmlab"));
    c.stdin(Stdio::null());
    c
}

/// `mmlab ARGS` run in `dir`.
pub fn mmlab_in(dir: &Path, args: &[&str]) -> Output {
    mmlab()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("mmlab runs")
}

/// The run's standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The run's standard output, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The text of built-in scenario `name`.
pub fn builtin_text(name: &str) -> &'static str {
    mmlab::pipeline::input::catalog()
        .builtins()
        .find(|(n, _)| *n == name)
        .expect("a built-in scenario")
        .1
}

/// The arguments of a short run: `run SCENARIO --duration-ms MS --runs 1`,
/// then `extra`.
pub fn short_run<'a>(scenario: &'a str, ms: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["run", scenario, "--duration-ms", ms, "--runs", "1"];
    v.extend_from_slice(extra);
    v
}

/// A stat-readers scenario small enough for a debug build (the base of
/// the usability and fuzz tests' sweeps and runs).
pub const TINY_READERS: &str = r#"
kind = "stats"
name = "tiny-readers"
workload = "stat-readers"
mode = "sim"
policies = ["linux-6.8"]
runs = 1
seed = 1
duration_ms = 20
cpus = 8

[tree]
fanout = [3, 4]

[writers]
rate_per_cpu = 4000.0
targets = "leaves"
pages = [1, 8]
items = 4
burst = 4

[readers]
count = 40
period_ms = 5.0
targets = "all"
items = 4
"#;

/// [`TINY_READERS`] with a periodic flusher (every 20 ms): the base of the
/// fuzz tests' policy and sweep cases and of the sweep tests.
pub fn tiny_flushed() -> String {
    format!("{TINY_READERS}\n[flusher]\nperiod_ms = 20\n")
}

/// A sweep of `tiny.toml` (a tiny scenario beside it): one knob value
/// beside one preset, two seeds (four jobs).
pub const TINY_SWEEP: &str = r#"
[sweep]
name = "tiny"
scenario = "tiny.toml"
seeds = [1, 2]
base = "hierstat"
presets = ["linux-6.8"]
duration_ms = 20

[sweep.knobs]
pages_per_shard = [16]
"#;

/// A stub `mmlab` at `dir/mmlab`: it appends its arguments (each followed
/// by a NUL byte, then a newline) to `log` (a relative path: in the folder
/// it runs in) and creates the `--db` file it is given, as a job would.
pub fn mmlab_stub(dir: &Path, log: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("mmlab");
    std::fs::write(
        &p,
        format!(
            "#!/bin/bash\nprintf '%s\\0' \"$@\" >> '{log}'\nprintf '\\n' >> '{log}'\n\
             while [ $# -gt 0 ]; do if [ \"$1\" = --db ]; then : > \"$2\"; fi; shift; done\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The argument lists a stub `mmlab` ([`mmlab_stub`]) logged in `log`,
/// one list per call.
pub fn stub_calls(log: &Path) -> Vec<Vec<Vec<u8>>> {
    std::fs::read(log)
        .unwrap_or_default()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(<[u8]>::to_vec)
                .collect()
        })
        .collect()
}

/// A kernel-mode report as stored: the built-in `update-path-kernel`
/// scenario's text and four of its metrics (wall and CPU time per fault,
/// the prediction).
pub fn kernel_report() -> RunReport {
    let sc = mmlab::pipeline::input::catalog()
        .builtin("update-path-kernel")
        .unwrap()
        .unwrap();
    let mut host = PolicyResult::default();
    host.push("ns_per_fault_depth1", "ns", 3000.0, false);
    host.push("ns_per_fault_depth2", "ns", 3100.0, false);
    host.push("cpu_ns_per_fault_depth1", "ns", 2500.0, false);
    host.push("predicted_ns_per_fault_depth1", "ns", 2700.0, false);
    RunReport {
        scenario: sc.name().into(),
        mode: Mode::Kernel,
        runs: 1,
        seed: 1,
        scenario_toml: sc.source(),
        policy_order: vec!["host".into()],
        policies: [("host".to_string(), host)].into_iter().collect(),
        facts: Default::default(),
    }
}

/// Reads a child's stderr line by line until a line contains `want`;
/// returns what it read. Panics if stderr ends first.
pub fn stderr_until(err: &mut BufReader<ChildStderr>, want: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).unwrap();
        assert!(n > 0, "stderr ended before {want:?}:\n{seen}");
        seen.push_str(&line);
        if line.contains(want) {
            return seen;
        }
    }
}
