//! Numeric ranges: every bound of every numeric field lives in one table
//! per file kind, and is checked here on the TOML tree before the typed
//! deserialization, so that an out-of-range value (a 64-bit `cpus`, a
//! `1e9` buffer, a zero cost) is reported with its file, line and dotted
//! field instead of an overflow message, an allocation failure or a hang.
//!
//! The tables: the header keys every kind shares ([`HEADER`]) and the
//! `[[policy]]` knobs ([`POLICY`]) here, each scenario kind's own next to
//! its parser (`Kind::ranges`), the cost file's in `sim::cost::RANGES`.
//! A range is `min..=max` over `f64` (integers are compared exactly: every
//! bound fits in 53 bits). An array's elements share the array's range.
//! Fields not listed are either not numeric or refused by
//! `deny_unknown_fields`; each kind's tests check that every numeric field
//! of its built-in files has a range.

use crate::error::ScenarioError;
use crate::source::Source;

/// A documented range: the dotted field (the last segment may be `*`,
/// every key of that table), its bounds, and whether it is an integer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// Dotted field path (`writers.rate_per_cpu`, `numab.cost.*`).
    pub field: &'static str,
    /// Smallest accepted value.
    pub min: f64,
    /// Largest accepted value.
    pub max: f64,
    /// Integer field (a fraction is refused).
    pub integer: bool,
}

impl Range {
    /// An integer range.
    pub const fn int(field: &'static str, min: u64, max: u64) -> Range {
        Range {
            field,
            min: min as f64,
            max: max as f64,
            integer: true,
        }
    }

    /// A real range.
    pub const fn real(field: &'static str, min: f64, max: f64) -> Range {
        Range {
            field,
            min,
            max,
            integer: false,
        }
    }

    /// The bounds as shown in errors (`1..=1024`).
    pub fn bounds(&self) -> String {
        if self.integer {
            format!("{}..={}", self.min as u64, self.max as u64)
        } else {
            format!("{}..={}", self.min, self.max)
        }
    }

    /// Whether `v` is inside.
    pub fn contains(&self, v: f64) -> bool {
        v.is_finite() && v >= self.min && v <= self.max
    }
}

/// 2^30: pages of one update or spike (4 TiB).
pub const PAGES_MAX: u64 = 1 << 30;
/// Ten minutes in milliseconds: the longest duration, period or warm-up.
pub const MS_MAX: u64 = 600_000;
/// The most runs per policy.
pub const RUNS_MAX: u64 = 1000;

/// The header keys every kind shares (`runs`, `seed`).
pub const HEADER: [Range; 2] = [
    Range::int("runs", 1, RUNS_MAX),
    Range::int("seed", 0, i64::MAX as u64),
];

/// The `[[policy]]` tables' numeric knobs (the kinds that run flush
/// policies; sweep points are checked against them too).
pub const POLICY: [Range; 7] = [
    Range::int("policy.batch", 1, 4096),
    Range::int("policy.lines_per_level", 1, 16),
    Range::int("policy.stock_pages", 1, 65_536),
    Range::int("policy.period_ms", 1, 3_600_000),
    Range::int("policy.pages_per_shard", 1, PAGES_MAX),
    Range::int("policy.fixed_pages", 1, PAGES_MAX),
    Range::int("policy.max_wait_ms", 0, 60_000),
];

/// The range that applies to `field` among `tables`: the first exact
/// match (so an earlier table overrides a later one), then the table's
/// `*`; an index into an array of tables (`policy[1]`) does not count.
pub fn find(tables: &[&[Range]], field: &str) -> Option<Range> {
    let unindexed;
    let field = if field.contains('[') {
        unindexed = field
            .split('.')
            .map(|s| s.split('[').next().unwrap_or(s))
            .collect::<Vec<_>>()
            .join(".");
        unindexed.as_str()
    } else {
        field
    };
    let all = || tables.iter().flat_map(|t| t.iter().copied());
    if let Some(r) = all().find(|r| r.field == field) {
        return Some(r);
    }
    let table = field.rsplit_once('.').map_or("", |(t, _)| t);
    all().find(|r| {
        r.field
            .strip_suffix('*')
            .is_some_and(|prefix| prefix.strip_suffix('.').unwrap_or(prefix) == table)
    })
}

/// Checks `value` (a number given for `field` outside a file: a sweep
/// point's knob) against `tables`.
///
/// # Errors
/// A message naming the bounds.
pub fn check_value(tables: &[&[Range]], field: &str, value: &toml::Value) -> Result<(), String> {
    let (v, is_int, shown) = match value {
        toml::Value::Integer(i) => (*i as f64, true, i.to_string()),
        toml::Value::Float(f) => (*f, false, f.to_string()),
        _ => return Ok(()),
    };
    verdict(find(tables, field), v, is_int, &shown)
}

fn verdict(range: Option<Range>, v: f64, is_int: bool, shown: &str) -> Result<(), String> {
    let Some(r) = range else {
        return Ok(());
    };
    if r.integer && !is_int {
        return Err(format!("{shown} is not an integer (range {})", r.bounds()));
    }
    if !r.contains(v) {
        return Err(format!("{shown} is not in {}", r.bounds()));
    }
    Ok(())
}

/// Checks every numeric value of `src` against `tables`. A file that does
/// not parse is left to the typed deserialization (which reports the
/// syntax error with its line).
///
/// # Errors
/// The first value outside its range (or a fraction where an integer is
/// expected), with the file, its line and its dotted field.
pub fn check(src: &Source<'_>, tables: &[&[Range]]) -> Result<(), ScenarioError> {
    let Some(doc) = src.doc() else {
        return Ok(());
    };
    walk(src, tables, "", doc)
}

fn walk(
    src: &Source<'_>,
    tables: &[&[Range]],
    prefix: &str,
    table: &dyn toml_edit::TableLike,
) -> Result<(), ScenarioError> {
    for (name, _) in table.iter() {
        let Some((key, item)) = table.get_key_value(name) else {
            continue;
        };
        let field = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        };
        let line = key
            .span()
            .map(|s| crate::source::line_of(src.text, s.start));
        check_item(src, tables, &field, line, item)?;
    }
    Ok(())
}

fn check_item(
    src: &Source<'_>,
    tables: &[&[Range]],
    field: &str,
    line: Option<usize>,
    item: &toml_edit::Item,
) -> Result<(), ScenarioError> {
    match item {
        toml_edit::Item::Table(t) => walk(src, tables, field, t),
        // Arrays of tables (`[[x]]`): each is named `x[i]` in errors and
        // checked against the ranges of `x`.
        toml_edit::Item::ArrayOfTables(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, t)| walk(src, tables, &format!("{field}[{i}]"), t)),
        toml_edit::Item::Value(v) => check_one(src, tables, field, line, v),
        toml_edit::Item::None => Ok(()),
    }
}

fn check_one(
    src: &Source<'_>,
    tables: &[&[Range]],
    field: &str,
    line: Option<usize>,
    value: &toml_edit::Value,
) -> Result<(), ScenarioError> {
    let (v, is_int, shown) = match value {
        toml_edit::Value::InlineTable(t) => return walk(src, tables, field, t),
        toml_edit::Value::Array(a) => {
            return a
                .iter()
                .try_for_each(|x| check_one(src, tables, field, line, x))
        }
        toml_edit::Value::Integer(i) => (*i.value() as f64, true, i.value().to_string()),
        toml_edit::Value::Float(f) => (*f.value(), false, f.value().to_string()),
        _ => return Ok(()),
    };
    verdict(find(tables, field), v, is_int, &shown).map_err(|message| ScenarioError {
        file: src.file.to_string(),
        line: line.or_else(|| src.line_of(field)),
        field: field.to_string(),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &[Range] = &[
        Range::int("numab.nodes", 1, 8),
        Range::int("numab.workload.passes", 1, 100_000),
        Range::int("numab.cost.jitter_permille", 0, 1000),
        Range::int("numab.cost.*", 0, 1_000_000_000),
    ];

    #[test]
    fn wildcard_and_exact_lookups() {
        assert_eq!(
            find(&[T], "numab.cost.jitter_permille").unwrap().max,
            1000.0
        );
        assert_eq!(find(&[T], "numab.cost.tlb_flush_ns").unwrap().max, 1e9);
        assert!(find(&[T], "numab.other").is_none());
        assert_eq!(find(&[&HEADER, T], "runs").unwrap().max, 1000.0);
    }

    #[test]
    fn a_64_bit_value_names_file_line_and_field() {
        let text = "a = 1\n[numab]\nnodes = 5000000000\n";
        let e = check(&Source::new("f.toml", text), &[T]).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("numab.nodes", Some(3)));
        assert!(e.message.contains("5000000000 is not in 1..=8"), "{e}");
        let text = "x = 1\n[numab.workload]\npasses = 1.5\n";
        let e = check(&Source::new("f.toml", text), &[T]).unwrap_err();
        assert!(e.message.contains("not an integer"), "{e}");
        let text = "[numab]\nworkload = { passes = [3, 0] }\n";
        let e = check(&Source::new("f.toml", text), &[T]).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("numab.workload.passes", Some(2))
        );
        assert!(check_value(&[&POLICY], "policy.batch", &toml::Value::Integer(0)).is_err());
        assert!(check_value(&[&POLICY], "policy.batch", &toml::Value::Integer(64)).is_ok());
    }
}
