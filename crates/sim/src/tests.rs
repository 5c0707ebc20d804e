//! The simulated kinds through the framework: every built-in parses to its
//! kind with every number in a range, overrides and added policies apply to
//! every kind, and every estimate and probe fits its limits.

use crate::catalog;
use hierstat::Preset;
use lab::estimate::{Limits, Rates};
use lab::policy::UserPolicy;
use lab::{ranges, Context, PolicySpec, Source};

#[test]
fn every_builtin_parses_to_its_kind_and_every_number_has_a_range() {
    let c = catalog();
    for k in c.kinds() {
        for (name, text) in k.builtins {
            let s = c
                .builtin(name)
                .expect("listed")
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((s.name(), s.kind()), (*name, k.name));
            let src = Source::new(name, text);
            let tables: [&[ranges::Range]; 3] = [k.ranges, &ranges::HEADER, &ranges::POLICY];
            for f in numeric_fields(src.doc().unwrap()) {
                assert!(
                    ranges::find(&tables, &f).is_some(),
                    "{name}: {f} has no range"
                );
            }
        }
    }
    let names: Vec<&str> = c.builtin_names().collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a built-in name is listed twice");
}

/// Every numeric leaf of `t`, as dotted fields.
pub(crate) fn numeric_fields(t: &toml_edit::Table) -> Vec<String> {
    let v: toml::Table = t.to_string().parse().unwrap();
    let mut out = Vec::new();
    walk("", &v, &mut out);
    out
}

fn walk(prefix: &str, t: &toml::Table, out: &mut Vec<String>) {
    for (k, v) in t {
        let f = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => walk(&f, t, out),
            toml::Value::Integer(_) | toml::Value::Float(_) => out.push(f),
            toml::Value::Array(a) if a.iter().any(|x| x.is_integer() || x.is_float()) => {
                out.push(f)
            }
            toml::Value::Array(a) => {
                for x in a {
                    if let toml::Value::Table(t) = x {
                        walk(&f, t, out);
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn bad_kind_and_numab_errors_name_line_and_field() {
    let c = catalog();
    let e = c
        .parse("k.toml", "name = \"x\"\nkind = \"nope\"\n")
        .unwrap_err();
    assert_eq!((e.field.as_str(), e.line), ("kind", Some(2)));
    assert!(e.message.contains("known: stats, numab, refault"), "{e}");
    let (_, numa02) = ::numab::BUILTIN[3];
    let bad = numa02.replacen("policies = [", "policies = [\"v9\", ", 1);
    let e = c.parse("n.toml", &bad).unwrap_err();
    assert_eq!(e.field, "policies");
    assert!(e.line.is_some());
    assert!(e.message.contains("v9"), "{}", e.message);
}

#[test]
fn added_policies_are_in_the_stored_text() {
    let c = catalog();
    let p = UserPolicy::new(PolicySpec {
        threshold_size: Some(hierstat::ThresholdSize::BatchSqrtShards),
        ..PolicySpec::new("sq", Preset::Linux6_8)
    })
    .unwrap();
    for name in ["refault-storm", "stale-read"] {
        let mut s = c.builtin(name).unwrap().unwrap();
        s.add_policies(std::slice::from_ref(&p)).unwrap();
        s.add_policies(std::slice::from_ref(&p)).unwrap();
        let again = c.parse("stored", &s.source()).unwrap();
        assert_eq!(again.user_policies(), std::slice::from_ref(&p), "{name}");
        let other = UserPolicy::new(PolicySpec::new("sq", Preset::Hierstat)).unwrap();
        assert!(s.add_policies(&[other]).is_err());
    }
    let mut n = c.builtin("numa02").unwrap().unwrap();
    assert!(n.add_policies(&[p]).is_err());
}

#[test]
fn overrides_apply_to_every_kind() {
    let c = catalog();
    for name in ["stale-read", "numa02", "refault-storm"] {
        let mut s = c.builtin(name).unwrap().unwrap();
        s.apply(&lab::Overrides {
            policies: vec!["p".into()],
            runs: Some(3),
            seed: Some(9),
            duration_ms: Some(5),
        });
        assert_eq!(
            (s.policies(), s.runs(), s.seed()),
            (&["p".to_string()][..], 3, 9)
        );
    }
}

#[test]
fn every_builtin_fits_the_default_limits_with_room() {
    let ctx = Context::default();
    let limits = Limits::default();
    let rates = Rates::default();
    let c = catalog();
    for name in c.builtin_names() {
        let e = c.builtin(name).unwrap().unwrap().estimate(&ctx);
        assert!(e.exceeds(&limits, &rates).is_none(), "{name}: {e}");
        assert!(e.memory_bytes * 4.0 < limits.memory_bytes, "{name}: {e}");
        assert!(e.events * 4.0 < limits.events, "{name}: {e}");
        assert!(e.wall_seconds(&rates) * 4.0 < limits.seconds, "{name}: {e}");
        assert!(e.class.is_some() || e.seconds > 0.0, "{name}: no time");
    }
}

#[test]
fn every_probe_parses_and_has_work_of_its_class() {
    let ctx = Context::default();
    let c = catalog();
    let classes = c.work_classes();
    assert_eq!(classes.len(), 4, "two stats classes, numab, refault");
    for class in classes {
        let probe = class.probe.expect("every simulated class has a probe");
        let sc = c
            .parse(&format!("<probe {}>", class.name), probe)
            .unwrap_or_else(|e| panic!("{}: {e}", class.name));
        let e = sc.estimate(&ctx);
        assert_eq!(e.class.map(|k| k.name), Some(class.name));
        // Tens of milliseconds at the reference rate: long enough to
        // measure, short enough to run before a command.
        let s = e.cpu_seconds(&Rates::default());
        assert!((0.01..0.4).contains(&s), "{}: {s} s", class.name);
        assert_eq!(c.work_class(class.name).map(|k| k.name), Some(class.name));
    }
}

#[test]
fn huge_scenarios_exceed() {
    let ctx = Context::default();
    let (_, numa02) = ::numab::BUILTIN[3];
    let big = numa02.replace("buffer_mib = 1024", "buffer_mib = 65536");
    let big = big.replace("passes = 800", "passes = 100000");
    let e = catalog().parse("n.toml", &big).unwrap().estimate(&ctx);
    assert!(
        e.exceeds(&Limits::default(), &Rates::default()).is_some(),
        "{e}"
    );
}

/// The charge-path replay (scenarios/replays): each step of the 2022
/// series is 6.0-rc1's path with its one change, and the stored text of a
/// run (its machine by name, its policies whole) parses back the same.
#[test]
fn the_charge_path_replay_changes_one_knob_a_step() {
    use lab::kernel::{CounterLayout, Protection, CHARGE_6_1};
    let text = include_str!("../../../scenarios/replays/charge-path-2022.toml");
    let s = catalog()
        .parse("scenarios/replays/charge-path-2022.toml", text)
        .unwrap();
    let h = s.header();
    let path = |n: &str| h.flush_policy(n).unwrap().path.charge;
    let rc1 = path("6.0-rc1");
    assert_eq!(
        (rc1.stock_pages, rc1.counter_layout, rc1.protection),
        (32, CounterLayout::SharedLine, Protection::EveryCharge)
    );
    assert_eq!(path("6.0-rc1+A").protection, Protection::OnChange);
    assert_eq!(path("6.0-rc1+B").counter_layout, CounterLayout::OwnLine);
    assert_eq!(path("6.0-rc1+C").stock_pages, 64);
    assert_eq!(path("6.0-rc1+ABC"), CHARGE_6_1);
    let again = catalog().parse("stored", &s.source()).unwrap();
    assert_eq!(again.source(), s.source());
}
