//! A trace seen packet by packet.
//!
//! Every record that carries a packet id becomes a [`Hop`] of that packet; the IP
//! layer's records give its header fields; socket cookies give its owner (the process
//! whose send or receive calls used the socket) and the application calls around it.
//! Times are wall-clock nanoseconds (the trace's clock map applied).
//!
//! The one packet model of `magnet match`, `magnet pcap` and `magnet packets`:
//! [`Assembler`] builds it from a stream of records with a bounded [`Window`] (a
//! packet is finished once its first sighting is two windows old, or when too many
//! are open; a late part is counted, never merged silently); [`Kernel::load`] is the
//! same with the whole trace as the window (about 340 bytes per packet: the tests'
//! reference, no longer a command's).
//!
//! - this file: the model's types, and what a reader asks of it (whose packet,
//!   which application call);
//! - `decode`: a record's fields, and a frame's bytes, as the
//!   model's fields;
//! - `window`: the bounds of a streaming reader;
//! - `assemble`: records into packets (skb reuse, late parts);
//! - `finish`: what is done to a packet when the window lets it go;
//! - `gso`: GSO segments and the packet they were cut from.

use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;

use magnet_trace::catalog::kind;
use magnet_trace::{Header, TraceReader};

mod assemble;
mod decode;
mod finish;
mod gso;
mod window;

pub use assemble::Assembler;
pub use decode::ip_of_frame;
pub use window::{Window, WindowStats};

/// One sighting of a packet by a kernel hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// Wall-clock nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    pub kind: u16,
    /// Interface index (0 when the hook has none).
    pub ifindex: u32,
    /// Bytes the hook saw (`len`, or the IP total length), 0 when not recorded.
    pub len: u32,
    pub cookie: u64,
    /// Thread the hook ran in (in softirq: whichever was interrupted).
    pub tid: u32,
    pub cpu: u16,
    /// A transmit whose socket (`cookie`) is in another network namespace
    /// than the device (the record's `MG_F_OTHER_NETNS`: forwarded by a
    /// router namespace, the skb still holding the sender's socket).
    pub other_netns: bool,
    /// The device's frames start at the IP header (a tun, WireGuard or IP
    /// tunnel device: the dev record's `link_type`); false in traces that
    /// did not record it.
    pub no_link_header: bool,
}

/// Whether a device of ARPHRD type `link_type` hands the stack frames without
/// a link header: none (tun, WireGuard), raw IP, IPIP, IP6IP6, SIT.
pub fn without_link_header(link_type: u16) -> bool {
    matches!(link_type, 65534 | 519 | 768 | 769 | 776)
}

/// The IP and transport header fields the IP layer recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpFields {
    pub version: u8,
    pub tos: u8,
    pub ttl: u8,
    pub protocol: u8,
    /// IP total length (32-bit: GSO packets pass 64 KiB).
    pub tot_len: u32,
    pub ip_id: u16,
    pub frag_off: u16,
    pub saddr: IpAddr,
    pub daddr: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub tcp_flags: u8,
    pub seq: u32,
    pub ack: u32,
}

/// One packet id's record.
#[derive(Debug, Clone)]
pub struct KPacket {
    pub id: u64,
    /// Sightings in time order.
    pub hops: Vec<Hop>,
    pub ip: Option<IpFields>,
    /// Ethertype from the device layer (0 when not recorded).
    pub ethertype: u16,
    /// Drop reason name when the packet was dropped.
    pub drop: Option<String>,
    /// For a GSO packet segmented before the driver: how many segments (each a packet
    /// of its own, whose `ip` fields were derived from this one). 0 otherwise.
    pub gso_segments: u32,
    /// For a segment of a GSO packet: the parent's id (its `ip` fields were derived:
    /// identification and sequence number advanced per segment).
    pub gso_parent: Option<u64>,
    /// For a GSO segment: how many of the first hops are its parent's.
    pub inherited: usize,
    /// Function events (`record --funcs`), in time order.
    pub funcs: Vec<FuncStep>,
    /// Frame bytes the trace kept (`record --snaplen`), each for one device hop.
    pub frames: Vec<Frame>,
}

/// The first bytes of a frame at a device hop (`record --snaplen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The hop's time, kind (dev_start_xmit or dev_rx) and ifindex.
    pub ts_ns: i64,
    pub kind: u16,
    pub ifindex: u32,
    pub cpu: u16,
    /// From the link header on; may be shorter than the snap length (the skb's
    /// page fragments are not read).
    pub bytes: Vec<u8>,
}

impl KPacket {
    /// The frame bytes recorded at hop `h`, if any.
    pub fn frame_at(&self, h: &Hop) -> Option<&[u8]> {
        self.frames
            .iter()
            .find(|f| f.ts_ns == h.ts_ns && f.kind == h.kind && f.ifindex == h.ifindex)
            .map(|f| f.bytes.as_slice())
    }

    pub fn first_ts(&self) -> i64 {
        self.hops.first().map_or(0, |h| h.ts_ns)
    }
    /// The cookie of the socket that sent it (first hop with a socket).
    pub fn sender_cookie(&self) -> u64 {
        self.hops
            .iter()
            .find(|h| h.cookie != 0)
            .map_or(0, |h| h.cookie)
    }
    /// The cookie of the socket that received it: the TCP receive or LOCAL_IN hop's.
    pub fn receiver_cookie(&self) -> u64 {
        self.hops
            .iter()
            .rev()
            .find(|h| matches!(h.kind, kind::TCP_RCV | kind::IP_LOCAL_IN) && h.cookie != 0)
            .map_or(0, |h| h.cookie)
    }
}

/// The process behind a socket, as its calls showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub comm: String,
}

/// An application send or receive call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppCall {
    pub ts_ns: i64,
    pub send: bool,
    /// Bytes done (or -errno).
    pub ret: i64,
    pub pid: u32,
    pub tid: u32,
}

/// A stretch of time in which a CPU could not record everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostRegion {
    pub from_ns: i64,
    pub to_ns: i64,
    pub count: u64,
}

/// The whole trace, packet by packet.
#[derive(Debug, Default)]
pub struct Kernel {
    /// In order of first sighting.
    pub packets: Vec<KPacket>,
    pub owners: HashMap<u64, Owner>,
    /// Each socket's send calls, and its receive calls, in time order.
    pub sends: HashMap<u64, Vec<AppCall>>,
    pub recvs: HashMap<u64, Vec<AppCall>>,
    /// Calls forgotten by a streaming reader ([`Kernel::forget_calls_before`]), by
    /// (socket, receive): how many, and the bytes they returned.
    pub calls_dropped: HashMap<(u64, bool), (usize, u64)>,
    pub lost: Vec<LostRegion>,
    /// Kind names and layers by id, from the trace's own catalog.
    pub kind_names: HashMap<u16, String>,
    pub kind_layers: HashMap<u16, String>,
    /// The socket that sent, and the one that received, each flow direction
    /// (source, source port, destination, destination port), learnt from the hops
    /// that name a socket: who sent or received a packet whose own hops do not say.
    pub senders: HashMap<FlowKey, u64>,
    pub receivers: HashMap<FlowKey, u64>,
    /// Damage the reader stepped over, one line each.
    pub warnings: Vec<String>,
    pub header: Option<Header>,
    /// Each socket's network namespace (inode number), from its SOCK record.
    pub sock_netns: HashMap<u64, u64>,
    /// Each TCP connection's header length (both directions, with options): the
    /// most common one of its header-only packets (pure ACKs and FINs). The trace
    /// does not record it.
    pub tcp_header_len: HashMap<FlowKey, u32>,
}

/// A function event of a packet (`record --funcs`): entries with the packet's id,
/// and those of its skb from before it had one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuncStep {
    pub ts_ns: i64,
    pub cpu: u16,
    pub kind: u16,
    pub func: u64,
    pub caller: Option<u64>,
    /// Entry to return, when the return was recorded (`--func-exits`).
    pub in_ns: Option<u64>,
    task: u64,
}

impl Kernel {
    /// Reads a whole trace. Damage the reader can step over is kept in `warnings`;
    /// anything else is an error.
    pub fn load<R: Read>(rd: &mut TraceReader<R>) -> Result<Kernel, magnet_trace::TraceError> {
        let mut a = Assembler::new(rd.header(), Window::WHOLE, true);
        while let Some(r) = rd.next_record() {
            match r {
                Ok(r) => a.push(&r.view()),
                Err(e) => a.error(e)?,
            }
        }
        a.finish();
        let mut packets = Vec::new();
        while let Some(p) = a.pop() {
            packets.push(p);
        }
        let mut k = a.into_context();
        k.packets = packets;
        Ok(k)
    }

    /// The socket that sent `p` (as of its hop `upto`): the first send-side hop
    /// naming one, else the flow's sender.
    pub fn sender_of(&self, p: &KPacket, upto: usize) -> u64 {
        let own = p.hops[..=upto.min(p.hops.len().saturating_sub(1))]
            .iter()
            .find(|h| is_send_side(h.kind) && h.cookie != 0)
            .map_or(0, |h| h.cookie);
        let flow = p.ip.and_then(|ip| {
            self.senders
                .get(&(ip.saddr, ip.sport, ip.daddr, ip.dport))
                .copied()
        });
        self.prefer_owned(own, flow)
    }

    /// The socket that received `p`: its TCP receive or LOCAL_IN hop's, else the
    /// flow's receiver.
    pub fn receiver_of(&self, p: &KPacket) -> u64 {
        let flow = p.ip.and_then(|ip| {
            self.receivers
                .get(&(ip.saddr, ip.sport, ip.daddr, ip.dport))
                .copied()
        });
        self.prefer_owned(p.receiver_cookie(), flow)
    }

    /// The socket that received `p` at its hop `at`: a device receive carries
    /// the socket the recorder found for its flow in the kernel, in the
    /// receiving device's network namespace (docs/FORMAT.md, `dev_rx`), which
    /// no flow without the namespace can tell apart (one 5-tuple in two
    /// namespaces); other hops, and a receive with cookie 0, take
    /// [`Kernel::receiver_of`].
    pub fn receiver_at(&self, p: &KPacket, at: usize) -> u64 {
        match p.hops.get(at) {
            Some(h) if h.kind == kind::DEV_RX && h.cookie != 0 => h.cookie,
            _ => self.receiver_of(p),
        }
    }

    /// The packet's own socket, unless it made no calls (a listener or request socket
    /// answering a SYN) and the flow's socket did.
    fn prefer_owned(&self, own: u64, flow: Option<u64>) -> u64 {
        match flow {
            Some(f)
                if own == 0
                    || (!self.owners.contains_key(&own) && self.owners.contains_key(&f)) =>
            {
                f
            }
            _ => own,
        }
    }

    /// Forgets the application calls before `ts` (a streaming reader's window has
    /// passed them), keeping their count and bytes so later calls keep their
    /// numbers and stream positions.
    pub fn forget_calls_before(&mut self, ts: i64) {
        for (recv, map) in [(false, &mut self.sends), (true, &mut self.recvs)] {
            map.retain(|&cookie, calls| {
                let n = calls.partition_point(|c| c.ts_ns < ts);
                if n > 0 {
                    let bytes: u64 = calls[..n].iter().map(|c| c.ret.max(0) as u64).sum();
                    let d = self.calls_dropped.entry((cookie, recv)).or_default();
                    d.0 += n;
                    d.1 += bytes;
                    calls.drain(..n);
                }
                !calls.is_empty()
            });
        }
    }

    pub fn kind_name(&self, id: u16) -> &str {
        self.kind_names.get(&id).map_or("?", String::as_str)
    }

    /// The application call a packet's bytes came from or went to. A send is
    /// recorded when the call returns: a packet first seen at `ts` in thread `tid`
    /// belongs to that thread's next send on the socket (it was sent during the call);
    /// one first seen elsewhere (softirq, another thread: sent later, when the window
    /// opened) to the socket's last send before it. A receive: the socket's first
    /// receive at or after `ts`.
    pub fn call_for(&self, cookie: u64, ts: i64, send: bool, tid: u32) -> Option<&AppCall> {
        let calls = if send { &self.sends } else { &self.recvs }.get(&cookie)?;
        let i = calls.partition_point(|c| c.ts_ns < ts);
        if !send {
            return calls.get(i);
        }
        match calls.get(i) {
            Some(next) if next.tid == tid => Some(next),
            _ => i.checked_sub(1).map(|j| &calls[j]),
        }
    }

    /// The LOST region covering `ts`, if any.
    pub fn lost_at(&self, ts: i64) -> Option<&LostRegion> {
        self.lost.iter().find(|l| l.from_ns <= ts && ts <= l.to_ns)
    }
}

/// A flow direction: source, source port, destination, destination port.
pub type FlowKey = (IpAddr, u16, IpAddr, u16);

/// Hooks on the sending side of the stack (their cookie is the sender's).
fn is_send_side(k: u16) -> bool {
    matches!(
        k,
        kind::TCP_SENDMSG
            | kind::TCP_RETRANS
            | kind::TCP_RST_SENT
            | kind::IP_LOCAL_OUT
            | kind::IP_POST_ROUTING
            | kind::QDISC_ENQ
            | kind::QDISC_DEQ
            | kind::DEV_QUEUE
            | kind::DEV_START_XMIT
    )
}
