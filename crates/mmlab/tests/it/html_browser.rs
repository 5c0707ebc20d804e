//! The HTML report in a real headless browser (Debian's chromium): the page
//! loads without console errors, every plot's SVG is in the DOM and not
//! empty, and screenshots (desktop and phone width) are written.
//!
//! Needs `/usr/bin/chromium` (`apt-get install -y chromium`; `.ci/run`
//! installs it). `MMLAB_CHROMIUM` overrides the path. Set
//! `MMLAB_REPORT_SCREENSHOT=PATH` to keep the desktop screenshot (this is
//! how `docs/report-sample.png` is made; `MMLAB_REPORT_SCREENSHOT_PHONE` keeps the
//! 400 px one) and `MMLAB_REPORT_HTML=PATH` to keep the page.

use crate::common::sample;
use mmlab::analysis::compare::{compare_runs, ComparedRun};
use mmlab::render::html::{plots, render_html_with};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> PathBuf {
    let p = std::env::var_os("MMLAB_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        p.exists(),
        "headless browser test needs chromium at {}: run `apt-get update && apt-get install -y chromium` \
         (CI's .ci/run installs it), or set MMLAB_CHROMIUM",
        p.display()
    );
    p
}

struct Output {
    stdout: String,
    stderr: String,
}

/// Runs chromium headless on `page` with `extra` flags, in a fresh profile,
/// killed after 120 s.
fn run_chromium(page: &Path, extra: &[String]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    // Read both pipes on threads so a full pipe cannot stall chromium.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let o = Output {
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    };
    assert!(status.success(), "chromium failed: {status}\n{}", o.stderr);
    o
}

/// Console messages chromium logged (`...:CONSOLE(line)] "msg", source: ...`).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{} is a PNG", path.display());
    let w = u32::from_be_bytes(b[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(b[20..24].try_into().unwrap());
    (w, h)
}

/// The `<svg class="plot" ...>...</svg>` elements of a serialized DOM.
fn plot_svgs(dom: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find("<svg class=\"plot\"") {
        let tail = &rest[i..];
        let end = tail.find("</svg>").expect("closed svg") + "</svg>".len();
        out.push(&tail[..end]);
        rest = &tail[end..];
    }
    out
}

#[test]
fn console_errors_are_detected() {
    // Negative control: the console check below can fail.
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>console.error('boom from test')</script></body></html>",
    )
    .unwrap();
    let out = run_chromium(&page, &["--dump-dom".into()]);
    let lines = console_lines(&out.stderr);
    assert!(
        lines.iter().any(|l| l.contains("boom from test")),
        "console.error not seen in chromium's log:\n{}",
        out.stderr
    );
}

#[test]
fn report_renders_in_headless_chromium() {
    let reports = sample::all(42);
    let a = sample::update_path(1);
    let mut b = sample::update_path(2);
    for r in b.policies.values_mut() {
        for m in r.metrics.values_mut() {
            m.values.iter_mut().for_each(|v| *v *= 0.93);
        }
    }
    let cmp = compare_runs(vec![
        ComparedRun {
            label: "#1 base".into(),
            summary: None,
            report: a,
        },
        ComparedRun {
            label: "#2".into(),
            summary: None,
            report: b,
        },
    ])
    .unwrap();
    let html = render_html_with("mmlab report (synthetic sample data)", &reports, &[cmp]);
    let expected: Vec<&str> = reports
        .iter()
        .flat_map(plots::plots)
        .map(|p| p.kind)
        .collect();
    for kind in [
        "latency-histogram",
        "latency-cdf",
        "throughput-vs-depth",
        "refault-vs-mismatch",
        "local-fraction",
        "vma-coverage",
    ] {
        assert!(
            expected.contains(&kind),
            "the sample data has a {kind} plot"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    if let Some(keep) = std::env::var_os("MMLAB_REPORT_HTML") {
        std::fs::write(keep, &html).unwrap();
    }

    // 1. Load and serialize the DOM; no console message at all.
    let out = run_chromium(&page, &["--dump-dom".into()]);
    let console = console_lines(&out.stderr);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let dom = out.stdout;
    assert!(
        dom.contains("<h1>mmlab report (synthetic sample data)</h1>"),
        "page parsed: {}",
        &dom[..dom.len().min(500)]
    );
    let svgs = plot_svgs(&dom);
    assert_eq!(svgs.len(), expected.len(), "every plot is in the DOM");
    for (svg, kind) in svgs.iter().zip(&expected) {
        assert!(
            svg.contains(&format!("data-plot=\"{kind}\"")),
            "plot order: {kind}"
        );
        let marks = ["<polyline", "<rect", "<circle"]
            .iter()
            .map(|m| svg.matches(m).count())
            .sum::<usize>();
        assert!(marks > 0, "{kind} plot draws data: {svg}");
        assert!(svg.contains("class=\"tick\""), "{kind} plot has axes");
    }
    assert!(
        dom.matches("<table>").count() > reports.len(),
        "tables present"
    );

    // 2. Screenshots at desktop and phone widths.
    for (w, h, name) in [(1200u32, 2000u32, "desktop.png"), (400, 1600, "phone.png")] {
        let shot = dir.path().join(name);
        let out = run_chromium(
            &page,
            &[
                format!("--screenshot={}", shot.display()),
                format!("--window-size={w},{h}"),
            ],
        );
        let console = console_lines(&out.stderr);
        assert!(
            console.is_empty(),
            "console messages:\n{}",
            console.join("\n")
        );
        assert_eq!(png_size(&shot), (w, h), "{name} size");
        let bytes = std::fs::metadata(&shot).unwrap().len();
        assert!(bytes > 30_000, "{name} has content ({bytes} bytes)");
        if let Some(keep) = std::env::var_os(format!(
            "MMLAB_REPORT_SCREENSHOT{}",
            if w == 400 { "_PHONE" } else { "" }
        )) {
            std::fs::copy(&shot, keep).unwrap();
        }
    }
}
