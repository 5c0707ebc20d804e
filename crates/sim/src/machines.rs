//! Machines as data: what the priced workloads ([`crate::priced`]) need to
//! know about the box a figure was measured on, each constant with its
//! public source.
//!
//! A machine is a flat TOML table (the built-in ones are `machines/*.toml`
//! in this crate, embedded): its topology (CPUs, sockets, threads per
//! core, cores per socket and per L3 complex), the load-to-use latency of a
//! hit in each cache level, what moving a modified line between two CPUs
//! costs (in one L3 complex, in one socket, across sockets; for a read and
//! for a contended read-modify-write), and optionally the per-operation
//! costs (a fault, a send) and how much of a walk's lines an operation
//! leaves in L1. **Every numeric field has a sibling `FIELD_source`
//! string** naming where it comes from (a vendor document, a published
//! measurement, a measurement on the host with its command, or an
//! assumption with its reason); a file with a number and no source, or a
//! source and no number, is refused, and so is an unknown key.
//!
//! A scenario names its machine with `machine = "NAME"` (a built-in,
//! [`BUILTIN`]) or `machine = "PATH.toml"` (a file of the same form,
//! relative to the scenario file); the text stored with a run carries the
//! file's table inline (`[machine]`), so a stored run re-runs on the same
//! constants.
//!
//! What the model takes from a machine and what it falls back to:
//!
//! | need | fields | when missing |
//! |---|---|---|
//! | a cache line's place | `l1_latency_ns`, `l2_latency_ns` | required |
//! | a modified line read by another CPU | `line_transfer_intra_ccx_ns`, `line_transfer_intra_socket_ns`, `line_transfer_cross_socket_ns` | intra-CCX: the intra-socket figure; cross-socket: required with 2+ sockets |
//! | a contended RMW's hand-off | `rmw_contended_intra_socket_ns`, `rmw_contended_cross_socket_ns` | the line transfer of the same distance |
//! | an operation's kernel work outside memcg | `fault_anon_ns`, `fault_cow_ns`, `fault_shared_ns`, `send_ns`, `recv_ns` | the cost file's `[kernel]` table (the host as calibrated) |
//! | what an operation leaves in L1 of a walk's lines | `l1_left_after_*`, `l1_left_after_two_*` | the host's ([`Machine::host`]): the fraction is a property of the kernel path and the L1's geometry (32 KiB, 8 ways on every built-in) |
//!
//! CPUs are numbered as Linux numbers them on these boxes: the first
//! thread of every core, socket by socket, then the second threads
//! (`cpu % cores` is the core; the socket and the L3 complex follow from
//! the core).

use lab::source::Source;
use lab::ScenarioError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in machines, `(name, TOML)`, in the order `mmlab list` shows
/// them.
pub const BUILTIN: &[(&str, &str)] = &[
    ("host", include_str!("machines/host.toml")),
    ("ixion-44", include_str!("machines/ixion-44.toml")),
    ("ixion-72", include_str!("machines/ixion-72.toml")),
    ("amd-256", include_str!("machines/amd-256.toml")),
    ("amd-384", include_str!("machines/amd-384.toml")),
    (
        "lkp-skl-fpga01",
        include_str!("machines/lkp-skl-fpga01.toml"),
    ),
];

/// An operation whose cost and L1 footprint a machine may state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// will-it-scale `page_fault1`.
    FaultAnon,
    /// `page_fault2`.
    FaultCow,
    /// `page_fault3`.
    FaultShared,
    /// The sending side of a 10 KiB loopback `sendfile` (the loopback
    /// receive's softirq included).
    Send,
    /// The receiving side (`recv` of 10 KiB).
    Recv,
}

macro_rules! machine_fields {
    ($( $(#[$doc:meta])* $key:ident : $ty:ty ),* $(,)?) => {
        /// A machine description as written (see the module docs); every
        /// number present has its source in [`Machine::sources`].
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct Machine {
            /// What the machine is, in a line.
            pub name: String,
            /// Its role in the source threads (what ran on it).
            #[serde(default, skip_serializing_if = "String::is_empty")]
            pub role: String,
            /// The CPU model, as far as public information says.
            #[serde(default, skip_serializing_if = "String::is_empty")]
            pub cpu_model: String,
            /// Whether the model is our assumption (not stated anywhere public).
            #[serde(default)]
            pub cpu_model_assumed: bool,
            /// Where the CPU model comes from, or why it is assumed.
            #[serde(default, skip_serializing_if = "String::is_empty")]
            pub cpu_model_source: String,
            /// Free text: assumptions, caveats.
            #[serde(default, skip_serializing_if = "String::is_empty")]
            pub notes: String,
            $(
                $(#[$doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $key: Option<$ty>,
            )*
            /// `FIELD_source` of every number present (flattened in the
            /// file; any other key lands here too and is refused by the
            /// checks, as `deny_unknown_fields` cannot be combined with a
            /// flattened map).
            #[serde(flatten)]
            pub sources: BTreeMap<String, String>,
        }

        /// The numeric fields, in file order.
        pub const NUMERIC_FIELDS: &[&str] = &[$(stringify!($key)),*];

        impl Machine {
            fn present(&self) -> Vec<&'static str> {
                let mut v = Vec::new();
                $( if self.$key.is_some() { v.push(stringify!($key)); } )*
                v
            }
        }
    };
}

machine_fields! {
    /// Logical CPUs.
    cpus: u32,
    /// Sockets.
    sockets: u32,
    /// Threads per core.
    smt: u32,
    /// Cores per socket.
    cores_per_socket: u32,
    /// Cores sharing one L3 (AMD's CCX); absent: the whole socket.
    cores_per_ccx: u32,
    /// Clock used to turn cycle counts into ns.
    clock_ghz: f64,
    /// L1 data cache per core, KiB.
    l1d_kib: f64,
    /// L2 per core, KiB.
    l2_kib: f64,
    /// L3 per socket, MiB.
    l3_mib_per_socket: f64,
    /// L1 load-to-use, cycles.
    l1_latency_cycles: f64,
    /// L1 load-to-use, ns.
    l1_latency_ns: f64,
    /// L2 load-to-use, cycles.
    l2_latency_cycles: f64,
    /// L2 load-to-use, ns.
    l2_latency_ns: f64,
    /// L3 load-to-use, cycles.
    l3_latency_cycles: f64,
    /// L3 load-to-use, ns.
    l3_latency_ns: f64,
    /// Idle random access to local memory, ns.
    dram_local_ns: f64,
    /// Idle random access to the other socket's memory, ns.
    dram_remote_ns: f64,
    /// A modified line read by a core of the same L3 complex, ns.
    line_transfer_intra_ccx_ns: f64,
    /// A modified line read by a core of the same socket, ns.
    line_transfer_intra_socket_ns: f64,
    /// A modified line read across sockets (homed in the writer's), ns.
    line_transfer_cross_socket_ns: f64,
    /// The same, homed in the reader's socket, ns.
    line_transfer_cross_socket_far_ns: f64,
    /// One hand-off of a line two cores of a socket both RMW, ns.
    rmw_contended_intra_socket_ns: f64,
    /// The same across sockets, ns.
    rmw_contended_cross_socket_ns: f64,
    /// A `lock`-prefixed RMW on a line the core owns, cycles.
    rmw_local_cycles: f64,
    /// An anonymous write fault outside memcg, ns.
    fault_anon_ns: f64,
    /// A private-file (copy-on-write) fault outside memcg, ns.
    fault_cow_ns: f64,
    /// A shared-file write fault outside memcg, ns.
    fault_shared_ns: f64,
    /// The sending side of a 10 KiB loopback sendfile outside memcg, ns.
    send_ns: f64,
    /// The receiving side, ns.
    recv_ns: f64,
    /// Fraction of a walk's lines one anonymous fault leaves in L1.
    l1_left_after_fault_anon: f64,
    /// The same for a copy-on-write fault.
    l1_left_after_fault_cow: f64,
    /// The same for a shared-file fault.
    l1_left_after_fault_shared: f64,
    /// The same for a send.
    l1_left_after_send: f64,
    /// The same for a receive.
    l1_left_after_recv: f64,
    /// Fraction left after two anonymous faults (an SMT sibling's and
    /// this thread's, both on one L1).
    l1_left_after_two_fault_anon: f64,
    /// The same for copy-on-write faults.
    l1_left_after_two_fault_cow: f64,
    /// The same for shared-file faults.
    l1_left_after_two_fault_shared: f64,
    /// The same for sends.
    l1_left_after_two_send: f64,
    /// The same for receives.
    l1_left_after_two_recv: f64,
}

/// The numeric fields a machine must have.
const REQUIRED: &[&str] = &[
    "cpus",
    "sockets",
    "smt",
    "cores_per_socket",
    "l1_latency_ns",
    "l2_latency_ns",
    "line_transfer_intra_socket_ns",
];

/// How a CPU reaches a line another CPU holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distance {
    /// The same CPU.
    Same,
    /// Two threads of one core.
    Sibling,
    /// Two cores sharing an L3 complex.
    Ccx,
    /// Two cores of one socket.
    Socket,
    /// Two sockets.
    Remote,
}

impl Machine {
    /// Parses a machine file; `file` names it in errors.
    ///
    /// # Errors
    /// Syntax, an unknown key, a value of the wrong type, a number without
    /// its `_source` or a source without its number, a required field
    /// missing, an impossible topology; each with its line.
    pub fn parse(file: &str, text: &str) -> Result<Machine, ScenarioError> {
        let src = Source::new(file, text);
        let m: Machine = src.deserialize()?;
        m.check().map_err(|(field, msg)| src.error(&field, msg))?;
        Ok(m)
    }

    /// A built-in machine by name.
    pub fn builtin(name: &str) -> Option<Machine> {
        BUILTIN.iter().find(|(n, _)| *n == name).map(|(n, t)| {
            Machine::parse(&format!("<machine {n}>"), t).expect("built-in machines parse")
        })
    }

    /// The host this build was measured on (the built-in `host`).
    pub fn host() -> Machine {
        static HOST: std::sync::OnceLock<Machine> = std::sync::OnceLock::new();
        HOST.get_or_init(|| Machine::builtin("host").expect("the host is built in"))
            .clone()
    }

    /// Checks sources, required fields and the topology: `(field, message)`.
    fn check(&self) -> Result<(), (String, String)> {
        for (k, v) in &self.sources {
            if k == "cpu_model_source" {
                continue;
            }
            let Some(field) = k.strip_suffix("_source") else {
                return Err((k.clone(), format!("unknown field `{k}`")));
            };
            if !NUMERIC_FIELDS.contains(&field) {
                return Err((k.clone(), format!("`{field}` is not a machine field")));
            }
            if v.trim().is_empty() {
                return Err((
                    k.clone(),
                    "a source must say where the value comes from".into(),
                ));
            }
        }
        let present = self.present();
        for f in &present {
            if !self.sources.contains_key(&format!("{f}_source")) {
                return Err((
                    (*f).to_string(),
                    format!("`{f}` has no `{f}_source`: every constant names its source"),
                ));
            }
        }
        for k in self.sources.keys() {
            let f = k.trim_end_matches("_source");
            if !present.contains(&f) {
                return Err((k.clone(), format!("`{k}` without `{f}`")));
            }
        }
        for f in REQUIRED {
            if !present.contains(f) {
                return Err(((*f).to_string(), format!("missing: a machine needs `{f}`")));
            }
        }
        let (cpus, sockets, smt, cps) = (self.cpus(), self.sockets(), self.smt(), self.cores());
        if cpus == 0 || sockets == 0 || smt == 0 || cps == 0 {
            return Err((
                "cpus".into(),
                "cpus, sockets, smt and cores_per_socket must be at least 1".into(),
            ));
        }
        if sockets * smt * cps != cpus {
            return Err((
                "cpus".into(),
                format!("{cpus} CPUs is not {sockets} sockets x {cps} cores x {smt} threads"),
            ));
        }
        if let Some(ccx) = self.cores_per_ccx {
            if ccx == 0 || cps % ccx != 0 {
                return Err((
                    "cores_per_ccx".into(),
                    format!("{ccx} does not divide {cps} cores"),
                ));
            }
        }
        if sockets > 1 && self.line_transfer_cross_socket_ns.is_none() {
            return Err((
                "line_transfer_cross_socket_ns".into(),
                "missing: a machine with 2+ sockets needs it".into(),
            ));
        }
        for (name, v) in [
            ("l1_latency_ns", self.l1_latency_ns),
            ("l2_latency_ns", self.l2_latency_ns),
            (
                "line_transfer_intra_ccx_ns",
                self.line_transfer_intra_ccx_ns,
            ),
            (
                "line_transfer_intra_socket_ns",
                self.line_transfer_intra_socket_ns,
            ),
            (
                "line_transfer_cross_socket_ns",
                self.line_transfer_cross_socket_ns,
            ),
            (
                "rmw_contended_intra_socket_ns",
                self.rmw_contended_intra_socket_ns,
            ),
            (
                "rmw_contended_cross_socket_ns",
                self.rmw_contended_cross_socket_ns,
            ),
            ("fault_anon_ns", self.fault_anon_ns),
            ("fault_cow_ns", self.fault_cow_ns),
            ("fault_shared_ns", self.fault_shared_ns),
            ("send_ns", self.send_ns),
            ("recv_ns", self.recv_ns),
        ] {
            if let Some(f) = v {
                if !(f.is_finite() && f > 0.0 && f < 1e7) {
                    return Err((name.into(), format!("{f} ns is not a time in (0, 1e7)")));
                }
            }
        }
        for (f, v) in self.l1_left_fields() {
            if let Some(v) = v {
                if !(0.0..=1.0).contains(&v) {
                    return Err((f.into(), format!("{v} is not a fraction")));
                }
            }
        }
        Ok(())
    }

    fn l1_left_fields(&self) -> [(&'static str, Option<f64>); 10] {
        [
            ("l1_left_after_fault_anon", self.l1_left_after_fault_anon),
            ("l1_left_after_fault_cow", self.l1_left_after_fault_cow),
            (
                "l1_left_after_fault_shared",
                self.l1_left_after_fault_shared,
            ),
            ("l1_left_after_send", self.l1_left_after_send),
            ("l1_left_after_recv", self.l1_left_after_recv),
            (
                "l1_left_after_two_fault_anon",
                self.l1_left_after_two_fault_anon,
            ),
            (
                "l1_left_after_two_fault_cow",
                self.l1_left_after_two_fault_cow,
            ),
            (
                "l1_left_after_two_fault_shared",
                self.l1_left_after_two_fault_shared,
            ),
            ("l1_left_after_two_send", self.l1_left_after_two_send),
            ("l1_left_after_two_recv", self.l1_left_after_two_recv),
        ]
    }

    /// Logical CPUs.
    pub fn cpus(&self) -> u32 {
        self.cpus.unwrap_or(1)
    }

    fn sockets(&self) -> u32 {
        self.sockets.unwrap_or(1)
    }

    fn smt(&self) -> u32 {
        self.smt.unwrap_or(1)
    }

    fn cores(&self) -> u32 {
        self.cores_per_socket.unwrap_or(1)
    }

    /// Physical cores.
    pub fn physical_cores(&self) -> u32 {
        self.sockets() * self.cores()
    }

    /// The same machine with `cpus` logical CPUs on one socket without
    /// SMT (the host as kernel mode sees it: its online CPUs).
    pub fn with_cpus(mut self, cpus: u32) -> Machine {
        let cpus = cpus.max(1);
        self.cpus = Some(cpus);
        self.sockets = Some(1);
        self.smt = Some(1);
        self.cores_per_socket = Some(cpus);
        self.cores_per_ccx = None;
        self
    }

    /// How `a` reaches a line `b` holds.
    pub fn distance(&self, a: u32, b: u32) -> Distance {
        if a == b {
            return Distance::Same;
        }
        let cores = self.physical_cores().max(1);
        let (ca, cb) = (a % cores, b % cores);
        if ca == cb {
            return Distance::Sibling;
        }
        let cps = self.cores().max(1);
        if ca / cps != cb / cps {
            return Distance::Remote;
        }
        match self.cores_per_ccx {
            Some(x) if x > 0 && ca / x == cb / x => Distance::Ccx,
            _ => Distance::Socket,
        }
    }

    /// L1 hit, ns.
    pub fn l1_ns(&self) -> f64 {
        self.l1_latency_ns.unwrap_or(1.0)
    }

    /// L2 hit, ns.
    pub fn l2_ns(&self) -> f64 {
        self.l2_latency_ns.unwrap_or(4.0)
    }

    /// A read of a line another CPU modified, ns (a sibling's: an L2 hit).
    pub fn read_transfer_ns(&self, d: Distance) -> f64 {
        let socket = self.line_transfer_intra_socket_ns.unwrap_or(50.0);
        match d {
            Distance::Same => 0.0,
            Distance::Sibling => self.l2_ns(),
            Distance::Ccx => self.line_transfer_intra_ccx_ns.unwrap_or(socket),
            Distance::Socket => socket,
            Distance::Remote => self.line_transfer_cross_socket_ns.unwrap_or(socket),
        }
    }

    /// A contended RMW's hand-off of a line another CPU holds, ns.
    pub fn rmw_transfer_ns(&self, d: Distance) -> f64 {
        match d {
            Distance::Same | Distance::Sibling | Distance::Ccx => self.read_transfer_ns(d),
            Distance::Socket => self
                .rmw_contended_intra_socket_ns
                .unwrap_or_else(|| self.read_transfer_ns(d)),
            Distance::Remote => self
                .rmw_contended_cross_socket_ns
                .unwrap_or_else(|| self.read_transfer_ns(d)),
        }
    }

    /// The machine's own cost of `op` outside memcg, if it states one.
    pub fn op_ns(&self, op: OpKind) -> Option<f64> {
        match op {
            OpKind::FaultAnon => self.fault_anon_ns,
            OpKind::FaultCow => self.fault_cow_ns,
            OpKind::FaultShared => self.fault_shared_ns,
            OpKind::Send => self.send_ns,
            OpKind::Recv => self.recv_ns,
        }
    }

    /// The fraction of a walk's lines `op` leaves in L1 (`two`: with an
    /// SMT sibling doing the same on the same L1), the machine's own or
    /// the host's; 1 if neither states it.
    pub fn l1_left(&self, op: OpKind, two: bool) -> f64 {
        let own = |m: &Machine| match (op, two) {
            (OpKind::FaultAnon, false) => m.l1_left_after_fault_anon,
            (OpKind::FaultCow, false) => m.l1_left_after_fault_cow,
            (OpKind::FaultShared, false) => m.l1_left_after_fault_shared,
            (OpKind::Send, false) => m.l1_left_after_send,
            (OpKind::Recv, false) => m.l1_left_after_recv,
            (OpKind::FaultAnon, true) => m.l1_left_after_two_fault_anon,
            (OpKind::FaultCow, true) => m.l1_left_after_two_fault_cow,
            (OpKind::FaultShared, true) => m.l1_left_after_two_fault_shared,
            (OpKind::Send, true) => m.l1_left_after_two_send,
            (OpKind::Recv, true) => m.l1_left_after_two_recv,
        };
        own(self).or_else(|| own(&Machine::host())).unwrap_or(1.0)
    }

    /// Every numeric field present with its value and source, in file
    /// order (for reports and docs).
    pub fn constants(&self) -> Vec<(&'static str, f64, String)> {
        let table = toml::Value::try_from(self).ok();
        let value = |f: &str| -> Option<f64> {
            let v = table.as_ref()?.get(f)?;
            v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
        };
        NUMERIC_FIELDS
            .iter()
            .filter_map(|f| {
                let v = value(f)?;
                let s = self.sources.get(&format!("{f}_source"))?.clone();
                Some((*f, v, s))
            })
            .collect()
    }

    /// The machine as TOML (what a stored run carries inline).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a machine serializes")
    }
}

/// Where a scenario's machine comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineChoice {
    /// The built-in's name, or the file as written.
    pub label: String,
    /// Whether it is a built-in (stored by name) or a file (stored inline).
    pub builtin: bool,
    /// The description.
    pub machine: Machine,
}

impl MachineChoice {
    /// The built-in `name`.
    pub fn builtin(name: &str) -> Option<MachineChoice> {
        Machine::builtin(name).map(|machine| MachineChoice {
            label: name.to_string(),
            builtin: true,
            machine,
        })
    }

    /// `value` of a scenario's `machine` key: a built-in's name, or a path
    /// (relative to `scenario_file`'s folder) to a machine file.
    ///
    /// # Errors
    /// A message naming the built-ins, or the file's problem.
    pub fn resolve(value: &str, scenario_file: &str) -> Result<MachineChoice, String> {
        if let Some(m) = MachineChoice::builtin(value) {
            return Ok(m);
        }
        if !value.ends_with(".toml") {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "unknown machine `{value}` (built in: {}; or a path to a .toml file)",
                names.join(", ")
            ));
        }
        let base = std::path::Path::new(scenario_file)
            .parent()
            .unwrap_or_else(|| std::path::Path::new("."));
        let path = if std::path::Path::new(value).is_absolute() {
            std::path::PathBuf::from(value)
        } else {
            base.join(value)
        };
        let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.is_file() || meta.len() > 1 << 20 {
            return Err(format!(
                "{}: a machine file is a regular file of at most 1 MiB",
                path.display()
            ));
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let machine =
            Machine::parse(&path.display().to_string(), &text).map_err(|e| e.to_string())?;
        Ok(MachineChoice {
            label: value.to_string(),
            builtin: false,
            machine,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_with_every_constant_sourced() {
        for (name, _) in BUILTIN {
            let m = Machine::builtin(name).unwrap();
            assert!(!m.constants().is_empty(), "{name}");
            for (f, _, s) in m.constants() {
                assert!(!s.trim().is_empty(), "{name}.{f}");
            }
            let back = Machine::parse("again", &m.to_toml()).unwrap();
            assert_eq!(back, m, "{name} round-trips");
        }
    }

    const GOOD: &str = r#"
name = "two sockets of four"
cpus = 8
cpus_source = "test"
sockets = 2
sockets_source = "test"
smt = 1
smt_source = "test"
cores_per_socket = 4
cores_per_socket_source = "test"
l1_latency_ns = 1.0
l1_latency_ns_source = "test"
l2_latency_ns = 4.0
l2_latency_ns_source = "test"
line_transfer_intra_socket_ns = 50.0
line_transfer_intra_socket_ns_source = "test"
line_transfer_cross_socket_ns = 120.0
line_transfer_cross_socket_ns_source = "test"
"#;

    #[test]
    fn a_number_without_a_source_is_refused_with_its_line() {
        assert!(Machine::parse("m.toml", GOOD).is_ok());
        let bad = GOOD.replace("l2_latency_ns_source = \"test\"\n", "");
        let e = Machine::parse("m.toml", &bad).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("l2_latency_ns", Some(13)));
        assert!(e.message.contains("source"), "{e}");
        let bad = GOOD.replace("l2_latency_ns = 4.0\n", "");
        assert!(Machine::parse("m.toml", &bad).is_err(), "a source alone");
        let bad = format!("{GOOD}colour = 3\n");
        assert!(Machine::parse("m.toml", &bad).is_err(), "unknown key");
        let bad = GOOD.replace("cpus = 8", "cpus = 9");
        assert!(Machine::parse("m.toml", &bad).is_err(), "topology");
        let bad = GOOD.replace("l2_latency_ns = 4.0", "l2_latency_ns = -4.0");
        let e = Machine::parse("m.toml", &bad).unwrap_err();
        assert_eq!(e.field, "l2_latency_ns", "{e}");
        let bad = GOOD
            .replace("line_transfer_cross_socket_ns = 120.0\n", "")
            .replace("line_transfer_cross_socket_ns_source = \"test\"\n", "");
        assert!(
            Machine::parse("m.toml", &bad).is_err(),
            "two sockets, no cross"
        );
    }

    #[test]
    fn distances_follow_linux_numbering() {
        let m = Machine::parse("m.toml", GOOD).unwrap();
        assert_eq!(m.distance(0, 0), Distance::Same);
        assert_eq!(m.distance(0, 3), Distance::Socket);
        assert_eq!(m.distance(0, 4), Distance::Remote);
        assert_eq!(m.rmw_transfer_ns(Distance::Remote), 120.0, "falls back");
        let amd = Machine::builtin("amd-384").unwrap();
        assert_eq!(amd.distance(0, 7), Distance::Ccx);
        assert_eq!(amd.distance(0, 8), Distance::Socket);
        assert_eq!(amd.distance(0, 192), Distance::Sibling);
        assert_eq!(amd.distance(0, 96), Distance::Remote);
    }

    #[test]
    fn the_host_states_what_operations_leave_in_l1() {
        let h = Machine::host();
        for op in [
            OpKind::FaultAnon,
            OpKind::FaultCow,
            OpKind::FaultShared,
            OpKind::Send,
            OpKind::Recv,
        ] {
            let one = h.l1_left(op, false);
            assert!((0.0..=1.0).contains(&one), "{op:?}");
            assert!(
                h.l1_left(op, true) <= one + 1e-9,
                "{op:?}: two ops leave no more"
            );
        }
        let t = Machine::builtin("ixion-44").unwrap();
        assert_eq!(
            t.l1_left(OpKind::Send, false),
            h.l1_left(OpKind::Send, false)
        );
    }
}
