//! Real servers nobody here wrote, started BEFORE the recorder, recorded the
//! way users attach to them (issue 21, finding 1): `--comm NAME` and `-p PID`,
//! with the recorder in the server's network namespace or in its own.
//!
//! The matrix (program × filter × where the recorder runs):
//!
//! | program                     | client                          | filters      | recorder in       |
//! |-----------------------------|---------------------------------|--------------|-------------------|
//! | nginx (sendfile, keepalive) | curl, 3 files in 1 connection   | --comm, -p   | server's ns, other ns |
//! | redis-server                | redis-benchmark -c 4 + 1 connection open before the recorder | --comm, -p | server's ns, other ns |
//! | python3 -m http.server      | curl, 3 files, 3 connections    | --comm, -p   | server's ns, other ns |
//!
//! Oracles: tcpdump on the server namespace's loopback (every frame, bytes,
//! each direction's stream bytes from sequence numbers) and the clients' own
//! counts (curl's request and response sizes). Rules, per server connection
//! (docs/analyze.md, "Servers already running"):
//! - dev: every frame of the connection is in the trace, exactly: the
//!   connection's rows hold all but its handshake (SYN and handshake ACK in,
//!   SYN-ACK out), which the listener holds; a connection open before the
//!   recorder holds every frame.
//! - tcp in and app in: the bytes the client sent, by sequence number.
//! - recorder in the server's namespace (netfilter sees it): ip in = its
//!   frames' IP bytes; tcp out = the bytes the server sent.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use magnet_testkit::{live_or_skip, run_in_netns, tshark_fields, Capture, Need, Netns, Recorder};
use serde_json::Value;

mod common;
use common::{magnet, tmp, MAGNET};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Program {
    Nginx,
    Redis,
    Http,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Filter {
    Comm,
    Pid,
}

/// A server process in a namespace, killed on drop.
struct Server {
    child: Child,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM: nginx's master ends its workers (SIGKILL would orphan them).
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let t0 = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const FILE_BYTES: usize = 1 << 20;

fn start_server(ns: &Netns, program: Program, port: u16, name: &str) -> Server {
    let dir = tmp(name);
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..3 {
        let body: Vec<u8> = (0..FILE_BYTES + i * 1000)
            .map(|j| (j * 7 + i) as u8)
            .collect();
        std::fs::write(dir.join(format!("f{i}.bin")), body).unwrap();
    }
    let mut cmd = match program {
        Program::Nginx => {
            let conf = dir.join("nginx.conf");
            std::fs::write(
                &conf,
                format!(
                    "daemon off; master_process on; worker_processes 1; pid {d}/nginx.pid;\n\
                     error_log {d}/error.log;\n\
                     events {{ worker_connections 64; }}\n\
                     http {{ access_log off; sendfile on; keepalive_timeout 30;\n\
                       client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};\n\
                       uwsgi_temp_path {d}; scgi_temp_path {d};\n\
                       server {{ listen 127.0.0.1:{port}; root {d}; }} }}\n",
                    d = dir.display()
                ),
            )
            .unwrap();
            let mut c = ns.command("nginx");
            c.args(["-e", &format!("{}/error.log", dir.display()), "-c"])
                .arg(&conf);
            c
        }
        Program::Redis => {
            let mut c = ns.command("redis-server");
            c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--dir"])
                .arg(&dir);
            c
        }
        Program::Http => {
            let mut c = ns.command("python3");
            c.args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(&dir);
            c
        }
    };
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server");
    let server = Server { child, dir };
    // Ready when it accepts (a connection before the recording: not in it).
    let t0 = Instant::now();
    loop {
        let ok = run_in_netns(ns, move || TcpStream::connect(("127.0.0.1", port)).is_ok()).unwrap();
        if ok {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{program:?} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The readiness probe's connection ends before the capture starts.
    std::thread::sleep(Duration::from_millis(200));
    server
}

/// `magnet record -o PATH ARGS…`, returned once every hook is attached.
struct Recording {
    rec: Recorder,
    path: PathBuf,
}

fn record(ns: Option<&Netns>, path: PathBuf, args: &[String]) -> Recording {
    let mut cmd = magnet_testkit::command(ns, MAGNET);
    cmd.arg("record")
        .arg("-o")
        .arg(&path)
        .args(args)
        .stdout(Stdio::null());
    Recording {
        rec: Recorder::start(cmd),
        path,
    }
}

impl Recording {
    fn stop(self) -> PathBuf {
        self.rec.stop_after(Duration::from_millis(300)).success();
        self.path
    }
}

// ---- the wire -------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Frame {
    len: u64,
    l3: u64,
    sport: u16,
    dport: u16,
    payload: u64,
    seq: u64,
}

fn wire(pcap: &magnet_testkit::PcapFile) -> Vec<Frame> {
    assert_eq!(
        pcap.dropped_by_kernel.unwrap_or(0),
        0,
        "tcpdump dropped frames"
    );
    let rows = tshark_fields(
        pcap.path(),
        "tcp",
        &[
            "frame.len",
            "ip.len",
            "tcp.srcport",
            "tcp.dstport",
            "tcp.len",
            "tcp.seq_raw",
        ],
    )
    .expect("tshark");
    let num = |s: &str| {
        s.split(',')
            .next()
            .unwrap_or("")
            .parse::<u64>()
            .unwrap_or(0)
    };
    rows.iter()
        .filter(|r| r.len() == 6)
        .map(|r| Frame {
            len: num(&r[0]),
            l3: num(&r[1]),
            sport: num(&r[2]) as u16,
            dport: num(&r[3]) as u16,
            payload: num(&r[4]),
            seq: num(&r[5]),
        })
        .collect()
}

fn dir(frames: &[Frame], from: u16, to: u16) -> Vec<Frame> {
    frames
        .iter()
        .filter(|f| f.sport == from && f.dport == to)
        .cloned()
        .collect()
}

fn count(frames: &[Frame]) -> (u64, u64) {
    (frames.len() as u64, frames.iter().map(|f| f.len).sum())
}

/// Payload bytes of one direction by sequence number (each byte once).
fn stream_bytes(frames: &[Frame]) -> u64 {
    let data = frames.iter().filter(|f| f.payload > 0);
    let first = data.clone().map(|f| f.seq).min().unwrap_or(0);
    let end = data.map(|f| f.seq + f.payload).max().unwrap_or(0);
    end.saturating_sub(first)
}

// ---- what magnet says ------------------------------------------------------------

fn analyze(trace: &Path) -> Value {
    let out = magnet(&["analyze", trace.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "analyze: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn port_of(s: &Value) -> Option<u16> {
    s.as_str()?.rsplit(':').next()?.parse().ok()
}

/// The cookies of the sockets bound to `port` with no remote end in network
/// namespace `netns` (the listener), from the trace's SOCK records: the
/// analysis prints a listener with the 5-tuple of a connection it accepted
/// (finding 5). (`--comm nginx` also traces other nginx processes on the host.)
fn listeners(trace: &Path, port: u16, netns: u64) -> Vec<u64> {
    let out = magnet(&["parse", "--json", "--kind", "sock", trace.to_str().unwrap()]);
    assert!(out.status.success(), "parse");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["sport"] == port && v["dport"] == 0 && v["netns"] == netns)
        .filter_map(|v| v["cookie"].as_u64())
        .collect()
}

/// The server's connection with client port `remote`, or (0) its listener.
fn conn<'a>(j: &'a Value, local: u16, remote: u16, listeners: &[u64]) -> Option<&'a Value> {
    j["connections"].as_array().unwrap().iter().find(|c| {
        let l = c["cookie"].as_u64().is_some_and(|k| listeners.contains(&k));
        port_of(&c["local"]) == Some(local)
            && if remote == 0 {
                l
            } else {
                !l && port_of(&c["remote"]) == Some(remote)
            }
    })
}

fn row(c: Option<&Value>, layer: &str, d: &str) -> (u64, u64) {
    let Some(c) = c else { return (0, 0) };
    c["modulation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["layer"] == layer && r["dir"] == d)
        .map(|r| (r["units"].as_u64().unwrap(), r["bytes"].as_u64().unwrap()))
        .unwrap_or((0, 0))
}

fn add(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    (a.0 + b.0, a.1 + b.1)
}

// ---- one case ---------------------------------------------------------------------

struct Case {
    program: Program,
    filter: Filter,
    /// The recorder in the server's namespace (else in the test's own).
    same_ns: bool,
    port: u16,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{:?}/{:?}/{}",
            self.program,
            self.filter,
            if self.same_ns {
                "server-ns"
            } else {
                "other-ns"
            }
        )
    }
}

fn comm_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap()
        .trim_end()
        .to_string()
}

fn curl(ns: &Netns, port: u16) -> (u64, u64) {
    let mut c = ns.command("curl");
    c.args([
        "-s",
        "-o",
        "/dev/null",
        "-o",
        "/dev/null",
        "-o",
        "/dev/null",
    ])
    .args(["-w", "%{size_request} %{size_header} %{size_download}\\n"]);
    for i in 0..3 {
        c.arg(format!("http://127.0.0.1:{port}/f{i}.bin"));
    }
    let out = c.output().expect("curl");
    assert!(out.status.success(), "curl failed");
    let (mut sent, mut got) = (0, 0);
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let n: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
        sent += n[0];
        got += n[1] + n[2];
        assert!(n[2] >= FILE_BYTES as u64, "curl fetched a whole file: {l}");
    }
    (sent, got)
}

fn run_case(case: &Case) {
    let what = case.name();
    let ns = Netns::new().unwrap();
    let port = case.port;
    let server = start_server(&ns, case.program, port, &format!("srv-{port}"));
    let pid = server.child.id();
    let netns = std::fs::metadata(format!("/proc/{pid}/ns/net"))
        .unwrap()
        .ino();
    // A connection open before the recorder (redis: a client that stays).
    let early = (case.program == Program::Redis).then(|| {
        run_in_netns(&ns, move || {
            let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let local = s.local_addr().unwrap().port();
            (s, local)
        })
        .unwrap()
    });
    std::thread::sleep(Duration::from_millis(100));
    let mut args: Vec<String> = match case.filter {
        Filter::Comm => vec!["--comm".into(), comm_of(pid)],
        Filter::Pid => vec!["-p".into(), pid.to_string()],
    };
    args.extend(["--layers".into(), "app,tcp,ip,dev".into()]);
    let trace_path = tmp(&format!("servers-{port}.mgt"));
    let rec = record(case.same_ns.then_some(&ns), trace_path, &args);
    let cap = Capture::start(
        Some(&ns),
        "lo",
        &["-s", "200", "tcp", "port", &port.to_string()],
    )
    .unwrap();

    let mut client_counts = None;
    match case.program {
        Program::Nginx | Program::Http => client_counts = Some(curl(&ns, port)),
        Program::Redis => {
            let out = ns
                .command("redis-benchmark")
                .args(["-h", "127.0.0.1", "-p", &port.to_string()])
                .args(["-c", "4", "-n", "400", "-t", "set,get", "-q"])
                .output()
                .expect("redis-benchmark");
            assert!(out.status.success(), "{what}: redis-benchmark failed");
        }
    }
    let early_port = early.map(|(mut s, local)| {
        s.write_all(b"PING\r\n").unwrap();
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"+PONG\r\n");
        std::thread::sleep(Duration::from_millis(50));
        drop(s);
        local
    });
    std::thread::sleep(Duration::from_millis(200));
    let pcap = cap.stop().unwrap();
    let trace = rec.stop();
    drop(server);
    let frames = wire(&pcap);
    let j = analyze(&trace);

    let mut clients: Vec<u16> = frames
        .iter()
        .filter(|f| f.dport == port)
        .map(|f| f.sport)
        .collect();
    clients.sort_unstable();
    clients.dedup();
    assert!(!clients.is_empty(), "{what}: traffic on the wire");
    if let Some(e) = early_port {
        assert!(
            clients.contains(&e),
            "{what}: the early connection was used"
        );
    }
    let ls = listeners(&trace, port, netns);
    assert_eq!(
        ls.len(),
        1,
        "{what}: one listener announced (found at the start): {ls:?}"
    );
    let listener = conn(&j, port, 0, &ls);
    let (mut sum_in, mut sum_out) = (row(listener, "dev", "in"), row(listener, "dev", "out"));
    let (mut tcp_in_total, mut tcp_out_total) = (0, 0);
    for &cp in &clients {
        let c = conn(&j, port, cp, &ls);
        let inn = dir(&frames, cp, port);
        let out = dir(&frames, port, cp);
        // A connection made during the recording: its SYN and handshake
        // ACK (in) and SYN-ACK (out) are the listener's.
        let fresh = Some(cp) != early_port;
        let (hs_in, hs_out) = if fresh { (2, 1) } else { (0, 0) };
        assert!(
            c.is_some(),
            "{what}: server connection from client port {cp} is in the trace"
        );
        assert_eq!(
            row(c, "dev", "in"),
            count(&inn[hs_in..]),
            "{what}: client port {cp}: server dev in = every frame on the wire but the handshake's"
        );
        assert_eq!(
            row(c, "dev", "out"),
            count(&out[hs_out..]),
            "{what}: client port {cp}: server dev out = every frame but the SYN-ACK"
        );
        let sent_by_client = stream_bytes(&inn);
        assert_eq!(
            row(c, "tcp", "in").1,
            sent_by_client,
            "{what}: client port {cp}: tcp in bytes = the client's stream"
        );
        assert_eq!(
            row(c, "app", "in").1,
            sent_by_client,
            "{what}: client port {cp}: app in bytes = the client's stream"
        );
        tcp_in_total += row(c, "tcp", "in").1;
        tcp_out_total += row(c, "tcp", "out").1;
        if case.same_ns {
            let f = &inn[hs_in..];
            assert_eq!(
                row(c, "ip", "in"),
                (f.len() as u64, f.iter().map(|f| f.l3).sum()),
                "{what}: client port {cp}: ip in = the frames' IP bytes"
            );
            assert_eq!(
                row(c, "tcp", "out").1,
                stream_bytes(&out),
                "{what}: client port {cp}: tcp out bytes = the server's stream"
            );
        }
        sum_in = add(sum_in, row(c, "dev", "in"));
        sum_out = add(sum_out, row(c, "dev", "out"));
    }
    let all_in: Vec<Frame> = frames.iter().filter(|f| f.dport == port).cloned().collect();
    let all_out: Vec<Frame> = frames.iter().filter(|f| f.sport == port).cloned().collect();
    assert_eq!(
        sum_in,
        count(&all_in),
        "{what}: dev in = the wire, every frame"
    );
    assert_eq!(
        sum_out,
        count(&all_out),
        "{what}: dev out = the wire, every frame"
    );
    if let Some((sent, got)) = client_counts {
        assert_eq!(tcp_in_total, sent, "{what}: tcp in = curl's request bytes");
        if case.same_ns {
            assert_eq!(
                tcp_out_total, got,
                "{what}: tcp out = curl's response bytes"
            );
        }
    }
    eprintln!(
        "{what}: {} connections, wire in {:?} out {:?}, tcp in {tcp_in_total} B, tcp out {tcp_out_total} B",
        clients.len(),
        count(&all_in),
        count(&all_out)
    );
}

fn live(name: &str) -> bool {
    live_or_skip(
        name,
        &[
            Need::Btf,
            Need::Tool("tcpdump"),
            Need::Tool("tshark"),
            Need::Tool("curl"),
            Need::Tool("nginx"),
            Need::Tool("redis-server"),
            Need::Tool("redis-benchmark"),
            Need::Tool("python3"),
        ],
    )
}

fn matrix(program: Program, base_port: u16) {
    let mut port = base_port;
    for filter in [Filter::Comm, Filter::Pid] {
        for same_ns in [true, false] {
            run_case(&Case {
                program,
                filter,
                same_ns,
                port,
            });
            port += 1;
        }
    }
}

#[test]
fn servers_running_before_the_recorder_nginx() {
    if live("servers_running_before_the_recorder_nginx") {
        matrix(Program::Nginx, 7611);
    }
}

#[test]
fn servers_running_before_the_recorder_redis() {
    if live("servers_running_before_the_recorder_redis") {
        matrix(Program::Redis, 7621);
    }
}

#[test]
fn servers_running_before_the_recorder_python_http() {
    if live("servers_running_before_the_recorder_python_http") {
        matrix(Program::Http, 7631);
    }
}
