//! Compiles the recorder's BPF programs (`src/bpf/record.bpf.c`) and generates
//! their libbpf-rs skeleton into OUT_DIR.
fn main() {
    magnet_bpf_build::build_skeleton("src/bpf/record.bpf.c", "record.skel.rs");
}
