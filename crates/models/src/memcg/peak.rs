//! `memory.peak` and `memory.swap.peak` (cgroup-v2.rst: "the max memory
//! usage recorded for the cgroup and its descendants since either the
//! creation of the cgroup or the most recent reset for that FD. A write of
//! any non-empty string to this file resets it to the current memory usage
//! for subsequent reads through the same file descriptor").
//!
//! A descriptor that was never reset reads the counter's watermark. A reset
//! descriptor reads the highest usage since its own reset, kept without
//! touching the charge path: the counter tracks one *local* watermark,
//! restarted by every reset; a reset first folds the running local
//! watermark into every other reset descriptor of the counter, so each
//! descriptor's peak is the maximum of its folded value and the running
//! local watermark.

use super::{MemcgError, MemcgId, MemcgTree, PageCounter};
use hierstat::PAGE_SIZE;
use std::collections::BTreeMap;

/// Which counter a peak file reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeakResource {
    /// `memory.peak`.
    Memory,
    /// `memory.swap.peak`.
    Swap,
}

/// An open `memory.peak` / `memory.swap.peak` descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeakFd(pub u64);

#[derive(Debug, Clone, Copy)]
struct Open {
    memcg: MemcgId,
    resource: PeakResource,
    /// `None` until the first reset through this descriptor.
    peak: Option<u64>,
}

/// Open peak descriptors.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeakFds {
    next: u64,
    open: BTreeMap<PeakFd, Open>,
}

impl MemcgTree {
    fn peak_counter(&self, id: MemcgId, r: PeakResource) -> Result<&PageCounter, MemcgError> {
        let n = self.node(id)?;
        Ok(match r {
            PeakResource::Memory => &n.memory,
            PeakResource::Swap => &n.swap,
        })
    }

    /// Opens `memory.peak` (or `memory.swap.peak`) of `id`.
    ///
    /// # Errors
    /// [`MemcgError::UnknownMemcg`].
    pub fn open_peak(&mut self, id: MemcgId, resource: PeakResource) -> Result<PeakFd, MemcgError> {
        self.node(id)?;
        let fd = PeakFd(self.peaks.next);
        self.peaks.next += 1;
        self.peaks.open.insert(
            fd,
            Open {
                memcg: id,
                resource,
                peak: None,
            },
        );
        Ok(fd)
    }

    /// Reads a peak descriptor, in bytes.
    ///
    /// # Errors
    /// [`MemcgError::UnknownFd`]; the group is gone.
    pub fn read_peak(&self, fd: PeakFd) -> Result<u64, MemcgError> {
        let o = self
            .peaks
            .open
            .get(&fd)
            .ok_or(MemcgError::UnknownFd(fd.0))?;
        let c = self.peak_counter(o.memcg, o.resource)?;
        let pages = match o.peak {
            None => c.watermark(),
            Some(p) => p.max(c.local_watermark()),
        };
        Ok(pages * PAGE_SIZE)
    }

    /// Resets a peak descriptor to the current usage (a write of a
    /// non-empty string).
    ///
    /// # Errors
    /// [`MemcgError::UnknownFd`]; the group is gone.
    pub fn reset_peak(&mut self, fd: PeakFd) -> Result<(), MemcgError> {
        let o = *self
            .peaks
            .open
            .get(&fd)
            .ok_or(MemcgError::UnknownFd(fd.0))?;
        let n = self.node_mut(o.memcg)?;
        let c = match o.resource {
            PeakResource::Memory => &mut n.memory,
            PeakResource::Swap => &mut n.swap,
        };
        let running = c.reset_local_watermark();
        let usage = c.usage();
        for (_, other) in self.peaks.open.iter_mut() {
            if other.memcg == o.memcg && other.resource == o.resource {
                if let Some(p) = other.peak.as_mut() {
                    *p = (*p).max(running);
                }
            }
        }
        if let Some(me) = self.peaks.open.get_mut(&fd) {
            me.peak = Some(usage);
        }
        Ok(())
    }

    /// Closes a peak descriptor.
    ///
    /// # Errors
    /// [`MemcgError::UnknownFd`].
    pub fn close_peak(&mut self, fd: PeakFd) -> Result<(), MemcgError> {
        self.peaks
            .open
            .remove(&fd)
            .map(|_| ())
            .ok_or(MemcgError::UnknownFd(fd.0))
    }
}
