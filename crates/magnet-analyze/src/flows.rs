//! Flows: which socket a packet belongs to when the packet itself does not say
//! (no socket on the skb, e.g. on receive before demultiplexing), by its 5-tuple.

use std::net::IpAddr;

use crate::fields::{View, F};
use crate::Map;

/// A flow as seen from the local end.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct FlowKey {
    pub local: IpAddr,
    pub lport: u16,
    pub remote: IpAddr,
    pub rport: u16,
    pub proto: u8,
}

impl FlowKey {
    /// A packet's flow; `local_is_src` on transmit.
    pub fn of_packet(v: &View, local_is_src: bool) -> Option<FlowKey> {
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
}

/// Sockets by flow, learnt from SOCK records, state changes and packets that
/// carry their socket.
#[derive(Default)]
pub(crate) struct Flows {
    by_key: Map<FlowKey, u64>,
}

impl Flows {
    pub fn insert(&mut self, key: FlowKey, cookie: u64) {
        self.by_key.insert(key, cookie);
    }

    /// The socket of a flow: exact, then bound to the local address and port
    /// with any remote, then to the port on any address.
    pub fn find(&self, key: FlowKey) -> Option<u64> {
        if let Some(&c) = self.by_key.get(&key) {
            return Some(c);
        }
        let any = if key.local.is_ipv4() {
            IpAddr::from([0u8; 4])
        } else {
            IpAddr::from([0u16; 8])
        };
        [key.local, any].into_iter().find_map(|local| {
            self.by_key
                .get(&FlowKey {
                    local,
                    remote: any,
                    rport: 0,
                    ..key
                })
                .copied()
        })
    }
}

/// A received or sent IP packet, as the analysis keeps it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IpPacket {
    pub ts: u64,
    pub pkt: u64,
    /// IP total length.
    pub len: u64,
    pub proto: u8,
    /// TCP sequence number and flags (0 for other protocols).
    pub seq: u32,
    pub flags: u64,
    /// TCP acknowledgment number (valid when `flags` has ACK).
    pub ack: u32,
}

impl IpPacket {
    pub fn read(ts: u64, v: &View) -> IpPacket {
        IpPacket {
            ts,
            pkt: v.u(F::PktId).unwrap_or(0),
            len: v.u(F::TotLen).unwrap_or(0),
            proto: v.u(F::Protocol).unwrap_or(0) as u8,
            seq: v.u32(F::Seq).unwrap_or(0),
            flags: v.u(F::TcpFlags).unwrap_or(0),
            ack: v.u32(F::Ack).unwrap_or(0),
        }
    }
}

/// An IP packet of no known socket yet: a socket is often announced only when
/// its first send or recv returns, after its first packet. Kept for the packet
/// TTL.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Orphan {
    pub key: FlowKey,
    pub outgoing: bool,
    pub packet: IpPacket,
}
