//! Socket-level records: a socket's identity (SOCK, state changes, the flow
//! its packets will carry) and what the application and TCP did with it.

use std::net::IpAddr;

use magnet_trace::{kind, RecordRef};

use super::{Analyzer, PKT_TTL_NS};
use crate::connections::{Endpoint, Endpoints, DEV, IN, OUT, TCP};
use crate::fields::{View, F};
use crate::flows::FlowKey;
use crate::latency::RxSource;
use crate::secs;
use crate::tcp::{Snap, TCP_FIN};

/// TCP_LISTEN in the kernel's numbering.
const TCP_LISTEN: u64 = 10;
/// `SOCK_RAW`: a raw socket's `type` in SOCK and app records.
const SOCK_RAW: u64 = 3;

impl Analyzer {
    pub(super) fn learn_flow(
        &mut self,
        cookie: u64,
        proto: Option<u64>,
        local: Endpoint,
        remote: Endpoint,
    ) {
        if cookie == 0 || local.port == 0 {
            return;
        }
        // An IPv6 socket connected to an IPv4 peer (`::ffff:a.b.c.d`) sends and
        // receives IPv4 packets: its flow is theirs.
        let key = FlowKey {
            local: local.addr.to_canonical(),
            lport: local.port,
            remote: remote.addr.to_canonical(),
            rport: remote.port,
            proto: proto.unwrap_or(6) as u8,
        };
        self.flows.insert(key, cookie);
        if remote.port == 0 {
            let ns = self.netns_of(cookie);
            self.shared.bind((ns, key), cookie);
        }
        self.adopt_orphans();
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

    pub(super) fn sock(&mut self, ts: u64, v: &View) {
        let Some(cookie) = v.u(F::Cookie) else { return };
        let proto = v.u(F::Protocol);
        let ends = Endpoints::read(v);
        let c = self.conn(cookie, ts);
        c.known = true;
        c.protocol = proto.or(c.protocol);
        c.raw |= v.u(F::SockType) == Some(SOCK_RAW);
        c.netns = v.u(F::Netns);
        if c.protocol == Some(6) && ends.is_some_and(|e| e.src.port != 0 && e.dst.port == 0) {
            c.listener = true;
        }
        if let Some(e) = ends {
            self.learn_ends(cookie, proto, e);
        }
    }

    pub(super) fn tcp_state(&mut self, ts: u64, v: &View) {
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

    pub(super) fn app(&mut self, k: u16, ts: u64, rec: RecordRef, v: &View) {
        let Some(cookie) = v.u(F::Cookie) else { return };
        let ret = v.i(F::Ret).unwrap_or(-1) as i32 as i64;
        let proto = v.u(F::Protocol);
        let comm = v.comm(F::Comm);
        let (pid, tid) = (rec.pid(), rec.tid());
        let c = self.conn(cookie, ts);
        c.known = true;
        c.protocol = c.protocol.or(proto);
        c.raw |= v.u(F::SockType) == Some(SOCK_RAW);
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

    pub(super) fn tcp(&mut self, k: u16, ts: u64, rec: RecordRef, v: &View) {
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
                let filled = c.seg[IN].filled();
                c.recv.segment(seq, arrival, flags, RxSource::Tcp, filled);
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
}
