//! Generates the Rust side of magnet's records (kind ids, the catalog, typed
//! views) from their one definition, `bpf/include/magnet/events.h` (the BPF
//! headers every program shares; the format owns its records), with the
//! strict reader in `gen/events_h.rs`. A header it does not understand fails
//! the build with the line and the reason.

#[path = "gen/events_h.rs"]
mod events_h;

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let header = manifest.join("../../bpf/include/magnet/events.h");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rerun-if-changed=gen/events_h.rs");
    let src = std::fs::read_to_string(&header)
        .unwrap_or_else(|e| panic!("magnet-trace: reading {}: {e}", header.display()));
    let model =
        events_h::parse(&src).unwrap_or_else(|e| panic!("magnet-trace: {}: {e}", header.display()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(
        out.join("events.rs"),
        events_h::rust(&model, "bpf/include/magnet/events.h"),
    )
    .expect("write OUT_DIR/events.rs");
}
