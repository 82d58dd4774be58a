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

//!
//! Here: the options and [`PcapWriter`], which orders frames and writes each;
//! `devices`: which device (network namespace) a frame is on and its interface
//! block's name; `calls`: the application calls a frame's bytes belong to;
//! `synth`: the headers made from the recorded fields.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;

use magnet_pcap::{InterfaceDesc, OutPacket, PcapNgWriter};
use magnet_trace::catalog::kind;
use serde::Serialize;

use crate::ifaces::{self, IfaceSel};
use crate::kernel::{Hop, KPacket, Kernel};

mod calls;
mod devices;
mod synth;

use calls::{app_calls, Streams};
use devices::describe;
use synth::synthesise;

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

/// The sighting a frame is made of: packet `p` at its hop `hi` (`h`), at `ts`.
struct Sighting<'p> {
    p: &'p KPacket,
    hi: usize,
    h: Hop,
    ts: i64,
    outbound: bool,
    /// On a loopback device (both the sender's and the receiver's frame).
    loopback: bool,
    /// With a link header (a device's frame, not the IP layer's).
    link: bool,
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

    /// Writes frame `f`: on its interface block (added when it is the first
    /// there), with its bytes and its comment.
    fn write(&mut self, k: &Kernel, f: Pending) -> io::Result<()> {
        let p = &*f.p;
        let hi = f.hi as usize;
        let h = p.hops[hi];
        let outbound = matches!(h.kind, kind::DEV_START_XMIT | kind::IP_LOCAL_OUT);
        let mut key = f.key;
        if let IfKey::Dev(i, _) = key {
            key = IfKey::Dev(i, self.device_netns(k, p, hi, outbound));
        }
        if !self.selected(k, key) {
            return Ok(());
        }
        let raw = matches!(key, IfKey::Dev(..)) && h.no_link_header;
        let if_id = self.interface_id(k, key, raw)?;
        let link = matches!(key, IfKey::Dev(..)) && !raw;
        let s = Sighting {
            p,
            hi,
            h,
            ts: f.ts,
            outbound,
            loopback: h.ifindex == LOOPBACK_IFINDEX && link,
            link,
        };
        let (frame, made, orig) = self.fill_data(k, &s);
        self.comment.clear();
        self.comment_sockets(k, &s, frame);
        self.comment_path(k, &s, made);
        let mut op = OutPacket::new(if_id, s.ts.max(0), &self.data)
            .orig_len(orig as u32)
            .comment(&self.comment);
        if !s.loopback {
            op = op.flags(if outbound { 2 } else { 1 });
        }
        self.out.write_packet(&op)?;
        self.st.frames += 1;
        Ok(())
    }

    /// Whether `--interface` (`Select::Interfaces`) keeps the frames of
    /// interface block `key`.
    fn selected(&mut self, k: &Kernel, key: IfKey) -> bool {
        if !matches!(self.select, Select::Interfaces(_)) {
            return true;
        }
        let header = k.header.as_ref();
        let (host, wanted) = (&self.host, &self.wanted);
        *self.named.entry(key).or_insert_with(|| {
            let (_, name, _) = describe(header, host, key, false);
            let known = ifaces::known(header);
            match key {
                IfKey::Dev(i, ns) => ifaces::selects(wanted, known, ns, i, &name),
                IfKey::Ip(_) => wanted.contains(&IfaceSel::Name(name)),
            }
        })
    }

    /// The id of interface block `key`, written now if it is the first frame
    /// there; counts the frame.
    fn interface_id(&mut self, k: &Kernel, key: IfKey, raw: bool) -> io::Result<u32> {
        let n = self.ifaces.len();
        let entry = match self.ifaces.entry(key) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let (lt, name, desc) = describe(k.header.as_ref(), &self.host, key, raw);
                let id = self
                    .out
                    .add_interface(&InterfaceDesc::new(lt).name(&name).description(&desc))?;
                debug_assert_eq!(id as usize, n);
                v.insert((id, name, 0))
            }
        };
        entry.2 += 1;
        Ok(entry.0)
    }

    /// Puts the frame's bytes in `self.data`: those the trace kept, else
    /// synthesised headers. Returns the kept bytes, what was synthesised
    /// (empty: nothing) and the frame's original length.
    fn fill_data<'p>(
        &mut self,
        k: &Kernel,
        s: &Sighting<'p>,
    ) -> (Option<&'p [u8]>, &'static str, usize) {
        let (p, h, st, data) = (s.p, &s.h, &mut self.st, &mut self.data);
        data.clear();
        let frame = p.frame_at(h).filter(|b| !b.is_empty());
        if let Some(bytes) = frame {
            data.extend_from_slice(bytes);
            st.captured += 1;
            // The dev record's length is the whole frame, link header included.
            return (frame, "", (h.len as usize).max(data.len()));
        }
        let made = synthesise(k, p, s.link, data);
        let orig = match (p.ip, s.link) {
            (Some(ip), true) => 14 + ip.tot_len as usize,
            (Some(ip), false) => ip.tot_len as usize,
            (None, _) => {
                h.len as usize
                    + if h.kind == kind::DEV_RX && s.link {
                        14
                    } else {
                        0
                    }
            }
        }
        .max(data.len());
        if p.ip.is_some() {
            st.synthesized_ip += 1;
        } else {
            st.link_only += 1;
        }
        (None, made, orig)
    }

    /// The comment's sockets: the process, the socket, the direction and
    /// interface, a loopback frame's peer, the application calls.
    fn comment_sockets(&mut self, k: &Kernel, s: &Sighting<'_>, frame: Option<&[u8]>) {
        let (p, hi, comment) = (s.p, s.hi, &mut self.comment);
        // A loopback frame is both the sender's and the receiver's.
        let sender = (s.outbound || s.loopback).then(|| k.sender_of(p, hi));
        let receiver = (!s.outbound || s.loopback).then(|| k.receiver_at(p, hi));
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
            self.st.with_process += 1;
        }
        let dir = if s.loopback {
            "lo"
        } else if s.outbound {
            "out"
        } else {
            "in"
        };
        let _ = write!(
            comment,
            "cookie={cookie} dir={dir} if={} pkt={:#x}",
            s.h.ifindex, p.id
        );
        if let Some(r) = receiver.filter(|&r| s.loopback && r != cookie && r != 0) {
            let _ = write!(comment, " peer_cookie={r}");
            if let Some(o) = k.owners.get(&r) {
                let _ = write!(comment, " peer_pid={} peer_comm={}", o.pid, o.comm);
            }
        }
        let whole = app_calls(
            k,
            p,
            &s.h,
            frame,
            s.link,
            sender,
            receiver,
            &mut self.streams,
            comment,
        );
        if !whole {
            self.st.calls_beyond_window += 1;
        }
    }

    /// The comment's packet: its path (every hop, times relative to the
    /// frame), its drop, its GSO parent, and what was synthesised.
    fn comment_path(&mut self, k: &Kernel, s: &Sighting<'_>, made: &str) {
        let (p, comment) = (s.p, &mut self.comment);
        comment.push_str(" path=");
        for (i, hop) in p.hops.iter().enumerate() {
            if i > 0 {
                comment.push('>');
            }
            let _ = write!(comment, "{}", k.kind_name(hop.kind));
            if hop.ifindex != 0 && hop.kind != kind::TCP_RCV {
                let _ = write!(comment, "[{}]", hop.ifindex);
            }
            let _ = write!(comment, "@{}", us(hop.ts_ns - s.ts));
        }
        if let Some(d) = &p.drop {
            let _ = write!(comment, " drop={d}");
        }
        if let Some(parent) = p.gso_parent {
            let _ = write!(comment, " gso_parent={parent:#x}");
        }
        if made.is_empty() {
            let _ = write!(comment, " snap={}", self.data.len());
        } else {
            let _ = write!(comment, " synthesized={made}");
        }
    }
}
