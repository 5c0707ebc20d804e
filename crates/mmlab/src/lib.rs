//! mmlab: the laboratory around hierstat. The binary (`main.rs`) does the I/O;
//! this library holds the pieces that tests exercise directly.

pub mod compare;
pub mod html;
pub mod stats;
pub mod store;
pub mod text;
