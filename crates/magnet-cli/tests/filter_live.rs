//! `magnet record -f EXPR` (and `magnet record 'EXPR' -- CMD`): a pcap-filter
//! expression evaluated in the kernel. A mixed loopback workload in a namespace of
//! the test's own (UDP to 5353 and 5354, TCP to 5355), tcpdump with the same
//! expression beside it, and IPv6/payload/length expressions on ::1. Root and real
//! BPF; about 11 s. A bad expression needs
//! neither.

mod common;

use std::collections::{BTreeMap, HashSet};

use common::{magnet, tmp, MAGNET};
use magnet_testkit::{live_or_skip, Capture, Need, Netns};

/// 30 datagrams of 100 B to 5353, 20 of 200 B to 5354, 10 TCP sends of 1000 B to 5355.
fn workload() -> String {
    format!(
        "{MAGNET} loadgen --udp 30x100 --port 5353 && \
         {MAGNET} loadgen --udp 20x200 --port 5354 && \
         {MAGNET} loadgen --tcp 10x1000 --port 5355"
    )
}

/// Records the workload in `ns` with `filter` (the arguments that give it) next to
/// tcpdump on `lo` with `expr`; returns the trace's events as JSON and tcpdump's count.
fn record(ns: &Netns, filter: &[&str], expr: &str, name: &str) -> (Vec<serde_json::Value>, u64) {
    let trace = tmp(name);
    let words: Vec<&str> = expr.split(' ').collect();
    let cap = Capture::start(Some(ns), "lo", &words).unwrap();
    let script = workload();
    let mut args = vec!["record", "-q", "-o", trace.to_str().unwrap()];
    args.extend_from_slice(filter);
    args.extend_from_slice(&["--", "sh", "-c", &script]);
    let out = ns.command(MAGNET).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pcap = cap.stop().unwrap();
    let parsed = magnet(&["parse", "--json", trace.to_str().unwrap()]);
    assert!(parsed.status.success());
    let events = String::from_utf8_lossy(&parsed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let _ = std::fs::remove_file(&trace);
    (events, pcap.captured.expect("tcpdump's count"))
}

fn count(events: &[serde_json::Value]) -> BTreeMap<String, u64> {
    let mut c = BTreeMap::new();
    for e in events {
        *c.entry(e["kind"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    c
}

/// Every packet event of the trace belongs to a packet of `port` over UDP: its IP
/// records say so, and its device records carry the ids of those packets.
fn only_port(events: &[serde_json::Value], port: u64) {
    let ip: Vec<_> = events.iter().filter(|e| e["layer"] == "ip").collect();
    for e in &ip {
        assert_eq!(e["protocol"], 17, "{e}");
        assert!(e["sport"] == port || e["dport"] == port, "{e}");
    }
    let ids: HashSet<&str> = ip.iter().map(|e| e["pkt_id"].as_str().unwrap()).collect();
    for e in events.iter().filter(|e| e["layer"] == "dev") {
        assert!(ids.contains(e["pkt_id"].as_str().unwrap()), "{e}");
    }
}

#[test]
fn filter_keeps_exactly_the_matching_packets() {
    if !live_or_skip(
        "filter_keeps_exactly_the_matching_packets",
        &[Need::Btf, Need::Tool("tcpdump")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();

    // -f: the 30 datagrams to 5353, once at each packet hook (loopback: one
    // transmit and one receive per packet), as many as tcpdump keeps.
    let (ev, tcpdump) = record(&ns, &["-f", "udp port 5353"], "udp port 5353", "f5353.mgt");
    let c = count(&ev);
    eprintln!("udp port 5353: {c:?}, tcpdump {tcpdump}");
    assert_eq!(tcpdump, 30);
    for k in ["ip_local_out", "ip_local_in", "dev_start_xmit", "dev_rx"] {
        assert_eq!(c.get(k), Some(&tcpdump), "{k}: {c:?}");
    }
    only_port(&ev, 5353);
    // Socket events are not the filter's: every send of the workload is there
    // (30 + 20 UDP, 10 TCP).
    assert_eq!(c.get("app_send"), Some(&60), "{c:?}");

    // The expression as tcpdump takes it, before `--`.
    let (ev, tcpdump) = record(
        &ns,
        &["udp", "and", "port", "5354"],
        "udp and port 5354",
        "p5354.mgt",
    );
    let c = count(&ev);
    eprintln!("udp and port 5354: {c:?}, tcpdump {tcpdump}");
    assert_eq!(tcpdump, 20);
    for k in ["ip_local_out", "ip_local_in", "dev_start_xmit", "dev_rx"] {
        assert_eq!(c.get(k), Some(&tcpdump), "{k}: {c:?}");
    }
    only_port(&ev, 5354);

    // A filter on the TCP connection: tcpdump's count (handshake, data, ACKs, close)
    // at each hook; no UDP packet.
    let (ev, tcpdump) = record(&ns, &["-f", "tcp port 5355"], "tcp port 5355", "t5355.mgt");
    let c = count(&ev);
    eprintln!("tcp port 5355: {c:?}, tcpdump {tcpdump}");
    assert!(tcpdump >= 7, "{tcpdump}");
    for k in ["ip_local_out", "ip_local_in", "dev_start_xmit", "dev_rx"] {
        assert_eq!(c.get(k), Some(&tcpdump), "{k}: {c:?}");
    }
    assert!(ev
        .iter()
        .filter(|e| e["layer"] == "ip")
        .all(|e| e["protocol"] == 6));
}

/// A bad expression: tcpdump's message, exit 2, no trace written. Needs no root.
#[test]
fn bad_filter_expression_is_refused_like_tcpdump() {
    let trace = tmp("bad-filter.mgt");
    let _ = std::fs::remove_file(&trace);
    for args in [vec!["-f", "udp prt 5353"], vec!["udp", "prt", "5353"]] {
        let mut a = vec!["record", "-o", trace.to_str().unwrap()];
        a.extend_from_slice(&args);
        a.extend_from_slice(&["--", "true"]);
        let out = magnet(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(
            err.trim(),
            "magnet: error: can't parse filter expression: syntax error"
        );
        assert!(!trace.exists(), "no trace is written");
    }
    // tcpdump says the same about it.
    if let Ok(out) = std::process::Command::new("tcpdump")
        .args(["-d", "udp prt 5353"])
        .output()
    {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("can't parse filter expression: syntax error"),
            "{err}"
        );
    }
}

/// The interpreter on IPv6 headers, payload bytes and lengths: loopback datagrams
/// (10 IPv6 of 100 B "x" to port P, 5 IPv6 "y" to P+1, 7 IPv4 "z" to P; both
/// families received), one expression at a time; the packets each keeps at
/// LOCAL_OUT are the ones it names. About 7 s.
#[test]
fn filter_reads_ipv6_payload_and_length() {
    if !live_or_skip(
        "filter_reads_ipv6_payload_and_length",
        &[Need::Btf, Need::Tool("python3")],
    ) {
        return;
    }
    if !std::path::Path::new("/proc/sys/net/ipv6").exists() {
        eprintln!("filter_reads_ipv6_payload_and_length: skipped: no IPv6");
        return;
    }
    let p = 30_000 + (std::process::id() % 20_000) as u16;
    let q = p + 1;
    let script = format!(
        "import socket\n\
         r=[socket.socket(f,socket.SOCK_DGRAM) for f in (socket.AF_INET6,socket.AF_INET6,socket.AF_INET)]\n\
         r[0].bind(('::1',{p})); r[1].bind(('::1',{q})); r[2].bind(('127.0.0.1',{p}))\n\
         s6=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM); s4=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
         [s6.sendto(b'x'*100,('::1',{p})) for _ in range(10)]\n\
         [s6.sendto(b'y'*100,('::1',{q})) for _ in range(5)]\n\
         [s4.sendto(b'z'*100,('127.0.0.1',{p})) for _ in range(7)]\n\
         n=[len([x.recv(200) for _ in range(c)]) for x,c in zip(r,(10,5,7))]\n"
    );
    let trace = tmp("v6.mgt");
    for (expr, want) in [
        (format!("ip6 and udp port {p}"), 10),
        (format!("udp port {p}"), 17),
        (format!("udp[8:4] = 0x7a7a7a7a and udp port {p}"), 7),
        (format!("ip6[48] = 0x79 and udp port {q}"), 5),
        (format!("len = 148 and udp portrange {p}-{q}"), 15),
        (format!("len = 128 and udp portrange {p}-{q}"), 7),
    ] {
        let out = magnet(&[
            "record",
            "-q",
            "-o",
            trace.to_str().unwrap(),
            "-f",
            &expr,
            "--",
            "python3",
            "-c",
            &script,
        ]);
        assert!(
            out.status.success(),
            "{expr}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let parsed = magnet(&[
            "parse",
            "--json",
            "--kind",
            "ip_local_out",
            trace.to_str().unwrap(),
        ]);
        let n = String::from_utf8_lossy(&parsed.stdout).lines().count();
        assert_eq!(n, want, "{expr}: {n} packets at LOCAL_OUT, want {want}");
    }
    let _ = std::fs::remove_file(&trace);
}
