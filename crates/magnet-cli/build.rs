//! `magnet --version` names the commit it was built from: `git describe` of the
//! checkout, or a plain "not built from a git checkout" when there is none (a
//! source tarball, a crate package) or git is missing.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let s = String::from_utf8(o.stdout).ok()?.trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["describe", "--always", "--dirty", "--tags", "--abbrev=12"]);
    let version = env!("CARGO_PKG_VERSION");
    let long = match &commit {
        Some(c) => format!("{version} (commit {c})"),
        None => format!("{version} (not built from a git checkout)"),
    };
    println!("cargo:rustc-env=MAGNET_VERSION={long}");
    // Rebuild when HEAD moves or the index changes (a commit, a checkout).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        println!("cargo:rerun-if-changed={}", dir.join("index").display());
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
                let common = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(common);
                println!("cargo:rerun-if-changed={}", common.join(head).display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
