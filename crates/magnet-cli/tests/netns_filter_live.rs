//! `record --netns`: one network namespace's events only.
//!
//! Two namespaces A and B joined by a veth pair; iperf3's server runs in B,
//! started before the recorder; its client in A sends 2 MB. `--all --netns
//! B` is recorded from A, from B (`self`) and from the root namespace, with
//! B named each way a user names it (a name from `ip netns list`, the
//! server's /proc/PID/ns/net, the inode number, `self`), offloads on and
//! off. Oracles: tcpdump on B's veth end, each direction captured apart,
//! and the namespaces' inode numbers.
//!
//! - every SOCK record is of a socket in B, and the server's data socket is
//!   among them;
//! - B's end of the veth: dev_rx records = frames tcpdump saw come in,
//!   dev_start_xmit records = frames it saw go out (without the filter, A's
//!   end, whose ifindex may be the same number, would add its frames);
//! - no ip record is A's: received ones are addressed to B, sent ones come
//!   from B, and there are some of each (LOCAL_IN/LOCAL_OUT run in B);
//! - every tcp and app record carries the cookie of one of B's sockets.
//!
//! And the refusals: a path that is no namespace, a name that does not
//! exist, an inode no process holds, each one line naming what was wrong.

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use magnet_testkit::{live_or_skip, Capture, Need, Netns, Recorder, Veth};
use serde_json::Value;

mod common;
use common::{parse_kinds, tmp, MAGNET};

/// Where the recorder runs.
#[derive(Clone, Copy, Debug)]
enum At {
    A,
    B,
    Root,
}

/// How `--netns` names B.
#[derive(Clone, Copy, Debug)]
enum Spec {
    /// its name under /run/netns
    Name,
    /// /proc/PID/ns/net of the iperf3 server
    ProcPath,
    /// its inode number
    Inode,
    /// `self` (only from B)
    OwnNs,
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

fn netns_case(at: At, spec: Spec, offloads: bool, port: u16) {
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    if !offloads {
        veth.a().offloads_off().unwrap();
        veth.b().offloads_off().unwrap();
    }
    let (a_addr, b_addr) = (veth.a().addr().to_string(), veth.b().addr().to_string());
    let mut server = b
        .command("iperf3")
        .args(["-s", "-1", "-p", &port.to_string(), "-B", &b_addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3");
    std::thread::sleep(Duration::from_millis(300));
    let cap_in = Capture::start(Some(&b), veth.b().name(), &["-Q", "in"]).unwrap();
    let cap_out = Capture::start(Some(&b), veth.b().name(), &["-Q", "out"]).unwrap();
    let arg = match spec {
        Spec::Name => b.name().to_string(),
        Spec::ProcPath => format!("/proc/{}/ns/net", server.id()),
        Spec::Inode => b.inode().to_string(),
        Spec::OwnNs => "self".to_string(),
    };
    let path = tmp(&format!("netns-{port}.mgt"));
    let args = ["--all".to_string(), "--netns".to_string(), arg];
    let rec = match at {
        At::A => Recorder::record(MAGNET, Some(&a), &path, &args),
        At::B => Recorder::record(MAGNET, Some(&b), &path, &args),
        At::Root => Recorder::record(MAGNET, None, &path, &args),
    };
    let client = a
        .command("iperf3")
        .args(["-c", &b_addr, "-p", &port.to_string(), "-n", "2M"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(client.success(), "iperf3 client failed");
    let _ = server.wait();
    std::thread::sleep(Duration::from_millis(200));
    let ended = rec.stop();
    assert!(
        !ended.stderr.contains("refused"),
        "a program was refused: {}",
        ended.stderr
    );
    assert!(
        ended.stderr.contains("only (--netns)"),
        "the ip layer says where its hooks are: {}",
        ended.stderr
    );
    let trace = ended.trace.expect("trace");
    let (pin, pout) = (cap_in.stop().unwrap(), cap_out.stop().unwrap());
    let case = format!("{at:?} {spec:?} offloads {offloads}");

    let b_ino = b.inode();
    let socks = parse_kinds(&trace, "sock");
    let others: Vec<u64> = socks
        .iter()
        .map(|s| u(s, "netns"))
        .filter(|&n| n != b_ino)
        .collect();
    assert!(
        others.is_empty(),
        "{case}: SOCK records of other namespaces {others:?} (B is {b_ino})"
    );
    let cookies: HashSet<u64> = socks.iter().map(|s| u(s, "cookie")).collect();
    assert!(
        socks
            .iter()
            .any(|s| u(s, "sport") == port as u64 && u(s, "dport") != 0),
        "{case}: the server's data socket is announced: {socks:?}"
    );

    let ifindex = veth.b().ifindex() as u64;
    let count = |kind: &str| {
        parse_kinds(&trace, kind)
            .iter()
            .filter(|e| u(e, "ifindex") == ifindex)
            .count() as u64
    };
    let (rx, tx) = (count("dev_rx"), count("dev_start_xmit"));
    let (want_rx, want_tx) = (frame_count(&pin), frame_count(&pout));
    assert!(want_rx > 40, "{case}: tcpdump saw {want_rx} frames come in");
    assert_eq!(
        (rx, tx),
        (want_rx, want_tx),
        "{case}: dev_rx / dev_start_xmit on B's end against tcpdump in / out"
    );

    let ips = parse_kinds(&trace, "ip_local_in,ip_local_out");
    let wrong: Vec<&Value> = ips
        .iter()
        .filter(|e| {
            let (s, d) = (e["saddr"].as_str(), e["daddr"].as_str());
            if e["kind"] == "ip_local_in" {
                d == Some(&a_addr)
            } else {
                s == Some(&a_addr)
            }
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{case}: {} ip records are A's, e.g. {:?}",
        wrong.len(),
        wrong.first()
    );
    for kind in ["ip_local_in", "ip_local_out"] {
        assert!(
            ips.iter().any(|e| e["kind"] == kind),
            "{case}: no {kind} record in B"
        );
    }

    let foreign: Vec<u64> = parse_kinds(&trace, "tcp_rcv,tcp_sendmsg,tcp_state,app_send,app_recv")
        .iter()
        .map(|e| u(e, "cookie"))
        .filter(|c| !cookies.contains(c))
        .collect();
    assert!(
        foreign.is_empty(),
        "{case}: tcp/app records of sockets outside B: {:?}",
        &foreign[..foreign.len().min(5)]
    );
    let _ = std::fs::remove_file(&trace);
}

/// Frames in a capture.
fn frame_count(pcap: &Path) -> u64 {
    let out = std::process::Command::new("tcpdump")
        .args(["-n", "-r"])
        .arg(pcap)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count() as u64
}

fn live(name: &str) -> bool {
    live_or_skip(
        name,
        &[Need::Btf, Need::Tool("tcpdump"), Need::Tool("iperf3")],
    )
}

/// Each place the recorder runs, with each way of naming B that works from
/// there, offloads on and off in turn.
#[test]
fn netns_keeps_one_namespaces_events_wherever_the_recorder_runs() {
    if !live("netns_keeps_one_namespaces_events_wherever_the_recorder_runs") {
        return;
    }
    let cases = [
        (At::A, Spec::Name),
        (At::A, Spec::Inode),
        (At::Root, Spec::ProcPath),
        (At::B, Spec::OwnNs),
    ];
    for (i, (at, spec)) in cases.into_iter().enumerate() {
        netns_case(at, spec, i % 2 == 0, 27400 + i as u16);
    }
}

#[test]
fn netns_that_names_no_namespace_is_refused_in_one_line() {
    let missing = format!("magnet-no-such-ns-{}", std::process::id());
    for (arg, says) in [
        ("/etc/hostname", "is not a network namespace"),
        (missing.as_str(), "no network namespace of that name"),
        ("123", "no process holds network namespace net:[123]"),
        ("/nonexistent/ns", "No such file or directory"),
    ] {
        let out = std::process::Command::new(MAGNET)
            .args(["record", "--all", "-d", "1s", "-o"])
            .arg(tmp("netns-refused.mgt"))
            .args(["--netns", arg])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--netns {arg}: {err}");
        assert!(err.contains(says), "--netns {arg}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "--netns {arg}: {err}");
    }
}
