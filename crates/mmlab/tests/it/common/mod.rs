//! Fixtures shared by the integration tests.

// Each test binary uses its own part of the fixtures.
#![allow(dead_code)]

pub mod sample;

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
