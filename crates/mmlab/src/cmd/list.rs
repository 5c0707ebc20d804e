//! `mmlab list`: the built-in scenarios, the flush policies and the NUMA
//! scanner versions ([`crate::render::list`]).

use crate::pipeline::input;
use crate::render::{json, list};
use anyhow::Result;
use std::io::Write;
use std::path::Path;

/// `mmlab list`.
pub fn cmd_list(json_path: Option<&Path>, out: &mut dyn Write) -> Result<()> {
    let catalog = input::catalog();
    let scenarios = catalog
        .builtin_names()
        .map(|n| {
            catalog
                .builtin(n)
                .ok_or_else(|| anyhow::anyhow!("built-in `{n}` is listed but missing"))?
                .map_err(anyhow::Error::from)
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(p) = json_path {
        return json::write_json(p, &list::list_json(&scenarios), out);
    }
    write!(out, "{}", list::render_list(&scenarios))?;
    Ok(())
}
