//! The crate README's "Expose your tree to Prometheus" example is the crate
//! docs' doc-tested example, line for line (the doc test's hidden `# `
//! lines aside).

const MARKER: &str = "<!-- hierstat-exporter example: crates/hierstat-exporter/src/lib.rs -->";

fn readme_example(readme: &str) -> Vec<String> {
    let after = readme
        .split_once(MARKER)
        .expect("the README has the exporter example marker")
        .1;
    let body = after.trim_start().strip_prefix("```rust,ignore\n").expect(
        "a rust block follows the marker (`ignore`d there: it is doc-tested in the crate docs)",
    );
    let end = body.find("\n```").expect("the block ends");
    body[..end].lines().map(str::to_string).collect()
}

fn doc_example(lib: &str) -> Vec<String> {
    let docs: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let start = docs
        .iter()
        .position(|l| *l == "# Expose your tree to Prometheus")
        .expect("the crate docs have the example heading");
    let open = start + docs[start..].iter().position(|l| *l == "```").unwrap();
    let close = open + 1 + docs[open + 1..].iter().position(|l| *l == "```").unwrap();
    docs[open + 1..close]
        .iter()
        .filter(|l| !(l.starts_with("# ") || **l == "#"))
        .map(|l| l.to_string())
        .collect()
}

#[test]
fn readme_example_is_the_doc_tested_one() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let lib = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs")).unwrap();
    let (a, b) = (readme_example(&readme), doc_example(&lib));
    assert_eq!(a, b);
    assert!(
        a.len() <= 15,
        "the README promises a 15-line example: {}",
        a.len()
    );
}
