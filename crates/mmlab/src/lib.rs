//! mmlab: the laboratory around hierstat. The binary (`main.rs`) does the I/O;
//! this library holds the pieces that tests exercise directly.

pub mod bench;
pub mod calibrate;
pub mod cli;
pub mod compare;
pub mod history;
pub mod html;
pub mod json;
pub mod run;
pub mod sample;
pub mod stats;
pub mod store;
pub mod storecmd;
pub mod suite;
pub mod table;
pub mod text;
