//! The receive side, attributed in the kernel: fragments and received packets go to
//! their socket, whichever namespace the recorder runs in.
//!
//! - Fragments: UDP datagrams of 4,000 bytes over a 1,500-byte veth (3 IP
//!   fragments each), IPv4 and IPv6, offloads on and off, recorded with `-p`
//!   of the sender or of the receiver (both started before the recorder),
//!   the recorder in either namespace. Oracle: tcpdump on the receiver's veth
//!   end. Every fragment the receiver's end took in is a dev_rx record
//!   (the first fragment's socket vouches for the rest of its datagram
//!   whatever the filter); traced receiver: each carries the receiver
//!   socket's cookie; IPv6 passes LOCAL_IN fragment by fragment, so with the
//!   recorder in the receiver's namespace ip_local_in holds every fragment
//!   (IPv4: every reassembled datagram).
//! - Namespaces: one TCP 5-tuple (127.0.0.1:P <-> 127.0.0.1:Q) in two
//!   namespaces at once, recorded with `--all`. Each received packet
//!   (dev_rx, ip_local_in) carries the cookie of the socket of its own
//!   namespace: the one whose peer sent it (joined on the packet id with the
//!   sender's dev_start_xmit, whose cookie is the skb's own socket).
//! - A UDP server that connects to its first client (iperf3 -s), recorded
//!   from the client's namespace: its row names the client's end and holds
//!   every frame tcpdump saw reach it (the connect announces it again).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use magnet_testkit::{live_or_skip, run_in_netns, Capture, Need, Netns, Recorder, Veth};
use serde_json::Value;

mod common;
use common::{enable_v6, magnet_ok, parse_kinds, tmp, MAGNET};

/// `magnet record -o PATH ARGS…` in `ns`, returned once it records.
fn record(ns: &Netns, path: PathBuf, args: &[String]) -> Recorder {
    Recorder::record(MAGNET, Some(ns), &path, args)
}

/// Stops a recording; panics unless it ended well with every program loaded.
fn stop(rec: Recorder) -> PathBuf {
    let ended = rec.stop();
    assert!(
        !ended.stderr.contains("refused"),
        "a program was refused by the verifier: {}",
        ended.stderr
    );
    ended.trace.expect("the recording's trace")
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// Frames of a capture that match a tcpdump filter expression.
fn frames(pcap: &Path, filter: &str) -> u64 {
    let out = Command::new("tcpdump")
        .args(["-n", "-r"])
        .arg(pcap)
        .arg(filter)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count() as u64
}

const DATAGRAMS: u64 = 100;
const SIZE: usize = 4000;

#[derive(Clone, Copy, Debug)]
struct FragCase {
    v6: bool,
    offloads: bool,
    /// -p of the sender (else of the receiver)
    trace_sender: bool,
    /// the recorder runs in the receiver's namespace (else in the sender's)
    in_receiver: bool,
}

fn frag_case(c: FragCase, port: u16) {
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    if !c.offloads {
        veth.a().offloads_off().unwrap();
        veth.b().offloads_off().unwrap();
    }
    let dst = if c.v6 {
        enable_v6(&a, veth.a().name(), "fd21:7::1/64");
        enable_v6(&b, veth.b().name(), "fd21:7::2/64");
        "fd21:7::2".to_string()
    } else {
        veth.b().addr().to_string()
    };
    let cap = Capture::start(Some(&b), veth.b().name(), &[]).unwrap();
    // Both programs exist before the recorder: the receiver is bound and
    // waiting, the sender's socket is made when it starts sending.
    let mut rx = b
        .command("python3")
        .args([
            "-c",
            &format!(
                "import socket,sys\n\
                 s=socket.socket(socket.AF_INET6 if ':' in '{dst}' else socket.AF_INET, socket.SOCK_DGRAM)\n\
                 s.bind(('{dst}',{port})); s.settimeout(10); n=b=0\n\
                 try:\n  while n<{DATAGRAMS}:\n    d=s.recv(65536); n+=1; b+=len(d)\n\
                 except socket.timeout: pass\nprint(n,b)\n"
            ),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut tx = a
        .command("python3")
        .args([
            "-c",
            &format!(
                "import socket,sys,time\n\
                 sys.stdin.read(1)\n\
                 s=socket.socket(socket.AF_INET6 if ':' in '{dst}' else socket.AF_INET, socket.SOCK_DGRAM)\n\
                 for i in range({DATAGRAMS}):\n  s.sendto(bytes([i%256])*{SIZE},('{dst}',{port})); time.sleep(0.002)\n"
            ),
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = if c.trace_sender { tx.id() } else { rx.id() };
    let rec = record(
        if c.in_receiver { &b } else { &a },
        tmp(&format!("frag-{port}.mgt")),
        &["-p".into(), pid.to_string()],
    );
    tx.stdin.take().unwrap().write_all(b"go").unwrap();
    assert!(tx.wait().unwrap().success());
    let mut got = String::new();
    rx.stdout.take().unwrap().read_to_string(&mut got).unwrap();
    rx.wait().unwrap();
    assert_eq!(
        got.trim(),
        format!("{DATAGRAMS} {}", DATAGRAMS * SIZE as u64),
        "{c:?}"
    );
    let trace = stop(rec);
    let pcap = cap.stop().unwrap();
    let fam = if c.v6 { "ip6" } else { "ip" };
    let frag = if c.v6 {
        "ip6[6] == 44"
    } else {
        "ip[6:2] & 0x3fff != 0"
    };
    let wire = frames(pcap.path(), &format!("{fam} and dst host {dst} and {frag}"));
    assert_eq!(
        wire,
        3 * DATAGRAMS,
        "{c:?}: the wire holds 3 fragments per datagram"
    );

    // The receiver's socket, when traced.
    let socks = parse_kinds(&trace, "sock");
    let udp_rx: Vec<u64> = socks
        .iter()
        .filter(|s| u(s, "protocol") == 17 && u(s, "sport") == port as u64)
        .map(|s| u(s, "cookie"))
        .collect();
    let dev_rx = parse_kinds(&trace, "dev_rx");
    let ether = if c.v6 { 0x86dd } else { 0x0800 };
    let rx_frames: Vec<&Value> = dev_rx
        .iter()
        .filter(|e| u(e, "ethertype") == ether && u(e, "len") > 500)
        .collect();
    assert_eq!(
        rx_frames.len() as u64,
        wire,
        "{c:?}: dev_rx records of the datagrams' fragments against tcpdump on the receiver's end"
    );
    if !c.trace_sender {
        assert_eq!(
            udp_rx.len(),
            1,
            "{c:?}: the receiver's socket is announced once"
        );
        let bad = dev_rx
            .iter()
            .filter(|e| u(e, "ethertype") == ether && u(e, "len") > 500)
            .filter(|e| u(e, "cookie") != udp_rx[0])
            .count();
        assert_eq!(
            bad, 0,
            "{c:?}: every fragment carries the receiver socket's cookie"
        );
        if c.in_receiver {
            let local_in = parse_kinds(&trace, "ip_local_in");
            let n = local_in
                .iter()
                .filter(|e| u(e, "cookie") == udp_rx[0])
                .count() as u64;
            // IPv4 reassembles before LOCAL_IN, IPv6 after it.
            let want = if c.v6 { wire } else { DATAGRAMS };
            assert_eq!(
                n, want,
                "{c:?}: ip_local_in records of the receiver's socket"
            );
            assert_eq!(local_in.len() as u64, want, "{c:?}: no other ip_local_in");
        }
    }
    let _ = std::fs::remove_file(&trace);
}

fn frag_matrix(v6: bool, base: u16) {
    let mut port = base;
    for offloads in [true, false] {
        for trace_sender in [true, false] {
            for in_receiver in [true, false] {
                frag_case(
                    FragCase {
                        v6,
                        offloads,
                        trace_sender,
                        in_receiver,
                    },
                    port,
                );
                port += 1;
            }
        }
    }
}

fn live(name: &str) -> bool {
    live_or_skip(
        name,
        &[Need::Btf, Need::Tool("tcpdump"), Need::Tool("python3")],
    )
}

#[test]
fn fragments_follow_their_datagram_under_a_task_filter_ipv4() {
    if !live("fragments_follow_their_datagram_under_a_task_filter_ipv4") {
        return;
    }
    frag_matrix(false, 27100);
}

#[test]
fn fragments_follow_their_datagram_under_a_task_filter_ipv6() {
    if !live("fragments_follow_their_datagram_under_a_task_filter_ipv6") {
        return;
    }
    frag_matrix(true, 27200);
}

/// A UDP server that connects to its first client after receiving from it
/// unconnected (as iperf3 -s does), recorded from the client's namespace
/// (`filter`: `-p` of the server, or `--all --port`). Its SOCK record came
/// before the connect and names no peer, and the ip layer, which would, does
/// not see the server's namespace: the connect announces it again. Its row in
/// `analyze` names the client's end, and its dev in holds every fragment
/// tcpdump saw reach the server's end (the case the matrix's iperf3-udp cells,
/// recorded from the client's namespace, found wrong).
fn connect_case(pid_filter: bool, port: u16) {
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    let dst = veth.b().addr().to_string();
    let cap = Capture::start(Some(&b), veth.b().name(), &[]).unwrap();
    // With -p the server's socket is bound before the recorder (found at its
    // start); with --all it is bound after (a socket open before an --all
    // recording is known from its first event in a task only: a datagram
    // that comes before any has no socket from the client's namespace).
    let wait = if pid_filter { "" } else { "sys.stdin.read(1)" };
    let mut rx = b
        .command("python3")
        .args([
            "-c",
            &format!(
                "import socket,sys\n\
                 {wait}\n\
                 s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
                 s.bind(('0.0.0.0',{port})); s.settimeout(10); print('ready',flush=True)\n\
                 d,peer=s.recvfrom(65536); s.connect(peer); s.send(b'ok'); n=1; b=len(d)\n\
                 try:\n  while n<{DATAGRAMS}:\n    d=s.recv(65536); n+=1; b+=len(d)\n\
                 except socket.timeout: pass\nprint(n,b)\n"
            ),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut rx_out = BufReader::new(rx.stdout.take().unwrap());
    let mut tx = a
        .command("python3")
        .args([
            "-c",
            &format!(
                "import socket,sys,time\n\
                 sys.stdin.read(1)\n\
                 s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
                 s.sendto(b'x'*4,('{dst}',{port})); s.settimeout(5); s.recv(16)\n\
                 for i in range({DATAGRAMS}-1):\n  s.sendto(bytes([i%256])*{SIZE},('{dst}',{port})); time.sleep(0.002)\n\
                 print(s.getsockname()[1])\n"
            ),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let args: Vec<String> = if pid_filter {
        vec!["-p".into(), rx.id().to_string()]
    } else {
        vec!["--all".into(), "--port".into(), port.to_string()]
    };
    let rec = record(&a, tmp(&format!("uconn-{port}.mgt")), &args);
    rx.stdin.take().unwrap().write_all(b"go").unwrap();
    let mut ready = String::new();
    rx_out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready", "the server bound its port");
    tx.stdin.take().unwrap().write_all(b"go").unwrap();
    let mut cport = String::new();
    tx.stdout
        .take()
        .unwrap()
        .read_to_string(&mut cport)
        .unwrap();
    assert!(tx.wait().unwrap().success());
    let cport: u16 = cport.trim().parse().expect("the client's port");
    let mut got = String::new();
    rx_out.read_to_string(&mut got).unwrap();
    rx.wait().unwrap();
    let want_bytes = 4 + (DATAGRAMS - 1) * SIZE as u64;
    assert_eq!(got.trim(), format!("{DATAGRAMS} {want_bytes}"));
    let trace = stop(rec);
    let pcap = cap.stop().unwrap();
    let wire = frames(
        pcap.path(),
        &format!("ip and src port {cport} or (ip[6:2] & 0x1fff != 0 and dst host {dst})"),
    );
    // The first datagram, then 3 fragments per datagram.
    assert_eq!(wire, 1 + 3 * (DATAGRAMS - 1), "{args:?}: the wire");

    let out = magnet_ok(["analyze".as_ref(), "--json".as_ref(), trace.as_os_str()]);
    let j: Value = serde_json::from_slice(&out).unwrap();
    let peer = format!("{}:{cport}", veth.a().addr());
    let rows: Vec<&Value> = j["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["protocol"] == "udp" && c["remote"] == peer.as_str())
        .collect();
    assert_eq!(
        rows.len(),
        1,
        "{args:?}: one UDP row names the client's end {peer}"
    );
    let dev_in = rows[0]["modulation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["layer"] == "dev" && r["dir"] == "in")
        .map(|r| r["units"].as_u64().unwrap());
    assert_eq!(
        dev_in,
        Some(wire),
        "{args:?}: the server socket's dev in frames"
    );
    assert_eq!(j["trace"]["unattributed"]["dev_rx"], 0, "{args:?}");
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn udp_server_connecting_to_its_client_names_it_from_the_clients_netns() {
    if !live("udp_server_connecting_to_its_client_names_it_from_the_clients_netns") {
        return;
    }
    connect_case(true, 27300);
    connect_case(false, 27301);
}

/// A TCP connection from 127.0.0.1:`lport` to 127.0.0.1:`sport`.
fn bound_connect(lport: u16, sport: u16) -> TcpStream {
    use std::os::fd::FromRawFd;
    let sin = |port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor this function owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let a = sin(lport);
        assert_eq!(
            libc::bind(fd, &a as *const _ as *const libc::sockaddr, len),
            0
        );
        let p = sin(sport);
        assert_eq!(
            libc::connect(fd, &p as *const _ as *const libc::sockaddr, len),
            0
        );
        TcpStream::from_raw_fd(fd)
    }
}

/// A TCP transfer between 127.0.0.1:`lport` (client, bound) and
/// 127.0.0.1:`sport` (server) in `ns`: `bytes` each way.
fn loopback_transfer(ns: &Netns, sport: u16, lport: u16, bytes: usize) {
    run_in_netns(ns, move || {
        let l = TcpListener::bind(("127.0.0.1", sport)).unwrap();
        let srv = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; bytes];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
            s.shutdown(std::net::Shutdown::Write).unwrap();
            let _ = s.read(&mut [0u8; 1]);
        });
        let mut c = bound_connect(lport, sport);
        c.write_all(&vec![7u8; bytes]).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), bytes);
        drop(c);
        srv.join().unwrap();
    })
    .unwrap();
}

#[test]
fn one_five_tuple_in_two_namespaces_keeps_its_socket_in_each() {
    if !live("one_five_tuple_in_two_namespaces_keeps_its_socket_in_each") {
        return;
    }
    let (n1, n2) = (Netns::new().unwrap(), Netns::new().unwrap());
    let (sport, lport) = (27301u16, 27302u16);
    let rec = record(&n1, tmp("twons.mgt"), &["--all".into()]);
    // Both connections open (and each namespace's flows known) before
    // either moves data, then both move it at once.
    let t1 = {
        let n1 = n1.clone();
        std::thread::spawn(move || loopback_transfer(&n1, sport, lport, 300_000))
    };
    let t2 = {
        let n2 = n2.clone();
        std::thread::spawn(move || loopback_transfer(&n2, sport, lport, 300_000))
    };
    t1.join().unwrap();
    t2.join().unwrap();
    let trace = stop(rec);

    let inum = |ns: &Netns| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(ns.path()).unwrap().ino()
    };
    let (i1, i2) = (inum(&n1), inum(&n2));
    // The four sockets: (netns, local port) -> cookie.
    // Each namespace's listener holds its connection's handshake (SYN and
    // handshake ACK in: docs/analyze.md).
    let mut socks: HashMap<(u64, u64), u64> = HashMap::new();
    let mut listener: HashMap<u64, u64> = HashMap::new();
    for s in parse_kinds(&trace, "sock") {
        let (sp, dp) = (u(&s, "sport"), u(&s, "dport"));
        let ns = u(&s, "netns");
        if (ns == i1 || ns == i2) && dp != 0 && (sp == sport as u64 || sp == lport as u64) {
            socks.insert((ns, sp), u(&s, "cookie"));
        }
        if (ns == i1 || ns == i2) && dp == 0 && sp == sport as u64 {
            listener.insert(ns, u(&s, "cookie"));
        }
    }
    assert_eq!(listener.len(), 2, "a listener in each namespace");
    assert_eq!(socks.len(), 4, "two connections' four sockets: {socks:?}");
    let owner: HashMap<u64, (u64, u64)> = socks.iter().map(|(k, v)| (*v, *k)).collect();
    // The sender of each packet, from its transmission.
    let mut sent_by: HashMap<String, u64> = HashMap::new();
    for e in parse_kinds(&trace, "dev_start_xmit") {
        if owner.contains_key(&u(&e, "cookie")) {
            sent_by.insert(e["pkt_id"].to_string(), u(&e, "cookie"));
        }
    }
    let mut checked = 0;
    let mut wrong = Vec::new();
    for e in parse_kinds(&trace, "dev_rx,ip_local_in") {
        let Some(sender) = sent_by.get(&e["pkt_id"].to_string()) else {
            continue;
        };
        let (ns, sp) = owner[sender];
        let peer_port = if sp == sport as u64 { lport } else { sport } as u64;
        let want = socks[&(ns, peer_port)];
        checked += 1;
        let got = u(&e, "cookie");
        if got != want && !(peer_port == sport as u64 && got == listener[&ns]) {
            wrong.push((e["kind"].to_string(), u(&e, "cookie"), want));
        }
    }
    assert!(
        checked > 40,
        "{checked} received packets joined to a sender"
    );
    assert!(
        wrong.is_empty(),
        "{} of {checked} received packets carry another socket's cookie (kind, got, want), e.g. {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    let _ = std::fs::remove_file(&trace);
}

/// Counts of received frames (dev_rx) per socket cookie.
type PerSock = std::collections::BTreeMap<u64, u64>;

#[test]
fn parse_export_pcap_and_analyze_agree_on_each_received_packets_socket() {
    if !live_or_skip(
        "parse_export_pcap_and_analyze_agree_on_each_received_packets_socket",
        &[Need::Btf, Need::Tool("tcpdump"), Need::Tool("tshark")],
    ) {
        return;
    }
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    veth.a().offloads_off().unwrap();
    veth.b().offloads_off().unwrap();
    enable_v6(&a, veth.a().name(), "fd21:8::1/64");
    enable_v6(&b, veth.b().name(), "fd21:8::2/64");
    let port = 27401u16;
    let capa = Capture::start(Some(&a), veth.a().name(), &["tcp", "port", "27401"]).unwrap();
    let capb = Capture::start(Some(&b), veth.b().name(), &["tcp", "port", "27401"]).unwrap();
    let rec = record(
        &b,
        tmp("agree.mgt"),
        &["--all".into(), "--port".into(), port.to_string()],
    );
    // A server in B (its listener known from its creation), a client in A,
    // over IPv4 and IPv6: 400 kB each way.
    for dst in [veth.b().addr().to_string(), "fd21:8::2".to_string()] {
        let bind = if dst.contains(':') { "::" } else { "0.0.0.0" };
        let l = run_in_netns(&b, move || TcpListener::bind((bind, port)).unwrap()).unwrap();
        let srv = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 400_000];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        });
        run_in_netns(&a, move || {
            let mut c = TcpStream::connect((dst.as_str(), port)).unwrap();
            c.write_all(&vec![3u8; 400_000]).unwrap();
            let mut back = vec![0u8; 400_000];
            c.read_exact(&mut back).unwrap();
        })
        .unwrap();
        srv.join().unwrap();
    }
    let trace = stop(rec);
    let (pa, pb) = (capa.stop().unwrap(), capb.stop().unwrap());
    let t = trace.to_str().unwrap();

    // The kernel's attribution, as parse prints it.
    let mut parse = PerSock::new();
    for e in parse_kinds(&trace, "dev_rx") {
        *parse.entry(u(&e, "cookie")).or_default() += 1;
    }
    assert!(
        !parse.contains_key(&0),
        "every received frame carries its socket: {parse:?}"
    );
    // parse --sock: each socket's own view.
    let mut by_sock = PerSock::new();
    for &c in parse.keys() {
        let out = magnet_ok([
            "parse",
            "-q",
            "--json",
            "--kind",
            "dev_rx",
            "--sock",
            &c.to_string(),
            t,
        ]);
        by_sock.insert(c, String::from_utf8_lossy(&out).lines().count() as u64);
    }
    assert_eq!(by_sock, parse, "parse --sock");
    // export (JSON lines; Parquet and CSV share its rows).
    let mut export = PerSock::new();
    let out = magnet_ok(["export", "-q", "-T", "jsonl", "-o", "-", t]);
    for l in String::from_utf8_lossy(&out).lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["kind"] == "dev_rx" {
            *export.entry(u(&v, "cookie")).or_default() += 1;
        }
    }
    assert_eq!(export, parse, "export");
    // pcap: every device sighting, the received ones (dir=in) by the cookie
    // in their comment.
    let pcapng = tmp("agree.pcapng");
    magnet_ok([
        "pcap",
        "-q",
        "--each-device",
        "-o",
        pcapng.to_str().unwrap(),
        t,
    ]);
    let mut pcap = PerSock::new();
    for c in tshark_comments(&pcapng) {
        if !c.split(' ').any(|w| w == "dir=in") {
            continue;
        }
        let ck = c
            .split(' ')
            .find_map(|w| w.strip_prefix("cookie="))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        *pcap.entry(ck).or_default() += 1;
    }
    // The frames each dev_rx names (docs/wire.md), listeners' included.
    assert_eq!(
        pcap, parse,
        "pcap --each-device, received frames by their comment's cookie"
    );
    let socks = parse_kinds(&trace, "sock");
    // analyze: each socket's dev in row (listeners too: --all).
    let j: Value =
        serde_json::from_slice(&magnet_ok(["analyze", "-q", "--json", "--all", t])).unwrap();
    let mut analyze = PerSock::new();
    for c in j["connections"].as_array().unwrap() {
        let n = c["modulation"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["layer"] == "dev" && r["dir"] == "in")
            .and_then(|r| r["units"].as_u64())
            .unwrap_or(0);
        if n > 0 {
            analyze.insert(c["cookie"].as_u64().unwrap(), n);
        }
    }
    assert_eq!(analyze, parse, "analyze's dev in rows");
    // The oracle: the frames each namespace's end took in, against the
    // received frames of the sockets of that namespace.
    let mut ns_of = HashMap::new();
    for s in &socks {
        ns_of.insert(u(s, "cookie"), u(s, "netns"));
    }
    let inum = |ns: &Netns| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(ns.path()).unwrap().ino()
    };
    for (ns, pcap, end) in [(&a, &pa, veth.a()), (&b, &pb, veth.b())] {
        let wire = frames(
            pcap.path(),
            &format!("not ether src {}", mac(ns, end.name())),
        );
        let got: u64 = parse
            .iter()
            .filter(|(c, _)| ns_of.get(c) == Some(&inum(ns)))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(got, wire, "frames into {} against tcpdump", end.name());
    }
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&pcapng);
}

fn tshark_comments(pcapng: &Path) -> Vec<String> {
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(pcapng)
        .args(["-T", "fields", "-e", "frame.comment"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn mac(ns: &Netns, iface: &str) -> String {
    let out = ns
        .command("cat")
        .arg(format!("/sys/class/net/{iface}/address"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
