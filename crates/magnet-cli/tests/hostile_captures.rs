//! Captures the readers cannot use whole say so and exit 1 (docs/exit-codes.md):
//! frames of a link type magnet does not
//! decode are counted and named by `rpc`, `nfs` and `match` (which called them
//! "ethertype 0x0000" and exited 0), and a cut capture exits 1 in all three.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn magnet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_magnet"))
        .args(args)
        .output()
        .unwrap()
}

fn ganesha() -> Vec<u8> {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../magnet-rpc/tests/data/ganesha-v3-tcp.pcap");
    std::fs::read(p).unwrap()
}

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/release-0.1.0.mgt"
);

fn write(dir: &Path, name: &str, b: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, b).unwrap();
    p
}

#[test]
fn a_link_type_not_decoded_is_counted_named_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = ganesha();
    assert_eq!(
        &b[..4],
        &0xa1b2_c3d4u32.to_le_bytes(),
        "a little-endian pcap"
    );
    let frames = {
        let out = magnet(&[
            "rpc",
            "-r",
            write(dir.path(), "eth.pcap", &b).to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0));
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let n: u64 = err.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(
            err.contains(" RPC calls") && !err.contains(" 0 RPC calls"),
            "{err}"
        );
        n
    };
    b[20..24].copy_from_slice(&147u32.to_le_bytes());
    let p = write(dir.path(), "user0.pcap", &b);
    let p = p.to_str().unwrap();
    for cmd in ["rpc", "nfs"] {
        let out = magnet(&[cmd, "-r", p]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains(&format!("link_not_decoded={frames}"))
                && err.contains(&format!(
                    "warning: {frames} frames of link type 147 not decoded"
                )),
            "{cmd}: {err}"
        );
    }
    let out = magnet(&["match", "-q", TRACE, p]);
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "match: {err}");
    assert!(
        err.contains(&format!("{frames} frames of link type 147 not decoded")),
        "{err}"
    );
    assert!(!text.contains("ethertype 0x0000"), "{text}");
    let out = magnet(&["match", "--json", TRACE, p]);
    let json = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        json.matches("\"link type 147 (not decoded)\"").count() as u64,
        frames,
        "{json}"
    );
}

#[test]
fn a_cut_capture_exits_1_in_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let b = ganesha();
    // Cut inside a packet record, past the first few packets.
    let p = write(dir.path(), "cut.pcap", &b[..b.len() * 2 / 3 + 5]);
    let p = p.to_str().unwrap();
    for args in [
        &["rpc", "-r", p][..],
        &["nfs", "-r", p],
        &["match", "-q", TRACE, p],
    ] {
        let out = magnet(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("warning:"), "{args:?}: {err}");
    }
}
