//! mmlab's end-to-end tests, one binary (each file was its own binary, and
//! each linked the whole workspace): the `mmlab` binary driven as users and
//! hostile inputs would, the HTML report in a real browser, kernel mode on
//! the host's cgroups.

mod common;
#[path = "../../../hostkernel/tests/support/mod.rs"]
mod support;

mod cli;
mod compare;
mod fuzz;
mod hardening;
mod hostile;
mod html;
mod html_browser;
mod kernel;
mod rates_cache;
mod reproducer;
mod sweep;
mod text;
mod usability;
