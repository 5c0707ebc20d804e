//! hierstat's memory per group, through the public API
//! ([`HierStats::memory_bytes`]) and the process's resident set.
//!
//! Two tables:
//!
//! 1. **Per group, by who writes it**: 100,000 groups × 16 items on 64
//!    shards (`HS_GROUPS`, `HS_ITEMS`, `HS_SHARDS` override), after creation, then
//!    written from 4 shards or from all of them — by their owner threads
//!    (plain stores; the flush then takes snapshots) or through the shared
//!    path (`hierstat::sim`'s explicit shards, atomic adds) — and flushed.
//!    Each row runs in a fresh process, so its resident-set growth is its
//!    own.
//! 2. **A group that no shard writes**, for a few schema sizes and shard
//!    counts: a leaf, and a group with children (which also holds the
//!    `pending` deltas they push up, 8 B × items).
//!
//! `cargo run --release -p hierstat --example memory [per-group|idle]`

use hierstat::sim::{Shard, Simulator};
use hierstat::{Config, Group, HierStats, ItemId, Preset, Schema, Unit};
use std::process::Command;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident set size of this process in bytes (Linux; 0 elsewhere).
fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Who writes the groups.
#[derive(Clone, Copy)]
enum Writers {
    Nobody,
    /// `n` owner threads (each owns its shard), one update per group each.
    Owners(usize),
    /// Shards `0..n` through the shared path.
    Shared(usize),
}

impl Writers {
    fn parse(s: &str) -> Option<Self> {
        let (kind, n) = s.split_once(':').unwrap_or((s, "0"));
        let n = n.parse().ok()?;
        match kind {
            "none" => Some(Writers::Nobody),
            "owners" => Some(Writers::Owners(n)),
            "shared" => Some(Writers::Shared(n)),
            _ => None,
        }
    }
}

/// One row of the first table, in this process: prints
/// `memory_bytes/group rss/group`.
fn per_group_row(writers: Writers) -> Result<(), Box<dyn std::error::Error>> {
    let (groups, items, shards) = (
        env("HS_GROUPS", 100_000),
        env("HS_ITEMS", 16),
        env("HS_SHARDS", 64),
    );
    let mut b = Schema::builder();
    let ids: Vec<ItemId> = (0..items)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let rss0 = rss_bytes();
    let t = HierStats::new(b.build()?, Config::preset(Preset::Hierstat).shards(shards))?;
    // 100 parents of 1,000 leaves each (at the default size).
    let parents: Vec<Group> = (0..groups.div_ceil(1000))
        .map(|i| t.create(&t.root(), &format!("p{i}")))
        .collect::<Result<_, _>>()?;
    let leaves: Vec<Group> = (0..groups)
        .map(|i| t.create(&parents[i / 1000], &format!("g{i}")))
        .collect::<Result<_, _>>()?;
    let n = parents.len() + leaves.len() + 1;
    match writers {
        Writers::Nobody => {}
        Writers::Owners(k) => {
            // Each thread takes its own seat (the lowest free), so owns a
            // shard; the first write of each group on it allocates the row.
            // They all hold their seats until all have written (a thread
            // that exited early would give its seat, and its shard, to the
            // next).
            let done = std::sync::Barrier::new(k);
            std::thread::scope(|s| {
                for w in 0..k {
                    let (t, leaves, ids, done) = (&t, &leaves, &ids, &done);
                    s.spawn(move || {
                        for (i, g) in leaves.iter().enumerate() {
                            let _ = t.add(g, ids[(i + w) % ids.len()], 1);
                        }
                        done.wait();
                    });
                }
            });
        }
        Writers::Shared(k) => {
            for (i, g) in leaves.iter().enumerate() {
                for s in 0..k {
                    t.add_with(Shard(s), g, ids[(i + s) % ids.len()], 1, &mut ())?;
                }
            }
        }
    }
    t.flush_forced(&t.root())?;
    let rss = rss_bytes().saturating_sub(rss0);
    println!("{} {}", t.memory_bytes() / n, rss / n);
    Ok(())
}

fn per_group_table() -> Result<(), Box<dyn std::error::Error>> {
    let (groups, items, shards) = (
        env("HS_GROUPS", 100_000),
        env("HS_ITEMS", 16),
        env("HS_SHARDS", 64),
    );
    println!(
        "Per group: {groups} groups × {items} items, {shards} shards, `hierstat` preset, after a root flush"
    );
    println!(
        "{:<34} {:>16} {:>14}",
        "written by", "memory_bytes() B", "RSS growth B"
    );
    let rows = [
        ("nobody (created only)".to_string(), "none".to_string()),
        ("4 owner threads (4 shards)".into(), "owners:4".into()),
        ("4 shards, shared path".into(), "shared:4".into()),
        (
            format!("{shards} owner threads (all shards)"),
            format!("owners:{shards}"),
        ),
        (
            format!("all {shards} shards, shared path"),
            format!("shared:{shards}"),
        ),
    ];
    for (what, arg) in rows {
        let out = Command::new(std::env::current_exe()?)
            .args(["row", &arg])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut f = text.split_whitespace();
        let (mem, rss) = (f.next().unwrap_or("?"), f.next().unwrap_or("?"));
        println!("{what:<34} {mem:>16} {rss:>14}");
    }
    Ok(())
}

fn idle_table() -> Result<(), Box<dyn std::error::Error>> {
    println!("A group no shard writes (rows exist only once a shard writes the group)");
    println!(
        "{:>6} {:>7} {:>10} {:>10}",
        "items", "shards", "leaf B", "parent B"
    );
    for items in [1usize, 8, 50] {
        for shards in [2usize, 16, 96, 1024] {
            let mut b = Schema::builder();
            for i in 0..items {
                b.state(&format!("s{i}"), Unit::Pages);
            }
            let t = HierStats::new(b.build()?, Config::default().shards(shards))?;
            let root = t.root();
            let n = 4096;
            let m0 = t.memory_bytes();
            let groups: Vec<_> = (0..n)
                .map(|i| t.create(&root, &format!("g{i:05}")))
                .collect::<Result<_, _>>()?;
            let m1 = t.memory_bytes();
            for g in &groups {
                t.create(g, "c")?;
            }
            let m2 = t.memory_bytes();
            let leaf = (m1 - m0) as f64 / n as f64;
            // Adding n children added n leaves and turned n leaves into
            // parents.
            let parent = leaf + ((m2 - m1) as f64 - n as f64 * leaf) / n as f64;
            println!("{items:>6} {shards:>7} {leaf:>10.0} {parent:>10.0}");
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("row") => {
            let w = args
                .get(1)
                .and_then(|a| Writers::parse(a))
                .ok_or("row needs none, owners:N or shared:N")?;
            per_group_row(w)
        }
        Some("per-group") => per_group_table(),
        Some("idle") => idle_table(),
        None => {
            per_group_table()?;
            println!();
            idle_table()
        }
        Some(other) => Err(format!("unknown table {other:?} (per-group, idle)").into()),
    }
}
