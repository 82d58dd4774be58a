//! Real programs on the workloads of issue 30, each started BEFORE the
//! recorder in a namespace of its own, its client in another joined by a veth
//! pair, with the report's own input:
//!
//! - haproxy in `mode tcp` with `option splice-auto` (and `splice-response`,
//!   which makes its splicing certain: on its own, splice-auto splices only a
//!   stream haproxy has judged fast, which it did not on this host) in front of
//!   nginx serving files of 3 MiB, fetched by curl; recorded with `--comm
//!   haproxy` and with `-p`. haproxy moves the response with splice(): out of
//!   the backend socket into a pipe, out of the pipe into the client socket.
//!   Oracles: strace of haproxy (every call, splices included, as in
//!   app_calls_live.rs) and curl's own counts (in mode tcp haproxy receives and
//!   sends exactly the request and response bytes curl counted).
//! - ab with more connections than client ports (the client namespace's port
//!   range narrowed to 50, `tcp_tw_reuse=1`) against nginx with 2 workers and
//!   `listen … reuseport`, keep-alive off (ab's HTTP/1.0), recorded with `--comm
//!   nginx`: nginx closes first, so each port's next SYN meets the previous
//!   connection in TIME_WAIT. Oracles: tcpdump on the server's veth end split
//!   into connections by tshark, and nginx's access log (worker pid and client
//!   port per request).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use magnet_testkit::{live_or_skip, wait_listening, Capture, Need, Netns, Recorder, Server, Veth};
use serde_json::Value;

mod common;
use common::strace::{
    magnet_calls, same_as_strace, split_args, strace_attach, strace_prefix, term,
};
use common::{bytes, capture_connections, enable_v6, magnet_ok, tmp, units, MAGNET};

/// haproxy's and nginx's ports with `-p`; with `--comm` 2 more (the cases may
/// run at once, and `--comm haproxy` sees the other case's haproxy too).
const HAPROXY_PORT: u16 = 7641;
const BACKEND_PORT: u16 = 7642;
const FILES: usize = 3;

/// strace's splice() calls on sockets: (out of a socket, into a socket).
fn strace_splices(prefix: &Path) -> (u64, u64) {
    let dir = prefix.parent().unwrap();
    let (mut from, mut into) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        for line in std::fs::read_to_string(e.unwrap().path()).unwrap().lines() {
            let Some(args) = line.strip_prefix("splice(") else {
                continue;
            };
            let args = split_args(args);
            from += u64::from(args[0].contains("<TCP"));
            into += u64::from(args.get(2).is_some_and(|a| a.contains("<TCP")));
        }
    }
    (from, into)
}

fn haproxy_case(by_comm: bool) {
    let shift = if by_comm { 2 } else { 0 };
    let (haproxy_port, backend_port) = (HAPROXY_PORT + shift, BACKEND_PORT + shift);
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    let front = format!("{}:{haproxy_port}", veth.b().addr());
    let dir = tmp(&format!("haproxy-{by_comm}"));
    let (www, hdir) = (dir.join("www"), dir.join("haproxy"));
    for d in [&www, &hdir] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    for i in 0..FILES {
        let body: Vec<u8> = (0..(3 << 20) + i * 1000)
            .map(|j| (j * 7 + i) as u8)
            .collect();
        std::fs::write(www.join(format!("f{i}.bin")), body).unwrap();
    }
    let mut cmd = magnet_testkit::nginx(&b, &www, &format!("127.0.0.1:{backend_port}"));
    cmd.stdout(Stdio::null());
    let nginx = Server::spawn(cmd, &www);
    let mut cmd = magnet_testkit::haproxy(
        &b,
        &hdir,
        &front,
        &format!("127.0.0.1:{backend_port}"),
        &["option splice-auto", "option splice-response"],
    );
    cmd.stdout(Stdio::null());
    let haproxy = Server::spawn(cmd, &hdir);
    wait_listening(&b, backend_port);
    wait_listening(&b, haproxy_port);
    // `ip netns exec` execs haproxy: the child is haproxy itself, one thread.
    let pid = haproxy.id();

    let trace = tmp(&format!("haproxy-{by_comm}.mgt"));
    let filter = if by_comm {
        ["--comm".to_string(), "haproxy".to_string()]
    } else {
        ["-p".to_string(), pid.to_string()]
    };
    let mut args = vec!["--layers".to_string(), "app,tcp,ip,dev".to_string()];
    args.extend(filter);
    let rec = Recorder::record(MAGNET, Some(&b), &trace, &args);
    let prefix = strace_prefix(&format!("haproxy-{by_comm}"));
    let mut st = strace_attach(&prefix, pid);

    let mut curl = a.command("curl");
    curl.args([
        "-sS",
        "-w",
        "%{size_download} %{size_header} %{size_request}\n",
    ]);
    for i in 0..FILES {
        curl.args(["-o", "/dev/null", &format!("http://{front}/f{i}.bin")]);
    }
    let out = curl.output().unwrap();
    assert!(out.status.success(), "curl: {out:?}");
    // curl's bytes: response bodies and headers received, requests sent.
    let counted: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(counted.len(), 3 * FILES, "curl -w: {out:?}");
    let body: u64 = counted.chunks(3).map(|c| c[0]).sum();
    assert_eq!(body, (FILES as u64) * (3 << 20) + 3000, "curl's bodies");
    let client_bytes: u64 = counted.iter().sum();
    let requests: u64 = counted.chunks(3).map(|c| c[2]).sum();
    std::thread::sleep(Duration::from_millis(300));
    term(&st);
    let _ = st.wait();
    rec.stop();
    drop(haproxy);
    drop(nginx);

    let (from, into) = strace_splices(&prefix);
    assert!(
        from > 0 && into > 0,
        "haproxy spliced out of a socket {from} times and into one {into} times: \
         the case lost its point"
    );
    let got = magnet_calls(&trace);
    for dir in ["send", "recv"] {
        let c = got.get(&(pid, dir)).copied().unwrap_or_default();
        assert_eq!(
            c.ret, client_bytes,
            "haproxy's {dir} bytes vs curl's requests, headers and bodies ({got:?})"
        );
    }
    // Per side, each way: the spliced bytes on the sockets they went through.
    let json: Value =
        serde_json::from_slice(&magnet_ok(["analyze", "--json", trace.to_str().unwrap()])).unwrap();
    let ends = |c: &Value, key: &str, port: u16| {
        c[key]
            .as_str()
            .is_some_and(|a| a.ends_with(&format!(":{port}")))
    };
    let sum = |pick: &dyn Fn(&Value) -> bool, layer: &str, dir: &str| -> u64 {
        json["connections"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["protocol"] == "tcp" && pick(c))
            .map(|c| bytes(c, layer, dir))
            .sum()
    };
    let client = |c: &Value| ends(c, "local", haproxy_port) && c["remote"].is_string();
    let backend = |c: &Value| ends(c, "remote", backend_port);
    let responses = client_bytes - requests;
    for layer in ["app", "tcp"] {
        assert_eq!(
            [
                sum(&client, layer, "in"),
                sum(&client, layer, "out"),
                sum(&backend, layer, "in"),
                sum(&backend, layer, "out"),
            ],
            [requests, responses, responses, requests],
            "{layer} bytes [client side in, out, backend side in, out] vs curl's \
             [requests, responses, responses, requests]"
        );
    }
    same_as_strace("haproxy", pid, &prefix, &trace);
    eprintln!("haproxy: {from} splices out of sockets, {into} into sockets");
    let _ = std::fs::remove_dir_all(&dir);
}

fn live_haproxy(name: &str) -> bool {
    live_or_skip(
        name,
        &[
            Need::Btf,
            Need::Tool("strace"),
            Need::Tool("nginx"),
            Need::Tool("haproxy"),
            Need::Tool("curl"),
        ],
    )
}

/// haproxy's splices out of its backend socket and into its client socket are
/// its app calls, call for call with strace, recorded by its name.
#[test]
fn haproxy_splice_by_comm_matches_strace() {
    if live_haproxy("haproxy_splice_by_comm_matches_strace") {
        haproxy_case(true);
    }
}

/// The same, recorded by haproxy's pid.
#[test]
fn haproxy_splice_by_pid_matches_strace() {
    if live_haproxy("haproxy_splice_by_pid_matches_strace") {
        haproxy_case(false);
    }
}

/// nginx's port for IPv4, the next for IPv6 (the cases may run at once).
const NGINX_PORT: u16 = 7645;
/// ab's requests, each on a connection of its own, 8 at a time, from 50 ports.
const REQUESTS: usize = 1500;

/// nginx's access log: requests per worker pid, and per client port.
fn access_log(dir: &Path) -> (BTreeMap<u64, u64>, BTreeMap<u16, usize>) {
    let log = dir.join("access.log");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    // nginx writes a request's line as the request ends.
    let t0 = std::time::Instant::now();
    while read().lines().count() < REQUESTS && t0.elapsed().as_secs() < 10 {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut workers, mut ports) = (BTreeMap::new(), BTreeMap::new());
    for line in read().lines() {
        let mut w = line.split_whitespace();
        let mut next = || w.next().and_then(|x| x.parse::<u64>().ok());
        let (Some(pid), Some(port)) = (next(), next()) else {
            panic!("access log line not understood: {line}");
        };
        *workers.entry(pid).or_default() += 1;
        *ports.entry(port as u16).or_default() += 1;
    }
    (workers, ports)
}

fn ab_case(v6: bool) {
    let nginx_port = NGINX_PORT + u16::from(v6);
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    let (url, listen) = if v6 {
        enable_v6(&a, veth.a().name(), "fd21:c::1/64");
        enable_v6(&b, veth.b().name(), "fd21:c::2/64");
        (
            format!("http://[fd21:c::2]:{nginx_port}/index.html"),
            format!("[fd21:c::2]:{nginx_port}"),
        )
    } else {
        let s = veth.b().addr().to_string();
        (
            format!("http://{s}:{nginx_port}/index.html"),
            format!("{s}:{nginx_port}"),
        )
    };
    // The report's client: 50 ports (IPv6 takes its range from the same key).
    a.sysctl("net/ipv4/ip_local_port_range", "50000 50049")
        .unwrap();
    a.sysctl("net/ipv4/tcp_tw_reuse", "1").unwrap();
    let dir = tmp(&format!("ab-nginx-{v6}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), vec![b'n'; 1000]).unwrap();
    let mut cmd = magnet_testkit::nginx_workers(&b, &dir, &format!("{listen} reuseport"), 2, true);
    cmd.stdout(Stdio::null());
    let nginx = Server::spawn(cmd, &dir);
    wait_listening(&b, nginx_port);
    // Headers are enough (tcp.len comes from the IP header), and short
    // frames keep 18,000 of them in 0.3 s within tcpdump's ring: in
    // immediate mode each slot is as large as the snap length.
    let cap = Capture::start(Some(&b), veth.b().name(), &["-s", "128"]).unwrap();
    let trace = tmp(&format!("ab-nginx-{v6}.mgt"));
    let rec = Recorder::record(
        MAGNET,
        Some(&b),
        &trace,
        &["--layers", "app,tcp,ip,dev", "--comm", "nginx"],
    );
    let out = a
        .command("ab")
        .args(["-q", "-n", &REQUESTS.to_string(), "-c", "8", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ab: {out:?}");
    assert!(
        text.contains(&format!("Complete requests:      {REQUESTS}"))
            && text.contains("Failed requests:        0"),
        "ab: {text}"
    );
    let (per_worker, log_ports) = access_log(&dir);
    let ended = rec.stop();
    let pcap = cap.stop().unwrap();
    assert_eq!(pcap.dropped_by_kernel, Some(0), "tcpdump's drops");
    drop(nginx);
    assert_eq!(log_ports.values().sum::<usize>(), REQUESTS, "access log");
    assert_eq!(per_worker.len(), 2, "both workers served: {per_worker:?}");
    assert!(
        log_ports.len() <= 50,
        "at most 50 client ports: {log_ports:?}"
    );

    // The capture's connections per client port, in order.
    let mut want: BTreeMap<u16, Vec<(u64, u64)>> = BTreeMap::new();
    for c in capture_connections(pcap.path(), nginx_port) {
        want.entry(c.client_port)
            .or_default()
            .push((c.from_client, c.from_server));
    }
    let want_counts: BTreeMap<u16, usize> = want.iter().map(|(p, v)| (*p, v.len())).collect();
    // ab opens a few connections more than it needs (at most one per
    // concurrent slot, closed unused as the last request ends): nginx logs
    // no request for them.
    let captured = want_counts.values().sum::<usize>();
    let unused = captured.saturating_sub(REQUESTS);
    assert!(
        (REQUESTS..REQUESTS + 8).contains(&captured)
            && log_ports.iter().all(|(p, n)| want_counts.get(p) >= Some(n)),
        "capture {want_counts:?} vs access log {log_ports:?}"
    );

    let trace = ended.trace.expect("trace");
    let json: Value =
        serde_json::from_slice(&magnet_ok(["analyze", "--json", trace.to_str().unwrap()])).unwrap();
    let port_of = |s: Option<&str>| s.and_then(|l| l.rsplit(':').next()?.parse::<u16>().ok());
    let ours: Vec<&Value> = json["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["protocol"] == "tcp" && port_of(c["local"].as_str()) == Some(nginx_port))
        .collect();
    let (accepted, listeners): (Vec<&Value>, Vec<&Value>) =
        ours.iter().partition(|c| c["remote"].is_string());
    assert_eq!(
        listeners.len(),
        2,
        "two listeners have no peer; every accepted connection names its own \
         ({} of {} without)",
        listeners.len(),
        ours.len()
    );
    // Each listener's handshakes (in 2, out 1 each, at ip and dev): one
    // worker's requests, and any of ab's unused connections it took.
    let handshakes: Vec<u64> = listeners
        .iter()
        .map(|l| {
            let h = units(l, "ip", "out");
            let got = [
                units(l, "ip", "in"),
                h,
                units(l, "dev", "in"),
                units(l, "dev", "out"),
            ];
            assert_eq!(
                got,
                [2 * h, h, 2 * h, h],
                "[ip in, ip out, dev in, dev out]"
            );
            h
        })
        .collect();
    let requests: Vec<u64> = per_worker.values().copied().collect();
    let fits = |w: [usize; 2]| {
        (0..2).all(|i| handshakes[i] >= requests[w[i]])
            && handshakes.iter().sum::<u64>() == (REQUESTS + unused) as u64
    };
    assert!(
        fits([0, 1]) || fits([1, 0]),
        "handshakes per listener {handshakes:?} vs requests per worker {per_worker:?} \
         and {unused} unused connections"
    );
    // Per 4-tuple: as many connections as the capture, each with its frames
    // after the handshake.
    let mut got: BTreeMap<u16, Vec<(f64, u64, u64)>> = BTreeMap::new();
    for c in &accepted {
        got.entry(port_of(c["remote"].as_str()).expect("a peer's port"))
            .or_default()
            .push((
                c["first_s"].as_f64().unwrap(),
                units(c, "ip", "in"),
                units(c, "ip", "out"),
            ));
    }
    let got_counts: BTreeMap<u16, usize> = got.iter().map(|(p, v)| (*p, v.len())).collect();
    assert_eq!(
        got_counts, want_counts,
        "connections per client port: magnet vs the capture"
    );
    for (port, conns) in &mut got {
        conns.sort_by(|x, y| x.0.total_cmp(&y.0));
        let frames: Vec<(u64, u64)> = conns.iter().map(|c| (c.1, c.2)).collect();
        assert_eq!(
            &frames, &want[port],
            "port {port}: ip (in, out) per connection after the handshake vs the capture"
        );
    }
    eprintln!(
        "ab: {REQUESTS} connections over {} ports, per worker {per_worker:?}",
        want.len()
    );
    let _ = std::fs::remove_file(&trace);
}

fn live_ab(name: &str) -> bool {
    live_or_skip(
        name,
        &[
            Need::Btf,
            Need::Tool("tcpdump"),
            Need::Tool("tshark"),
            Need::Tool("nginx"),
            Need::Tool("ab"),
        ],
    )
}

/// The report's input: every accepted connection names its peer, each 4-tuple
/// has as many connections as the capture, each listener its worker's
/// handshakes.
#[test]
fn ab_reused_ports_nginx_reuseport_ipv4() {
    if live_ab("ab_reused_ports_nginx_reuseport_ipv4") {
        ab_case(false);
    }
}

#[test]
fn ab_reused_ports_nginx_reuseport_ipv6() {
    if live_ab("ab_reused_ports_nginx_reuseport_ipv6") {
        ab_case(true);
    }
}
