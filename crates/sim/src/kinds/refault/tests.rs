use super::*;
use crate::cost::CostModel;
use crate::error::SimError;
use hierstat::Preset;
use lab::progress::{Progress, RunOptions, Steps};
use lab::{PolicySpec, Source};

/// [`run_with`] under the default options, `progress` told of each step.
fn run(
    spec: &RefaultSpec,
    policies: &[String],
    user: &[PolicySpec],
    runs: u32,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, PolicyResult>, SimError> {
    let header = lab::Header {
        name: "refault-storm".into(),
        mode: lab::report::Mode::Sim,
        description: String::new(),
        reproduces: String::new(),
        policies: policies.to_vec(),
        runs,
        seed,
        user_policies: user
            .iter()
            .map(|s| lab::policy::UserPolicy::new(s.clone()).unwrap())
            .collect(),
    };
    let opts = RunOptions::default();
    run_with(spec, &header, &mut Steps::new(&opts, progress))
}

fn parse(file: &str, text: &str) -> Result<RefaultScenario, lab::ScenarioError> {
    RefaultScenario::parse(&Source::new(file, text))
}

fn show(name: &str, o: &StormOutcome) {
    let mut s = o.refault_latencies.clone();
    s.sort_unstable();
    let p99 = simcore::stats::quantile(&s, 0.99);
    eprintln!(
        "{name:24} refaults {:6} anon {:5} mean {:9.0} ns p99 {:9} flushes {:5} fl_mean {:9.0} mismatch {:.4} act {:.3}/{:.3} skip {} waits {} ({} ns) async {} evict {} ooms {}",
        o.refaults,
        o.anon_refaults,
        o.mean_refault_ns(),
        p99,
        o.refault_flushes,
        storm::mean(&o.flush_latencies),
        o.mismatch_rate(),
        storm::ratio(o.activations, o.refaults),
        storm::ratio(o.exact_activations, o.refaults),
        o.skipped_flushes,
        o.flush_waits,
        o.flush_wait_ns,
        o.async_requests,
        o.evictions,
        o.ooms,
    );
}

/// A smaller machine for debug-build tests: 32 CPUs, 50 services.
fn reduced() -> RefaultSpec {
    let mut s = RefaultSpec {
        cpus: 32,
        nodes: 2,
        duration_ms: 1500,
        warmup_ms: 300,
        services: 50,
        ..RefaultSpec::default()
    };
    s.background.services_per_cpu = 24;
    s.workload = WorkloadSpec {
        cpus: 8,
        accesses_per_sec_per_cpu: 300.0,
        memory_max_mb: 128,
        swap_mb: 512,
        file_mb: 256,
        anon_min_mb: 24,
        anon_max_mb: 88,
        anon_period_ms: 1000,
        anon_touch_per_tick: 16,
        ..WorkloadSpec::default()
    };
    s
}

fn reduced_run(p: &str) -> StormOutcome {
    let o = run_once(&reduced(), p.parse().unwrap(), 1, &CostModel::defaults()).unwrap();
    show(p, &o);
    o
}

/// Source 003 side by side at reduced size: the synchronous root flush of
/// 5.15 makes refaults at least 20x slower than the ratelimited fix, which
/// pays with stale decisions; ours keeps decisions exact.
#[test]
fn seed_003_direction_at_reduced_size() {
    let v515 = reduced_run("linux-5.15");
    let rl = reduced_run("linux-5.15-ratelimited");
    let ours = reduced_run("hierstat");
    for o in [&v515, &rl, &ours] {
        assert!(o.refaults > 1000, "enough refaults: {}", o.refaults);
        assert_eq!(o.ooms, 0);
    }
    assert!(
        v515.mean_refault_ns() >= 20.0 * rl.mean_refault_ns(),
        "5.15 {} vs ratelimited {}",
        v515.mean_refault_ns(),
        rl.mean_refault_ns()
    );
    assert!(v515.refault_flushes > 0 && rl.refault_flushes == 0);
    assert!(
        rl.mismatch_rate() > 0.005,
        "stale stats flip decisions: {}",
        rl.mismatch_rate()
    );
    assert!(
        ours.mismatch_rate() <= rl.mismatch_rate() / 10.0,
        "ours {} vs ratelimited {}",
        ours.mismatch_rate(),
        rl.mismatch_rate()
    );
    assert!(
        ours.mean_refault_ns() <= 2.0 * rl.mean_refault_ns(),
        "ours {} vs ratelimited {}",
        ours.mean_refault_ns(),
        rl.mean_refault_ns()
    );
}

#[test]
fn same_seed_same_outcome() {
    let mut s = reduced();
    s.duration_ms = 400;
    let a = run_once(&s, Preset::Linux5_15, 9, &CostModel::defaults()).unwrap();
    let b = run_once(&s, Preset::Linux5_15, 9, &CostModel::defaults()).unwrap();
    assert_eq!(a, b);
    let c = run_once(&s, Preset::Linux5_15, 10, &CostModel::defaults()).unwrap();
    assert_ne!(a.refault_latencies, c.refault_latencies);
}

#[test]
fn builtin_file_parses_and_errors_name_line_and_field() {
    let text = include_str!("../../../../../scenarios/refault-storm.toml");
    let sc = parse("refault-storm.toml", text).unwrap();
    assert_eq!(sc.refault.cpus, 96);
    assert!(sc.refault.services >= 50);
    assert_eq!(sc.policies.len(), 6);
    let bad = text.replace("services_per_cpu = 48", "services_per_cpu = \"x\"");
    let e = parse("f.toml", &bad).unwrap_err();
    assert_eq!(e.field, "refault.background.services_per_cpu");
    let line = text
        .lines()
        .position(|l| l.starts_with("services_per_cpu"))
        .unwrap()
        + 1;
    assert_eq!(e.line, Some(line));
    let bad = text.replace("anon_max_mb = 352", "anon_max_mb = 9999");
    let e = parse("f.toml", &bad).unwrap_err();
    assert_eq!(e.field, "refault.workload.anon_max_mb");
    let bad = text.replace("kind = \"refault\"", "kind = \"stats\"");
    assert!(parse("f.toml", &bad).is_err());
    let e = run(
        &sc.refault,
        &["linux-4.0".to_string()],
        &[],
        1,
        1,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(
        e,
        SimError::Run(lab::RunError::UnknownPolicy { .. })
    ));
}

#[test]
fn hot_path_plans_follow_each_preset() {
    use hierstat::sim::Simulator as _;
    use hierstat::{
        sim::{ManualClock, Shard},
        Config, HierStats, Schema, Unit,
    };
    let mut b = Schema::builder();
    let item = b.state("x", Unit::Pages);
    let schema = b.build().unwrap();
    let plan_on = |p: Preset, pages: i64, now: u64, touched: usize| {
        let clock = ManualClock::new(0);
        let t = HierStats::new(
            schema.clone(),
            Config::preset(p).shards(4).clock(clock.clone()),
        )
        .unwrap();
        let g = t.create(&t.root(), "g").unwrap();
        for s in 0..touched {
            t.add_with(Shard(s), &g, item, pages, &mut ()).unwrap();
        }
        clock.set(now);
        match flush::Plan::hot_path(&t, &g) {
            flush::Plan::None => "none",
            flush::Plan::Async => "async",
            flush::Plan::Flush(x) if x.same(&t.root()) => "root",
            flush::Plan::Flush(_) => "subtree",
        }
    };
    let plan = |p: Preset, pages: i64, now: u64| plan_on(p, pages, now, 4);
    let late = 5_000_000_000;
    // Under the threshold nothing flushes; above it each rule differs.
    assert_eq!(plan(Preset::Linux5_15, 1, 0), "none");
    assert_eq!(plan(Preset::Linux5_15, 1000, 0), "root");
    assert_eq!(plan(Preset::Linux5_15Async, 1000, 0), "async");
    assert_eq!(plan(Preset::Linux5_15Ratelimited, 1000, 0), "none");
    assert_eq!(plan(Preset::Linux5_15Ratelimited, 1000, late), "root");
    assert_eq!(plan(Preset::Linux6_8, 1000, 0), "none");
    assert_eq!(plan(Preset::Linux6_8, 1000, late), "subtree");
    assert_eq!(plan(Preset::Linux6_17, 1000, late), "subtree");
    assert_eq!(plan(Preset::Hierstat, 1000, 0), "async");
    // Ours: T = 64 x 4 = 256 pages of folded magnitude (reservations only
    // widen the reported bound): four 1-page updates fold nothing, four
    // 130-page updates (folded at once) cross it (520) and hand the flush
    // to the kworker.
    assert_eq!(plan_on(Preset::Hierstat, 1, 0, 4), "none");
    assert_eq!(plan_on(Preset::Hierstat, 130, 0, 4), "async");
    assert_eq!(plan(Preset::Linux5_13, 1000, late), "none");
}

#[test]
fn report_has_the_metric_names() {
    let mut s = reduced();
    s.duration_ms = 300;
    s.warmup_ms = 100;
    let mut steps = 0;
    let out = run(
        &s,
        &["linux-5.15".to_string(), "hierstat".to_string()],
        &[],
        2,
        1,
        &mut |p| steps += u32::from(matches!(p, Progress::Step(_))),
    )
    .unwrap();
    assert_eq!(steps, 4);
    for r in out.values() {
        for m in [
            "refault_latency_ns",
            "flush_latency_ns",
            "decision_mismatch_rate",
        ] {
            assert_eq!(r.metrics[m].values.len(), 2, "{m}");
        }
        let h = r.metrics["refault_latency_ns"].histogram.as_ref().unwrap();
        assert!(h.count() > 0);
        assert!(r.metrics["refault_latency_ns"]
            .percentiles
            .contains_key("p99"));
    }
}

/// The full scenario side by side (release build, ~20 s): the suite's
/// claims on `refault-storm`, with the figures printed.
#[test]
#[ignore = "release build, ~20 s"]
fn full_scenario_report() {
    let text = include_str!("../../../../../scenarios/refault-storm.toml");
    let t = std::time::Instant::now();
    let sc = crate::catalog().parse("refault-storm.toml", text).unwrap();
    let r = sc.run(&RunOptions::default(), &mut |_| {}).unwrap();
    eprintln!("host {:?}, {} runs", t.elapsed(), r.runs);
    let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for p in &r.policy_order {
        let m = &r.policies[p].metrics;
        let lat = &m["refault_latency_ns"];
        eprintln!(
            "{p:24} refault mean {:9.0} ns p99 {:9.0} ns | flush mean {:9.0} ns p99 {:9.0} | mismatch {:.4} | flush fraction {:.4} | refaults/s {:.0}",
            avg(&lat.values),
            avg(&lat.percentiles["p99"]),
            avg(&m["flush_latency_ns"].values),
            avg(&m["flush_latency_ns"].percentiles["p99"]),
            avg(&m["decision_mismatch_rate"].values),
            avg(&m["refault_flush_fraction"].values),
            avg(&m["refaults_per_sec"].values),
        );
    }
    let mean = |p: &str| avg(&r.policies[p].metrics["refault_latency_ns"].values);
    let mism = |p: &str| avg(&r.policies[p].metrics["decision_mismatch_rate"].values);
    assert!(mean("linux-5.15") >= 20.0 * mean("linux-5.15-ratelimited"));
    assert!(mism("hierstat") <= mism("linux-5.15-ratelimited") / 10.0);
    assert!(mean("hierstat") <= 2.0 * mean("linux-5.15-ratelimited"));
}

/// Why the `hierstat` preset keeps the kernel's `64 x shards` threshold:
/// with Waiman Long's `batch x isqrt(shards + 2)` (288 pages on 96 CPUs at
/// our batch of 32) the refault path asks the background flusher about
/// 2.4 times as often (more root flushes, more lock waits) to get the last
/// 0.05% of decisions right; the refault latency is the same, since
/// neither flushes on the refault path.
#[test]
#[ignore = "release build, ~5 s"]
fn a_sqrt_threshold_doubles_background_flush_requests() {
    use hierstat::{HotPathFlush, ThresholdSize};
    let text = include_str!("../../../../../scenarios/refault-storm.toml");
    let sc = parse("refault-storm.toml", text).unwrap();
    let base = Preset::Hierstat.policy();
    let costs = CostModel::defaults();
    let ours = run_once_policy(&sc.refault, base, sc.seed, &costs).unwrap();
    let mut sqrt = base;
    sqrt.threshold_size = ThresholdSize::BatchSqrtShards;
    let sqrt = run_once_policy(&sc.refault, sqrt, sc.seed, &costs).unwrap();
    let mut rl = base;
    rl.hot_path = HotPathFlush::Ratelimited;
    let rl = run_once_policy(&sc.refault, rl, sc.seed, &costs).unwrap();
    show("hierstat", &ours);
    show("hierstat T=64*isqrt(shards+2)", &sqrt);
    show("hierstat ratelimited", &rl);
    // The refault path no longer flushes (over the threshold it asks the
    // kworker), so the threshold sets the background flush work: the sqrt
    // threshold asks 2.4x as often for 0.05% of decisions.
    assert!(ours.async_requests * 2 < sqrt.async_requests);
    assert!(ours.mean_refault_ns() <= 1.05 * rl.mean_refault_ns());
    assert!(ours.mismatch_rate() <= rl.mismatch_rate() / 10.0);
}

/// A `[[policy]]` runs the knobs it resolves to: the same outcome as
/// [`run_once_policy`] on those knobs, and a preset's results when it
/// overrides nothing.
#[test]
fn a_user_policy_runs_its_knobs() {
    let mut s = reduced();
    s.duration_ms = 200;
    s.warmup_ms = 50;
    let mut rl = PolicySpec::new("hierstat-rl", Preset::Hierstat);
    rl.hot_path = Some(hierstat::HotPathFlush::Ratelimited);
    let same = PolicySpec::new("same-as-68", Preset::Linux6_8);
    let names = [
        "hierstat-rl".to_string(),
        "same-as-68".to_string(),
        "linux-6.8".to_string(),
    ];
    let out = run(&s, &names, &[rl.clone(), same], 1, 3, &mut |_| {}).unwrap();
    assert_eq!(out["same-as-68"], out["linux-6.8"]);
    let direct = run_once_policy(&s, rl.resolve().unwrap(), 3, &CostModel::defaults()).unwrap();
    let mut want = lab::report::PolicyResult::default();
    super::push_outcome(&mut want, &direct);
    assert_eq!(out["hierstat-rl"], want);
    let e = run(&s, &["nope".into()], &[rl], 1, 3, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("hierstat-rl"), "{e}");
}

/// Refaults that read as a policy's `read_tolerance` says (issue 37), on
/// the reduced storm: every read of every mode within its bound of the
/// exact list sizes and every tolerance read within its budget; an exact
/// read (0, forced) has no error; the flushes fall as the tolerance grows
/// (forced every refault, clean none). (An exact read flushes every
/// refault too: the refault counts itself in the eviction group before it
/// reads, so the group's bound is never 0 then.)
#[test]
fn refaults_read_within_their_tolerance() {
    use lab::reader::ReadMode;
    let mut s = reduced();
    s.duration_ms = 300;
    s.warmup_ms = 100;
    let costs = CostModel::defaults();
    let knobs = Preset::Hierstat.policy();
    let mut flushes = Vec::new();
    for mode in ["forced", "0", "0.1%", "1%", "10%", "clean", "guarded"] {
        let read: ReadMode = mode.parse().unwrap();
        let o = run_once_read(&s, knobs, read, 1, &costs).unwrap();
        show(mode, &o);
        let reads = o.read_errors.len() as u64;
        assert!(reads > 200, "{mode}: {reads} reads");
        assert_eq!(o.read_flush_ns.len() as u64, reads, "{mode}");
        assert_eq!(o.stale_reads, 0, "{mode}: out of bound");
        assert_eq!(o.unmet_reads, 0, "{mode}: over budget");
        let worst = o.read_errors.iter().max().copied().unwrap_or(0);
        match mode {
            "forced" | "0" => assert_eq!(worst, 0, "{mode}: an exact read"),
            "clean" => assert!(worst > 0, "clean reads stale lists"),
            _ => {}
        }
        if mode == "forced" {
            assert_eq!(o.refault_flushes, reads, "forced: every refault flushes");
        }
        if mode == "clean" {
            assert_eq!(o.refault_flushes, 0);
            assert!(o.read_flush_ns.iter().all(|&ns| ns == 0));
        }
        flushes.push((mode, o.refault_flushes));
    }
    // Flush work monotone in the tolerance, from forced to clean.
    for w in flushes[..6].windows(2) {
        assert!(w[0].1 >= w[1].1, "{flushes:?}");
    }
    assert!(
        flushes[4].1 < flushes[0].1,
        "10% flushes less than forced: {flushes:?}"
    );
}

/// A `[[policy]]`'s `read_tolerance` reaches the storm: its runs are
/// [`run_once_read`]'s in that mode, with the per-read metrics (for every
/// policy of the run, the preset's too); a run whose policies all read
/// `guarded` keeps the report it had.
#[test]
fn a_policy_read_tolerance_reaches_the_storm() {
    let mut s = reduced();
    s.duration_ms = 200;
    s.warmup_ms = 50;
    let mut within = PolicySpec::new("read=1%", Preset::Hierstat);
    within.read_tolerance = Some("1%".parse().unwrap());
    let names = ["read=1%".to_string(), "hierstat".to_string()];
    let out = run(&s, &names, &[within.clone()], 1, 3, &mut |_| {}).unwrap();
    let costs = CostModel::defaults();
    let direct = run_once_read(
        &s,
        within.resolve().unwrap(),
        within.read_tolerance.unwrap(),
        3,
        &costs,
    )
    .unwrap();
    let mut want = lab::report::PolicyResult::default();
    super::push_outcome(&mut want, &direct);
    super::push_reads(&mut want, &direct);
    assert_eq!(out["read=1%"], want);
    for m in [
        "read_error_pages",
        "read_flush_ns",
        "stale_reads",
        "unmet_reads",
    ] {
        assert!(out["hierstat"].metrics.contains_key(m), "{m}");
    }
    let plain = run(&s, &["hierstat".to_string()], &[], 1, 3, &mut |_| {}).unwrap();
    assert!(!plain["hierstat"].metrics.contains_key("read_error_pages"));
    let direct = run_once(&s, Preset::Hierstat, 3, &costs).unwrap();
    let mut want = lab::report::PolicyResult::default();
    super::push_outcome(&mut want, &direct);
    assert_eq!(plain["hierstat"], want);
}

#[test]
fn tolerance_refault_is_refault_storm_with_read_policies() {
    let storm = parse(
        "refault-storm.toml",
        include_str!("../../../../../scenarios/refault-storm.toml"),
    )
    .unwrap();
    let tol = parse(
        "tolerance-refault.toml",
        include_str!("../../../../../scenarios/tolerance-refault.toml"),
    )
    .unwrap();
    // The same storm: only the policies differ.
    assert_eq!(tol.refault, storm.refault);
    let reads: Vec<_> = tol
        .policy
        .iter()
        .map(|p| (p.name.as_str(), p.read_tolerance.map(|m| m.to_string())))
        .collect();
    assert_eq!(
        reads,
        [
            ("read=forced", Some("forced".to_string())),
            ("read=0", Some("0".to_string())),
            ("read=0.1%", Some("0.1%".to_string())),
            ("read=1%", Some("1%".to_string())),
            ("read=10%", Some("10%".to_string())),
            ("read=clean", Some("clean".to_string())),
        ]
    );
}

#[test]
fn the_latency_claims_miss_says_which_way_it_missed() {
    use lab::report::report_from_rows as report;
    let run = |l515: f64| {
        report(
            "refault-storm",
            &[
                ("linux-5.15", REFAULT_LATENCY_NS, l515),
                ("linux-5.15-ratelimited", REFAULT_LATENCY_NS, 1000.0),
            ],
        )
    };
    let why = |l515: f64| claims(&run(l515))[0].why.clone();
    // 46.6x, as this suite measures it: under half the source's 133x.
    assert!(why(46_600.0).contains("2x larger product"));
    // 400x: over twice it.
    assert!(why(400_000.0).contains("under half as large"));
    // 133x holds: no reason.
    assert!(why(133_000.0).is_empty());
}
