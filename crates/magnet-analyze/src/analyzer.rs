//! The streaming analyzer: takes records in time order, dispatches each kind to
//! the connection it belongs to, and keeps per-packet state bounded.

use std::collections::{HashSet, VecDeque};
use std::net::IpAddr;

use magnet_trace::{kind, Footer, Header, KindIndex, Record, RecordRef};

use crate::connections::{Conn, Endpoint, Endpoints, RowNames, DEV, IN, IP, OUT, TCP};
use crate::fields::{Layouts, View, F};
use crate::flows::{FlowKey, Flows, IpPacket, Orphan};
use crate::latency::{IpSegment, RxSource, SendWait};
use crate::model::{Analysis, Connection, LostRegion, TraceSummary, Unattributed};
use crate::sched::{SchedAcc, SwitchedIn, SwitchedOut};
use crate::tcp::{Snap, TCP_ACK, TCP_FIN, TCP_SYN};

/// TCP_LISTEN in the kernel's numbering.
const TCP_LISTEN: u64 = 10;
use crate::{secs, Map, Options};

mod reuseport;
use reuseport::SharedPorts;

/// Age after which per-packet state (pending dev_rx, packets waiting for their
/// device hand-over) is given up on.
const PKT_TTL_NS: u64 = 2_000_000_000;
/// Most IP packets kept waiting for their socket to be announced.
const ORPHAN_CAP: usize = 4096;

/// A frame received from the driver, waiting for an IP or TCP event of the
/// same packet id to tell its socket.
#[derive(Clone, Copy)]
struct PendingRx {
    ts: u64,
    len: u64,
    claimed: bool,
    /// A traced socket handed this frame (same id and length) to a driver: if
    /// nobody claims it, it is the peer's reception of our frame (`peer_rx`).
    peer: bool,
    /// The recorder named a listener that shares its port: the frame is left
    /// for its IP event (a SYN waits for the listener the kernel chose), and
    /// counted to this listener if none claims it.
    held: Option<u64>,
}

/// A frame a known socket handed to a driver: its id and length.
#[derive(Clone, Copy)]
struct SentFrame {
    ts: u64,
    len: u64,
}

/// An outgoing packet seen at IP, for device events that carry no socket.
struct OutPacket {
    cookie: u64,
    ts: u64,
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
    flows: Flows,
    pkt_out: Map<u64, OutPacket>,
    dev_rx: Map<u64, PendingRx>,
    sent_frames: Map<u64, SentFrame>,
    orphans: VecDeque<Orphan>,
    /// Flows whose SYN came in with no socket known (a listener not in the
    /// trace), until their socket is announced.
    passive: Map<FlowKey, u64>,
    shared: SharedPorts,
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

impl Analyzer {
    pub fn new(header: &Header, opts: Options) -> Analyzer {
        let origin = header.clock.monotonic_ns;
        Analyzer {
            layouts: Some(Layouts::new(&header.catalog)),
            header: header.clone(),
            origin,
            conns: Map::default(),
            flows: Flows::default(),
            pkt_out: Map::default(),
            dev_rx: Map::default(),
            sent_frames: Map::default(),
            orphans: VecDeque::new(),
            passive: Map::default(),
            shared: SharedPorts::default(),
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

    fn learn_flow(&mut self, cookie: u64, proto: Option<u64>, local: Endpoint, remote: Endpoint) {
        if cookie == 0 || local.port == 0 {
            return;
        }
        let key = FlowKey {
            local: local.addr,
            lport: local.port,
            remote: remote.addr,
            rport: remote.port,
            proto: proto.unwrap_or(6) as u8,
        };
        self.flows.insert(key, cookie);
        if remote.port == 0 {
            self.shared.bind(key, cookie);
        }
        if !self.orphans.is_empty() {
            // A passive open's handshake (a SYN without ACK came in, no socket
            // known) before its socket was announced: the listener's, which is
            // not in the trace.
            for o in std::mem::take(&mut self.orphans) {
                let p = o.packet;
                if p.proto == 6 && self.passive.contains_key(&o.key) {
                    self.unattributed.no_listener_ip += 1;
                    if let Some(d) = self
                        .dev_rx
                        .get_mut(&p.pkt)
                        .filter(|d| !d.claimed && !o.outgoing)
                    {
                        d.claimed = true;
                        self.unattributed.no_listener_dev_rx += 1;
                    }
                    continue;
                }
                match self.flows.find(o.key) {
                    Some(c) if o.outgoing => self.conn(c, p.ts).layers[IP][OUT].unit(p.ts, p.len),
                    Some(c) => self.ip_in_unit(c, kind::IP_LOCAL_IN, &p, Some(o.key)),
                    None => self.orphans.push_back(o),
                }
            }
        }
        self.passive.remove(&key);
    }

    /// A SOCK or state record's own end (source) and its peer (destination):
    /// the connection's tuple, and its flow once the local end is known.
    fn learn_ends(&mut self, cookie: u64, proto: Option<u64>, e: Endpoints) {
        let c = self.conns.get_mut(&cookie).expect("present");
        c.learn_tuple(e.src, e.dst);
        if let Some(l) = c.local {
            let r = c.remote.unwrap_or(Endpoint {
                addr: e.dst.addr,
                port: 0,
            });
            self.learn_flow(cookie, proto, l, r);
        }
    }

    /// Adds one record. Records should come in time order.
    pub fn push(&mut self, rec: &Record) {
        self.push_ref(rec.view())
    }

    /// [`Analyzer::push`] for a borrowed record.
    pub fn push_ref(&mut self, rec: RecordRef) {
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
        let v = layouts.view(k, rec.bytes);
        self.dispatch(k, ts, cpu, rec, &v);
        self.layouts = Some(layouts);
        let c = cpu as usize;
        if c >= self.cpu_last.len() {
            self.cpu_last.resize(c + 1, None);
        }
        self.cpu_last[c] = Some(ts);
    }

    fn dispatch(&mut self, k: u16, ts: u64, cpu: u32, rec: RecordRef, v: &View) {
        match k {
            kind::LOST => self.lost(ts, cpu, v),
            kind::SOCK => self.sock(ts, v),
            kind::APP_SEND | kind::APP_RECV => self.app(k, ts, rec, v),
            kind::TCP_STATE => self.tcp_state(ts, v),
            kind::TCP_RCV
            | kind::TCP_SENDMSG
            | kind::TCP_RETRANS
            | kind::TCP_RST_SENT
            | kind::TCP_RST_RCVD => self.tcp(k, ts, rec, v),
            kind::IP_LOCAL_OUT => self.ip_out(ts, v),
            kind::IP_PRE_ROUTING | kind::IP_LOCAL_IN => self.ip_in(k, ts, v),
            // A frame the recorder saw in a namespace other than its socket's
            // (forwarded by a router namespace) is not the socket's own
            // transmission.
            kind::DEV_START_XMIT if rec.flags() & FLAG_OTHER_NETNS != 0 => {
                self.unattributed.dev_tx += 1
            }
            kind::DEV_START_XMIT => self.dev_tx(ts, v),
            kind::DEV_RX => self.dev_rx(ts, v),
            kind::SCHED_SWITCH => self.sched.switch(
                ts,
                cpu,
                SwitchedOut {
                    tid: v.u32(F::PrevTid).unwrap_or(0),
                    tgid: v.u32(F::PrevTgid).unwrap_or(0),
                    state: v.i(F::PrevState).unwrap_or(-1),
                },
                SwitchedIn {
                    tid: v.u32(F::NextTid).unwrap_or(0),
                    tgid: v.u32(F::NextTgid).unwrap_or(0),
                    comm: v.comm(F::NextComm),
                },
            ),
            kind::SCHED_WAKEUP => {
                if let (Some(tid), Some(tgid)) = (v.u32(F::TaskTid), v.u32(F::TaskTgid)) {
                    self.sched.wakeup(ts, tid, tgid);
                }
            }
            _ => {}
        }
    }

    fn lost(&mut self, ts: u64, cpu: u32, v: &View) {
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

    fn sock(&mut self, ts: u64, v: &View) {
        let Some(cookie) = v.u(F::Cookie) else { return };
        let proto = v.u(F::Protocol);
        let ends = Endpoints::read(v);
        let c = self.conn(cookie, ts);
        c.known = true;
        c.protocol = proto.or(c.protocol);
        c.netns = v.u(F::Netns);
        if c.protocol == Some(6) && ends.is_some_and(|e| e.src.port != 0 && e.dst.port == 0) {
            c.listener = true;
        }
        if let Some(e) = ends {
            self.learn_ends(cookie, proto, e);
        }
    }

    fn tcp_state(&mut self, ts: u64, v: &View) {
        let Some(cookie) = v.u(F::Cookie) else { return };
        let c = self.conn(cookie, ts);
        c.known = true;
        c.protocol = Some(6);
        if let Some(ns) = v.u(F::Newstate) {
            c.states.push(ns as u8);
            c.listener |= ns == TCP_LISTEN;
        }
        if let Some(e) = Endpoints::read(v) {
            self.learn_ends(cookie, Some(6), e);
        }
        if let Some(s) = Snap::read(v) {
            let (t_s, series) = (secs(ts, self.origin), self.series());
            self.conn(cookie, ts).tcp_sample(ts, t_s, &s, series);
        }
    }

    fn app(&mut self, k: u16, ts: u64, rec: RecordRef, v: &View) {
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
            c.layers[crate::connections::APP][OUT].unit(ts, n);
            c.send.sent(n, tid);
        } else {
            c.app.recv_bytes += n;
            c.app.recv_calls += 1;
            c.layers[crate::connections::APP][IN].unit(ts, n);
            if let Some(a0) = c.recv.recv(n, ts) {
                if let Some(w) = self.sched.cpu_wait(tid, a0, ts) {
                    let c = self.conns.get_mut(&cookie).expect("present");
                    c.recv.cpu_wait(w, ts.saturating_sub(a0));
                }
            }
        }
    }

    fn tcp(&mut self, k: u16, ts: u64, rec: RecordRef, v: &View) {
        let Some(cookie) = v.u(F::Cookie) else { return };
        let series = self.series();
        let t_s = secs(ts, self.origin);
        let s = Snap::read(v);
        let c = self.conn(cookie, ts);
        c.known = true;
        c.protocol = Some(6);
        if let Some(sp) = v.u(F::Sport).filter(|&p| p != 0) {
            if c.local.is_none_or(|l| l.port == 0) {
                c.local = Some(Endpoint {
                    addr: c.local.map_or(IpAddr::from([0u8; 4]), |l| l.addr),
                    port: sp as u16,
                });
            }
        }
        match k {
            kind::TCP_SENDMSG => {
                if let Some(s) = &s {
                    c.send.sendmsg(s.write_seq, ts, rec.tid());
                }
            }
            kind::TCP_RETRANS => {
                c.tcp
                    .get_or_insert_with(|| crate::tcp::TcpAcc::new(series))
                    .retransmit(
                        (rec.flags() & magnet_trace::events::FLAG_TCP_SEGS != 0)
                            .then(|| v.u32(F::Ack))
                            .flatten(),
                        v.u32(F::Len).unwrap_or(0),
                        v.u32(F::Arg).unwrap_or(0) as i32,
                    );
            }
            kind::TCP_RCV => {
                let seq = v.u32(F::Seq).unwrap_or(0);
                let flags = v.u(F::Arg).unwrap_or(0);
                let pkt = v.u(F::PktId).unwrap_or(0);
                let mut arrival = ts;
                // tcp_probe is the packet's last event; a tcp_rcv read at
                // netif_receive_skb (outside ESTABLISHED) comes before its IP
                // events, which still need the frame's arrival.
                let last = self.dev_rx.get(&pkt).is_some_and(|p| p.ts < ts);
                let frame = if last {
                    self.dev_rx.remove(&pkt)
                } else {
                    self.dev_rx.get_mut(&pkt).map(|p| {
                        let was = *p;
                        p.claimed = true;
                        was
                    })
                };
                if let Some(p) = frame {
                    if p.ts <= ts && ts - p.ts < PKT_TTL_NS {
                        arrival = p.ts;
                        if !p.claimed {
                            self.conn(cookie, ts).layers[DEV][IN].unit(p.ts, p.len);
                        }
                    }
                }
                let c = self.conns.get_mut(&cookie).expect("present");
                if c.listener {
                    return;
                }
                // len counts TCP header and payload.
                let len = v.u(F::Len).unwrap_or(0);
                if let Some(seg) = c.seg[IN].segment(seq, ts, flags, len) {
                    c.layers[TCP][IN].unit(seg.ts, seg.bytes);
                }
                // A FIN names its TCP header length: the data it carries is
                // known at once.
                let doff = (flags >> 8) & 0xff;
                if flags & TCP_FIN != 0 && doff > 0 && len >= doff {
                    let end = seq.wrapping_add((len - doff) as u32).wrapping_add(1);
                    if let Some(seg) = c.seg[IN].fin_end(end) {
                        c.layers[TCP][IN].unit(seg.ts, seg.bytes);
                    }
                }
                c.recv.segment(seq, arrival, flags, RxSource::Tcp);
            }
            _ => {}
        }
        if let Some(s) = s {
            self.conns
                .get_mut(&cookie)
                .expect("present")
                .tcp_sample(ts, t_s, &s, series);
        }
    }

    fn ip_out(&mut self, ts: u64, v: &View) {
        let cookie = match v.u(F::Cookie) {
            Some(c) if c != 0 => {
                // A packet with its socket tells the socket's full tuple.
                if let Some(e) = Endpoints::read(v) {
                    let proto = v.u(F::Protocol);
                    let conn = self.conn(c, ts);
                    if !conn.listener
                        && (conn.remote.is_none() || conn.local.is_none_or(|l| !l.is_known()))
                    {
                        conn.learn_tuple(e.src, e.dst);
                        self.learn_flow(c, proto, e.src, e.dst);
                    }
                }
                Some(c)
            }
            _ => FlowKey::of_packet(v, true).and_then(|k| self.flows.find(k)),
        };
        let p = IpPacket::read(ts, v);
        let Some(cookie) = cookie else {
            self.orphan(v, p, true);
            return;
        };
        let IpPacket {
            pkt,
            len,
            seq,
            flags,
            ..
        } = p;
        let tcp = p.proto == 6;
        if tcp && flags & (TCP_SYN | TCP_ACK) == TCP_SYN | TCP_ACK {
            if let Some(k) = FlowKey::of_packet(v, true) {
                self.syn_answered(k, cookie);
            }
        }
        self.pkt_out.insert(pkt, OutPacket { cookie, ts });
        let mut waiting = std::mem::take(&mut self.send_wait);
        let c = self.conn(cookie, ts);
        c.layers[IP][OUT].unit(ts, len);
        if tcp && !c.listener {
            if flags & TCP_ACK != 0 {
                c.acked(IN, p.ack);
            }
            if let Some(seg) = c.seg[OUT].segment(seq, ts, flags, len) {
                c.layers[TCP][OUT].unit(seg.ts, seg.bytes);
            }
            let s = IpSegment {
                seq,
                pkt,
                flags,
                len,
                ts,
            };
            c.send.ip_out(cookie, s, &mut waiting);
        }
        self.send_wait = waiting;
    }

    /// An IP packet of no known socket: kept until its socket is announced.
    fn orphan(&mut self, v: &View, packet: IpPacket, outgoing: bool) {
        let key = FlowKey::of_packet(v, outgoing);
        if let Some(k) = key.filter(|_| {
            packet.proto == 6 && !outgoing && packet.flags & (TCP_SYN | TCP_ACK) == TCP_SYN
        }) {
            self.passive.insert(k, packet.ts);
        }
        match key {
            Some(key) if self.orphans.len() < ORPHAN_CAP => self.orphans.push_back(Orphan {
                key,
                outgoing,
                packet,
            }),
            _ => self.unattributed.ip += 1,
        }
    }

    fn ip_in(&mut self, k: u16, ts: u64, v: &View) {
        let key = FlowKey::of_packet(v, false);
        let cookie = match v.u(F::Cookie) {
            Some(c) if c != 0 && k == kind::IP_LOCAL_IN => Some(c),
            _ => key.and_then(|key| self.flows.find(key)),
        };
        let p = IpPacket::read(ts, v);
        match cookie {
            Some(cookie) => self.ip_in_unit(cookie, k, &p, key),
            None if k == kind::IP_LOCAL_IN => self.orphan(v, p, false),
            None => {}
        }
    }

    /// A received IP packet of socket `cookie` (at PRE_ROUTING or LOCAL_IN),
    /// of flow `key`.
    fn ip_in_unit(&mut self, cookie: u64, k: u16, p: &IpPacket, key: Option<FlowKey>) {
        if self.syn_to_shared_port(cookie, k, p, key) {
            return;
        }
        // The frame this packet came in (PRE_ROUTING may have claimed it already).
        let mut arrival = p.ts;
        let claim = match self.dev_rx.get_mut(&p.pkt) {
            Some(d) if d.ts <= p.ts => {
                arrival = d.ts;
                let first = !d.claimed;
                d.claimed = true;
                first.then_some((d.ts, d.len))
            }
            _ => None,
        };
        let c = self.conn(cookie, p.ts);
        if let Some((t, l)) = claim {
            c.layers[DEV][IN].unit(t, l);
        }
        if k != kind::IP_LOCAL_IN {
            return;
        }
        c.layers[IP][IN].unit(p.ts, p.len);
        if p.proto == 6 && p.flags & (TCP_SYN | TCP_ACK) == TCP_SYN {
            // Only a listener receives a SYN without ACK (no simultaneous open here).
            c.listener = true;
        }
        if p.proto == 6 && !c.listener {
            if p.flags & TCP_ACK != 0 {
                c.acked(OUT, p.ack);
            }
            // One wire segment: its payload from sequence numbers, its arrival
            // at the device when the device saw it.
            if let Some(seg) = c.seg_in_wire.segment(p.seq, p.ts, p.flags, p.len) {
                c.tcp_in_wire.unit(seg.ts, seg.bytes);
            }
            c.recv.segment(p.seq, arrival, p.flags, RxSource::Ip);
        }
    }

    fn dev_cookie(&self, ts: u64, v: &View, pkt: u64) -> Option<u64> {
        match v.u(F::Cookie) {
            Some(c) if c != 0 => Some(c),
            _ => self
                .pkt_out
                .get(&pkt)
                .filter(|p| ts.saturating_sub(p.ts) < PKT_TTL_NS)
                .map(|p| p.cookie),
        }
    }

    fn dev_tx(&mut self, ts: u64, v: &View) {
        let pkt = v.u(F::PktId).unwrap_or(0);
        let Some(cookie) = self.dev_cookie(ts, v, pkt) else {
            self.unattributed.dev_tx += 1;
            return;
        };
        let len = v.u(F::Len).unwrap_or(0);
        self.sent_frames.insert(pkt, SentFrame { ts, len });
        let c = self.conn(cookie, ts);
        c.layers[DEV][OUT].unit(ts, len);
        if let Some(p) = c.send.dev_tx(pkt, len) {
            self.at_driver(cookie, p, ts);
        }
    }

    fn dev_rx(&mut self, ts: u64, v: &View) {
        let Some(pkt) = v.u(F::PktId) else { return };
        let len = v.u(F::Len).unwrap_or(0);
        // The recorder names the socket when it knows the packet's flow (any
        // namespace): counted now, and claimed so that the packet's later IP or
        // TCP events do not count it again (they still read its arrival).
        let named = v.u(F::Cookie).filter(|&c| c != 0);
        let held = named.filter(|&c| self.shared.is_shared(c));
        let cookie = named.filter(|_| held.is_none());
        if let Some(c) = cookie {
            self.conn(c, ts).layers[DEV][IN].unit(ts, len);
        }
        let peer = cookie.is_none()
            && self
                .sent_frames
                .get(&pkt)
                .is_some_and(|f| f.len == len && ts.saturating_sub(f.ts) < PKT_TTL_NS);
        let rx = PendingRx {
            ts,
            len,
            claimed: cookie.is_some(),
            peer,
            held,
        };
        if let Some(old) = self.dev_rx.insert(pkt, rx) {
            self.unclaimed(&old);
        }
    }

    /// A received frame nobody claimed: the peer's reception of our frame, or
    /// an attribution failure.
    fn unclaimed(&mut self, p: &PendingRx) {
        if !p.claimed {
            if let Some(c) = p.held {
                self.conn(c, p.ts).layers[DEV][IN].unit(p.ts, p.len);
            } else if p.peer {
                self.unattributed.peer_rx += 1;
            } else {
                self.unattributed.dev_rx += 1;
            }
        }
    }

    /// Packet `pkt` of `cookie` (as IP saw it) has been handed to the driver whole.
    fn at_driver(&mut self, cookie: u64, pkt: u64, ts: u64) {
        if let Some(c) = self.conns.get_mut(&cookie) {
            c.send.at_driver(pkt, ts);
        }
        if let Some(w) = self.send_wait.remove(&pkt) {
            for s in w.sends {
                if let Some(c) = self.conns.get_mut(&s.cookie) {
                    c.send.latency.add(ts.saturating_sub(s.start_ts));
                }
            }
        }
    }

    /// Forgets per-packet state older than the TTL.
    fn sweep(&mut self, now: u64) {
        let old = |t: u64| now.saturating_sub(t) > PKT_TTL_NS;
        let mut gone = Vec::new();
        self.dev_rx.retain(|_, p| {
            let keep = !old(p.ts);
            if !keep {
                gone.push(*p);
            }
            keep
        });
        for p in gone {
            self.unclaimed(&p);
        }
        self.sent_frames.retain(|_, f| !old(f.ts));
        while self.orphans.front().is_some_and(|o| old(o.packet.ts)) {
            self.orphans.pop_front();
            self.unattributed.ip += 1;
        }
        self.pkt_out.retain(|_, p| !old(p.ts));
        self.passive.retain(|_, t| !old(*t));
        for h in self.shared.unanswered(now.saturating_sub(PKT_TTL_NS)) {
            self.count_held(h);
        }
        let conns = &mut self.conns;
        self.send_wait.retain(|_, w| {
            if old(w.since) {
                for s in &w.sends {
                    if let Some(c) = conns.get_mut(&s.cookie) {
                        c.send.unmatched += 1;
                    }
                }
                false
            } else {
                true
            }
        });
    }

    /// The analysis of everything pushed so far. Its duration is the
    /// recording's span up to the last record.
    pub fn finish(self) -> Analysis {
        self.finish_with(None)
    }

    /// The analysis of a whole trace, whose END block (when it has one) gives
    /// the recording's stop time: the one duration every command shows.
    pub fn finish_with(mut self, footer: Option<&Footer>) -> Analysis {
        let end = self.last_ts;
        self.unattributed.ip += self.orphans.len() as u64;
        for h in self.shared.drain() {
            self.count_held(h);
        }
        for p in std::mem::take(&mut self.dev_rx).into_values() {
            self.unclaimed(&p);
        }
        for (_, w) in self.send_wait.drain() {
            for s in w.sends {
                if let Some(c) = self.conns.get_mut(&s.cookie) {
                    c.send.unmatched += 1;
                }
            }
        }
        let origin = self.origin;
        let series = self.opts.series;
        let index = KindIndex::new(&self.header.catalog);
        let names = RowNames::new(&index);
        let mut traced: HashSet<u32> = HashSet::new();
        let lost = &self.lost;
        let mut conns: Vec<Connection> = self
            .conns
            .into_values()
            .map(|c| {
                traced.extend(c.pids.iter().copied());
                c.finish(origin, series, &names, lost)
            })
            .collect();
        conns.sort_by_key(|c| c.cookie);
        let mut records_by_layer = std::collections::BTreeMap::new();
        for (k, &n) in self.by_kind.iter().enumerate().filter(|(_, n)| **n > 0) {
            let layer = index
                .get(k as u16)
                .map_or("unknown".to_string(), |d| d.layer.clone());
            *records_by_layer.entry(layer).or_default() += n;
        }
        let span = if self.records > 0 || footer.is_some() {
            magnet_trace::recording_span_ns(&self.header, footer, end)
        } else {
            0
        };
        Analysis {
            trace: TraceSummary {
                host: self.header.host.clone(),
                kernel: self.header.kernel.clone(),
                cpus: self.header.cpus,
                start_mono_ns: origin,
                start_realtime_ns: self.header.clock.realtime_ns,
                duration_s: span as f64 / 1e9,
                records: self.records,
                records_by_layer,
                lost_events: magnet_trace::lost_total(self.lost.iter().map(|l| l.count)),
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
