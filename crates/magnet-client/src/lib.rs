//! A client for magnetd, magnet's always-on daemon.
//!
//! An application links this crate to ask how its own connections are doing:
//! bytes and calls at the application layer and on the wire each way,
//! segments, retransmits, smoothed RTT, congestion window, send-buffer
//! occupancy, drops, and app→wire / wire→app latency histograms — numbers the
//! kernel keeps for every connection anyway, read on request (MAGNeT §IV-C:
//! "a daemon … which provides a summary of the data for specific connections
//! at the request of network-aware applications").
//!
//! ```no_run
//! use std::net::TcpStream;
//! use std::io::Write;
//! let mut s = TcpStream::connect("127.0.0.1:8080")?;
//! s.write_all(b"hello")?;
//! let mut client = magnet_client::Client::connect_default()?;
//! let summary = client.connection_of(&s)?;
//! println!("{} bytes sent in {} calls", summary.app.tx_bytes, summary.app.tx_calls);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The protocol is one JSON object per line each way over the Unix socket
//! (default [`DEFAULT_SOCKET`]); docs/daemon.md lists the requests. magnetd
//! reads the caller's uid from the socket (SO_PEERCRED): a caller other than
//! root sees only connections whose socket belongs to its uid, and a cookie
//! of someone else's connection gets the same answer as one that does not
//! exist.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod stages;
pub use stages::{ReceiveStages, SendStages};

pub mod layers;
pub use layers::{CgroupLayers, LayerRow};

/// Where magnetd listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/magnet/magnetd.sock";

/// Everything that can go wrong talking to magnetd.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("connecting to magnetd at {path}: {source} (is `magnet daemon` running? see docs/daemon.md)")]
    Connect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("talking to magnetd: {0}")]
    Io(#[from] std::io::Error),
    #[error("magnetd's answer is not what this client understands: {0}")]
    Protocol(String),
    /// magnetd answered with an error (e.g. no such connection).
    #[error("magnetd: {0}")]
    Daemon(String),
}

/// A request, one JSON object per line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// One connection by socket cookie.
    Connection { cookie: u64 },
    /// Every connection the caller may see (bounded by the daemon's map size).
    Connections {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        container: Option<String>,
    },
    /// Host totals per layer and magnetd's own health.
    Host,
    /// Write the flight recorder's last seconds as trace files into a
    /// directory (root only; needs `[recorder]` in magnetd's config).
    Dump { dir: String },
    /// The layer table of every cgroup (root only): see [`CgroupLayers`].
    Cgroups,
}

/// Bytes and calls at the application layer (send/recv system calls).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct AppCounters {
    pub tx_bytes: u64,
    pub tx_calls: u64,
    pub rx_bytes: u64,
    pub rx_calls: u64,
}

/// The socket's traffic below the application. Its meaning depends on
/// `source`:
///
/// - `"tcp_sock"` (every TCP connection magnetd tracks): the kernel's own
///   per-socket counters, the ones `ss -ti` prints, read when asked (and
///   kept from the moment the socket closes): `tx_bytes` = bytes_sent (TCP
///   payload, retransmitted bytes included), `rx_bytes` = bytes_received
///   (payload, each byte once), `tx_packets` = `tx_segs` = segs_out and
///   `rx_segs` = segs_in (every segment, pure ACKs and retransmits
///   included), `tx_data_segs`/`rx_data_segs` = data_segs_out/in,
///   `acked_bytes` = bytes_acked.
/// - `"packets"` (other sockets, with magnetd's `packet_hooks = "always"`):
///   the root cgroup's per-packet hooks: `tx_bytes`/`rx_bytes` are IP bytes
///   (headers included), `tx_packets` packets handed down, `tx_segs` and
///   `rx_segs` wire segments (GSO/GRO segments); the TCP-only fields are 0.
/// - `"absent"` (other sockets, with `packet_hooks = "sampled"` or `"off"`):
///   not counted — the per-packet programs do not see every packet — so
///   every field is 0 and means nothing.
/// - in [`Host`]: `"packets"` as above for all sockets of the host, or
///   `"absent"` (see [`Host::interfaces`] for the interfaces' own counters).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WireCounters {
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_segs: u64,
    pub rx_bytes: u64,
    pub rx_segs: u64,
    /// `"tcp_sock"` or `"packets"`: see above.
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub tx_data_segs: u64,
    #[serde(default)]
    pub rx_data_segs: u64,
    #[serde(default)]
    pub acked_bytes: u64,
}

/// TCP state: srtt, cwnd and send-buffer occupancy from the socket's
/// tcp_sock when asked (at close for a closed one); sndbuf at the last call.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TcpState {
    pub srtt_us: u32,
    pub cwnd: u32,
    /// sk_sndbuf: the send buffer's size.
    pub sndbuf: u32,
    /// sk_wmem_queued: bytes in the send buffer (occupancy).
    pub wmem_queued: u32,
}

/// Latency histograms, log2 microseconds: `counts[i]` counts samples in
/// [2^i, 2^(i+1)) µs, `counts[0]` those below 2 µs. Trailing empty slots are
/// left out.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    /// From the return of a send call to its last byte leaving through IP
    /// (sampled: one send in flight at a time; data that left during the
    /// call counts in slot 0).
    pub app_to_wire: Vec<u64>,
    /// From the arrival of unread data to the recv call that returned it
    /// (sampled: the first unread arrival).
    pub wire_to_app: Vec<u64>,
    /// When the per-packet programs that take these samples ran:
    /// `"always"` (every packet), `"sampled"` (only in windows, see
    /// `coverage`; docs/daemon.md says which samples are kept) or `"off"`
    /// (the histograms stay empty).
    #[serde(default)]
    pub mode: String,
    /// The fraction of this connection's life (first seen to now, or to its
    /// close) during which those programs were attached: 1 with `"always"`,
    /// 0 with `"off"`, e.g. about 0.05 with the default 100 ms of every 2 s.
    #[serde(default)]
    pub coverage: f64,
    /// How this connection's send path is timed: `"tx_timestamps"` (a
    /// sample of send calls, by the kernel's TX timestamp callbacks: `stages`),
    /// `"sampled"` (`app_to_wire` only) or `"off"` (neither).
    #[serde(default)]
    pub method: String,
    /// The send path's stages (with `method` `"tx_timestamps"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<SendStages>,
    /// The receive path's stages of a sample of this connection's TCP data
    /// packets (with /health's `receive_latency` `"rx_stamps"`; absent
    /// until one sampled packet was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive: Option<ReceiveStages>,
    /// The fraction of this connection's life during which the stage
    /// programs (the start of each send call, TCP's receive of each data
    /// segment) were attached: 1 with /health's `stage_hooks` `"always"`,
    /// about 0.05 with the default `"sampled"` (100 ms of every 2 s).
    /// `stages` and `receive` sample only that time (and the first send).
    #[serde(default = "all_of_it")]
    pub stage_coverage: f64,
}

/// What a daemon that does not say covered: all of it.
fn all_of_it() -> f64 {
    1.0
}

/// What magnetd knows about one connection.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Connection {
    /// The socket cookie (SO_COOKIE): the connection's identity.
    pub cookie: u64,
    /// The socket's owner.
    pub uid: u32,
    /// Process and command of the last send/recv call.
    pub pid: u32,
    pub comm: String,
    /// cgroup v2 id of the last caller, and the container it names, if any.
    pub cgroup_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    pub netns: u32,
    /// "tcp", "udp", or the protocol number.
    pub protocol: String,
    /// "ip:port" (IPv6 in brackets).
    pub local: String,
    pub remote: String,
    /// False once TCP has closed it.
    pub open: bool,
    /// Seconds since the first call magnetd saw.
    pub age_s: f64,
    pub app: AppCounters,
    pub wire: WireCounters,
    pub retransmits: u64,
    pub drops: u64,
    pub tcp: TcpState,
    pub latency: Latency,
    /// The live layer table (see [`layers`]): one row per layer and
    /// direction magnetd sees; absent when magnetd has none for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerRow>,
}

/// Host totals per layer and magnetd's health.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Host {
    pub app: AppCounters,
    /// All sockets' packets, when `wire.source` is `"packets"`
    /// (`packet_hooks = "always"`); zeros with `"absent"`.
    pub wire: WireCounters,
    /// The interfaces of magnetd's network namespace, their own counters
    /// (/proc/net/dev: exact, what `ip -s link` shows), in every mode.
    #[serde(default)]
    pub interfaces: std::collections::BTreeMap<String, InterfaceCounters>,
    pub retransmits: u64,
    pub drops: u64,
    /// Drops by the kernel's reason name (non-zero ones).
    pub drop_reasons: std::collections::BTreeMap<String, u64>,
    pub health: Health,
}

/// One interface's own counters (bytes as the driver counts them, link-layer
/// headers included on most).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct InterfaceCounters {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

/// magnetd's own counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Health {
    /// Hook invocations that did work.
    pub events: u64,
    /// Full events the flight recorder could not keep (ring full).
    pub lost: u64,
    pub connections_created: u64,
    /// Connections not tracked because the map was full.
    pub map_full: u64,
    pub map_entries: u64,
    pub map_capacity: u64,
    /// The flight recorder is on and recording now (false between segments).
    #[serde(default)]
    pub recorder_running: bool,
    /// `packet_hooks`: "sampled", "always" or "off".
    #[serde(default)]
    pub packet_hooks: String,
    /// The per-packet programs are attached now.
    #[serde(default)]
    pub packet_hooks_attached: bool,
    /// Windows opened since start (sampled).
    #[serde(default)]
    pub packet_windows: u64,
    /// The fraction of time since start the per-packet programs were attached.
    #[serde(default)]
    pub packet_coverage: f64,
    /// `stage_hooks` as run: `"sampled"` (the stage programs attached in the
    /// same windows as sampled per-packet programs) or `"always"`.
    #[serde(default)]
    pub stage_hooks: String,
    /// The fraction of time since start the stage programs were attached.
    #[serde(default = "all_of_it")]
    pub stage_coverage: f64,
    /// magnetd's parts and what feeds each (`tcp_counters` →
    /// `iter/bpf_sk_storage_map` or `sock_diag`, …); parts left out are
    /// not listed here but in `left_out`.
    #[serde(default)]
    pub parts: std::collections::BTreeMap<String, String>,
    /// One line per part left out: which part, what it feeds, each hook
    /// tried and what the kernel (or MAGNET_HOOKS_DENY) said.
    #[serde(default)]
    pub left_out: Vec<String>,
    /// One line per part fed by a later candidate than its first, and why.
    #[serde(default)]
    pub fallbacks: Vec<String>,
    /// How send paths are timed (the `stack_latency` part): `"tx_timestamps"`
    /// (TX timestamp callbacks, for TCP connections established after
    /// magnetd started; each connection's `latency.method` says which it
    /// got), `"sampled"` (the per-packet programs' `app_to_wire`) or `"off"`.
    #[serde(default)]
    pub send_latency: String,
    /// How receive paths are timed (the `receive_latency` part):
    /// `"rx_stamps"` (a sample of TCP data packets, each connection's
    /// `latency.receive`), `"sampled"` (the per-packet programs'
    /// `wire_to_app`) or `"off"`.
    #[serde(default)]
    pub receive_latency: String,
    /// The last failed read of the TCP counters (iterator or sock_diag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_counters_error: Option<String>,
}

/// One answer line.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<Vec<Connection>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// The trace files a dump wrote, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dumped: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroups: Option<Vec<CgroupLayers>>,
}

impl Response {
    pub fn error(msg: impl Into<String>) -> Response {
        Response {
            ok: false,
            error: Some(msg.into()),
            ..Response::default()
        }
    }
}

/// The socket cookie of an open socket (getsockopt SO_COOKIE, Linux 4.12+).
pub fn socket_cookie(fd: RawFd) -> std::io::Result<u64> {
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cookie`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cookie)
}

/// The longest answer line a client reads (a `connections` answer for a
/// full default map of 16384 connections is about 25 MiB).
pub const MAX_ANSWER: u64 = 64 << 20;

/// How long a client waits for an answer; a dump, which writes the flight
/// recorder out, gets [`DUMP_TIMEOUT`].
pub const TIMEOUT: Duration = Duration::from_secs(10);
pub const DUMP_TIMEOUT: Duration = Duration::from_secs(120);

/// A connection to magnetd's Unix socket.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    timeout: Duration,
    max_answer: u64,
}

impl Client {
    /// Connects to [`DEFAULT_SOCKET`] (or `$MAGNETD_SOCKET` when set).
    pub fn connect_default() -> Result<Client, Error> {
        let path = std::env::var_os("MAGNETD_SOCKET")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET));
        Client::connect(&path)
    }

    pub fn connect(path: &Path) -> Result<Client, Error> {
        let s = UnixStream::connect(path).map_err(|source| Error::Connect {
            path: path.to_path_buf(),
            source,
        })?;
        let writer = s.try_clone()?;
        Ok(Client {
            reader: BufReader::new(s),
            writer,
            timeout: TIMEOUT,
            max_answer: MAX_ANSWER,
        })
    }

    /// How long to wait for each answer ([`TIMEOUT`] unless set).
    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }

    /// The longest answer accepted ([`MAX_ANSWER`] unless set).
    pub fn set_max_answer(&mut self, bytes: u64) {
        self.max_answer = bytes;
    }

    /// Reads one answer line: at most `max_answer` bytes, within `timeout`
    /// of the request (however slowly it trickles in).
    fn read_answer(&mut self, timeout: Duration) -> Result<Vec<u8>, Error> {
        let deadline = std::time::Instant::now() + timeout;
        let mut line = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "no complete answer within {} s ({} bytes so far)",
                        timeout.as_secs_f64(),
                        line.len()
                    ),
                )));
            }
            self.reader.get_ref().set_read_timeout(Some(left))?;
            // One read at a time (read_until would keep reading a trickle
            // past the deadline).
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(Error::Io(e)),
            };
            if buf.is_empty() {
                return Err(Error::Protocol(if line.is_empty() {
                    "magnetd closed the connection".into()
                } else {
                    format!(
                        "magnetd closed the connection in the middle of an answer ({} bytes)",
                        line.len()
                    )
                }));
            }
            let (take, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            line.extend_from_slice(&buf[..take]);
            self.reader.consume(take);
            if done {
                return Ok(line);
            }
            if line.len() as u64 > self.max_answer {
                return Err(Error::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "an answer longer than {} MiB; stopped reading it",
                        self.max_answer >> 20
                    ),
                )));
            }
        }
    }

    /// Sends one request and reads its answer; an error answer is an `Err`.
    pub fn call(&mut self, req: &Request) -> Result<Response, Error> {
        let mut line = serde_json::to_string(req).map_err(|e| Error::Protocol(e.to_string()))?;
        line.push('\n');
        self.writer
            .set_write_timeout(Some(self.timeout.max(Duration::from_millis(1))))?;
        self.writer.write_all(line.as_bytes())?;
        let timeout = match req {
            Request::Dump { .. } => self.timeout.max(DUMP_TIMEOUT),
            _ => self.timeout,
        };
        let answer = self.read_answer(timeout)?;
        let resp: Response = serde_json::from_slice(&answer).map_err(|e| {
            let text = String::from_utf8_lossy(&answer);
            let mut shown: String = text.trim_end().chars().take(200).collect();
            if shown.len() < text.trim_end().len() {
                shown.push('…');
            }
            Error::Protocol(format!("{e}: {shown:?}"))
        })?;
        if !resp.ok {
            return Err(Error::Daemon(
                resp.error.unwrap_or_else(|| "unspecified error".into()),
            ));
        }
        Ok(resp)
    }

    /// The summary of one connection by cookie.
    pub fn connection(&mut self, cookie: u64) -> Result<Connection, Error> {
        self.call(&Request::Connection { cookie })?
            .connection
            .ok_or_else(|| Error::Protocol("answer without a connection".into()))
    }

    /// The summary of an open socket of this process.
    pub fn connection_of(&mut self, sock: &impl AsRawFd) -> Result<Connection, Error> {
        let cookie = socket_cookie(sock.as_raw_fd())?;
        self.connection(cookie)
    }

    /// Every connection this caller may see.
    pub fn connections(&mut self) -> Result<Vec<Connection>, Error> {
        Ok(self
            .call(&Request::Connections { container: None })?
            .connections
            .unwrap_or_default())
    }

    /// The layer table of every cgroup (root only).
    pub fn cgroups(&mut self) -> Result<Vec<CgroupLayers>, Error> {
        Ok(self.call(&Request::Cgroups)?.cgroups.unwrap_or_default())
    }

    /// Has the flight recorder write what it holds into `dir` (root only).
    pub fn dump(&mut self, dir: &Path) -> Result<Vec<String>, Error> {
        Ok(self
            .call(&Request::Dump {
                dir: dir.display().to_string(),
            })?
            .dumped
            .unwrap_or_default())
    }

    /// Host totals and health.
    pub fn host(&mut self) -> Result<Host, Error> {
        self.call(&Request::Host)?
            .host
            .ok_or_else(|| Error::Protocol("answer without host totals".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake magnetd on a Unix socket that answers each connection with
    /// `answer(stream)`.
    fn fake(answer: fn(UnixStream)) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake.sock");
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().map_while(Result::ok) {
                std::thread::spawn(move || answer(s));
            }
        });
        (dir, path)
    }

    /// A hostile or broken magnetd: an endless answer line stops at the bound
    /// with one short error, not after reading it all into memory.
    #[test]
    fn an_answer_longer_than_the_bound_is_refused() {
        let (_d, path) = fake(|mut s| {
            let mut req = [0u8; 256];
            let _ = std::io::Read::read(&mut s, &mut req);
            let chunk = vec![b'x'; 1 << 20];
            // (endless: until the client hangs up)
            while s.write_all(&chunk).is_ok() {}
        });
        let mut c = Client::connect(&path).unwrap();
        c.set_max_answer(4 << 20);
        let t0 = std::time::Instant::now();
        let e = c.host().unwrap_err().to_string();
        assert_eq!(
            e,
            "talking to magnetd: an answer longer than 4 MiB; stopped reading it"
        );
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    /// A magnetd that trickles its answer, or never answers, is given up
    /// on after the timeout with a clear line (not "Resource temporarily
    /// unavailable").
    #[test]
    fn no_answer_within_the_timeout_says_so() {
        let (_d, path) = fake(|mut s| {
            let mut req = [0u8; 256];
            let _ = std::io::Read::read(&mut s, &mut req);
            // a byte every 100 ms, never a newline
            for _ in 0..100 {
                if s.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let mut c = Client::connect(&path).unwrap();
        c.set_timeout(Duration::from_millis(800));
        let t0 = std::time::Instant::now();
        let e = c.host().unwrap_err().to_string();
        assert!(
            e == "talking to magnetd: no complete answer within 0.8 s (8 bytes so far)"
                || e.starts_with("talking to magnetd: no complete answer within 0.8 s ("),
            "{e}"
        );
        assert!(!e.contains("temporarily"), "{e}");
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(800) && took < Duration::from_secs(3),
            "{took:?}"
        );
    }

    /// A malformed answer is quoted, cut to 200 characters.
    #[test]
    fn a_malformed_answer_is_quoted_short() {
        let (_d, path) = fake(|mut s| {
            let mut req = [0u8; 256];
            let _ = std::io::Read::read(&mut s, &mut req);
            let _ = s.write_all(&[b'y'; 5000]);
            let _ = s.write_all(b"\n");
        });
        let e = Client::connect(&path)
            .unwrap()
            .host()
            .unwrap_err()
            .to_string();
        assert!(e.len() < 400, "{e}");
        assert!(e.contains("yyy…"), "{e}");
    }

    #[test]
    fn requests_are_one_json_object_with_an_op() {
        let r = serde_json::to_string(&Request::Connection { cookie: 42 }).unwrap();
        assert_eq!(r, r#"{"op":"connection","cookie":42}"#);
        let back: Request = serde_json::from_str(r#"{"op":"connections"}"#).unwrap();
        assert_eq!(back, Request::Connections { container: None });
        assert!(serde_json::from_str::<Request>(r#"{"op":"nope"}"#).is_err());
    }

    #[test]
    fn cookie_of_a_real_socket_is_stable_and_nonzero() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = socket_cookie(l.as_raw_fd()).unwrap();
        assert_ne!(a, 0);
        assert_eq!(a, socket_cookie(l.as_raw_fd()).unwrap());
        let l2 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert_ne!(a, socket_cookie(l2.as_raw_fd()).unwrap());
    }
}
