//! The text renderers reproduce the source threads' formats byte for byte.

use lab::report::{Log2Histogram, MetricSamples, Mode, PolicyResult, RunReport};
use mmlab::analysis::table::ComparisonTable;
use mmlab::render::text::{
    comparison_table, percentile_label, render_histogram, render_percentiles, render_report, stars,
};
use std::collections::BTreeMap;

fn metric(unit: &str, values: &[f64]) -> MetricSamples {
    MetricSamples {
        unit: unit.into(),
        values: values.to_vec(),
        ..Default::default()
    }
}

fn policy(metrics: &[(&str, MetricSamples)]) -> PolicyResult {
    PolicyResult {
        metrics: metrics
            .iter()
            .map(|(n, m)| (n.to_string(), m.clone()))
            .collect(),
        series: BTreeMap::new(),
    }
}

/// Source 003, `funclatency -d 60 workingset_refault`, first histogram.
const SEED_HIST: &str = "     nsecs               : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 0        |                                        |
         4 -> 7          : 0        |                                        |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 0        |                                        |
        32 -> 63         : 0        |                                        |
        64 -> 127        : 0        |                                        |
       128 -> 255        : 0        |                                        |
       256 -> 511        : 4643     |**********************                  |
       512 -> 1023       : 4259     |********************                    |
      1024 -> 2047       : 1178     |*****                                   |
      2048 -> 4095       : 4044     |*******************                     |
      4096 -> 8191       : 1804     |********                                |
      8192 -> 16383      : 109      |                                        |
     16384 -> 32767      : 52       |                                        |
     32768 -> 65535      : 45       |                                        |
     65536 -> 131071     : 15       |                                        |
    131072 -> 262143     : 2        |                                        |
    262144 -> 524287     : 0        |                                        |
    524288 -> 1048575    : 7        |                                        |
   1048576 -> 2097151    : 900      |****                                    |
   2097152 -> 4194303    : 8218     |****************************************|
   4194304 -> 8388607    : 967      |****                                    |
   8388608 -> 16777215   : 89       |                                        |
";

#[test]
fn histogram_matches_seed_003_byte_for_byte() {
    let counts = [
        0, 0, 0, 0, 0, 0, 0, 0, 4643, 4259, 1178, 4044, 1804, 109, 52, 45, 15, 2, 0, 7, 900, 8218,
        967, 89,
    ];
    let mut h = Log2Histogram::default();
    for (i, c) in counts.iter().enumerate() {
        if *c > 0 {
            h.record_n(1u64 << i, *c);
        }
    }
    assert_eq!(render_histogram(&h, "ns"), SEED_HIST);
    assert_eq!(h.count(), 26332, "the source thread's count line");
}

#[test]
fn histogram_edges() {
    assert_eq!(
        render_histogram(&Log2Histogram::default(), "ns"),
        "     nsecs               : count     distribution\n"
    );
    // Values over 2^32 switch to bcc's wide layout.
    let mut h = Log2Histogram::default();
    h.record(1 << 40);
    let out = render_histogram(&h, "ns");
    assert!(
        out.starts_with("               nsecs                         : count     distribution\n")
    );
    assert!(out.contains(
        "       1099511627776 -> 2199023255551        : 1        |****************************************|"
    ));
    assert_eq!(stars(4643, 8218), 22);
    assert_eq!(stars(8218, 8218), 40);
    assert_eq!(stars(109, 8218), 0);
    assert_eq!(stars(5, 0), 0);
}

#[test]
fn percentile_lines() {
    assert_eq!(percentile_label("p999"), "p99.9");
    assert_eq!(percentile_label("p9999"), "p99.99");
    assert_eq!(percentile_label("max"), "max");
    let mut m = metric("ns", &[1000.0, 1200.0]);
    m.percentiles.insert("max".into(), vec![90000.0, 110000.0]);
    m.percentiles.insert("p999".into(), vec![40000.0, 50000.0]);
    m.percentiles.insert("p50".into(), vec![900.0, 1100.0]);
    m.percentiles.insert("p99".into(), vec![4000.0, 4096.0]);
    assert_eq!(
        render_percentiles(&m).unwrap(),
        "p50 = 1000 nsecs, p99 = 4048 nsecs, p99.9 = 45000 nsecs, max = 100000 nsecs (mean of 2 runs)"
    );
    assert!(render_percentiles(&metric("ns", &[1.0])).is_none());
}

/// Source 000's two-column table: header and rows land on the robot's columns.
#[test]
fn table_matches_robot_layout() {
    // Zero-variance repeated runs: a real difference, so no mark.
    let base = policy(&[
        (
            "will-it-scale.per_thread_ops",
            metric("ops", &[36509.0, 36509.0]),
        ),
        ("turbostat.RAMWatt", metric("W", &[27.58, 27.58])),
        ("mpstat.cpu.all.usr%", metric("%", &[2.09, 2.09])),
        (
            "numa-numastat.node0.local_node",
            metric("count", &[1.142e9, 1.142e9]),
        ),
    ]);
    let new = policy(&[
        (
            "will-it-scale.per_thread_ops",
            metric("ops", &[27079.0, 27079.0]),
        ),
        ("turbostat.RAMWatt", metric("W", &[28.59, 28.59])),
        ("mpstat.cpu.all.usr%", metric("%", &[1.61, 1.61])),
        (
            "numa-numastat.node0.local_node",
            metric("count", &[8.437e8, 8.437e8]),
        ),
    ]);
    let out = comparison_table(&[
        ("130617edc1cd1ba1", &base),
        ("51d74c18a9c61e7ee33bc90b522", &new),
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "130617edc1cd1ba1 51d74c18a9c61e7ee33bc90b522");
    assert_eq!(lines[1], "---------------- ---------------------------");
    assert_eq!(lines[2], "         %stddev     %change         %stddev");
    assert_eq!(lines[3], "             \\          |                \\");
    // Rows are in metric-name order.
    assert_eq!(
        lines[4],
        "      2.09            -0.5        1.61        mpstat.cpu.all.usr%"
    );
    assert_eq!(
        lines[5],
        " 1.142e+09           -26.1%  8.437e+08        numa-numastat.node0.local_node"
    );
    assert_eq!(
        lines[6],
        "     27.58            +3.7%      28.59        turbostat.RAMWatt"
    );
    assert_eq!(
        lines[7],
        "     36509           -25.8%      27079        will-it-scale.per_thread_ops"
    );
    assert_eq!(lines.len(), 8, "no legend without marks:\n{out}");
}

#[test]
fn table_stddev_and_noise_marks() {
    // 120.83 ± 11% -> 217.00 ± 9%, significant.
    let a = policy(&[
        (
            "perf-c2c.DRAM.local",
            metric("count", &[107.0, 120.0, 135.5]),
        ),
        ("noise", metric("ns", &[100.0, 110.0, 95.0, 105.0])),
        ("single", metric("ns", &[10.0])),
    ]);
    let b = policy(&[
        (
            "perf-c2c.DRAM.local",
            metric("count", &[197.0, 217.0, 237.0]),
        ),
        ("noise", metric("ns", &[104.0, 99.0, 115.0, 108.0])),
        ("single", metric("ns", &[12.0])),
    ]);
    let out = comparison_table(&[("base", &a), ("new", &b), ("again", &a)]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "base             new                         again"
    );
    assert_eq!(
        lines[4],
        "    102.50 ±  6%     ~+3.9%     106.50 ±  6%     ~+0.0%     102.50 ±  6%  noise"
    );
    assert_eq!(
        lines[5],
        "    120.83 ± 12%     +79.6%     217.00 ±  9%     ~+0.0%     120.83 ± 12%  perf-c2c.DRAM.local"
    );
    assert_eq!(
        lines[6],
        "     10.00          ?+20.0%      12.00           ?+0.0%      10.00        single"
    );
    assert_eq!(
        lines.last().unwrap(),
        &"~ within noise (Welch's t-test, p >= 0.05); ? not tested (fewer than 2 runs)"
    );
}

#[test]
fn missing_metrics_and_zero_baseline() {
    let a = policy(&[
        ("only_a", metric("count", &[1.0, 1.0])),
        ("zero", metric("count", &[0.0, 0.0])),
    ]);
    let b = policy(&[
        ("only_b", metric("count", &[2.0, 2.0])),
        ("zero", metric("count", &[5.0, 5.0])),
    ]);
    let t = ComparisonTable::build(&[("a", &a), ("b", &b)]);
    let names: Vec<&str> = t.rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(names, ["only_a", "only_b", "zero"]);
    assert!(t.rows[0].cells[1].mean.is_none());
    assert!(t.rows[2].cells[1].change.is_none(), "no %change against 0");
    let out = comparison_table(&[("a", &a), ("b", &b)]);
    assert!(
        out.contains("\n      1.00                                    only_a\n"),
        "{out}"
    );
    assert!(
        out.contains("\n      0.00                        5.00        zero\n"),
        "{out}"
    );
}

#[test]
fn full_report_has_header_table_and_histograms() {
    let mut lat = metric("ns", &[221955.0, 220000.0]);
    let mut h = Log2Histogram::default();
    h.record_n(200_000, 10);
    h.record_n(3_000, 2);
    lat.histogram = Some(h);
    lat.percentiles
        .insert("p50".into(), vec![200000.0, 210000.0]);
    let mut fast = metric("ns", &[1663.0, 1700.0]);
    fast.histogram = Some(Log2Histogram {
        buckets: vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12],
    });
    let report = RunReport {
        scenario: "refault-storm".into(),
        mode: Mode::Sim,
        runs: 2,
        seed: 42,
        scenario_toml: String::new(),
        policy_order: vec!["linux-5.15".into(), "linux-5.15-ratelimited".into()],
        policies: [
            (
                "linux-5.15".to_string(),
                policy(&[("refault_latency_ns", lat)]),
            ),
            (
                "linux-5.15-ratelimited".to_string(),
                policy(&[("refault_latency_ns", fast)]),
            ),
        ]
        .into_iter()
        .collect(),
        facts: Default::default(),
    };
    let out = render_report(&report);
    assert!(
        out.contains("scenario/mode/runs/seed:\n  refault-storm/sim/2/42\n"),
        "{out}"
    );
    assert!(out.contains("policy:\n  linux-5.15\n  linux-5.15-ratelimited\n"));
    assert!(out.contains("linux-5.15       linux-5.15-ratelimited\n"));
    assert!(
        out.contains("    220978 ±  1%     -99.2%       1682 ±  2%  refault_latency_ns\n"),
        "{out}"
    );
    assert!(out.contains("linux-5.15: refault_latency_ns (2 runs merged)\n\n     nsecs "));
    assert!(out.contains(
        "    131072 -> 262143     : 10       |****************************************|\n"
    ));
    assert!(
        out.contains("avg = 220978 nsecs, count: 12\np50 = 205000 nsecs (mean of 2 runs)\n"),
        "{out}"
    );
    assert!(out.contains(
        "      1024 -> 2047       : 12       |****************************************|\n"
    ));
}

#[test]
fn long_column_labels_wrap_instead_of_being_cut() {
    let a = policy(&[("ops", metric("ops/s", &[10.0, 10.0]))]);
    let b = policy(&[("ops", metric("ops/s", &[12.0, 12.0]))]);
    let out = comparison_table(&[
        ("#1 seed1 linux-5.15", &a),
        ("#2 a-very-long-tag-name-that-exceeds-27 hierstat", &b),
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "#1 seed1         #2");
    assert_eq!(lines[1], "linux-5.15       a-very-long-tag-name-that-e");
    assert_eq!(lines[2], "                 xceeds-27 hierstat");
    assert_eq!(lines[3], "---------------- ---------------------------");
    assert_eq!(lines[4], "         %stddev     %change         %stddev");
    assert_eq!(
        lines[6],
        "     10.00           +20.0%      12.00        ops"
    );
}

#[test]
fn claims_render_with_their_marks() {
    use lab::report::Claim;
    use mmlab::render::claims::render_claims;
    let claim = |claim: &str, pass: bool, info: bool| Claim {
        scenario: "s".into(),
        claim: claim.into(),
        measured: "2.00×".into(),
        published: "1.57×".into(),
        pass,
        info,
        ..Claim::default()
    };
    let text = render_claims(&[
        claim("a", true, false),
        claim("b", false, false),
        claim("c (reference)", true, true),
    ]);
    assert!(text.contains("[ok]") && text.contains("[MISS]") && text.contains("[info]"));
    assert!(text.contains("2.00×") && text.contains("1.57×"), "{text}");
    assert_eq!(render_claims(&[]), "");
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

#[test]
fn a_kinds_tables_replace_the_comparison_table() {
    // The kind is the one of the scenario stored with the report.
    let mut report = kernel_report();
    let out = render_report(&report);
    assert!(
        out.contains(
            "page faults by depth (mmap + touch + munmap per page):\n  depth  ns/fault (wall)  "
        ),
        "{out}"
    );
    assert!(out.contains("0.93x"), "CPU / predicted: {out}");
    assert!(!out.contains("%stddev"), "no generic table: {out}");
    // A stored text that no longer parses: the generic table.
    report.scenario_toml = "kind = \"gone\"\n".into();
    let out = render_report(&report);
    assert!(
        out.contains("%stddev") && out.contains("  ns_per_fault_depth1\n"),
        "{out}"
    );
    assert!(!out.contains("page faults by depth"), "{out}");
}
