//! Google's packetdrill as an oracle (root, real BPF, tun devices): a core
//! slice of its TCP suite (third_party/packetdrill) — handshake both ways, data,
//! a retransmission, SACK recovery, close — each in IPv4 and IPv6, through
//! `scripts/packetdrill.sh`. Each script must pass without magnet (else this
//! kernel cannot be the oracle's host), pass again with `magnet record --all
//! --netns self` beside it, and magnet's ip and dev rows (in and out, units and
//! bytes, summed over TCP connections) must equal a tcpdump capture of the
//! namespace, `retrans_segs` the namespace's TcpRetransSegs. A second slice,
//! chosen for the system calls it makes, runs under strace in a recording of its
//! own, and magnet's app calls must equal strace's. The whole suite:
//! `scripts/packetdrill.sh` (docs/packetdrill.md). About 90 s.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

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

/// The strace slice: each script for the calls it makes (docs/packetdrill.md).
const CALLS: &[&str] = &[
    // read and write, blocking
    "blocking/blocking-read.pkt",
    "blocking/blocking-write.pkt",
    // sendfile into the socket, splice out of it and into it
    "sendfile/sendfile-simple.pkt",
    "splice/tcp_splice_loop_test.pkt",
    // calls that fail (EFAULT on a bad buffer, an empty iovec)
    "syscall_bad_arg/syscall-invalid-buf-ptr.pkt",
    "syscall_bad_arg/sendmsg-empty-iov.pkt",
    // sendmsg with MSG_ZEROCOPY and recvmsg of the error queue
    "zerocopy/basic.pkt",
    // sendto with data on a fast-open connect, and its errors
    "fastopen/client/blocking-sendto-errnos.pkt",
];

const NEEDS: &[Need] = &[
    Need::Btf,
    Need::Tool("tcpdump"),
    Need::Tool("nstat"),
    Need::Tool("python3"),
    Need::Tool("gcc"),
    Need::Tool("make"),
    Need::Tool("bison"),
    Need::Tool("flex"),
];

#[test]
fn packetdrill_app_calls_equal_strace() {
    let mut needs = NEEDS.to_vec();
    needs.push(Need::Tool("strace"));
    if live_or_skip("packetdrill_app_calls_equal_strace", &needs) {
        run_slice("packetdrill-strace", &["--strace"], CALLS);
    }
}

/// Runs `scripts/packetdrill.sh` with `args` over `slice` and checks that every
/// run passed without magnet and came out exact.
fn run_slice(name: &str, args: &[&str], slice: &[&str]) {
    // One slice at a time: the scripts' timing tolerances are a few ms.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // packetdrill is built beside the magnet under test (target/packetdrill).
    let target = Path::new(MAGNET).parent().and_then(Path::parent).unwrap();
    let out = tmp(name);
    let run = Command::new(root.join("scripts/packetdrill.sh"))
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg("--keep")
        .args(slice)
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
    assert_eq!(rows.len(), slice.len() * 2, "runs: {results}");
    // A run that is not exact: what the recorder said (its summary, by kind,
    // cost, anything skipped or lost), for a CI log that keeps no files.
    for r in rows.iter().filter(|r| r.len() > 2 && r[2] != "exact") {
        let dir = out
            .join(r[0].trim_end_matches(".pkt"))
            .join(r[1])
            .join("record.err");
        if let Ok(said) = std::fs::read_to_string(&dir) {
            eprintln!("{} ({}): {}\n{said}", r[0], r[1], dir.display());
        }
    }
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

#[test]
fn packetdrill_core_slice_passes_under_the_recorder_and_every_layer_equals_the_capture() {
    if live_or_skip(
        "packetdrill_core_slice_passes_under_the_recorder_and_every_layer_equals_the_capture",
        NEEDS,
    ) {
        run_slice("packetdrill", &[], CORE);
    }
}
