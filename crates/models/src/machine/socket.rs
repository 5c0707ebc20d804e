//! A TCP connection over loopback whose server runs in a memcg: the
//! server's send queue is charged to its memcg as socket memory (`sock`),
//! the client's receive queue (the client runs outside) is not.
//!
//! The server writes in a loop (`tcp_server`): its send queue fills to the
//! send buffer's autotuned maximum (`tcp_wmem[2]`, 4 MiB) and it blocks.
//! Each read by the client frees that much of the queue (acknowledged
//! data leaves it: `mem_cgroup_uncharge_skmem`, through the charge stock
//! of the CPU processing the acknowledgement, the client's) and the server
//! writes as much again (`mem_cgroup_charge_skmem`, on its own CPU), in
//! 64 KiB segments. When the client closes, the server's next write fails
//! (`ECONNRESET`), it frees its queue and exits.

use super::{Machine, MachineError, Outcome, Pid};
use crate::memcg::{Charge, MemcgId};
use hierstat::PAGE_SIZE;

/// The send buffer's maximum (`tcp_wmem[2]`), in pages.
pub const SNDBUF_PAGES: u64 = (4 << 20) / PAGE_SIZE;
/// Pages of one segment charged or freed at a time (64 KiB).
pub const SEGMENT_PAGES: u64 = 16;

/// A connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SockId(pub usize);

#[derive(Debug, Clone, Copy)]
struct Conn {
    server: Pid,
    memcg: MemcgId,
    server_cpu: usize,
    client_cpu: usize,
    queued: u64,
    open: bool,
}

/// All connections.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sockets {
    list: Vec<Conn>,
}

impl Sockets {
    /// Queued pages charged to `m` are now `parent`'s.
    pub(crate) fn reparent_memcg(&mut self, m: MemcgId, parent: MemcgId) {
        for c in self.list.iter_mut().filter(|c| c.open && c.memcg == m) {
            c.memcg = parent;
        }
    }
}

impl Machine {
    /// A client on `client_cpu` connects to the server process `server`,
    /// which starts writing: its send queue fills.
    ///
    /// # Errors
    /// [`MachineError::NoProcess`]; charge failures.
    pub fn tcp_connect(&mut self, server: Pid, client_cpu: usize) -> Result<SockId, MachineError> {
        let memcg = self.memcg_of(server)?;
        let server_cpu = self.cpu_of(server)?;
        self.sockets.list.push(Conn {
            server,
            memcg,
            server_cpu,
            client_cpu: client_cpu % self.cpus(),
            queued: 0,
            open: true,
        });
        let id = SockId(self.sockets.list.len() - 1);
        self.tcp_fill(id)?;
        Ok(id)
    }

    fn conn(&self, id: SockId) -> Result<Conn, MachineError> {
        self.sockets
            .list
            .get(id.0)
            .copied()
            .filter(|c| c.open)
            .ok_or_else(|| MachineError::NoEntry(format!("socket {}", id.0)))
    }

    /// The server writes until its send queue is full.
    fn tcp_fill(&mut self, id: SockId) -> Result<(), MachineError> {
        let c = self.conn(id)?;
        let mut queued = c.queued;
        let mut ctx = self.procs.get(c.server)?.ctx;
        while queued < SNDBUF_PAGES {
            self.tree.charge_in(
                c.server_cpu,
                c.memcg,
                0,
                Charge::Sock,
                SEGMENT_PAGES,
                &mut self.lru,
                &mut ctx,
            )?;
            queued += SEGMENT_PAGES;
        }
        self.sockets.list[id.0].queued = queued;
        self.tree
            .handle_over_high(c.server_cpu, c.memcg, &mut self.lru, &mut ctx)?;
        self.procs.get_mut(c.server)?.ctx = ctx;
        Ok(())
    }

    /// The client reads `bytes`: that much leaves the server's queue, and
    /// the server writes as much again. Returns the bytes read.
    ///
    /// # Errors
    /// A closed connection; charge failures.
    pub fn tcp_recv(&mut self, id: SockId, bytes: u64) -> Result<u64, MachineError> {
        let c = self.conn(id)?;
        let pages = (bytes / PAGE_SIZE).min(c.queued);
        let mut left = pages;
        while left > 0 {
            let n = left.min(SEGMENT_PAGES);
            self.tree
                .uncharge_kind(c.client_cpu, c.memcg, 0, Charge::Sock, n)?;
            left -= n;
        }
        self.sockets.list[id.0].queued -= pages;
        self.tcp_fill(id)?;
        Ok(pages * PAGE_SIZE)
    }

    /// The client closes: the server's write fails, it frees its queue and
    /// exits. Returns how the server ended.
    ///
    /// # Errors
    /// A closed connection; accounting errors.
    pub fn tcp_close(&mut self, id: SockId) -> Result<Outcome, MachineError> {
        let c = self.conn(id)?;
        self.free_conn(id, c.server_cpu)?;
        self.exit(c.server)?;
        Ok(Outcome::Done)
    }

    fn free_conn(&mut self, id: SockId, cpu: usize) -> Result<(), MachineError> {
        let c = self.conn(id)?;
        self.sockets.list[id.0].open = false;
        let mut left = c.queued;
        while left > 0 {
            let n = left.min(SEGMENT_PAGES);
            self.tree.uncharge_kind(cpu, c.memcg, 0, Charge::Sock, n)?;
            left -= n;
        }
        Ok(())
    }

    /// Frees the connections whose server is `pid` (its exit).
    pub(crate) fn close_sockets_of(&mut self, pid: Pid, cpu: usize) -> Result<(), MachineError> {
        let mine: Vec<SockId> = (0..self.sockets.list.len())
            .filter(|&i| self.sockets.list[i].open && self.sockets.list[i].server == pid)
            .map(SockId)
            .collect();
        for s in mine {
            self.free_conn(s, cpu)?;
        }
        Ok(())
    }
}
