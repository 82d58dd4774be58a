//! Connections that reuse a 4-tuple: a client that binds the same source port for
//! every connection to a server that closes first (its end sits in TIME_WAIT, and
//! the next SYN on the tuple starts a new connection there), as a load generator
//! with a narrow port range and tcp_tw_reuse does. The server is started before the
//! recorder and recorded with `-p` and with `--comm`, IPv4 and IPv6.
//!
//! Oracle: tcpdump on the server's veth end, split into connections by tshark
//! (`tcp.stream`). Each connection of the trace names its peer; there is one per
//! connection of the capture; each holds exactly its capture's frames after the
//! handshake, in and out; the handshakes (SYN, SYN-ACK, the handshake ACK, which
//! come before the connection's own socket exists) are the listener's, as a first
//! connection's are. Before the fix, each handshake went to the closed connection
//! that last held the tuple, which analyze then took for a listener (no peer).
//!
//! The other way round: a tuple that outlives its socket. `ss -K` destroys the
//! server's connection while the client goes on sending (the client never sees
//! the abort's reset: its namespace drops incoming resets). Each segment the
//! client sends then finds only the listener, and the kernel answers it with a
//! reset for the listener, which since Linux 6.13 leaves with the listener as
//! its socket (skb_set_owner_edemux). Those resets carry the connection's tuple:
//! the capture counts them on the connection, and so must the trace; the
//! listener keeps its handshake frames only. (On a kernel built without socket
//! destruction, where `ss -K` does nothing, `Netns::abort_tcp` disconnects the
//! server's socket instead: the same reset, the same state.)

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use magnet_testkit::{Capture, Netns, Recorder, Veth};
use serde_json::Value;

mod common;
use common::{
    capture_connections, enable_v6, live_capture_python, magnet_ok, python_named, tmp, units,
    MAGNET,
};

const CONNECTIONS: usize = 20;
const SERVER_PORT: u16 = 7611;
const CLIENT_PORT: u16 = 45611;

const SERVER: &str = "import socket,sys
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
s = socket.socket(fam); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64)
print('ready', flush=True)
while True:
    c, _ = s.accept()
    c.recv(100)
    c.sendall(b'y' * 1000)
    c.close()
";

const CLIENT: &str = "import socket,sys,time
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
for i in range(int(sys.argv[4])):
    c = socket.socket(fam); c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    c.bind((sys.argv[3], int(sys.argv[5])))
    c.connect((sys.argv[1], int(sys.argv[2])))
    c.sendall(b'x' * 100)
    while c.recv(65536): pass
    c.close()
    time.sleep(0.02)
";

/// Two namespaces joined by a veth pair: `a` the client's, `b` the server's,
/// with the server's and the client's address (IPv6 in `prefix`::/64).
struct Hosts {
    a: Netns,
    b: Netns,
    veth: Veth,
    server: String,
    client: String,
}

fn hosts(v6: bool, prefix: &str) -> Hosts {
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    let (server, client) = if v6 {
        enable_v6(&a, veth.a().name(), &format!("{prefix}::1/64"));
        enable_v6(&b, veth.b().name(), &format!("{prefix}::2/64"));
        (format!("{prefix}::2"), format!("{prefix}::1"))
    } else {
        (veth.b().addr().to_string(), veth.a().addr().to_string())
    };
    Hosts {
        a,
        b,
        veth,
        server,
        client,
    }
}

/// `script` run by python3 under the name `comm` (for --comm; one name per
/// case, as the cases may run at once) in the server's namespace, once it
/// printed "ready".
fn start_server(h: &Hosts, comm: &str, script: &str, port: u16) -> std::process::Child {
    let bin = python_named(comm);
    let mut srv =
        h.b.command(bin.to_str().unwrap())
            .args(["-c", script, &h.server, &port.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
    let mut ready = String::new();
    BufReader::new(srv.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready");
    srv
}

/// The recorder's arguments: the layers, and the server by name or by pid.
fn record_args(by_comm: bool, comm: &str, pid: u32) -> Vec<String> {
    let mut args = vec!["--layers".to_string(), "app,tcp,ip,dev".to_string()];
    if by_comm {
        args.extend(["--comm".to_string(), comm.to_string()]);
    } else {
        args.extend(["-p".to_string(), pid.to_string()]);
    }
    args
}

/// The trace's TCP sockets on local `port`: its listeners (no peer) and the
/// rest.
fn port_sockets(trace: &std::path::Path, port: u16) -> (Vec<Value>, Vec<Value>) {
    let json: Value =
        serde_json::from_slice(&magnet_ok(["analyze", "--json", trace.to_str().unwrap()])).unwrap();
    json["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["protocol"] == "tcp"
                && c["local"]
                    .as_str()
                    .is_some_and(|l| l.ends_with(&format!(":{port}")))
        })
        .cloned()
        .partition(|c| c["remote"].is_null())
}

fn case(v6: bool, by_comm: bool) {
    let h = hosts(v6, "fd21:9");
    let (server, client) = (&h.server, &h.client);
    let comm = format!(
        "tuplesrv{}{}",
        if v6 { 6 } else { 4 },
        if by_comm { "c" } else { "p" }
    );
    let mut srv = start_server(&h, &comm, SERVER, SERVER_PORT);
    let cap = Capture::start(Some(&h.b), h.veth.b().name(), &[]).unwrap();
    let trace = tmp(&format!("reused-{v6}-{by_comm}.mgt"));
    let args = record_args(by_comm, &comm, srv.id());
    let rec = Recorder::record(MAGNET, Some(&h.b), &trace, &args);
    let st =
        h.a.command("python3")
            .args([
                "-c",
                CLIENT,
                server,
                &SERVER_PORT.to_string(),
                client,
                &CONNECTIONS.to_string(),
                &CLIENT_PORT.to_string(),
            ])
            .status()
            .unwrap();
    assert!(st.success(), "the client failed");
    let ended = rec.stop();
    let _ = srv.kill();
    let _ = srv.wait();
    let pcap = cap.stop().unwrap();
    let want = capture_connections(pcap.path(), SERVER_PORT);
    assert_eq!(want.len(), CONNECTIONS, "tshark's connections");

    let trace = ended.trace.expect("trace");
    let (listeners, accepted) = port_sockets(&trace, SERVER_PORT);
    let peer = if v6 {
        format!("[{client}]:{CLIENT_PORT}")
    } else {
        format!("{client}:{CLIENT_PORT}")
    };
    assert_eq!(
        listeners.len(),
        1,
        "one listener (no peer), the rest name theirs: {listeners:#?}"
    );
    assert_eq!(
        accepted.len(),
        CONNECTIONS,
        "connections on the reused tuple"
    );
    let mut got: Vec<(f64, u64, u64)> = accepted
        .iter()
        .map(|c| {
            assert_eq!(c["remote"], peer.as_str(), "{c:#}");
            (
                c["first_s"].as_f64().unwrap(),
                units(c, "ip", "in"),
                units(c, "ip", "out"),
            )
        })
        .collect();
    got.sort_by(|x, y| x.0.total_cmp(&y.0));
    for (i, ((_, ip_in, ip_out), w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            (*ip_in, *ip_out),
            (w.from_client, w.from_server),
            "connection {i}: ip in/out vs the capture after the handshake"
        );
    }
    let l = &listeners[0];
    assert_eq!(
        units(l, "ip", "in"),
        2 * CONNECTIONS as u64,
        "the listener's SYNs and handshake ACKs"
    );
    assert_eq!(
        units(l, "ip", "out"),
        CONNECTIONS as u64,
        "the listener's SYN-ACKs"
    );
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn reused_tuple_ipv4_by_pid() {
    if live_capture_python("reused_tuple_ipv4_by_pid") {
        case(false, false);
    }
}

#[test]
fn reused_tuple_ipv4_by_comm() {
    if live_capture_python("reused_tuple_ipv4_by_comm") {
        case(false, true);
    }
}

#[test]
fn reused_tuple_ipv6_by_pid() {
    if live_capture_python("reused_tuple_ipv6_by_pid") {
        case(true, false);
    }
}

#[test]
fn reused_tuple_ipv6_by_comm() {
    if live_capture_python("reused_tuple_ipv6_by_comm") {
        case(true, true);
    }
}

const KILLED_SERVER: &str = "import socket,sys,time
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
s = socket.socket(fam); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8)
print('ready', flush=True)
c, _ = s.accept()
c.recv(100)
c.sendall(b'ok')
time.sleep(3600)
";

const KILLED_CLIENT: &str = "import socket,struct,sys,time
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
c = socket.socket(fam)
c.bind((sys.argv[3], int(sys.argv[4])))
c.connect((sys.argv[1], int(sys.argv[2])))
c.sendall(b'x' * 100)
assert c.recv(2) == b'ok'
print('connected', flush=True)
sys.stdin.readline()
c.sendall(b'z' * 100)
time.sleep(0.7)
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
c.close()
print('done', flush=True)
";

fn live_killed(name: &str) -> bool {
    use magnet_testkit::Need;
    live_capture_python(name)
        && magnet_testkit::live_or_skip(name, &[Need::Tool("nft"), Need::Tool("ss")])
}

fn killed_connection_case(v6: bool, by_comm: bool, from_client_ns: bool) {
    const PORT: u16 = 7612;
    const PEER_PORT: u16 = 45612;
    let h = hosts(v6, "fd21:a");
    let (a, b) = (&h.a, &h.b);
    // The client never learns that its peer is gone: it keeps sending.
    let mut nft = a
        .command("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    nft.stdin
        .take()
        .unwrap()
        .write_all(
            b"table inet magnet_test {\n chain input {\n  type filter hook input priority 0;\n  \
              tcp flags & rst == rst drop\n }\n}\n",
        )
        .unwrap();
    assert!(nft.wait().unwrap().success(), "nft");

    let comm = format!(
        "killsrv{}{}",
        if v6 { 6 } else { 4 },
        if by_comm { "c" } else { "p" }
    );
    let mut srv = start_server(&h, &comm, KILLED_SERVER, PORT);
    let cap = Capture::start(Some(b), h.veth.b().name(), &[]).unwrap();
    let trace = tmp(&format!("killed-{v6}-{by_comm}.mgt"));
    let args = record_args(by_comm, &comm, srv.id());
    let rec = Recorder::record(
        MAGNET,
        Some(if from_client_ns { a } else { b }),
        &trace,
        &args,
    );
    let mut cl = a
        .command("python3")
        .args([
            "-c",
            KILLED_CLIENT,
            &h.server,
            &PORT.to_string(),
            &h.client,
            &PEER_PORT.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(cl.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "connected");
    b.abort_tcp(&["dport", "=", &format!(":{PEER_PORT}")])
        .expect("destroying the server's connection");
    writeln!(cl.stdin.take().unwrap()).unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "done");
    assert!(cl.wait().unwrap().success(), "the client failed");
    let ended = rec.stop();
    let _ = srv.kill();
    let _ = srv.wait();
    let pcap = cap.stop().unwrap();
    let want = capture_connections(pcap.path(), PORT);
    assert_eq!(want.len(), 1, "tshark's connections");
    let want = &want[0];
    // The data, its ACK, the abort's reset and at least one of the listener's.
    assert!(
        want.from_server >= 4,
        "the listener answered the client's segments: {want:?}"
    );

    let trace = ended.trace.expect("trace");
    let (listeners, accepted) = port_sockets(&trace, PORT);
    assert_eq!(
        (listeners.len(), accepted.len()),
        (1, 1),
        "{listeners:#?} {accepted:#?}"
    );
    let (l, c) = (&listeners[0], &accepted[0]);
    for layer in ["ip", "dev"] {
        assert_eq!(
            (units(c, layer, "in"), units(c, layer, "out")),
            (want.from_client, want.from_server),
            "the connection's {layer} in/out against the capture after the handshake \
             (the listener's resets for its tuple included)"
        );
        assert_eq!(
            (units(l, layer, "in"), units(l, layer, "out")),
            (2, 1),
            "the listener's {layer} in/out: the handshake only"
        );
    }
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn killed_connection_resets_are_its_own_ipv4_by_pid() {
    if live_killed("killed_connection_resets_are_its_own_ipv4_by_pid") {
        killed_connection_case(false, false, false);
    }
}

#[test]
fn killed_connection_resets_are_its_own_ipv6_by_comm() {
    if live_killed("killed_connection_resets_are_its_own_ipv6_by_comm") {
        killed_connection_case(true, true, true);
    }
}
