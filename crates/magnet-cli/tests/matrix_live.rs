//! The matrix of real programs attached the way users attach, kept as a test so
//! that what the matrix once found stays fixed: program × filter × where the recorder runs × offloads, each
//! server started BEFORE the recorder, in a namespace of its own, its clients in
//! another joined by a veth pair.
//!
//! - programs: nginx (sendfile, keep-alive) with curl, redis-server with
//!   redis-benchmark and a connection established before the recorder (used
//!   after it starts), sshd with scp, iperf3 `-P 4`, `-Z -R` (the server sends with
//!   sendfile), `-u -l 8000` (every datagram 6 IP fragments), python3 http.server
//!   with curl over IPv6, and a curl download cut by `kill -9` of the server and
//!   by `ss -K` of its socket;
//! - filters: `--comm NAME`, `-p PID` (the server's), `--all --port PORT`,
//!   `--all` (no task or address filter: each socket call recorded whole at
//!   its socket's send or recv where the kernel allows);
//! - recorder in the server's or the client's namespace;
//! - offloads as the veth comes (TSO/GSO/GRO on) or all off on both ends.
//!
//! Oracles: tcpdump on both veth ends (every frame, its bytes, each direction's
//! stream bytes by sequence number), strace on the server (its send and receive
//! calls per connection and their results), and the programs' own counts. Every
//! check, per server connection, and its tolerance are in docs/analyze.md,
//! "The matrix of real programs".
//!
//! `matrix_core` runs a slice in CI (every cell must pass); `matrix_whole` (ignored,
//! `scripts/matrix.sh`) runs every cell, or those whose name contains
//! `MAGNET_MATRIX`, and prints one table row per check: oracle against magnet.
//! A check known to fail until an open bug is fixed is marked with the number of
//! the matrix's finding (as the comments below cite them); it is still a failure.

use std::collections::HashMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use magnet_testkit::{
    live_or_skip, run_in_netns, wire_frames, BlindSpot, Capture, Frame, Need, Netns, Recorder,
    Server, Side, Veth,
};
use serde_json::Value;

mod common;
use common::{magnet, tmp, MAGNET};

const WORK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracle_work.py");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    /// nginx, sendfile on, curl fetching 3 files of ~1 MiB on one connection.
    Nginx,
    /// redis-server, redis-benchmark -c 4 -n 400 -t set,get, and a PING on a
    /// connection open before the recorder.
    Redis,
    /// sshd, scp uploading 1 MiB.
    Sshd,
    /// iperf3 -s, client -P 4 -n 2M (the server receives).
    IperfP4,
    /// iperf3 -s, client -Z -R -n 4M (the server sends with sendfile).
    IperfZ,
    /// iperf3 -s, client -u -l 8000 -b 40M -n 2M (6 fragments per datagram).
    IperfUdp,
    /// python3 -m http.server on IPv6, curl -6, 3 files.
    HttpV6,
    /// python3 -m http.server, curl --limit-rate downloading 16 MiB; the server
    /// is killed (SIGKILL) half-way.
    Kill9,
    /// The same, the server's connection destroyed by `ss -K` half-way (`Netns::abort_tcp`:
    /// a disconnect of the same socket where the kernel cannot destroy sockets).
    SsK,
    /// oracle_work.py: the client sends 100 B, `shutdown(SHUT_WR)`, reads the
    /// server's 1 MiB to EOF (finding 4: its `tcp in` was 1 B high).
    HalfClose,
}

const PROGRAMS: [Program; 10] = [
    Program::Nginx,
    Program::Redis,
    Program::Sshd,
    Program::IperfP4,
    Program::IperfZ,
    Program::IperfUdp,
    Program::HttpV6,
    Program::Kill9,
    Program::SsK,
    Program::HalfClose,
];

impl Program {
    fn name(self) -> &'static str {
        match self {
            Program::Nginx => "nginx",
            Program::Redis => "redis",
            Program::Sshd => "sshd-scp",
            Program::IperfP4 => "iperf3-P4",
            Program::IperfZ => "iperf3-Z",
            Program::IperfUdp => "iperf3-udp",
            Program::HttpV6 => "http-v6",
            Program::Kill9 => "kill9",
            Program::SsK => "ss-K",
            Program::HalfClose => "halfclose",
        }
    }

    fn v6(self) -> bool {
        self == Program::HttpV6
    }

    /// The transfer is cut: the server did not read or write to the end.
    fn cut(self) -> bool {
        matches!(self, Program::Kill9 | Program::SsK)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Filter {
    Comm,
    Pid,
    AllPort,
    All,
}

impl Filter {
    fn name(self) -> &'static str {
        match self {
            Filter::Comm => "comm",
            Filter::Pid => "pid",
            Filter::AllPort => "all-port",
            Filter::All => "all",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Cell {
    program: Program,
    filter: Filter,
    /// The recorder in the server's namespace (else the client's).
    in_server: bool,
    offloads: bool,
}

impl Cell {
    fn name(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.program.name(),
            self.filter.name(),
            if self.in_server {
                "server-ns"
            } else {
                "client-ns"
            },
            if self.offloads { "offl-on" } else { "offl-off" }
        )
    }
}

fn every_cell() -> Vec<Cell> {
    let mut v = Vec::new();
    for program in PROGRAMS {
        for filter in [Filter::Comm, Filter::Pid, Filter::AllPort, Filter::All] {
            for in_server in [true, false] {
                for offloads in [true, false] {
                    v.push(Cell {
                        program,
                        filter,
                        in_server,
                        offloads,
                    });
                }
            }
        }
    }
    v
}

// ---- the hosts and the server ---------------------------------------------------

/// The client's and server's namespaces, joined by a veth pair.
struct Hosts {
    client: Netns,
    server: Netns,
    link: Veth,
}

const V6_CLIENT: &str = "fd07:7::1";
const V6_SERVER: &str = "fd07:7::2";

impl Hosts {
    fn new(v6: bool, offloads: bool) -> Hosts {
        let client = Netns::new().unwrap();
        let server = Netns::new().unwrap();
        let link = Veth::pair(Side::Ns(&client), Side::Ns(&server)).unwrap();
        if !offloads {
            link.a().offloads_off().unwrap();
            link.b().offloads_off().unwrap();
        }
        if v6 {
            for (ns, end, addr) in [
                (&client, link.a(), V6_CLIENT),
                (&server, link.b(), V6_SERVER),
            ] {
                ns.sysctl("net/ipv6/conf/all/disable_ipv6", "0").unwrap();
                ns.sysctl(&format!("net/ipv6/conf/{}/disable_ipv6", end.name()), "0")
                    .unwrap();
                let ok = ns
                    .command("ip")
                    .args(["addr", "add", &format!("{addr}/64"), "dev", end.name()])
                    .arg("nodad")
                    .status()
                    .unwrap();
                assert!(ok.success(), "ip addr add {addr}");
            }
        }
        Hosts {
            client,
            server,
            link,
        }
    }

    fn server_addr(&self, v6: bool) -> String {
        if v6 {
            V6_SERVER.to_string()
        } else {
            self.link.b().addr().to_string()
        }
    }
}

fn write_file(path: &Path, len: usize, salt: usize) {
    let body: Vec<u8> = (0..len).map(|j| (j * 7 + salt) as u8).collect();
    std::fs::write(path, body).unwrap();
}

const FILE_BYTES: usize = 1 << 20;
const CUT_FILE_BYTES: usize = 16 << 20;

fn start_server(h: &Hosts, program: Program, port: u16, dir: &Path) -> Server {
    std::fs::create_dir_all(dir).unwrap();
    let addr = h.server_addr(program.v6());
    let d = dir.display().to_string();
    let ns = &h.server;
    let mut cmd = match program {
        Program::Nginx => {
            for i in 0..3 {
                write_file(&dir.join(format!("f{i}.bin")), FILE_BYTES + i * 1000, i);
            }
            magnet_testkit::nginx(ns, dir, &format!("{addr}:{port}"))
        }
        Program::Redis => {
            let mut c = ns.command("redis-server");
            c.args(["--port", &port.to_string(), "--bind", &addr])
                .args(["--protected-mode", "no", "--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir);
            c
        }
        Program::Sshd => {
            let keygen = |f: &str| {
                let ok = Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                    .arg(dir.join(f))
                    .status()
                    .unwrap();
                assert!(ok.success(), "ssh-keygen");
            };
            keygen("host");
            keygen("id");
            std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
            std::fs::create_dir_all("/run/sshd").unwrap();
            let conf = dir.join("sshd_config");
            std::fs::write(
                &conf,
                format!(
                    "Port {port}\nListenAddress {addr}\nHostKey {d}/host\n\
                     AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                     StrictModes no\nPidFile {d}/sshd.pid\nSubsystem sftp internal-sftp\n"
                ),
            )
            .unwrap();
            write_file(&dir.join("up.bin"), FILE_BYTES, 3);
            let mut c = ns.command("/usr/sbin/sshd");
            c.args(["-D", "-e", "-f"]).arg(&conf);
            c
        }
        Program::IperfP4 | Program::IperfZ | Program::IperfUdp => {
            let mut c = ns.command("iperf3");
            c.args(["-s", "-p", &port.to_string(), "-B", &addr]);
            c
        }
        Program::HalfClose => {
            let mut c = ns.command("python3");
            c.arg(WORK)
                .args(["answer", &addr, &port.to_string(), "16", "65536"]);
            c
        }
        Program::HttpV6 | Program::Kill9 | Program::SsK => {
            if program.cut() {
                write_file(&dir.join("big.bin"), CUT_FILE_BYTES, 5);
            } else {
                for i in 0..3 {
                    write_file(&dir.join(format!("f{i}.bin")), FILE_BYTES + i * 1000, i);
                }
            }
            let mut c = ns.command("python3");
            c.args(["-m", "http.server", &port.to_string(), "--bind", &addr])
                .current_dir(dir);
            c
        }
    };
    let one_shot = program == Program::HalfClose;
    cmd.stdout(if one_shot {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut server = Server::spawn(cmd, dir);
    if one_shot {
        // It serves one connection: ready when it says so, no probe.
        use std::io::BufRead;
        let mut line = String::new();
        let mut out = std::io::BufReader::new(server.child.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        assert!(line.contains("ready"), "{program:?} did not start: {line}");
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        return server;
    }
    // Ready when it accepts (the probe is before the recording and the capture).
    let t0 = Instant::now();
    let target: std::net::SocketAddr = if program.v6() {
        format!("[{addr}]:{port}")
    } else {
        format!("{addr}:{port}")
    }
    .parse()
    .unwrap();
    while !run_in_netns(&h.client, move || TcpStream::connect(target).is_ok()).unwrap() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{program:?} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    server
}

/// A TCP connection to the server from the client's namespace, open before
/// anything watches the server (the recorder must know it from its first
/// packet, finding 1), and its local port.
fn early_connection(h: &Hosts, port: u16) -> (TcpStream, u16) {
    let addr = h.server_addr(false);
    run_in_netns(&h.client, move || {
        let s = TcpStream::connect((addr.as_str(), port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let local = s.local_addr().unwrap().port();
        (s, local)
    })
    .unwrap()
}

/// One redis PING on the early connection, then it is closed; its port.
fn ping((mut s, local): (TcpStream, u16)) -> u16 {
    use std::io::{Read, Write};
    s.write_all(b"PING\r\n").unwrap();
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"+PONG\r\n");
    std::thread::sleep(Duration::from_millis(50));
    local
}

/// The server's processes: its own pid and every descendant.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let p = all[i];
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")) {
            all.extend(s.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
        i += 1;
    }
    all
}

fn comm_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap()
        .trim_end()
        .to_string()
}

// ---- strace: the server's calls -------------------------------------------------

/// strace attached to every process of the server (and what they fork).
struct Strace {
    child: Child,
    out: PathBuf,
}

/// The server's calls on one connection (by the peer's port), one direction.
#[derive(Clone, Copy, Debug, Default)]
struct Calls {
    /// Calls that moved data (result > 0).
    ok: u64,
    bytes: u64,
    /// Calls that failed (result < 0), EAGAIN included.
    failed: u64,
    /// A call the app layer counts per kernel send, not per call, until finding
    /// 6 is fixed: sendfile, splice, writev, readv.
    vectored: bool,
    /// Calls that never returned (the process was killed in them), and the
    /// bytes they asked for.
    unfinished: u64,
    unfinished_asked: u64,
}

const SENDS: [&str; 7] = [
    "write", "writev", "sendto", "sendmsg", "sendmmsg", "sendfile", "splice",
];
const RECVS: [&str; 5] = ["read", "readv", "recvfrom", "recvmsg", "recvmmsg"];

impl Strace {
    /// strace runs in the server's namespace: `-yy` names a socket's addresses
    /// through sock_diag in strace's own namespace.
    fn attach(ns: &Netns, pids: &[u32], out: PathBuf) -> Strace {
        let mut c = ns.command("strace");
        c.args(["-f", "-qq", "-yy", "-e", "signal=none", "-e"])
            .arg(format!("trace={},{}", SENDS.join(","), RECVS.join(",")))
            .arg("-o")
            .arg(&out);
        for p in pids {
            c.arg("-p").arg(p.to_string());
        }
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("strace");
        // strace writes nothing before it is attached: wait for the tracees'
        // TracerPid instead.
        let t0 = Instant::now();
        while !pids.iter().all(|p| {
            std::fs::read_to_string(format!("/proc/{p}/status"))
                .map(|s| {
                    s.lines()
                        .any(|l| l.starts_with("TracerPid:") && l.trim_end() != "TracerPid:\t0")
                })
                .unwrap_or(true)
        }) {
            assert!(t0.elapsed() < Duration::from_secs(10), "strace attached");
            std::thread::sleep(Duration::from_millis(20));
        }
        Strace { child, out }
    }

    /// Detaches and returns (sends, receives) per peer port.
    fn finish(mut self) -> HashMap<u16, (Calls, Calls)> {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let _ = self.child.wait();
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        if std::env::var_os("MAGNET_MATRIX_KEEP").is_none() {
            let _ = std::fs::remove_file(&self.out);
        }
        parse_strace(&text)
    }
}

/// Reads `strace -f -yy` output: per line `PID NAME(FD<TCP:[L->R]>, …) = RESULT`,
/// with `<unfinished ...>` / `<... NAME resumed>` pairs joined by pid. A call
/// still unfinished at the end (its process was killed in it) counts in
/// `unfinished`, with what it asked.
fn parse_strace(text: &str) -> HashMap<u16, (Calls, Calls)> {
    let mut pending: HashMap<String, String> = HashMap::new();
    let mut by_port: HashMap<u16, (Calls, Calls)> = HashMap::new();
    for line in text.lines() {
        let (pid, rest) = line.split_once(' ').unwrap_or(("", line));
        let rest = rest.trim_start();
        let full = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
            continue;
        } else if rest.starts_with("<... ") {
            let Some(head) = pending.remove(pid) else {
                continue;
            };
            let tail = rest.split_once("resumed>").map(|x| x.1).unwrap_or("");
            format!("{head}{tail}")
        } else {
            rest.to_string()
        };
        let Some((port, send, name, args)) = call_of(&full) else {
            continue;
        };
        // `) = 72`, padded after a resumed call: `>)      = 72`.
        let Some((call, result)) = full.rsplit_once(" = ") else {
            continue;
        };
        if !call.trim_end().ends_with(')') {
            continue;
        }
        let e = by_port.entry(port).or_default();
        let c = if send { &mut e.0 } else { &mut e.1 };
        c.vectored |= matches!(name, "sendfile" | "splice" | "writev" | "readv");
        if result.starts_with('?') {
            // Killed in the call: no result.
            c.unfinished += 1;
            c.unfinished_asked += asked(args).unwrap_or(u64::MAX / 4);
            continue;
        }
        let r: i64 = result
            .split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        if r > 0 {
            c.ok += 1;
            c.bytes += r as u64;
        } else if r < 0 {
            c.failed += 1;
        }
    }
    for head in pending.values() {
        let Some((port, send, _, args)) = call_of(head) else {
            continue;
        };
        let e = by_port.entry(port).or_default();
        let c = if send { &mut e.0 } else { &mut e.1 };
        c.unfinished += 1;
        c.unfinished_asked += asked(args).unwrap_or(u64::MAX / 4);
    }
    by_port
}

/// A send or receive call on a TCP or UDP socket: (peer port, is a send, the
/// call's name, its arguments after the socket).
fn call_of(full: &str) -> Option<(u16, bool, &str, &str)> {
    let (name, args) = full.split_once('(')?;
    let send = SENDS.contains(&name);
    if !send && !RECVS.contains(&name) {
        return None;
    }
    // The socket: the first argument's `<TCP:[local->remote]>`.
    let (first, rest) = args.split_once(">, ").unwrap_or((args, ""));
    let sock = first.split_once(":[")?.1;
    let remote = sock.split_once("->")?.1;
    let port = remote
        .trim_end_matches(']')
        .rsplit(':')
        .next()?
        .trim_end_matches(']')
        .parse::<u16>()
        .ok()?;
    Some((port, send, name, rest))
}

/// The size a `write`/`send`/`sendto`/`read`/`recv`/`recvfrom` asked: the
/// argument after the buffer (a quoted string, maybe cut with `...`).
fn asked(args: &str) -> Option<u64> {
    let b = args.as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    let rest = args.get(i + 1..)?.trim_start_matches("...");
    rest.strip_prefix(", ")?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

// ---- the client ------------------------------------------------------------------

/// What the client program says it moved: (sent, received) bytes, when it says.
type Counts = Option<(u64, u64)>;

fn curl_files(h: &Hosts, url_base: &str, v6: bool) -> Counts {
    let mut c = h.client.command("curl");
    c.arg("-s");
    if v6 {
        c.arg("-6");
    }
    for _ in 0..3 {
        c.args(["-o", "/dev/null"]);
    }
    c.args(["-w", "%{size_request} %{size_header} %{size_download}\\n"]);
    for i in 0..3 {
        c.arg(format!("{url_base}/f{i}.bin"));
    }
    let out = c.output().expect("curl");
    assert!(out.status.success(), "curl failed: {out:?}");
    let (mut sent, mut got) = (0, 0);
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let n: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
        sent += n[0];
        got += n[1] + n[2];
        assert!(n[2] >= FILE_BYTES as u64, "curl fetched a whole file: {l}");
    }
    Some((sent, got))
}

fn iperf(h: &Hosts, addr: &str, port: u16, args: &[&str]) -> Counts {
    let out = h
        .client
        .command("iperf3")
        .args(["-c", addr, "-p", &port.to_string(), "-J"])
        .args(args)
        .output()
        .expect("iperf3");
    assert!(
        out.status.success(),
        "iperf3 {args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    None
}

fn run_client(h: &Hosts, program: Program, port: u16, server: &mut Server) -> Counts {
    let addr = h.server_addr(program.v6());
    let p = port.to_string();
    match program {
        Program::Nginx => curl_files(h, &format!("http://{addr}:{port}"), false),
        Program::HttpV6 => curl_files(h, &format!("http://[{addr}]:{port}"), true),
        Program::Redis => {
            let out = h
                .client
                .command("redis-benchmark")
                .args(["-h", &addr, "-p", &p])
                .args(["-c", "4", "-n", "400", "-t", "set,get", "-q"])
                .output()
                .expect("redis-benchmark");
            assert!(out.status.success(), "redis-benchmark failed");
            None
        }
        Program::Sshd => {
            let d = server.dir.display().to_string();
            let out = h
                .client
                .command("scp")
                .args(["-q", "-i", &format!("{d}/id"), "-P", &p])
                .args(["-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes"])
                .args(["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"])
                .arg(format!("{d}/up.bin"))
                .arg(format!("root@{addr}:{d}/copy.bin"))
                .output()
                .expect("scp");
            assert!(out.status.success(), "scp: {out:?}");
            let copied = std::fs::metadata(server.dir.join("copy.bin"))
                .unwrap()
                .len();
            assert_eq!(copied, FILE_BYTES as u64, "scp copied the file");
            None
        }
        Program::IperfP4 => iperf(h, &addr, port, &["-P", "4", "-n", "2M"]),
        Program::IperfZ => iperf(h, &addr, port, &["-Z", "-R", "-n", "4M"]),
        Program::IperfUdp => iperf(
            h,
            &addr,
            port,
            &["-u", "-l", "8000", "-b", "40M", "-n", "2M"],
        ),
        Program::HalfClose => {
            let out = h
                .client
                .command("python3")
                .arg(WORK)
                .args(["halfclose", &addr, &p, "100"])
                .output()
                .expect("oracle_work.py halfclose");
            assert!(out.status.success(), "halfclose: {out:?}");
            let _ = server.child.wait();
            Some((100, 16 * 65536))
        }
        Program::Kill9 | Program::SsK => {
            let curl = h
                .client
                .command("curl")
                .args(["-s", "-o", "/dev/null", "--limit-rate", "8M"])
                .arg(format!("http://{addr}:{port}/big.bin"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("curl");
            std::thread::sleep(Duration::from_millis(700));
            if program == Program::Kill9 {
                let _ = server.child.kill();
                let _ = server.child.wait();
            } else {
                h.server
                    .abort_tcp(&["state", "established", "sport", "=", &format!(":{port}")])
                    .expect("ss -K");
            }
            let out = curl.wait_with_output().unwrap();
            assert!(!out.status.success(), "the download was cut");
            None
        }
    }
}

// ---- what magnet says ------------------------------------------------------------

fn port_of(s: &Value) -> Option<u16> {
    s.as_str()?.rsplit(':').next()?.parse().ok()
}

/// The server's connection with peer port `remote` (0: the listener).
fn conn(j: &Value, local: u16, remote: u16, udp: bool) -> Option<&Value> {
    let proto = if udp { "udp" } else { "tcp" };
    j["connections"].as_array()?.iter().find(|c| {
        c["protocol"] == proto
            && port_of(&c["local"]) == Some(local)
            && if remote == 0 {
                port_of(&c["remote"]).unwrap_or(0) == 0
            } else {
                port_of(&c["remote"]) == Some(remote)
            }
    })
}

fn row(c: Option<&Value>, layer: &str, d: &str) -> (u64, u64) {
    let Some(c) = c else { return (0, 0) };
    c["modulation"]
        .as_array()
        .and_then(|m| m.iter().find(|r| r["layer"] == layer && r["dir"] == d))
        .map(|r| {
            (
                r["units"].as_u64().unwrap_or(0),
                r["bytes"].as_u64().unwrap_or(0),
            )
        })
        .unwrap_or((0, 0))
}

// ---- the checks -------------------------------------------------------------------

struct Check {
    what: String,
    oracle: String,
    magnet: String,
    ok: bool,
    known: Option<u8>,
}

struct Outcome {
    cell: String,
    checks: Vec<Check>,
    note: String,
    /// Network tracepoints on the VM's blind threads meanwhile (0: a clean
    /// run; `None`: unknown).
    blind: Option<usize>,
}

impl Outcome {
    fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.ok)
    }
}

fn count(frames: &[&Frame]) -> (u64, u64) {
    (frames.len() as u64, frames.iter().map(|f| f.len).sum())
}

/// Sequence numbers of one direction relative to its first frame (wraps
/// included: a random initial sequence number may sit near 2^32).
fn rel_seqs(frames: &[&Frame]) -> Vec<(u64, u64)> {
    let base = frames.first().map(|f| f.seq as u32).unwrap_or(0);
    frames
        .iter()
        .map(|f| (u64::from((f.seq as u32).wrapping_sub(base)), f.tcp_payload))
        .collect()
}

/// Payload bytes of one direction by sequence number (each byte once).
fn stream_bytes(frames: &[&Frame]) -> u64 {
    let s = rel_seqs(frames);
    let data = s.iter().filter(|(_, p)| *p > 0);
    let first = data.clone().map(|(q, _)| *q).min().unwrap_or(0);
    let end = data.map(|(q, p)| q + p).max().unwrap_or(0);
    end.saturating_sub(first)
}

/// TCP units of one direction as magnet defines them (docs/analyze.md): a
/// frame that carries sequence space not seen before at this point. That is
/// data past the highest end so far; data filling a hole below it (a gap of
/// more than 40 B, what options can change a header by: reordered on the
/// way, two CPUs' backlogs over veth, or lost before this point); or a frame
/// that starts inside the last one and reaches past its end. A retransmission
/// or a probe (data seen before) is none. Frames seen at IP, one per packet.
fn new_data_frames(frames: &[&Frame]) -> u64 {
    let mut last: Option<(u64, u64)> = None; // (start, highest end)
    let mut holes: Vec<(u64, u64)> = Vec::new();
    let mut n = 0;
    for (q, p) in rel_seqs(frames) {
        if p == 0 {
            continue;
        }
        let end = q + p;
        let new = match last {
            None => true,
            Some((_, e)) if q >= e => {
                if q > e + 40 {
                    holes.push((e, q));
                }
                true
            }
            Some((s, e)) => {
                let mut filled = false;
                holes = holes
                    .into_iter()
                    .flat_map(|(hs, he)| {
                        let (a, b) = (q.max(hs), end.min(he));
                        if a >= b {
                            return vec![(hs, he)];
                        }
                        filled = true;
                        [(hs, a), (b, he)]
                            .into_iter()
                            .filter(|h| h.0 < h.1)
                            .collect()
                    })
                    .collect();
                filled || (q > s && end > e)
            }
        };
        if new {
            n += 1;
        }
        match last {
            Some((_, e)) if end <= e => {}
            Some((s, _)) if q < s => last = Some((s, end)),
            _ => last = Some((q, end)),
        }
    }
    n
}

fn run_cell(cell: &Cell, port: u16) -> Outcome {
    let name = cell.name();
    let program = cell.program;
    let h = Hosts::new(program.v6(), cell.offloads);
    if program.cut() {
        // Small socket buffers, so that the cut comes with most of the file
        // still unsent (by default the kernel takes up to 10 MB of it).
        for ns in [&h.client, &h.server] {
            for key in ["net/ipv4/tcp_wmem", "net/ipv4/tcp_rmem"] {
                ns.sysctl(key, "4096 131072 262144").unwrap();
            }
        }
    }
    let dir = tmp(&format!("m7-srv-{port}"));
    let mut server = start_server(&h, program, port, &dir);
    // redis: a client connection established before strace and the recorder,
    // used after (attach after start: the connection's rows hold every frame).
    let early = (program == Program::Redis).then(|| early_connection(&h, port));
    let pid = server.child.id();
    let pids = tree(pid);
    let strace = Strace::attach(&h.server, &pids, tmp(&format!("m7-strace-{port}.txt")));

    let mut args: Vec<String> = match cell.filter {
        Filter::Comm => vec!["--comm".into(), comm_of(pid)],
        Filter::Pid => vec!["-p".into(), pid.to_string()],
        Filter::AllPort => vec!["--all".into(), "--port".into(), port.to_string()],
        Filter::All => vec!["--all".into()],
    };
    args.extend(["--layers".into(), "app,tcp,ip,dev".into()]);
    let trace = tmp(&format!("m7-{port}.mgt"));
    let watch = BlindSpot::watch(h.link.a().name());
    let rec = Recorder::record(
        MAGNET,
        Some(if cell.in_server { &h.server } else { &h.client }),
        &trace,
        &args,
    );
    let filter = format!("port {port} or (ip[6:2] & 0x1fff != 0)");
    let filter = if program.v6() {
        format!("port {port}")
    } else {
        filter
    };
    let fargs: Vec<&str> = ["-s", "200"].into_iter().chain(filter.split(' ')).collect();
    let cap_s = Capture::start(Some(&h.server), h.link.b().name(), &fargs).unwrap();
    let cap_c = Capture::start(Some(&h.client), h.link.a().name(), &fargs).unwrap();

    let counts = run_client(&h, program, port, &mut server);
    let early_port = early.map(ping);
    std::thread::sleep(Duration::from_millis(300));
    let pcap_s = cap_s.stop().unwrap();
    let pcap_c = cap_c.stop().unwrap();
    let ended = rec.stop_after(Duration::from_millis(300));
    let calls = strace.finish();
    let blind = watch.finish();
    drop(server);
    ended.success();
    let ws = wire_frames(&pcap_s).expect("server-end capture");
    let wc = wire_frames(&pcap_c).expect("client-end capture");
    let out = magnet(&["analyze", trace.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{name}: analyze: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    if std::env::var_os("MAGNET_MATRIX_KEEP").is_some() {
        let t = trace.with_extension("");
        let _ = std::fs::copy(pcap_s.path(), t.with_extension("server.pcap"));
        let _ = std::fs::copy(pcap_c.path(), t.with_extension("client.pcap"));
        eprintln!("{name}: trace and captures kept: {}*", t.display());
    } else {
        let _ = std::fs::remove_file(&trace);
    }

    let lost = j["trace"]["lost_events"].as_u64().unwrap_or(0);
    let mut checks = Vec::new();
    // `maybe`: the open finding that explains a failure of this check.
    let mut check = |what: String, oracle: String, got: String, maybe: Option<u8>| {
        // An oracle `LO..=HI` (a tolerance, docs/analyze.md) holds any value
        // in it; any other oracle only itself.
        let ok = oracle == got
            || oracle
                .split_once("..=")
                .and_then(|(lo, hi)| {
                    Some((
                        lo.parse::<u64>().ok()?,
                        hi.parse::<u64>().ok()?,
                        got.parse::<u64>().ok()?,
                    ))
                })
                .is_some_and(|(lo, hi, g)| lo <= g && g <= hi);
        let known = if ok { None } else { maybe };
        checks.push(Check {
            what,
            oracle,
            magnet: got,
            ok,
            known,
        });
    };
    // Both ends of the veth saw the same frames (the oracle is sound).
    check(
        "wire: both veth ends".into(),
        format!("{:?}", count(&wc.iter().collect::<Vec<_>>())),
        format!("{:?}", count(&ws.iter().collect::<Vec<_>>())),
        None,
    );

    // Every frame of the port is a traced socket's or its peer's (finding 8).
    // Not with --all and no port: every frame the veth carries is recorded
    // then, those of no socket (ARP, neighbour discovery) too, and the
    // captures, filtered by the port, hold none of them to count.
    if cell.filter != Filter::All {
        check(
            "trace.unattributed.dev_rx".into(),
            "0".into(),
            j["trace"]["unattributed"]["dev_rx"].to_string(),
            None,
        );
    }
    let udp = program == Program::IperfUdp;
    let mut peers: Vec<(u16, bool)> = ws
        .iter()
        .filter(|f| f.dport == port && f.sport != 0)
        .map(|f| (f.sport, f.udp))
        .collect();
    peers.sort_unstable();
    peers.dedup();
    if let Some(e) = early_port {
        check(
            format!("tcp :{e} open before the recorder, on the wire"),
            "true".into(),
            peers.contains(&(e, false)).to_string(),
            None,
        );
    }
    let mut tcp_peers = 0;
    let (mut hs_frames_in, mut hs_frames_out): (Vec<&Frame>, Vec<&Frame>) = (vec![], vec![]);
    for &(cp, is_udp) in &peers {
        let c = conn(&j, port, cp, is_udp);
        let proto = if is_udp { "udp" } else { "tcp" };
        let tag = format!("{proto} :{cp}");
        let inn: Vec<&Frame> = ws
            .iter()
            .filter(|f| f.udp == is_udp && f.sport == cp && f.dport == port)
            .collect();
        let out: Vec<&Frame> = ws
            .iter()
            .filter(|f| f.udp == is_udp && f.sport == port && f.dport == cp)
            .collect();
        if is_udp && udp {
            // iperf3's first datagram (4 B) reaches its listening socket, which
            // then connects to the client and is the data socket from then on
            // (iperf3 opens a new listener): it holds every datagram, each
            // fragment a frame.
            check(
                format!("{tag} dev in"),
                format!("{:?}", count(&inn)),
                format!("{:?}", row(c, "dev", "in")),
                None,
            );
            if let Some(s) = calls.get(&cp) {
                check(
                    format!("{tag} app in (strace calls, bytes)"),
                    format!("{:?}", (s.1.ok, s.1.bytes)),
                    format!("{:?}", row(c, "app", "in")),
                    None,
                );
            }
            continue;
        }
        if is_udp {
            continue;
        }
        tcp_peers += 1;
        // The handshake (SYN, handshake ACK in; SYN-ACK out) is the listener's.
        let syn_in = inn.iter().position(|f| f.syn());
        let hs_in = if syn_in.is_some() { 2 } else { 0 };
        let hs_out = usize::from(out.first().is_some_and(|f| f.syn()));
        check(
            format!("{tag} dev in"),
            format!("{:?}", count(&inn[hs_in.min(inn.len())..])),
            format!("{:?}", row(c, "dev", "in")),
            None,
        );
        check(
            format!("{tag} dev out"),
            format!("{:?}", count(&out[hs_out.min(out.len())..])),
            format!("{:?}", row(c, "dev", "out")),
            None,
        );
        check(
            format!("{tag} tcp in bytes"),
            stream_bytes(&inn).to_string(),
            row(c, "tcp", "in").1.to_string(),
            None,
        );
        hs_frames_in.extend(inn[..hs_in.min(inn.len())].iter().copied());
        hs_frames_out.extend(out[..hs_out.min(out.len())].iter().copied());
        // The client's socket, when the filter traced it too (its own rows
        // against the capture at its end of the veth, handshake included).
        if let Some(k) = conn(&j, cp, port, false) {
            let cin: Vec<&Frame> = wc
                .iter()
                .filter(|f| !f.udp && f.sport == port && f.dport == cp)
                .collect();
            let cout: Vec<&Frame> = wc
                .iter()
                .filter(|f| !f.udp && f.sport == cp && f.dport == port)
                .collect();
            check(
                format!("client :{cp} dev in"),
                format!("{:?}", count(&cin)),
                format!("{:?}", row(Some(k), "dev", "in")),
                None,
            );
            check(
                format!("client :{cp} dev out"),
                format!("{:?}", count(&cout)),
                format!("{:?}", row(Some(k), "dev", "out")),
                None,
            );
            check(
                format!("client :{cp} tcp in bytes"),
                stream_bytes(&cin).to_string(),
                row(Some(k), "tcp", "in").1.to_string(),
                None,
            );
            check(
                format!("client :{cp} tcp out bytes"),
                stream_bytes(&cout).to_string(),
                row(Some(k), "tcp", "out").1.to_string(),
                None,
            );
        }
        // Wherever the recorder runs: it hooks netfilter in every namespace.
        // Finding 7: a retransmission or a probe is never a unit.
        check(
            format!("{tag} tcp in units (new data)"),
            new_data_frames(&inn).to_string(),
            row(c, "tcp", "in").0.to_string(),
            None,
        );
        // Out: a unit is a packet at LOCAL_OUT, which TCP builds as GSO
        // packets even with the device's offloads off (then segmented
        // before the wire): the wire shows those packets only when the
        // veth takes them whole (offloads on).
        if cell.offloads {
            check(
                format!("{tag} tcp out units (new data)"),
                new_data_frames(&out).to_string(),
                row(c, "tcp", "out").0.to_string(),
                None,
            );
        }
        check(
            format!("{tag} tcp out bytes"),
            stream_bytes(&out).to_string(),
            row(c, "tcp", "out").1.to_string(),
            None,
        );
        if !cell.offloads {
            let f = &inn[hs_in.min(inn.len())..];
            check(
                format!("{tag} ip in"),
                format!(
                    "{:?}",
                    (f.len() as u64, f.iter().map(|f| f.l3).sum::<u64>())
                ),
                format!("{:?}", row(c, "ip", "in")),
                None,
            );
        }
        if let Some((sends, recvs)) = calls.get(&cp) {
            for (d, calls) in [("in", recvs), ("out", sends)] {
                let (units, bytes) = row(c, "app", d);
                // A call its process was killed in never returned (strace has
                // no result) but may have moved bytes, which the kernel's
                // send or recv returned: up to what it asked, one call each.
                let (b, n) = if calls.unfinished == 0 {
                    (calls.bytes.to_string(), calls.ok.to_string())
                } else {
                    (
                        format!("{}..={}", calls.bytes, calls.bytes + calls.unfinished_asked),
                        format!("{}..={}", calls.ok, calls.ok + calls.unfinished),
                    )
                };
                check(
                    format!("{tag} app {d} bytes (strace)"),
                    b,
                    bytes.to_string(),
                    None,
                );
                check(
                    format!("{tag} app {d} calls (strace)"),
                    n,
                    units.to_string(),
                    calls.vectored.then_some(6),
                );
            }
        } else if !program.cut() {
            check(
                format!("{tag} app in bytes = stream"),
                stream_bytes(&inn).to_string(),
                row(c, "app", "in").1.to_string(),
                None,
            );
        }
    }
    if let Some((sent, got)) = counts {
        let (mut tin, mut tout) = (0, 0);
        for &(cp, _) in &peers {
            let c = conn(&j, port, cp, false);
            tin += row(c, "tcp", "in").1;
            tout += row(c, "tcp", "out").1;
        }
        check(
            "tcp in = the client's count of bytes sent".into(),
            sent.to_string(),
            tin.to_string(),
            None,
        );
        check(
            "tcp out = the client's count of bytes received".into(),
            got.to_string(),
            tout.to_string(),
            None,
        );
    }
    let listener = conn(&j, port, 0, false);
    if !matches!(cell.filter, Filter::AllPort | Filter::All) {
        check(
            "listener found at start".into(),
            "true".into(),
            listener.is_some().to_string(),
            None,
        );
    }
    if listener.is_some() {
        // Finding 5: a listener holds the handshakes it answered (SYN and
        // handshake ACK in, SYN-ACK out), no stream and no peer.
        check(
            "listener dev in = the handshakes' SYN + ACK".into(),
            format!("{:?}", count(&hs_frames_in)),
            format!("{:?}", row(listener, "dev", "in")),
            None,
        );
        check(
            "listener dev out = the SYN-ACKs".into(),
            format!("{:?}", count(&hs_frames_out)),
            format!("{:?}", row(listener, "dev", "out")),
            None,
        );
        check(
            "listener tcp in + out".into(),
            "(0, 0)".into(),
            format!(
                "{:?}",
                (row(listener, "tcp", "in").1, row(listener, "tcp", "out").1)
            ),
            None,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Outcome {
        cell: name,
        checks,
        blind,
        note: format!(
            "{} tcp + {} udp peers, wire {} frames, blind {:?}{}",
            tcp_peers,
            peers.len() - tcp_peers,
            ws.len(),
            blind,
            if lost == 0 {
                String::new()
            } else {
                format!(", {lost} events LOST")
            }
        ),
    }
}

fn print(o: &Outcome) {
    use std::io::Write;
    let mut e = std::io::stderr().lock();
    let bad = o.failed().count();
    let _ = writeln!(
        e,
        "== {} : {} ({} checks, {} failed; {})",
        o.cell,
        if bad == 0 { "PASS" } else { "FAIL" },
        o.checks.len(),
        bad,
        o.note
    );
    for c in &o.checks {
        let _ = writeln!(
            e,
            "   {:<4} {:<44} oracle {:<26} magnet {}{}",
            if c.ok { "ok" } else { "FAIL" },
            c.what,
            c.oracle,
            c.magnet,
            c.known
                .map(|n| format!("   [finding {n}]"))
                .unwrap_or_default()
        );
    }
}

fn live(name: &str) -> bool {
    live_or_skip(
        name,
        &[
            Need::Btf,
            Need::Tool("tcpdump"),
            Need::Tool("tshark"),
            Need::Tool("strace"),
            Need::Tool("curl"),
            Need::Tool("nginx"),
            Need::Tool("redis-server"),
            Need::Tool("redis-benchmark"),
            Need::Tool("iperf3"),
            Need::Tool("scp"),
            Need::Tool("ssh-keygen"),
            Need::File("/usr/sbin/sshd"),
            Need::Tool("python3"),
            Need::Tool("ethtool"),
        ],
    )
}

fn run_cells(cells: &[Cell], base_port: u16) -> Vec<Outcome> {
    let mut v = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        // A run in which the VM's blind spot hid frames from every BPF program
        // judges nothing: up to three runs (docs/analyze.md).
        let mut o = run_cell(cell, base_port + i as u16);
        for _ in 0..2 {
            if o.failed().count() == 0 || o.blind.unwrap_or(0) == 0 {
                break;
            }
            print(&o);
            eprintln!("   (blind run: tried again)");
            o = run_cell(cell, base_port + i as u16);
        }
        print(&o);
        v.push(o);
    }
    v
}

fn summary(outcomes: &[Outcome]) -> (usize, usize, usize) {
    let pass = outcomes.iter().filter(|o| o.failed().count() == 0).count();
    let known = outcomes
        .iter()
        .filter(|o| o.failed().count() > 0 && o.failed().all(|c| c.known.is_some()))
        .count();
    (pass, known, outcomes.len() - pass - known)
}

/// Every cell (or those whose name contains `MAGNET_MATRIX`): `scripts/matrix.sh`.
#[test]
#[ignore = "the whole matrix, about 10 minutes: scripts/matrix.sh"]
fn matrix_whole() {
    if !live("matrix_whole") {
        return;
    }
    let want = std::env::var("MAGNET_MATRIX").unwrap_or_default();
    let cells: Vec<Cell> = every_cell()
        .into_iter()
        .filter(|c| c.name().contains(&want))
        .collect();
    let t0 = Instant::now();
    let outcomes = run_cells(&cells, 7700);
    let (pass, known, new) = summary(&outcomes);
    eprintln!(
        "matrix: {} cells in {:.0} s: {pass} pass, {known} fail only on open findings, {new} fail otherwise",
        outcomes.len(),
        t0.elapsed().as_secs_f64()
    );
    for o in outcomes.iter().filter(|o| o.failed().count() > 0) {
        let f: Vec<String> = o
            .failed()
            .map(|c| {
                format!(
                    "{}{}",
                    c.what,
                    c.known.map(|n| format!(" [{n}]")).unwrap_or_default()
                )
            })
            .collect();
        eprintln!("  FAIL {}: {}", o.cell, f.join("; "));
    }
    assert_eq!(pass, outcomes.len(), "every cell passes");
}

/// The core slice that runs in CI (about 2 minutes): every program (nginx and
/// iperf3 -Z joined once app calls were one per system call, finding 6), every
/// filter, both namespaces and both offload settings across them.
/// iperf3-udp from the client's namespace: its server's data socket connects
/// after its SOCK record, and only the connect tells its peer there (the ip
/// layer does not see the server's namespace; finding 2).
#[test]
fn matrix_core() {
    if !live("matrix_core") {
        return;
    }
    use Filter::*;
    use Program::*;
    // (program, filter, recorder in the server's namespace, offloads on)
    let core: Vec<Cell> = [
        (Nginx, Comm, true, true),
        (Nginx, Pid, false, false),
        (IperfZ, AllPort, true, false),
        (Redis, Comm, false, false),
        (Redis, Pid, true, true),
        (Sshd, Pid, true, true),
        (Sshd, AllPort, false, false),
        (IperfP4, Comm, false, true),
        (IperfP4, AllPort, true, false),
        (IperfUdp, Pid, true, false),
        (IperfUdp, AllPort, true, true),
        (IperfUdp, Comm, false, true),
        (IperfUdp, AllPort, false, false),
        (HttpV6, Comm, true, false),
        (HttpV6, AllPort, false, true),
        (Kill9, Pid, false, false),
        (SsK, Comm, true, true),
        (HalfClose, AllPort, false, true),
        (HalfClose, Pid, true, false),
        (Nginx, All, false, true),
        (Redis, All, true, false),
        (Sshd, All, true, true),
        (IperfUdp, All, false, false),
    ]
    .into_iter()
    .map(|(program, filter, in_server, offloads)| Cell {
        program,
        filter,
        in_server,
        offloads,
    })
    .collect();
    let mut outcomes = run_cells(&core, 7900);
    // On this shared 2-CPU VM one check of one cell now and then misses by
    // one under load: a failed core cell runs once more and the second run
    // is judged; both are printed. (The case that made this rule, iperf3-P4's
    // tcp in units 552 against the wire's 551, was a stream reordered
    // between two CPUs' backlogs, counted by whichever CPU the recorder or
    // tcpdump saw first; holes are now kept, new_data_frames.)
    // `matrix_whole` (scripts/matrix.sh) keeps the stricter rule.
    for (i, o) in outcomes.iter_mut().enumerate() {
        if o.failed().count() > 0 {
            eprintln!("   (a core cell failed: tried once more)");
            let again = run_cells(std::slice::from_ref(&core[i]), 7960 + i as u16);
            *o = again.into_iter().next().expect("one outcome");
        }
    }
    let (pass, _, _) = summary(&outcomes);
    assert_eq!(pass, outcomes.len(), "every core cell passes");
}

/// The strace reader on lines as strace 6 writes them (no live test needed).
#[test]
fn strace_lines_are_read() {
    let text = "\
7 write(4<TCP:[10.0.0.2:22->10.0.0.1:5000]>, \"ab\\\"c\"..., 72 <unfinished ...>
8 read(4<TCP:[10.0.0.2:22->10.0.0.1:5000]>, \"x\", 10) = 1
7 <... write resumed>)              = 72
8 write(5<pipe:[1]>, \"x\", 1) = 1
8 sendto(4<TCP:[10.0.0.2:22->10.0.0.1:5000]>, \"y\"..., 8192, MSG_DONTWAIT, NULL, 0) = -1 EAGAIN (Resource temporarily unavailable)
9 sendfile(6<TCPv6:[[fd07:7::2]:80->[fd07:7::1]:5001]>, 7</f>, [0] => [100], 100) = 100
9 sendto(6<TCPv6:[[fd07:7::2]:80->[fd07:7::1]:5001]>, \"z\"..., 65536, 0, NULL, 0) = ?
";
    let m = parse_strace(text);
    let (send, recv) = m[&5000];
    assert_eq!((send.ok, send.bytes, send.failed), (1, 72, 1));
    assert_eq!((recv.ok, recv.bytes), (1, 1));
    assert!(!send.vectored);
    let (send, _) = m[&5001];
    assert_eq!((send.ok, send.bytes, send.vectored), (1, 100, true));
    assert_eq!((send.unfinished, send.unfinished_asked), (1, 65536));
    assert_eq!(m.len(), 2, "the pipe is no connection");
}
