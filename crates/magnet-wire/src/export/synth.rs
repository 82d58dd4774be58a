//! Headers made from the recorded fields, for a frame whose bytes the trace
//! did not keep.

use std::net::IpAddr;

use crate::kernel::{IpFields, KPacket, Kernel};

/// The TCP header length a synthesised header gets: a SYN's is all of the packet
/// past the IP header (a SYN carries options, no data), others the connection's,
/// except a bare ACK whose excess over it is what SACK blocks take (NOP, NOP,
/// kind, length and 8 bytes per block: 12, 20, 28 or 36 bytes): that is a
/// header too, not 12 bytes of data. (Data without PSH comes in whole MSS.)
pub(super) fn synth_tcp_len(k: &Kernel, ip: &IpFields) -> u32 {
    let room = ip
        .tot_len
        .saturating_sub(if ip.version == 6 { 40 } else { 20 });
    let conn = k
        .tcp_header_len
        .get(&(ip.saddr, ip.sport, ip.daddr, ip.dport))
        .copied()
        .unwrap_or(20);
    let sack_blocks = |extra: u32| matches!(extra, 12 | 20 | 28 | 36);
    let want = if ip.tcp_flags & 0x02 != 0
        || (ip.tcp_flags == 0x10 && room <= 60 && room.checked_sub(conn).is_some_and(sack_blocks))
    {
        room
    } else {
        conn
    };
    want.min(room).clamp(20, 60) & !3
}

fn push16(d: &mut Vec<u8>, v: u16) {
    d.extend_from_slice(&v.to_be_bytes());
}
fn push32(d: &mut Vec<u8>, v: u32) {
    d.extend_from_slice(&v.to_be_bytes());
}

/// Writes made-up headers for `p` into `d`; returns what was made up.
pub(super) fn synthesise(k: &Kernel, p: &KPacket, link: bool, d: &mut Vec<u8>) -> &'static str {
    let Some(ip) = p.ip else {
        // Nothing known past the link header; a device without one (tun)
        // gets no bytes rather than a header that reads as a bad IP packet.
        if !link {
            return "nothing";
        }
        d.extend_from_slice(&[0; 12]);
        push16(d, p.ethertype);
        return "eth";
    };
    if link {
        d.extend_from_slice(&[0; 12]);
        push16(d, if ip.version == 6 { 0x86dd } else { 0x0800 });
    }
    let l4 = match ip.protocol {
        6 => 20,
        17 => 8,
        _ => 0,
    };
    let what = match (ip.version, ip.protocol, link) {
        (6, 6, true) => "eth+ipv6+tcp",
        (6, 17, true) => "eth+ipv6+udp",
        (6, _, true) => "eth+ipv6",
        (_, 6, true) => "eth+ipv4+tcp",
        (_, 17, true) => "eth+ipv4+udp",
        (_, _, true) => "eth+ipv4",
        (6, _, false) => "ipv6+transport",
        (_, _, false) => "ipv4+transport",
    };
    let hdr_len = if ip.version == 6 { 40 } else { 20 };
    match (ip.saddr, ip.daddr) {
        (IpAddr::V6(s), IpAddr::V6(t)) => {
            push32(d, 0x6000_0000 | (ip.tos as u32) << 20);
            push16(d, u16::try_from(ip.tot_len.saturating_sub(40)).unwrap_or(0));
            d.push(ip.protocol);
            d.push(ip.ttl);
            d.extend_from_slice(&s.octets());
            d.extend_from_slice(&t.octets());
        }
        (s, t) => {
            let v4 = |a: IpAddr| match a {
                IpAddr::V4(a) => a.octets(),
                IpAddr::V6(a) => a.to_ipv4_mapped().map_or([0; 4], |x| x.octets()),
            };
            let at = d.len();
            d.extend_from_slice(&[0x45, ip.tos]);
            // Past 64 KiB (BIG TCP) the field is 0, as on the wire.
            push16(d, u16::try_from(ip.tot_len).unwrap_or(0));
            push16(d, ip.ip_id);
            push16(d, ip.frag_off);
            d.extend_from_slice(&[ip.ttl, ip.protocol, 0, 0]);
            d.extend_from_slice(&v4(s));
            d.extend_from_slice(&v4(t));
            let c = checksum(&d[at..at + 20]);
            d[at + 10..at + 12].copy_from_slice(&c.to_be_bytes());
        }
    }
    // Only a first fragment carries the transport header.
    if ip.frag_off & 0x1fff == 0 {
        transport(&ip, hdr_len, l4, synth_tcp_len(k, &ip), d);
    }
    what
}

fn transport(ip: &IpFields, hdr_len: u32, l4: usize, tcp_len: u32, d: &mut Vec<u8>) {
    match l4 {
        20 => {
            push16(d, ip.sport);
            push16(d, ip.dport);
            push32(d, ip.seq);
            push32(d, ip.ack);
            // Data offset: the header length the packet had; the options it
            // carried are not recorded, NOPs stand in for them.
            d.extend_from_slice(&[
                ((tcp_len / 4) as u8) << 4,
                ip.tcp_flags,
                0xff,
                0xff,
                0,
                0,
                0,
                0,
            ]);
            d.extend(std::iter::repeat_n(1u8, tcp_len as usize - 20));
        }
        8 => {
            push16(d, ip.sport);
            push16(d, ip.dport);
            push16(
                d,
                u16::try_from(ip.tot_len.saturating_sub(hdr_len)).unwrap_or(0),
            );
            push16(d, 0);
        }
        _ => {}
    }
}

fn checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}
