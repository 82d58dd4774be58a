//! A traffic generator whose truth is known.
//!
//! magnet's live tests and demo trace this workload and compare what the tracer saw
//! with what was done: exactly N `send()` calls of S bytes on one TCP connection,
//! exactly M `sendto()` calls of U bytes over UDP, each call checked to have moved its
//! whole buffer. The receiver runs on a thread of the same process (in a peer network
//! namespace when asked), so a pid filter on this process covers both sides.
//!
//! ```
//! use magnet_loadgen::{run, Calls, LoadSpec};
//! let spec = LoadSpec {
//!     tcp: Some(Calls { count: 10, size: 1000 }),
//!     udp: Some(Calls { count: 5, size: 200 }),
//!     ..LoadSpec::default()
//! };
//! let summary = run(&spec).unwrap();
//! let tcp = summary.tcp.unwrap();
//! assert_eq!((tcp.calls, tcp.bytes_sent, tcp.bytes_received), (10, 10_000, 10_000));
//! assert_eq!(summary.udp.unwrap().datagrams_received, 5);
//! ```

mod sys;
mod tcp;
mod udp;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::Serialize;

/// `count` calls of `size` bytes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Calls {
    pub count: u64,
    pub size: usize,
}

impl FromStr for Calls {
    type Err = Error;

    /// `NxS`: N calls of S bytes, e.g. `100x1000`, `10x64k` (k = 1024, m = 1024²).
    fn from_str(s: &str) -> Result<Calls> {
        let bad = |why: &str| Error::Parse {
            what: "calls (NxSIZE)",
            input: s.to_string(),
            why: why.to_string(),
        };
        let (n, size) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| bad("expected NxSIZE"))?;
        let count = n.trim().parse().map_err(|_| bad("N is not a number"))?;
        let size = parse_size(size.trim()).ok_or_else(|| bad("SIZE is not a size"))?;
        Ok(Calls { count, size })
    }
}

fn parse_size(s: &str) -> Option<usize> {
    magnet_common::units::parse_size(s)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
}

/// Parses `20ms`, `1.5s`, `500us`, `2` (seconds): the one duration syntax of
/// every magnet command (`magnet_common::units`).
pub fn parse_duration(s: &str) -> Result<Duration> {
    magnet_common::units::parse_duration(s).map_err(|why| Error::Parse {
        what: "duration",
        input: s.to_string(),
        why,
    })
}

/// Where the receiving side runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Peer {
    /// 127.0.0.1, in the caller's namespace.
    #[default]
    Loopback,
    /// A thread `setns`'d into a network namespace, listening on `addr` there. `netns`
    /// is a name from `ip netns` (`/run/netns/<name>`) or a path such as
    /// `/proc/<pid>/ns/net`.
    Netns { netns: String, addr: Ipv4Addr },
}

impl Peer {
    fn addr(&self) -> Ipv4Addr {
        match self {
            Peer::Loopback => Ipv4Addr::LOCALHOST,
            Peer::Netns { addr, .. } => *addr,
        }
    }

    fn netns_path(&self) -> Option<PathBuf> {
        match self {
            Peer::Loopback => None,
            Peer::Netns { netns, .. } if netns.contains('/') => Some(PathBuf::from(netns)),
            Peer::Netns { netns, .. } => Some(PathBuf::from("/run/netns").join(netns)),
        }
    }
}

/// What to send. TCP runs first, then UDP, each with its own receiver.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// N `send()` calls of S bytes on one TCP connection.
    pub tcp: Option<Calls>,
    /// M `sendto()` calls of U bytes.
    pub udp: Option<Calls>,
    pub peer: Peer,
    /// Receiver port (TCP and UDP alike); 0 picks a free one, reported in the summary.
    pub port: u16,
    /// Pause between consecutive calls (e.g. 10 KB every 20 ms), on a fixed schedule so
    /// slow calls don't stretch the run.
    pub interval: Option<Duration>,
    /// Stop sending after this long even if fewer calls were made; the summary says how
    /// many were.
    pub duration: Option<Duration>,
    /// UDP as fast as possible, to overflow a tracer's ring buffer: no pacing, and the
    /// receiver is not waited for (datagrams may be lost; the sender's count is the
    /// truth, failed `sendto()`s are counted rather than fatal).
    pub flood: bool,
    /// How long the UDP receiver keeps waiting for missing datagrams after the sender
    /// is done and nothing arrives.
    pub drain_timeout: Duration,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            tcp: None,
            udp: None,
            peer: Peer::Loopback,
            port: 0,
            interval: None,
            duration: None,
            flood: false,
            drain_timeout: Duration::from_secs(1),
        }
    }
}

/// What happened, for one protocol.
#[derive(Debug, Clone, Serialize)]
pub struct FlowSummary {
    /// `send()`/`sendto()` calls that moved their whole buffer.
    pub calls: u64,
    /// Bytes per call.
    pub call_size: usize,
    /// Calls that failed (flood mode only; otherwise a failure ends the run).
    pub failed_calls: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// `recv()` calls on the receiver that returned data (the final EOF/timeout calls
    /// are not counted).
    pub recv_calls: u64,
    /// UDP: datagrams received (equals `recv_calls`); TCP: 0.
    pub datagrams_received: u64,
    /// Sender's socket address.
    pub local: SocketAddr,
    /// Receiver's socket address.
    pub remote: SocketAddr,
    /// Thread ids, to tell the two sides apart in a trace of this process.
    pub sender_tid: i32,
    pub receiver_tid: i32,
    /// From the first call until the receiver was done.
    pub elapsed_us: u64,
}

/// The whole run, printed by `magnet loadgen` as one JSON line.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub pid: u32,
    /// The peer namespace, if any.
    pub netns: Option<String>,
    pub tcp: Option<FlowSummary>,
    pub udp: Option<FlowSummary>,
    pub elapsed_us: u64,
}

/// Errors that end a run. A run that ends with an error never reports a summary, so
/// a summary is always the exact truth. The OS error is the `source()`, not repeated
/// in the message, so `{:#}` chains print it once.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid {what} `{input}`: {why}")]
    Parse {
        what: &'static str,
        input: String,
        why: String,
    },
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("entering network namespace {path}")]
    Netns {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{proto} call {call} (of {size} bytes) failed")]
    Send {
        proto: &'static str,
        call: u64,
        size: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("{proto} call {call} sent {sent} of {size} bytes: a short send would make the counts inexact")]
    ShortSend {
        proto: &'static str,
        call: u64,
        sent: usize,
        size: usize,
    },
    #[error("TCP receiver got {received} bytes but {sent} were sent")]
    Mismatch { sent: u64, received: u64 },
    #[error("receiver thread panicked")]
    ReceiverPanicked,
    #[error("nothing to do: give TCP calls, UDP calls or both")]
    Nothing,
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Runs the spec: TCP phase, then UDP phase.
pub fn run(spec: &LoadSpec) -> Result<Summary> {
    if spec.tcp.is_none() && spec.udp.is_none() {
        return Err(Error::Nothing);
    }
    let start = Instant::now();
    let tcp = spec.tcp.map(|c| tcp::run(spec, c)).transpose()?;
    let udp = spec.udp.map(|c| udp::run(spec, c)).transpose()?;
    Ok(Summary {
        pid: std::process::id(),
        netns: match &spec.peer {
            Peer::Loopback => None,
            Peer::Netns { netns, .. } => Some(netns.clone()),
        },
        tcp,
        udp,
        elapsed_us: micros(start.elapsed()),
    })
}

pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Paces calls: `wait(i)` sleeps until call `i` is due (`start + i·interval`), and
/// says whether `duration` still allows it.
pub(crate) struct Pacer {
    start: Instant,
    interval: Option<Duration>,
    deadline: Option<Instant>,
}

impl Pacer {
    pub(crate) fn new(interval: Option<Duration>, duration: Option<Duration>) -> Pacer {
        let start = Instant::now();
        Pacer {
            start,
            interval,
            deadline: duration.map(|d| start + d),
        }
    }

    pub(crate) fn start(&self) -> Instant {
        self.start
    }

    /// Waits for call `i`; false when the run's duration is over. Paced calls are
    /// judged by when they are due, not when the thread woke, so how many fit in a
    /// duration does not depend on machine load.
    pub(crate) fn wait(&self, i: u64) -> bool {
        match self.interval {
            Some(iv) => {
                let due = self.start + iv.saturating_mul(u32::try_from(i).unwrap_or(u32::MAX));
                if self.deadline.is_some_and(|dl| due >= dl) {
                    return false;
                }
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                true
            }
            None => self.deadline.is_none_or(|dl| Instant::now() < dl),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_calls() {
        assert_eq!(
            "100x1000".parse::<Calls>().unwrap(),
            Calls {
                count: 100,
                size: 1000
            }
        );
        assert_eq!("10x64k".parse::<Calls>().unwrap().size, 65536);
        assert_eq!("3X1M".parse::<Calls>().unwrap().size, 1 << 20);
        for bad in ["100", "x10", "10x", "ax10", "10xq", "-1x10"] {
            assert!(bad.parse::<Calls>().is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("20ms").unwrap(), Duration::from_millis(20));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        // a bare number is seconds, as everywhere (magnet_common::units)
        assert_eq!(parse_duration("20").unwrap(), Duration::from_secs(20));
        assert_eq!(parse_duration("5h").unwrap(), Duration::from_secs(5 * 3600));
        for bad in ["ms", "5 fortnights", "-1s", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn netns_names_and_paths() {
        let p = |n: &str| {
            Peer::Netns {
                netns: n.into(),
                addr: Ipv4Addr::LOCALHOST,
            }
            .netns_path()
        };
        assert_eq!(p("blue"), Some(PathBuf::from("/run/netns/blue")));
        assert_eq!(p("/proc/1/ns/net"), Some(PathBuf::from("/proc/1/ns/net")));
    }
}
