//! Workload building blocks shared by the runners: the group tree shape and
//! the stat items of the simulated `memory.stat`.

pub mod items;
pub mod tree;

pub use items::item_names;
pub use tree::{GroupIdx, TreeShape};
