//! Compiles the sampler's tc programs (`src/bpf/sample.bpf.c`) and generates
//! their libbpf-rs skeleton into OUT_DIR.
fn main() {
    magnet_bpf_build::build_skeleton("src/bpf/sample.bpf.c", "sample.skel.rs");
}
