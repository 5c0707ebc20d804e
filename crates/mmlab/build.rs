//! Records the git commit the binary is built from (`MMLAB_GIT_COMMIT`),
//! stored with every run and shown by `mmlab history` and the generated
//! results tables. Outside a git checkout nothing is recorded.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(o.stdout).ok()?.trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    if let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) {
        println!("cargo:rustc-env=MMLAB_GIT_COMMIT={commit}");
    }
    // Build again when HEAD moves: HEAD itself, the branch it names, and
    // the packed refs (only the files that exist, or cargo would run this
    // script on every build).
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
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
