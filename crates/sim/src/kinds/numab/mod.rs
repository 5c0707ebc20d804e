//! The `numab` kind: the NUMA-balancing scanner model (the `numab` crate)
//! under each scanner version, on autonuma-benchmark workloads (source
//! 004). The schema is the numab crate's [`numab::ScenarioFile`]; this
//! kind reads it with file, line and field in its errors, checks what the
//! model needs ([`numab::NumabScenario::plan`]), runs it and states the
//! claims ([`run`]).

pub mod estimate;
pub mod run;

use lab::progress::Steps;
use lab::report::{Claim, Mode, RunReport};
use lab::ScenarioError;
use lab::{Context, Estimate, Header, Kind, Range, RunError, RunOutput, Source, Spec};
use numab::{NumabScenario, ScannerVersion, ScenarioFile};

/// The ranges of the numab kind's numeric fields.
pub const RANGES: &[Range] = &[
    Range::int("numab.nodes", 1, numab::MAX_NODES as u64),
    Range::int("numab.cpus_per_node", 1, 256),
    Range::int("numab.mem_per_node_mib", 1, 1 << 24),
    Range::int("numab.sample_interval_ms", 1, 3_600_000),
    Range::int("numab.max_virtual_s", 1, 86_400),
    Range::int("numab.workload.buffer_mib", 1, 1 << 16),
    Range::int("numab.workload.passes", 1, 100_000),
    Range::int("numab.workload.threads", 1, 1024),
    Range::real("numab.workload.thp_fraction", 0.0, 1.0),
    Range::int("numab.workload.stack_kib", 4, 1 << 20),
    Range::int("numab.workload.stack_pages", 1, 1 << 18),
    Range::int("numab.workload.premap_passes", 0, 100),
    Range::int("numab.workload.set1_threads", 0, 1024),
    Range::int("numab.workload.set2_threads", 0, 1024),
    Range::int("numab.workload.set3_threads", 0, 1024),
    Range::int("numab.workload.vma_x_mib", 1, 1 << 16),
    Range::int("numab.workload.vma_y_mib", 1, 1 << 16),
    Range::int("numab.workload.vma_z_mib", 1, 1 << 16),
    Range::int("numab.workload.vma_w_mib", 1, 1 << 16),
    Range::int("numab.workload.vma_v_mib", 1, 1 << 16),
    Range::int("numab.workload.set2_duty_percent", 0, 100),
    Range::int("numab.workload.d_start_s", 0, 86_400),
    Range::int("numab.workload.late_s", 0, 86_400),
    Range::int("numab.workload.duration_s", 1, 86_400),
    Range::int("numab.sysctl.scan_period_min_ms", 1, 3_600_000),
    Range::int("numab.sysctl.scan_period_max_ms", 1, 3_600_000),
    Range::int("numab.sysctl.scan_size_mb", 1, 1 << 20),
    Range::int("numab.sysctl.scan_delay_ms", 0, 3_600_000),
    Range::int("numab.sysctl.hz", 100, 1000),
    Range::int("numab.cost.jitter_permille", 0, 1000),
    Range::int("numab.cost.speed_spread_permille", 0, 1000),
    Range::int("numab.cost.*", 0, 1_000_000_000),
];

/// The `numab` kind.
pub static KIND: Kind = Kind {
    name: "numab",
    ranges: RANGES,
    builtins: &numab::BUILTIN,
    work_classes: &[&estimate::NUMAB],
    parse,
};

/// A parsed numab scenario: the `[numab]` table and the file's own text
/// (stored with its runs).
#[derive(Debug, Clone, PartialEq)]
pub struct NumabSpec {
    /// The model's parameters.
    pub numab: NumabScenario,
    /// The file's text.
    pub text: String,
}

fn parse(src: &Source<'_>) -> Result<(Header, Box<dyn Spec>), ScenarioError> {
    let sc: ScenarioFile = src.deserialize()?;
    if sc.kind != "numab" {
        return Err(src.error("kind", format!("`{}` is not `numab`", sc.kind)));
    }
    if sc.mode != "sim" {
        return Err(src.error("mode", "the NUMA-balancing model runs in sim mode only"));
    }
    let sysctl = &sc.numab.sysctl;
    if sysctl.scan_period_min_ms > sysctl.scan_period_max_ms {
        return Err(src.error_between(
            "numab.sysctl.scan_period_min_ms",
            &["numab.sysctl.scan_period_max_ms"],
            format!(
                "{} is more than scan_period_max_ms = {}",
                sysctl.scan_period_min_ms, sysctl.scan_period_max_ms
            ),
        ));
    }
    sc.numab
        .plan()
        .map_err(|e| src.error(&plan_field(&e.to_string()), e.to_string()))?;
    let header = Header {
        name: sc.name,
        mode: Mode::Sim,
        description: sc.description,
        reproduces: String::new(),
        policies: sc.policies,
        runs: sc.runs,
        seed: sc.seed,
        user_policies: Vec::new(),
    };
    Ok((
        header,
        Box::new(NumabSpec {
            numab: sc.numab,
            text: src.text.to_string(),
        }),
    ))
}

impl Spec for NumabSpec {
    fn known_policies(&self) -> Vec<String> {
        ScannerVersion::ALL.iter().map(|v| v.to_string()).collect()
    }

    fn user_policies_refused(&self) -> Option<&'static str> {
        Some("runs scanner versions, not flush policies")
    }

    fn parallelism(&self, _header: &Header) -> u32 {
        self.numab.ncpus()
    }

    fn estimate(&self, header: &Header, _ctx: &Context) -> Estimate {
        estimate::estimate(&self.numab, header)
    }

    fn run(&self, header: &Header, steps: &mut Steps<'_>) -> Result<RunOutput, RunError> {
        Ok(run::run(header, &self.numab, steps)?.into())
    }

    fn claims(&self, report: &RunReport) -> Vec<Claim> {
        run::claims(report)
    }

    fn source(&self, _header: &Header) -> String {
        self.text.clone()
    }

    /// One run; the sizes set in its own table stay.
    fn shrink_for_smoke_test(&mut self, header: &mut Header) {
        header.runs = 1;
    }
}

/// The field a `numab` plan error is about: the key it starts with
/// (`nodes = 0`) under `numab`, a key of the workload it names, or the
/// workload table.
fn plan_field(message: &str) -> String {
    let message = message
        .strip_prefix("bad numab scenario: ")
        .unwrap_or(message);
    let first = message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    match first {
        "nodes" | "cpus_per_node" | "sample_interval_ms" | "mem_per_node_mib" | "max_virtual_s" => {
            format!("numab.{first}")
        }
        "" => "numab.workload".to_string(),
        key if message.starts_with(&format!("{key} ="))
            || key.ends_with("_mib")
            || key.ends_with("_threads") =>
        {
            format!("numab.workload.{key}")
        }
        _ => "numab.workload".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_errors_name_their_field() {
        assert_eq!(plan_field("bad numab scenario: nodes = 0"), "numab.nodes");
        assert_eq!(plan_field("threads = 0"), "numab.workload.threads");
        assert_eq!(plan_field("too many threads"), "numab.workload");
    }

    #[test]
    fn semantic_errors_carry_file_and_line() {
        let (_, numa02) = ::numab::BUILTIN[3];
        let bad = numa02.replace("[numab]", "[numab]\n# a comment");
        let bad = bad.replace("passes = 800", "passes = 800\nthreads = 1000");
        let e = crate::catalog().parse("n.toml", &bad).unwrap_err();
        assert_eq!(e.file, "n.toml");
        assert!(e.field.starts_with("numab"), "{e}");
        assert!(e.line.is_some(), "{e}");
    }
}
