//! The file front door: cgroup v2 interface files by cgroup path.
//!
//! | file | read | write |
//! |---|---|---|
//! | `cgroup.controllers` | `memory` if the cgroup has it | — |
//! | `cgroup.subtree_control` | `memory` if enabled | `+memory`, `-memory` |
//! | `cgroup.procs` | pids, one a line | a pid: moves it here |
//! | `cgroup.stat` | `nr_descendants`, `nr_dying_descendants` | — |
//! | `cgroup.kill` | — | `1`: kills the subtree's processes |
//! | `memory.current`, `memory.swap.current` | bytes | — |
//! | `memory.min`, `memory.low`, `memory.high`, `memory.max` | bytes or `max` | bytes (`K`/`M`/`G`/`T` suffixes) or `max`; `high` and `max` reclaim down to the new value, `max` then OOM-kills |
//! | `memory.swap.high`, `memory.swap.max` | bytes or `max` | as above, no reclaim |
//! | `memory.peak`, `memory.swap.peak` | bytes | any non-empty string resets, for that descriptor |
//! | `memory.events`, `memory.events.local`, `memory.swap.events` | `key value` lines | — |
//! | `memory.stat`, `memory.numa_stat` | flush per policy, then format | — |
//! | `memory.oom.group` | `0`/`1` | `0`/`1` |
//! | `memory.reclaim` | — | `bytes [swappiness=N]`; `EAGAIN` if less was reclaimed |
//!
//! `memory.*` files other than `memory.stat`, `memory.numa_stat` and
//! `memory.reclaim` do not exist on the root; none exists on a cgroup
//! without the memory controller. Writes run on CPU 0 (the selftest
//! runner's).
//!
//! The model has no dying cgroups (a removed memcg's pages and kernel
//! objects move to its parent at once), so `nr_dying_descendants` is 0.

use super::cgroup::CgId;
use super::{Machine, MachineError};
use crate::memcg::{MemcgId, PeakFd, PeakResource, UNLIMITED};
use hierstat::PAGE_SIZE;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// An open interface-file descriptor (`memory.peak`, `memory.swap.peak`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fd(pub u64);

/// Open descriptors.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fds {
    next: u64,
    open: BTreeMap<Fd, PeakFd>,
}

/// Parses a size the way `memparse` does: a number with an optional
/// `K`/`M`/`G`/`T` suffix (case-insensitive); `max` is unlimited.
pub fn parse_size(s: &str) -> Result<u64, MachineError> {
    let s = s.trim();
    if s == "max" {
        return Ok(u64::MAX);
    }
    let (num, mult) = match s.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(MachineError::Invalid(s.to_string())),
            };
            (&s[..s.len() - 1], 1u64 << shift)
        }
        _ => (s, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| MachineError::Invalid(s.to_string()))?;
    n.checked_mul(mult)
        .ok_or_else(|| MachineError::Invalid(s.to_string()))
}

/// Bytes to pages, `max` to unlimited (`page_counter_memparse`).
fn size_pages(s: &str) -> Result<u64, MachineError> {
    let b = parse_size(s)?;
    Ok(if b == u64::MAX {
        UNLIMITED
    } else {
        b / PAGE_SIZE
    })
}

fn show_limit(pages: u64) -> String {
    if pages == UNLIMITED {
        "max\n".to_string()
    } else {
        format!("{}\n", pages * PAGE_SIZE)
    }
}

/// Files that exist on the root too.
const ON_ROOT: [&str; 3] = ["memory.stat", "memory.numa_stat", "memory.reclaim"];

impl Machine {
    /// The memcg behind `file` of cgroup `id`, checking that the file
    /// exists there.
    fn memory_file(&self, id: CgId, path: &str, file: &str) -> Result<MemcgId, MachineError> {
        let c = self.cgroups.get(id)?;
        let missing = || MachineError::NoEntry(format!("{path}/{file}"));
        let m = c.memcg.ok_or_else(missing)?;
        if c.parent.is_none() && !ON_ROOT.contains(&file) {
            return Err(missing());
        }
        Ok(m)
    }

    /// Reads `file` of cgroup `path`.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`] for a missing cgroup or file.
    pub fn read(&mut self, path: &str, file: &str) -> Result<String, MachineError> {
        let id = self.cgroups.lookup(path)?;
        let c = self.cgroups.get(id)?;
        match file {
            "cgroup.controllers" => {
                return Ok(if c.memcg.is_some() { "memory\n" } else { "\n" }.to_string())
            }
            "cgroup.subtree_control" => {
                return Ok(if c.subtree_memory { "memory\n" } else { "\n" }.to_string())
            }
            "cgroup.procs" => {
                let mut s = String::new();
                for p in &c.procs {
                    let _ = writeln!(s, "{}", p.0);
                }
                return Ok(s);
            }
            "cgroup.stat" => {
                let n = self.cgroups.subtree(id).len() - 1;
                return Ok(format!("nr_descendants {n}\nnr_dying_descendants 0\n"));
            }
            _ => {}
        }
        let m = self.memory_file(id, path, file)?;
        let t = &mut self.tree;
        Ok(match file {
            "memory.current" => format!("{}\n", t.memory_current(m)?),
            "memory.min" => show_limit(t.memory(m)?.min()),
            "memory.low" => show_limit(t.memory(m)?.low()),
            "memory.high" => show_limit(t.memory(m)?.high()),
            "memory.max" => show_limit(t.memory(m)?.max()),
            "memory.peak" => format!("{}\n", t.memory(m)?.watermark() * PAGE_SIZE),
            "memory.swap.current" => format!("{}\n", t.swap(m)?.usage() * PAGE_SIZE),
            "memory.swap.high" => show_limit(t.swap(m)?.high()),
            "memory.swap.max" => show_limit(t.swap(m)?.max()),
            "memory.swap.peak" => format!("{}\n", t.swap(m)?.watermark() * PAGE_SIZE),
            "memory.events" => t.memory_events(m)?,
            "memory.events.local" => t.memory_events_local(m)?,
            "memory.swap.events" => t.memory_swap_events(m)?,
            "memory.stat" => t.memory_stat(m)?,
            "memory.numa_stat" => t.memory_numa_stat(m)?,
            "memory.oom.group" => format!("{}\n", u8::from(t.oom_group(m)?)),
            _ => return Err(MachineError::NoEntry(format!("{path}/{file}"))),
        })
    }

    /// Writes `value` to `file` of cgroup `path`.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`], [`MachineError::Invalid`],
    /// [`MachineError::Busy`], [`MachineError::Again`] (`memory.reclaim`).
    pub fn write(&mut self, path: &str, file: &str, value: &str) -> Result<(), MachineError> {
        let id = self.cgroups.lookup(path)?;
        match file {
            "cgroup.subtree_control" => return self.write_subtree_control(id, value),
            "cgroup.procs" => {
                let pid: u32 = value
                    .trim()
                    .parse()
                    .map_err(|_| MachineError::Invalid(value.to_string()))?;
                return self.migrate(super::Pid(pid), id);
            }
            "cgroup.kill" => {
                return match value.trim() {
                    "1" => self.kill_cgroup(id),
                    _ => Err(MachineError::Invalid(value.to_string())),
                }
            }
            _ => {}
        }
        let m = self.memory_file(id, path, file)?;
        match file {
            "memory.min" => self.tree.set_min(m, size_pages(value)?)?,
            "memory.low" => self.tree.set_low(m, size_pages(value)?)?,
            "memory.high" => self
                .tree
                .write_high(0, m, size_pages(value)?, &mut self.lru)?,
            "memory.max" => {
                let pages = size_pages(value)?;
                let mut fits = self.tree.write_max(0, m, pages, &mut self.lru)?;
                while !fits {
                    if self.out_of_memory(m)?.is_empty() {
                        break;
                    }
                    fits = self.tree.shrink_to_max(0, m, &mut self.lru)?;
                }
            }
            "memory.swap.high" => self.tree.set_swap_high(m, size_pages(value)?)?,
            "memory.swap.max" => self.tree.set_swap_max(m, size_pages(value)?)?,
            "memory.oom.group" => {
                let on = match value.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(MachineError::Invalid(value.to_string())),
                };
                self.tree.set_oom_group(m, on)?;
            }
            "memory.reclaim" => self.write_reclaim(m, value)?,
            "memory.peak" | "memory.swap.peak" => {
                let fd = self.open(path, file)?;
                let r = self.write_fd(fd, value);
                self.close_fd(fd)?;
                r?;
            }
            _ => return Err(MachineError::NoEntry(format!("{path}/{file}"))),
        }
        Ok(())
    }

    fn write_reclaim(&mut self, m: MemcgId, value: &str) -> Result<(), MachineError> {
        let mut toks = value.split_whitespace();
        let bytes = parse_size(toks.next().ok_or(MachineError::Invalid(value.into()))?)?;
        let mut swappiness = None;
        for t in toks {
            let v = t
                .strip_prefix("swappiness=")
                .ok_or_else(|| MachineError::Invalid(t.to_string()))?;
            swappiness = Some(
                v.parse()
                    .map_err(|_| MachineError::Invalid(t.to_string()))?,
            );
        }
        Ok(self
            .tree
            .memory_reclaim(0, m, bytes / PAGE_SIZE, swappiness, &mut self.lru)?)
    }

    /// Opens `memory.peak` or `memory.swap.peak` of cgroup `path`.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`] for other files and missing ones.
    pub fn open(&mut self, path: &str, file: &str) -> Result<Fd, MachineError> {
        let id = self.cgroups.lookup(path)?;
        let m = self.memory_file(id, path, file)?;
        let resource = match file {
            "memory.peak" => PeakResource::Memory,
            "memory.swap.peak" => PeakResource::Swap,
            _ => return Err(MachineError::NoEntry(format!("{path}/{file} (open)"))),
        };
        let peak = self.tree.open_peak(m, resource)?;
        let fd = Fd(self.fds.next);
        self.fds.next += 1;
        self.fds.open.insert(fd, peak);
        Ok(fd)
    }

    fn peak_fd(&self, fd: Fd) -> Result<PeakFd, MachineError> {
        self.fds
            .open
            .get(&fd)
            .copied()
            .ok_or_else(|| MachineError::NoEntry(format!("fd {}", fd.0)))
    }

    /// Reads an open descriptor.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`] for a closed descriptor.
    pub fn read_fd(&self, fd: Fd) -> Result<String, MachineError> {
        Ok(format!("{}\n", self.tree.read_peak(self.peak_fd(fd)?)?))
    }

    /// Writes an open descriptor (a non-empty string resets the peak).
    ///
    /// # Errors
    /// [`MachineError::NoEntry`], [`MachineError::Invalid`] for an empty
    /// write.
    pub fn write_fd(&mut self, fd: Fd, value: &str) -> Result<(), MachineError> {
        if value.is_empty() {
            return Err(MachineError::Invalid("empty write".into()));
        }
        Ok(self.tree.reset_peak(self.peak_fd(fd)?)?)
    }

    /// Closes a descriptor.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`].
    pub fn close_fd(&mut self, fd: Fd) -> Result<(), MachineError> {
        let p = self.peak_fd(fd)?;
        self.fds.open.remove(&fd);
        Ok(self.tree.close_peak(p)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_memparse() {
        assert_eq!(parse_size("30M").unwrap(), 30 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("max").unwrap(), u64::MAX);
        assert!(parse_size("12Q").is_err());
        assert_eq!(size_pages("10M").unwrap(), 2560);
        assert_eq!(size_pages("max").unwrap(), UNLIMITED);
    }
}
