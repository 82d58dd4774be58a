//! `magnet rpc` and `magnet nfs` on the real binary, over real captures kept with
//! magnet-rpc's tests (nfs-ganesha server, libnfs client). No privileges needed.

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../magnet-rpc/tests/data")
        .join(name)
}

fn magnet(args: &[&str]) -> (String, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_magnet"))
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

#[test]
fn rpcspy_lines_one_per_transaction() {
    let f = fixture("ganesha-v3-tcp.pcap");
    let (out, err, ok) = magnet(&["rpc", "-r", f.to_str().unwrap()]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 45);
    assert!(err.contains("45 transactions"), "{err}");
    // timestamp | exec | server | client.uid | command | args | reply
    let read: Vec<&str> = lines
        .iter()
        .find(|l| l.contains("| read |"))
        .unwrap()
        .split(" | ")
        .collect();
    assert_eq!(read.len(), 7, "{read:?}");
    assert!(read[3].ends_with(".0"), "client.uid: {}", read[3]);
    assert!(read[5].ends_with(", 0, 4000}"), "{}", read[5]);
    assert_eq!(read[6], "ok, 4000");
    let (concise, _, _) = magnet(&["rpc", "--concise", "-q", "-r", f.to_str().unwrap()]);
    assert!(concise.lines().all(|l| l.split(" | ").count() == 5));
}

#[test]
fn json_lines_and_pcap_filter() {
    let f = fixture("ganesha-v4-tcp.pcap");
    let (out, _, ok) = magnet(&["rpc", "--json", "-q", "-r", f.to_str().unwrap()]);
    assert!(ok);
    let v: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len(), 30);
    let w = v
        .iter()
        .find(|j| j["command"] == "compound" && out.contains("\"write\""))
        .unwrap();
    for k in [
        "xid",
        "prog",
        "vers",
        "proc",
        "client",
        "server",
        "call_ts_ns",
        "reply_ts_ns",
        "exec_us",
        "args",
        "res",
        "cred",
    ] {
        assert!(w.get(k).is_some(), "field {k} missing in {w}");
    }
    // A filter that matches nothing leaves nothing; one that matches all keeps all.
    let (none, _, _) = magnet(&["rpc", "-q", "-r", f.to_str().unwrap(), "udp"]);
    assert_eq!(none.lines().count(), 0);
    let (all, _, _) = magnet(&[
        "rpc",
        "-q",
        "-r",
        f.to_str().unwrap(),
        "tcp",
        "port",
        "2049",
    ]);
    assert_eq!(all.lines().count(), 30);
    let (some, _, _) = magnet(&["rpc", "-q", "--count", "10", "-r", f.to_str().unwrap()]);
    assert!(some.lines().count() < 30);
}

#[test]
fn nfs_sessions_and_stats_count_bytes_exactly() {
    let f = fixture("ganesha-v3-tcp.pcap");
    let (out, err, ok) = magnet(&["nfs", "--stats", "--json", "-r", f.to_str().unwrap()]);
    assert!(ok, "{err}");
    let st: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let files = st["files"].as_array().unwrap();
    let get = |suffix: &str| {
        files
            .iter()
            .find(|u| u["name"].as_str().unwrap().ends_with(suffix))
            .unwrap()
    };
    assert_eq!(
        (
            get("/d/f1")["read_bytes"].as_u64(),
            get("/d/f1")["write_bytes"].as_u64()
        ),
        (Some(9000), Some(9000))
    );
    assert_eq!(
        (
            get("/d/f3")["read_bytes"].as_u64(),
            get("/d/f3")["write_bytes"].as_u64()
        ),
        (Some(2000), Some(2000))
    );
    assert!(st["ops"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["op"] == "write" && o["count"] == 4));
    let (text, _, _) = magnet(&["nfs", "-q", "-r", f.to_str().unwrap()]);
    assert!(
        text.lines()
            .any(|l| l.contains("/d/f1 read 3 9000 1 write 3 9000 1 remove")),
        "{text}"
    );
}

#[test]
fn help_teaches_and_bad_input_is_reported() {
    let (out, _, ok) = magnet(&["rpc", "--help"]);
    assert!(ok);
    assert!(out.contains("Examples:") && out.contains("magnet rpc -i eth0 'port 2049'"));
    let (out, _, _) = magnet(&["nfs", "--help"]);
    assert!(out.contains("idle") && out.contains("--stats"));
    let dir = magnet_testkit::scratch_dir("magnet-test").to_path_buf();
    let bad = dir.join("bad.pcap");
    std::fs::write(&bad, b"definitely not a capture").unwrap();
    let (_, err, ok) = magnet(&["rpc", "-r", bad.to_str().unwrap()]);
    assert!(!ok && err.contains("not a pcap or pcapng file"), "{err}");
    // Cut short: what came before is printed, the cut is reported, exit status 1.
    let bytes = std::fs::read(fixture("ganesha-v3-tcp.pcap")).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let (out, err, ok) = magnet(&["rpc", "-r", cut.to_str().unwrap()]);
    assert!(!ok && err.contains("cut short"), "{err}");
    assert!(out.lines().count() > 10);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 12-byte Simple Packet Block (magnet-pcap's fixture, both byte orders) once made
/// rpc, nfs and nfs --stats panic, from a file or from standard input. Now: the packet
/// before it is decoded, the bad block is named by its offset, exit status 1.
#[test]
fn crafted_simple_packet_block_is_reported_not_a_panic() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../magnet-pcap/tests/data");
    for o in ["le", "be"] {
        let f = data.join(format!("spb-12-{o}.pcapng"));
        let fs = f.to_str().unwrap();
        for cmd in [&["rpc"][..], &["nfs"], &["nfs", "--stats"]] {
            for stdin in [false, true] {
                let mut c = Command::new(env!("CARGO_BIN_EXE_magnet"));
                c.args(cmd);
                if stdin {
                    c.args(["-r", "-"]).stdin(std::fs::File::open(&f).unwrap());
                } else {
                    c.args(["-r", fs]);
                }
                let out = c.output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(1), "{cmd:?} stdin={stdin}: {err}");
                assert!(
                    err.contains("offset 116, packet 1: simple packet block too short"),
                    "{cmd:?} stdin={stdin}: {err}"
                );
            }
        }
    }
}
