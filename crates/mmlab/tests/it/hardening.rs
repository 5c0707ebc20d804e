//! The defects of issue 13, one test each: bad input, bad databases and bad
//! output paths end in a clear error (exit 1), never a panic (exit 101), a
//! hang, an exhausted memory or a clobbered file.

use crate::common::{builtin_text, mmlab_in, short_run, stderr, stderr_until, stdout};
use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A short stale-read run stored in `db`.
fn store_a_run(dir: &Path, db: &str) {
    let o = mmlab_in(dir, &short_run("stale-read", "20", &["--db", db]));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A stats scenario file with `replace` applied to the built-in stale-read.
fn scenario_with(dir: &Path, from: &str, to: &str) -> String {
    let text = builtin_text("stale-read");
    assert!(text.contains(from), "{from}");
    let p = dir.join("s.toml");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_huge_tag_is_stored_and_history_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    store_a_run(dir.path(), "t.db");
    let tag = "x".repeat(70_000) + "\u{1b}[31m";
    let o = mmlab_in(dir.path(), &["tag", "last", &tag, "--db", "t.db"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = mmlab_in(dir.path(), &["history", "--db", "t.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().all(|l| l.chars().count() <= 250), "{out}");
    // Control characters are escaped, never printed raw.
    let o = mmlab_in(dir.path(), &["show", "last", "--db", "t.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains('\u{1b}'));
    assert!(stdout(&o).contains("\\u{1b}"));
    // The tag still resolves.
    let o = mmlab_in(dir.path(), &["show", &tag, "--db", "t.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_huge_scenario_name_runs_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    // A TOML escape: the name holds 40,000 BEL characters.
    let long = "n\\u0007".repeat(40_000);
    let f = scenario_with(
        dir.path(),
        "name = \"stale-read\"",
        &format!("name = \"{long}\""),
    );
    let o = mmlab_in(dir.path(), &short_run(&f, "20", &["--db", "t.db"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains('\u{7}'));
    for args in [
        &["history", "--db", "t.db"][..],
        &["show", "last", "--db", "t.db"],
    ] {
        let o = mmlab_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn dev_zero_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let o = mmlab_in(dir.path(), &["run", "/dev/zero", "--no-store"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    // A huge regular file: refused after reading the limit.
    let big = dir.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; 2 << 20]).unwrap();
    let o = mmlab_in(dir.path(), &["run", big.to_str().unwrap(), "--no-store"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("larger than"), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn non_utf8_file_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, b"kind = \"stats\"\nname = \"\xff\"\n").unwrap();
    let o = mmlab_in(dir.path(), &["run", p.to_str().unwrap(), "--no-store"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad.toml:2"), "{}", stderr(&o));
}

#[test]
fn out_of_range_fields_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, field) in [
        ("cpus = 64", "cpus = 5000000000", "`cpus`"),
        ("seed = 1", "seed = 1.5", "`seed`"),
        ("[writers]", "[writers]\ncpus = 300", "`writers.cpus`"),
        (
            "rate_per_cpu = 5000.0",
            "rate_per_cpu = 1e15",
            "`writers.rate_per_cpu`",
        ),
        (
            "targets = \"all\"\nitems = 4",
            "targets = \"all\"\nitems = 1000000000",
            "`readers.items`",
        ),
        ("policies = [", "policies = [\"linux-9\", ", "`policies`"),
    ] {
        let f = scenario_with(dir.path(), from, to);
        let o = mmlab_in(dir.path(), &["run", &f, "--no-store"]);
        assert_eq!(o.status.code(), Some(1), "{to}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("s.toml:") && e.contains(field), "{to}: {e}");
    }
}

#[test]
fn numab_and_refault_fields_are_range_checked_with_lines() {
    let dir = tempfile::tempdir().unwrap();
    let numa02 = builtin_text("numa02");
    let refault = builtin_text("refault-storm");
    for (text, from, to, field) in [
        (
            numa02,
            "buffer_mib = 1024",
            "buffer_mib = 1000000000",
            "numab.workload.buffer_mib",
        ),
        (
            numa02,
            "passes = 800",
            "passes = 1000000000",
            "numab.workload.passes",
        ),
        (numa02, "nodes = 2", "nodes = 0", "numab.nodes"),
        (
            refault,
            "warmup_ms = 1000",
            "warmup_ms = 100000000",
            "refault.warmup_ms",
        ),
        (
            refault,
            "accesses_per_sec_per_cpu = 300.0",
            "accesses_per_sec_per_cpu = 1e12",
            "refault.workload.accesses_per_sec_per_cpu",
        ),
    ] {
        let p = dir.path().join("k.toml");
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
        let o = mmlab_in(dir.path(), &["run", p.to_str().unwrap(), "--no-store"]);
        assert_eq!(o.status.code(), Some(1), "{to}");
        let e = stderr(&o);
        assert!(e.contains("k.toml:") && e.contains(field), "{to}: {e}");
    }
}

#[test]
fn zero_costs_are_refused_with_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.toml");
    let text = sim::cost::DEFAULT_COSTS_TOML;
    let mut bad = String::new();
    for l in text.lines() {
        if l.starts_with("call_ns") {
            bad.push_str("call_ns = 0\n");
        } else if l.starts_with("atomic_ns") {
            bad.push_str("atomic_ns = 0\n");
        } else {
            bad.push_str(l);
            bad.push('\n');
        }
    }
    std::fs::write(&p, bad).unwrap();
    let o = mmlab_in(
        dir.path(),
        &["run", "update-path-sim", "--costs", "c.toml", "--no-store"],
    );
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("c.toml:") && e.contains("`call_ns`"), "{e}");
}

#[test]
fn an_oversized_run_is_refused_before_it_starts_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let numa02 = builtin_text("numa02");
    let p = dir.path().join("big.toml");
    let big = numa02
        .replacen("buffer_mib = 1024", "buffer_mib = 65536", 1)
        .replacen("passes = 800", "passes = 100000", 1);
    std::fs::write(&p, big).unwrap();
    let t = Instant::now();
    let o = mmlab_in(dir.path(), &["run", p.to_str().unwrap(), "--db", "t.db"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("--force") && e.contains("estimate"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(!dir.path().join("t.db").exists(), "nothing created");
}

#[test]
fn output_files_go_through_symlinks_and_refuse_non_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("real.json"), "old").unwrap();
    std::os::unix::fs::symlink("real.json", d.join("link.json")).unwrap();
    let o = mmlab_in(
        d,
        &short_run("stale-read", "10", &["--no-store", "--json", "link.json"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(d.join("real.json"))
        .unwrap()
        .starts_with('{'));
    // A FIFO (or a device) is refused before any work, and left alone.
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let t = Instant::now();
    let o = mmlab_in(
        d,
        &short_run("stale-read", "10", &["--no-store", "--html", "fifo"]),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo_like());
    assert!(t.elapsed() < Duration::from_secs(5));
    let o = mmlab_in(
        d,
        &[
            "run",
            "stale-read",
            "--duration-ms",
            "10",
            "--no-store",
            "--json",
            "/dev/null",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}

impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_fifo()
    }
}

#[test]
fn a_bad_db_fails_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let o = mmlab_in(
        dir.path(),
        &[
            "run",
            "stale-read",
            "--runs",
            "1",
            "--db",
            "/nonexistent/x.db",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).is_empty(),
        "no report before the error: {}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("/nonexistent"), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_busy_db_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    store_a_run(dir.path(), "t.db");
    // Another process holds the write lock.
    let conn = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let t = Instant::now();
    let o = mmlab_in(
        dir.path(),
        &short_run("stale-read", "10", &["--db", "t.db"]),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("busy"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    conn.execute_batch("ROLLBACK").unwrap();
}

/// A database that another process locks while a run is measuring: the
/// run says it waits, then stores once the lock is released (nothing is
/// lost).
#[test]
fn a_db_locked_during_the_run_is_waited_for_at_save() {
    let dir = tempfile::tempdir().unwrap();
    store_a_run(dir.path(), "t.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmlab"))
        .args([
            "run",
            "stale-read-real",
            "-p",
            "hierstat",
            "--duration-ms",
            "1500",
            "--runs",
            "1",
            "--db",
            "t.db",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mmlab runs");
    // Lock once the run has opened the database and started measuring
    // (its `0/1 started` line: the database is opened before the first
    // run starts, and the measurement lasts 1.5 s after it).
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = stderr_until(&mut err, "started");
    let conn = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // Read stderr until the run says it waits, then release while it is
    // still waiting (it has not exited: it neither gave up nor dropped the
    // run).
    said.push_str(&stderr_until(&mut err, "waiting up to"));
    assert!(said.contains("is busy"), "{said}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended while the database was held: {said}"
    );
    conn.execute_batch("ROLLBACK").unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{said}{rest}");
    let o = mmlab_in(dir.path(), &["history", "--db", "t.db"]);
    assert!(stdout(&o).contains("stale-read-real"), "{}", stdout(&o));
}

#[test]
fn read_commands_never_create_a_db() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["history", "--db", "typo.db"][..],
        &["show", "last", "--db", "typo.db"],
        &["compare", "last~1", "last", "--db", "typo.db"],
        &["tag", "last", "x", "--db", "typo.db"],
        &["--db", "typo.db", "history"],
    ] {
        let o = mmlab_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&o).contains("no such file"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!dir.path().join("typo.db").exists(), "{args:?} created it");
    }
}

#[test]
fn history_reads_a_db_in_a_read_only_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("ro");
    std::fs::create_dir(&sub).unwrap();
    store_a_run(&sub, "t.db");
    let mut perm = std::fs::metadata(&sub).unwrap().permissions();
    use std::os::unix::fs::PermissionsExt;
    perm.set_mode(0o555);
    std::fs::set_permissions(&sub, perm.clone()).unwrap();
    let o = mmlab_in(&sub, &["history", "--db", "t.db"]);
    let o2 = mmlab_in(&sub, &["tag", "last", "x", "--db", "t.db"]);
    perm.set_mode(0o755);
    std::fs::set_permissions(&sub, perm).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("stale-read"));
    // Writing says why it cannot (root may write anyway).
    if !o2.status.success() {
        let e = stderr(&o2);
        assert!(!e.contains("SQLITE_READONLY_DIRECTORY"), "{e}");
        assert!(
            e.contains("read-only") || e.contains("cannot be written"),
            "{e}"
        );
    }
}

#[test]
fn duplicate_policies_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmlab_in(
        dir.path(),
        &short_run(
            "stale-read",
            "10",
            &[
                "--no-store",
                "-p",
                "hierstat",
                "-p",
                "hierstat",
                "--json",
                "-",
            ],
        ),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["policies"].as_object().map(|m| m.len()), Some(1), "{v}");
}

#[test]
fn global_db_and_run_quick_parse() {
    let dir = tempfile::tempdir().unwrap();
    store_a_run(dir.path(), "g.db");
    let o = mmlab_in(dir.path(), &["--db", "g.db", "history"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("stale-read"));
    let o = mmlab_in(dir.path(), &["run", "stale-read", "--quick", "--no-store"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_thread_limit_is_an_error_not_a_panic_or_hang() {
    // `threads = 256` where thread stacks cannot all be mapped (`ulimit -v`,
    // which binds root too) and, for other users, under a 64-thread limit.
    let dir = tempfile::tempdir().unwrap();
    let text = builtin_text("update-path");
    let p = dir.path().join("t.toml");
    let text = text
        .lines()
        .map(|l| {
            if l.starts_with("threads") {
                "threads = 256"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&p, text).unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -u 64 2>/dev/null; ulimit -v 300000 || exit 77; exec {} run {} --runs 1 --duration-ms 50 -p hierstat --no-store",
            env!("CARGO_BIN_EXE_mmlab"),
            p.display()
        ))
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "hang");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    if o.status.code() == Some(77) {
        return; // no ulimit in this shell
    }
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot start thread"), "{}", stderr(&o));
}

#[test]
fn the_compact_suite_fits_100_columns_and_shows_progress_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmlab_in(
        dir.path(),
        &[
            "suite",
            "--quick",
            "--only",
            "stale-read,numa02",
            "--db",
            "t.db",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for l in out.lines() {
        assert!(l.chars().count() <= 100, "{} wide: {l}", l.chars().count());
    }
    assert!(
        out.contains("[ok]") && out.contains("stored as runs #1..#2"),
        "{out}"
    );
    // Piped stderr: plain progress lines, never a first frame of 0/0.
    let err = stderr(&o);
    assert!(
        err.contains("stale-read: 0/") && err.contains("numa02: "),
        "{err}"
    );
    assert!(!err.contains("0/0"), "{err}");
    // Each scenario is its own stored run with its own times.
    let h = stdout(&mmlab_in(dir.path(), &["history", "--db", "t.db"]));
    assert!(h.contains("stale-read") && h.contains("numa02"), "{h}");
}

#[test]
fn an_interrupted_suite_keeps_the_scenarios_that_completed() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmlab"))
        .args([
            "suite",
            "--quick",
            "--only",
            "stale-read,refault-storm",
            "--db",
            "t.db",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Wait for the first scenario's line (stored as #1), then Ctrl-C.
    loop {
        let l = lines.next().expect("suite output").unwrap();
        if l.trim_start().starts_with("stale-read") {
            assert!(l.trim_end().ends_with("#1"), "{l}");
            break;
        }
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    let h = stdout(&mmlab_in(dir.path(), &["history", "--db", "t.db"]));
    assert!(
        h.contains("stale-read") && !h.contains("refault-storm"),
        "{h}"
    );
}

#[test]
fn compare_across_scenarios_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    store_a_run(dir.path(), "t.db");
    let o = mmlab_in(
        dir.path(),
        &short_run("stale-read-real", "20", &["--db", "t.db"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = mmlab_in(dir.path(), &["compare", "last~1", "last", "--db", "t.db"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).is_empty(), "no table: {}", stdout(&o));
    assert!(stderr(&o).contains("different scenarios"), "{}", stderr(&o));
    let o = mmlab_in(
        dir.path(),
        &["compare", "last~1", "last", "--force", "--db", "t.db"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("warning: the runs are of different scenarios"));
}

#[test]
fn list_shows_real_sizes_numa_versions_and_distinct_descriptions() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmlab_in(dir.path(), &["list"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(
        out.contains("sim, 256 CPUs") && out.contains("sim, 96 CPUs"),
        "{out}"
    );
    assert!(!out.contains("1 CPUs"), "{out}");
    for l in out.lines() {
        assert!(l.chars().count() <= 100, "{l}");
    }
    let desc = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .map(|l| l.trim_start()[name.len()..].trim().to_string())
            .unwrap_or_default()
    };
    assert!(!desc("linux-6.8").is_empty());
    assert_ne!(desc("linux-6.8"), desc("linux-6.17"));
    for v in [
        "v6.3", "v6.5", "rfc-1of6", "rfc-2of6", "v6.7", "v6.8", "v6.12", "mmlab",
    ] {
        assert!(!desc(v).is_empty(), "{v} in {out}");
    }
    let o = mmlab_in(dir.path(), &["list", "--json", "-"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["scanner_versions"].as_array().map(Vec::len), Some(8));
}

#[test]
fn html_has_verdicts_host_and_a_false_sharing_plot() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmlab_in(
        dir.path(),
        &short_run("false-sharing", "20", &["--no-store", "--html", "r.html"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(html.contains(r#"data-plot="layout-throughput""#));
    // false-sharing's claim is a reference ([info]) when the host did not
    // run both threads side by side; only counted claims get a verdicts line.
    let counted = html.contains("[ok]") || html.contains("[MISS]");
    assert!(counted || html.contains("[info]"));
    assert_eq!(html.contains("data-verdicts"), counted);
    assert!(html.contains("data-host"));
    assert!(html.contains("CPUs,"));
}

#[test]
fn history_and_show_write_json() {
    let dir = tempfile::tempdir().unwrap();
    store_a_run(dir.path(), "t.db");
    let o = mmlab_in(dir.path(), &["--db", "t.db", "history", "--json", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["scenario"], "stale-read");
    let o = mmlab_in(dir.path(), &["show", "last", "--json", "-", "--db", "t.db"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["report"]["scenario"], "stale-read", "{v}");
}

#[test]
fn a_numa_run_cut_at_max_virtual_s_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let numa02 = builtin_text("numa02");
    let text = numa02.replacen(
        "sample_interval_ms = 500",
        "sample_interval_ms = 500\nmax_virtual_s = 1",
        1,
    );
    let p = dir.path().join("cut.toml");
    std::fs::write(&p, text).unwrap();
    let o = mmlab_in(
        dir.path(),
        &["run", p.to_str().unwrap(), "-p", "v6.5", "--no-store"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("stopped at numab.max_virtual_s"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("stopped_at_max_virtual_s"));
}
