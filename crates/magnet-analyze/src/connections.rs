//! Connections: one per socket cookie, with its identity (5-tuple, processes,
//! states), the units each layer saw, TCP state and latency; and how a finished
//! connection becomes its [`Connection`] report.

use std::collections::BTreeSet;
use std::net::IpAddr;

use magnet_trace::{catalog::tcp_state_name, kind, KindIndex};

use crate::fields::{View, F};
use crate::latency::{RecvPath, SendPath};
use crate::model::{
    AppTotals, Coalescing, ConnSeries, Connection, Latency, LayerRow, LostRegion, Marks, TimeBins,
    LOG_BINS_PER_DECADE,
};
use crate::series::LayerAcc;
use crate::tcp::{SegTrack, Snap, TcpAcc};
use crate::{secs, DIRS, LAYERS};

pub(crate) const APP: usize = 0;
pub(crate) const TCP: usize = 1;
pub(crate) const IP: usize = 2;
pub(crate) const DEV: usize = 3;
pub(crate) const OUT: usize = 0;
pub(crate) const IN: usize = 1;

/// An address and port.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Endpoint {
    pub addr: IpAddr,
    pub port: u16,
}

impl Endpoint {
    /// Both address and port set (not a wildcard).
    pub fn is_known(&self) -> bool {
        self.port != 0 && !self.addr.is_unspecified()
    }
}

/// A record's source and destination (`saddr`, `sport`, `daddr`, `dport`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Endpoints {
    pub src: Endpoint,
    pub dst: Endpoint,
}

impl Endpoints {
    pub fn read(v: &View) -> Option<Endpoints> {
        Some(Endpoints {
            src: Endpoint {
                addr: v.addr(F::Saddr)?,
                port: v.u(F::Sport)? as u16,
            },
            dst: Endpoint {
                addr: v.addr(F::Daddr)?,
                port: v.u(F::Dport)? as u16,
            },
        })
    }
}

/// What a unit is and which hook saw it, per row: from the trace's catalog.
pub(crate) struct RowNames {
    hooks: [[String; 2]; 4],
    tcp_in_probe: String,
}

impl RowNames {
    pub fn new(index: &KindIndex) -> RowNames {
        let hook = |k: u16| index.get(k).map_or_else(String::new, |d| d.hook.clone());
        RowNames {
            hooks: [
                [hook(kind::APP_SEND), hook(kind::APP_RECV)],
                [
                    format!("{} (sequence numbers)", hook(kind::IP_LOCAL_OUT)),
                    format!("{} (sequence numbers)", hook(kind::IP_LOCAL_IN)),
                ],
                [hook(kind::IP_LOCAL_OUT), hook(kind::IP_LOCAL_IN)],
                [hook(kind::DEV_START_XMIT), hook(kind::DEV_RX)],
            ],
            tcp_in_probe: format!("{} (sequence numbers)", hook(kind::TCP_RCV)),
        }
    }

    /// (unit, hook) of a row; `tcp_in_merged` when `tcp in` came from tcp_probe.
    fn of(&self, layer: usize, dir: usize, tcp_in_merged: bool) -> (&'static str, &str) {
        let unit = match (layer, dir) {
            (APP, _) => "call",
            (TCP, IN) if tcp_in_merged => "rcv unit",
            (TCP, _) => "segment",
            (IP, _) => "packet",
            _ => "frame",
        };
        if layer == TCP && dir == IN && tcp_in_merged {
            (unit, &self.tcp_in_probe)
        } else {
            (unit, &self.hooks[layer][dir])
        }
    }
}

/// snd_nxt and rcv_nxt of a snapshot, without the FIN either may count: the
/// end of each direction's data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NextSeq {
    pub snd: u32,
    pub rcv: u32,
}

/// Whether a snapshot's snd_nxt and rcv_nxt count a FIN (one sequence number
/// past the data), from the TCP state. `sent_before`/`received_before`: an
/// earlier snapshot already showed it (CLOSE tells neither).
fn fins_counted(s: &Snap, sent_before: bool, received_before: bool) -> (bool, bool) {
    const FIN_WAIT1: u8 = 4;
    const FIN_WAIT2: u8 = 5;
    const TIME_WAIT: u8 = 6;
    const CLOSE: u8 = 7;
    const CLOSE_WAIT: u8 = 8;
    const LAST_ACK: u8 = 9;
    const CLOSING: u8 = 11;
    // Our FIN is in write_seq from shutdown/close on; snd_nxt counts it once
    // it was sent (everything written was).
    let sent = match s.state {
        FIN_WAIT2 | CLOSING | TIME_WAIT => true,
        FIN_WAIT1 | LAST_ACK => s.snd_nxt == s.write_seq,
        CLOSE => sent_before,
        _ => false,
    };
    // These states are reached only by receiving the peer's FIN.
    let received = match s.state {
        CLOSE_WAIT | LAST_ACK | CLOSING | TIME_WAIT => true,
        CLOSE => received_before,
        _ => false,
    };
    (sent, received)
}

pub(crate) struct Conn {
    pub cookie: u64,
    /// Seen in a SOCK, app or TCP record (not only on a packet of some socket
    /// the recorder did not follow).
    pub known: bool,
    pub protocol: Option<u64>,
    /// A raw socket (SOCK_RAW, from its SOCK or app records): it writes its
    /// packets' headers itself, any protocol and ports.
    pub raw: bool,
    /// A listening socket (LISTEN state, a SOCK record with no peer, or a SYN
    /// received): it answers the handshakes of many connections, each in its
    /// own sequence space, and carries no stream and has no peer of its own.
    pub listener: bool,
    pub local: Option<Endpoint>,
    pub remote: Option<Endpoint>,
    pub netns: Option<u64>,
    pub pids: BTreeSet<u32>,
    pub comm: Option<String>,
    pub states: Vec<u8>,
    pub first: u64,
    pub last: u64,
    pub app: AppTotals,
    pub layers: [[LayerAcc; 2]; 4],
    /// Segments from sequence numbers: out at IP LOCAL_OUT, in at tcp_probe
    /// (where TCP may have merged queued segments).
    pub seg: [SegTrack; 2],
    /// Received segments at IP LOCAL_IN, one per packet off the wire: the
    /// `tcp in` row when the IP layer was recorded.
    pub seg_in_wire: SegTrack,
    pub tcp_in_wire: LayerAcc,
    /// The highest acknowledgment each direction's data received: for `out`
    /// from the peer's packets, for `in` from this socket's own. It sizes a
    /// FIN that carried data when no snapshot (`--tcp-state`) tells snd_nxt.
    pub acked: [Option<u32>; 2],
    pub tcp: Option<TcpAcc>,
    /// Next sequence numbers of the latest snapshot with meaningful ones.
    pub next_seq: Option<NextSeq>,
    /// A snapshot showed our FIN sent / the peer's FIN received.
    fin_sent: bool,
    fin_received: bool,
    pub send: SendPath,
    pub recv: RecvPath,
}

impl Conn {
    pub fn new(cookie: u64, ts: u64, series: Option<usize>) -> Conn {
        let l = || [LayerAcc::new(series), LayerAcc::new(series)];
        Conn {
            cookie,
            known: false,
            protocol: None,
            raw: false,
            listener: false,
            local: None,
            remote: None,
            netns: None,
            pids: BTreeSet::new(),
            comm: None,
            states: Vec::new(),
            first: ts,
            last: ts,
            app: AppTotals::default(),
            layers: [l(), l(), l(), l()],
            seg: Default::default(),
            seg_in_wire: SegTrack::default(),
            tcp_in_wire: LayerAcc::new(series),
            acked: [None, None],
            tcp: None,
            next_seq: None,
            fin_sent: false,
            fin_received: false,
            send: SendPath::default(),
            recv: RecvPath::default(),
        }
    }

    pub fn learn_tuple(&mut self, local: Endpoint, remote: Endpoint) {
        if self.local.is_none() || local.is_known() {
            self.local = Some(local);
        }
        if remote.is_known() && !self.listener {
            self.remote = Some(remote);
        }
    }

    /// An acknowledgment `ack` for direction `dir`'s data: keep the highest
    /// (sequence numbers wrap, so "highest" is relative to the last one).
    pub fn acked(&mut self, dir: usize, ack: u32) {
        let a = &mut self.acked[dir];
        if a.is_none_or(|old| (ack.wrapping_sub(old) as i32) > 0) {
            *a = Some(ack);
        }
    }

    /// A TCP snapshot at `ts` (`t_s` seconds into the trace).
    pub fn tcp_sample(&mut self, ts: u64, t_s: f64, s: &Snap, series: Option<usize>) {
        let t = self.tcp.get_or_insert_with(|| TcpAcc::new(series));
        if !s.synchronized() && s.state != 7 {
            return;
        }
        let (sent, received) = fins_counted(s, self.fin_sent, self.fin_received);
        self.fin_sent |= sent;
        self.fin_received |= received;
        self.next_seq = Some(NextSeq {
            snd: s.snd_nxt.wrapping_sub(sent as u32),
            rcv: s.rcv_nxt.wrapping_sub(received as u32),
        });
        for (dir, nxt) in [(OUT, s.snd_nxt), (IN, s.rcv_nxt)] {
            if let Some(seg) = self.seg[dir].fin_end(nxt) {
                self.layers[TCP][dir].unit(seg.ts, seg.bytes);
            }
        }
        if let Some(seg) = self.seg_in_wire.fin_end(s.rcv_nxt) {
            self.tcp_in_wire.unit(seg.ts, seg.bytes);
        }
        if !s.synchronized() {
            return;
        }
        t.sample(ts, t_s, s);
        self.recv.copied_seq(s.copied_seq);
    }

    /// The report of this connection. `lost`: every LOST region of the trace.
    pub fn finish(
        mut self,
        origin: u64,
        series: bool,
        names: &RowNames,
        lost: &[LostRegion],
    ) -> Connection {
        self.close_segments();
        let tcp_in_merged = self.choose_tcp_in();
        let (modulation, marks) = self.layer_rows(origin, names, tcp_in_merged, lost);
        let coalescing = self.coalescing();
        let app_rate = |l: &LayerAcc| l.first.and_then(|f| rate(l.bytes, f, l.last));
        self.app.out_bps = app_rate(&self.layers[APP][OUT]);
        self.app.in_bps = app_rate(&self.layers[APP][IN]);
        self.send.finish(self.layers[IP][OUT].units > 0);
        self.recv.finish();
        let mut tcp_series = Vec::new();
        let tcp = self
            .tcp
            .take()
            .filter(|t| {
                t.samples > 0 || t.retrans_skbs > 0 || t.retrans_failed > 0 || t.retrans_busy > 0
            })
            .map(|mut t| {
                if let Some(d) = t.series.take() {
                    tcp_series = d.points;
                }
                t.summary()
            });
        let latency = self.latency();
        let r = &self.recv;
        let series = series.then(|| ConnSeries {
            marks,
            tcp: tcp_series,
            send_latency_hist: self.send.latency.log_histogram(LOG_BINS_PER_DECADE),
            recv_latency_hist: r.latency.log_histogram(LOG_BINS_PER_DECADE),
        });
        let active_from_s = modulation.iter().map(|r| r.first_s).reduce(f64::min);
        let active_to_s = modulation.iter().map(|r| r.last_s).reduce(f64::max);
        let (first_s, last_s) = (secs(self.first, origin), secs(self.last, origin));
        Connection {
            cookie: self.cookie,
            known: self.known,
            protocol: match self.protocol {
                Some(6) => "tcp".into(),
                Some(17) => "udp".into(),
                Some(p) => p.to_string(),
                None => "?".into(),
            },
            local: fmt_end(self.local),
            remote: fmt_end(self.remote.filter(|_| !self.listener)),
            netns: self.netns,
            pids: self.pids.into_iter().collect(),
            comm: self.comm.unwrap_or_default(),
            states: self
                .states
                .iter()
                .map(|&s| tcp_state_name(s).to_string())
                .collect(),
            first_s,
            last_s,
            active_from_s,
            active_to_s,
            lost_in_span: lost_between(lost, first_s, last_s),
            app: self.app,
            modulation,
            coalescing,
            tcp,
            latency,
            series,
        }
    }

    /// Ends the segments still open when the trace ends, from what is known
    /// of where each direction's data stopped.
    fn close_segments(&mut self) {
        // A FIN that carried data ends one before the highest acknowledgment
        // of its direction (the FIN takes one sequence number): what a
        // snapshot would tell, from the wire alone.
        for dir in [OUT, IN] {
            if let Some(a) = self.acked[dir] {
                if let Some(seg) = self.seg[dir].fin_end(a) {
                    self.layers[TCP][dir].unit(seg.ts, seg.bytes);
                }
            }
        }
        if let Some(a) = self.acked[IN] {
            if let Some(seg) = self.seg_in_wire.fin_end(a) {
                self.tcp_in_wire.unit(seg.ts, seg.bytes);
            }
        }
        // A last data segment nothing followed ends at the latest snapshot's
        // next sequence number.
        if let Some(n) = self.next_seq {
            for (dir, nxt) in [(OUT, n.snd), (IN, n.rcv)] {
                if let Some(seg) = self.seg[dir].close(nxt) {
                    self.layers[TCP][dir].unit(seg.ts, seg.bytes);
                }
            }
            if let Some(seg) = self.seg_in_wire.close(n.rcv) {
                self.tcp_in_wire.unit(seg.ts, seg.bytes);
            }
        }
        // Without one, at its packet length: for packets seen at IP when this
        // end's acknowledgment covers it, for segments the socket processed
        // (`tcp_probe`, the `tcp in` of a socket in another namespace) at once
        // (a receiver that reset with data unread).
        if let Some(a) = self.acked[OUT] {
            if let Some(seg) = self.seg[OUT].close_at_length(Some(a)) {
                self.layers[TCP][OUT].unit(seg.ts, seg.bytes);
            }
        }
        if let Some(seg) = self.seg[IN].close_at_length(None) {
            self.layers[TCP][IN].unit(seg.ts, seg.bytes);
        }
        if let Some(a) = self.acked[IN] {
            if let Some(seg) = self.seg_in_wire.close_at_length(Some(a)) {
                self.tcp_in_wire.unit(seg.ts, seg.bytes);
            }
        }
        // Holes nothing filled (records lost, or the trace ended before the
        // data came): their bytes were the stream's, in no unit seen.
        for dir in [OUT, IN] {
            self.layers[TCP][dir].bytes += self.seg[dir].unfilled_bytes();
        }
        self.tcp_in_wire.bytes += self.seg_in_wire.unfilled_bytes();
    }

    /// Which `tcp in` the report shows; true when it stays tcp_probe's
    /// (merged), false when the wire segments took its place.
    fn choose_tcp_in(&mut self) -> bool {
        // `tcp in` counts wire segments (IP LOCAL_IN) when IP saw them: all the
        // bytes tcp_probe saw (IP events may be lost, and a namespace made
        // during the recording has none for about a second).
        let wire = &self.tcp_in_wire;
        let tcp_in_merged = wire.units == 0 || wire.bytes < self.layers[TCP][IN].bytes;
        if !tcp_in_merged {
            std::mem::swap(&mut self.layers[TCP][IN], &mut self.tcp_in_wire);
        }
        tcp_in_merged
    }

    /// One modulation row per layer and direction that saw units, and its
    /// plot marks where series were kept.
    fn layer_rows(
        &mut self,
        origin: u64,
        names: &RowNames,
        tcp_in_merged: bool,
        lost: &[LostRegion],
    ) -> (Vec<LayerRow>, Vec<Marks>) {
        let mut modulation = Vec::new();
        let mut marks = Vec::new();
        for (li, layer) in LAYERS.iter().enumerate() {
            for (di, dir) in DIRS.iter().enumerate() {
                let acc = &mut self.layers[li][di];
                let (Some(first), Some(size)) = (acc.first, acc.size.stats()) else {
                    continue;
                };
                let (first_s, last_s) = (secs(first, origin), secs(acc.last, origin));
                let (unit, hook) = names.of(li, di, tcp_in_merged);
                modulation.push(LayerRow {
                    layer: layer.to_string(),
                    dir: dir.to_string(),
                    unit: unit.to_string(),
                    hook: hook.to_string(),
                    units: acc.units,
                    bytes: acc.bytes,
                    size,
                    interval_ns: acc.interval.stats(),
                    rate_bps: rate(acc.bytes, first, acc.last),
                    first_s,
                    last_s,
                    lost_in_span: lost_between(lost, first_s, last_s),
                });
                if let Some(m) = take_marks(acc, layer, dir, origin) {
                    marks.push(m);
                }
            }
        }
        (modulation, marks)
    }

    /// How many app calls became how many segments and packets, per
    /// direction that saw any unit.
    fn coalescing(&self) -> Vec<Coalescing> {
        (0..2)
            .filter(|&d| self.layers.iter().any(|l| l[d].units > 0))
            .map(|d| {
                let units = |l: usize| self.layers[l][d].units;
                let (app, dev, ip) = (units(APP), units(DEV), units(IP));
                let pk = if dev > 0 { dev } else { ip };
                Coalescing {
                    dir: DIRS[d].to_string(),
                    app_calls: app,
                    tcp_segments: units(TCP),
                    ip_packets: ip,
                    dev_packets: dev,
                    packets_per_call: (app > 0 && pk > 0).then(|| pk as f64 / app as f64),
                }
            })
            .collect()
    }

    /// The send and receive latencies, once both paths are finished.
    fn latency(&self) -> Latency {
        let r = &self.recv;
        Latency {
            send: self.send.latency.stats(),
            send_unmatched: self.send.unmatched,
            recv: r.latency.stats(),
            recv_unmatched: r.unmatched,
            recv_cpu_wait: r.cpu_wait.stats(),
            recv_cpu_wait_share: (r.delay_sum > 0).then(|| r.wait_sum as f64 / r.delay_sum as f64),
        }
    }
}

/// A row's plot marks (when series were kept), taken out of its accumulator.
fn take_marks(acc: &mut LayerAcc, layer: &str, dir: &str, origin: u64) -> Option<Marks> {
    let m = acc.marks.take()?;
    Some(Marks {
        layer: layer.to_string(),
        dir: dir.to_string(),
        bins: acc
            .bins
            .take()
            .map_or_else(TimeBins::default, |b| b.finish(origin)),
        size_hist: acc.size.log_histogram(LOG_BINS_PER_DECADE),
        interval_hist: acc.interval.log_histogram(LOG_BINS_PER_DECADE),
        stride: m.stride,
        points: m
            .points
            .into_iter()
            .map(|p| (secs(p.ts, origin), p.size))
            .collect(),
    })
}

/// LOST records whose region overlaps `from..=to` (seconds since the start).
fn lost_between(lost: &[LostRegion], from: f64, to: f64) -> u64 {
    magnet_trace::lost_total(
        lost.iter()
            .filter(|l| l.from_s <= to && l.to_s >= from)
            .map(|l| l.count),
    )
}

fn fmt_end(e: Option<Endpoint>) -> Option<String> {
    e.map(|Endpoint { addr, port }| match addr {
        IpAddr::V4(_) => format!("{addr}:{port}"),
        IpAddr::V6(_) => format!("[{addr}]:{port}"),
    })
}

fn rate(bytes: u64, first: u64, last: u64) -> Option<f64> {
    (last > first).then(|| bytes as f64 * 8.0 / ((last - first) as f64 / 1e9))
}
