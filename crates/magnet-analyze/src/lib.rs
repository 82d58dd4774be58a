//! Analyses of magnet traces: what the application asked of the network and what
//! each layer made of it.
//!
//! - **connections**: every socket cookie with its 5-tuple, processes, lifetime
//!   and app-level totals;
//! - **modulation** per connection, layer (app, tcp, ip, dev) and direction:
//!   count, mean/median/p99 of unit size and of the interval between units, data
//!   rate, and how many app calls became how many packets (MAGNeT's Table III);
//! - **TCP state over time** from the `--tcp-state` snapshots;
//! - **latency through the stack**, matched by TCP sequence ranges;
//! - **scheduler** statistics.
//!
//! The [`Analyzer`] takes records one at a time (in time order: [`analyze`]
//! sorts them in batches within a window) and keeps bounded state: distributions are
//! exact up to a few thousand distinct values and then coarsened, plot series
//! are decimated, per-packet maps are swept by age. `docs/analyze.md` explains
//! every number.
//!
//! ```
//! use magnet_analyze::{analyze, Options};
//! use magnet_trace::{ClockMap, Footer, Header, TraceReader, TraceWriter};
//! let header = Header::new("h".into(), "6.18".into(), 1, ClockMap::default());
//! let bytes = TraceWriter::new(Vec::new(), &header).unwrap().finish(&Footer::default()).unwrap();
//! let mut reader = TraceReader::new(&bytes[..]).unwrap();
//! let a = analyze(&mut reader, &Options::default());
//! assert!(a.connections.is_empty() && a.trace.complete);
//! ```

pub mod dist;
mod fields;
pub mod model;
mod order;
mod sched;

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::io::Read;
use std::net::IpAddr;

use magnet_trace::{catalog::tcp_state_name, kind, Header, Record, Records, TraceReader};

pub use dist::{Dist, Stats};
use fields::{Layouts, View, F};
pub use model::*;
use sched::SchedAcc;

/// FxHash (as in rustc): the maps are keyed by cookies and packet ids the
/// trace gives, not by anything an attacker picks, so SipHash buys nothing.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64)
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64)
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64)
    }
}

type Map<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;

/// What to analyse and keep.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keep plot series (unit marks, TCP samples, latency histograms, switch bins).
    pub series: bool,
    /// Most points per series before decimation.
    pub series_cap: usize,
    /// Width of the per-CPU context-switch bins (doubled as needed to stay under
    /// `series_cap` bins).
    pub sched_bin_ns: u64,
    /// Records held back to sort by time.
    pub window: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            series: false,
            series_cap: 20_000,
            sched_bin_ns: 10_000_000,
            window: 65536,
        }
    }
}

/// Reads a whole trace (in time order) and analyses it. Damage the reader steps
/// over is listed in `trace.damage`; a trace cut short is analysed up to the cut.
pub fn analyze<R: Read>(reader: &mut TraceReader<R>, opts: &Options) -> Analysis {
    let header = reader.header().clone();
    let mut a = Analyzer::new(&header, opts.clone());
    let mut damage = Vec::new();
    for item in order::Batched::new(Records(reader), opts.window) {
        match item {
            Ok(rec) => a.push(&rec),
            Err(e) => damage.push(e.to_string()),
        }
    }
    let complete = reader.footer().is_some();
    let mut out = a.finish();
    out.trace.damage = damage;
    out.trace.complete = complete;
    out
}

pub const LAYERS: [&str; 4] = ["app", "tcp", "ip", "dev"];
pub const DIRS: [&str; 2] = ["out", "in"];
const APP: usize = 0;
const TCP: usize = 1;
const IP: usize = 2;
const DEV: usize = 3;
const OUT: usize = 0;
const IN: usize = 1;

const TCP_SYN: u64 = 0x02;
const TCP_FIN: u64 = 0x01;
const TCP_RST: u64 = 0x04;
const TCP_ACK: u64 = 0x10;

/// Age after which per-packet state (pending dev_rx, packets waiting for their
/// device hand-over) is given up on.
const PKT_TTL_NS: u64 = 2_000_000_000;
/// Queued sends/segments per connection awaiting a match.
const QUEUE_CAP: usize = 1 << 16;

/// Keeps every `stride`-th point, doubling the stride when `cap` is reached.
#[derive(Clone, Debug)]
struct Decimator<T> {
    points: Vec<T>,
    stride: u64,
    seen: u64,
    cap: usize,
}

impl<T> Decimator<T> {
    fn new(cap: usize) -> Self {
        Decimator {
            points: Vec::new(),
            stride: 1,
            seen: 0,
            cap: cap.max(2),
        }
    }
    fn push(&mut self, p: T) {
        if self.seen % self.stride == 0 {
            self.points.push(p);
            if self.points.len() >= self.cap {
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }
}

#[derive(Clone, Debug)]
struct LayerAcc {
    units: u64,
    bytes: u64,
    size: Dist,
    interval: Dist,
    first: Option<u64>,
    last: u64,
    marks: Option<Decimator<(u64, u32)>>,
}

impl LayerAcc {
    fn new(series: Option<usize>) -> Self {
        LayerAcc {
            units: 0,
            bytes: 0,
            size: Dist::default(),
            interval: Dist::default(),
            first: None,
            last: 0,
            marks: series.map(Decimator::new),
        }
    }
    fn unit(&mut self, ts: u64, size: u64) {
        if self.first.is_none() {
            self.first = Some(ts);
        } else {
            self.interval.add(ts.saturating_sub(self.last));
        }
        self.last = ts.max(self.last);
        self.units += 1;
        self.bytes = self.bytes.saturating_add(size);
        self.size.add(size);
        if let Some(m) = &mut self.marks {
            m.push((ts, size.min(u32::MAX as u64) as u32));
        }
    }
}

/// TCP payload per segment from sequence numbers: a segment's payload is known
/// when the next new sequence number is seen.
#[derive(Clone, Debug, Default)]
struct SegTrack {
    last: Option<(u32, u64)>,
    retrans: u64,
    /// A FIN segment (which may carry the last data) waiting for a snapshot
    /// whose next sequence number tells where it ended.
    fin: Option<(u32, u64)>,
}

impl SegTrack {
    /// Returns a completed unit (time of its segment, payload bytes).
    fn segment(&mut self, seq: u32, ts: u64, flags: u64) -> Option<(u64, u64)> {
        if flags & (TCP_SYN | TCP_RST) != 0 {
            return None;
        }
        let mut out = None;
        match self.last {
            None => self.last = Some((seq, ts)),
            Some((ls, lt)) => {
                let d = seq.wrapping_sub(ls) as i32;
                if d > 0 {
                    out = Some((lt, d as u64));
                    self.last = Some((seq, ts));
                } else if d == 0 {
                    // A later packet at the same sequence: the data after a pure
                    // ACK, or a retransmission. The last one is what carried it.
                    self.last = Some((seq, ts));
                } else {
                    self.retrans += 1;
                }
            }
        }
        if flags & TCP_FIN != 0 {
            if self.last.is_some_and(|l| l.0 == seq) {
                self.fin = Some((seq, ts));
            }
            self.last = None;
        }
        out
    }

    /// With the next sequence number after a FIN (snd_nxt/rcv_nxt of a later
    /// snapshot): the data the FIN segment carried, if any.
    fn fin_end(&mut self, nxt: u32) -> Option<(u64, u64)> {
        let (seq, ts) = self.fin?;
        let d = nxt.wrapping_sub(seq) as i32;
        if !(1..=1 << 20).contains(&d) {
            return None;
        }
        self.fin = None;
        (d > 1).then_some((ts, d as u64 - 1))
    }
}

#[derive(Clone, Debug)]
struct TcpAcc {
    samples: u64,
    retransmits: u64,
    last: Option<(u64, u32)>,
    sndbuf_area: f64,
    span: u64,
    first_t: Option<u64>,
    sndbuf_max: u64,
    inflight_max: u64,
    cwnd_min: u64,
    cwnd_max: u64,
    ssthresh_last: u64,
    srtt: Dist,
    snd_wnd_max: u64,
    rcv_wnd_max: u64,
    retrans_out_max: u64,
    series: Option<Decimator<TcpSample>>,
}

struct Snap {
    sndbuf: u32,
    inflight: u32,
    cwnd: u32,
    ssthresh: u32,
    srtt_us: u32,
    snd_wnd: u32,
    rcv_wnd: u32,
    retrans_out: u32,
    write_seq: u32,
    copied_seq: u32,
    snd_nxt: u32,
    rcv_nxt: u32,
    state: u8,
}

fn snap(v: &View) -> Option<Snap> {
    let write_seq = v.u32(F::WriteSeq)?;
    let snd_una = v.u32(F::SndUna)?;
    let snd_nxt = v.u32(F::SndNxt)?;
    Some(Snap {
        sndbuf: write_seq.wrapping_sub(snd_una),
        inflight: snd_nxt.wrapping_sub(snd_una),
        cwnd: v.u32(F::SndCwnd)?,
        ssthresh: v.u32(F::SndSsthresh)?,
        srtt_us: v.u32(F::SrttUs)?,
        snd_wnd: v.u32(F::SndWnd)?,
        rcv_wnd: v.u32(F::RcvWnd)?,
        retrans_out: v.u32(F::RetransOut)?,
        write_seq,
        copied_seq: v.u32(F::CopiedSeq)?,
        snd_nxt,
        rcv_nxt: v.u32(F::RcvNxt)?,
        state: v.u(F::State)? as u8,
    })
}

/// TCP states in which the sequence numbers of a snapshot are meaningful.
fn synchronized(state: u8) -> bool {
    // ESTABLISHED, FIN_WAIT1, FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING
    matches!(state, 1 | 4 | 5 | 8 | 9 | 11)
}

struct Conn {
    cookie: u64,
    /// Seen in a SOCK, app or TCP record (not only on a packet of some socket
    /// the recorder did not follow).
    known: bool,
    protocol: Option<u64>,
    local: Option<(IpAddr, u16)>,
    remote: Option<(IpAddr, u16)>,
    netns: Option<u64>,
    pids: BTreeSet<u32>,
    comm: Option<String>,
    states: Vec<u8>,
    first: u64,
    last: u64,
    app: AppTotals,
    layers: [[LayerAcc; 2]; 4],
    seg: [SegTrack; 2],
    tcp: Option<TcpAcc>,
    // latency: send
    send_start: Option<(u32, u64, u32)>,
    pending_sends: VecDeque<(u32, u64)>,
    last_seg: Option<(u32, u64, Option<u64>)>,
    /// Packets TCP handed to IP, in order, on their way to the driver: (packet
    /// id, IP length, payload bytes seen leaving as segments). A GSO packet
    /// reaches the driver as several segments with packet ids of their own; it
    /// has arrived when its payload has.
    txq: VecDeque<(u64, u64, u64)>,
    /// Link-layer header bytes (dev length − IP length of a whole packet).
    link_hdr: Option<u64>,
    /// IP + TCP header bytes of a data segment (IP length − payload).
    l34_hdr: Option<u64>,
    last_ip: Option<(u32, u64)>,
    /// Largest payload of a segment frame seen (the MSS in practice).
    seg_payload_max: u64,
    lat_send: Dist,
    send_unmatched: u64,
    // latency: receive
    rx_base: Option<u32>,
    rx_cum: u32,
    rx_segs: VecDeque<(u32, u64)>,
    lat_recv: Dist,
    recv_unmatched: u64,
    cpu_wait: Dist,
    wait_sum: u128,
    delay_sum: u128,
}

impl Conn {
    fn new(cookie: u64, ts: u64, series: Option<usize>) -> Conn {
        let l = || [LayerAcc::new(series), LayerAcc::new(series)];
        Conn {
            cookie,
            known: false,
            protocol: None,
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
            tcp: None,
            send_start: None,
            pending_sends: VecDeque::new(),
            last_seg: None,
            txq: VecDeque::new(),
            link_hdr: None,
            l34_hdr: None,
            last_ip: None,
            seg_payload_max: 0,
            lat_send: Dist::default(),
            send_unmatched: 0,
            rx_base: None,
            rx_cum: 0,
            rx_segs: VecDeque::new(),
            lat_recv: Dist::default(),
            recv_unmatched: 0,
            cpu_wait: Dist::default(),
            wait_sum: 0,
            delay_sum: 0,
        }
    }

    fn learn_tuple(&mut self, local: (IpAddr, u16), remote: (IpAddr, u16)) {
        if self.local.is_none() || (local.1 != 0 && !local.0.is_unspecified()) {
            self.local = Some(local);
        }
        if remote.1 != 0 && !remote.0.is_unspecified() {
            self.remote = Some(remote);
        }
    }

    fn tcp_sample(&mut self, ts: u64, s: &Snap, series: Option<usize>, origin: u64) {
        self.tcp.get_or_insert_with(|| TcpAcc {
            samples: 0,
            retransmits: 0,
            last: None,
            sndbuf_area: 0.0,
            span: 0,
            first_t: None,
            sndbuf_max: 0,
            inflight_max: 0,
            cwnd_min: u64::MAX,
            cwnd_max: 0,
            ssthresh_last: 0,
            srtt: Dist::default(),
            snd_wnd_max: 0,
            rcv_wnd_max: 0,
            retrans_out_max: 0,
            series: series.map(Decimator::new),
        });
        if !synchronized(s.state) && s.state != 7 {
            return;
        }
        for (dir, nxt) in [(OUT, s.snd_nxt), (IN, s.rcv_nxt)] {
            if let Some((ts, p)) = self.seg[dir].fin_end(nxt) {
                self.layers[TCP][dir].unit(ts, p);
            }
        }
        if !synchronized(s.state) {
            return;
        }
        let t = self.tcp.as_mut().expect("inserted above");
        t.samples += 1;
        if let Some((lt, lv)) = t.last {
            let dt = ts.saturating_sub(lt);
            t.sndbuf_area += lv as f64 * dt as f64;
            t.span = t.span.saturating_add(dt);
        }
        t.first_t.get_or_insert(ts);
        t.last = Some((ts, s.sndbuf));
        t.sndbuf_max = t.sndbuf_max.max(s.sndbuf as u64);
        t.inflight_max = t.inflight_max.max(s.inflight as u64);
        t.cwnd_min = t.cwnd_min.min(s.cwnd as u64);
        t.cwnd_max = t.cwnd_max.max(s.cwnd as u64);
        t.ssthresh_last = s.ssthresh as u64;
        if s.srtt_us > 0 {
            t.srtt.add(s.srtt_us as u64);
        }
        t.snd_wnd_max = t.snd_wnd_max.max(s.snd_wnd as u64);
        t.rcv_wnd_max = t.rcv_wnd_max.max(s.rcv_wnd as u64);
        t.retrans_out_max = t.retrans_out_max.max(s.retrans_out as u64);
        if let Some(d) = &mut t.series {
            d.push(TcpSample {
                t_s: secs(ts, origin),
                sndbuf: s.sndbuf,
                inflight: s.inflight,
                cwnd: s.cwnd,
                ssthresh: s.ssthresh,
                srtt_us: s.srtt_us,
                snd_wnd: s.snd_wnd,
                rcv_wnd: s.rcv_wnd,
                retrans_out: s.retrans_out,
            });
        }
        if self.rx_base.is_none() {
            self.rx_base = Some(s.copied_seq.wrapping_sub(self.rx_cum));
        }
    }

    /// A new outgoing segment at `seq` (first sighting at IP): sends whose last
    /// byte lies before `seq` were carried by the previous segment or earlier.
    fn out_segment(&mut self, seq: u32, pkt: u64, flags: u64, waiting: &mut SendWait, ts: u64) {
        if flags & (TCP_SYN | TCP_RST) != 0 {
            return;
        }
        match self.last_seg {
            Some((ls, lpkt, ldev)) => {
                let d = seq.wrapping_sub(ls) as i32;
                if d < 0 {
                    return; // retransmission of older data
                }
                if d > 0 {
                    while let Some(&(end, t0)) = self.pending_sends.front() {
                        if (seq.wrapping_sub(end) as i32) < 0 {
                            break;
                        }
                        self.pending_sends.pop_front();
                        match ldev {
                            Some(t) => self.lat_send.add(t.saturating_sub(t0)),
                            None => waiting
                                .entry(lpkt)
                                .or_insert_with(|| (ts, Vec::new()))
                                .1
                                .push((self.cookie, t0)),
                        }
                    }
                }
                self.last_seg = Some((seq, pkt, None));
            }
            None => self.last_seg = Some((seq, pkt, None)),
        }
        if flags & TCP_FIN != 0 {
            // The FIN comes after all data: what is still pending is in it.
            while let Some((_, t0)) = self.pending_sends.pop_front() {
                waiting
                    .entry(pkt)
                    .or_insert_with(|| (ts, Vec::new()))
                    .1
                    .push((self.cookie, t0));
            }
        }
    }
}

/// Packets holding the last byte of sends, waiting for their device event:
/// packet id → (since, [(cookie, send start)]).
type SendWait = Map<u64, (u64, Vec<(u64, u64)>)>;

/// A packet's flow as seen from the local end (`local_is_src` on transmit).
fn packet_key(v: &View, local_is_src: bool) -> Option<FlowKey> {
    let (s, d) = (v.addr(F::Saddr)?, v.addr(F::Daddr)?);
    let (sp, dp) = (v.u(F::Sport)? as u16, v.u(F::Dport)? as u16);
    let proto = v.u(F::Protocol)? as u8;
    let (local, lport, remote, rport) = if local_is_src {
        (s, sp, d, dp)
    } else {
        (d, dp, s, sp)
    };
    Some(FlowKey {
        local,
        lport,
        remote,
        rport,
        proto,
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct FlowKey {
    local: IpAddr,
    lport: u16,
    remote: IpAddr,
    rport: u16,
    proto: u8,
}

struct PendingRx {
    ts: u64,
    len: u64,
    claimed: bool,
}

/// Record flag (events.h `MG_F_OTHER_NETNS`): a packet event seen in a
/// network namespace other than its socket's.
const FLAG_OTHER_NETNS: u32 = 2;

/// Streaming analysis of one trace. Feed records in time order with
/// [`Analyzer::push`], then call [`Analyzer::finish`].
pub struct Analyzer {
    opts: Options,
    /// Taken out while a record is dispatched (it borrows the record).
    layouts: Option<Layouts>,
    header: Header,
    origin: u64,
    conns: Map<u64, Conn>,
    flows: Map<FlowKey, u64>,
    /// Outgoing packets seen at IP: packet id → (cookie, time, IP length), for
    /// device events that carry no socket.
    pkt_out: Map<u64, (u64, u64, u64)>,
    dev_rx: Map<u64, PendingRx>,
    /// IP packets of no known socket yet: a socket is often announced only when
    /// its first send or recv returns, after its first packet. (time, flow,
    /// packet id, IP length, outgoing), kept for `PKT_TTL_NS`.
    orphans: VecDeque<(u64, FlowKey, u64, u64, bool)>,
    send_wait: SendWait,
    sched: SchedAcc,
    lost: Vec<LostRegion>,
    /// Last record time per CPU.
    cpu_last: Vec<Option<u64>>,
    records: u64,
    by_kind: Vec<u64>,
    unattributed: Unattributed,
    last_ts: u64,
    next_sweep: u64,
}

fn secs(ts: u64, origin: u64) -> f64 {
    (ts as i128 - origin as i128) as f64 / 1e9
}

impl Analyzer {
    pub fn new(header: &Header, opts: Options) -> Analyzer {
        let origin = header.clock.monotonic_ns;
        Analyzer {
            layouts: Some(Layouts::new(&header.catalog)),
            header: header.clone(),
            origin,
            conns: Map::default(),
            flows: Map::default(),
            pkt_out: Map::default(),
            dev_rx: Map::default(),
            orphans: VecDeque::new(),
            send_wait: Map::default(),
            sched: SchedAcc::new(origin, opts.sched_bin_ns, opts.series_cap.min(4000)),
            lost: Vec::new(),
            cpu_last: Vec::new(),
            records: 0,
            by_kind: vec![0; 1 << 16],
            unattributed: Unattributed::default(),
            last_ts: 0,
            next_sweep: 0,
            opts,
        }
    }

    fn series(&self) -> Option<usize> {
        self.opts.series.then_some(self.opts.series_cap)
    }

    fn conn(&mut self, cookie: u64, ts: u64) -> &mut Conn {
        let series = self.series();
        let c = self
            .conns
            .entry(cookie)
            .or_insert_with(|| Conn::new(cookie, ts, series));
        c.first = c.first.min(ts);
        c.last = c.last.max(ts);
        c
    }

    fn learn_flow(
        &mut self,
        cookie: u64,
        proto: Option<u64>,
        local: (IpAddr, u16),
        remote: (IpAddr, u16),
    ) {
        if cookie == 0 || local.1 == 0 {
            return;
        }
        let proto = proto.unwrap_or(6) as u8;
        let key = FlowKey {
            local: local.0,
            lport: local.1,
            remote: remote.0,
            rport: remote.1,
            proto,
        };
        self.flows.insert(key, cookie);
        if !self.orphans.is_empty() {
            let orphans = std::mem::take(&mut self.orphans);
            for o in orphans {
                match self.flow_find(o.1) {
                    Some(c) if o.4 => self.conn(c, o.0).layers[IP][OUT].unit(o.0, o.3),
                    Some(c) => self.ip_in_unit(c, kind::IP_LOCAL_IN, o.0, o.2, o.3),
                    None => self.orphans.push_back(o),
                }
            }
        }
    }

    /// The socket of a packet by its 5-tuple; `local_is_src` on transmit.
    fn flow_lookup(&self, v: &View, local_is_src: bool) -> Option<u64> {
        self.flow_find(packet_key(v, local_is_src)?)
    }

    /// The socket of a flow: exact, then bound to the local address and port
    /// with any remote, then to the port on any address.
    fn flow_find(&self, key: FlowKey) -> Option<u64> {
        let FlowKey {
            local,
            lport,
            proto,
            ..
        } = key;
        if let Some(&c) = self.flows.get(&key) {
            return Some(c);
        }
        let any = if local.is_ipv4() {
            IpAddr::from([0u8; 4])
        } else {
            IpAddr::from([0u16; 8])
        };
        for (l, r, rp) in [(local, any, 0), (any, any, 0)] {
            if let Some(&c) = self.flows.get(&FlowKey {
                local: l,
                lport,
                remote: r,
                rport: rp,
                proto,
            }) {
                return Some(c);
            }
        }
        None
    }

    /// Adds one record. Records should come in time order.
    pub fn push(&mut self, rec: &Record) {
        let ts = rec.ts_ns();
        let k = rec.kind();
        self.records += 1;
        self.by_kind[k as usize] += 1;
        self.last_ts = self.last_ts.max(ts);
        let cpu = rec.cpu() as u32;
        if ts >= self.next_sweep {
            self.sweep(ts);
            self.next_sweep = ts.saturating_add(PKT_TTL_NS / 4);
        }
        let layouts = self.layouts.take().expect("put back after every record");
        let v = layouts.view(k, &rec.bytes);
        self.dispatch(k, ts, cpu, rec, &v);
        self.layouts = Some(layouts);
        let c = cpu as usize;
        if c >= self.cpu_last.len() {
            self.cpu_last.resize(c + 1, None);
        }
        self.cpu_last[c] = Some(ts);
    }

    fn dispatch(&mut self, k: u16, ts: u64, cpu: u32, rec: &Record, v: &View) {
        let series = self.series();
        match k {
            kind::LOST => {
                let lost_cpu = v.u(F::LostCpu).unwrap_or(cpu as u64) as u32;
                let from = self
                    .cpu_last
                    .get(lost_cpu as usize)
                    .copied()
                    .flatten()
                    .unwrap_or(self.origin);
                self.lost.push(LostRegion {
                    cpu: lost_cpu,
                    count: v.u(F::Count).unwrap_or(0),
                    from_s: secs(from, self.origin),
                    to_s: secs(ts, self.origin),
                });
            }
            kind::SOCK => {
                let Some(cookie) = v.u(F::Cookie) else { return };
                let proto = v.u(F::Protocol);
                let local = (v.addr(F::Saddr), v.u(F::Sport));
                let remote = (v.addr(F::Daddr), v.u(F::Dport));
                let c = self.conn(cookie, ts);
                c.known = true;
                c.protocol = proto.or(c.protocol);
                c.netns = v.u(F::Netns);
                if let ((Some(la), Some(lp)), (Some(ra), Some(rp))) = (local, remote) {
                    c.learn_tuple((la, lp as u16), (ra, rp as u16));
                    let (l, r) = (c.local, c.remote);
                    if let (Some(l), r) = (l, r) {
                        let r = r.unwrap_or((ra, 0));
                        self.learn_flow(cookie, proto, l, r);
                    }
                }
            }
            kind::APP_SEND | kind::APP_RECV => self.app(k, ts, rec, v),
            kind::TCP_STATE => {
                let Some(cookie) = v.u(F::Cookie) else { return };
                let c = self.conn(cookie, ts);
                c.known = true;
                c.protocol = Some(6);
                if let Some(ns) = v.u(F::Newstate) {
                    c.states.push(ns as u8);
                }
                if let (Some(sa), Some(sp), Some(da), Some(dp)) = (
                    v.addr(F::Saddr),
                    v.u(F::Sport),
                    v.addr(F::Daddr),
                    v.u(F::Dport),
                ) {
                    c.learn_tuple((sa, sp as u16), (da, dp as u16));
                    let (l, r) = (c.local, c.remote);
                    if let Some(l) = l {
                        self.learn_flow(cookie, Some(6), l, r.unwrap_or((da, 0)));
                    }
                }
                if let Some(s) = snap(v) {
                    let origin = self.origin;
                    self.conn(cookie, ts).tcp_sample(ts, &s, series, origin);
                }
            }
            kind::TCP_RCV
            | kind::TCP_SENDMSG
            | kind::TCP_RETRANS
            | kind::TCP_RST_SENT
            | kind::TCP_RST_RCVD => self.tcp(k, ts, rec, v),
            kind::IP_LOCAL_OUT => self.ip_out(ts, v),
            kind::IP_PRE_ROUTING | kind::IP_LOCAL_IN => self.ip_in(k, ts, v),
            // A frame the recorder saw in a namespace other than its
            // socket's (forwarded by a router namespace) is not the
            // socket's own transmission.
            kind::DEV_START_XMIT if rec.flags() & FLAG_OTHER_NETNS != 0 => {
                self.unattributed.dev_tx += 1
            }
            kind::DEV_START_XMIT => self.dev_tx(ts, v),
            kind::DEV_RX => {
                let Some(pkt) = v.u(F::PktId) else { return };
                let len = v.u(F::Len).unwrap_or(0);
                // The recorder names the socket when it knows the packet's
                // flow (any namespace): counted now, and claimed so that the
                // packet's later IP or TCP events do not count it again.
                let cookie = v.u(F::Cookie).filter(|&c| c != 0);
                if let Some(c) = cookie {
                    self.conn(c, ts).layers[DEV][IN].unit(ts, len);
                }
                if let Some(old) = self.dev_rx.insert(
                    pkt,
                    PendingRx {
                        ts,
                        len,
                        claimed: cookie.is_some(),
                    },
                ) {
                    if !old.claimed {
                        self.unattributed.dev_rx += 1;
                    }
                }
            }
            kind::SCHED_SWITCH => {
                let prev = (
                    v.u32(F::PrevTid).unwrap_or(0),
                    v.u32(F::PrevTgid).unwrap_or(0),
                    v.i(F::PrevState).unwrap_or(-1),
                );
                let next = (
                    v.u32(F::NextTid).unwrap_or(0),
                    v.u32(F::NextTgid).unwrap_or(0),
                    v.comm(F::NextComm),
                );
                self.sched.switch(ts, cpu, prev, next);
            }
            kind::SCHED_WAKEUP => {
                if let (Some(tid), Some(tgid)) = (v.u32(F::TaskTid), v.u32(F::TaskTgid)) {
                    self.sched.wakeup(ts, tid, tgid);
                }
            }
            _ => {}
        }
    }

    fn app(&mut self, k: u16, ts: u64, rec: &Record, v: &View) {
        let Some(cookie) = v.u(F::Cookie) else { return };
        let ret = v.i(F::Ret).unwrap_or(-1) as i32 as i64;
        let proto = v.u(F::Protocol);
        let comm = v.comm(F::Comm);
        let (pid, tid) = (rec.pid(), rec.tid());
        let c = self.conn(cookie, ts);
        c.known = true;
        c.protocol = c.protocol.or(proto);
        c.pids.insert(pid);
        if c.comm.is_none() {
            c.comm = comm;
        }
        if ret < 0 {
            c.app.failed_calls += 1;
            return;
        }
        if ret == 0 {
            return;
        }
        let n = ret as u64;
        if k == kind::APP_SEND {
            c.app.sent_bytes += n;
            c.app.sent_calls += 1;
            c.layers[APP][OUT].unit(ts, n);
            if let Some((ws, t0, stid)) = c.send_start.take() {
                if stid == tid {
                    if c.pending_sends.len() >= QUEUE_CAP {
                        c.pending_sends.pop_front();
                        c.send_unmatched += 1;
                    }
                    c.pending_sends.push_back((ws.wrapping_add(n as u32), t0));
                }
            }
        } else {
            c.app.recv_bytes += n;
            c.app.recv_calls += 1;
            c.layers[APP][IN].unit(ts, n);
            let start = c.rx_cum;
            c.rx_cum = c.rx_cum.wrapping_add(n as u32);
            let Some(base) = c.rx_base else { return };
            let end = base.wrapping_add(start).wrapping_add(n as u32);
            let mut oldest = None;
            while let Some(&(seq, arr)) = c.rx_segs.front() {
                if (end.wrapping_sub(seq) as i32) <= 0 {
                    break;
                }
                c.rx_segs.pop_front();
                c.lat_recv.add(ts.saturating_sub(arr));
                oldest = Some(oldest.map_or(arr, |o: u64| o.min(arr)));
            }
            if let Some(a0) = oldest {
                if let Some(w) = self.sched.cpu_wait(tid, a0, ts) {
                    let c = self.conns.get_mut(&cookie).expect("present");
                    c.cpu_wait.add(w);
                    c.wait_sum = c.wait_sum.saturating_add(w as u128);
                    c.delay_sum = c.delay_sum.saturating_add(ts.saturating_sub(a0) as u128);
                }
            }
        }
    }

    fn tcp(&mut self, k: u16, ts: u64, rec: &Record, v: &View) {
        let Some(cookie) = v.u(F::Cookie) else { return };
        let series = self.series();
        let origin = self.origin;
        let s = snap(v);
        let c = self.conn(cookie, ts);
        c.known = true;
        c.protocol = Some(6);
        if let Some(sp) = v.u(F::Sport).filter(|&p| p != 0) {
            if c.local.is_none_or(|l| l.1 == 0) {
                c.local = Some((c.local.map_or(IpAddr::from([0u8; 4]), |l| l.0), sp as u16));
            }
        }
        match k {
            kind::TCP_SENDMSG => {
                if let Some(s) = &s {
                    c.send_start = Some((s.write_seq, ts, rec.tid()));
                }
            }
            kind::TCP_RETRANS => {
                if let Some(t) = &mut c.tcp {
                    t.retransmits += 1;
                } else {
                    c.tcp_sample(ts, &Snap::empty(), series, origin);
                    if let Some(t) = &mut c.tcp {
                        t.retransmits += 1;
                    }
                }
            }
            kind::TCP_RCV => {
                let seq = v.u32(F::Seq).unwrap_or(0);
                let flags = v.u(F::Arg).unwrap_or(0);
                let pkt = v.u(F::PktId).unwrap_or(0);
                let mut arrival = ts;
                if let Some(p) = self.dev_rx.remove(&pkt) {
                    if p.ts <= ts && ts - p.ts < PKT_TTL_NS {
                        arrival = p.ts;
                        if !p.claimed {
                            self.conn(cookie, ts).layers[DEV][IN].unit(p.ts, p.len);
                        }
                    }
                }
                let c = self.conns.get_mut(&cookie).expect("present");
                if let Some((t, size)) = c.seg[IN].segment(seq, ts, flags) {
                    c.layers[TCP][IN].unit(t, size);
                }
                if flags & (TCP_SYN | TCP_RST) == 0 {
                    match c.rx_segs.back_mut() {
                        Some(b) if b.0 == seq => b.1 = arrival,
                        Some(b) if (seq.wrapping_sub(b.0) as i32) < 0 => {}
                        _ => {
                            if c.rx_segs.len() >= QUEUE_CAP {
                                c.rx_segs.pop_front();
                                c.recv_unmatched += 1;
                            }
                            c.rx_segs.push_back((seq, arrival));
                        }
                    }
                }
            }
            _ => {}
        }
        if let Some(s) = s {
            self.conns
                .get_mut(&cookie)
                .expect("present")
                .tcp_sample(ts, &s, series, origin);
        }
    }

    fn ip_out(&mut self, ts: u64, v: &View) {
        let cookie = match v.u(F::Cookie) {
            Some(c) if c != 0 => {
                // A packet with its socket tells the socket's full tuple.
                if let (Some(sa), Some(sp), Some(da), Some(dp)) = (
                    v.addr(F::Saddr),
                    v.u(F::Sport),
                    v.addr(F::Daddr),
                    v.u(F::Dport),
                ) {
                    let proto = v.u(F::Protocol);
                    let conn = self.conn(c, ts);
                    if conn.remote.is_none()
                        || conn.local.is_none_or(|l| l.1 == 0 || l.0.is_unspecified())
                    {
                        conn.learn_tuple((sa, sp as u16), (da, dp as u16));
                        self.learn_flow(c, proto, (sa, sp as u16), (da, dp as u16));
                    }
                }
                Some(c)
            }
            _ => self.flow_lookup(v, true),
        };
        let Some(cookie) = cookie else {
            match packet_key(v, true) {
                Some(key) if self.orphans.len() < 4096 => {
                    let (pkt, len) = (v.u(F::PktId).unwrap_or(0), v.u(F::TotLen).unwrap_or(0));
                    self.orphans.push_back((ts, key, pkt, len, true))
                }
                _ => self.unattributed.ip += 1,
            }
            return;
        };
        let pkt = v.u(F::PktId).unwrap_or(0);
        let len = v.u(F::TotLen).unwrap_or(0);
        let tcp = v.u(F::Protocol) == Some(6);
        let seq = v.u32(F::Seq).unwrap_or(0);
        let flags = v.u(F::TcpFlags).unwrap_or(0);
        self.pkt_out.insert(pkt, (cookie, ts, len));
        let mut waiting = std::mem::take(&mut self.send_wait);
        let c = self.conn(cookie, ts);
        c.layers[IP][OUT].unit(ts, len);
        if tcp && flags & (TCP_SYN | TCP_RST) == 0 {
            if let Some((lseq, llen)) = c.last_ip {
                let d = seq.wrapping_sub(lseq) as i32;
                if d > 0 && (d as u64) < llen && llen - d as u64 <= 120 {
                    c.l34_hdr = Some(llen - d as u64);
                }
            }
            c.last_ip = Some((seq, len));
            // Until two data segments in a row tell it, a pure ACK (the
            // handshake's last one) gives the header length.
            if flags == TCP_ACK && c.l34_hdr.is_none() {
                c.l34_hdr = Some(len);
            }
        }
        if tcp {
            if c.txq.len() >= QUEUE_CAP {
                c.txq.pop_front();
            }
            c.txq.push_back((pkt, len, 0));
            if let Some((t, size)) = c.seg[OUT].segment(seq, ts, flags) {
                c.layers[TCP][OUT].unit(t, size);
            }
            c.out_segment(seq, pkt, flags, &mut waiting, ts);
        }
        self.send_wait = waiting;
    }

    fn ip_in(&mut self, k: u16, ts: u64, v: &View) {
        let pkt = v.u(F::PktId).unwrap_or(0);
        let cookie = match v.u(F::Cookie) {
            Some(c) if c != 0 && k == kind::IP_LOCAL_IN => Some(c),
            _ => self.flow_lookup(v, false),
        };
        let Some(cookie) = cookie else {
            if k == kind::IP_LOCAL_IN {
                match packet_key(v, false) {
                    Some(key) if self.orphans.len() < 4096 => {
                        self.orphans
                            .push_back((ts, key, pkt, v.u(F::TotLen).unwrap_or(0), false))
                    }
                    _ => self.unattributed.ip += 1,
                }
            }
            return;
        };
        self.ip_in_unit(cookie, k, ts, pkt, v.u(F::TotLen).unwrap_or(0));
    }

    fn ip_in_unit(&mut self, cookie: u64, k: u16, ts: u64, pkt: u64, len: u64) {
        let claim = match self.dev_rx.get_mut(&pkt) {
            Some(p) if !p.claimed && p.ts <= ts => {
                p.claimed = true;
                Some((p.ts, p.len))
            }
            _ => None,
        };
        let c = self.conn(cookie, ts);
        if let Some((t, l)) = claim {
            c.layers[DEV][IN].unit(t, l);
        }
        if k == kind::IP_LOCAL_IN {
            c.layers[IP][IN].unit(ts, len);
        }
    }

    fn dev_cookie(&self, ts: u64, v: &View, pkt: u64) -> Option<u64> {
        match v.u(F::Cookie) {
            Some(c) if c != 0 => Some(c),
            _ => self
                .pkt_out
                .get(&pkt)
                .filter(|p| ts.saturating_sub(p.1) < PKT_TTL_NS)
                .map(|p| p.0),
        }
    }

    fn dev_tx(&mut self, ts: u64, v: &View) {
        let pkt = v.u(F::PktId).unwrap_or(0);
        let Some(cookie) = self.dev_cookie(ts, v, pkt) else {
            self.unattributed.dev_tx += 1;
            return;
        };
        let len = v.u(F::Len).unwrap_or(0);
        let c = self.conn(cookie, ts);
        c.layers[DEV][OUT].unit(ts, len);
        // Which queued packet has now fully reached the driver?
        let mut done = None;
        // A whole packet: same id, and the IP length plus the link header.
        // (Packet ids of freed skbs are sometimes reused by segments; the
        // length tells them apart.)
        let link = c.link_hdr;
        let whole =
            |q: &(u64, u64, u64)| q.0 == pkt && len > q.1 && link.is_none_or(|l| len == q.1 + l);
        if let Some(pos) = c.txq.iter().take(4).position(whole) {
            // Anything queued before it left too.
            for _ in 0..pos {
                c.txq.pop_front();
            }
            if let Some(q) = c.txq.pop_front() {
                if len - q.1 <= 64 {
                    c.link_hdr = Some(len - q.1);
                }
                done = Some(q.0);
            }
        } else if let (Some(l2), Some(l34)) = (c.link_hdr, c.l34_hdr) {
            // A segment of the packet at the head of the queue.
            let payload = len.saturating_sub(l2 + l34);
            let full = c.seg_payload_max.max(payload);
            c.seg_payload_max = full;
            if let Some(head) = c.txq.front_mut() {
                head.2 = head.2.saturating_add(payload);
                // Only the last segment of a GSO packet is short: if one comes
                // before the packet's payload is complete, a frame went
                // unrecorded, and the packet still ends here.
                if head.2 >= head.1.saturating_sub(l34) || payload < full {
                    done = c.txq.pop_front().map(|q| q.0);
                }
            }
        }
        if done.is_none() && c.txq.is_empty() {
            // Nothing queued from IP (no IP layer recorded): the frame is the packet.
            done = Some(pkt);
        }
        if let Some(p) = done {
            self.dev_done(cookie, p, ts);
        }
    }

    /// Packet `pkt` of `cookie` (as IP saw it) has been handed to the driver.
    fn dev_done(&mut self, cookie: u64, pkt: u64, ts: u64) {
        if let Some(c) = self.conns.get_mut(&cookie) {
            if let Some(ls) = &mut c.last_seg {
                if ls.1 == pkt && ls.2.is_none() {
                    ls.2 = Some(ts);
                }
            }
        }
        if let Some((_, waiters)) = self.send_wait.remove(&pkt) {
            for (ck, t0) in waiters {
                if let Some(c) = self.conns.get_mut(&ck) {
                    c.lat_send.add(ts.saturating_sub(t0));
                }
            }
        }
    }

    /// Forgets per-packet state older than the TTL.
    fn sweep(&mut self, now: u64) {
        let old = |t: u64| now.saturating_sub(t) > PKT_TTL_NS;
        let mut lost_rx = 0;
        self.dev_rx.retain(|_, p| {
            let keep = !old(p.ts);
            if !keep && !p.claimed {
                lost_rx += 1;
            }
            keep
        });
        self.unattributed.dev_rx += lost_rx;
        while self.orphans.front().is_some_and(|o| old(o.0)) {
            self.orphans.pop_front();
            self.unattributed.ip += 1;
        }
        self.pkt_out.retain(|_, p| !old(p.1));
        let conns = &mut self.conns;
        self.send_wait.retain(|_, (since, w)| {
            if old(*since) {
                for (ck, _) in w.iter() {
                    if let Some(c) = conns.get_mut(ck) {
                        c.send_unmatched += 1;
                    }
                }
                false
            } else {
                true
            }
        });
    }

    /// The analysis of everything pushed so far.
    pub fn finish(mut self) -> Analysis {
        let end = self.last_ts;
        self.unattributed.ip += self.orphans.len() as u64;
        self.unattributed.dev_rx += self.dev_rx.values().filter(|p| !p.claimed).count() as u64;
        for (_, (_, w)) in self.send_wait.drain() {
            for (ck, _) in w {
                if let Some(c) = self.conns.get_mut(&ck) {
                    c.send_unmatched += 1;
                }
            }
        }
        let origin = self.origin;
        let series = self.opts.series;
        let mut traced: HashSet<u32> = HashSet::new();
        let mut conns: Vec<Connection> = self
            .conns
            .into_values()
            .map(|c| {
                traced.extend(c.pids.iter().copied());
                finish_conn(c, origin, series)
            })
            .collect();
        conns.sort_by_key(|c| c.cookie);
        let mut records_by_layer = std::collections::BTreeMap::new();
        let index = magnet_trace::KindIndex::new(&self.header.catalog);
        for (k, &n) in self.by_kind.iter().enumerate().filter(|(_, n)| **n > 0) {
            let layer = index
                .get(k as u16)
                .map_or("unknown".to_string(), |d| d.layer.clone());
            *records_by_layer.entry(layer).or_default() += n;
        }
        Analysis {
            trace: TraceSummary {
                host: self.header.host.clone(),
                kernel: self.header.kernel.clone(),
                cpus: self.header.cpus,
                start_mono_ns: origin,
                start_realtime_ns: self.header.clock.realtime_ns,
                duration_s: if self.records > 0 {
                    secs(end, origin).max(0.0)
                } else {
                    0.0
                },
                records: self.records,
                records_by_layer,
                lost_events: self.lost.iter().map(|l| l.count).sum(),
                lost: self.lost,
                damage: Vec::new(),
                complete: false,
                unattributed: self.unattributed,
            },
            connections: conns,
            sched: self.sched.finish(end, &traced, series),
        }
    }
}

impl Snap {
    fn empty() -> Snap {
        Snap {
            sndbuf: 0,
            inflight: 0,
            cwnd: 0,
            ssthresh: 0,
            srtt_us: 0,
            snd_wnd: 0,
            rcv_wnd: 0,
            retrans_out: 0,
            write_seq: 0,
            copied_seq: 0,
            snd_nxt: 0,
            rcv_nxt: 0,
            state: 0,
        }
    }
}

fn fmt_end(e: Option<(IpAddr, u16)>) -> Option<String> {
    e.map(|(a, p)| match a {
        IpAddr::V4(_) => format!("{a}:{p}"),
        IpAddr::V6(_) => format!("[{a}]:{p}"),
    })
}

fn rate(bytes: u64, first: u64, last: u64) -> Option<f64> {
    (last > first).then(|| bytes as f64 * 8.0 / ((last - first) as f64 / 1e9))
}

fn finish_conn(mut c: Conn, origin: u64, series: bool) -> Connection {
    let mut modulation = Vec::new();
    let mut marks = Vec::new();
    for (li, layer) in LAYERS.iter().enumerate() {
        for (di, dir) in DIRS.iter().enumerate() {
            let acc = &mut c.layers[li][di];
            let (Some(first), Some(size)) = (acc.first, acc.size.stats()) else {
                continue;
            };
            modulation.push(LayerRow {
                layer: layer.to_string(),
                dir: dir.to_string(),
                units: acc.units,
                bytes: acc.bytes,
                size,
                interval_ns: acc.interval.stats(),
                rate_bps: rate(acc.bytes, first, acc.last),
                first_s: secs(first, origin),
                last_s: secs(acc.last, origin),
            });
            if let Some(m) = acc.marks.take() {
                marks.push(Marks {
                    layer: layer.to_string(),
                    dir: dir.to_string(),
                    stride: m.stride,
                    points: m
                        .points
                        .into_iter()
                        .map(|(t, s)| (secs(t, origin), s))
                        .collect(),
                });
            }
        }
    }
    let coalescing = (0..2)
        .filter(|&d| c.layers.iter().any(|l| l[d].units > 0))
        .map(|d| {
            let (app, tcp, ip, dev) = (
                c.layers[APP][d].units,
                c.layers[TCP][d].units,
                c.layers[IP][d].units,
                c.layers[DEV][d].units,
            );
            let pk = if dev > 0 { dev } else { ip };
            Coalescing {
                dir: DIRS[d].to_string(),
                app_calls: app,
                tcp_segments: tcp,
                ip_packets: ip,
                dev_packets: dev,
                packets_per_call: (app > 0 && pk > 0).then(|| pk as f64 / app as f64),
            }
        })
        .collect();
    let app_out = &c.layers[APP][OUT];
    let app_in = &c.layers[APP][IN];
    c.app.out_bps = app_out
        .first
        .and_then(|f| rate(app_out.bytes, f, app_out.last));
    c.app.in_bps = app_in
        .first
        .and_then(|f| rate(app_in.bytes, f, app_in.last));
    // Sends can only be followed when IP events gave the segments' sequence
    // numbers; without them they were not measured rather than unmatched.
    if c.layers[IP][OUT].units > 0 {
        c.send_unmatched += c.pending_sends.len() as u64;
    } else {
        c.send_unmatched = 0;
    }
    // A last segment at the next expected sequence number carried nothing the
    // app could read (a pure ACK or a FIN).
    let next = c.rx_base.map(|b| b.wrapping_add(c.rx_cum));
    let tail = c.rx_segs.back().is_some_and(|s| Some(s.0) == next) as u64;
    c.recv_unmatched += c.rx_segs.len() as u64 - tail;
    let mut tcp_series = Vec::new();
    let tcp = c
        .tcp
        .take()
        .filter(|t| t.samples > 0 || t.retransmits > 0)
        .map(|mut t| {
            if let Some(d) = t.series.take() {
                tcp_series = d.points;
            }
            TcpSummary {
                samples: t.samples,
                retransmits: t.retransmits,
                sndbuf_max: t.sndbuf_max,
                sndbuf_mean: if t.span > 0 {
                    t.sndbuf_area / t.span as f64
                } else {
                    t.last.map_or(0.0, |l| l.1 as f64)
                },
                inflight_max: t.inflight_max,
                cwnd_min: if t.cwnd_min == u64::MAX {
                    0
                } else {
                    t.cwnd_min
                },
                cwnd_max: t.cwnd_max,
                ssthresh_last: t.ssthresh_last,
                srtt_us: t.srtt.stats(),
                snd_wnd_max: t.snd_wnd_max,
                rcv_wnd_max: t.rcv_wnd_max,
                retrans_out_max: t.retrans_out_max,
            }
        });
    let latency = Latency {
        send: c.lat_send.stats(),
        send_unmatched: c.send_unmatched,
        recv: c.lat_recv.stats(),
        recv_unmatched: c.recv_unmatched,
        recv_cpu_wait: c.cpu_wait.stats(),
        recv_cpu_wait_share: (c.delay_sum > 0).then(|| c.wait_sum as f64 / c.delay_sum as f64),
    };
    let series = series.then(|| ConnSeries {
        marks,
        tcp: tcp_series,
        send_latency_hist: c.lat_send.histogram(40),
        recv_latency_hist: c.lat_recv.histogram(40),
    });
    Connection {
        cookie: c.cookie,
        known: c.known,
        protocol: match c.protocol {
            Some(6) => "tcp".into(),
            Some(17) => "udp".into(),
            Some(p) => p.to_string(),
            None => "?".into(),
        },
        local: fmt_end(c.local),
        remote: fmt_end(c.remote),
        netns: c.netns,
        pids: c.pids.into_iter().collect(),
        comm: c.comm.unwrap_or_default(),
        states: c
            .states
            .iter()
            .map(|&s| tcp_state_name(s).to_string())
            .collect(),
        first_s: secs(c.first, origin),
        last_s: secs(c.last, origin),
        app: c.app,
        modulation,
        coalescing,
        tcp,
        latency,
        series,
    }
}

impl Connection {
    /// The modulation row of `layer` in `dir`, if that layer saw units.
    pub fn row(&self, layer: &str, dir: &str) -> Option<&LayerRow> {
        self.modulation
            .iter()
            .find(|r| r.layer == layer && r.dir == dir)
    }
}
