//! Issue 28, "mmlab as a user meets it": one test per defect class a new
//! user hit (crashes and hangs, wrong or surprising output, what was
//! missing), each through the binary as a user runs it.

use crate::common::{
    builtin_text, mmlab, mmlab_in, short_run, stderr, stdout, TINY_READERS as TINY,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// An error exit (1) with no panic.
fn refused(o: &Output, what: &str) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {e}{}", stdout(o));
    assert!(!e.contains("panicked"), "{what}: {e}");
    e
}

/// A sweep of [`TINY`] (its file name `tiny.toml` beside it), with `knobs`
/// and `extra` keys in its `[sweep]` table.
fn sweep_file(dir: &Path, name: &str, extra: &str, knobs: &str) -> PathBuf {
    std::fs::write(dir.join("tiny.toml"), TINY).unwrap();
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "[sweep]\nname = \"tiny\"\nscenario = \"tiny.toml\"\nseeds = [1, 2]\nbase = \"hierstat\"\n{extra}\n\n[sweep.knobs]\n{knobs}\n"
        ),
    )
    .unwrap();
    p
}

/// A short stale-read run stored in `db`.
fn store_a_run(dir: &Path, db: &str) {
    let o = mmlab_in(dir, &short_run("stale-read", "20", &["--db", db]));
    assert!(o.status.success(), "{}", stderr(&o));
}

// ---------------------------------------------------------------------
// Crashes and hangs
// ---------------------------------------------------------------------

/// A database whose `user_version` lies (negative, or older than its
/// tables) is refused by every command that opens it, with the file named
/// and no panic or raw SQL error.
#[test]
fn every_store_command_refuses_a_user_version_that_lies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("tiny.toml"), TINY).unwrap();
    let sweep = sweep_file(d, "sw.toml", "", "batch = [16]");
    for version in [-5i64, 0, 2, 3] {
        store_a_run(d, "t.db");
        let c = rusqlite::Connection::open(d.join("t.db")).unwrap();
        c.execute_batch(&format!("PRAGMA user_version = {version};"))
            .unwrap();
        drop(c);
        let sweep = sweep.to_str().unwrap();
        for args in [
            &["history", "--db", "t.db"][..],
            &["show", "last", "--db", "t.db"],
            &["tag", "last", "x", "--db", "t.db"],
            &["compare", "last", "last", "--db", "t.db"],
            &["report", "last", "--db", "t.db", "--html", "r.html"],
            &["results", "--db", "t.db"],
            &["store", "merge", "t.db", "--into", "new.db"],
            &["store", "merge", "ok.db", "--into", "t.db"],
            &["run", "tiny.toml", "--db", "t.db"],
            &["sweep", sweep, "--db", "t.db"],
        ] {
            if args[1] == "merge" && args[2] == "ok.db" {
                store_a_run(d, "ok.db");
            }
            let o = mmlab_in(d, args);
            let e = refused(&o, &format!("{args:?} at user_version {version}"));
            assert!(e.contains("t.db"), "{args:?} at {version}: {e}");
            assert!(
                e.contains("damaged") || e.contains("schema version"),
                "{args:?} at {version}: {e}"
            );
            assert!(!d.join("new.db").exists(), "{args:?} created new.db");
        }
        std::fs::remove_file(d.join("t.db")).unwrap();
        for f in ["t.db-wal", "t.db-shm", "ok.db", "ok.db-wal", "ok.db-shm"] {
            let _ = std::fs::remove_file(d.join(f));
        }
    }
}

/// Seed counts beyond the limit are refused at once, from the counts
/// alone (the check no longer grows with the square of the seeds: see
/// `seed_checks_are_linear` in the sim crate for the ratio).
#[test]
fn sweep_seed_counts_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    for count in ["1000000000", "100001", "100000"] {
        let p = sweep_file(dir.path(), "s.toml", "", "batch = [16, 32]");
        let text = std::fs::read_to_string(&p).unwrap().replace(
            "seeds = [1, 2]",
            &format!("seeds = {{ from = 1, count = {count} }}"),
        );
        std::fs::write(&p, text).unwrap();
        let t = Instant::now();
        let o = mmlab_in(dir.path(), &["sweep", "s.toml", "--plan"]);
        let e = refused(&o, count);
        assert!(
            e.contains("s.toml:") && e.contains("100000"),
            "{count}: {e}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{count}: {:?}",
            t.elapsed()
        );
    }
}

/// The estimate is calibrated on this host (the probes' speed cached
/// beside the cost file), scales with the work, refuses a run estimated
/// above the limit before it starts (a file of thousands of policies, a
/// stat-readers at back-to-back writer rates), and `--force` overrides.
#[test]
fn the_estimate_is_calibrated_here_and_refuses_long_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("costs.toml"), sim::cost::DEFAULT_COSTS_TOML).unwrap();
    std::fs::write(d.join("tiny.toml"), TINY).unwrap();
    // (wall seconds now, work units) of `run ARGS --estimate`.
    let est = |args: &[&str]| -> (f64, f64) {
        let mut a = vec!["run"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--estimate", "--costs", "costs.toml"]);
        let o = mmlab_in(d, &a);
        assert!(o.status.success(), "{a:?}: {}", stderr(&o));
        let out = stdout(&o);
        let wall = out
            .split("estimated wall time: ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        let units = out
            .split(" work units")
            .next()
            .and_then(|s| s.rsplit(", ").next())
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        (wall, units)
    };
    // A tiny run takes milliseconds: its wall estimate prints as 0.00 s,
    // its work is counted.
    let (wall, units) = est(&["tiny.toml"]);
    assert!(wall >= 0.0 && units > 0.0, "{wall} s, {units} units");
    // Measured on this host and cached beside the cost file.
    let cache = std::fs::read_to_string(d.join("costs.toml.rates.toml")).unwrap();
    for class in ["stats-tree", "stats-update", "numab", "refault"] {
        assert!(cache.contains(class), "{cache}");
    }
    // Ten times the simulated time: several times the work (a run's
    // fixed part stays).
    let (_, one) = est(&["stale-read", "--duration-ms", "100"]);
    let (_, ten) = est(&["stale-read", "--duration-ms", "1000"]);
    assert!(ten > one * 4.0 && ten < one * 10.5, "{one} -> {ten}");
    // Thousands of policies from one file: refused, with the time in words.
    let mut pol = String::new();
    for i in 0..3000 {
        pol.push_str(&format!(
            "[[policy]]\nname = \"p{i}\"\nbase = \"hierstat\"\nbatch = {}\n\n",
            16 + i % 48
        ));
    }
    std::fs::write(d.join("many.toml"), pol).unwrap();
    let t = Instant::now();
    let o = mmlab_in(
        d,
        &["run", "refault-storm", "-p", "many.toml", "--no-store"],
    );
    let e = refused(&o, "3000 policies");
    assert!(e.contains("would take") && e.contains("--force"), "{e}");
    // Refused before anything ran: the run it refuses is hours long, and
    // estimating 3,000 policies takes seconds (10-30 s in a debug build,
    // 72 s once at a load average of 14, which a 60 s limit failed on).
    assert!(t.elapsed() < Duration::from_secs(600), "{:?}", t.elapsed());
    // Writers at the back-to-back rate (no rate_per_cpu) on 384 CPUs.
    let text = builtin_text("stat-readers").replace("rate_per_cpu = 2000.0\n", "");
    std::fs::write(d.join("b2b.toml"), text).unwrap();
    let o = mmlab_in(d, &["run", "b2b.toml", "--no-store"]);
    let e = refused(&o, "back-to-back writers");
    assert!(e.contains("would take"), "{e}");
    // A limit lowered below a small run refuses it; --force runs it.
    let o = mmlab_in(
        d,
        &["run", "tiny.toml", "--no-store", "--max-seconds", "0.0001"],
    );
    refused(&o, "--max-seconds");
    let o = mmlab_in(
        d,
        &[
            "run",
            "tiny.toml",
            "--no-store",
            "--max-seconds",
            "0.0001",
            "--force",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("running anyway"), "{}", stderr(&o));
}

/// A FIFO as the scenario, the cost file, a policy file or a sweep file is
/// refused at once instead of waiting for a writer.
#[test]
fn fifos_are_refused_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for f in ["fifo", "fifo.toml"] {
        assert!(Command::new("mkfifo")
            .arg(d.join(f))
            .status()
            .unwrap()
            .success());
    }
    for args in [
        &["run", "fifo", "--no-store"][..],
        &["run", "stale-read", "--costs", "fifo", "--no-store"],
        &["run", "refault-storm", "-p", "fifo.toml", "--no-store"],
        &["sweep", "fifo", "--plan"],
        &["sweep", "fifo.toml", "--plan"],
    ] {
        let mut child = mmlab()
            .args(args)
            .current_dir(d)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("{args:?} waits on the FIFO");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        let e = refused(&o, &format!("{args:?}"));
        assert!(e.contains("FIFO"), "{args:?}: {e}");
    }
}

// ---------------------------------------------------------------------
// Wrong or surprising
// ---------------------------------------------------------------------

/// `mmlab > out` creates a file named like the suite's report folder: the
/// suite still runs and puts its report beside it; a `--quick` suite never
/// replaces the full suite's report.
#[test]
fn the_suite_report_folder_and_quick_runs_leave_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = std::fs::File::create(d.join("out")).unwrap();
    let o = mmlab()
        .args(["suite", "--quick", "--only", "numa02", "--db", "t.db"])
        .current_dir(d)
        .stdout(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("out is a file"), "{}", stderr(&o));
    assert!(d.join("mmlab-report-quick.html").is_file());
    assert!(std::fs::read_to_string(d.join("out"))
        .unwrap()
        .contains("numa02"));
    // With an out/ folder holding the full suite's report.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("out")).unwrap();
    std::fs::write(d.join("out/mmlab-report.html"), "FULL").unwrap();
    let o = mmlab_in(d, &["suite", "--quick", "--only", "numa02", "--db", "t.db"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(d.join("out/mmlab-report.html")).unwrap(),
        "FULL"
    );
    assert!(d.join("out/mmlab-report-quick.html").is_file());
    assert!(stdout(&o).contains("out/mmlab-report-quick.html"));
}

/// `--plan` prints commands that run as printed: the binary's own path
/// (or `mmlab` when that is what `PATH` finds), every path shell-quoted,
/// every option carried.
#[test]
fn plan_commands_run_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let odd = d.join("dir with space");
    std::fs::create_dir(&odd).unwrap();
    let file = sweep_file(
        &odd,
        "it's $x.toml",
        "presets = [\"linux-6.8\"]",
        "batch = [16]",
    );
    std::fs::write(d.join("costs.toml"), sim::cost::DEFAULT_COSTS_TOML).unwrap();
    let o = mmlab_in(
        d,
        &[
            "sweep",
            file.to_str().unwrap(),
            "--plan",
            "--costs",
            "costs.toml",
            "--max-seconds",
            "600",
            "--db",
            "my runs.db",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let plan = stdout(&o);
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(lines.len(), 2 * 2 + 1, "{plan}");
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_mmlab")).unwrap();
    assert!(
        lines[0].starts_with(&exe.display().to_string())
            || lines[0].starts_with(&format!("'{}'", exe.display())),
        "{plan}"
    );
    for l in &lines[..4] {
        assert!(
            l.contains("--costs costs.toml") && l.contains("--max-seconds 600"),
            "{l}"
        );
    }
    // The first job, through a shell, as printed.
    let o = Command::new("sh")
        .arg("-c")
        .arg(lines[0])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", lines[0], stderr(&o));
    assert!(d.join("my runs-1.db").is_file());
    // Installed: `mmlab` on PATH is this binary.
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(&exe, bin.join("mmlab")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = mmlab()
        .args(["sweep", file.to_str().unwrap(), "--plan"])
        .current_dir(d)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(stdout(&o).starts_with("mmlab sweep "), "{}", stdout(&o));
}

/// A repeated value, two spellings of the threshold size, an unknown
/// metric or percentile, and an HTML path that is a folder: refused with
/// file and line, before any job runs.
#[test]
fn bad_sweeps_are_refused_before_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, extra, knobs, want) in [
        ("rep.toml", "", "batch = [4, 4, 4]", "listed twice"),
        (
            "two.toml",
            "",
            "pages_per_shard = [8, 16]\nfixed_pages = [64]",
            "threshold size",
        ),
        (
            "set.toml",
            "\n[sweep.set]\nfixed_pages = 64",
            "pages_per_shard = [8]",
            "threshold size",
        ),
    ] {
        sweep_file(d, name, extra, knobs);
        let o = mmlab_in(d, &["sweep", name, "--db", "t.db"]);
        let e = refused(&o, name);
        assert!(
            e.contains(&format!("{name}:")) && e.contains(want),
            "{name}: {e}"
        );
        assert!(!d.join("t.db").exists(), "{name}: a job ran");
    }
    for (axis, want) in [
        ("x = \"no_such_metric\"", "reports no metric"),
        ("y = \"stale_reads.p999\"", "no percentiles"),
    ] {
        let p = sweep_file(d, "axis.toml", axis, "batch = [16]");
        let o = mmlab_in(d, &["sweep", p.to_str().unwrap(), "--db", "t.db"]);
        let e = refused(&o, axis);
        assert!(
            e.contains(want) && e.contains("read_latency_ns"),
            "{axis}: {e}"
        );
        assert!(!d.join("t.db").exists(), "{axis}: a job ran");
    }
    std::fs::create_dir(d.join("html")).unwrap();
    let p = sweep_file(d, "ok.toml", "", "batch = [16]");
    let t = Instant::now();
    let o = mmlab_in(
        d,
        &[
            "sweep",
            p.to_str().unwrap(),
            "--html",
            "html",
            "--db",
            "h.db",
        ],
    );
    let e = refused(&o, "--html DIR");
    assert!(e.contains("directory"), "{e}");
    assert!(!d.join("h.db").exists(), "the sweep ran before the check");
    assert!(t.elapsed() < Duration::from_secs(20));
}

/// Refault files refuse unknown keys and tables with file and line, like
/// every other kind (fixed by the lab's reshape; kept here).
#[test]
fn refault_files_refuse_unknown_keys_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let base = builtin_text("refault-storm");
    for (extra, field) in [
        ("\n[a.b.c.d]\nx = 1\n", "`a`"),
        ("\npolices = 3\n", "polices"),
    ] {
        let p = dir.path().join("r.toml");
        // Top-level keys go before the first table.
        let text = if extra.contains('[') {
            format!("{base}{extra}")
        } else {
            format!("polices = 3\n{base}")
        };
        std::fs::write(&p, text).unwrap();
        let o = mmlab_in(dir.path(), &["run", "r.toml", "--no-store"]);
        let e = refused(&o, extra);
        assert!(e.contains("r.toml:") && e.contains(field), "{extra}: {e}");
    }
}

/// A policy file given where a scenario goes is named as a policy file,
/// with the `-p` form that runs it; a sweep file and a cost file likewise.
#[test]
fn input_files_of_another_kind_are_named_with_the_command_that_takes_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pol = "[[policy]]\nname = \"mine\"\nbase = \"hierstat\"\nbatch = 32\n";
    std::fs::write(d.join("mine.toml"), pol).unwrap();
    let o = mmlab_in(d, &["run", "mine.toml", "--no-store"]);
    let e = refused(&o, "policy file");
    assert!(
        e.contains("policy file") && e.contains("-p mine.toml") && !e.contains("missing field"),
        "{e}"
    );
    std::fs::write(d.join("tiny.toml"), TINY).unwrap();
    let sw = sweep_file(d, "sw.toml", "", "batch = [16]");
    let o = mmlab_in(d, &["run", sw.to_str().unwrap(), "--no-store"]);
    assert!(refused(&o, "sweep file").contains("mmlab sweep"));
    std::fs::write(d.join("c.toml"), sim::cost::DEFAULT_COSTS_TOML).unwrap();
    let o = mmlab_in(d, &["run", "c.toml", "--no-store"]);
    assert!(refused(&o, "cost file").contains("--costs c.toml"));
}

/// A check between a value the file sets and a default names the field
/// the file sets, at its line, and says which value is a default.
#[test]
fn errors_about_defaults_name_the_field_written_and_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = "name = \"small\"\nkind = \"refault\"\nmode = \"sim\"\npolicies = [\"hierstat\"]\n\n[refault]\ncpus = 8\n";
    std::fs::write(dir.path().join("r.toml"), text).unwrap();
    let o = mmlab_in(dir.path(), &["run", "r.toml", "--no-store"]);
    let e = refused(&o, "default workload.cpus");
    assert!(e.contains("r.toml:7") && e.contains("refault.cpus"), "{e}");
    assert!(e.contains("`refault.workload.cpus` is not set"), "{e}");
}

/// `store merge` checks every source before it creates the target (a
/// refused merge leaves no new file) and refuses the target as a source.
#[test]
fn store_merge_leaves_nothing_on_failure_and_refuses_itself() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_a_run(d, "a.db");
    std::fs::write(d.join("junk.db"), "not a database").unwrap();
    let o = mmlab_in(
        d,
        &["store", "merge", "a.db", "junk.db", "--into", "new.db"],
    );
    refused(&o, "junk source");
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("new.db"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    for src in ["a.db", "./a.db"] {
        let o = mmlab_in(d, &["store", "merge", src, "--into", "a.db"]);
        let e = refused(&o, "self-merge");
        assert!(e.contains("into itself"), "{e}");
    }
}

/// Outputs that land on one file (`--json X --html X`, the results
/// database), a file that cannot be created (`/proc/version`) or a read-
/// only folder: refused before the run; `/dev/stdout` into a pipe works.
#[test]
fn outputs_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("tiny.toml"), TINY).unwrap();
    let ro = d.join("ro");
    std::fs::create_dir(&ro).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let root = can_write_read_only_dirs(&ro);
    for (args, want) in [
        (
            &["--json", "x", "--html", "./x", "--no-store"][..],
            "both write",
        ),
        (&["--json", "t.db", "--db", "t.db"], "results database"),
        (&["--json", "/proc/version", "--no-store"], "cannot write"),
        (&["--html", "ro/r.html", "--no-store"], "cannot write"),
        (
            &["--json", "-", "--html", "/dev/stdout", "--no-store"],
            "standard output",
        ),
    ] {
        if args.contains(&"ro/r.html") && root {
            continue; // root writes anywhere
        }
        let mut a = vec!["run", "tiny.toml"];
        a.extend_from_slice(args);
        let t = Instant::now();
        let o = mmlab_in(d, &a);
        let e = refused(&o, &format!("{args:?}"));
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(stdout(&o).is_empty(), "{args:?}: it ran");
        assert!(t.elapsed() < Duration::from_secs(20));
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    // JSON to /dev/stdout through a pipe: the JSON, and no text around it.
    let o = mmlab_in(
        d,
        &["run", "tiny.toml", "--no-store", "--json", "/dev/stdout"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["scenario"], "tiny-readers");
}

/// Whether files can be created in a read-only folder (root can).
fn can_write_read_only_dirs(ro: &Path) -> bool {
    let probe = ro.join("probe");
    let ok = std::fs::write(&probe, "x").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Control characters from user input never reach the terminal raw.
#[test]
fn error_messages_escape_control_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmlab_in(
        dir.path(),
        &[
            "run",
            "stale-read",
            "-p",
            "evil\u{1b}[31m\u{7}",
            "--no-store",
        ],
    );
    let e = refused(&o, "ESC in a policy name");
    assert!(!e.contains('\u{1b}') && !e.contains('\u{7}'), "{e:?}");
    assert!(e.contains("\\u{1b}"), "{e}");
    let o = mmlab_in(dir.path(), &["run", "no\u{1b}such\u{8}file.toml"]);
    let e = refused(&o, "ESC in a path");
    assert!(!e.contains('\u{1b}') && !e.contains('\u{8}'), "{e:?}");
}

/// A policy given 2,000 times is noted once, with the count.
#[test]
fn a_repeated_policy_is_noted_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        "stale-read",
        "--duration-ms",
        "5",
        "--runs",
        "1",
        "--no-store",
    ];
    for _ in 0..2000 {
        args.extend_from_slice(&["-p", "linux-6.8"]);
    }
    let o = mmlab_in(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.matches("given").count(), 1, "{e}");
    assert!(e.contains("`linux-6.8` given 2000 times"), "{e}");
}

// ---------------------------------------------------------------------
// Missing where users expect it
// ---------------------------------------------------------------------

/// Claims go wherever results go: `run --json`, `show --json`, the HTML of
/// stored runs (`report`) and of a comparison (`compare --html`).
#[test]
fn claims_are_in_every_json_and_html_with_results() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = mmlab_in(
        d,
        &short_run("stale-read", "20", &["--db", "t.db", "--json", "run.json"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
    assert!(!v["claims"].as_array().unwrap().is_empty(), "{v}");
    store_a_run(d, "t.db");
    let o = mmlab_in(d, &["show", "last", "--json", "-", "--db", "t.db"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!v["report"]["claims"].as_array().unwrap().is_empty(), "{v}");
    let o = mmlab_in(
        d,
        &[
            "report", "last~1", "last", "--html", "r.html", "--db", "t.db",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("data-verdicts") && html.contains("<h3>Claims</h3>"));
    assert_eq!(html.matches("<h3>Claims</h3>").count(), 2, "one per run");
    let o = mmlab_in(
        d,
        &[
            "compare", "last~1", "last", "--html", "c.html", "--db", "t.db",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(d.join("c.html")).unwrap();
    assert!(
        html.contains("data-verdicts") && html.contains("Claims on run"),
        "{html}"
    );
}

/// Every stored run records the commit it was built from and whether the
/// sources differed from it (the flag is a boolean in a git checkout).
#[test]
fn stored_runs_record_commit_and_dirty_flag() {
    let dir = tempfile::tempdir().unwrap();
    store_a_run(dir.path(), "t.db");
    let o = mmlab_in(dir.path(), &["history", "--json", "-", "--db", "t.db"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let host = &v[0]["host"];
    assert!(host.get("git_dirty").is_some(), "{v}");
    if option_env!("MMLAB_GIT_COMMIT").is_some() {
        assert!(host["git_commit"].is_string(), "{v}");
        assert!(host["git_dirty"].is_boolean(), "{v}");
    }
}

/// The suite's summary says MISS, and never cuts a claim's figures.
#[test]
fn the_summary_names_misses_and_keeps_explanations_whole() {
    use lab::report::Claim;
    use mmlab::render::claims::render_claims_compact;
    use mmlab::render::suite::summary_line;
    let miss = Claim {
        scenario: "s".into(),
        claim: "a claim".into(),
        measured: format!("{} END", "a long explanation of the miss ".repeat(8)),
        published: "x".into(),
        pass: false,
        info: false,
        size: None,
        why: format!("{} WHY-END", "the reason it misses ".repeat(6)),
    };
    let line = summary_line(
        "s",
        Duration::from_secs(1),
        std::slice::from_ref(&miss),
        None,
    );
    assert!(
        line.contains("1 MISS of 1") && !line.contains("0/1 ok"),
        "{line}"
    );
    let text = render_claims_compact(&[miss]);
    assert!(
        !text.contains('…') && text.contains(" END") && text.contains("WHY-END"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
}

/// `mmlab list` into a file keeps every description whole.
#[test]
fn list_never_cuts_descriptions() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmlab_in(dir.path(), &["list"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(!out.contains('…'), "{out}");
    let words: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for (_, text) in mmlab::pipeline::input::catalog().builtins() {
        let sc = mmlab::pipeline::input::catalog().parse("x", text).unwrap();
        let desc: String = sc
            .description()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(words.contains(&desc), "{desc}");
    }
    assert!(out.lines().all(|l| l.chars().count() <= 100));
}

/// HTML colours follow the policy: hierstat has one colour in reports
/// whose columns differ, and a user policy keeps its own.
#[test]
fn html_colours_follow_the_policy_not_the_column() {
    use mmlab::render::html::plots::policy_colors;
    let a = policy_colors(&["linux-5.15", "linux-6.8", "hierstat"]);
    let b = policy_colors(&["hierstat", "linux-6.8"]);
    assert_eq!(a[2], b[0]);
    assert_eq!(a[1], b[1]);
    let u1 = policy_colors(&["hierstat", "mine"]);
    let u2 = policy_colors(&["mine", "linux-6.8", "linux-5.15"]);
    assert_eq!(u1[1], u2[0]);
    let many = policy_colors(&["hierstat", "a", "b", "c", "d"]);
    let mut distinct = many.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), many.len(), "{many:?}");
}

/// A sweep's jobs are estimated together: a grid whose jobs each fit but
/// whose sum does not is refused before the first runs (unless forced).
#[test]
fn a_sweep_is_estimated_as_a_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = sweep_file(
        dir.path(),
        "big.toml",
        "",
        "batch = { from = 1, to = 400, step = 1 }",
    );
    let o = mmlab_in(
        dir.path(),
        &[
            "sweep",
            p.to_str().unwrap(),
            "--db",
            "t.db",
            "--max-seconds",
            "0.05",
        ],
    );
    // A tiny job takes a few ms here (800 of them about 2 s), so 800 are
    // estimated well over 0.05 s.
    let e = refused(&o, "800 jobs under 0.05 s");
    assert!(
        e.contains("800 runs would take") && e.contains("--shard"),
        "{e}"
    );
    assert!(
        !dir.path().join("t.db").exists() || {
            let c = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
            c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
                .unwrap()
                == 0
        }
    );
}
