//! What the reports compute: small-sample statistics, the comparison-table
//! model, and stored runs compared side by side.

pub mod compare;
pub mod stats;
pub mod table;
