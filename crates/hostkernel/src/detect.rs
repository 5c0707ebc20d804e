//! Finding the memory cgroup controller (v1 or v2) and the host's run facts.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::sys::query;

/// `MEMCG_CHARGE_BATCH` since Linux 6.1 (commit `1813e51eece0`): pages a
/// CPU charges ahead (per-CPU stock) and the unit of the memcg stats flush
/// threshold. It was 32 before; see [`charge_batch_for_release`].
pub const MEMCG_CHARGE_BATCH: u64 = 64;

/// `MEMCG_CHARGE_BATCH` of a kernel release string such as
/// `6.18.44-fc-v1045`: 64 from 6.1 on, 32 before; 64 if the release does not
/// parse (a modern kernel is the likely case).
pub fn charge_batch_for_release(release: &str) -> u64 {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major: Option<u32> = it.next().and_then(|m| m.parse().ok());
    let minor: Option<u32> = it.next().and_then(|m| m.parse().ok());
    match (major, minor) {
        (Some(ma), Some(mi)) if (ma, mi) < (6, 1) => 32,
        _ => MEMCG_CHARGE_BATCH,
    }
}

/// Which cgroup interface the memory controller is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// The legacy hierarchy: `cgroup` file system with the `memory` option;
    /// `tasks`/`cgroup.procs`, `memory.usage_in_bytes`, v1 `memory.stat`.
    V1,
    /// The unified hierarchy: `cgroup2`, `memory.current`, v2 `memory.stat`.
    V2,
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        })
    }
}

/// One line of `/proc/self/mountinfo`, the fields kernel mode needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// Root of the mount within its file system (field 4).
    pub root: String,
    /// Mount point, octal escapes decoded (field 5).
    pub mount_point: PathBuf,
    /// Per-mount options (field 6), e.g. `rw`, `relatime`.
    pub mount_options: Vec<String>,
    /// File system type after the `-` separator (`cgroup`, `cgroup2`, …).
    pub fstype: String,
    /// Super-block options; for cgroup v1 they name the controllers.
    pub super_options: Vec<String>,
}

impl MountEntry {
    /// Whether the mount is read-write (`rw` in the per-mount options and
    /// not `ro` in the super-block options).
    pub fn is_rw(&self) -> bool {
        self.mount_options.iter().any(|o| o == "rw")
            && !self.super_options.iter().any(|o| o == "ro")
    }
}

fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `/proc/self/mountinfo` text; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if sep < 6 || fields.len() < sep + 3 {
            continue;
        }
        out.push(MountEntry {
            root: unescape_octal(fields[3]),
            mount_point: PathBuf::from(unescape_octal(fields[4])),
            mount_options: fields[5].split(',').map(str::to_owned).collect(),
            fstype: fields[sep + 1].to_owned(),
            super_options: fields[sep + 3].split(',').map(str::to_owned).collect(),
        });
    }
    out
}

/// Where the memory controller is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryController {
    /// v1 or v2.
    pub version: CgroupVersion,
    /// The hierarchy's mount point (its root cgroup).
    pub mount_point: PathBuf,
    /// Whether the mount is read-write.
    pub writable: bool,
}

/// Picks the memory controller among `mounts`. `controllers_of(mount)`
/// returns the content of a cgroup2 mount's `cgroup.controllers` (if
/// readable). A cgroup2 mount that lists `memory` wins (a controller lives in
/// one hierarchy at a time, so at most one of the two can have it); else a
/// v1 `cgroup` mount with the `memory` option. The first mount of a
/// hierarchy whose root is `/` is preferred over bind mounts of sub-trees.
pub fn find_memory_controller(
    mounts: &[MountEntry],
    controllers_of: &dyn Fn(&Path) -> Option<String>,
) -> Result<MemoryController, Error> {
    let mut seen = Vec::new();
    let mut ordered: Vec<&MountEntry> = mounts.iter().filter(|m| m.root == "/").collect();
    ordered.extend(mounts.iter().filter(|m| m.root != "/"));
    for m in &ordered {
        if m.fstype == "cgroup2" {
            let ctl = controllers_of(&m.mount_point).unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "memory") {
                return Ok(MemoryController {
                    version: CgroupVersion::V2,
                    mount_point: m.mount_point.clone(),
                    writable: m.is_rw(),
                });
            }
            seen.push(format!(
                "cgroup2 at {} has controllers [{}]",
                m.mount_point.display(),
                ctl.trim()
            ));
        }
    }
    for m in &ordered {
        if m.fstype == "cgroup" {
            if m.super_options.iter().any(|o| o == "memory") {
                return Ok(MemoryController {
                    version: CgroupVersion::V1,
                    mount_point: m.mount_point.clone(),
                    writable: m.is_rw(),
                });
            }
            seen.push(format!(
                "cgroup v1 at {} ({})",
                m.mount_point.display(),
                m.super_options.join(",")
            ));
        }
    }
    let detail = if seen.is_empty() {
        "no cgroup or cgroup2 file system is mounted".to_owned()
    } else {
        format!("none lists memory: {}", seen.join("; "))
    };
    Err(Error::NoMemoryController { detail })
}

/// Facts about the host that every stored run carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFacts {
    /// `uname -r`, e.g. `6.18.44-fc-v1045`.
    pub kernel_release: String,
    /// `uname -v` (build string).
    pub kernel_version: String,
    /// `uname -m`, e.g. `x86_64`.
    pub machine: String,
    /// The memory controller's cgroup interface.
    pub cgroup_version: CgroupVersion,
    /// The memory controller's mount point.
    pub memory_mount: PathBuf,
    /// Online CPUs (`num_online_cpus()` in the kernel's threshold).
    pub online_cpus: usize,
    /// Page size in bytes.
    pub page_size: usize,
    /// `/sys/kernel/mm/transparent_hugepage/enabled` (the selected mode), if
    /// present. Workers disable THP on their own mappings regardless.
    pub thp_mode: Option<String>,
    /// `MEMCG_CHARGE_BATCH` for this kernel release (64 from 6.1, 32 before).
    pub charge_batch: u64,
    /// The kernel's documented stats flush threshold in pages:
    /// `MEMCG_CHARGE_BATCH × num_online_cpus()` (per memcg since 6.8, one
    /// global threshold before).
    pub flush_threshold_pages: u64,
}

/// The selected value of a kernel "choice" file such as
/// `always [madvise] never`.
pub fn selected_choice(text: &str) -> Option<String> {
    text.split_whitespace()
        .find(|w| w.starts_with('[') && w.ends_with(']') && w.len() > 2)
        .map(|w| w[1..w.len() - 1].to_owned())
}

/// A host checked for kernel mode: root, a writable memory controller, and
/// its run facts. Obtain one with [`Host::detect`]; every experiment takes it.
#[derive(Debug, Clone)]
pub struct Host {
    controller: MemoryController,
    base: PathBuf,
    facts: RunFacts,
}

impl Host {
    /// Detects the memory controller from `/proc/self/mountinfo` and checks
    /// that kernel mode can run: memory controller present, root, mount
    /// writable, and on v2 `memory` enabled in the base's
    /// `cgroup.subtree_control`. Groups are created directly under the
    /// hierarchy's root. Errors say exactly what is missing
    /// ([`Error::is_host_unsupported`]).
    pub fn detect() -> Result<Host, Error> {
        let text = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| Error::io("read", "/proc/self/mountinfo", e))?;
        let mounts = parse_mountinfo(&text);
        let controller = find_memory_controller(&mounts, &|p| {
            std::fs::read_to_string(p.join("cgroup.controllers")).ok()
        })?;
        let euid = query::euid();
        if euid != 0 {
            return Err(Error::NotRoot { euid });
        }
        if !controller.writable {
            return Err(Error::NotWritable {
                path: controller.mount_point.clone(),
                reason: "mounted read-only".into(),
            });
        }
        let base = controller.mount_point.clone();
        if controller.version == CgroupVersion::V2 {
            let sc = base.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&sc).map_err(|e| Error::io("read", &sc, e))?;
            if !enabled.split_whitespace().any(|c| c == "memory") {
                return Err(Error::MemoryNotDelegated { path: base });
            }
        }
        let (kernel_release, kernel_version, machine) =
            query::uname().map_err(|e| Error::io("uname", "/", e))?;
        let online_cpus = query::online_cpus();
        let charge_batch = charge_batch_for_release(&kernel_release);
        let facts = RunFacts {
            kernel_release,
            kernel_version,
            machine,
            cgroup_version: controller.version,
            memory_mount: controller.mount_point.clone(),
            online_cpus,
            page_size: query::page_size(),
            thp_mode: std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
                .ok()
                .and_then(|t| selected_choice(&t)),
            charge_batch,
            flush_threshold_pages: charge_batch * online_cpus as u64,
        };
        Ok(Host {
            controller,
            base,
            facts,
        })
    }

    /// Where the memory controller is.
    pub fn controller(&self) -> &MemoryController {
        &self.controller
    }

    /// The directory kernel mode creates its groups in (the hierarchy root).
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The cgroup interface version.
    pub fn version(&self) -> CgroupVersion {
        self.controller.version
    }

    /// The run facts (kernel release, cgroup version, CPUs, page size, …).
    pub fn facts(&self) -> &RunFacts {
        &self.facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const UNIFIED: &str = "\
25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
28 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";

    #[test]
    fn hybrid_host_picks_v1_memory() {
        let m = parse_mountinfo(HYBRID);
        assert_eq!(m.len(), 4);
        let c = find_memory_controller(&m, &|_| Some(String::new())).unwrap();
        assert_eq!(c.version, CgroupVersion::V1);
        assert_eq!(c.mount_point, PathBuf::from("/sys/fs/cgroup/memory"));
        assert!(c.writable);
    }

    #[test]
    fn unified_host_picks_v2_when_memory_listed() {
        let m = parse_mountinfo(UNIFIED);
        let c = find_memory_controller(&m, &|p| {
            assert_eq!(p, Path::new("/sys/fs/cgroup"));
            Some("cpuset cpu io memory hugetlb pids rdma misc\n".into())
        })
        .unwrap();
        assert_eq!(c.version, CgroupVersion::V2);
        assert_eq!(c.mount_point, PathBuf::from("/sys/fs/cgroup"));
    }

    #[test]
    fn missing_controller_says_what_was_seen() {
        let m = parse_mountinfo(UNIFIED);
        let e = find_memory_controller(&m, &|_| Some("cpu io pids".into())).unwrap_err();
        assert!(e.is_host_unsupported());
        let msg = e.to_string();
        assert!(msg.contains("no memory cgroup controller"), "{msg}");
        assert!(
            msg.contains("cgroup2 at /sys/fs/cgroup has controllers [cpu io pids]"),
            "{msg}"
        );
        let e = find_memory_controller(&[], &|_| None).unwrap_err();
        assert!(e
            .to_string()
            .contains("no cgroup or cgroup2 file system is mounted"));
    }

    #[test]
    fn read_only_mount_is_detected() {
        let m = parse_mountinfo(
            "35 31 0:32 / /sys/fs/cgroup/memory ro,relatime - cgroup cgroup ro,memory\n",
        );
        let c = find_memory_controller(&m, &|_| None).unwrap();
        assert!(!c.writable);
    }

    #[test]
    fn octal_escapes_and_optional_fields() {
        let m = parse_mountinfo(
            "1 2 0:3 / /mnt/my\\040cg rw shared:1 master:2 - cgroup none rw,memory,nosuid\n",
        );
        assert_eq!(m[0].mount_point, PathBuf::from("/mnt/my cg"));
        assert_eq!(m[0].fstype, "cgroup");
        assert!(m[0].super_options.contains(&"memory".to_owned()));
        assert!(parse_mountinfo("garbage line\n1 2 3\n").is_empty());
    }

    #[test]
    fn sub_tree_bind_mount_comes_after_root_mount() {
        let text = "\
1 0 0:32 /docker/x /a rw - cgroup cgroup rw,memory
2 0 0:32 / /b rw - cgroup cgroup rw,memory
";
        let c = find_memory_controller(&parse_mountinfo(text), &|_| None).unwrap();
        assert_eq!(c.mount_point, PathBuf::from("/b"));
    }

    #[test]
    fn charge_batch_by_release() {
        assert_eq!(charge_batch_for_release("6.18.44-fc-v1045"), 64);
        assert_eq!(charge_batch_for_release("6.1.0"), 64);
        assert_eq!(charge_batch_for_release("6.0.19-generic"), 32);
        assert_eq!(charge_batch_for_release("5.15.0-91-generic"), 32);
        assert_eq!(charge_batch_for_release("10.2"), 64);
        assert_eq!(charge_batch_for_release("weird"), 64);
    }

    #[test]
    fn choice_files() {
        assert_eq!(
            selected_choice("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(selected_choice("always madvise never"), None);
    }

    #[test]
    fn unsupported_errors_are_flagged() {
        assert!(Error::NotRoot { euid: 1000 }.is_host_unsupported());
        assert!(Error::NotRoot { euid: 1000 }
            .to_string()
            .contains("needs root"));
        assert!(!Error::Interrupted.is_host_unsupported());
        let e = Error::MemoryNotDelegated {
            path: "/sys/fs/cgroup".into(),
        };
        assert!(e
            .to_string()
            .contains("+memory > /sys/fs/cgroup/cgroup.subtree_control"));
    }
}
