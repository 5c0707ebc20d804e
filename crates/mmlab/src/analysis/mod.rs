//! What the reports compute: small-sample statistics, the comparison-table
//! model, stored runs compared side by side, and a sweep's points with
//! their noise.

pub mod compare;
pub mod stats;
pub mod sweep;
pub mod table;
