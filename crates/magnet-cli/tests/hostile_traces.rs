//! Traces that are damaged or carry hostile names, as every reader
//! sees them (no root needed).
//!
//! - Names: a process may name itself `ESC ] 0 ; pwned BEL ESC [ 31 m`
//!   (`prctl(PR_SET_NAME)`), and the recording host's name, its interfaces'
//!   names and the catalog come from the trace too: no raw ESC or BEL reaches
//!   the terminal from `info`, `parse`, `analyze`, `packets` or `pcap`.
//! - Damage: a trace with a damaged block and a dropped one is read as
//!   far as it goes by every reader, which then exits 1 (docs/exit-codes.md),
//!   with the damage and what it cost on standard error.

use std::path::PathBuf;

use magnet_trace::emit::{synthetic_header, Emitter};
use magnet_trace::{kind, Footer, Interface, TraceWriter};

mod common;
use common::{magnet, tmp};

const T0: u64 = 5_000_000_000;
const HOSTILE: &str = "\x1b]0;pwned\x07\x1b[31m";

/// Three blocks: a socket, its sends from a hostile-named process, device
/// events on a hostile-named interface. Returns the trace and where each
/// block starts.
fn trace() -> (Vec<u8>, Vec<usize>) {
    let e = Emitter::builtin();
    let mut header = synthetic_header(T0);
    header.host = HOSTILE.into();
    header.interfaces = vec![Interface {
        netns: 1,
        ifindex: 3,
        name: HOSTILE.into(),
        later: false,
    }];
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    let mut recorded = std::collections::BTreeMap::<String, u64>::new();
    let mut starts = Vec::new();
    let mut n = 0u64;
    for b in 0..3u64 {
        starts.push(w.bytes_written() as usize);
        for i in 0..10u64 {
            let ts = T0 + (b * 10 + i + 1) * 1_000_000;
            let r = match (b, i) {
                (0, 0) => e
                    .record(kind::SOCK, ts)
                    .set("cookie", 9)
                    .set("protocol", 6)
                    .set("sport", 80),
                (0 | 1, _) => e
                    .record(kind::APP_SEND, ts)
                    .pid(77)
                    .tid(77)
                    .set("cookie", 9)
                    .set("asked", 100)
                    .set("ret", 100)
                    .set("protocol", 6)
                    .comm("comm", HOSTILE),
                _ => e
                    .record(kind::DEV_START_XMIT, ts)
                    .set("pkt_id", i + 1)
                    .set("ifindex", 3)
                    .set("len", 100)
                    .set("ethertype", 0x800),
            };
            let name = e.catalog().get(r.kind()).unwrap().name.clone();
            *recorded.entry(name).or_default() += 1;
            w.push(&r.into_bytes()).unwrap();
            n += 1;
        }
        w.flush_block().unwrap();
    }
    let footer = Footer {
        records: n,
        generated: recorded.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        recorded,
        end_mono_ns: T0 + 100_000_000,
        end_reason: HOSTILE.into(),
        ..Footer::default()
    };
    (w.finish(&footer).unwrap(), starts)
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The text commands, each with what it must print.
fn readers(t: &str, out: &str) -> Vec<Vec<String>> {
    let pcap = format!("{out}.pcapng");
    let report = format!("{out}.html");
    [
        &["info", t][..],
        &["parse", t],
        &["analyze", t, "--all"],
        &["packets", t],
        &["pcap", t, "-o", &pcap],
        &["report", t, "-o", &report],
        &["export", t, "-f", "csv", "-o", "-"],
    ]
    .iter()
    .map(|a| a.iter().map(|s| s.to_string()).collect())
    .collect()
}

#[test]
fn hostile_names_are_escaped_in_every_text_output() {
    let (bytes, _) = trace();
    let t = write("hostile.mgt", &bytes);
    let t = t.to_str().unwrap();
    for args in readers(t, &tmp("hostile-out").display().to_string()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if args[0] == "export" {
            continue; // a data format (CSV), like JSON: names as they are
        }
        let out = magnet(&args);
        let (o, e) = (&out.stdout, &out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(e)
        );
        for (what, bytes) in [("stdout", o), ("stderr", e)] {
            assert!(
                !bytes.iter().any(|&b| b == 0x1b || b == 0x07),
                "{args:?}: raw ESC/BEL on {what}: {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    // The names are there, escaped.
    let parse = String::from_utf8(magnet(&["parse", t]).stdout).unwrap();
    assert!(
        parse.contains("comm=\\x1b]0;pwned\\x07\\x1b[31m"),
        "{parse}"
    );
    assert!(parse.contains("host=\\x1b]0;pwned"), "{parse}");
    let info = String::from_utf8(magnet(&["info", t]).stdout).unwrap();
    assert!(
        info.contains("ended     \\x1b]0;pwned\\x07\\x1b[31m"),
        "{info}"
    );
    // JSON keeps the name as it is, escaped by JSON's rules.
    let json =
        String::from_utf8(magnet(&["parse", t, "--json", "--kind", "app_send"]).stdout).unwrap();
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["comm"], HOSTILE);
}

#[test]
fn damaged_traces_are_read_as_far_as_they_go_and_exit_1() {
    let (bytes, starts) = trace();
    // Block 1's payload flipped; block 2 (the device events) dropped.
    let mut d = bytes.clone();
    d[starts[1] + 40] ^= 0x10;
    let tail_from = {
        let len = u32::from_le_bytes(d[starts[2] + 4..starts[2] + 8].try_into().unwrap()) as usize;
        starts[2] + 16 + len
    };
    d.drain(starts[2]..tail_from);
    let t = write("damaged.mgt", &d);
    let t = t.to_str().unwrap();
    for args in readers(t, &tmp("damaged-out").display().to_string()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = magnet(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        // The reports that print damage on stderr name it there; info lists
        // it in its own output.
        let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
        assert!(all.contains("checksum mismatch"), "{args:?}: {all}");
        assert!(
            all.contains(
                "dev_start_xmit: 0 records read, the END block counts 10 written (10 missing)"
            ),
            "{args:?}: {all}"
        );
    }
    // What was readable was printed: block 0 (the socket and 9 sends).
    let parse = String::from_utf8(magnet(&["parse", t]).stdout).unwrap();
    assert_eq!(parse.lines().filter(|l| !l.starts_with('#')).count(), 10);
    let info = String::from_utf8(magnet(&["info", t]).stdout).unwrap();
    assert!(info.contains("records   10"), "{info}");
}

/// The damage message: a flipped bit in the END block itself leaves no END
/// block to read, and `info` says the trace is damaged, not that the recorder
/// was killed (the wording a missing END block had before).
#[test]
fn a_damaged_end_block_is_damage_not_a_killed_recorder() {
    let (mut d, starts) = trace();
    let end = {
        let len = u32::from_le_bytes(d[starts[2] + 4..starts[2] + 8].try_into().unwrap()) as usize;
        starts[2] + 16 + len
    };
    assert!(end + 20 < d.len(), "the END block follows block 2");
    d[end + 20] ^= 0x01;
    let t = write("end-damaged.mgt", &d);
    let out = magnet(&["info", t.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("NOT CLEANLY: no END block was read (the trace is damaged, below)"),
        "{text}"
    );
    assert!(!text.contains("recorder killed"), "{text}");
    assert!(text.contains("damage    "), "{text}");
    // Every record before the END block is still read.
    assert!(text.contains("records   30"), "{text}");
}

/// A flipped bit in the header (the kernel release `6.18` read as `6.19`)
/// costs no record in any reader: each reads all 30, says in one line
/// naming the file what was damaged and that the END block's copy restored
/// it, and exits 1. Byte 8 (the format version) set from 2 to 1 is named the
/// same way.
#[test]
fn a_damaged_header_costs_no_record_in_any_reader() {
    let (bytes, _) = trace();
    let kernel = bytes
        .windows(13)
        .position(|w| w == b"\"kernel\":\"6.1")
        .unwrap()
        + 13;
    assert_eq!(bytes[kernel], b'8');
    let mut flipped = bytes.clone();
    flipped[kernel] ^= 0x01;
    let mut version = bytes.clone();
    assert_eq!(version[8], 2);
    version[8] = 1;
    for (name, d, line) in [
        (
            "header-flip.mgt",
            &flipped,
            "header at byte 20: checksum mismatch; restored from its copy in the END block",
        ),
        (
            "header-version.mgt",
            &version,
            "header at byte 8: its format version says 1, the header 2; read as 2",
        ),
    ] {
        let t = write(name, d);
        let t = t.to_str().unwrap();
        for args in readers(t, &tmp(&format!("{name}-out")).display().to_string()) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = magnet(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
            assert_eq!(all.matches(line).count(), 1, "{args:?}: {all}");
            if args[0] != "info" {
                assert!(err.contains(&format!("{t}: {line}")), "{args:?}: {err}");
            }
        }
        let parse = String::from_utf8(magnet(&["parse", t]).stdout).unwrap();
        assert_eq!(parse.lines().filter(|l| !l.starts_with('#')).count(), 30);
        let info = String::from_utf8(magnet(&["info", t]).stdout).unwrap();
        assert!(info.contains("records   30"), "{info}");
        assert!(info.contains("6.18"), "{info}");
    }
}
