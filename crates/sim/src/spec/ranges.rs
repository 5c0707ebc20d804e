//! The documented range of every numeric field of every scenario kind and
//! of the cost file, checked on the TOML tree before the typed
//! deserialization, so that an out-of-range value (a 64-bit `cpus`, a
//! `1e9` buffer, a zero cost) is reported with its file, line and dotted
//! field instead of an overflow message, an allocation failure or a hang.
//!
//! A range is `min..=max` over `f64` (integers are compared exactly when
//! they fit in 53 bits, which every bound here does). An array's elements
//! share the array's range. Fields not listed here are either not numeric
//! or rejected by `deny_unknown_fields`; the module's tests check that every
//! numeric field of every built-in file has a range.

use crate::error::ScenarioError;

/// A documented range: the dotted field (the last segment may be `*`,
/// every key of that table), its bounds and the unit or meaning shown in
/// errors.
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

const fn int(field: &'static str, min: u64, max: u64) -> Range {
    Range {
        field,
        min: min as f64,
        max: max as f64,
        integer: true,
    }
}

const fn real(field: &'static str, min: f64, max: f64) -> Range {
    Range {
        field,
        min,
        max,
        integer: false,
    }
}

/// 2^30: pages of one update or spike (4 TiB).
const PAGES_MAX: u64 = 1 << 30;
/// Ten minutes in milliseconds: the longest duration, period or warm-up.
const MS_MAX: u64 = 600_000;
/// The header keys every kind shares.
const HEADER: [Range; 2] = [int("runs", 1, 1000), int("seed", 0, i64::MAX as u64)];

/// The `[[policy]]` tables' numeric knobs (stats and refault kinds).
const POLICY: [Range; 5] = [
    int("policy.batch", 1, 4096),
    int("policy.period_ms", 1, 3_600_000),
    int("policy.pages_per_shard", 1, PAGES_MAX),
    int("policy.fixed_pages", 1, PAGES_MAX),
    int("policy.max_wait_ms", 0, 60_000),
];

/// `kind = "kernel"`: sizes of the host experiments (real cgroups, real
/// processes and real memory, so the bounds are what a host survives).
pub const KERNEL: &[Range] = &[
    HEADER[0],
    HEADER[1],
    int("update_path.depths", 1, 64),
    int("update_path.pages", 1, 1 << 20),
    int("update_path.rounds", 1, 10_000),
    int("update_path.warmup_rounds", 0, 1000),
    int("update_path.runs", 1, 100),
    int("stat_readers.groups", 1, 20_000),
    int("stat_readers.writers", 0, 64),
    int("stat_readers.readers", 1, 64),
    int("stat_readers.reads_per_reader", 1, 1_000_000),
    real("stat_readers.period_ms", 0.0, 60_000.0),
    int("stat_readers.writer_pages", 1, 1 << 20),
    real("stat_readers.warmup_ms", 0.0, 60_000.0),
    int("stat_readers.seed", 0, i64::MAX as u64),
    int("stale_read.spikes_kib", 1, 4 << 20),
    int("stale_read.repetitions", 1, 100_000),
    real("stale_read.pause_ms", 0.0, 60_000.0),
];

/// `kind = "stats"`.
pub const STATS: &[Range] = &[
    HEADER[0],
    HEADER[1],
    POLICY[0],
    POLICY[1],
    POLICY[2],
    POLICY[3],
    POLICY[4],
    int("duration_ms", 1, MS_MAX),
    int("cpus", 1, crate::cpu::MAX_CPUS as u64),
    int("threads", 1, 256),
    int("tree.fanout", 1, super::stats::MAX_GROUPS),
    int("writers.cpus", 1, crate::cpu::MAX_CPUS as u64),
    real("writers.rate_per_cpu", 0.0, 1e7),
    real("writers.hot_fraction", 0.0, 1.0),
    int("writers.pages", 1, PAGES_MAX),
    real("writers.thp_fraction", 0.0, 1.0),
    int("writers.items", 1, 64),
    real("writers.uncharge_fraction", 0.0, 1.0),
    int("writers.burst", 1, 4096),
    int("readers.count", 0, 1_000_000),
    real("readers.period_ms", 0.001, MS_MAX as f64),
    int("readers.items", 1, 64),
    int("flusher.period_ms", 1, MS_MAX),
    real("spikes.every_ms", 0.001, MS_MAX as f64),
    int("spikes.pages", 1, PAGES_MAX),
    int("spikes.read_after_us", 0, 10_000_000),
    int("update.depths", 1, 64),
    int("update.pages", 1, PAGES_MAX),
    int("update.items", 1, 64),
];

/// `kind = "refault"`.
pub const REFAULT: &[Range] = &[
    HEADER[0],
    HEADER[1],
    POLICY[0],
    POLICY[1],
    POLICY[2],
    POLICY[3],
    POLICY[4],
    int("refault.cpus", 1, crate::cpu::MAX_CPUS as u64),
    int("refault.nodes", 1, 64),
    int("refault.duration_ms", 1, MS_MAX),
    int("refault.warmup_ms", 0, MS_MAX),
    int("refault.services", 1, 10_000),
    int("refault.flush_period_ms", 1, MS_MAX),
    real("refault.background.updates_per_sec_per_cpu", 0.0, 1e7),
    int("refault.background.pages", 1, 1 << 20),
    int("refault.background.services_per_cpu", 1, 10_000),
    int("refault.background.burst", 1, 4096),
    int("refault.workload.cpus", 1, crate::cpu::MAX_CPUS as u64),
    real("refault.workload.accesses_per_sec_per_cpu", 0.001, 1e7),
    int("refault.workload.memory_max_mb", 1, 1 << 20),
    int("refault.workload.swap_mb", 0, 1 << 20),
    int("refault.workload.file_mb", 1, 1 << 16),
    real("refault.workload.hot_fraction", 0.0, 1.0),
    real("refault.workload.hot_access", 0.0, 1.0),
    int("refault.workload.anon_min_mb", 0, 1 << 20),
    int("refault.workload.anon_max_mb", 0, 1 << 20),
    int("refault.workload.anon_period_ms", 1, MS_MAX),
    int("refault.workload.anon_touch_per_tick", 0, 1 << 20),
    int("refault.latency.base_ns", 1, 1_000_000_000),
    int("refault.latency.counters_per_line", 1, 64),
    int("refault.latency.kworker_delay_us", 0, 10_000_000),
];

/// `kind = "numab"`.
pub const NUMAB: &[Range] = &[
    HEADER[0],
    HEADER[1],
    int("numab.nodes", 1, 8),
    int("numab.cpus_per_node", 1, 256),
    int("numab.mem_per_node_mib", 1, 1 << 24),
    int("numab.sample_interval_ms", 1, 3_600_000),
    int("numab.max_virtual_s", 1, 86_400),
    int("numab.workload.buffer_mib", 1, 1 << 16),
    int("numab.workload.passes", 1, 100_000),
    int("numab.workload.threads", 1, 1024),
    real("numab.workload.thp_fraction", 0.0, 1.0),
    int("numab.workload.stack_kib", 4, 1 << 20),
    int("numab.workload.stack_pages", 1, 1 << 18),
    int("numab.workload.premap_passes", 0, 100),
    int("numab.workload.set1_threads", 0, 1024),
    int("numab.workload.set2_threads", 0, 1024),
    int("numab.workload.set3_threads", 0, 1024),
    int("numab.workload.vma_x_mib", 1, 1 << 16),
    int("numab.workload.vma_y_mib", 1, 1 << 16),
    int("numab.workload.vma_z_mib", 1, 1 << 16),
    int("numab.workload.vma_w_mib", 1, 1 << 16),
    int("numab.workload.vma_v_mib", 1, 1 << 16),
    int("numab.workload.set2_duty_percent", 0, 100),
    int("numab.workload.d_start_s", 0, 86_400),
    int("numab.workload.late_s", 0, 86_400),
    int("numab.workload.duration_s", 1, 86_400),
    int("numab.sysctl.scan_period_min_ms", 1, 3_600_000),
    int("numab.sysctl.scan_period_max_ms", 1, 3_600_000),
    int("numab.sysctl.scan_size_mb", 1, 1 << 20),
    int("numab.sysctl.scan_delay_ms", 0, 3_600_000),
    int("numab.sysctl.hz", 100, 1000),
    int("numab.cost.jitter_permille", 0, 1000),
    int("numab.cost.speed_spread_permille", 0, 1000),
    int("numab.cost.*", 0, 1_000_000_000),
];

/// The simulator's cost file (`mmlab calibrate`, `--costs`): every cost in
/// ns. An engine call costs at least 0.1 ns, so virtual time always
/// advances (a zero-cost call would let a back-to-back writer loop forever
/// at one instant).
pub const COSTS: &[Range] = &[real("call_ns", 0.1, 1e6), real("*", 0.0, 1e6)];

/// The range that applies to `field` (exact match first, then the
/// table's `*`).
pub fn find(ranges: &[Range], field: &str) -> Option<Range> {
    if let Some(r) = ranges.iter().find(|r| r.field == field) {
        return Some(*r);
    }
    let table = field.rsplit_once('.').map_or("", |(t, _)| t);
    ranges.iter().copied().find(|r| {
        r.field
            .strip_suffix('*')
            .is_some_and(|prefix| prefix.strip_suffix('.').unwrap_or(prefix) == table)
    })
}

/// Checks every numeric value of `text` (a TOML document) against
/// `ranges`; `file` names it in errors. Syntax errors are left to the
/// typed deserialization (which reports them with their line).
///
/// # Errors
/// The first value outside its range (or a fraction where an integer is
/// expected), with the file, its line and its dotted field.
pub fn check(file: &str, text: &str, ranges: &[Range]) -> Result<(), ScenarioError> {
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    walk(file, text, ranges, "", &table)
}

fn walk(
    file: &str,
    text: &str,
    ranges: &[Range],
    prefix: &str,
    table: &toml::Table,
) -> Result<(), ScenarioError> {
    for (key, value) in table {
        let field = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        check_value(file, text, ranges, &field, value)?;
    }
    Ok(())
}

fn check_value(
    file: &str,
    text: &str,
    ranges: &[Range],
    field: &str,
    value: &toml::Value,
) -> Result<(), ScenarioError> {
    let (v, is_int) = match value {
        toml::Value::Table(t) => return walk(file, text, ranges, field, t),
        toml::Value::Array(a) => {
            for item in a {
                // Arrays of tables (`[[x]]`) are checked as tables of `field`.
                check_value(file, text, ranges, field, item)?;
            }
            return Ok(());
        }
        toml::Value::Integer(i) => (*i as f64, true),
        toml::Value::Float(f) => (*f, false),
        _ => return Ok(()),
    };
    let Some(r) = find(ranges, field) else {
        return Ok(());
    };
    let shown = match value {
        toml::Value::Integer(i) => i.to_string(),
        _ => v.to_string(),
    };
    let bounds = if r.integer {
        format!("{}..={}", r.min as u64, r.max as u64)
    } else {
        format!("{}..={}", r.min, r.max)
    };
    if r.integer && !is_int {
        return Err(ScenarioError::at(
            file,
            text,
            field,
            format!("{shown} is not an integer (range {bounds})"),
        ));
    }
    if !v.is_finite() || v < r.min || v > r.max {
        return Err(ScenarioError::at(
            file,
            text,
            field,
            format!("{shown} is not in {bounds}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every numeric leaf of `t`, as dotted fields.
    fn numeric_fields(prefix: &str, t: &toml::Table, out: &mut Vec<String>) {
        for (k, v) in t {
            let f = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                toml::Value::Table(t) => numeric_fields(&f, t, out),
                toml::Value::Integer(_) | toml::Value::Float(_) => out.push(f),
                toml::Value::Array(a) if a.iter().any(|x| x.is_integer() || x.is_float()) => {
                    out.push(f)
                }
                _ => {}
            }
        }
    }

    #[test]
    fn every_numeric_field_of_every_builtin_has_a_range() {
        for (name, text) in crate::spec::BUILTIN {
            let sc = crate::spec::Scenario::parse(name, text).unwrap();
            let ranges = super::super::ranges_of(sc.kind());
            let t: toml::Table = text.parse().unwrap();
            let mut fields = Vec::new();
            numeric_fields("", &t, &mut fields);
            for f in fields {
                assert!(find(ranges, &f).is_some(), "{name}: {f} has no range");
            }
        }
        let t: toml::Table = crate::cost::DEFAULT_COSTS_TOML.parse().unwrap();
        let mut fields = Vec::new();
        numeric_fields("", &t, &mut fields);
        for f in fields {
            assert!(find(COSTS, &f).is_some(), "costs: {f}");
        }
    }

    #[test]
    fn wildcard_and_exact_lookups() {
        assert_eq!(
            find(NUMAB, "numab.cost.jitter_permille").unwrap().max,
            1000.0
        );
        assert_eq!(find(NUMAB, "numab.cost.tlb_flush_ns").unwrap().max, 1e9);
        assert!(find(NUMAB, "numab.other").is_none());
        assert_eq!(find(COSTS, "call_ns").unwrap().min, 0.1);
        assert_eq!(find(COSTS, "atomic_ns").unwrap().min, 0.0);
    }

    #[test]
    fn a_64_bit_value_names_file_line_and_field() {
        let text = "a = 1\n[numab]\nnodes = 5000000000\n";
        let e = check("f.toml", text, NUMAB).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("numab.nodes", Some(3)));
        assert!(e.message.contains("5000000000 is not in 1..=8"), "{e}");
        let e = check("f.toml", "x = 1\n[numab.workload]\npasses = 1.5\n", NUMAB).unwrap_err();
        assert!(e.message.contains("not an integer"), "{e}");
    }
}
