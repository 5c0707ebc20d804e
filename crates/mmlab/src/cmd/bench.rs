//! `mmlab bench`: the engine's costs and ratios against the baselines,
//! measured side by side in one run by the engine benchmark harness
//! (`hierstat_bench::suite`: its cases, their interleaved repetitions on the
//! thread CPU clock, medians and ranges, ratios within each repetition and
//! their targets), and the simulators' own speed.
//!
//! Every case, ratio and target is defined once, in the harness (the
//! criterion benches, `cargo bench -p hierstat-bench --features
//! criterion`, time the same cases); `docs/json.md` lists the names. This
//! command adds the rates: `sim_engine_updates_per_sec` (target ≥ 5 M/s,
//! engine updates per second of host time in simulated mode, 22 logical
//! CPUs) and `numab_units_per_sec` (page-table units the NUMA-balancing
//! simulator processes per second of host time, on `numa02` with the
//! `mmlab` scanner).

use crate::cli::BenchArgs;
use crate::render::json::write_json;
use anyhow::{Context, Result};
use hierstat_bench::suite::{self, Report};
use hierstat_bench::Figure;
use serde_json::json;
use sim::runner::sim as simrun;
use std::collections::BTreeMap;
use std::io::Write;

/// Host ns per engine update in simulated mode (22 CPUs, one group at
/// depth 2, `hierstat` preset), and the updates done.
pub fn time_sim_updates(virtual_ms: u64) -> Result<(f64, u64)> {
    let (o, ns) = simrun::update_probe(virtual_ms).context("building the engine")?;
    Ok((ns / o.updates.max(1) as f64, o.updates))
}

/// Page-table units per second of the NUMA-balancing simulator (`numa02`,
/// `mmlab` scanner).
pub fn numab_rate() -> Result<f64> {
    use numab::{bench_throughput, builtin_scenario, ScannerVersion};
    let file = builtin_scenario("numa02").context("the numa02 scenario is built in")?;
    let (rate, _) = bench_throughput(&file.numab, ScannerVersion::Mmlab, file.seed)
        .map_err(|e| anyhow::anyhow!("numab bench: {e}"))?;
    Ok(rate)
}

/// `mmlab bench`.
pub fn cmd_bench(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    let opts = suite::Options::standard(args.quick);
    let mut pb = crate::pipeline::progress::Reporter::new("bench");
    pb.total(opts.reps as u64 + 3);
    let report = suite::run(&opts, &mut |round| {
        if round == 0 {
            pb.step("cases built");
        } else {
            pb.step(&format!("round {round}/{}", opts.reps));
        }
    })?;
    let (sim_ns, _) = time_sim_updates(if args.quick { 1 } else { 4 })?;
    pb.step("sim");
    let numab = numab_rate()?;
    pb.step("numab");
    pb.finish();

    let mut rates: BTreeMap<String, f64> = BTreeMap::new();
    rates.insert("sim_engine_updates_per_sec".into(), 1e9 / sim_ns);
    rates.insert("numab_units_per_sec".into(), numab);
    let mut ns = BTreeMap::new();
    for (k, f) in &report.ns_per_op {
        ns.insert(k.clone(), f.median);
    }
    ns.insert("sim_engine_update".into(), sim_ns);

    let to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    if !to_stdout {
        print_text(&report, &rates, sim_ns, out)?;
    }
    if let Some(p) = &args.json {
        write_json(p, &to_json(&report, ns, &rates), out)?;
    }
    Ok(())
}

fn range(f: &Figure) -> [f64; 2] {
    [f.min, f.max]
}

/// The JSON `docs/json.md` describes: medians under the names, ranges
/// and targets beside them.
fn to_json(
    r: &Report,
    ns: BTreeMap<String, f64>,
    rates: &BTreeMap<String, f64>,
) -> serde_json::Value {
    let ratios: BTreeMap<&str, f64> = r
        .ratios
        .iter()
        .map(|(k, v)| (k.as_str(), v.figure.median))
        .collect();
    let ns_ranges: BTreeMap<&str, [f64; 2]> = r
        .ns_per_op
        .iter()
        .map(|(k, f)| (k.as_str(), range(f)))
        .collect();
    let ratio_ranges: BTreeMap<&str, [f64; 2]> = r
        .ratios
        .iter()
        .map(|(k, v)| (k.as_str(), range(&v.figure)))
        .collect();
    let targets: BTreeMap<&str, serde_json::Value> = r
        .ratios
        .iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                json!({"target": v.def.target.to_string(),
                       "met": v.def.target.met(v.figure.median)}),
            )
        })
        .collect();
    json!({
        "ns_per_op": ns,
        "ratios": ratios,
        "rates": rates,
        "repetitions": r.reps,
        "ranges": {"ns_per_op": ns_ranges, "ratios": ratio_ranges},
        "targets": targets,
    })
}

fn print_text(
    r: &Report,
    rates: &BTreeMap<String, f64>,
    sim_ns: f64,
    out: &mut dyn Write,
) -> Result<()> {
    writeln!(
        out,
        "ns per op: median [range] of {} interleaved repetitions, on the thread CPU clock:",
        r.reps
    )?;
    for (k, f) in &r.ns_per_op {
        writeln!(
            out,
            "  {k:<38} {:>12.2}  [{:.2}–{:.2}]",
            f.median, f.min, f.max
        )?;
    }
    writeln!(out, "  {:<38} {sim_ns:>12.2}", "sim_engine_update")?;
    writeln!(
        out,
        "\nratios: median [range] of the ratios within each repetition; target:"
    )?;
    for (k, v) in &r.ratios {
        let f = &v.figure;
        let verdict = match v.def.target.met(f.median) {
            Some(true) => " (met)",
            Some(false) => " (missed)",
            None => "",
        };
        writeln!(
            out,
            "  {k:<40} {:>8.3}  [{:.3}–{:.3}]  {}{verdict}",
            f.median, f.min, f.max, v.def.target
        )?;
    }
    writeln!(out, "\nrates:")?;
    for (k, v) in rates {
        writeln!(out, "  {k:<38} {:>12.2} M/s", v / 1e6)?;
    }
    Ok(())
}
