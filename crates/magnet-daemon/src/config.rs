//! magnetd's configuration: a TOML file, every key optional.
//!
//! ```toml
//! http = "127.0.0.1:9595"              # "" turns HTTP off
//! socket = "/run/magnet/magnetd.sock"  # "" turns the Unix socket off
//! socket_mode = "0666"                 # who may connect (answers are per uid anyway; 0600 to 0777)
//! max_connections = 16384              # connection map size (kernel memory is bounded by it)
//! retain_closed = "60s"                # keep a closed connection's summary this long
//! idle = "10m"                         # forget sockets without a call for this long
//! max_clients = 32                     # clients served at once, each of the Unix socket and HTTP (1 to 4096)
//! max_clients_per_uid = 8              # … of them one uid (HTTP: the uid owning a loopback peer) (1 to max_clients; default a quarter)
//! request_timeout = "5s"               # a request must arrive whole this long after its first byte (100ms to 60s)
//! packet_hooks = "sampled"             # per-packet programs: "sampled" | "always" | "off" (below)
//! packet_window = "100ms"              # sampled: attached this long …
//! packet_period = "2s"                 # … at the start of every period
//! stage_hooks = "sampled"              # stage programs (send calls' start, TCP's receive): "sampled" (in the same windows) | "always"
//! app_calls = "syscalls"               # an app call: "syscalls" (one per system call or io_uring request) | "sends"
//! send_stages_every = 16               # time one send call in this many per connection (1 to 65536; stack_latency)
//! receive_stages_every = 16            # time one received TCP data packet in this many per CPU (1 to 65536)
//! bpf_stats = true                     # the kernel's BPF run-time statistics, for magnetd's cost metrics (below; or "sampled")
//!
//! [metrics]
//! connection_ports = [5432]            # per-connection series for these local or remote ports
//! connection_containers = ["3f2a…"]    # … and for connections of these containers
//! max_connection_series = 100          # at most this many connections get series (1 to 100000)
//!
//! [recorder]                            # the flight recorder (off without this section)
//! seconds = "10s"                      # a dump reaches back at least this far (1s to 1h)
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
//! host's wire totals. `"always"` keeps them attached; `"sampled"` (the
//! default) attaches them for `packet_window` of every `packet_period` and
//! destroys their links in between, so the latency histograms are samples
//! and the per-packet counts are not served (host wire totals come from the
//! interfaces' own counters instead); `"off"` never attaches them. `true` and
//! `false` are read as `"always"` and `"off"`. docs/daemon.md has what each
//! mode gives and costs.
//!
//! `stage_hooks`: the two stage programs that run at every send call
//! (`tp_btf/tcp_sendmsg_locked`, the start of the call that the send stages
//! time from) and at every TCP data packet received (`tp_btf/tcp_probe`, the
//! receive stages' queue stamp). `"sampled"` (the default) attaches them in
//! the windows `packet_window` and `packet_period` give (whatever
//! `packet_hooks` says) and destroys their links in between, so the stages
//! are timed for one call in `send_stages_every` (one packet in
//! `receive_stages_every`) of those made in a window, plus each connection's
//! first send call; `"always"` keeps them attached. The TX timestamp
//! callbacks themselves (sock_ops) stay on: a call timed in a window gets its
//! stamps after it closes. docs/daemon.md has what each costs.
//!
//! `app_calls`: `"syscalls"` (the default) counts one app call per system
//! call or io_uring request, as `magnet record` does, with a program at every
//! system call's exit on the host (about 65 ns each, docs/daemon.md);
//! `"sends"` leaves that program out and counts every send and receive the
//! kernel makes as a call (a `sendfile()` of 1 MiB: 16), for hosts that cannot
//! pay for it. Bytes are the same either way.
//!
//! `bpf_stats`: `true` or `"full"` (the default) turns the kernel's run-time
//! statistics on for magnetd's life, so that /metrics gives each program's
//! run time. They are host-wide: every BPF program on the host then reads
//! the clock twice more per run (docs/daemon.md has what that cost on a VM).
//! `"sampled"` holds them on for the first 2 s, then for 50 ms in every
//! 500 ms, and estimates the runs and time in between (a tenth of the tax;
//! each window flips the kernel's static key, which patches its code).
//! `false` or `"off"` leaves them off; `magnet_bpf_stats_enabled` is then 0
//! and the log says so.
//!
//! SIGHUP re-reads the file: metrics selection, reaping and the sampler
//! change at once; the listen addresses, map size, app_calls, bpf_stats and
//! the packet_* keys need a restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::Error;

/// The defaults, also what magnetd uses without a file.
pub const DEFAULT_HTTP: &str = "127.0.0.1:9595";
pub const DEFAULT_SOCKET: &str = magnet_client::DEFAULT_SOCKET;

/// How magnetd holds the kernel's run-time statistics for its cost metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BpfStats {
    /// On for magnetd's life: every run counted.
    Full,
    /// On for the first 2 s, then 50 ms in every 500 ms; the runs and time
    /// in between estimated (`magnet_bpf_stats_on_ratio` says how much was
    /// counted).
    Sampled,
    /// Left off: no BPF time series.
    Off,
}

impl BpfStats {
    pub fn name(self) -> &'static str {
        match self {
            BpfStats::Full => "full",
            BpfStats::Sampled => "sampled",
            BpfStats::Off => "off",
        }
    }
}

/// When the per-packet programs (cgroup_skb egress/ingress on the cgroup v2
/// root) are attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketHooks {
    /// Never: no latency histograms, no per-packet counts.
    Off,
    /// For `window` at the start of every `period`, their links destroyed in
    /// between: the latency histograms are samples; per-packet counts are
    /// not served.
    Sampled { window: Duration, period: Duration },
    /// All the time: every packet runs them.
    Always,
}

impl PacketHooks {
    /// The default: 100 ms of every 2 s (5 % of the time).
    pub const DEFAULT: PacketHooks = PacketHooks::Sampled {
        window: Duration::from_millis(100),
        period: Duration::from_secs(2),
    };

    /// "off", "sampled" or "always" (as the API and /metrics say it).
    pub fn name(&self) -> &'static str {
        match self {
            PacketHooks::Off => "off",
            PacketHooks::Sampled { .. } => "sampled",
            PacketHooks::Always => "always",
        }
    }

    /// Whether the programs ever run (latency marks are kept at all).
    pub fn ever(&self) -> bool {
        !matches!(self, PacketHooks::Off)
    }
}

/// When the stage programs (the start of each send call, TCP's receive of
/// each data packet) are attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageHooks {
    /// In the sampling windows (the per-packet programs' schedule, whether
    /// or not those are sampled): the stages are timed in the windows only.
    Sampled { window: Duration, period: Duration },
    /// All the time.
    Always,
}

impl StageHooks {
    /// The default: in the per-packet programs' default windows.
    pub const DEFAULT: StageHooks = match PacketHooks::DEFAULT {
        PacketHooks::Sampled { window, period } => StageHooks::Sampled { window, period },
        _ => StageHooks::Always,
    };

    /// "sampled" or "always" (as /health says it).
    pub fn name(&self) -> &'static str {
        match self {
            StageHooks::Sampled { .. } => "sampled",
            StageHooks::Always => "always",
        }
    }
}

/// The sampling windows' schedule (window, period), when the per-packet or
/// the stage programs are sampled (both then keep the same windows).
pub fn windows(packets: PacketHooks, stages: StageHooks) -> Option<(Duration, Duration)> {
    match (packets, stages) {
        (PacketHooks::Sampled { window, period }, _)
        | (_, StageHooks::Sampled { window, period }) => Some((window, period)),
        _ => None,
    }
}

/// What magnetd counts as one app call (`app_calls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppCalls {
    /// One per system call or io_uring request (a program at every syscall exit).
    Syscalls,
    /// Every send and receive the kernel makes (no syscall-exit program).
    Sends,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub http: Option<SocketAddr>,
    pub socket: Option<PathBuf>,
    pub socket_mode: u32,
    pub max_connections: u32,
    pub retain_closed: Duration,
    pub idle: Duration,
    pub max_clients: usize,
    pub max_clients_per_uid: usize,
    pub request_timeout: Duration,
    pub packet_hooks: PacketHooks,
    pub stage_hooks: StageHooks,
    pub app_calls: AppCalls,
    /// How magnetd holds the kernel's run-time statistics (`bpf_stats`).
    pub bpf_stats: BpfStats,
    /// Stage timing: one send call in this many per connection, one
    /// received data packet in this many per CPU.
    pub stages_every: StagesEvery,
    pub metrics: MetricsConfig,
    pub sample: Option<SampleSettings>,
    pub recorder: Option<crate::flight::FlightConfig>,
}

/// How many send calls and received packets per one timed (1: all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagesEvery {
    pub send: u32,
    pub receive: u32,
}

impl StagesEvery {
    /// Every call and packet (the tests' setting).
    pub const ALL: StagesEvery = StagesEvery {
        send: 1,
        receive: 1,
    };
    /// The defaults (docs/daemon.md and bench/notes have the costs).
    pub const DEFAULT: StagesEvery = StagesEvery {
        send: 16,
        receive: 16,
    };
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
            max_clients_per_uid: 8,
            request_timeout: Duration::from_secs(5),
            packet_hooks: PacketHooks::DEFAULT,
            stage_hooks: StageHooks::DEFAULT,
            app_calls: AppCalls::Syscalls,
            bpf_stats: BpfStats::Full,
            stages_every: StagesEvery::DEFAULT,
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
    max_clients: Option<u64>,
    max_clients_per_uid: Option<u64>,
    request_timeout: Option<String>,
    packet_hooks: Option<RawHooks>,
    packet_window: Option<String>,
    packet_period: Option<String>,
    stage_hooks: Option<String>,
    app_calls: Option<String>,
    bpf_stats: Option<RawHooks>,
    send_stages_every: Option<u64>,
    receive_stages_every: Option<u64>,
    #[serde(default)]
    metrics: RawMetrics,
    sample: Option<RawSample>,
    recorder: Option<RawRecorder>,
}

/// `packet_hooks` and `bpf_stats` as written: a mode name or (older configs) a bool.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawHooks {
    Bool(bool),
    Name(String),
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
    max_connection_series: Option<u64>,
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
    /// The sampling windows' schedule: see [`windows`].
    pub fn windows(&self) -> Option<(Duration, Duration)> {
        windows(self.packet_hooks, self.stage_hooks)
    }

    /// Reads `path`; every error names the file and the key.
    pub fn load(path: &Path) -> Result<Config, Error> {
        let text = magnet_common::input::read_capped_string(
            path,
            magnet_common::input::CONFIG_MAX,
            "a config file",
        )
        .map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parses TOML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, Error> {
        let o = Origin(origin);
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| o.bad(e.to_string().trim().replace('\n', " ")))?;
        let mut c = Config::default();
        o.listeners(&raw, &mut c)?;
        c.app_calls = o.app_calls(raw.app_calls.as_deref())?;
        c.bpf_stats = o.bpf_stats(raw.bpf_stats.as_ref())?;
        (c.packet_hooks, c.stage_hooks) = o.hooks(&raw)?;
        o.limits(&raw, &mut c)?;
        c.metrics.connection_ports = raw.metrics.connection_ports;
        c.metrics.connection_containers = raw.metrics.connection_containers;
        if let Some(n) = raw.metrics.max_connection_series {
            if !(1..=100_000).contains(&n) {
                return Err(o.bad(format!(
                    "metrics.max_connection_series = {n}: give 1 to 100000 \
                     (for no per-connection series leave connection_ports and connection_containers empty)"
                )));
            }
            c.metrics.max_connection_series = n as usize;
        }
        if let Some(s) = raw.sample {
            magnet_runs::schedule::Schedule::parse(&s.schedule)
                .map_err(|e| o.bad(format!("sample.schedule: {e}")))?;
            c.sample = Some(SampleSettings {
                interface: s.interface,
                schedule: s.schedule,
                store: PathBuf::from(s.store),
                retain: s.retain.map(|r| o.dur("sample.retain", &r)).transpose()?,
            });
        }
        if let Some(r) = raw.recorder {
            c.recorder = Some(o.recorder(r, c.packet_hooks)?);
        }
        Ok(c)
    }
}

/// Where a config came from, for errors that name it and the key.
struct Origin<'a>(&'a str);

impl Origin<'_> {
    fn bad(&self, reason: String) -> Error {
        Error::Config {
            path: self.0.to_string(),
            reason,
        }
    }

    fn dur(&self, key: &str, v: &str) -> Result<Duration, Error> {
        magnet_common::units::parse_duration(v).map_err(|e| self.bad(format!("{key}: {e}")))
    }

    /// `http`, `socket` and `socket_mode`.
    fn listeners(&self, raw: &RawConfig, c: &mut Config) -> Result<(), Error> {
        if let Some(h) = &raw.http {
            c.http = if h.is_empty() {
                None
            } else {
                Some(h.parse().map_err(|_| {
                    self.bad(format!(
                        "http = {h:?}: not an address:port (e.g. 127.0.0.1:9595)"
                    ))
                })?)
            };
        }
        if let Some(s) = &raw.socket {
            c.socket = (!s.is_empty()).then(|| PathBuf::from(s));
        }
        if let Some(m) = &raw.socket_mode {
            c.socket_mode = u32::from_str_radix(m.trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777 && m & 0o600 == 0o600)
                .ok_or_else(|| {
                    self.bad(format!(
                        "socket_mode = {m:?}: give an octal mode from \"0600\" to \"0777\" \
                         (the owner must read and write)"
                    ))
                })?;
        }
        Ok(())
    }

    fn bpf_stats(&self, v: Option<&RawHooks>) -> Result<BpfStats, Error> {
        match v {
            None | Some(RawHooks::Bool(true)) => Ok(BpfStats::Full),
            Some(RawHooks::Bool(false)) => Ok(BpfStats::Off),
            Some(RawHooks::Name(n)) => match n.as_str() {
                "full" => Ok(BpfStats::Full),
                "sampled" => Ok(BpfStats::Sampled),
                "off" => Ok(BpfStats::Off),
                other => Err(self.bad(format!(
                    "bpf_stats = {other:?}: give true (\"full\"), \"sampled\" or false (\"off\")"
                ))),
            },
        }
    }

    fn app_calls(&self, v: Option<&str>) -> Result<AppCalls, Error> {
        match v {
            None | Some("syscalls") => Ok(AppCalls::Syscalls),
            Some("sends") => Ok(AppCalls::Sends),
            Some(other) => Err(self.bad(format!(
                "app_calls = {other:?}: give \"syscalls\" or \"sends\""
            ))),
        }
    }

    /// `packet_hooks` and `stage_hooks`, with the windows' `packet_window`
    /// and `packet_period` (which only a sampled mode takes).
    fn hooks(&self, raw: &RawConfig) -> Result<(PacketHooks, StageHooks), Error> {
        let packets = match &raw.packet_hooks {
            None => "sampled",
            Some(RawHooks::Bool(true)) => "always",
            Some(RawHooks::Bool(false)) => "off",
            Some(RawHooks::Name(n)) => match n.as_str() {
                m @ ("sampled" | "always" | "off") => m,
                other => {
                    return Err(self.bad(format!(
                        "packet_hooks = {other:?}: give \"sampled\", \"always\" or \"off\""
                    )))
                }
            },
        };
        let stages = match raw.stage_hooks.as_deref() {
            None => "sampled",
            Some(m @ ("sampled" | "always")) => m,
            Some(other) => {
                return Err(self.bad(format!(
                    "stage_hooks = {other:?}: give \"sampled\" or \"always\""
                )))
            }
        };
        if packets != "sampled" && stages != "sampled" {
            if let Some(k) = [
                ("packet_window", &raw.packet_window),
                ("packet_period", &raw.packet_period),
            ]
            .iter()
            .find_map(|(k, v)| v.is_some().then_some(*k))
            {
                return Err(self.bad(format!(
                    "{k} applies only to packet_hooks or stage_hooks = \"sampled\" \
                     (this file says packet_hooks = {packets:?}, stage_hooks = {stages:?})"
                )));
            }
        }
        let PacketHooks::Sampled {
            mut window,
            mut period,
        } = PacketHooks::DEFAULT
        else {
            unreachable!("the default is sampled")
        };
        if let Some(v) = &raw.packet_window {
            window = self.dur("packet_window", v)?;
        }
        if let Some(v) = &raw.packet_period {
            period = self.dur("packet_period", v)?;
        }
        if window < Duration::from_millis(10) {
            return Err(self.bad(format!(
                "packet_window = {:?}: at least 10ms (attaching takes about a millisecond)",
                raw.packet_window.as_deref().unwrap_or_default()
            )));
        }
        if window >= period {
            return Err(self.bad(format!(
                "packet_window ({}) must be shorter than packet_period ({}); \
                 for programs attached all the time say packet_hooks = \"always\" \
                 and stage_hooks = \"always\"",
                magnet_common::units::format_duration(window),
                magnet_common::units::format_duration(period)
            )));
        }
        let packet_hooks = match packets {
            "always" => PacketHooks::Always,
            "off" => PacketHooks::Off,
            _ => PacketHooks::Sampled { window, period },
        };
        let stage_hooks = match stages {
            "always" => StageHooks::Always,
            _ => StageHooks::Sampled { window, period },
        };
        Ok((packet_hooks, stage_hooks))
    }

    /// The connection map's size, how long closed and idle connections are
    /// kept, and the limits on clients.
    fn limits(&self, raw: &RawConfig, c: &mut Config) -> Result<(), Error> {
        if let Some(n) = raw.max_connections {
            if n == 0 || n > 1 << 22 {
                return Err(self.bad(format!("max_connections = {n}: give 1 to 4194304")));
            }
            c.max_connections = n;
        }
        for (k, v, to) in [
            (
                "send_stages_every",
                raw.send_stages_every,
                &mut c.stages_every.send,
            ),
            (
                "receive_stages_every",
                raw.receive_stages_every,
                &mut c.stages_every.receive,
            ),
        ] {
            match v {
                Some(n @ 1..=65536) => *to = n as u32,
                Some(n) => return Err(self.bad(format!("{k} = {n}: give 1 to 65536"))),
                None => {}
            }
        }
        if let Some(v) = &raw.retain_closed {
            c.retain_closed = self.dur("retain_closed", v)?;
        }
        if let Some(v) = &raw.idle {
            c.idle = self.dur("idle", v)?;
        }
        if let Some(n) = raw.max_clients {
            if !(1..=4096).contains(&n) {
                return Err(self.bad(format!("max_clients = {n}: give 1 to 4096")));
            }
            c.max_clients = n as usize;
        }
        // Unless given: a quarter of max_clients.
        c.max_clients_per_uid = (c.max_clients / 4).max(1);
        if let Some(n) = raw.max_clients_per_uid {
            if n == 0 || n > c.max_clients as u64 {
                return Err(self.bad(format!(
                    "max_clients_per_uid = {n}: give 1 to max_clients ({})",
                    c.max_clients
                )));
            }
            c.max_clients_per_uid = n as usize;
        }
        if let Some(v) = &raw.request_timeout {
            let t = self.dur("request_timeout", v)?;
            if t < Duration::from_millis(100) || t > Duration::from_secs(60) {
                return Err(self.bad(format!("request_timeout = {v:?}: give 100ms to 60s")));
            }
            c.request_timeout = t;
        }
        Ok(())
    }

    /// The `[recorder]` table: the flight recorder and its triggers, some
    /// of which need the packet hooks.
    fn recorder(
        &self,
        r: RawRecorder,
        packet_hooks: PacketHooks,
    ) -> Result<crate::flight::FlightConfig, Error> {
        let mut f = crate::flight::FlightConfig::default();
        if let Some(v) = r.seconds {
            let t = self.dur("recorder.seconds", &v)?;
            if t < Duration::from_secs(1) || t > Duration::from_secs(3600) {
                return Err(self.bad(format!("recorder.seconds = {v:?}: give 1s to 1h")));
            }
            f.seconds = t;
        }
        if let Some(n) = r.max_bytes {
            if n < 1 << 20 {
                return Err(self.bad(format!("recorder.max_bytes = {n}: at least 1048576")));
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
            f.trigger_latency = Some(self.dur("recorder.trigger_latency", &v)?);
        }
        if let Some(v) = r.trigger_stall {
            let t = self.dur("recorder.trigger_stall", &v)?;
            if t < Duration::from_millis(100) {
                return Err(self.bad(format!("recorder.trigger_stall = {v:?}: at least 100ms")));
            }
            f.trigger_stall = Some(t);
        }
        f.trigger_stall_ports = r.trigger_stall_ports;
        if !packet_hooks.ever() && f.trigger_latency.is_some() {
            return Err(self.bad(
                "recorder.trigger_latency needs packet_hooks = \"sampled\" or \"always\" \
                 (it reads the latency histograms the per-packet programs fill)"
                    .into(),
            ));
        }
        if packet_hooks != PacketHooks::Always && f.trigger_stall.is_some() {
            return Err(self.bad(format!(
                "recorder.trigger_stall needs packet_hooks = \"always\" (its marks follow \
                 every packet; with packet_hooks = {:?} they would miss packets)",
                packet_hooks.name()
            )));
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests;
