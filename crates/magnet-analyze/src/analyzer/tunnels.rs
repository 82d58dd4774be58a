//! Tunnels: the outer packets of an encapsulation (VXLAN, Geneve, GRE, IPsec,
//! sit) that carries a traced socket's packets.
//!
//! A tunnel device on the sending host wraps the socket's packet in the same
//! sk_buff and sends it again through IP LOCAL_OUT and a second device, so the
//! outer packet's events carry the inner socket's cookie. They are not that
//! socket's own packets: its rows count what its own IP made of its segments
//! (the inner packets, on the tunnel device), in both directions alike, since
//! on the receiving host the outer packets reach the tunnel's kernel socket,
//! never a traced one. The outer packets are counted in
//! `trace.unattributed.tunnel_*` instead (docs/analyze.md, "Tunnels"): before,
//! a TCP connection over VXLAN showed 108 ip packets out for 51 segments but
//! 26 in for 26 ACKs.

use std::net::IpAddr;

use super::{Analyzer, SentFrame, PKT_TTL_NS};
use crate::connections::{Conn, Endpoints};
use crate::fields::{View, F};
use crate::flows::IpPacket;

/// Most tunnel ends remembered.
const TUNNEL_ENDS_CAP: usize = 4096;

/// A tunnel's end: its outer packets' protocol, an address and a port (0
/// for protocols without ports: GRE, ESP, IP in IP).
pub(super) type TunnelEnd = (u8, IpAddr, u16);

/// Whether an IP packet that socket `c` sent is an outer packet that carries
/// one of its own: another transport protocol than the socket's, or another
/// source port (no SNAT happens before LOCAL_OUT; a fragment after the first
/// has no ports and is not judged). Addresses are not compared: a socket bound
/// to a wildcard sends from any of them. A socket not yet announced (a UDP
/// socket's first datagram) is judged by the tuple its first packet taught;
/// a raw socket (hping3, nmap) writes any protocol and ports: never judged.
pub(super) fn carries(c: &Conn, proto: Option<u64>, e: &Endpoints) -> bool {
    let Some(theirs) = proto.filter(|_| !c.raw) else {
        return false;
    };
    if c.protocol.is_some_and(|mine| mine != theirs) {
        return true;
    }
    matches!(theirs, 6 | 17 | 136)
        && e.src.port != 0
        && c.local.is_some_and(|l| l.port != 0 && l.port != e.src.port)
}

impl Analyzer {
    /// An outer packet sent: counted as the tunnel's, its id and ends kept so
    /// that its frames, and the tunnel's packets that carry no traced socket's
    /// (ARP, ICMP errors) or come in from the other end, are too. The ends:
    /// the destination, and the source with either port (VXLAN and Geneve
    /// receive on the port they send to, from a port of the flow's hash;
    /// WireGuard on its own).
    pub(super) fn tunnel_out(&mut self, cookie: u64, v: &View, p: &IpPacket) {
        self.unattributed.tunnel_ip += 1;
        self.tunnel_pkts.insert(p.pkt, p.ts);
        if let Some(i) = v.u(F::Ifindex) {
            self.tunnel_devs.insert(cookie, i);
        }
        if let Some(e) = Endpoints::read(v) {
            let ends = [
                (p.proto, e.dst.addr, e.dst.port),
                (p.proto, e.src.addr, e.dst.port),
                (p.proto, e.src.addr, e.src.port),
            ];
            for end in ends {
                if self.tunnel_ends.len() < TUNNEL_ENDS_CAP {
                    self.tunnel_ends.insert(end);
                }
            }
        }
    }

    /// Whether a packet of no socket is one of a known tunnel's: bound to one
    /// of its ends.
    fn to_tunnel_end(&self, v: &View, p: &IpPacket) -> bool {
        !self.tunnel_ends.is_empty()
            && Endpoints::read(v).is_some_and(|e| {
                self.tunnel_ends
                    .contains(&(p.proto, e.dst.addr, e.dst.port))
            })
    }

    /// An IP packet sent without a socket (an ARP request or an ICMP error
    /// through the tunnel): the tunnel's if it goes to one of its ends.
    pub(super) fn tunnel_socketless_out(&mut self, v: &View, p: &IpPacket) -> bool {
        if !self.to_tunnel_end(v, p) {
            return false;
        }
        self.unattributed.tunnel_ip += 1;
        self.tunnel_pkts.insert(p.pkt, p.ts);
        true
    }

    /// A frame handed to a driver whose packet is a tunnel's outer packet:
    /// counted as the tunnel's (true), and kept as sent so that its reception
    /// in a peer namespace counts as `peer_rx`, as the socket's own would.
    /// The segments of an outer GSO packet (split just before the driver, each
    /// a packet id of its own that IP never saw) are known by their device:
    /// the one the socket's tunnel sent on, not the socket's own.
    pub(super) fn tunnel_frame(&mut self, ts: u64, v: &View, pkt: u64, len: u64) -> bool {
        if self.tunnel_pkts.is_empty() && self.tunnel_devs.is_empty() {
            return false; // no tunnel met: no lookups per frame
        }
        let outer = self.tunnel_pkts.contains_key(&pkt)
            || (!self.pkt_out.contains_key(&pkt)
                && v.u(F::Cookie)
                    .filter(|&c| c != 0)
                    .and_then(|c| self.tunnel_devs.get(&c))
                    .is_some_and(|&dev| v.u(F::Ifindex) == Some(dev)));
        if !outer {
            return false;
        }
        self.unattributed.tunnel_dev_tx += 1;
        self.sent_frames.insert(pkt, SentFrame { ts, len });
        true
    }

    /// A received IP packet of no known socket that is a tunnel's outer
    /// packet (to one of its ends): counted as the tunnel's with its frame.
    pub(super) fn tunnel_in(&mut self, v: &View, p: &IpPacket) -> bool {
        if !self.to_tunnel_end(v, p) {
            return false;
        }
        self.unattributed.tunnel_ip += 1;
        if let Some(d) = self.dev_rx.get_mut(&p.pkt).filter(|d| !d.claimed) {
            d.claimed = true;
            self.unattributed.tunnel_dev_rx += 1;
        }
        true
    }

    /// Forgets tunnel packets older than the TTL.
    pub(super) fn sweep_tunnels(&mut self, now: u64) {
        self.tunnel_pkts
            .retain(|_, t| now.saturating_sub(*t) <= PKT_TTL_NS);
    }
}
