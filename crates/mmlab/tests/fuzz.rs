//! A seeded mutator over the built-in scenario files: every case is a full
//! `mmlab run FILE` in its own process, bounded in time (a watchdog kills a
//! case past [`CASE_LIMIT`]) and in memory (`ulimit -v`), with the pre-run
//! limits lowered (`--max-events` and friends) so that an accepted case
//! stays small. It asserts no panic (exit 101), no signal (an abort from an
//! allocation failure), no hang and a peak resident size under
//! [`RSS_LIMIT_KIB`], and prints its counts:
//!
//! ```text
//! cargo test -p mmlab --test fuzz -- --nocapture
//! ```
//!
//! `MMLAB_FUZZ_CASES` and `MMLAB_FUZZ_SEED` change the number of cases
//! (default 1000) and the seed; `MMLAB_FUZZ_KEEP=N` copies case N's file
//! to `/tmp/mmlab-fuzz-kept.toml`.

use simcore::Rng;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall-clock limit of one case.
const CASE_LIMIT: Duration = Duration::from_secs(30);
/// Address-space limit of one case (`ulimit -v`, KiB).
const VMEM_LIMIT_KIB: u64 = 4 << 20;
/// Peak resident size allowed for one case (KiB).
const RSS_LIMIT_KIB: u64 = 1 << 20;

/// The workspace's one RNG, drawing indices below `n`.
fn below(rng: &mut Rng, n: usize) -> usize {
    rng.below(n.max(1) as u64) as usize
}

/// A built-in scenario shrunk so that an unmutated run takes a moment:
/// shorter, fewer CPUs, smaller buffers. Keys are matched by name.
fn shrink(text: &str) -> String {
    const RULES: &[(&str, &str)] = &[
        ("runs", "1"),
        ("duration_ms", "20"),
        ("warmup_ms", "10"),
        ("cpus", "8"),
        ("threads", "2"),
        ("count", "20"),
        ("fanout", "[10, 3]"),
        ("buffer_mib", "32"),
        ("passes", "3"),
        ("cpus_per_node", "4"),
        ("duration_s", "2"),
        ("set1_threads", "1"),
        ("set2_threads", "1"),
        ("set3_threads", "1"),
        ("vma_x_mib", "8"),
        ("vma_y_mib", "16"),
        ("vma_z_mib", "8"),
        ("vma_w_mib", "8"),
        ("vma_v_mib", "8"),
        ("d_start_s", "1"),
        ("late_s", "1"),
        ("services", "10"),
        ("services_per_cpu", "4"),
        ("updates_per_sec_per_cpu", "1000.0"),
        ("premap_passes", "1"),
    ];
    let mut out = String::new();
    let mut in_refault_workload = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_refault_workload = line.trim() == "[refault.workload]";
        }
        let mut l = line.to_string();
        for (key, value) in RULES {
            let is_key = line
                .trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='));
            if is_key {
                l = format!("{key} = {value}");
            }
        }
        if in_refault_workload && line.starts_with("cpus") {
            l = "cpus = 4".into();
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "1e9",
    "1e15",
    "1e300",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "1.5",
    "nan",
    "inf",
    "-0.0",
    "65536",
    "\"x\"",
    "[]",
    "true",
];

/// One mutation of `text`, as bytes (some mutations make it invalid UTF-8).
fn mutate(rng: &mut Rng, text: &str) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len();
    match below(rng, 11) {
        // A number replaced by an extreme or an ill-typed value.
        0..=3 => {
            let numeric: Vec<usize> = (0..n)
                .filter(|&i| {
                    lines[i].split_once('=').is_some_and(|(_, v)| {
                        v.trim()
                            .starts_with(|c: char| c.is_ascii_digit() || c == '[')
                    })
                })
                .collect();
            if let Some(&i) = numeric.get(below(rng, numeric.len())) {
                let (k, v) = lines[i].split_once('=').unwrap();
                let v = v.trim();
                let new = if v.starts_with('[') {
                    let a = VALUES[below(rng, VALUES.len())];
                    let b = VALUES[below(rng, VALUES.len())];
                    format!("[{a}, {b}]")
                } else if below(rng, 2) == 0 {
                    // Scale the current value.
                    let x: f64 = v.replace('_', "").parse().unwrap_or(1.0);
                    let f = [0.5, 2.0, 10.0, 1000.0][below(rng, 4)];
                    if v.contains('.') {
                        format!("{:?}", x * f)
                    } else {
                        format!("{}", (x * f) as i64)
                    }
                } else {
                    VALUES[below(rng, VALUES.len())].to_string()
                };
                lines[i] = format!("{k}= {new}");
            }
        }
        // A line removed or duplicated.
        4 => {
            if n > 0 {
                lines.remove(below(rng, n));
            }
        }
        5 => {
            if n > 0 {
                let i = below(rng, n);
                let l = lines[i].clone();
                lines.insert(i, l);
            }
        }
        // A string replaced by a huge one, control characters or nothing.
        6 => {
            let strings: Vec<usize> = (0..n).filter(|&i| lines[i].contains("= \"")).collect();
            if let Some(&i) = strings.get(below(rng, strings.len())) {
                let (k, _) = lines[i].split_once('=').unwrap();
                let v = match below(rng, 4) {
                    0 => "y".repeat(20_000 + below(rng, 60_000)),
                    1 => "a\\u0007b\\u001b[31mc\\n".to_string(),
                    2 => String::new(),
                    _ => "v99".to_string(),
                };
                lines[i] = format!("{k}= \"{v}\"");
            }
        }
        // The kind switched.
        7 => {
            for l in &mut lines {
                if l.starts_with("kind") {
                    let k = ["stats", "numab", "refault", "nope"][below(rng, 4)];
                    *l = format!("kind = \"{k}\"");
                    break;
                }
            }
        }
        // An unknown key, a duplicated policy, a flipped boolean.
        8 => {
            let i = below(rng, n + 1);
            lines.insert(i.min(n), "bogus_key = 3".to_string());
        }
        9 => {
            for l in &mut lines {
                if l.starts_with("policies") {
                    *l = l.replacen('[', "[\"hierstat\", \"hierstat\", ", 1);
                } else if l.contains("= true") {
                    *l = l.replace("= true", "= false");
                }
            }
        }
        // Bytes: truncated, or one byte replaced (often invalid UTF-8).
        _ => {
            let mut b = lines.join("\n").into_bytes();
            if below(rng, 2) == 0 {
                b.truncate(below(rng, b.len()));
            } else if !b.is_empty() {
                let i = below(rng, b.len());
                b[i] = [0xff, 0x00, b'[', b'"', b'=', b'\n'][below(rng, 6)];
            }
            return b;
        }
    }
    let mut s = lines.join("\n");
    s.push('\n');
    s.into_bytes()
}

/// Peak resident size of the largest waited-for child so far (KiB).
#[allow(unsafe_code)] // getrusage(2): no safe wrapper in the dependencies
fn children_max_rss_kib() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given; RUSAGE_CHILDREN
    // is a valid `who`.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) == 0 {
            ru.ru_maxrss.max(0) as u64
        } else {
            0
        }
    }
}

struct Outcome {
    code: Option<i32>,
    elapsed: Duration,
    stderr: String,
}

fn run_case(dir: &Path, file: &Path) -> Outcome {
    let script = format!(
        "ulimit -v {VMEM_LIMIT_KIB} 2>/dev/null; exec {} run {} --no-store --json - \
         --max-events 2e5 --max-memory-mib 256 --max-seconds 2",
        env!("CARGO_BIN_EXE_mmlab"),
        file.display()
    );
    let t = Instant::now();
    // stderr goes to a file: a pipe read only after the exit would block a
    // child that writes more than the pipe holds.
    let err_path = dir.join("stderr.txt");
    let err_file = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .expect("sh runs");
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if t.elapsed() > CASE_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome {
                code: None,
                elapsed: t.elapsed(),
                stderr: "killed: past the per-case limit (a hang)".into(),
            };
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = child.wait().expect("wait");
    let stderr = std::fs::read(&err_path).unwrap_or_default();
    Outcome {
        code: status.code(),
        elapsed: t.elapsed(),
        stderr: String::from_utf8_lossy(&stderr).chars().take(400).collect(),
    }
}

#[test]
fn mutated_scenarios_never_panic_hang_or_exhaust_memory() {
    let cases: usize = std::env::var("MMLAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let seed: u64 = std::env::var("MMLAB_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(13);
    let dir = tempfile::tempdir().unwrap();
    let catalog = mmlab::pipeline::input::catalog();
    let bases: Vec<(&str, String)> = catalog
        .builtins()
        .map(|(n, t)| {
            let small = shrink(t);
            // Keep the original where the shrunk file does not parse.
            let text = match catalog.parse(n, &small) {
                Ok(_) => small,
                Err(e) => {
                    eprintln!("fuzz: {n} kept at full size ({e})");
                    t.to_string()
                }
            };
            (n, text)
        })
        .collect();
    if std::env::var_os("MMLAB_FUZZ_BASES").is_some() {
        for (name, text) in &bases {
            let f = dir.path().join(format!("{name}.toml"));
            std::fs::write(&f, text).unwrap();
            let o = run_case(dir.path(), &f);
            eprintln!(
                "base {name}: {:?} {:.2} s {}",
                o.code,
                o.elapsed.as_secs_f64(),
                o.stderr
            );
        }
    }
    let mut rng = Rng::new(seed);
    let (mut accepted, mut rejected) = (0usize, 0usize);
    let mut slowest = (Duration::ZERO, String::new());
    let mut largest = (0u64, String::new());
    let mut failures = Vec::new();
    let started = Instant::now();
    for case in 0..cases {
        let (name, base) = &bases[below(&mut rng, bases.len())];
        let mut bytes = base.clone().into_bytes();
        for _ in 0..1 + below(&mut rng, 2) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            bytes = mutate(&mut rng, &text);
        }
        let file = dir.path().join(format!("case{case}.toml"));
        std::fs::write(&file, &bytes).unwrap();
        let before = children_max_rss_kib();
        let o = run_case(dir.path(), &file);
        let after = children_max_rss_kib();
        let label = format!("case {case} (from {name})");
        if after > before && after > largest.0 {
            largest = (after, label.clone());
        }
        if o.elapsed > slowest.0 {
            slowest = (o.elapsed, label.clone());
        }
        match o.code {
            Some(0) => accepted += 1,
            Some(1) => rejected += 1,
            other => {
                let kept = dir.path().join(format!("failed{case}.toml"));
                let _ = std::fs::copy(&file, &kept);
                failures.push(format!("{label}: exit {other:?}: {}", o.stderr));
            }
        }
        if o.code == Some(1) && o.stderr.contains("panicked") {
            failures.push(format!("{label}: {}", o.stderr));
        }
        if std::env::var("MMLAB_FUZZ_KEEP").is_ok_and(|k| k == case.to_string()) {
            let _ = std::fs::copy(&file, "/tmp/mmlab-fuzz-kept.toml");
        }
        let _ = std::fs::remove_file(&file);
    }
    eprintln!(
        "fuzz: {cases} cases (seed {seed}) in {:.1} s: {rejected} rejected, {accepted} accepted; \
         slowest {:.2} s ({}); largest peak RSS {} MiB ({})",
        started.elapsed().as_secs_f64(),
        slowest.0.as_secs_f64(),
        slowest.1,
        largest.0 >> 10,
        largest.1
    );
    if !failures.is_empty() {
        // Keep the failing files for a look.
        let kept = dir.keep();
        panic!(
            "{} failing case(s) (files in {}):\n{}",
            failures.len(),
            kept.display(),
            failures.join("\n")
        );
    }
    assert!(largest.0 < RSS_LIMIT_KIB, "peak RSS {} KiB", largest.0);
    assert!(slowest.0 < CASE_LIMIT);
    assert!(accepted > cases / 20, "too few accepted cases: {accepted}");
    assert!(rejected > cases / 5, "too few rejected cases: {rejected}");
}
