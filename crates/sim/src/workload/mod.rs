//! Workload building blocks shared by the runners and the `stats` kind:
//! the tables that describe a workload, the group tree shape and the stat
//! items of the simulated `memory.stat`.

pub mod items;
pub mod spec;
pub mod tree;

pub use items::item_names;
pub use spec::{
    FaultTest, FlusherSpec, NetperfSpec, ReadersSpec, SpikeSpec, Targets, TaskMode, TreeSpec,
    UpdateSpec, WillItScaleSpec, WritersSpec,
};
pub use tree::{GroupIdx, TreeShape};
