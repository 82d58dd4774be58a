//! The wire as a capture shows it: one row per IP frame, read with tshark.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::{tshark_frames, Error, PcapFile, Result};

/// One IP frame of a capture, as it was on the wire (reassembly off).
#[derive(Debug, Clone)]
pub struct Frame {
    /// Frame length with the link header.
    pub len: u64,
    /// Ports (TCP or UDP); a later IP fragment takes its datagram's.
    pub sport: u16,
    pub dport: u16,
    /// IP length (header + payload) of this frame.
    pub l3: u64,
    /// IP + TCP header length, for TCP.
    pub hdr: u64,
    pub tcp_payload: u64,
    /// Raw TCP sequence number.
    pub seq: u64,
    /// TCP flags (0 for UDP and fragments).
    pub flags: u8,
    /// A UDP datagram or one of its fragments (else TCP).
    pub udp: bool,
}

impl Frame {
    /// A TCP SYN (with or without ACK).
    pub fn syn(&self) -> bool {
        !self.udp && self.flags & 0x02 != 0
    }
}

/// Every IP frame of a capture, in order. Later IP fragments take their
/// datagram's ports. A capture that lost frames is no oracle: an error.
pub fn wire_frames(pcap: &PcapFile) -> Result<Vec<Frame>> {
    if pcap.dropped_by_kernel.unwrap_or(0) != 0 {
        return Err(Error::Other(format!(
            "tcpdump dropped {:?} frames ({:?} captured) in {}",
            pcap.dropped_by_kernel,
            pcap.captured,
            pcap.path().display()
        )));
    }
    let rows = tshark_frames(
        pcap,
        &[
            "frame.len",
            "ip.src",
            "ipv6.src",
            "ip.dst",
            "ipv6.dst",
            "tcp.srcport",
            "udp.srcport",
            "tcp.dstport",
            "udp.dstport",
            "ip.len",
            "ipv6.plen",
            "ip.hdr_len",
            "tcp.hdr_len",
            "tcp.len",
            "ip.id",
            "tcp.seq_raw",
            "tcp.flags",
            "ip.proto",
            "ipv6.nxt",
        ],
    )?;
    let num = |s: &str| -> u64 {
        let s = s.split(',').next().unwrap_or("");
        if let Some(h) = s.strip_prefix("0x") {
            u64::from_str_radix(h, 16).unwrap_or(0)
        } else {
            s.parse().unwrap_or(0)
        }
    };
    let mut ports_of_id: HashMap<(String, u64), (u16, u16)> = HashMap::new();
    let mut frames = Vec::new();
    for r in rows {
        let pick = |a: &str, b: &str| {
            if a.is_empty() {
                b.to_string()
            } else {
                a.to_string()
            }
        };
        let src = pick(&r[1], &r[2]);
        let dst = pick(&r[3], &r[4]);
        let (Ok(src), Ok(dst)) = (src.parse::<IpAddr>(), dst.parse::<IpAddr>()) else {
            continue; // not IP (ARP)
        };
        let sp = pick(&r[5], &r[6]);
        let dp = pick(&r[7], &r[8]);
        let id = (format!("{src}>{dst}"), num(&r[14]));
        let (sport, dport) = if sp.is_empty() {
            ports_of_id.get(&id).copied().unwrap_or((0, 0))
        } else {
            let p = (num(&sp) as u16, num(&dp) as u16);
            ports_of_id.insert(id, p);
            p
        };
        let l3 = if !r[9].is_empty() {
            num(&r[9])
        } else {
            num(&r[10]) + 40
        };
        // IPv4 GSO frames over 64 KiB say 0: take the frame's length.
        let l3 = if l3 == 0 || (l3 == 40 && r[9].is_empty()) {
            num(&r[0]) - 14
        } else {
            l3
        };
        let iphdr = if r[11].is_empty() { 40 } else { num(&r[11]) };
        frames.push(Frame {
            len: num(&r[0]),
            sport,
            dport,
            l3,
            hdr: iphdr + num(&r[12]),
            tcp_payload: num(&r[13]),
            seq: num(&r[15]),
            flags: num(&r[16]) as u8,
            udp: num(&pick(&r[17], &r[18])) == 17,
        });
    }
    Ok(frames)
}
