//! Property test: parse the rendered exposition back and compare every
//! sample with `read` after a flush — and that nothing else is there —
//! with and without the per-node split, and with items denied.

use hierstat::{Config, Group, HierStats, ItemId, NodeItemId, Preset, Schema, Unit};
use hierstat_exporter::{Exporter, Format, ScrapePolicy};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// A series: sample name and its labels, sorted.
type Series = (String, Vec<(String, String)>);

/// Parses exposition text strictly: headers before their samples, one
/// `# TYPE` per family, samples of declared families only, valid escapes,
/// no duplicate series, `# EOF` last for OpenMetrics.
fn parse(text: &str, format: Format) -> Result<BTreeMap<Series, String>, String> {
    let mut out = BTreeMap::new();
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<(String, String)> = None; // (family, type)
    let mut lines = text.split_terminator('\n').peekable();
    if !text.ends_with('\n') {
        return Err("no final newline".into());
    }
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("# ") {
            if rest == "EOF" {
                if format != Format::OpenMetrics || lines.peek().is_some() {
                    return Err("misplaced # EOF".into());
                }
                return Ok(out);
            }
            let mut parts = rest.splitn(3, ' ');
            let (kw, name, arg) = (
                parts.next().unwrap(),
                parts.next().ok_or("short header")?,
                parts.next().ok_or("short header")?,
            );
            match kw {
                "TYPE" => {
                    if types.insert(name.to_string(), arg.to_string()).is_some() {
                        return Err(format!("second TYPE for {name}"));
                    }
                    current = Some((name.to_string(), arg.to_string()));
                }
                "UNIT" if format == Format::OpenMetrics => {
                    if current.as_ref().map(|c| c.0.as_str()) != Some(name)
                        || !name.ends_with(&format!("_{arg}"))
                    {
                        return Err(format!("UNIT {arg} for {name} misplaced or not a suffix"));
                    }
                }
                "HELP" => {
                    if format == Format::OpenMetrics
                        && current.as_ref().map(|c| c.0.as_str()) != Some(name)
                    {
                        return Err(format!("HELP for {name} outside its family"));
                    }
                }
                _ => return Err(format!("unexpected header {line:?}")),
            }
            continue;
        }
        let brace = line
            .find('{')
            .ok_or_else(|| format!("no labels: {line:?}"))?;
        let name = &line[..brace];
        let (family, ty) = current.as_ref().ok_or("sample before any TYPE")?;
        let expected_name = match (format, ty.as_str()) {
            (Format::OpenMetrics, "counter") => format!("{family}_total"),
            _ => family.clone(),
        };
        if name != expected_name {
            return Err(format!("sample {name} in family {family} ({ty})"));
        }
        // Labels: k="v" pairs with \\, \", \n escapes.
        let mut labels = Vec::new();
        let mut chars = line[brace + 1..].char_indices();
        let body = &line[brace + 1..];
        let end;
        loop {
            let start = chars.next().ok_or("unterminated labels")?;
            if start.1 == '}' {
                end = start.0 + 1;
                break;
            }
            let mut key = String::from(start.1);
            loop {
                let (_, c) = chars.next().ok_or("unterminated label name")?;
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if chars.next().map(|c| c.1) != Some('"') {
                return Err("label value without quote".into());
            }
            let mut value = String::new();
            loop {
                match chars.next().ok_or("unterminated label value")?.1 {
                    '"' => break,
                    '\\' => match chars.next().ok_or("dangling escape")?.1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    '\n' => return Err("raw newline in label value".into()),
                    c => value.push(c),
                }
            }
            labels.push((key, value));
            match chars.next().ok_or("unterminated labels")?.1 {
                ',' => {}
                '}' => {
                    end = chars.next().map_or(body.len(), |c| c.0);
                    break;
                }
                c => return Err(format!("unexpected {c:?} after a label")),
            }
        }
        let value = body[end..]
            .strip_prefix(' ')
            .ok_or("no space before value")?;
        if value.is_empty() || value.contains(' ') {
            return Err(format!("bad value {value:?}"));
        }
        labels.sort();
        if out
            .insert((name.to_string(), labels), value.to_string())
            .is_some()
        {
            return Err(format!("duplicate series in {line:?}"));
        }
    }
    match format {
        Format::OpenMetrics => Err("no # EOF".into()),
        Format::Prometheus => Ok(out),
    }
}

struct Tree {
    stats: HierStats,
    anon: ItemId,
    file: NodeItemId,
    faults: ItemId,
    io: ItemId,
    xy: ItemId,
}

fn tree(nodes: usize) -> Tree {
    let mut b = Schema::builder();
    let anon = b.state("anon", Unit::Bytes);
    let file = b.node_state("file", Unit::Pages);
    let faults = b.event("pgfault.count", Unit::Count);
    let io = b.event("io_total", Unit::Bytes);
    let xy = b.state("x-y", Unit::Count);
    b.nodes(nodes);
    let stats = HierStats::new(
        b.build().unwrap(),
        Config::preset(Preset::Hierstat).shards(2),
    )
    .unwrap();
    Tree {
        stats,
        anon,
        file,
        faults,
        io,
        xy,
    }
}

/// The schema's item names, in the order `expected` and the updates use.
const ITEMS: [&str; 5] = ["anon", "file", "pgfault.count", "io_total", "x-y"];

/// What the exporter must show: every exported group's value of every item
/// not in `denied`, per node or as the total over nodes.
fn expected(
    t: &Tree,
    groups: &[Group],
    nodes: usize,
    per_node: bool,
    denied: &BTreeSet<usize>,
) -> BTreeMap<Series, String> {
    let s = &t.stats;
    let mut m = BTreeMap::new();
    for g in groups {
        let path = || vec![("path".to_string(), g.path().to_string())];
        for (local, pre) in [(false, "p_"), (true, "p_local_")] {
            let plain = |item| {
                if local {
                    s.read_local(g, item)
                } else {
                    s.read(g, item)
                }
                .unwrap()
                .to_string()
            };
            for (i, name, item) in [
                (0, "anon_bytes", t.anon),
                (2, "pgfault_count_total", t.faults),
                (3, "io_bytes_total", t.io),
                (4, "x_y", t.xy),
            ] {
                if !denied.contains(&i) {
                    m.insert((format!("{pre}{name}"), path()), plain(item));
                }
            }
            let file = |node| {
                if local {
                    s.read_node_local(g, t.file, node)
                } else {
                    s.read_node(g, t.file, node)
                }
                .unwrap()
                .to_string()
            };
            if denied.contains(&1) {
                continue;
            }
            if per_node {
                for n in 0..nodes {
                    let mut labels = vec![
                        ("node".to_string(), n.to_string()),
                        ("path".to_string(), g.path().to_string()),
                    ];
                    labels.sort();
                    m.insert((format!("{pre}file_pages"), labels), file(Some(n)));
                }
            } else {
                m.insert((format!("{pre}file_pages"), path()), file(None));
            }
        }
        let bound = s
            .error_bound_pages(g)
            .unwrap()
            .map_or("+Inf".to_string(), |b| b.to_string());
        m.insert(("p_error_bound_pages".to_string(), path()), bound);
    }
    m
}

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9 _.\"\\\\\n\u{e9}{}=,-]{1,8}"
        .prop_filter("a valid group name", |n| n != "." && n != "..")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_sample_matches_read_after_flush(
        nodes in 1usize..=3,
        shape in prop::collection::vec((any::<prop::sample::Index>(), name()), 1..24),
        updates in prop::collection::vec(
            (any::<prop::sample::Index>(), 0usize..5, 0usize..3, -5000i64..5000),
            0..120,
        ),
        openmetrics in any::<bool>(),
        subtree in any::<bool>(),
        per_node in any::<bool>(),
        denied in prop::collection::btree_set(0usize..5, 0..3),
    ) {
        let t = tree(nodes);
        let s = &t.stats;
        let mut groups = vec![s.root()];
        for (parent, n) in &shape {
            let p = parent.get(&groups).clone();
            if let Ok(g) = s.create(&p, n) {
                groups.push(g);
            }
        }
        for (g, item, node, delta) in &updates {
            let g = g.get(&groups);
            match item {
                0 => s.add(g, t.anon, *delta).unwrap(),
                1 => s.add_node(g, t.file, node % nodes, *delta).unwrap(),
                2 => s.add(g, t.faults, delta.abs()).unwrap(),
                3 => s.add(g, t.io, delta.abs() * 4096).unwrap(),
                _ => s.add(g, t.xy, *delta).unwrap(),
            }
        }
        let root = if subtree && groups.len() > 1 { groups[1].clone() } else { s.root() };
        let exporter = Exporter::builder(s.clone())
            .prefix("p_")
            .local(true)
            .bounds(true)
            .per_node(per_node)
            .deny_items(denied.iter().map(|&i| ITEMS[i]))
            .subtree(root.clone())
            .policy(ScrapePolicy::Flush)
            .build()
            .unwrap();
        let format = if openmetrics { Format::OpenMetrics } else { Format::Prometheus };
        let text = exporter.render_to_string(format).unwrap();
        let parsed = parse(&text, format).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        // The flush happened in render; reading now sees the same values.
        let exported: Vec<Group> = s
            .groups()
            .into_iter()
            .filter(|g| g.same(&root) || g.path().starts_with(&format!("{}/", root.path().trim_end_matches('/'))))
            .collect();
        prop_assert_eq!(parsed, expected(&t, &exported, nodes, per_node, &denied));
    }
}

#[test]
fn the_parser_rejects_what_it_should() {
    for (text, format) in [
        ("a{x=\"1\"} 1\n", Format::Prometheus),
        ("# TYPE a gauge\na{x=\"\\q\"} 1\n", Format::Prometheus),
        (
            "# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n",
            Format::Prometheus,
        ),
        (
            "# TYPE a counter\na{x=\"1\"} 1\n# EOF\n",
            Format::OpenMetrics,
        ),
        (
            "# TYPE a_b gauge\n# UNIT a_b pages\na_b{x=\"1\"} 1\n# EOF\n",
            Format::OpenMetrics,
        ),
        ("# TYPE a gauge\na{x=\"1\"} 1\n", Format::OpenMetrics),
    ] {
        assert!(parse(text, format).is_err(), "accepted {text:?}");
    }
    let ok = "# TYPE a_pages gauge\n# UNIT a_pages pages\n# HELP a_pages h\na_pages{x=\"q\\\"\\\\\\n\",n=\"0\"} 1\n# EOF\n";
    let parsed = parse(ok, Format::OpenMetrics).unwrap();
    let labels = vec![
        ("n".to_string(), "0".to_string()),
        ("x".to_string(), "q\"\\\n".to_string()),
    ];
    assert_eq!(parsed[&("a_pages".to_string(), labels)], "1");
}
