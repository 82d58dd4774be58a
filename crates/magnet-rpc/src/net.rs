//! Link, network and transport headers: from a captured frame to a UDP datagram or a
//! TCP segment, with IPv4 and IPv6 fragments put back together.
//!
//! Every read is bounds-checked; a frame that is too short or malformed is counted and
//! skipped, never a panic.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::Counters;

/// TCP header fields the stream reassembler needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpInfo {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
}

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_ACK: u8 = 0x10;

/// A transport payload with its endpoints.
#[derive(Debug, Clone)]
pub struct Datagram<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    /// `None` for UDP.
    pub tcp: Option<TcpInfo>,
    pub payload: Cow<'a, [u8]>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Ethertype or address family at the start of the network layer.
enum Net {
    V4,
    V6,
}

/// The network protocol and bytes of a frame (the link layer is `magnet_pcap::link`'s).
fn link(linktype: u32, data: &[u8]) -> Option<(Net, &[u8])> {
    match magnet_pcap::link::network(linktype, data)? {
        (magnet_pcap::link::ETHERTYPE_IPV4, ip) => Some((Net::V4, ip)),
        (magnet_pcap::link::ETHERTYPE_IPV6, ip) => Some((Net::V6, ip)),
        _ => None,
    }
}

#[derive(Hash, PartialEq, Eq, Clone, Copy, Debug)]
struct FragKey {
    src: IpAddr,
    dst: IpAddr,
    id: u32,
    proto: u8,
}

struct FragBuf {
    first_ts: i64,
    /// (offset, bytes) pieces as they arrived.
    pieces: Vec<(usize, Vec<u8>)>,
    total: Option<usize>,
    held: usize,
}

/// Bounds on IP fragment reassembly.
#[derive(Debug, Clone, Copy)]
pub struct FragLimits {
    pub max_datagrams: usize,
    pub timeout_ns: i64,
}

impl Default for FragLimits {
    fn default() -> Self {
        FragLimits {
            max_datagrams: 4096,
            timeout_ns: 30_000_000_000,
        }
    }
}

/// Turns frames into transport payloads.
pub struct NetDecoder {
    frags: HashMap<FragKey, FragBuf>,
    limits: FragLimits,
    last_sweep: i64,
}

impl Default for NetDecoder {
    fn default() -> Self {
        Self::new(FragLimits::default())
    }
}

const MAX_IP_DATAGRAM: usize = 65535 + 40;

impl NetDecoder {
    pub fn new(limits: FragLimits) -> Self {
        NetDecoder {
            frags: HashMap::new(),
            limits,
            last_sweep: i64::MIN,
        }
    }

    /// Fragments waiting for their missing pieces.
    pub fn pending_fragments(&self) -> usize {
        self.frags.len()
    }

    /// Ends the capture: datagrams still missing pieces are counted and let go.
    pub fn finish(&mut self, c: &mut Counters) {
        c.frag_incomplete_at_end += self.frags.len() as u64;
        self.frags.clear();
    }

    /// Decodes one frame. Returns `None` for anything that is not (yet) a complete UDP
    /// or TCP payload; the reason is counted in `c`.
    pub fn decode<'a>(
        &mut self,
        ts_ns: i64,
        linktype: u32,
        frame: &'a [u8],
        c: &mut Counters,
    ) -> Option<Datagram<'a>> {
        self.sweep(ts_ns, c);
        if !magnet_pcap::link::decoded(linktype) {
            c.link_not_decoded += 1;
            c.link_type_not_decoded.get_or_insert(linktype);
            return None;
        }
        let Some((net, ip)) = link(linktype, frame) else {
            c.not_ip += 1;
            return None;
        };
        match net {
            Net::V4 => self.ipv4(ts_ns, ip, c),
            Net::V6 => self.ipv6(ts_ns, ip, c),
        }
    }

    fn sweep(&mut self, now: i64, c: &mut Counters) {
        if self.frags.is_empty() || now < self.last_sweep.saturating_add(1_000_000_000) {
            return;
        }
        self.last_sweep = now;
        let limit = self.limits.timeout_ns;
        let before = self.frags.len();
        self.frags.retain(|_, f| now - f.first_ts <= limit);
        c.frag_dropped += (before - self.frags.len()) as u64;
    }

    fn ipv4<'a>(&mut self, ts: i64, ip: &'a [u8], c: &mut Counters) -> Option<Datagram<'a>> {
        let vihl = *ip.first()?;
        let ihl = ((vihl & 0x0f) as usize) * 4;
        if vihl >> 4 != 4 || ihl < 20 || ip.len() < ihl {
            c.ip_malformed += 1;
            return None;
        }
        let total = be16(ip, 2)? as usize;
        if total < ihl {
            c.ip_malformed += 1;
            return None;
        }
        // A frame may carry padding past the IP total length, or be cut by the snap
        // length before it.
        let end = total.min(ip.len());
        let id = be16(ip, 4)? as u32;
        let ff = be16(ip, 6)?;
        let more = ff & 0x2000 != 0;
        let frag_off = ((ff & 0x1fff) as usize) * 8;
        let proto = ip[9];
        let src = IpAddr::V4(Ipv4Addr::from(be32(ip, 12)?));
        let dst = IpAddr::V4(Ipv4Addr::from(be32(ip, 16)?));
        let body = &ip[ihl..end];
        if more || frag_off != 0 {
            if end < total {
                c.snaplen_cut += 1;
                return None;
            }
            c.ip_fragments += 1;
            let key = FragKey {
                src,
                dst,
                id,
                proto,
            };
            let whole = self.add_fragment(ts, key, frag_off, more, body, c)?;
            return transport(src, dst, proto, Cow::Owned(whole), end < total, c);
        }
        transport(src, dst, proto, Cow::Borrowed(body), end < total, c)
    }

    fn ipv6<'a>(&mut self, ts: i64, ip: &'a [u8], c: &mut Counters) -> Option<Datagram<'a>> {
        if ip.len() < 40 || ip[0] >> 4 != 6 {
            c.ip_malformed += 1;
            return None;
        }
        let plen = be16(ip, 4)? as usize;
        let mut next = ip[6];
        let src = IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).ok()?));
        let dst = IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).ok()?));
        let end = (40 + plen).min(ip.len());
        let cut = 40 + plen > ip.len();
        let mut off = 40;
        let mut frag: Option<(usize, bool, u32)> = None;
        // Walk extension headers (bounded: at most 8).
        for _ in 0..8 {
            match next {
                0 | 43 | 60 => {
                    let n = *ip.get(off)?;
                    let len = (*ip.get(off + 1)? as usize + 1) * 8;
                    next = n;
                    off += len;
                }
                44 => {
                    let n = *ip.get(off)?;
                    let fo = be16(ip, off + 2)?;
                    let id = be32(ip, off + 4)?;
                    frag = Some(((fo & 0xfff8) as usize, fo & 1 != 0, id));
                    next = n;
                    off += 8;
                }
                _ => break,
            }
        }
        if off > end {
            c.ip_malformed += 1;
            return None;
        }
        let body = &ip[off..end];
        if let Some((fo, more, id)) = frag {
            if cut {
                c.snaplen_cut += 1;
                return None;
            }
            c.ip_fragments += 1;
            let key = FragKey {
                src,
                dst,
                id,
                proto: next,
            };
            let whole = self.add_fragment(ts, key, fo, more, body, c)?;
            return transport(src, dst, next, Cow::Owned(whole), false, c);
        }
        transport(src, dst, next, Cow::Borrowed(body), cut, c)
    }

    fn add_fragment(
        &mut self,
        ts: i64,
        key: FragKey,
        off: usize,
        more: bool,
        body: &[u8],
        c: &mut Counters,
    ) -> Option<Vec<u8>> {
        if off + body.len() > MAX_IP_DATAGRAM {
            c.frag_dropped += 1;
            self.frags.remove(&key);
            return None;
        }
        if !self.frags.contains_key(&key) && self.frags.len() >= self.limits.max_datagrams {
            // Evict the oldest to stay bounded.
            if let Some(old) = self
                .frags
                .iter()
                .min_by_key(|(_, f)| f.first_ts)
                .map(|(k, _)| *k)
            {
                self.frags.remove(&old);
                c.frag_dropped += 1;
            }
        }
        let f = self.frags.entry(key).or_insert_with(|| FragBuf {
            first_ts: ts,
            pieces: Vec::new(),
            total: None,
            held: 0,
        });
        if f.held + body.len() > 2 * MAX_IP_DATAGRAM {
            c.frag_dropped += 1;
            self.frags.remove(&key);
            return None;
        }
        if !more {
            f.total = Some(off + body.len());
        }
        f.held += body.len();
        f.pieces.push((off, body.to_vec()));
        let total = f.total?;
        // Covered?
        f.pieces.sort_by_key(|p| p.0);
        let mut reach = 0;
        for (o, d) in &f.pieces {
            if *o > reach {
                return None;
            }
            reach = reach.max(o + d.len());
        }
        if reach < total {
            return None;
        }
        let mut out = vec![0u8; total];
        for (o, d) in &f.pieces {
            let e = (o + d.len()).min(total);
            if *o < e {
                out[*o..e].copy_from_slice(&d[..e - o]);
            }
        }
        self.frags.remove(&key);
        c.ip_reassembled += 1;
        Some(out)
    }
}

fn transport<'a>(
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    body: Cow<'a, [u8]>,
    cut: bool,
    c: &mut Counters,
) -> Option<Datagram<'a>> {
    match proto {
        17 => {
            let b: &[u8] = &body;
            let (sport, dport, ulen) = (be16(b, 0)?, be16(b, 2)?, be16(b, 4)? as usize);
            if ulen < 8 {
                c.ip_malformed += 1;
                return None;
            }
            if cut || b.len() < ulen {
                c.snaplen_cut += 1;
                return None;
            }
            c.udp_datagrams += 1;
            let payload = match body {
                Cow::Borrowed(b) => Cow::Borrowed(&b[8..ulen]),
                Cow::Owned(v) => Cow::Owned(v[8..ulen].to_vec()),
            };
            Some(Datagram {
                src,
                dst,
                sport,
                dport,
                tcp: None,
                payload,
            })
        }
        6 => {
            let b: &[u8] = &body;
            let (sport, dport) = (be16(b, 0)?, be16(b, 2)?);
            let (seq, ack) = (be32(b, 4)?, be32(b, 8)?);
            let doff = ((*b.get(12)? >> 4) as usize) * 4;
            let flags = *b.get(13)?;
            if doff < 20 || b.len() < doff {
                c.ip_malformed += 1;
                return None;
            }
            if cut {
                // The stream would have a hole where the snap length cut: the
                // reassembler treats the missing tail as a gap.
                c.snaplen_cut += 1;
            }
            c.tcp_segments += 1;
            let payload = match body {
                Cow::Borrowed(b) => Cow::Borrowed(&b[doff..]),
                Cow::Owned(v) => Cow::Owned(v[doff..].to_vec()),
            };
            Some(Datagram {
                src,
                dst,
                sport,
                dport,
                tcp: Some(TcpInfo { seq, ack, flags }),
                payload,
            })
        }
        _ => {
            c.not_tcp_udp += 1;
            None
        }
    }
}
