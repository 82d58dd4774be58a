//! Helpers shared by the CLI's integration tests: run the real `magnet` binary
//! and give each test binary its own scratch directory.
#![allow(dead_code)] // each test binary uses its own subset

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub mod strace;

pub const MAGNET: &str = env!("CARGO_BIN_EXE_magnet");

/// Runs `magnet ARGS` to completion with no standard input.
pub fn magnet(args: &[&str]) -> Output {
    Command::new(MAGNET)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run magnet")
}

/// Runs `magnet ARGS` with no standard input and returns its standard output;
/// panics naming the arguments and magnet's own error unless it succeeded.
pub fn magnet_ok<I, S>(args: I) -> Vec<u8>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().into()).collect();
    let out = Command::new(MAGNET)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run magnet");
    assert!(
        out.status.success(),
        "magnet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// [`magnet_ok`] with `MAGNET_HOOKS_DENY=deny` (none when empty), as text.
pub fn magnet_ok_denying(args: &[&str], deny: &str) -> String {
    let mut cmd = Command::new(MAGNET);
    cmd.args(args).stdin(Stdio::null());
    if !deny.is_empty() {
        cmd.env("MAGNET_HOOKS_DENY", deny);
    }
    let out = cmd.output().expect("run magnet");
    assert!(
        out.status.success(),
        "magnet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// `magnet parse -q --json --kind KINDS TRACE`: one JSON object per record.
pub fn parse_kinds(trace: &Path, kinds: &str) -> Vec<serde_json::Value> {
    let out = magnet_ok([
        "parse".as_ref(),
        "-q".as_ref(),
        "--json".as_ref(),
        "--kind".as_ref(),
        kinds.as_ref(),
        trace.as_os_str(),
    ]);
    String::from_utf8(out)
        .expect("parse --json prints UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// A path in this test binary's scratch directory (one per process, so tests
/// running in parallel binaries never share files; removed when the process
/// exits, kept with MAGNET_KEEP_SCRATCH=1).
pub fn tmp(name: &str) -> PathBuf {
    magnet_testkit::scratch_dir("magnet-test").join(name)
}

/// A TCP port free on 127.0.0.1 just now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The line magnetd writes to stderr once it serves.
pub const MAGNETD_READY: &str = "magnetd: ready";

/// Writes `DIR/magnetd.toml`: HTTP on 127.0.0.1:`http`, the socket
/// `DIR/magnetd.sock`, then `extra`; returns its path.
pub fn magnetd_conf(dir: &Path, http: u16, extra: &str) -> PathBuf {
    let conf = dir.join("magnetd.toml");
    std::fs::write(
        &conf,
        format!(
            "http = \"127.0.0.1:{http}\"\nsocket = \"{}\"\n{extra}",
            dir.join("magnetd.sock").display()
        ),
    )
    .unwrap();
    conf
}

/// `magnet daemon` with its own config (socket and HTTP port), started and
/// ready; stopped on drop.
pub struct Magnetd {
    proc: Option<magnet_testkit::Recorder>,
    dir: tempfile::TempDir,
    /// Its HTTP port (`/metrics`).
    pub http: u16,
}

impl Magnetd {
    pub fn start() -> Magnetd {
        Magnetd::start_with("")
    }

    /// Started with `extra` added to its config (TOML lines).
    pub fn start_with(extra: &str) -> Magnetd {
        Magnetd::start_denying(extra, "")
    }

    /// Started as on a kernel that refuses what `deny` names
    /// (`MAGNET_HOOKS_DENY`; empty: nothing more than the environment's).
    pub fn start_denying(extra: &str, deny: &str) -> Magnetd {
        let dir = tempfile::tempdir().unwrap();
        let http = free_port();
        let conf = magnetd_conf(dir.path(), http, extra);
        let mut cmd = Command::new(MAGNET);
        cmd.args(["daemon", "--config"])
            .arg(&conf)
            .stdout(Stdio::null());
        if !deny.is_empty() {
            let env = std::env::var(magnet_kernel::deny::VAR).unwrap_or_default();
            cmd.env(magnet_kernel::deny::VAR, deny_list(&env, deny));
        }
        let proc = Some(magnet_testkit::Recorder::start_until(cmd, MAGNETD_READY));
        Magnetd { proc, dir, http }
    }

    /// magnetd's Unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("magnetd.sock")
    }

    pub fn client(&self) -> magnet_client::Client {
        magnet_client::Client::connect(&self.dir.path().join("magnetd.sock")).unwrap()
    }
}

impl Drop for Magnetd {
    fn drop(&mut self) {
        if let Some(p) = self.proc.take() {
            p.stop_after(std::time::Duration::ZERO);
        }
    }
}

/// Turns IPv6 on in `ns` and gives `iface` the address `addr` (with its prefix
/// length), without duplicate address detection (the address works at once).
pub fn enable_v6(ns: &magnet_testkit::Netns, iface: &str, addr: &str) {
    ns.sysctl("net/ipv6/conf/all/disable_ipv6", "0").unwrap();
    ns.sysctl(&format!("net/ipv6/conf/{iface}/disable_ipv6"), "0")
        .unwrap();
    let st = ns
        .command("ip")
        .args(["addr", "add", addr, "dev", iface, "nodad"])
        .status()
        .unwrap();
    assert!(st.success());
}

/// The units of `layer` (`app`, `tcp`, `ip`, `dev`) in `dir` (`in`, `out`) of a
/// connection of `magnet analyze --json` (0 without that row).
pub fn units(conn: &serde_json::Value, layer: &str, dir: &str) -> u64 {
    conn["modulation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["layer"] == layer && r["dir"] == dir)
        .map_or(0, |r| r["units"].as_u64().unwrap())
}

/// One TCP connection of a capture (a tshark `tcp.stream`): the client's port
/// and its frames after the handshake (SYN, SYN-ACK and the client's first
/// frame, a pure ACK, which a server's listener handles), from the client and
/// from the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapturedConn {
    pub client_port: u16,
    pub from_client: u64,
    pub from_server: u64,
}

/// The connections to `server_port` in a capture, in the order of their first
/// frames; panics on a connection without its whole handshake.
pub fn capture_connections(pcap: &Path, server_port: u16) -> Vec<CapturedConn> {
    let rows = magnet_testkit::tshark_frames(
        pcap,
        &[
            "tcp.stream",
            "tcp.srcport",
            "tcp.dstport",
            "tcp.flags.syn",
            "tcp.len",
        ],
    )
    .unwrap();
    // Per stream: its client port, then (from the server, SYN, payload) per frame.
    type Frames = (u16, Vec<(bool, bool, u64)>);
    let mut streams: std::collections::BTreeMap<u64, Frames> = Default::default();
    for r in rows {
        let Ok(stream) = r[0].parse::<u64>() else {
            continue;
        };
        let from_server = r[1] == server_port.to_string();
        let client = if from_server { &r[2] } else { &r[1] };
        let syn = r[3] == "1" || r[3] == "True";
        let s = streams
            .entry(stream)
            .or_insert_with(|| (client.parse().unwrap_or(0), Vec::new()));
        s.1.push((from_server, syn, r[4].parse().unwrap_or(0)));
    }
    streams
        .values()
        .map(|(client_port, frames)| {
            let syns = frames.iter().filter(|f| f.1).count();
            assert_eq!(syns, 2, "a stream without its handshake: {frames:?}");
            let first_ack = frames
                .iter()
                .position(|f| !f.0 && !f.1)
                .expect("handshake ACK");
            assert_eq!(
                frames[first_ack].2, 0,
                "the handshake ACK carries no data: {frames:?}"
            );
            let rest = frames
                .iter()
                .enumerate()
                .filter(|(i, f)| !f.1 && *i != first_ack);
            let (mut from_client, mut from_server) = (0, 0);
            for (_, f) in rest {
                if f.0 {
                    from_server += 1
                } else {
                    from_client += 1
                }
            }
            CapturedConn {
                client_port: *client_port,
                from_client,
                from_server,
            }
        })
        .collect()
}

/// The bytes of `layer` in `dir` of a connection of `magnet analyze --json`
/// (0 without that row).
pub fn bytes(conn: &serde_json::Value, layer: &str, dir: &str) -> u64 {
    conn["modulation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["layer"] == layer && r["dir"] == dir)
        .map_or(0, |r| r["bytes"].as_u64().unwrap())
}

/// The python3 interpreter itself (not a launcher shim, which dispatches on its name).
pub fn python3() -> std::path::PathBuf {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os,sys; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .unwrap();
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// python3 under the name `comm` (a symlink in the scratch directory), for
/// `--comm`: a task's comm is the name it was started by, and python finds its
/// library through the link.
pub fn python_named(comm: &str) -> PathBuf {
    let bin = tmp(&format!("{comm}/{comm}"));
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&bin);
    std::os::unix::fs::symlink(python3(), &bin).unwrap();
    bin
}

/// A child process killed (and reaped) when dropped: a server a failing test
/// leaves behind would hold its output pipe open.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether a live test that captures (tcpdump, tshark) and runs python3 can run
/// here; says why not when it cannot.
pub fn live_capture_python(name: &str) -> bool {
    use magnet_testkit::Need;
    magnet_testkit::live_or_skip(
        name,
        &[
            Need::Btf,
            Need::Tool("tcpdump"),
            Need::Tool("tshark"),
            Need::Tool("python3"),
        ],
    )
}

pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Polls an instant query on Prometheus until it returns a series; its value.
pub fn prom_value(port: u16, query: &str, deadline: std::time::Instant) -> Option<String> {
    while std::time::Instant::now() < deadline {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let _ = write!(
                s,
                "GET /api/v1/query?query={} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n",
                urlencode(query)
            );
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            if let Some((_, body)) = out.split_once("\r\n\r\n") {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
                    let res = &v["data"]["result"];
                    if let Some(first) = res.as_array().and_then(|a| a.first()) {
                        assert_eq!(res.as_array().unwrap().len(), 1, "{query}: {res}");
                        return first["value"][1].as_str().map(String::from);
                    }
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    None
}

/// A real Prometheus scraping magnetd's `/metrics` on `http` every second: the
/// process, its query port and its directory (removed on drop).
pub fn prometheus(http: u16) -> (std::process::Child, u16, tempfile::TempDir) {
    let pdir = tempfile::tempdir().unwrap();
    let pport = free_port();
    std::fs::write(
        pdir.path().join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: magnetd\n    static_configs:\n      - targets: ['127.0.0.1:{http}']\n"
        ),
    )
    .unwrap();
    let prom = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            pdir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            pdir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting prometheus");
    (prom, pport, pdir)
}

/// An instant query's whole answer (`status`, `data.result`), or why not.
pub fn prom_query(port: u16, query: &str) -> Result<serde_json::Value, String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    write!(
        s,
        "GET /api/v1/query?query={} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n",
        urlencode(query)
    )
    .map_err(|e| e.to_string())?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(|e| e.to_string())?;
    let (_, body) = out.split_once("\r\n\r\n").ok_or("no HTTP body")?;
    serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))
}

/// tests/fixtures/NAME.c, built (cc -O2) into the scratch directory.
pub fn build_fixture(name: &str) -> PathBuf {
    build_fixture_with(name, &[])
}

/// [`build_fixture`] linked with `libs` (`-luring`). Built once per test
/// binary, whichever of its tests running at once asks first: the others
/// wait for it, and the binary appears under its name only when complete
/// (built aside, then renamed), so that no test runs a half-written one.
pub fn build_fixture_with(name: &str, libs: &[&str]) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let bin = tmp(name);
    if built.iter().any(|b| b == name) {
        return bin;
    }
    let src = format!("{}/tests/fixtures/{name}.c", env!("CARGO_MANIFEST_DIR"));
    let aside = bin.with_extension(format!("building-{}", std::process::id()));
    let out = Command::new("cc")
        .args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(&aside)
        .arg(&src)
        .args(libs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "building {src}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&aside, &bin).unwrap();
    built.push(name.to_string());
    bin
}

/// A JSON array of slot counts.
pub fn slots(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// Why `magnetd` and `oracle` (slot counts) do not agree within one slot
/// (both count the same samples, and with C(k) the samples in slots 0..=k, for every k: C_magnetd(k) + spare >= C_oracle(k-1) and C_oracle(k) + spare >= C_magnetd(k-1)), allowing `spare` samples more than one slot
/// apart; None when they do.
pub fn within_one_slot(magnetd: &[u64], oracle: &[u64], spare: u64) -> Option<String> {
    let (tm, to): (u64, u64) = (magnetd.iter().sum(), oracle.iter().sum());
    if tm != to {
        return Some(format!("{tm} samples, the oracle {to}"));
    }
    let cum = |h: &[u64], k: usize| h.iter().take(k + 1).sum::<u64>();
    for k in 0..magnetd.len().max(oracle.len()) {
        let (m, o) = (cum(magnetd, k), cum(oracle, k));
        let (m1, o1) = if k == 0 {
            (0, 0)
        } else {
            (cum(magnetd, k - 1), cum(oracle, k - 1))
        };
        if m + spare < o1 || o + spare < m1 {
            return Some(format!(
                "more than one slot apart at slot {k}: {m} samples up to it, the oracle {o} \
                 (up to the slot before: {m1}, the oracle {o1})"
            ));
        }
    }
    None
}

/// The value of the series `name{labels}` (exact label text) in a /metrics
/// body.
pub fn series(body: &str, name_labels: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(name_labels)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

/// GET `path` from 127.0.0.1:`port` (HTTP/1.0): the head and the body.
pub fn http_get(port: u16, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_string(), body.to_string())
}

/// A `MAGNET_HOOKS_DENY` list: `base`'s entries and `deny`'s (either may be
/// empty).
pub fn deny_list(base: &str, deny: &str) -> String {
    [base, deny]
        .iter()
        .filter(|d| !d.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}

/// Why the kernel's BPF run-time statistics are on without `except` (a pid)
/// having turned them on: `kernel.bpf_stats_enabled=1`, or another process
/// holding a `BPF_ENABLE_STATS` fd (`anon_inode:bpf-stats`, such as a
/// magnetd of the host's own). None: off but for `except`.
#[allow(dead_code)]
pub fn bpf_stats_held_by_others(except: u32) -> Option<String> {
    magnet_kernel::cost::stats_held_by_others(except)
}
