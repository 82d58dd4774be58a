//! What the analyses produce: plain data, serialisable, no behaviour. `docs/analyze.md`
//! says what every number means.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::dist::{LogHist, Stats};

/// The result of analysing one trace.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Analysis {
    pub trace: TraceSummary,
    pub connections: Vec<Connection>,
    pub sched: Sched,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TraceSummary {
    pub host: String,
    pub kernel: String,
    pub cpus: u32,
    /// CLOCK_MONOTONIC at the start of the recording: every `*_s` time in the
    /// analysis is seconds since this instant.
    pub start_mono_ns: u64,
    pub start_realtime_ns: u64,
    /// The recording's span: from its start (`start_mono_ns`) to its stop (the
    /// END block), or to the last record when the trace has no stop time. The
    /// same number `magnet info` and `magnet record --json` show.
    pub duration_s: f64,
    pub records: u64,
    pub records_by_layer: BTreeMap<String, u64>,
    /// Events the kernel could not record (sum of LOST records).
    pub lost_events: u64,
    pub lost: Vec<LostRegion>,
    /// Damage the reader stepped over, one line each.
    pub damage: Vec<String>,
    /// The trace has its END block.
    pub complete: bool,
    /// Packets seen at a layer that could not be tied to any connection.
    pub unattributed: Unattributed,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Unattributed {
    /// `dev_rx` packets that no later IP or TCP event of the same packet id claimed
    /// (real attribution failures: not those counted in `peer_rx`).
    pub dev_rx: u64,
    /// `dev_rx` packets without a socket that a traced socket had handed to a driver
    /// (same packet id and length): its own frames received at the other end of a
    /// veth in the peer's namespace, or by an untraced peer. Not this trace's
    /// sockets' receptions, and not failures.
    #[serde(default)]
    pub peer_rx: u64,
    /// `dev_start_xmit` packets without a socket and without an IP event of theirs.
    pub dev_tx: u64,
    /// IP packets whose 5-tuple matched no known socket.
    pub ip: u64,
    /// Handshake packets (SYN and handshake ACK in, SYN-ACK out) of a connection
    /// accepted by a listener that is not in the trace: the listener's, not the
    /// accepted socket's. Their received frames are counted here too
    /// (`no_listener_dev_rx`); the SYN-ACK's frame stays in `dev_tx`.
    #[serde(default)]
    pub no_listener_ip: u64,
    #[serde(default)]
    pub no_listener_dev_rx: u64,
    /// Outer IP packets of a tunnel (VXLAN, Geneve, GRE, IPsec, sit) that
    /// carried a traced socket's packets: sent with that socket's buffer (so
    /// with its cookie) but under another protocol or source port, or received
    /// at the tunnel's other end in the same trace. The tunnel's, not the
    /// socket's own (its rows count the inner packets), and not failures.
    #[serde(default)]
    pub tunnel_ip: u64,
    /// Their frames handed to a driver, and received where the tunnel ends.
    #[serde(default)]
    pub tunnel_dev_tx: u64,
    #[serde(default)]
    pub tunnel_dev_rx: u64,
}

/// Where events are missing: `count` events of CPU `cpu` were lost between
/// `from_s` (the last record of that CPU before the loss, when known) and `to_s`
/// (the LOST record, written as soon as the ring buffer had room again).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LostRegion {
    pub cpu: u32,
    pub count: u64,
    pub from_s: f64,
    pub to_s: f64,
}

/// One socket (its cookie) and what each layer did with its traffic.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Connection {
    pub cookie: u64,
    /// False for a cookie seen only on packets (a socket the recorder did not
    /// follow, e.g. of an untraced process): no SOCK, app or TCP record.
    pub known: bool,
    /// `tcp`, `udp` or the protocol number.
    pub protocol: String,
    /// `addr:port` of this socket's end, when known.
    pub local: Option<String>,
    pub remote: Option<String>,
    /// Network namespace inode of the socket.
    pub netns: Option<u64>,
    /// Processes (tgid) that made send/recv calls on it.
    pub pids: Vec<u32>,
    pub comm: String,
    /// TCP states the socket entered, in order.
    pub states: Vec<String>,
    pub first_s: f64,
    pub last_s: f64,
    /// First and last unit of any layer: where the connection's traffic is
    /// (the report's time plots span this).
    pub active_from_s: Option<f64>,
    pub active_to_s: Option<f64>,
    /// Events lost (of any kind, on any socket) in LOST regions that overlap
    /// `first_s..last_s`: this connection may be missing some of them.
    pub lost_in_span: u64,
    pub app: AppTotals,
    /// One row per layer and direction that saw units (MAGNeT's Table III).
    pub modulation: Vec<LayerRow>,
    /// How many app calls became how many packets, per direction.
    pub coalescing: Vec<Coalescing>,
    pub tcp: Option<TcpSummary>,
    pub latency: Latency,
    /// Points for plots (with `Options::series`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<ConnSeries>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppTotals {
    pub sent_bytes: u64,
    pub sent_calls: u64,
    pub recv_bytes: u64,
    /// recv calls that returned data (EOF and errors are not counted here).
    pub recv_calls: u64,
    /// Calls that returned an error.
    pub failed_calls: u64,
    /// Bytes sent by the app over the span of its sends, in bits per second.
    pub out_bps: Option<f64>,
    pub in_bps: Option<f64>,
}

/// One layer in one direction: its units, their sizes and spacing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerRow {
    /// `app`, `tcp`, `ip`, `dev`.
    pub layer: String,
    /// `out` (sent by this socket) or `in` (received by it).
    pub dir: String,
    /// What one unit is: `call`, `segment`, `rcv unit` (a tcp_probe call, in
    /// which TCP may have merged several queued segments: `tcp in` without IP
    /// events), `packet` or `frame`. docs/analyze.md has each in full.
    pub unit: String,
    /// The hook whose events gave the units.
    pub hook: String,
    pub units: u64,
    pub bytes: u64,
    /// Unit size in bytes.
    pub size: Stats,
    /// Time between consecutive units in nanoseconds (absent with one unit).
    pub interval_ns: Option<Stats>,
    /// bytes·8 / (last unit − first unit), bits per second.
    pub rate_bps: Option<f64>,
    pub first_s: f64,
    pub last_s: f64,
    /// Events lost (of any kind, on any socket) in LOST regions that overlap
    /// `first_s..last_s`: when not 0, this row may be missing units.
    pub lost_in_span: u64,
}

/// Calls versus packets in one direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Coalescing {
    pub dir: String,
    pub app_calls: u64,
    /// Units of the `tcp` row (see its `unit`).
    pub tcp_segments: u64,
    pub ip_packets: u64,
    pub dev_packets: u64,
    /// dev packets (else ip packets) per app call: > 1 the stack split calls,
    /// < 1 it coalesced them.
    pub packets_per_call: Option<f64>,
}

/// TCP state over the connection's life, from the `--tcp-state` snapshots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpSummary {
    pub samples: u64,
    /// Retransmissions as the kernel counts them: segments (nstat's
    /// TcpRetransSegs, ss's `retrans:` total, tcp_info's total_retrans),
    /// `None` for traces recorded before the record carried the count.
    pub retrans_segs: Option<u64>,
    /// The retransmitted skbs that held those segments (one tcp_retransmit_skb
    /// each) and their bytes (ss's `bytes_retrans`).
    #[serde(alias = "retransmits")]
    pub retrans_skbs: u64,
    #[serde(default)]
    pub bytes_retrans: u64,
    /// Segments of retransmissions the kernel tried and failed (the
    /// tracepoint's err, 6.13+): nothing was sent, so none of them is counted
    /// above. nstat's TCPRetransFail counts those that failed on the way down
    /// (a netfilter drop, a full qdisc), not those refused before (no route:
    /// -EHOSTUNREACH).
    #[serde(default)]
    pub retrans_failed: u64,
    /// Tries the kernel put off because the original was still queued on
    /// this host (err -EBUSY, TCP small queues): neither sent nor failed,
    /// counted nowhere by the kernel.
    #[serde(default)]
    pub retrans_busy: u64,
    /// Send-buffer occupancy: bytes written by the app and not yet acknowledged
    /// (write_seq − snd_una). Maximum and time-weighted mean.
    pub sndbuf_max: u64,
    pub sndbuf_mean: f64,
    /// Bytes sent and not yet acknowledged (snd_nxt − snd_una).
    pub inflight_max: u64,
    pub cwnd_min: u64,
    pub cwnd_max: u64,
    pub ssthresh_last: u64,
    /// Smoothed RTT samples (µs), zeros (no estimate yet) left out.
    pub srtt_us: Option<Stats>,
    pub snd_wnd_max: u64,
    pub rcv_wnd_max: u64,
    pub retrans_out_max: u64,
}

impl TcpSummary {
    /// The retransmissions in words, named as nstat and ss name them:
    /// `retrans_segs 180 in retrans_skbs 12 (bytes_retrans 260640), retrans_failed 0`.
    pub fn retrans_text(&self) -> String {
        let segs = self
            .retrans_segs
            .map_or("? (not in this trace)".to_string(), |n| n.to_string());
        format!(
            "retrans_segs {segs} in retrans_skbs {} (bytes_retrans {}), retrans_failed {}{}",
            self.retrans_skbs,
            self.bytes_retrans,
            self.retrans_failed,
            if self.retrans_busy > 0 {
                format!(
                    ", retrans_busy {} (put off: the original still queued)",
                    self.retrans_busy
                )
            } else {
                String::new()
            }
        )
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Per app send: from the call's first byte entering TCP (its first
    /// tcp_sendmsg_locked event) until the packet holding the call's last byte
    /// was handed to the driver whole (dev_start_xmit), ns.
    pub send: Option<Stats>,
    /// Sends whose last byte could not be followed to the device.
    pub send_unmatched: u64,
    /// Per received wire segment (IP LOCAL_IN; without IP events, per tcp_probe
    /// unit): arrival at the device (dev_rx, else LOCAL_IN, else tcp_probe)
    /// until the app recv that returned its first byte, ns.
    pub recv: Option<Stats>,
    pub recv_unmatched: u64,
    /// Per recv that consumed segments: how long the receiving thread was
    /// runnable but waiting for a CPU (wake-up → switched in) after the oldest
    /// segment arrived, ns.
    pub recv_cpu_wait: Option<Stats>,
    /// Sum of those waits over the sum of arrival→recv delays of the oldest
    /// segment of each recv.
    pub recv_cpu_wait_share: Option<f64>,
}

/// Points for plots, bounded: when a series of points would exceed its cap
/// every other point is dropped (and from then on only every 2nd, 4th … point
/// is kept). Time bins and histograms count every unit.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ConnSeries {
    pub marks: Vec<Marks>,
    pub tcp: Vec<TcpSample>,
    /// Latencies (ns) on a log axis, `LOG_BINS_PER_DECADE` bins per decade.
    pub send_latency_hist: LogHist,
    pub recv_latency_hist: LogHist,
}

/// Bins per power of ten of the series' log histograms.
pub const LOG_BINS_PER_DECADE: u32 = 10;

/// One layer and direction per time bin, every unit counted: bin `i` covers
/// `from_s + i·width_ns` up to the next; `min`/`max` are its smallest and
/// largest unit (0 where `units` is 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeBins {
    /// Start of bin 0 (the layer's first unit), seconds since the recording's start.
    pub from_s: f64,
    pub width_ns: u64,
    pub bytes: Vec<u64>,
    pub units: Vec<u64>,
    pub min: Vec<u32>,
    pub max: Vec<u32>,
}

/// Units of one layer and direction: `[time_s, size]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Marks {
    pub layer: String,
    pub dir: String,
    /// 1 when every unit is present, else the decimation stride.
    pub stride: u64,
    pub points: Vec<(f64, u32)>,
    /// Every unit per time bin (bytes over time, unit sizes per bin).
    #[serde(default)]
    pub bins: TimeBins,
    /// Unit sizes (bytes) and gaps between consecutive units (ns), log bins.
    #[serde(default)]
    pub size_hist: LogHist,
    #[serde(default)]
    pub interval_hist: LogHist,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpSample {
    pub t_s: f64,
    pub sndbuf: u32,
    pub inflight: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub srtt_us: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub retrans_out: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Sched {
    pub switches: u64,
    pub cpus: Vec<CpuSched>,
    /// Threads of the processes that made network calls (all threads when none did).
    pub tasks: Vec<TaskSched>,
    /// Width of the `bins` of each CPU.
    pub bin_ns: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CpuSched {
    pub cpu: u32,
    pub switches: u64,
    /// Context switches per bin from the start (with `Options::series`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bins: Vec<u64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TaskSched {
    pub tid: u32,
    pub tgid: u32,
    pub comm: String,
    /// Time on a CPU between switch-in and switch-out, ns.
    pub on_cpu_ns: u64,
    pub switches_in: u64,
    pub wakeups: u64,
    /// Runnable (woken or preempted) until switched in, ns.
    pub runq_wait: Option<Stats>,
}
