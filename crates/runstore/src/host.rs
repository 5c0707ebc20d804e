//! Facts about the machine and build that produced a run.

use std::path::Path;

/// Host and build facts stored with every run. The store takes them as
/// given; [`HostFacts::detect`] reads them from `/proc` for the CLI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// Logical CPUs available to the process.
    pub cpus: u32,
    /// CPU model name (`model name` in `/proc/cpuinfo`), or `unknown`.
    pub cpu_model: String,
    /// Kernel release (`/proc/sys/kernel/osrelease`), or `unknown`.
    pub kernel: String,
    /// mmlab version (`CARGO_PKG_VERSION` of the binary).
    pub mmlab_version: String,
    /// Git commit the binary was built from, when known.
    pub git_commit: Option<String>,
    /// Whether the sources it was built from differed from that commit
    /// (tracked files changed, or new files under the source folders);
    /// `None` when unknown (no git, or a run stored before schema 5).
    pub git_dirty: Option<bool>,
}

impl HostFacts {
    /// Reads the CPU count, CPU model and kernel release of this machine
    /// (from `std::thread::available_parallelism`, `/proc/cpuinfo` and
    /// `/proc/sys/kernel/osrelease`); the version, commit and dirty flag
    /// are the caller's. Facts that cannot be read are `unknown` (or 1
    /// CPU).
    pub fn detect(
        mmlab_version: &str,
        git_commit: Option<&str>,
        git_dirty: Option<bool>,
    ) -> HostFacts {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| cpu_model_from_cpuinfo(&s))
            .unwrap_or_else(|| "unknown".to_string());
        HostFacts {
            cpus,
            cpu_model,
            kernel: read_trimmed(Path::new("/proc/sys/kernel/osrelease"))
                .unwrap_or_else(|| "unknown".to_string()),
            mmlab_version: mmlab_version.to_string(),
            git_commit: git_commit.map(str::to_string),
            git_dirty,
        }
    }

    /// The build as a reader wants it: the commit, with `-dirty` when the
    /// sources differed from it (`1a2b3c4d5e6f-dirty`); `None` when the
    /// commit is unknown.
    pub fn commit_label(&self) -> Option<String> {
        self.git_commit.as_ref().map(|c| match self.git_dirty {
            Some(true) => format!("{c}-dirty"),
            _ => c.clone(),
        })
    }
}

/// The first `model name` (x86) or `Processor`/`cpu model` (other
/// architectures) line of a `/proc/cpuinfo` text.
pub fn cpu_model_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let k = k.trim();
        let v = v.trim();
        (matches!(k, "model name" | "Processor" | "cpu model" | "cpu") && !v.is_empty())
            .then(|| v.to_string())
    })
}

fn read_trimmed(p: &Path) -> Option<String> {
    let s = std::fs::read_to_string(p).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_model_name() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            cpu_model_from_cpuinfo(text).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpu_model_from_cpuinfo("processor : 0\n"), None);
    }
}
