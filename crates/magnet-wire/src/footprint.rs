//! Footprints: what ties a captured frame to the kernel's record of the same packet
//! (the thesis's packet association, chapter 5.3; docs/wire.md, "`magnet match`").
//! Timestamps alone do not match across capture points (each has its own clock):
//! they only break ties and estimate the clock offset between the two records.
//!
//! IPv4: source, destination, identification, protocol; IPv6: source, destination,
//! next header. Both add the transport key the trace records: TCP ports, sequence and
//! acknowledgement numbers, or UDP ports (the trace holds no UDP checksum, so IPv6
//! UDP datagrams of one flow are told apart by time). ARP has no footprint: it is
//! matched by ethertype and time.

use std::net::IpAddr;

use crate::kernel::IpFields;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Footprint {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    /// IPv4 identification (0 for IPv6).
    pub ip_id: u16,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
}

impl Footprint {
    pub fn from_kernel(ip: &IpFields) -> Footprint {
        let tcp = ip.protocol == 6;
        let ports = matches!(ip.protocol, 6 | 17);
        Footprint {
            src: ip.saddr,
            dst: ip.daddr,
            protocol: ip.protocol,
            ip_id: if ip.version == 4 { ip.ip_id } else { 0 },
            sport: if ports { ip.sport } else { 0 },
            dport: if ports { ip.dport } else { 0 },
            seq: if tcp { ip.seq } else { 0 },
            ack: if tcp { ip.ack } else { 0 },
        }
    }
}

/// What a captured frame is, as far as matching cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    Ip {
        fp: Footprint,
        tcp_flags: u8,
        /// IP total length.
        len: u16,
    },
    Arp,
    /// Anything else, with its ethertype (0 when not even that was readable).
    Other(u16),
    /// A frame of a link type magnet does not decode (its number).
    Link(u32),
}

/// Reads a captured frame.
pub fn parse_frame(linktype: u32, d: &[u8]) -> Frame {
    if !magnet_pcap::link::decoded(linktype) {
        return Frame::Link(linktype);
    }
    let Some((et, net)) = magnet_pcap::link::network(linktype, d) else {
        return Frame::Other(0);
    };
    match et {
        0x0806 => Frame::Arp,
        0x0800 => ipv4(net).unwrap_or(Frame::Other(et)),
        0x86dd => ipv6(net).unwrap_or(Frame::Other(et)),
        _ => Frame::Other(et),
    }
}

fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]))
}
fn be32(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

fn transport(proto: u8, l4: Option<&[u8]>, fp: &mut Footprint) -> u8 {
    let Some(t) = l4 else { return 0 };
    match proto {
        6 => {
            fp.sport = be16(t, 0).unwrap_or(0);
            fp.dport = be16(t, 2).unwrap_or(0);
            fp.seq = be32(t, 4).unwrap_or(0);
            fp.ack = be32(t, 8).unwrap_or(0);
            t.get(13).copied().unwrap_or(0)
        }
        17 => {
            fp.sport = be16(t, 0).unwrap_or(0);
            fp.dport = be16(t, 2).unwrap_or(0);
            0
        }
        _ => 0,
    }
}

fn ipv4(d: &[u8]) -> Option<Frame> {
    if d.len() < 20 || d[0] >> 4 != 4 {
        return None;
    }
    let ihl = (d[0] & 15) as usize * 4;
    let src: [u8; 4] = d[12..16].try_into().ok()?;
    let dst: [u8; 4] = d[16..20].try_into().ok()?;
    let proto = d[9];
    let frag = be16(d, 6)?;
    let mut fp = Footprint {
        src: IpAddr::from(src),
        dst: IpAddr::from(dst),
        protocol: proto,
        ip_id: be16(d, 4)?,
        sport: 0,
        dport: 0,
        seq: 0,
        ack: 0,
    };
    // Only a first fragment carries the transport header.
    let first = frag & 0x1fff == 0;
    let flags = if first {
        transport(proto, d.get(ihl..), &mut fp)
    } else {
        0
    };
    Some(Frame::Ip {
        fp,
        tcp_flags: flags,
        len: be16(d, 2)?,
    })
}

fn ipv6(d: &[u8]) -> Option<Frame> {
    if d.len() < 40 || d[0] >> 4 != 6 {
        return None;
    }
    let src: [u8; 16] = d[8..24].try_into().ok()?;
    let dst: [u8; 16] = d[24..40].try_into().ok()?;
    // Walk the extension headers the kernel walks past for the transport header.
    let mut nh = d[6];
    let mut at = 40;
    for _ in 0..8 {
        match nh {
            0 | 43 | 60 => {
                nh = *d.get(at)?;
                at += (*d.get(at + 1)? as usize + 1) * 8;
            }
            44 => {
                nh = *d.get(at)?;
                at += 8;
            }
            _ => break,
        }
    }
    let mut fp = Footprint {
        src: IpAddr::from(src),
        dst: IpAddr::from(dst),
        protocol: nh,
        ip_id: 0,
        sport: 0,
        dport: 0,
        seq: 0,
        ack: 0,
    };
    let flags = transport(nh, d.get(at..), &mut fp);
    Some(Frame::Ip {
        fp,
        tcp_flags: flags,
        len: be16(d, 4)?.saturating_add(40),
    })
}

/// TCP flags as tcpdump shows them (`S`, `S.`, `P.`, `F.`, `R`, `.`).
pub fn tcp_flags_str(f: u8) -> String {
    let mut s = String::new();
    for (bit, c) in [
        (0x02, 'S'),
        (0x01, 'F'),
        (0x04, 'R'),
        (0x08, 'P'),
        (0x10, '.'),
    ] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    if s.is_empty() {
        s.push_str("none");
    }
    s
}
