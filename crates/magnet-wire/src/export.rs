//! `magnet pcap`: a trace as pcapng.
//!
//! Which sightings at the device layer (`dev_start_xmit`: outbound, handed to the
//! driver; `dev_rx`: inbound, from the driver) become frames is [`Select`]'s choice:
//!
//! - [`Select::Once`] (the default): each packet once, where it first met a device, as
//!   a capture on its path would have seen it. TCP analysis (Wireshark's expert info)
//!   sees every segment once: no false retransmissions from the same packet seen on
//!   both ends of a veth pair.
//! - [`Select::Interfaces`]: what `tcpdump -i NAME` on each named interface would
//!   have seen.
//! - [`Select::EachDevice`]: every device sighting, each interface on its own block
//!   (a packet that crossed a veth pair is two frames, one per end).
//!
//! On a loopback device a packet is transmitted and received by the same interface;
//! a capture there sees it once (libpcap drops the outgoing copy), so do these: the
//! receive, or the transmit when the receive was not recorded. Packets the trace saw
//! only at the IP layer (the dev layer was not recorded) become one raw-IP frame at
//! LOCAL_OUT or LOCAL_IN on an interface block of their own.
//!
//! A trace recorded with `magnet record --snaplen N` carries the first bytes of
//! each frame: those are written as they are (captured length = what was kept,
//! original length = the frame). Without them, headers are synthesised from the
//! recorded fields: Ethernet (zero MAC addresses, the recorded ethertype), IPv4/IPv6 (every
//! field the IP layer recorded, header checksum computed), TCP (ports, sequence and
//! acknowledgement numbers, flags, and NOP options up to the connection's header
//! length, so a decoder finds the payload length the packet had) or UDP (ports,
//! length). The captured length is the headers; the original length is what the
//! device saw. Each comment ends with
//! `synthesized=` and what was made up, so nobody mistakes it for a capture.
//!
//! Every frame's comment (Wireshark: `frame.comment contains "pid=1234"`) has
//! `pid= comm= cookie= dir= if=`, the application calls whose bytes it carries (only
//! frames with payload name any), and the packet's path: every hook that saw it,
//! with times relative to this frame.
//!
//! Which calls: a TCP connection whose handshake the trace holds has its byte stream
//! numbered from the SYN's sequence number; the socket's send calls cover it in
//! order (call n: the bytes after the first n-1 calls' return values), as do the
//! receiving socket's receive calls. A frame names each call whose stream bytes
//! overlap its payload: `app=send#3(16384)` is the socket's third send, which
//! returned 16384. Without the handshake (the recording started later) or for UDP,
//! a frame with payload names the one call nearest it: the sending thread's next
//! send or the socket's last before it, the socket's first receive at or after it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;

use magnet_pcap::{linktype, InterfaceDesc, OutPacket, PcapNgWriter};
use magnet_trace::catalog::kind;
use serde::Serialize;

use std::collections::HashMap;

use crate::ifaces::{self, IfaceSel};
use crate::kernel::{AppCall, FlowKey, Hop, IpFields, KPacket, Kernel};

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
    /// Frames whose payload began in application calls further back than the
    /// streaming window (those calls are not named).
    pub calls_beyond_window: u64,
}

/// Which device sightings become frames (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Select {
    /// Each packet once, at the first device that saw it (on loopback: its receive).
    #[default]
    Once,
    /// Frames on these interfaces only, as `tcpdump -i NAME` on each would show them.
    /// An entry names an interface (`veth0`, `ifindex7`, `ip-ifindex3`) or its
    /// ifindex (`7`).
    Interfaces(Vec<String>),
    /// Every device sighting (loopback still once).
    EachDevice,
}

/// How to write the file.
#[derive(Debug, Clone, Default)]
pub struct PcapOptions {
    pub select: Select,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum IfKey {
    /// A device: ifindex, network namespace (0: not known).
    Dev(u32, u64),
    Ip(u32),
}

/// Every network namespace's loopback device has this ifindex.
const LOOPBACK_IFINDEX: u32 = 1;

fn us(ns: i64) -> String {
    format!("{:+.1}us", ns as f64 / 1000.0)
}

/// The device hops of `p` that become frames under `sel` (before interface names
/// are known: [`Select::Interfaces`] is applied later).
fn dev_hops(p: &KPacket, sel: &Select) -> Vec<usize> {
    let dev: Vec<usize> = (0..p.hops.len())
        .filter(|&i| matches!(p.hops[i].kind, kind::DEV_START_XMIT | kind::DEV_RX))
        .collect();
    let lo_rx = dev
        .iter()
        .any(|&i| p.hops[i].ifindex == LOOPBACK_IFINDEX && p.hops[i].kind == kind::DEV_RX);
    // On loopback, the receive stands for the packet (libpcap shows that copy).
    let keep = |i: &usize| {
        let h = &p.hops[*i];
        !(h.ifindex == LOOPBACK_IFINDEX && h.kind == kind::DEV_START_XMIT && lo_rx)
    };
    match sel {
        Select::Once => {
            let first = dev.first().copied();
            match first {
                Some(i) if p.hops[i].ifindex == LOOPBACK_IFINDEX => {
                    dev.into_iter().filter(keep).take(1).collect()
                }
                f => f.into_iter().collect(),
            }
        }
        _ => dev.into_iter().filter(keep).collect(),
    }
}

/// Sequence number and payload length of a TCP frame: the header length from the
/// frame's bytes when they hold the TCP header, else the connection's.
fn tcp_payload(k: &Kernel, ip: &IpFields, bytes: Option<&[u8]>, link: bool) -> Option<(u32, u32)> {
    if ip.protocol != 6 || ip.frag_off & 0x3fff != 0 {
        return None;
    }
    let ihl = if ip.version == 6 { 40 } else { 20 };
    let from_bytes = bytes.and_then(|b| {
        let l3 = if link { 14 } else { 0 };
        let ihl = if ip.version == 6 {
            40
        } else {
            ((*b.get(l3)? & 0x0f) as usize) * 4
        };
        let doff = (*b.get(l3 + ihl + 12)? >> 4) as u32 * 4;
        Some(ihl as u32 + doff)
    });
    let hl = from_bytes.unwrap_or_else(|| ihl + synth_tcp_len(k, ip));
    Some((ip.seq, ip.tot_len.saturating_sub(hl)))
}

/// The TCP header length a synthesised header gets: a SYN's is all of the packet
/// past the IP header (a SYN carries options, no data), others the connection's,
/// except a bare ACK whose excess over it is what SACK blocks take (NOP, NOP,
/// kind, length and 8 bytes per block: 12, 20, 28 or 36 bytes): that is a
/// header too, not 12 bytes of data. (Data without PSH comes in whole MSS.)
fn synth_tcp_len(k: &Kernel, ip: &IpFields) -> u32 {
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

/// Where each TCP flow direction's byte stream starts (its SYN's sequence number),
/// and the stream offset reached so far (to unwrap 32-bit sequence numbers).
#[derive(Default)]
struct Streams {
    isn: HashMap<FlowKey, u32>,
    last: HashMap<FlowKey, u64>,
    /// Each socket's send (false) and receive (true) calls' cumulative ends
    /// (past the calls forgotten already: see [`Kernel::calls_dropped`]).
    ends: HashMap<(u64, bool), (usize, Vec<u64>)>,
}

impl Streams {
    /// Learns the stream start of a SYN.
    fn learn(&mut self, p: &KPacket) {
        if let Some(ip) =
            p.ip.filter(|ip| ip.protocol == 6 && ip.tcp_flags & 0x02 != 0)
        {
            self.isn
                .entry((ip.saddr, ip.sport, ip.daddr, ip.dport))
                .or_insert(ip.seq);
        }
    }

    /// The stream offsets `[from, to)` of a frame's payload.
    fn range(&mut self, ip: &IpFields, seq: u32, len: u32) -> Option<(u64, u64)> {
        let key = (ip.saddr, ip.sport, ip.daddr, ip.dport);
        let isn = *self.isn.get(&key)?;
        let off32 = seq.wrapping_sub(isn.wrapping_add(1));
        let last = self.last.entry(key).or_insert(0);
        let delta = off32.wrapping_sub(*last as u32) as i32 as i64;
        let off = (*last as i64 + delta).max(0) as u64;
        *last = (*last).max(off);
        Some((off, off + len as u64))
    }

    /// The calls of socket `cookie` (receives when `recv`) whose bytes overlap
    /// `[from, to)`: (number from 0, call). `None` when the calls that held
    /// `from` were forgotten (further back than the window).
    fn calls<'k>(
        &mut self,
        k: &'k Kernel,
        cookie: u64,
        recv: bool,
        (from, to): (u64, u64),
    ) -> Option<Vec<(usize, &'k AppCall)>> {
        let Some(calls) = (if recv { &k.recvs } else { &k.sends }).get(&cookie) else {
            return Some(Vec::new());
        };
        let (base, base_bytes) = k
            .calls_dropped
            .get(&(cookie, recv))
            .copied()
            .unwrap_or((0, 0));
        // Kept in step with the calls: those forgotten since leave, new ones come.
        let (at, ends) = self
            .ends
            .entry((cookie, recv))
            .or_insert((base, Vec::new()));
        ends.drain(..(base - *at).min(ends.len()));
        *at = base;
        let mut sum = ends.last().copied().unwrap_or(base_bytes);
        for c in &calls[ends.len().min(calls.len())..] {
            sum += c.ret.max(0) as u64;
            ends.push(sum);
        }
        let mut out = Vec::new();
        let mut i = ends.partition_point(|&e| e <= from);
        while i < calls.len() && ends[i] - (calls[i].ret.max(0) as u64) < to {
            if calls[i].ret > 0 {
                out.push((base + i, &calls[i]));
            }
            i += 1;
        }
        if from < base_bytes && base > 0 {
            return None;
        }
        Some(out)
    }
}

/// Writes `k` as pcapng to `w`, every device sighting a frame
/// ([`Select::EachDevice`]).
pub fn write_pcapng<W: Write>(k: &Kernel, w: W) -> io::Result<ExportStats> {
    write_pcapng_with(
        k,
        w,
        &PcapOptions {
            select: Select::EachDevice,
        },
    )
}

/// The one network namespace whose sockets have `addr` as their local
/// address (loopback addresses are every namespace's: none).
fn address_netns(k: &Kernel, addr: IpAddr) -> Option<u64> {
    if addr.is_loopback() || addr.is_unspecified() {
        return None;
    }
    let local = k
        .senders
        .iter()
        .filter(|(f, _)| f.0 == addr)
        .chain(k.receivers.iter().filter(|(f, _)| f.2 == addr))
        .filter_map(|(_, c)| k.sock_netns.get(c).copied().filter(|&n| n != 0));
    let mut one = None;
    for ns in local {
        match one {
            None => one = Some(ns),
            Some(o) if o != ns => return None,
            _ => {}
        }
    }
    one
}

/// The name and description of an interface block.
fn describe(
    header: Option<&magnet_trace::Header>,
    host: &str,
    key: IfKey,
) -> (u32, String, String) {
    match key {
        IfKey::Dev(i, ns) => {
            let known: Vec<&magnet_trace::Interface> = header
                .map(|h| h.interfaces.iter().filter(|f| f.ifindex == i).collect())
                .unwrap_or_default();
            let exact = known.iter().find(|f| ns != 0 && f.netns == ns);
            // A device of a known namespace that the header does not list came
            // later: another namespace's device of that ifindex is not it.
            let name = match exact {
                Some(f) => Some(f.name.as_str()),
                None if ns != 0 => None,
                None => header.and_then(|h| h.interface_name(i)),
            };
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
                None if known.is_empty() || ns != 0 => (
                    linktype::ETHERNET,
                    format!("ifindex{i}"),
                    format!("{host}: device ifindex {i}{} (not among the interfaces when the recording started)",
                        if ns != 0 { format!(" in netns {ns}") } else { String::new() }),
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
    }
}

/// Writes `k` as pcapng to `w`, the frames `o.select` chooses.
pub fn write_pcapng_with<W: Write>(k: &Kernel, w: W, o: &PcapOptions) -> io::Result<ExportStats> {
    let mut pw = PcapWriter::new(k, w, o)?;
    // The whole trace is at hand: every interface's namespaces are known up front.
    for p in &k.packets {
        pw.learn_ns(k, p);
    }
    for p in &k.packets {
        pw.push(k, p.clone())?;
    }
    pw.finish(k)
}

/// A frame waiting for its turn (frames are written in time order).
struct Pending {
    ts: i64,
    seq: u64,
    hi: u16,
    key: IfKey,
    p: std::rc::Rc<KPacket>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.ts, self.seq, self.hi) == (o.ts, o.seq, o.hi)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.ts, self.seq, self.hi).cmp(&(o.ts, o.seq, o.hi))
    }
}

/// pcapng from a stream of the model's packets (in order of first sighting, as
/// [`crate::kernel::Assembler`] hands them on): each packet's frames wait until no
/// earlier frame can come, so memory is the window's, not the trace's.
pub struct PcapWriter<W: Write> {
    out: PcapNgWriter<W>,
    select: Select,
    /// `Select::Interfaces` resolved against the trace's devices.
    wanted: Vec<IfaceSel>,
    host: String,
    pending: std::collections::BinaryHeap<std::cmp::Reverse<Pending>>,
    seq: u64,
    seen_ns: BTreeMap<u32, std::collections::BTreeSet<u64>>,
    named: BTreeMap<IfKey, bool>,
    /// [`address_netns`] by address, while the model knows this many flows.
    address_ns: (usize, HashMap<IpAddr, Option<u64>>),
    streams: Streams,
    ifaces: BTreeMap<IfKey, (u32, String, u64)>,
    st: ExportStats,
    data: Vec<u8>,
    comment: String,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(k: &Kernel, w: W, o: &PcapOptions) -> io::Result<Self> {
        let host = k
            .header
            .as_ref()
            .map_or("", |h| h.host.as_str())
            .to_string();
        let mut shb: Vec<(u16, &[u8])> =
            vec![(4, b"magnet pcap (from a magnet trace; frames without recorded bytes have synthesised headers)")];
        // The writer escapes the options it writes as text; these go as bytes.
        let hardware = magnet_common::text::escape(&host);
        if !host.is_empty() {
            shb.push((2, hardware.as_bytes()));
        }
        let wanted = match &o.select {
            Select::Interfaces(names) => {
                ifaces::resolve(ifaces::known(k.header.as_ref()), names)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?
            }
            _ => Vec::new(),
        };
        let out = PcapNgWriter::with_options(w, false, &shb)?;
        Ok(PcapWriter {
            out,
            select: o.select.clone(),
            wanted,
            host,
            pending: Default::default(),
            seq: 0,
            seen_ns: BTreeMap::new(),
            named: BTreeMap::new(),
            address_ns: (0, HashMap::new()),
            streams: Streams::default(),
            ifaces: BTreeMap::new(),
            st: ExportStats::default(),
            data: Vec::with_capacity(128),
            comment: String::with_capacity(256),
        })
    }

    /// Device events carry no namespace: a hop's socket tells it (a transmit's
    /// socket, a receive's flow socket, both in the device's namespace); a hop
    /// without one takes the only namespace its ifindex was seen in with a socket.
    fn learn_ns(&mut self, k: &Kernel, p: &KPacket) {
        for h in &p.hops {
            if matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX) {
                if let Some(&ns) = k.sock_netns.get(&h.cookie).filter(|&&n| n != 0) {
                    self.seen_ns.entry(h.ifindex).or_default().insert(ns);
                }
            }
        }
    }

    /// The namespace of the device of hop `hi`: its own socket's (a transmit's
    /// socket, a receive's flow socket: both in the device's namespace; a
    /// device the header does not list came later there). Without one: the
    /// socket that sent (outbound) or received the packet by its flow (the
    /// handshake frames a listener took, which no hop names), else the only
    /// namespace its ifindex was seen in with a socket, each only where the
    /// trace lists such a device (a forwarded packet's sockets are elsewhere),
    /// else the only namespace the trace lists its ifindex in; 0 if none.
    fn device_netns(&mut self, k: &Kernel, p: &KPacket, hi: usize, outbound: bool) -> u64 {
        let h = &p.hops[hi];
        let ns_of = |c: u64| k.sock_netns.get(&c).copied().filter(|&n| n != 0);
        let known = ifaces::known(k.header.as_ref());
        let is_dev = |o: &Hop| matches!(o.kind, kind::DEV_START_XMIT | kind::DEV_RX);
        // A device sighting between the packet's first transmit and its last
        // receive is a forward (a router namespace took it in on one device
        // and sent it on from another): the sockets its hop names are the
        // ends', elsewhere. Its namespace is the one that has both devices.
        let first = p.hops.iter().position(is_dev) == Some(hi);
        let last = p.hops.iter().rposition(is_dev) == Some(hi);
        if !(outbound && first || !outbound && last) {
            let partner = if outbound {
                p.hops[..hi].iter().rev().find(|o| o.kind == kind::DEV_RX)
            } else {
                p.hops[hi + 1..]
                    .iter()
                    .find(|o| o.kind == kind::DEV_START_XMIT)
            };
            let Some(partner) = partner else { return 0 };
            let mut both = known.iter().filter(|f| {
                f.ifindex == h.ifindex
                    && known
                        .iter()
                        .any(|g| g.netns == f.netns && g.ifindex == partner.ifindex)
            });
            return match (both.next(), both.next()) {
                (Some(only), None) => only.netns,
                _ => 0,
            };
        }
        if let Some(ns) = ns_of(h.cookie).filter(|_| !h.other_netns) {
            return ns;
        }
        let flow = match (outbound, h.other_netns) {
            (_, true) => 0,
            (true, false) => k.sender_of(p, hi),
            (false, false) => k.receiver_at(p, hi),
        };
        let ns = ns_of(flow).or_else(|| {
            self.seen_ns
                .get(&h.ifindex)
                .filter(|s| s.len() == 1)
                .and_then(|s| s.iter().next().copied())
        });
        let found = ifaces::device_netns(known, ns, h.ifindex);
        if found != 0 {
            return found;
        }
        // A frame no socket names (a SYN to a port nobody listens on, the
        // reset that answers it): the same packet's sighting in the other
        // direction on the same ifindex was on the other end of the link, so
        // of two devices with that ifindex, this is the one it was not.
        let other_end = p.hops.iter().find_map(|o| {
            let opposite = matches!(
                (h.kind, o.kind),
                (kind::DEV_RX, kind::DEV_START_XMIT) | (kind::DEV_START_XMIT, kind::DEV_RX)
            );
            (opposite && !o.other_netns && o.ifindex == h.ifindex && o.ifindex != LOOPBACK_IFINDEX)
                .then(|| ns_of(o.cookie))
                .flatten()
        });
        let mut rest = known
            .iter()
            .filter(|f| f.ifindex == h.ifindex && Some(f.netns) != other_end);
        if let (Some(_), Some(only), None) = (other_end, rest.next(), rest.next()) {
            return only.netns;
        }
        // Else the namespace whose sockets hold the packet's local address
        // (its destination on receive, its source on transmit), when only one
        // namespace's do.
        let local = p.ip.map(|ip| if outbound { ip.saddr } else { ip.daddr });
        // (Looked up once per address while the flows the model knows stay as
        // they are: a trace of many such frames is not read flow by flow each.)
        let flows = k.senders.len() + k.receivers.len();
        if self.address_ns.0 != flows {
            self.address_ns = (flows, HashMap::new());
        }
        let ns = local.and_then(|a| {
            *self
                .address_ns
                .1
                .entry(a)
                .or_insert_with(|| address_netns(k, a))
        });
        let found = ifaces::device_netns(known, ns, h.ifindex);
        if ns.is_some_and(|n| n == found) {
            found
        } else {
            0
        }
    }

    /// Frames waiting.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }

    /// Takes one packet: queues its frames and writes those no later packet can
    /// come before.
    pub fn push(&mut self, k: &Kernel, p: KPacket) -> io::Result<()> {
        self.streams.learn(&p);
        self.learn_ns(k, &p);
        let first = p.first_ts();
        if p.gso_segments == 0 {
            // (A GSO packet is on the wire as its segments.)
            let p = std::rc::Rc::new(p);
            let mut queue = |ts: i64, hi: usize, key: IfKey, seq: u64| {
                self.pending.push(std::cmp::Reverse(Pending {
                    ts,
                    seq,
                    hi: hi as u16,
                    key,
                    p: p.clone(),
                }));
            };
            let dev = dev_hops(&p, &self.select);
            for &hi in &dev {
                let h = &p.hops[hi];
                queue(h.ts_ns, hi, IfKey::Dev(h.ifindex, 0), self.seq);
            }
            let any_dev = p
                .hops
                .iter()
                .any(|h| matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX));
            // A packet dropped before any device saw it (a qdisc's drop, a
            // firewall's) was never on a wire: it belongs to the drop layer.
            if !any_dev && p.drop.is_none() {
                if let Some((hi, h)) = p
                    .hops
                    .iter()
                    .enumerate()
                    .find(|(_, h)| matches!(h.kind, kind::IP_LOCAL_OUT | kind::IP_LOCAL_IN))
                {
                    queue(h.ts_ns, hi, IfKey::Ip(h.ifindex), self.seq);
                }
            }
            self.seq += 1;
        }
        self.write_before(k, first)
    }

    /// Writes the frames before `ts`.
    fn write_before(&mut self, k: &Kernel, ts: i64) -> io::Result<()> {
        while self.pending.peek().is_some_and(|f| f.0.ts < ts) {
            let f = self.pending.pop().expect("peeked").0;
            self.write(k, f)?;
        }
        Ok(())
    }

    /// Writes what is left; the totals.
    pub fn finish(mut self, k: &Kernel) -> io::Result<ExportStats> {
        self.write_before(k, i64::MAX)?;
        while let Some(f) = self.pending.pop() {
            self.write(k, f.0)?;
        }
        self.out.flush()?;
        self.st.interfaces = std::mem::take(&mut self.ifaces)
            .into_values()
            .map(|(_, n, c)| (n, c))
            .collect();
        Ok(self.st)
    }

    fn write(&mut self, k: &Kernel, f: Pending) -> io::Result<()> {
        let header = k.header.as_ref();
        let (ts, hi) = (f.ts, f.hi);
        let p = &*f.p;
        let h = p.hops[hi as usize];
        let outbound = matches!(h.kind, kind::DEV_START_XMIT | kind::IP_LOCAL_OUT);
        let mut key = f.key;
        if let IfKey::Dev(i, _) = key {
            key = IfKey::Dev(i, self.device_netns(k, p, hi as usize, outbound));
        }
        let host = &self.host;
        if matches!(self.select, Select::Interfaces(_)) {
            let wanted = &self.wanted;
            let keep = *self.named.entry(key).or_insert_with(|| {
                let (_, name, _) = describe(header, host, key);
                let known = ifaces::known(header);
                match key {
                    IfKey::Dev(i, ns) => ifaces::selects(wanted, known, ns, i, &name),
                    IfKey::Ip(_) => wanted.contains(&IfaceSel::Name(name)),
                }
            });
            if !keep {
                return Ok(());
            }
        }
        let n = self.ifaces.len();
        let entry = match self.ifaces.entry(key) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let (lt, name, desc) = describe(header, host, key);
                let id = self
                    .out
                    .add_interface(&InterfaceDesc::new(lt).name(&name).description(&desc))?;
                debug_assert_eq!(id as usize, n);
                v.insert((id, name, 0))
            }
        };
        entry.2 += 1;
        let if_id = entry.0;
        let st = &mut self.st;
        let data = &mut self.data;
        let comment = &mut self.comment;
        let loopback = h.ifindex == LOOPBACK_IFINDEX && matches!(key, IfKey::Dev(..));
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
            made = synthesise(k, p, link, data);
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
        // A loopback frame is both the sender's and the receiver's.
        let sender = (outbound || loopback).then(|| k.sender_of(p, hi as usize));
        let receiver = (!outbound || loopback).then(|| k.receiver_at(p, hi as usize));
        let cookie = sender.or(receiver).unwrap_or(0);
        // A listener makes no calls: the process behind the frames it took in
        // is the one the flow's socket (the connection it accepted) shows.
        let owner = k.owners.get(&cookie).or_else(|| {
            receiver
                .filter(|&r| r == cookie && r != 0)
                .and_then(|_| k.owners.get(&k.receiver_of(p)))
        });
        if let Some(o) = owner {
            let _ = write!(comment, "pid={} comm={} ", o.pid, o.comm);
            st.with_process += 1;
        }
        let _ = write!(
            comment,
            "cookie={cookie} dir={} if={} pkt={:#x}",
            if loopback {
                "lo"
            } else if outbound {
                "out"
            } else {
                "in"
            },
            h.ifindex,
            p.id
        );
        if let Some(r) = receiver.filter(|&r| loopback && r != cookie && r != 0) {
            let _ = write!(comment, " peer_cookie={r}");
            if let Some(o) = k.owners.get(&r) {
                let _ = write!(comment, " peer_pid={} peer_comm={}", o.pid, o.comm);
            }
        }
        if !app_calls(
            k,
            p,
            &h,
            frame,
            link,
            sender,
            receiver,
            &mut self.streams,
            comment,
        ) {
            st.calls_beyond_window += 1;
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
        let mut op = OutPacket::new(if_id, ts.max(0), data)
            .orig_len(orig as u32)
            .comment(comment);
        if !loopback {
            op = op.flags(if outbound { 2 } else { 1 });
        }
        self.out.write_packet(&op)?;
        st.frames += 1;
        Ok(())
    }
}

/// Appends ` app=…` naming the calls whose bytes the frame carries: the sender's
/// sends and the receiver's receives (a loopback frame: both). Nothing for a frame
/// without payload.
#[allow(clippy::too_many_arguments)]
fn app_calls(
    k: &Kernel,
    p: &KPacket,
    h: &Hop,
    frame: Option<&[u8]>,
    link: bool,
    sender: Option<u64>,
    receiver: Option<u64>,
    streams: &mut Streams,
    comment: &mut String,
) -> bool {
    let mut whole = true;
    let Some(ip) = p.ip else { return true };
    let mut names: Vec<String> = Vec::new();
    let mut push = |recv: bool, i: usize, c: &AppCall| {
        names.push(format!(
            "{}#{}({})",
            if recv { "recv" } else { "send" },
            i + 1,
            c.ret
        ));
    };
    match ip.protocol {
        6 => {
            let Some((seq, len)) = tcp_payload(k, &ip, frame, link) else {
                return true;
            };
            if len == 0 {
                return true;
            }
            if let Some(range) = streams.range(&ip, seq, len) {
                for (recv, cookie) in [(false, sender), (true, receiver)] {
                    let Some(cookie) = cookie.filter(|&c| c != 0) else {
                        continue;
                    };
                    match streams.calls(k, cookie, recv, range) {
                        Some(calls) => {
                            for (i, c) in calls {
                                push(recv, i, c);
                            }
                        }
                        None => whole = false,
                    }
                }
            } else {
                nearest(k, p, h, sender, receiver, &mut push);
            }
        }
        17 => {
            let hl = if ip.version == 6 { 48 } else { 28 };
            if ip.tot_len > hl {
                nearest(k, p, h, sender, receiver, &mut push);
            }
        }
        _ => {}
    }
    if !names.is_empty() {
        let _ = write!(comment, " app={}", names.join(","));
    }
    whole
}

/// The one call nearest a frame whose stream position is not known.
fn nearest(
    k: &Kernel,
    p: &KPacket,
    h: &Hop,
    sender: Option<u64>,
    receiver: Option<u64>,
    push: &mut impl FnMut(bool, usize, &AppCall),
) {
    let tid = p.hops.first().map_or(0, |h| h.tid);
    for (recv, cookie) in [(false, sender), (true, receiver)] {
        let Some(cookie) = cookie.filter(|&c| c != 0) else {
            continue;
        };
        let anchor = if recv { h.ts_ns } else { p.first_ts() };
        if let Some(c) = k.call_for(cookie, anchor, !recv, tid) {
            let calls = if recv { &k.recvs } else { &k.sends };
            let i = calls[&cookie]
                .iter()
                .position(|x| std::ptr::eq(x, c))
                .unwrap_or(0);
            let base = k.calls_dropped.get(&(cookie, recv)).map_or(0, |d| d.0);
            push(recv, base + i, c);
        }
    }
}

fn push16(d: &mut Vec<u8>, v: u16) {
    d.extend_from_slice(&v.to_be_bytes());
}
fn push32(d: &mut Vec<u8>, v: u32) {
    d.extend_from_slice(&v.to_be_bytes());
}

/// Writes made-up headers for `p` into `d`; returns what was made up.
fn synthesise(k: &Kernel, p: &KPacket, link: bool, d: &mut Vec<u8>) -> &'static str {
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
