//! magnetd's configuration: a TOML file, every key optional.
//!
//! ```toml
//! http = "127.0.0.1:9595"              # "" turns HTTP off
//! socket = "/run/magnet/magnetd.sock"  # "" turns the Unix socket off
//! socket_mode = "0666"                 # who may connect (answers are per uid anyway)
//! max_connections = 16384              # connection map size (kernel memory is bounded by it)
//! retain_closed = "60s"                # keep a closed connection's summary this long
//! idle = "10m"                         # forget sockets without a call for this long
//! max_clients = 32                     # concurrent API clients
//! packet_hooks = true                  # per-packet cgroup_skb programs (see below)
//!
//! [metrics]
//! connection_ports = [5432]            # per-connection series for these local or remote ports
//! connection_containers = ["3f2a…"]    # … and for connections of these containers
//! max_connection_series = 100          # at most this many connections get series
//!
//! [recorder]                            # the flight recorder (off without this section)
//! seconds = "10s"                      # a dump reaches back at least this far
//! max_bytes = 268435456                # what the segments hold together, at most
//! dir = "/run/magnet/flight"           # tmpfs: memory
//! dump_dir = "/var/lib/magnet/dumps"   # where triggered dumps go
//! trigger_retransmits_per_s = 100      # dump on a retransmit burst
//! trigger_drop_reasons = ["TCP_OVERWINDOW"]  # dump when one of these drops happens
//! trigger_latency = "50ms"             # dump when a connection's latency sample reaches this
//! trigger_stall = "2s"                 # dump when an application lets data wait this long
//! trigger_stall_ports = [5432]         # only connections with one of these ports (default: all)
//!
//! [sample]                              # the sampler under the daemon
//! interface = "eth0"
//! schedule = "10ms,1ms,100us every 1m"
//! store = "/var/lib/magnet/runs"
//! retain = "3d"
//! ```
//!
//! `packet_hooks`: TCP's wire counters (bytes, segments, retransmits, srtt,
//! cwnd, send-buffer occupancy) are the kernel's own per-socket counters,
//! read when asked, whatever this says. The per-packet programs (on the
//! cgroup v2 root, egress and ingress) add what only a packet shows: the
//! app→wire and wire→app latency histograms (and the stall and latency
//! triggers built on them), wire counters of sockets other than TCP, and the
//! host's wire totals. `false` leaves them out: the cheapest always-on mode
//! (see docs/daemon.md for the measured cost of each).
//!
//! SIGHUP re-reads the file: metrics selection, reaping and the sampler
//! change at once; the listen addresses, map size and packet_hooks need a
//! restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::Error;

/// The defaults, also what magnetd uses without a file.
pub const DEFAULT_HTTP: &str = "127.0.0.1:9595";
pub const DEFAULT_SOCKET: &str = magnet_client::DEFAULT_SOCKET;

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub http: Option<SocketAddr>,
    pub socket: Option<PathBuf>,
    pub socket_mode: u32,
    pub max_connections: u32,
    pub retain_closed: Duration,
    pub idle: Duration,
    pub max_clients: usize,
    pub packet_hooks: bool,
    pub metrics: MetricsConfig,
    pub sample: Option<SampleSettings>,
    pub recorder: Option<crate::flight::FlightConfig>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MetricsConfig {
    pub connection_ports: Vec<u16>,
    pub connection_containers: Vec<String>,
    pub max_connection_series: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SampleSettings {
    pub interface: String,
    pub schedule: String,
    pub store: PathBuf,
    pub retain: Option<Duration>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            http: Some(DEFAULT_HTTP.parse().expect("valid default")),
            socket: Some(PathBuf::from(DEFAULT_SOCKET)),
            socket_mode: 0o666,
            max_connections: 16384,
            retain_closed: Duration::from_secs(60),
            idle: Duration::from_secs(600),
            max_clients: 32,
            packet_hooks: true,
            metrics: MetricsConfig {
                connection_ports: Vec::new(),
                connection_containers: Vec::new(),
                max_connection_series: 100,
            },
            sample: None,
            recorder: None,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    http: Option<String>,
    socket: Option<String>,
    socket_mode: Option<String>,
    max_connections: Option<u32>,
    retain_closed: Option<String>,
    idle: Option<String>,
    max_clients: Option<usize>,
    packet_hooks: Option<bool>,
    #[serde(default)]
    metrics: RawMetrics,
    sample: Option<RawSample>,
    recorder: Option<RawRecorder>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecorder {
    seconds: Option<String>,
    max_bytes: Option<u64>,
    dir: Option<String>,
    dump_dir: Option<String>,
    trigger_retransmits_per_s: Option<u64>,
    #[serde(default)]
    trigger_drop_reasons: Vec<String>,
    trigger_latency: Option<String>,
    trigger_stall: Option<String>,
    #[serde(default)]
    trigger_stall_ports: Vec<u16>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    #[serde(default)]
    connection_ports: Vec<u16>,
    #[serde(default)]
    connection_containers: Vec<String>,
    max_connection_series: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSample {
    interface: String,
    schedule: String,
    store: String,
    retain: Option<String>,
}

impl Config {
    /// Reads `path`; every error names the file and the key.
    pub fn load(path: &Path) -> Result<Config, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parses TOML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, Error> {
        let bad = |reason: String| Error::Config {
            path: origin.to_string(),
            reason,
        };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| bad(e.to_string().trim().replace('\n', " ")))?;
        let mut c = Config::default();
        if let Some(h) = raw.http {
            c.http = if h.is_empty() {
                None
            } else {
                Some(h.parse().map_err(|_| {
                    bad(format!(
                        "http = {h:?}: not an address:port (e.g. 127.0.0.1:9595)"
                    ))
                })?)
            };
        }
        if let Some(s) = raw.socket {
            c.socket = (!s.is_empty()).then(|| PathBuf::from(s));
        }
        if let Some(m) = raw.socket_mode {
            c.socket_mode = u32::from_str_radix(m.trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| {
                    bad(format!(
                        "socket_mode = {m:?}: not an octal mode like \"0666\""
                    ))
                })?;
        }
        if let Some(p) = raw.packet_hooks {
            c.packet_hooks = p;
        }
        if let Some(n) = raw.max_connections {
            if n == 0 || n > 1 << 22 {
                return Err(bad(format!("max_connections = {n}: give 1 to 4194304")));
            }
            c.max_connections = n;
        }
        let dur = |key: &str, v: &str| {
            magnet_common::units::parse_duration(v).map_err(|e| bad(format!("{key}: {e}")))
        };
        if let Some(v) = raw.retain_closed {
            c.retain_closed = dur("retain_closed", &v)?;
        }
        if let Some(v) = raw.idle {
            c.idle = dur("idle", &v)?;
        }
        if let Some(n) = raw.max_clients {
            c.max_clients = n.max(1);
        }
        c.metrics.connection_ports = raw.metrics.connection_ports;
        c.metrics.connection_containers = raw.metrics.connection_containers;
        if let Some(n) = raw.metrics.max_connection_series {
            c.metrics.max_connection_series = n;
        }
        if let Some(s) = raw.sample {
            magnet_runs::schedule::Schedule::parse(&s.schedule)
                .map_err(|e| bad(format!("sample.schedule: {e}")))?;
            c.sample = Some(SampleSettings {
                interface: s.interface,
                schedule: s.schedule,
                store: PathBuf::from(s.store),
                retain: s.retain.map(|r| dur("sample.retain", &r)).transpose()?,
            });
        }
        if let Some(r) = raw.recorder {
            let mut f = crate::flight::FlightConfig::default();
            if let Some(v) = r.seconds {
                f.seconds = dur("recorder.seconds", &v)?;
            }
            if let Some(n) = r.max_bytes {
                if n < 1 << 20 {
                    return Err(bad(format!("recorder.max_bytes = {n}: at least 1048576")));
                }
                f.max_bytes = n;
            }
            if let Some(d) = r.dir {
                f.dir = PathBuf::from(d);
            }
            if let Some(d) = r.dump_dir {
                f.dump_dir = PathBuf::from(d);
            }
            f.trigger_retransmits_per_s = r.trigger_retransmits_per_s;
            f.trigger_drop_reasons = r.trigger_drop_reasons;
            if let Some(v) = r.trigger_latency {
                f.trigger_latency = Some(dur("recorder.trigger_latency", &v)?);
            }
            if let Some(v) = r.trigger_stall {
                let t = dur("recorder.trigger_stall", &v)?;
                if t < Duration::from_millis(100) {
                    return Err(bad(format!(
                        "recorder.trigger_stall = {v:?}: at least 100ms"
                    )));
                }
                f.trigger_stall = Some(t);
            }
            f.trigger_stall_ports = r.trigger_stall_ports;
            if !c.packet_hooks && (f.trigger_latency.is_some() || f.trigger_stall.is_some()) {
                return Err(bad(
                    "recorder.trigger_latency and recorder.trigger_stall need packet_hooks = true \
                     (the latency marks they read are set by the per-packet programs)"
                        .into(),
                ));
            }
            c.recorder = Some(f);
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_defaults() {
        assert_eq!(Config::parse("", "t").unwrap(), Config::default());
    }

    #[test]
    fn keys_are_read_and_checked() {
        let c = Config::parse(
            "http = \"127.0.0.1:1\"\nsocket = \"\"\nretain_closed = \"2s\"\npacket_hooks = false\n[metrics]\nconnection_ports = [80, 443]\n",
            "t",
        )
        .unwrap();
        assert_eq!(c.http, Some("127.0.0.1:1".parse().unwrap()));
        assert_eq!(c.socket, None);
        assert_eq!(c.retain_closed, Duration::from_secs(2));
        assert_eq!(c.metrics.connection_ports, vec![80, 443]);
        assert!(!c.packet_hooks && Config::default().packet_hooks);
        for (bad, says) in [
            ("http = \"nope\"", "http"),
            ("retain_closed = \"3 weeks\"", "retain_closed"),
            ("max_connections = 0", "max_connections"),
            ("bogus = 1", "bogus"),
            ("packet_hooks = \"no\"", "packet_hooks"),
            ("socket_mode = \"999\"", "socket_mode"),
            ("[recorder]\ntrigger_stall = \"10ms\"", "trigger_stall"),
            ("[recorder]\ntrigger_stall = \"soon\"", "trigger_stall"),
            (
                "packet_hooks = false\n[recorder]\ntrigger_stall = \"2s\"",
                "need packet_hooks = true",
            ),
        ] {
            let e = Config::parse(bad, "magnetd.toml").unwrap_err().to_string();
            assert!(e.starts_with("magnetd.toml: "), "{e}");
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_stall_trigger_is_read() {
        let c = Config::parse(
            "[recorder]\ntrigger_stall = \"2s\"\ntrigger_stall_ports = [5432]\n",
            "t",
        )
        .unwrap();
        let r = c.recorder.unwrap();
        assert_eq!(r.trigger_stall, Some(Duration::from_secs(2)));
        assert_eq!(r.trigger_stall_ports, vec![5432]);
    }
}
