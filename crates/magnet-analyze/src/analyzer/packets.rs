//! Packet-level records at IP and the device: which socket each packet is
//! for, the frames waiting for a socket, and the sweep that bounds them.

use magnet_trace::kind;

use super::tunnels::carries;
use super::{Analyzer, OutPacket, PendingRx, SentFrame, ORPHAN_CAP, PKT_TTL_NS};
use crate::connections::{Endpoints, DEV, IN, IP, OUT, TCP};
use crate::fields::{View, F};
use crate::flows::{FlowKey, IpPacket, Orphan};
use crate::latency::{IpSegment, RxSource};
use crate::tcp::{TCP_ACK, TCP_SYN};

impl Analyzer {
    pub(super) fn ip_out(&mut self, ts: u64, v: &View) {
        let cookie = match v.u(F::Cookie) {
            Some(c) if c != 0 => {
                // A packet with its socket tells the socket's full tuple.
                if let Some(e) = Endpoints::read(v) {
                    let proto = v.u(F::Protocol);
                    let conn = self.conn(c, ts);
                    if carries(conn, proto, &e) {
                        self.tunnel_out(c, v, &IpPacket::read(ts, v));
                        return;
                    }
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
            if !self.tunnel_socketless_out(v, &p) {
                self.orphan(v, p, true);
            }
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

    /// IP packets kept waiting for their socket, tried again now that a
    /// flow is known: those of the new flow are counted, the rest wait on.
    pub(super) fn adopt_orphans(&mut self) {
        if self.orphans.is_empty() {
            return;
        }
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

    pub(super) fn ip_in(&mut self, k: u16, ts: u64, v: &View) {
        let key = FlowKey::of_packet(v, false);
        let cookie = match v.u(F::Cookie) {
            Some(c) if c != 0 && k == kind::IP_LOCAL_IN => Some(c),
            _ => key.and_then(|key| self.flows.find(key)),
        };
        let p = IpPacket::read(ts, v);
        let Some(cookie) = cookie else {
            // A tunnel's outer packet is the tunnel's; any other waits for
            // its socket to be announced.
            if k == kind::IP_LOCAL_IN && !self.tunnel_in(v, &p) {
                self.orphan(v, p, false);
            }
            return;
        };
        self.ip_in_unit(cookie, k, &p, key);
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
            let filled = c.seg_in_wire.filled();
            c.recv
                .segment(p.seq, arrival, p.flags, RxSource::Ip, filled);
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

    pub(super) fn dev_tx(&mut self, ts: u64, v: &View) {
        let pkt = v.u(F::PktId).unwrap_or(0);
        let len = v.u(F::Len).unwrap_or(0);
        if self.tunnel_frame(ts, v, pkt, len) {
            return;
        }
        let Some(cookie) = self.dev_cookie(ts, v, pkt) else {
            self.unattributed.dev_tx += 1;
            return;
        };
        self.sent_frames.insert(pkt, SentFrame { ts, len });
        let c = self.conn(cookie, ts);
        c.layers[DEV][OUT].unit(ts, len);
        if let Some(p) = c.send.dev_tx(pkt, len) {
            self.at_driver(cookie, p, ts);
        }
    }

    pub(super) fn dev_rx(&mut self, ts: u64, v: &View) {
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
    pub(super) fn unclaimed(&mut self, p: &PendingRx) {
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
    pub(super) fn sweep(&mut self, now: u64) {
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
        self.sweep_tunnels(now);
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
}
