//! Compiles `src/bpf/sample.bpf.c` with clang (CO-RE, against the vendored
//! `bpf/include/vmlinux.h`) and generates its libbpf-rs skeleton into OUT_DIR.

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SRC: &str = "src/bpf/sample.bpf.c";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let vmlinux = manifest.join("../../bpf/include");
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => panic!("magnet-sample: no BPF target mapping for architecture {other}"),
        Err(_) => "x86",
    };
    let result = SkeletonBuilder::new()
        .source(SRC)
        .clang_args([
            format!("-I{}", vmlinux.display()),
            format!("-I{}", manifest.join("src/bpf").display()),
            format!("-D__TARGET_ARCH_{arch}"),
            "-mcpu=v3".to_string(),
            "-Wall".to_string(),
        ])
        .build_and_generate(out.join("sample.skel.rs"));
    if let Err(err) = result {
        panic!(
            "magnet-sample: building the BPF programs failed: {err:#}\n\
             They need clang (>= 14) and the libbpf headers vendored by libbpf-sys;\n\
             run scripts/setup.sh to install clang, llvm, libelf-dev, zlib1g-dev and pkg-config."
        );
    }
    println!("cargo:rerun-if-changed=src/bpf");
    println!("cargo:rerun-if-changed=../../bpf/include");
}
