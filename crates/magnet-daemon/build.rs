//! Compiles magnetd's always-on programs (`src/bpf/summary.bpf.c`) and
//! generates their libbpf-rs skeleton into OUT_DIR.
fn main() {
    magnet_bpf_build::build_skeleton("src/bpf/summary.bpf.c", "summary.skel.rs");
}
