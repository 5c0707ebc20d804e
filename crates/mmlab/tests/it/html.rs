//! HTML report structure: plots present exactly when their data is,
//! self-contained output, escaping, determinism.

use crate::common::sample;
use lab::report::{
    Figure, FigureAxis, FigureLine, Log2Histogram, MetricSamples, Mode, PolicyResult, RunReport,
    Scale,
};
use mmlab::analysis::table::ComparisonTable;
use mmlab::render::html::plots::{bucket_label, cdf_points, figure_plot, plots};
use mmlab::render::html::{render_html, table_html};
use std::collections::BTreeMap;

fn kinds(r: &RunReport) -> Vec<&'static str> {
    plots(r).into_iter().map(|p| p.kind).collect()
}

fn bare(policies: &[(&str, PolicyResult)]) -> RunReport {
    RunReport {
        scenario: "x".into(),
        mode: Mode::Sim,
        runs: 1,
        seed: 0,
        scenario_toml: String::new(),
        policy_order: policies.iter().map(|(p, _)| p.to_string()).collect(),
        policies: policies
            .iter()
            .map(|(p, r)| (p.to_string(), r.clone()))
            .collect(),
        facts: Default::default(),
    }
}

#[test]
fn plots_follow_the_data() {
    assert_eq!(
        kinds(&sample::refault_storm(1)),
        [
            "latency-histogram",
            "latency-histogram",
            "latency-histogram",
            "latency-histogram",
            "latency-cdf",
            "refault-vs-mismatch"
        ]
    );
    assert_eq!(
        kinds(&sample::stat_readers(1)),
        [
            "latency-histogram",
            "latency-histogram",
            "latency-histogram",
            "latency-cdf"
        ]
    );
    assert_eq!(kinds(&sample::update_path(1)), ["throughput-vs-depth"]);
    assert_eq!(
        kinds(&sample::numa01(1)),
        ["local-fraction", "vma-coverage"]
    );
}

#[test]
fn absent_data_draws_no_plot() {
    let mut scalar = PolicyResult::default();
    scalar.metrics.insert(
        "stale_reads".into(),
        MetricSamples {
            unit: "count".into(),
            values: vec![1.0],
            ..Default::default()
        },
    );
    // An empty histogram and an empty series are absent data too.
    scalar.metrics.insert(
        "read_latency_ns".into(),
        MetricSamples {
            unit: "ns".into(),
            values: vec![1.0],
            histogram: Some(Log2Histogram::default()),
            ..Default::default()
        },
    );
    scalar
        .series
        .insert("local_fraction".into(), Default::default());
    let r = bare(&[("a", scalar)]);
    assert!(plots(&r).is_empty());
    let html = render_html(&[r]);
    assert!(!html.contains("class=\"plot\""));
    assert!(!html.contains("<h3>Plots</h3>"));
    assert!(
        html.contains("stale_<wbr>reads"),
        "the table is still there"
    );
}

#[test]
fn throughput_from_depth_metrics_without_series() {
    let mut p = PolicyResult::default();
    for (d, v) in [(4, 80.0), (2, 100.0)] {
        p.metrics.insert(
            format!("update_ops_per_sec_depth{d}"),
            MetricSamples {
                unit: "ops/s".into(),
                values: vec![v, v],
                higher_is_better: true,
                ..Default::default()
            },
        );
    }
    let r = bare(&[("hierstat", p)]);
    let pl = plots(&r);
    assert_eq!(pl.len(), 1);
    assert_eq!(pl[0].kind, "throughput-vs-depth");
    assert_eq!(
        pl[0].svg.matches("<circle").count(),
        2,
        "one marker per depth"
    );
}

#[test]
fn page_is_self_contained_and_escaped() {
    let mut reports = sample::all(3);
    reports[0].scenario = "<script>alert(1)</script>".into();
    let html = render_html(&reports);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<meta name=\"viewport\""));
    assert!(
        !html.contains("<script"),
        "no script, and names are escaped"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    for bad in ["<link", " src=", "url(", "@import", "https://"] {
        assert!(!html.contains(bad), "no external resource ({bad})");
    }
    // The only URL is the SVG namespace, which is never fetched.
    assert_eq!(
        html.matches("http://").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    assert_eq!(html, render_html(&reports), "deterministic");
    let n = reports.iter().map(|r| plots(r).len()).sum::<usize>();
    assert_eq!(html.matches("<svg class=\"plot\" data-plot=").count(), n);
}

#[test]
fn cdf_and_bucket_labels() {
    let mut h = Log2Histogram::default();
    h.record_n(300, 1); // bucket 8: 256..511
    h.record_n(1000, 3); // bucket 9: 512..1023
    assert_eq!(cdf_points(&h), [(256.0, 0.0), (511.0, 0.25), (1023.0, 1.0)]);
    assert!(cdf_points(&Log2Histogram::default()).is_empty());
    assert_eq!(bucket_label(9, "ns"), "512ns");
    assert_eq!(bucket_label(10, "ns"), "1µs");
    assert_eq!(bucket_label(21, "ns"), "2ms");
    assert_eq!(bucket_label(31, "ns"), "2s");
}

#[test]
fn html_table_colours_significant_changes_by_direction() {
    let m = |v: &[f64], hib: bool| MetricSamples {
        unit: "ops/s".into(),
        values: v.to_vec(),
        higher_is_better: hib,
        ..Default::default()
    };
    let mk = |a: &[f64], b: &[f64]| {
        let mut x = PolicyResult {
            metrics: BTreeMap::new(),
            series: BTreeMap::new(),
        };
        x.metrics.insert("tput".into(), m(a, true));
        x.metrics.insert("lat".into(), m(b, false));
        x
    };
    let base = mk(&[100.0, 101.0, 99.0], &[10.0, 10.5, 9.5]);
    let new = mk(&[80.0, 81.0, 79.0], &[5.0, 5.2, 4.8]);
    let html = table_html(&ComparisonTable::build(&[("base", &base), ("new", &new)]));
    // Throughput fell (bad), latency fell (good).
    assert!(
        html.contains(r#"<span class="chg bad">-20.0%</span>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="chg good">-50.0%</span>"#),
        "{html}"
    );
}

#[test]
fn stored_runs_page_has_run_facts_and_their_comparison() {
    use mmlab::render::html::render_stored_html;
    use runstore::{HostFacts, Store};
    use std::time::{Duration, UNIX_EPOCH};
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("mmlab.db")).unwrap();
    let host = HostFacts {
        cpus: 2,
        cpu_model: "Test CPU".into(),
        kernel: "6.1.0".into(),
        mmlab_version: "0.1.0".into(),
        git_commit: Some("abc1234".into()),
        git_dirty: Some(false),
    };
    let t0 = UNIX_EPOCH + Duration::from_secs(1_796_015_470);
    let a = store
        .save(
            &sample::update_path(1),
            &host,
            t0,
            t0 + Duration::from_secs(3),
        )
        .unwrap();
    store.tag(a, "base").unwrap();
    let b = store
        .save(
            &sample::update_path(2),
            &host,
            t0,
            t0 + Duration::from_secs(3),
        )
        .unwrap();
    let runs = vec![store.load(a).unwrap(), store.load(b).unwrap()];
    let html = render_stored_html("runs", &runs, &[]);
    assert!(
        html.contains(&format!("<h2>#{a} base · update-path</h2>")),
        "{html}"
    );
    assert!(html.contains(&format!("<h2>#{b} · update-path</h2>")));
    assert!(html.contains(
        "started 2026-11-30 05:11:10 UTC · 2 CPUs, Test CPU · kernel 6.1.0 · mmlab 0.1.0 (abc1234)"
    ));
    assert!(html.contains(&format!("<h2>Comparison of runs #{a} base, #{b}</h2>")));
    assert_eq!(html.matches("data-plot=\"throughput-vs-depth\"").count(), 2);
    // One run: no comparison section.
    let one = render_stored_html("one", &runs[..1], &[]);
    assert!(!one.contains("Comparison of runs"));
}

#[test]
fn scan_coverage_is_an_alias_of_vma_coverage() {
    let mut r = sample::numa01(1);
    for p in r.policies.values_mut() {
        let s = p.series.remove("vma_coverage").unwrap();
        p.series.insert("scan_coverage".into(), s);
    }
    assert_eq!(kinds(&r), ["local-fraction", "vma-coverage"]);
}

#[test]
fn histograms_of_one_metric_share_their_scale() {
    let lat = |buckets: Vec<u64>| {
        let mut p = PolicyResult::default();
        p.metrics.insert(
            "read_latency_ns".into(),
            MetricSamples {
                unit: "ns".into(),
                values: vec![1.0],
                histogram: Some(Log2Histogram { buckets }),
                ..Default::default()
            },
        );
        p
    };
    // "a" has a 1-in-100000 tail (needs a log axis); "b" alone would not.
    let r = bare(&[
        ("a", lat(vec![0, 0, 100_000, 0, 0, 1])),
        ("b", lat(vec![0, 0, 10, 20, 10])),
        ("c", lat(vec![0, 0, 0, 7])),
    ]);
    let hists: Vec<_> = plots(&r)
        .into_iter()
        .filter(|p| p.kind == "latency-histogram")
        .collect();
    assert_eq!(hists.len(), 3);
    for h in &hists {
        assert!(h.svg.contains("share of samples (log)"), "{}", h.title);
        // Every non-empty bucket draws a bar of positive height, even a
        // policy whose samples all fall in one bucket (100%).
        let tall = h
            .svg
            .split("<rect class=\"bar")
            .skip(1)
            .filter(|r| {
                let hgt = r.split("height=\"").nth(1).unwrap();
                hgt[..hgt.find('"').unwrap()].parse::<f64>().unwrap() > 1.0
            })
            .count();
        assert!(tall >= 1, "{}: {}", h.title, h.svg);
    }
    let r = bare(&[("b", lat(vec![0, 0, 10, 20, 10]))]);
    assert!(!plots(&r)[0].svg.contains("(log)"));
}

/// A kernel-mode report as stored: the built-in scenario's text and three
/// of its metrics.
fn kernel_report() -> RunReport {
    let sc = mmlab::pipeline::input::catalog()
        .builtin("update-path-kernel")
        .unwrap()
        .unwrap();
    let mut host = PolicyResult::default();
    host.push("ns_per_fault_depth1", "ns", 3000.0, false);
    host.push("ns_per_fault_depth2", "ns", 3100.0, false);
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

#[test]
fn a_kinds_tables_and_figures_come_from_its_stored_scenario() {
    let mut r = kernel_report();
    let html = render_html(std::slice::from_ref(&r));
    assert!(html.contains("<h3>page faults by depth"), "{html}");
    assert!(!html.contains("Comparison across policies"), "{html}");
    assert!(
        html.contains(r#"<figure data-kind="kernel-faults">"#),
        "{html}"
    );
    // The generic plots come first (none here), the kind's after them.
    assert!(kinds(&r).is_empty());
    // A stored text that no longer parses: the generic views only.
    r.scenario_toml = String::new();
    let html = render_html(&[r]);
    assert!(html.contains("Comparison across policies"), "{html}");
    assert!(!html.contains("kernel-faults") && !html.contains("page faults by depth"));
}

#[test]
fn a_figure_leaves_out_lines_without_points() {
    let mut f = Figure {
        kind: "k",
        title: "a <b>".into(),
        x: FigureAxis {
            label: "spike".into(),
            scale: Scale::Log2,
            whole_numbers: false,
            values: vec![4.0, 64.0],
        },
        y_label: "pages".into(),
        lines: vec![
            FigureLine {
                name: "host".into(),
                color: 3,
                points: vec![(4.0, 10.0)],
            },
            FigureLine {
                name: "predicted".into(),
                color: 5,
                points: Vec::new(),
            },
        ],
    };
    let p = figure_plot(&f).unwrap();
    assert_eq!((p.kind, p.title.as_str()), ("k", "a <b>"));
    assert_eq!(p.legend, [("host".to_string(), 3)]);
    assert!(p.svg.contains(r#"data-plot="k""#), "{}", p.svg);
    assert!(
        p.svg.contains(">64<"),
        "the axis spans every case: {}",
        p.svg
    );
    f.lines[0].points.clear();
    assert!(figure_plot(&f).is_none(), "no line has a point");
}
