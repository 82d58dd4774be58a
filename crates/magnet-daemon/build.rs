//! Compiles magnetd's always-on programs (`src/bpf/summary.bpf.c`) and the
//! empty programs on the same hooks that the cost bench compares them with
//! (`src/bpf/empty.bpf.c`), and generates their libbpf-rs skeletons into OUT_DIR.
fn main() {
    magnet_bpf_build::build_skeleton("src/bpf/summary.bpf.c", "summary.skel.rs");
    magnet_bpf_build::build_skeleton("src/bpf/empty.bpf.c", "empty.skel.rs");
}
