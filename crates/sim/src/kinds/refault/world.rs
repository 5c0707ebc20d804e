//! The simulated machine of one run: the systemd-like memcg tree, the lock
//! scopes of its subtrees, and the workload's file and heap mappings.

use super::spec::RefaultSpec;
use crate::error::SimError;
use crate::lock::Scope;
use hierstat::{sim::ManualClock, Policy, PAGE_SIZE};
use models::memcg::{MemcgConfig, MemcgId, MemcgTree};
use models::workingset::{Lru, ShadowLayout};
use std::collections::{HashMap, VecDeque};

/// Pages of a THP.
pub(crate) const THP: u64 = 512;

pub(crate) fn mb_pages(mb: u64) -> u64 {
    mb * (1 << 20) / PAGE_SIZE
}

/// The workload's mappings and its heap's state.
#[derive(Debug)]
pub(crate) struct Workload {
    pub(crate) file_first: u32,
    pub(crate) file_len: u32,
    pub(crate) hot_len: u32,
    pub(crate) heap_first: u32,
    pub(crate) heap_len: u32,
    pub(crate) live: Vec<u32>,
    pub(crate) free: Vec<u32>,
    /// Queued heap faults (`true`) and touches.
    pub(crate) ops: VecDeque<(u32, bool)>,
    /// Queued faults not yet done.
    pub(crate) allocating: usize,
}

/// The machine of one run.
pub(crate) struct World {
    pub(crate) clock: ManualClock,
    pub(crate) tree: MemcgTree,
    pub(crate) lru: Lru,
    pub(crate) wl: MemcgId,
    pub(crate) services: Vec<MemcgId>,
    pub(crate) scopes: HashMap<MemcgId, Scope>,
    pub(crate) wk: Workload,
}

impl World {
    /// `/init.scope`, `/user.slice/user-1000.slice`, `/system.slice` with the
    /// services and `workload.service` (under `memory.max`), and the
    /// workload's file and THP heap on node 0.
    pub(crate) fn build(spec: &RefaultSpec, policy: Policy) -> Result<World, SimError> {
        let cpus = spec.cpus as usize;
        let nodes = spec.nodes as usize;
        let w = &spec.workload;
        let clock = ManualClock::new(0);
        let mut tree = MemcgTree::new(
            MemcgConfig::new(cpus, nodes)
                .policy(policy)
                .swap_pages(mb_pages(w.swap_mb))
                .clock(clock.clone()),
        )?;
        let root = tree.root();
        tree.create(root, "init.scope")?;
        let system = tree.create(root, "system.slice")?;
        let user = tree.create(root, "user.slice")?;
        tree.create(user, "user-1000.slice")?;
        let services: Vec<MemcgId> = (0..spec.services)
            .map(|i| tree.create(system, &format!("svc{i}.service")))
            .collect::<Result<_, _>>()?;
        let wl = tree.create(system, "workload.service")?;
        tree.set_max(wl, mb_pages(w.memory_max_mb))?;
        // Preorder subtree intervals as lock scopes.
        let order = tree.ids();
        let mut scopes = HashMap::new();
        for (i, &id) in order.iter().enumerate() {
            let size = tree.subtree(id).len() as u32;
            scopes.insert(
                id,
                Scope {
                    lo: i as u32,
                    hi: i as u32 + size - 1,
                },
            );
        }
        let mut lru = Lru::new(nodes, ShadowLayout::default());
        let file_len = mb_pages(w.file_mb) as u32;
        let file_first = lru.add_mapping(wl, 0, true, file_len, 1)?;
        let heap_len = (mb_pages(w.anon_max_mb) / THP) as u32;
        let heap_first = lru.add_mapping(wl, 0, false, heap_len, THP)?;
        let wk = Workload {
            file_first,
            file_len,
            hot_len: ((file_len as f64 * w.hot_fraction) as u32).max(1),
            heap_first,
            heap_len,
            live: Vec::new(),
            free: (0..heap_len).rev().collect(),
            ops: Default::default(),
            allocating: 0,
        };
        Ok(World {
            clock,
            tree,
            lru,
            wl,
            services,
            scopes,
            wk,
        })
    }
}
