//! Google's packetdrill as an oracle (root, real BPF, tun devices): a core
//! slice of its TCP suite (third_party/packetdrill) — handshake both ways, data,
//! a retransmission, SACK recovery, close — each in IPv4 and IPv6, through
//! `scripts/packetdrill.sh`. Each script must pass without magnet (else this
//! kernel cannot be the oracle's host), pass again with `magnet record --all
//! --netns self` beside it, and magnet's ip and dev rows (in and out, units and
//! bytes, summed over TCP connections) must equal a tcpdump capture of the
//! namespace, `retrans_segs` the namespace's TcpRetransSegs. The whole suite:
//! `scripts/packetdrill.sh` (docs/packetdrill.md). About 60 s.

mod common;

use std::path::Path;
use std::process::Command;

use common::{tmp, MAGNET};
use magnet_testkit::{live_or_skip, Need};

/// The slice: what each one covers is in docs/packetdrill.md.
const CORE: &[&str] = &[
    "blocking/blocking-connect.pkt",
    "blocking/blocking-accept.pkt",
    "blocking/blocking-read.pkt",
    "eor/no-coalesce-retrans.pkt",
    "fast_retransmit/fr-4pkt-sack.pkt",
    "sack/sack-shift-sacked-2-6-8-3-9-nofack.pkt",
    "close/close-local-close-then-remote-fin.pkt",
    // A reset sent from IPv4's TCP control socket (not the connection's).
    "close/close-on-syn-sent.pkt",
];

#[test]
fn packetdrill_core_slice_passes_under_the_recorder_and_every_layer_equals_the_capture() {
    if !live_or_skip(
        "packetdrill_core_slice_passes_under_the_recorder_and_every_layer_equals_the_capture",
        &[
            Need::Btf,
            Need::Tool("tcpdump"),
            Need::Tool("nstat"),
            Need::Tool("python3"),
            Need::Tool("gcc"),
            Need::Tool("make"),
            Need::Tool("bison"),
            Need::Tool("flex"),
        ],
    ) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // packetdrill is built beside the magnet under test (target/packetdrill).
    let target = Path::new(MAGNET).parent().and_then(Path::parent).unwrap();
    let out = tmp("packetdrill");
    let run = Command::new(root.join("scripts/packetdrill.sh"))
        .arg("--out")
        .arg(&out)
        .arg("--keep")
        .args(CORE)
        .env("MAGNET", MAGNET)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("running scripts/packetdrill.sh");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    eprintln!("{stdout}{stderr}");
    let results = std::fs::read_to_string(out.join("results.tsv"))
        .unwrap_or_else(|e| panic!("no results.tsv from scripts/packetdrill.sh ({e}): {stderr}"));
    let rows: Vec<Vec<&str>> = results.lines().map(|l| l.split('\t').collect()).collect();
    // Both IP versions of every script ran: the slice cannot shrink unnoticed.
    assert_eq!(rows.len(), CORE.len() * 2, "runs: {results}");
    for r in &rows {
        assert_ne!(
            r[2], "fail",
            "{} ({}) fails without magnet on this kernel, so it proves nothing here: {}",
            r[0], r[1], r[3]
        );
        assert_eq!(
            r[2],
            "exact",
            "{} ({}) under magnet: {} (files kept under {} with MAGNET_KEEP_SCRATCH=1)",
            r[0],
            r[1],
            r.get(3).unwrap_or(&""),
            out.display()
        );
    }
    assert!(run.status.success(), "scripts/packetdrill.sh: {stderr}");
}
