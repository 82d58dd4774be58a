//! `magnet pcap`: a trace as pcapng.
//!
//! One frame per sighting at the device layer: `dev_start_xmit` (outbound, handed to
//! the driver) and `dev_rx` (inbound, from the driver). A packet that crossed a veth
//! pair is two frames, one per interface, as tcpdump on each would show. Packets the
//! trace saw only at the IP layer (the dev layer was not recorded) become one raw-IP
//! frame at LOCAL_OUT or LOCAL_IN on an interface block of their own.
//!
//! A trace recorded with `magnet record --snaplen N` carries the first bytes of
//! each frame: those are written as they are (captured length = what was kept,
//! original length = the frame). Without them, headers are synthesised from the
//! recorded fields: Ethernet (zero MAC addresses, the recorded ethertype), IPv4/IPv6 (every
//! field the IP layer recorded, header checksum computed), TCP (ports, sequence and
//! acknowledgement numbers, flags) or UDP (ports, length). The captured length is the
//! headers; the original length is what the device saw. Each comment ends with
//! `synthesized=` and what was made up, so nobody mistakes it for a capture.
//!
//! Every frame's comment (Wireshark: `frame.comment contains "pid=1234"`) has
//! `pid= comm= cookie= dir= if=`, the application call whose bytes it carries (the
//! socket's last send before it) or that consumed them (the first receive after it),
//! and the packet's path: every hook that saw it, with times relative to this frame.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;

use magnet_pcap::{linktype, InterfaceDesc, OutPacket, PcapNgWriter};
use magnet_trace::catalog::kind;
use serde::Serialize;

use crate::kernel::{IpFields, KPacket, Kernel};

/// What was written.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ExportStats {
    pub frames: u64,
    /// Frames with the bytes the trace kept (`record --snaplen`).
    pub captured: u64,
    /// Frames with IP and transport headers made from the trace's fields.
    pub synthesized_ip: u64,
    /// Frames with only a link header (no IP event for the packet).
    pub link_only: u64,
    /// Frames whose comment names a process.
    pub with_process: u64,
    /// Frames per interface block: (name, frames).
    pub interfaces: Vec<(String, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum IfKey {
    /// A device: ifindex, network namespace (0: not known).
    Dev(u32, u64),
    Ip(u32),
}

fn us(ns: i64) -> String {
    format!("{:+.1}us", ns as f64 / 1000.0)
}

/// Writes `k` as pcapng to `w`.
pub fn write_pcapng<W: Write>(k: &Kernel, w: W) -> io::Result<ExportStats> {
    let header = k.header.as_ref();
    let host = k
        .header
        .as_ref()
        .map_or("", |h| h.host.as_str())
        .to_string();
    let mut shb: Vec<(u16, &[u8])> =
        vec![(4, b"magnet pcap (from a magnet trace; frames without recorded bytes have synthesised headers)")];
    if !host.is_empty() {
        shb.push((2, host.as_bytes()));
    }
    let mut out = PcapNgWriter::with_options(w, false, &shb)?;
    // (ts, packet, hop) of every frame, then in time order.
    let mut frames: Vec<(i64, u32, u16, IfKey)> = Vec::new();
    for (pi, p) in k.packets.iter().enumerate() {
        if p.gso_segments > 0 {
            continue; // on the wire as its segments
        }
        let mut any_dev = false;
        for (hi, h) in p.hops.iter().enumerate() {
            if matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX) {
                any_dev = true;
                frames.push((h.ts_ns, pi as u32, hi as u16, IfKey::Dev(h.ifindex, 0)));
            }
        }
        if !any_dev {
            if let Some((hi, h)) = p
                .hops
                .iter()
                .enumerate()
                .find(|(_, h)| matches!(h.kind, kind::IP_LOCAL_OUT | kind::IP_LOCAL_IN))
            {
                frames.push((h.ts_ns, pi as u32, hi as u16, IfKey::Ip(h.ifindex)));
            }
        }
    }
    // Device events carry no namespace: a hop's socket tells it (a transmit's
    // socket, a receive's flow socket, both in the device's namespace); a hop
    // without one takes the only namespace its ifindex was seen in with a socket.
    let hop_ns = |pi: u32, hi: u16| -> u64 {
        let h = &k.packets[pi as usize].hops[hi as usize];
        k.sock_netns.get(&h.cookie).copied().unwrap_or(0)
    };
    let mut seen_ns: BTreeMap<u32, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for &(_, pi, hi, key) in &frames {
        if let IfKey::Dev(i, _) = key {
            let ns = hop_ns(pi, hi);
            if ns != 0 {
                seen_ns.entry(i).or_default().insert(ns);
            }
        }
    }
    for f in &mut frames {
        if let IfKey::Dev(i, _) = f.3 {
            let mut ns = hop_ns(f.1, f.2);
            if ns == 0 {
                if let Some(only) = seen_ns.get(&i).filter(|s| s.len() == 1) {
                    ns = *only.iter().next().expect("one");
                }
            }
            f.3 = IfKey::Dev(i, ns);
        }
    }
    frames.sort_unstable();
    let mut ifaces: BTreeMap<IfKey, (u32, String, u64)> = BTreeMap::new();
    let mut st = ExportStats::default();
    let mut data = Vec::with_capacity(128);
    let mut comment = String::with_capacity(256);
    for &(ts, pi, hi, key) in &frames {
        let p = &k.packets[pi as usize];
        let h = p.hops[hi as usize];
        let n = ifaces.len();
        let entry = match ifaces.entry(key) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let (lt, name, desc) = match key {
                    IfKey::Dev(i, ns) => {
                        let known: Vec<&magnet_trace::Interface> = header
                            .map(|h| h.interfaces.iter().filter(|f| f.ifindex == i).collect())
                            .unwrap_or_default();
                        let exact = known.iter().find(|f| ns != 0 && f.netns == ns);
                        let name = exact
                            .map(|f| f.name.as_str())
                            .or_else(|| header.and_then(|h| h.interface_name(i)));
                        let list = known
                            .iter()
                            .map(|f| format!("{} in netns {}", f.name, f.netns))
                            .collect::<Vec<_>>()
                            .join(", ");
                        match name {
                            Some(name) => (
                                linktype::ETHERNET,
                                name.to_owned(),
                                match exact {
                                    Some(f) => format!("{host}: {name}, ifindex {i}, netns {}", f.netns),
                                    None => format!("{host}: {name}, ifindex {i} ({list})"),
                                },
                            ),
                            None if known.is_empty() => (
                                linktype::ETHERNET,
                                format!("ifindex{i}"),
                                format!("{host}: device ifindex {i} (not among the interfaces when the recording started)"),
                            ),
                            None => (
                                linktype::ETHERNET,
                                format!("ifindex{i}"),
                                format!("{host}: device ifindex {i}: one of {list} (its events name no socket to tell the namespace)"),
                            ),
                        }
                    }
                    IfKey::Ip(i) => (
                        linktype::RAW,
                        format!("ip-ifindex{i}"),
                        format!("{host}: IP layer of ifindex {i} (the trace has no device events for these packets)"),
                    ),
                };
                let id =
                    out.add_interface(&InterfaceDesc::new(lt).name(&name).description(&desc))?;
                debug_assert_eq!(id as usize, n);
                v.insert((id, name, 0))
            }
        };
        entry.2 += 1;
        let outbound = matches!(h.kind, kind::DEV_START_XMIT | kind::IP_LOCAL_OUT);
        data.clear();
        let link = matches!(key, IfKey::Dev(..));
        let frame = p.frame_at(&h).filter(|b| !b.is_empty());
        let made;
        let orig;
        if let Some(bytes) = frame {
            data.extend_from_slice(bytes);
            made = "";
            // The dev record's length is the whole frame, link header included.
            orig = (h.len as usize).max(data.len());
            st.captured += 1;
        } else {
            made = synthesise(p, link, &mut data);
            orig = match (p.ip, link) {
                (Some(ip), true) => 14 + ip.tot_len as usize,
                (Some(ip), false) => ip.tot_len as usize,
                (None, _) => h.len as usize + if h.kind == kind::DEV_RX { 14 } else { 0 },
            }
            .max(data.len());
            if p.ip.is_some() {
                st.synthesized_ip += 1;
            } else {
                st.link_only += 1;
            }
        }
        comment.clear();
        let cookie = if outbound {
            k.sender_of(p, hi as usize)
        } else {
            k.receiver_of(p)
        };
        if let Some(o) = k.owners.get(&cookie) {
            let _ = write!(comment, "pid={} comm={} ", o.pid, o.comm);
            st.with_process += 1;
        }
        let _ = write!(
            comment,
            "cookie={cookie} dir={} if={} pkt={:#x}",
            if outbound { "out" } else { "in" },
            h.ifindex,
            p.id
        );
        let anchor = if outbound { p.first_ts() } else { ts };
        let tid = p.hops.first().map_or(0, |h| h.tid);
        if let Some(c) = k.call_for(cookie, anchor, outbound, tid) {
            let _ = write!(
                comment,
                " app={} ret={} tid={} at={}",
                if c.send { "send" } else { "recv" },
                c.ret,
                c.tid,
                us(c.ts_ns - ts)
            );
        }
        comment.push_str(" path=");
        for (i, hop) in p.hops.iter().enumerate() {
            if i > 0 {
                comment.push('>');
            }
            let _ = write!(comment, "{}", k.kind_name(hop.kind));
            if hop.ifindex != 0 && hop.kind != kind::TCP_RCV {
                let _ = write!(comment, "[{}]", hop.ifindex);
            }
            let _ = write!(comment, "@{}", us(hop.ts_ns - ts));
        }
        if let Some(d) = &p.drop {
            let _ = write!(comment, " drop={d}");
        }
        if let Some(parent) = p.gso_parent {
            let _ = write!(comment, " gso_parent={parent:#x}");
        }
        if made.is_empty() {
            let _ = write!(comment, " snap={}", data.len());
        } else {
            let _ = write!(comment, " synthesized={made}");
        }
        let op = OutPacket::new(entry.0, ts.max(0), &data)
            .orig_len(orig as u32)
            .comment(&comment)
            .flags(if outbound { 2 } else { 1 });
        out.write_packet(&op)?;
        st.frames += 1;
    }
    out.flush()?;
    st.interfaces = ifaces.into_values().map(|(_, n, c)| (n, c)).collect();
    Ok(st)
}

fn push16(d: &mut Vec<u8>, v: u16) {
    d.extend_from_slice(&v.to_be_bytes());
}
fn push32(d: &mut Vec<u8>, v: u32) {
    d.extend_from_slice(&v.to_be_bytes());
}

/// Writes made-up headers for `p` into `d`; returns what was made up.
fn synthesise(p: &KPacket, link: bool, d: &mut Vec<u8>) -> &'static str {
    let Some(ip) = p.ip else {
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
        transport(&ip, hdr_len, l4, d);
    }
    what
}

fn transport(ip: &IpFields, hdr_len: u32, l4: usize, d: &mut Vec<u8>) {
    match l4 {
        20 => {
            push16(d, ip.sport);
            push16(d, ip.dport);
            push32(d, ip.seq);
            push32(d, ip.ack);
            d.extend_from_slice(&[0x50, ip.tcp_flags, 0xff, 0xff, 0, 0, 0, 0]);
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
