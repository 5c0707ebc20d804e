//! End-to-end tests of the `mmlab` binary: exit codes, error messages, the
//! JSON shape, and that nothing is written when a run fails.

use crate::common::short_run;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn mmlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmlab"))
        .args(args)
        .output()
        .expect("mmlab runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn list_shows_scenarios_and_policies() {
    let o = mmlab(&["list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8(o.stdout).unwrap();
    for want in [
        "update-path",
        "stat-readers",
        "stale-read",
        "false-sharing",
        "linux-6.8",
        "hierstat",
        "pre-rstat",
    ] {
        assert!(s.contains(want), "missing {want} in:\n{s}");
    }
}

#[test]
fn run_writes_the_documented_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = mmlab(&[
        "run",
        "stale-read",
        "--runs",
        "2",
        "--duration-ms",
        "60",
        "--seed",
        "3",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("missed_event_rate"), "{text}");
    assert!(
        text.contains("nsecs"),
        "funclatency histogram expected:\n{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["scenario"], "stale-read");
    assert_eq!(v["mode"], "sim");
    assert_eq!(v["runs"], 2);
    for p in ["linux-5.15", "linux-6.8", "hierstat"] {
        let m = &v["policies"][p]["metrics"];
        for metric in ["missed_event_rate", "child_gt_parent", "stale_reads"] {
            let x = &m[metric];
            assert!(x["mean"].is_number(), "{p} {metric}: {x}");
            assert!(x["stddev"].is_number(), "{p} {metric}: {x}");
            assert!(x["unit"].is_string(), "{p} {metric}: {x}");
            assert_eq!(x["values"].as_array().unwrap().len(), 2);
        }
        let lat = &m["read_latency_ns"];
        for k in ["p50", "p99", "p999", "max"] {
            assert!(lat[k].is_number(), "{p} read_latency_ns.{k}: {lat}");
        }
    }
}

#[test]
fn json_to_stdout_replaces_the_text() {
    let o = mmlab(&short_run("false-sharing", "20", &["--json", "-"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["policies"]["shared"]["metrics"]["ops_per_sec"]["mean"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(v["mode"], "real");
}

#[test]
fn unknown_scenario_fails_with_a_clear_error() {
    let o = mmlab(&["run", "no-such-scenario"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no built-in scenario or file named `no-such-scenario`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_scenario_file_names_file_line_and_field_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(
        &f,
        "kind = \"stats\"\nname = \"x\"\nworkload = \"stale-read\"\nmode = \"sim\"\n\
         policies = [\"hierstat\"]\nduration_ms = 10\ncpus = 4\n[tree]\nfanout = [2]\n\
         [writers]\nrate_per_cpu = \"fast\"\n[spikes]\nevery_ms = 1.0\npages = 100\nread_after_us = 1\n",
    )
    .unwrap();
    let out = dir.path().join("out.json");
    let o = mmlab(&[
        "run",
        f.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
        "--no-store",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("bad.toml:11: field `writers.rate_per_cpu`"),
        "{e}"
    );
    assert!(!out.exists(), "nothing may be written on failure");
}

#[test]
fn unknown_policy_fails_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let o = mmlab(&[
        "run",
        "stale-read",
        "-p",
        "linux-9.9",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("unknown policy `linux-9.9`"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&out).exists());
}

#[test]
fn bad_arguments_are_usage_errors() {
    let o = mmlab(&["run", "stale-read", "--runs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = mmlab(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn closed_stdout_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmlab"))
        .args(["list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn bad_cost_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("costs.toml");
    std::fs::write(&f, "call_ns = 1\n").unwrap();
    let o = mmlab(&short_run(
        "stale-read",
        "10",
        &["--costs", f.to_str().unwrap()],
    ));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("costs.toml"), "{}", stderr(&o));
}

#[test]
fn runs_are_stored_and_the_store_commands_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let db = db.to_str().unwrap();
    for seed in ["1", "2"] {
        let o = mmlab(&short_run(
            "stale-read",
            "30",
            &["--seed", seed, "--db", db],
        ));
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("stored as run #"));
    }
    let o = mmlab(&["history", "--db", db]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("stale-read"));
    let o = mmlab(&["show", "last", "--db", db]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("missed_event_rate"));
    let o = mmlab(&["compare", "last~1", "last", "--db", db]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = mmlab(&["tag", "last", "baseline", "--db", db]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = dir.path().join("r.html");
    let o = mmlab(&[
        "report",
        "baseline",
        "--html",
        html.to_str().unwrap(),
        "--db",
        db,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    let o = mmlab(&["show", "no-such-tag", "--db", db]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn run_writes_html_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let o = mmlab(&short_run(
        "stale-read",
        "30",
        &["--no-store", "--html", html.to_str().unwrap()],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(
        text.contains("stale-read") && text.contains("<html"),
        "{}",
        &text[..200.min(text.len())]
    );
}

#[test]
fn policy_files_and_sweep_plans() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.toml");
    std::fs::write(
        &policy,
        "[[policy]]\nname = \"skipper\"\nbase = \"linux-6.8\"\nconcurrency = \"skip\"\n",
    )
    .unwrap();
    let db = dir.path().join("r.db");
    let o = mmlab(&short_run(
        "stale-read",
        "20",
        &[
            "-p",
            "linux-6.8",
            "-p",
            policy.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = mmlab(&["show", "last", "--db", db.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("skipper"));

    // A bad policy file names its line and field, and nothing is stored.
    std::fs::write(
        &policy,
        "[[policy]]\nname = \"skipper\"\nbase = \"linux-6.8\"\nconcurrency = \"often\"\n",
    )
    .unwrap();
    let o = mmlab(&[
        "run",
        "stale-read",
        "-p",
        policy.to_str().unwrap(),
        "--no-store",
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("policy[0].concurrency") && e.contains(":4"),
        "{e}"
    );

    let sweep = dir.path().join("s.toml");
    std::fs::write(
        &sweep,
        "[sweep]\nname = \"s\"\nscenario = \"stale-read\"\nseeds = { from = 1, count = 2 }\n\
         base = \"hierstat\"\n[sweep.knobs]\nbatch = { from = 16, to = 64, step = 16 }\n",
    )
    .unwrap();
    let o = mmlab(&["sweep", sweep.to_str().unwrap(), "--plan", "--db", "x.db"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plan = String::from_utf8(o.stdout).unwrap();
    // One command per job, then how to merge their databases.
    assert_eq!(plan.lines().count(), 4 * 2 + 1);
    assert!(plan
        .lines()
        .take(8)
        .all(|l| l.contains("--shard ") && l.contains("/8 --db x-")));
    assert!(plan.lines().last().unwrap().contains("store merge"));
    let o = mmlab(&["sweep", sweep.to_str().unwrap(), "--shard", "9/8"]);
    assert!(!o.status.success());
    let o = mmlab(&[
        "store",
        "merge",
        "missing.db",
        "--into",
        db.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
}
