//! Records the git commit the binary is built from (`MMLAB_GIT_COMMIT`)
//! and whether its sources differ from that commit (`MMLAB_GIT_DIRTY`, `1`
//! or `0`), stored with every run and shown by `mmlab history`, `show`,
//! the HTML reports and the generated results tables. Outside a git
//! checkout nothing is recorded.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(o.stdout).ok()?.trim().to_string();
    o.status.success().then_some(s)
}

/// What the binary is built from: the workspace's sources and manifests
/// (paths from the workspace root).
const SOURCES: &[&str] = &["crates", "scenarios", "Cargo.toml", "Cargo.lock"];

fn main() {
    if let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]).filter(|c| !c.is_empty()) {
        println!("cargo:rustc-env=MMLAB_GIT_COMMIT={commit}");
        // Tracked files changed (staged or not) or new files under the
        // source folders: the build is not the commit's.
        let root = git(&["rev-parse", "--show-toplevel"]).unwrap_or_default();
        let mut args = vec!["status", "--porcelain", "--untracked-files=normal", "--"];
        let paths: Vec<String> = SOURCES.iter().map(|p| format!("{root}/{p}")).collect();
        args.extend(paths.iter().map(String::as_str));
        if let Some(status) = git(&args) {
            let dirty = !status.is_empty();
            println!("cargo:rustc-env=MMLAB_GIT_DIRTY={}", u8::from(dirty));
        }
        // Run again when a source changes (cargo scans a folder for
        // changes) so the flag follows the tree.
        for p in &paths {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    // Build again when HEAD moves: HEAD itself, the branch it names, the
    // index, and the packed refs (only the files that exist, or cargo
    // would run this script on every build).
    let mut watch = vec![
        "HEAD".to_string(),
        "packed-refs".to_string(),
        "index".to_string(),
    ];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]).filter(|r| !r.is_empty()) {
        watch.push(r);
    }
    for w in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &w]) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
