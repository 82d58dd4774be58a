//! Shared by the build scripts of the crates that carry BPF programs
//! (magnet-record, magnet-daemon, magnet-sample): one place that knows how
//! magnet compiles BPF C (clang, CO-RE, the vendored `bpf/include/vmlinux.h`,
//! the target architecture's define) and what to tell a user when that fails.
//!
//! `bpf/include` is on every program's include path, so the header set all
//! three share is included as `"magnet/consts.h"`, `"magnet/sock.h"` and
//! `"magnet/skb_parse.h"`; a change there rebuilds every program (the whole
//! directory is watched).

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

/// Compiles `src` (relative to the calling crate) and writes its skeleton to
/// `OUT_DIR/<skel>`. Panics with what to install when clang is missing or the
/// program does not compile: a build script has no other way to fail.
pub fn build_skeleton(src: &str, skel: &str) {
    let crate_name = env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "magnet".into());
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace_include = manifest.join("../../bpf/include");
    let src_dir = manifest
        .join(src)
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.clone());
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") | Err(_) => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => panic!("{crate_name}: no BPF target mapping for architecture {other}"),
    };
    let mut args = vec![
        format!("-I{}", workspace_include.display()),
        format!("-I{}", src_dir.display()),
        format!("-D__TARGET_ARCH_{arch}"),
        "-mcpu=v3".to_string(),
        "-Wall".to_string(),
    ];
    // Extra clang arguments for measurement builds only (e.g. the recorder's
    // cost profile `-DMG_PROF=N` and its floor `-DMG_PROF=9`: see "Cost profile
    // builds" in magnet-record's batch.bpf.c, its prog.h and bench/bpf-prog-profile.py).
    println!("cargo:rerun-if-env-changed=MAGNET_BPF_CFLAGS");
    if let Ok(extra) = env::var("MAGNET_BPF_CFLAGS") {
        args.extend(extra.split_whitespace().map(String::from));
    }
    let result = SkeletonBuilder::new()
        .source(src)
        .clang_args(args)
        .build_and_generate(out.join(skel));
    if let Err(err) = result {
        panic!(
            "{crate_name}: building the BPF programs ({src}) failed: {err:#}\n\
             They need clang (>= 14) and the libbpf headers vendored by libbpf-sys;\n\
             run scripts/setup.sh to install clang, llvm, libelf-dev, zlib1g-dev and pkg-config."
        );
    }
    println!("cargo:rerun-if-changed={}", src_dir.display());
    println!("cargo:rerun-if-changed={}", workspace_include.display());
}
