//! Temporary files and their page cache (`get_temp_fd`: an `O_TMPFILE`).
//!
//! A file is a sequence of extents, one per growth (`ftruncate`); each
//! extent is a page-cache mapping of the LRU model charged to the memcg of
//! the process that grew the file. The kernel charges each page to the
//! memcg of the task that first reads it; in the selftests the process
//! that grows a file is the one that reads the new pages, so both give the
//! same charges. The file's offset is shared by everyone holding it (one
//! open file description, inherited across `fork`). An unlinked temporary
//! file's page cache is freed when it is closed: by its owner's exit, or
//! explicitly.

use super::{Machine, MachineError, Pid};
use crate::memcg::MemcgId;

/// A temporary file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub usize);

#[derive(Debug, Clone, Copy)]
struct Extent {
    start: u64,
    len: u64,
    first_slot: u32,
}

#[derive(Debug, Clone, Default)]
struct File {
    size: u64,
    offset: u64,
    extents: Vec<Extent>,
    owner: Option<Pid>,
    open: bool,
}

/// All files.
#[derive(Debug, Clone, Default)]
pub(crate) struct Files {
    list: Vec<File>,
}

impl Files {
    fn get(&self, f: FileId) -> Result<&File, MachineError> {
        self.list
            .get(f.0)
            .filter(|x| x.open)
            .ok_or_else(|| MachineError::NoEntry(format!("file {}", f.0)))
    }

    fn get_mut(&mut self, f: FileId) -> Result<&mut File, MachineError> {
        self.list
            .get_mut(f.0)
            .filter(|x| x.open)
            .ok_or_else(|| MachineError::NoEntry(format!("file {}", f.0)))
    }
}

impl Machine {
    /// Creates an empty temporary file, closed when `owner` exits (or
    /// never, for `None`: the test itself) unless closed before.
    pub fn tmpfile(&mut self, owner: Option<Pid>) -> FileId {
        self.files.list.push(File {
            owner,
            open: true,
            ..File::default()
        });
        FileId(self.files.list.len() - 1)
    }

    /// Pages in `file`.
    ///
    /// # Errors
    /// [`MachineError::NoEntry`] for a closed file.
    pub fn file_pages(&self, file: FileId) -> Result<u64, MachineError> {
        Ok(self.files.get(file)?.size)
    }

    /// Grows `file` by `pages` charged to `memcg`; returns the new size.
    pub(crate) fn extend_file(
        &mut self,
        file: FileId,
        pages: u64,
        memcg: MemcgId,
    ) -> Result<u64, MachineError> {
        let start = self.files.get(file)?.size;
        if pages > 0 {
            let len =
                u32::try_from(pages).map_err(|_| MachineError::Invalid("file size".into()))?;
            let first_slot = self.lru.add_mapping(memcg, 0, true, len, 1)?;
            let f = self.files.get_mut(file)?;
            f.extents.push(Extent {
                start,
                len: pages,
                first_slot,
            });
            f.size += pages;
        }
        Ok(self.files.get(file)?.size)
    }

    /// The slot of the page at `file`'s offset, advancing the offset; `None`
    /// at the end of the file.
    pub(crate) fn file_read_slot(&mut self, file: FileId) -> Result<Option<u32>, MachineError> {
        let f = self.files.get_mut(file)?;
        if f.offset >= f.size {
            return Ok(None);
        }
        let page = f.offset;
        f.offset += 1;
        let e = f
            .extents
            .iter()
            .find(|e| (e.start..e.start + e.len).contains(&page))
            .ok_or_else(|| MachineError::Invalid("file extent".into()))?;
        Ok(Some(e.first_slot + (page - e.start) as u32))
    }

    /// Closes `file`: its page cache is freed (on CPU `cpu`).
    ///
    /// # Errors
    /// [`MachineError::NoEntry`] for a closed file; accounting errors.
    pub fn close_file_on(&mut self, cpu: usize, file: FileId) -> Result<(), MachineError> {
        let f = self.files.get_mut(file)?;
        f.open = false;
        let extents = std::mem::take(&mut f.extents);
        for e in extents {
            for s in e.first_slot..e.first_slot + e.len as u32 {
                self.lru.free(&mut self.tree, cpu, s)?;
            }
        }
        Ok(())
    }

    /// Closes `file` on CPU 0.
    ///
    /// # Errors
    /// As [`close_file_on`](Self::close_file_on).
    pub fn close_file(&mut self, file: FileId) -> Result<(), MachineError> {
        self.close_file_on(0, file)
    }

    /// Closes the files `pid` owns (its exit).
    pub(crate) fn close_files_of(&mut self, pid: Pid, cpu: usize) -> Result<(), MachineError> {
        let mine: Vec<FileId> = self
            .files
            .list
            .iter()
            .enumerate()
            .filter(|(_, f)| f.open && f.owner == Some(pid))
            .map(|(i, _)| FileId(i))
            .collect();
        for f in mine {
            self.close_file_on(cpu, f)?;
        }
        Ok(())
    }
}
