//! The crate's only `unsafe` code, one file per concept:
//!
//! * [`child`]: forked workers, without exec: the parent's side (spawn,
//!   the command bytes, results, kill, wait) and the child's body (raw
//!   system calls only, from `fork` to `_exit`);
//! * [`signal`]: the process's SIGINT/SIGTERM handler and the state it
//!   reads (the design is `crate::signals`);
//! * [`query`]: system queries and small calls (page size, online CPUs,
//!   pinning, memfd, sendfile, euid, uname, kill, clocks).
//!
//! `child` and `signal` use `query`; nothing uses `child` or `signal`
//! inside this module but the tests' support.

pub(crate) mod child;
pub(crate) mod query;
pub(crate) mod signal;

#[cfg(test)]
pub(crate) mod test_support;
