//! The three experiments: typed configurations in, typed plain-data results
//! out (serde-serialisable), no printing.

pub mod stale_read;
pub mod stat_readers;
pub mod update_path;
