//! Two listeners on one port (SO_REUSEPORT, as nginx's workers with `listen …
//! reuseport`): the kernel chooses one of them for each incoming SYN, and that
//! listener's request socket answers it and takes the handshake ACK. The server
//! (both listeners in one process) is started before the recorder and recorded
//! with `-p` and with `--comm`, IPv4 and IPv6; a real nginx with `--comm` and
//! with `--all`.
//!
//! Oracle: each listener's own accept count, which the server prints with the
//! listener's socket cookie (SO_COOKIE), and tcpdump on the server's veth end
//! (every handshake once: one SYN, one SYN-ACK, one handshake ACK per
//! connection). A listener's frames are those of the handshakes it handled:
//! in, its accepted connections × 2 (SYN, handshake ACK); out, × 1 (SYN-ACK),
//! at the IP and device layers. Before the fix every handshake went to one
//! listener, the one the recorder's flow table held for the port.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use magnet_testkit::{tshark_frames, Capture, Netns, Recorder, Veth};
use serde_json::Value;

mod common;
use common::{
    enable_v6, live_capture_python, magnet_ok, python_named, tmp, units, KillOnDrop, MAGNET,
};

const CONNECTIONS: usize = 40;
const SERVER_PORT: u16 = 7621;

/// Two SO_REUSEPORT listeners; accepts `argv[3]` connections in all, answers
/// each, then prints one line per listener: its cookie and its accept count.
const SERVER: &str = "import socket,sys,selectors
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
SO_COOKIE = 57
ls = []
sel = selectors.DefaultSelector()
for i in range(2):
    s = socket.socket(fam); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64); s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, i); ls.append(s)
print('ready', flush=True)
counts = [0, 0]
while sum(counts) < int(sys.argv[3]):
    for key, _ in sel.select():
        try:
            c, _ = key.fileobj.accept()
        except BlockingIOError:
            continue
        counts[key.data] += 1
        c.setblocking(True); c.recv(100); c.sendall(b'y' * 1000); c.close()
for i, s in enumerate(ls):
    print(int.from_bytes(s.getsockopt(socket.SOL_SOCKET, SO_COOKIE, 8), sys.byteorder), counts[i], flush=True)
";

const CLIENT: &str = "import socket,sys
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
for i in range(int(sys.argv[3])):
    c = socket.socket(fam)
    c.connect((sys.argv[1], int(sys.argv[2])))
    c.sendall(b'x' * 100)
    while c.recv(65536): pass
    c.close()
";

/// The capture's handshake frames: (SYNs, SYN-ACKs).
fn capture_handshakes(pcap: &std::path::Path) -> (usize, usize) {
    let rows = tshark_frames(pcap, &["tcp.flags.syn", "tcp.flags.ack"]).unwrap();
    let set = |f: &str| f == "1" || f == "True";
    let syn = rows.iter().filter(|r| set(&r[0]) && !set(&r[1])).count();
    let syn_ack = rows.iter().filter(|r| set(&r[0]) && set(&r[1])).count();
    (syn, syn_ack)
}

fn case(v6: bool, by_comm: bool) {
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    let server = if v6 {
        enable_v6(&a, veth.a().name(), "fd21:a::1/64");
        enable_v6(&b, veth.b().name(), "fd21:a::2/64");
        "fd21:a::2".to_string()
    } else {
        veth.b().addr().to_string()
    };
    // One name per case: the cases may run at once, each in its own namespaces.
    let comm = format!(
        "reusesrv{}{}",
        if v6 { 6 } else { 4 },
        if by_comm { "c" } else { "p" }
    );
    let bin = python_named(&comm);
    let mut srv = KillOnDrop(
        b.command(bin.to_str().unwrap())
            .args([
                "-c",
                SERVER,
                &server,
                &SERVER_PORT.to_string(),
                &CONNECTIONS.to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut out = BufReader::new(srv.0.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    let cap = Capture::start(Some(&b), veth.b().name(), &[]).unwrap();
    let trace = tmp(&format!("reuseport-{v6}-{by_comm}.mgt"));
    let mut args = vec!["--layers".to_string(), "app,tcp,ip,dev".to_string()];
    if by_comm {
        args.extend(["--comm".to_string(), comm.clone()]);
    } else {
        args.extend(["-p".to_string(), srv.0.id().to_string()]);
    }
    let rec = Recorder::record(MAGNET, Some(&b), &trace, &args);
    let st = a
        .command("python3")
        .args([
            "-c",
            CLIENT,
            &server,
            &SERVER_PORT.to_string(),
            &CONNECTIONS.to_string(),
        ])
        .status()
        .unwrap();
    assert!(st.success(), "the client failed");
    // The server's accept count per listener cookie.
    let mut accepted: BTreeMap<u64, u64> = BTreeMap::new();
    for line in out.lines().map_while(Result::ok) {
        let mut w = line.split_whitespace().map(|x| x.parse::<u64>().unwrap());
        accepted.insert(w.next().unwrap(), w.next().unwrap());
    }
    let _ = srv.0.wait();
    let ended = rec.stop();
    let pcap = cap.stop().unwrap();
    assert_eq!(accepted.len(), 2, "two listeners: {accepted:?}");
    assert_eq!(accepted.values().sum::<u64>(), CONNECTIONS as u64);
    assert!(
        accepted.values().all(|&n| n > 0),
        "the kernel chose each listener at least once: {accepted:?}"
    );
    assert_eq!(
        capture_handshakes(pcap.path()),
        (CONNECTIONS, CONNECTIONS),
        "one SYN and one SYN-ACK per connection in the capture"
    );

    let trace = ended.trace.expect("trace");
    let json: Value =
        serde_json::from_slice(&magnet_ok(["analyze", "--json", trace.to_str().unwrap()])).unwrap();
    let conns = json["connections"].as_array().unwrap();
    let mut got = BTreeMap::new();
    for &cookie in accepted.keys() {
        let l = conns
            .iter()
            .find(|c| c["cookie"] == cookie)
            .unwrap_or_else(|| panic!("listener {cookie} in the analysis: {conns:#?}"));
        got.insert(
            cookie,
            [
                units(l, "ip", "in"),
                units(l, "ip", "out"),
                units(l, "dev", "in"),
                units(l, "dev", "out"),
            ],
        );
    }
    let want: BTreeMap<u64, [u64; 4]> = accepted
        .iter()
        .map(|(&c, &n)| (c, [2 * n, n, 2 * n, n]))
        .collect();
    assert_eq!(
        got, want,
        "per listener cookie: [ip in, ip out, dev in, dev out] vs its accepts × (2, 1, 2, 1)"
    );
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn reuseport_ipv4_by_pid() {
    if live_capture_python("reuseport_ipv4_by_pid") {
        case(false, false);
    }
}

#[test]
fn reuseport_ipv4_by_comm() {
    if live_capture_python("reuseport_ipv4_by_comm") {
        case(false, true);
    }
}

#[test]
fn reuseport_ipv6_by_pid() {
    if live_capture_python("reuseport_ipv6_by_pid") {
        case(true, false);
    }
}

#[test]
fn reuseport_ipv6_by_comm() {
    if live_capture_python("reuseport_ipv6_by_comm") {
        case(true, true);
    }
}

/// A real nginx with two workers and `listen … reuseport`, started before the
/// recorder and recorded with `--comm nginx`: nginx gives each worker a
/// listener of its own on the port, and its access log names the worker
/// (`$pid`) that served each request. Oracle: per worker, its requests; per
/// listener in magnet's analysis, its handshakes (ip and dev, in 2 and out 1 per
/// connection). The two lists must be equal as multisets (which listener is
/// which worker's is nginx's business), and every accepted connection must name
/// its client (`remote`), one per request of the access log.
///
/// `filter`: `--comm nginx`, or `--all --netns self` (the recorder runs in
/// the server's namespace), where no task filter finds nginx's sockets: the
/// recorder looks the listeners up at its start. Nothing has asked their
/// cookies before (`wait_listening` reads /proc, not sock_diag), as on a
/// user's server.
fn nginx_case(v6: bool, filter: &[&str]) {
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    let (server, listen) = if v6 {
        enable_v6(&a, veth.a().name(), "fd21:b::1/64");
        enable_v6(&b, veth.b().name(), "fd21:b::2/64");
        ("fd21:b::2".to_string(), format!("[fd21:b::2]:{NGINX_PORT}"))
    } else {
        let s = veth.b().addr().to_string();
        (s.clone(), format!("{s}:{NGINX_PORT}"))
    };
    let tag = format!("{v6}-{}", filter[0].trim_start_matches('-'));
    let dir = tmp(&format!("reuseport-nginx-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), vec![b'n'; 1000]).unwrap();
    let cmd = magnet_testkit::nginx_workers(&b, &dir, &format!("{listen} reuseport"), 2, true);
    let nginx = magnet_testkit::Server::spawn(cmd, &dir);
    magnet_testkit::wait_listening(&b, NGINX_PORT);
    let cap = Capture::start(Some(&b), veth.b().name(), &[]).unwrap();
    let trace = tmp(&format!("reuseport-nginx-{tag}.mgt"));
    let mut args = vec!["--layers", "app,tcp,ip,dev"];
    args.extend(filter);
    let rec = Recorder::record(MAGNET, Some(&b), &trace, &args);
    let st = a
        .command("python3")
        .args([
            "-c",
            NGINX_CLIENT,
            &server,
            &NGINX_PORT.to_string(),
            &CONNECTIONS.to_string(),
        ])
        .status()
        .unwrap();
    assert!(st.success(), "the client failed");
    // nginx writes a request's line as the request ends.
    let log = dir.join("access.log");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let t0 = std::time::Instant::now();
    while read_log().lines().count() < CONNECTIONS && t0.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let ended = rec.stop();
    let pcap = cap.stop().unwrap();
    let lines = read_log();
    drop(nginx);
    let mut per_worker: BTreeMap<u64, u64> = BTreeMap::new();
    let mut client_ports = Vec::new();
    for line in lines.lines() {
        let mut w = line.split_whitespace().map(|x| x.parse::<u64>().unwrap());
        *per_worker.entry(w.next().unwrap()).or_default() += 1;
        client_ports.push(w.next().unwrap());
    }
    assert_eq!(client_ports.len(), CONNECTIONS, "access log: {lines}");
    assert_eq!(per_worker.len(), 2, "both workers served: {per_worker:?}");
    assert_eq!(
        capture_handshakes(pcap.path()),
        (CONNECTIONS, CONNECTIONS),
        "one SYN and one SYN-ACK per connection in the capture"
    );

    let trace = ended.trace.expect("trace");
    let json: Value =
        serde_json::from_slice(&magnet_ok(["analyze", "--json", trace.to_str().unwrap()])).unwrap();
    let conns = json["connections"].as_array().unwrap();
    let port_of = |c: &Value| {
        c["local"]
            .as_str()
            .and_then(|l| l.rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok())
    };
    // --comm records nginx in every namespace: the other nginx cases run at
    // the same time, on the same port, in namespaces of their own.
    let b_netns = b.inode();
    let ours: Vec<&Value> = conns
        .iter()
        .filter(|c| port_of(c) == Some(NGINX_PORT) && c["netns"].as_u64() == Some(b_netns))
        .collect();
    let listeners: Vec<&Value> = ours
        .iter()
        .copied()
        .filter(|c| c["remote"].is_null())
        .collect();
    let mut got: Vec<[u64; 4]> = listeners
        .iter()
        .map(|l| {
            [
                units(l, "ip", "in"),
                units(l, "ip", "out"),
                units(l, "dev", "in"),
                units(l, "dev", "out"),
            ]
        })
        .collect();
    got.sort();
    let mut want: Vec<[u64; 4]> = per_worker.values().map(|&n| [2 * n, n, 2 * n, n]).collect();
    want.sort();
    assert_eq!(
        got, want,
        "per listener: [ip in, ip out, dev in, dev out] vs a worker's requests × (2, 1, 2, 1) \
         (access log per worker pid: {per_worker:?})"
    );
    let mut remotes: Vec<u64> = ours
        .iter()
        .filter_map(|c| c["remote"].as_str())
        .filter_map(|r| r.rsplit(':').next()?.parse().ok())
        .collect();
    remotes.sort_unstable();
    client_ports.sort_unstable();
    assert_eq!(
        remotes, client_ports,
        "one accepted connection per request, naming the client's port"
    );
    let _ = std::fs::remove_file(&trace);
}

const NGINX_PORT: u16 = 7622;

/// `argv[3]` HTTP/1.0 requests, one connection each, read to the end.
const NGINX_CLIENT: &str = "import socket,sys
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
for i in range(int(sys.argv[3])):
    c = socket.socket(fam)
    c.connect((sys.argv[1], int(sys.argv[2])))
    c.sendall(b'GET /index.html HTTP/1.0\\r\\nHost: t\\r\\n\\r\\n')
    got = b''
    while True:
        d = c.recv(65536)
        if not d: break
        got += d
    assert got.startswith(b'HTTP/1.1 200'), got[:100]
    c.close()
";

fn live_nginx(name: &str) -> bool {
    live_capture_python(name)
        && magnet_testkit::live_or_skip(name, &[magnet_testkit::Need::Tool("nginx")])
}

const BY_COMM: &[&str] = &["--comm", "nginx"];
const ALL_HERE: &[&str] = &["--all", "--netns", "self"];

#[test]
fn reuseport_nginx_two_workers_ipv4_by_comm() {
    if live_nginx("reuseport_nginx_two_workers_ipv4_by_comm") {
        nginx_case(false, BY_COMM);
    }
}

#[test]
fn reuseport_nginx_two_workers_ipv6_by_comm() {
    if live_nginx("reuseport_nginx_two_workers_ipv6_by_comm") {
        nginx_case(true, BY_COMM);
    }
}

#[test]
fn reuseport_nginx_two_workers_ipv4_all() {
    if live_nginx("reuseport_nginx_two_workers_ipv4_all") {
        nginx_case(false, ALL_HERE);
    }
}

#[test]
fn reuseport_nginx_two_workers_ipv6_all() {
    if live_nginx("reuseport_nginx_two_workers_ipv6_all") {
        nginx_case(true, ALL_HERE);
    }
}
