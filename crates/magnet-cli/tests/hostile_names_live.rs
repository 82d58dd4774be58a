//! A process name set to escape sequences, recorded for real (root, BPF), is
//! escaped in every output another tool or a person reads: the pcapng's frame
//! comments as tshark prints them, and the HTML report. About 5 s.

mod common;

use std::path::Path;

use common::{magnet, tmp};
use magnet_testkit::{live_or_skip, tshark_fields, Need};

/// What the workload names itself (prctl PR_SET_NAME keeps 15 bytes): OSC
/// window title, BEL, colour, CR, newline.
const COMM: &[u8] = b"\x1b]0;x\x07\x1b[31m\r\nev";

/// Its name as every output writes it (`magnet_common::text::escape`).
const ESCAPED: &str = "\\x1b]0;x\\x07\\x1b[31m\\x0d\\x0aev";

/// Sets its own name, then sends 8 KiB to itself over loopback TCP.
fn workload() -> String {
    let name: String = COMM.iter().map(|b| format!("\\x{b:02x}")).collect();
    format!(
        "import ctypes, socket\n\
         ctypes.CDLL(None).prctl(15, b\"{name}\", 0, 0, 0)\n\
         s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(1)\n\
         c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n\
         c.sendall(b\"x\" * 8192); got = 0\n\
         while got < 8192: got += len(a.recv(65536))\n\
         c.close(); a.close(); s.close()\n"
    )
}

fn ok(args: &[&str]) {
    let o = magnet(args);
    assert!(
        o.status.success(),
        "magnet {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn controls(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(|&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t'))
        .collect()
}

#[test]
fn a_hostile_process_name_is_escaped_in_pcapng_comments_and_the_report() {
    if !live_or_skip(
        "a_hostile_process_name_is_escaped_in_pcapng_comments_and_the_report",
        &[Need::Btf, Need::Tool("tshark"), Need::Tool("python3")],
    ) {
        return;
    }
    let script = tmp("hostile.py");
    std::fs::write(&script, workload()).unwrap();
    let trace = tmp("hostile.mgt");
    let p = |p: &Path| p.to_str().unwrap().to_string();
    ok(&[
        "record",
        "-q",
        "-o",
        &p(&trace),
        "--",
        "python3",
        &p(&script),
    ]);

    // pcapng: every comment that names the process has it escaped, and no
    // comment carries a control character (tshark prints them as stored).
    let pcapng = tmp("hostile.pcapng");
    ok(&["pcap", "-q", &p(&trace), "-o", &p(&pcapng)]);
    let raw = std::fs::read(&pcapng).unwrap();
    assert!(
        !raw.windows(2)
            .any(|w| w == [0x1b, b']'] || w == [0x1b, b'[']),
        "an escape sequence is in the pcapng file raw"
    );
    let rows = tshark_fields(&pcapng, "", &["frame.comment"]).unwrap();
    let comments: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let named = comments
        .iter()
        .filter(|c| c.contains(&format!("comm={ESCAPED} ")))
        .count();
    assert!(named > 0, "no frame names the process: {comments:?}");
    for c in &comments {
        assert!(
            !c.chars().any(|ch| ch.is_control()),
            "control character in the comment {c:?}"
        );
    }

    // The report: no control byte but the page's own line ends and tabs, and
    // the name shown escaped.
    let html = tmp("hostile.html");
    ok(&["report", "-q", &p(&trace), "-o", &p(&html)]);
    let page = std::fs::read(&html).unwrap();
    assert_eq!(
        controls(&page),
        Vec::<u8>::new(),
        "raw control bytes in the report"
    );
    let text = String::from_utf8(page).unwrap();
    assert!(
        text.contains(ESCAPED),
        "the report does not show the name escaped"
    );
    eprintln!(
        "{} frames, {named} naming the process as comm={ESCAPED}; report {} bytes, no control bytes",
        comments.len(),
        text.len()
    );
}
