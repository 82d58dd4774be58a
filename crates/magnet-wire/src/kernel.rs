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

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::IpAddr;

use magnet_trace::catalog::{kind, FieldDesc};
use magnet_trace::event::decode_field;
use magnet_trace::{Header, RecordRef, TraceReader, Value};

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

/// Field positions of one kind, looked up once.
#[derive(Default, Clone)]
struct Fields {
    cookie: Option<FieldDesc>,
    pkt_id: Option<FieldDesc>,
    ifindex: Option<FieldDesc>,
    len: Option<FieldDesc>,
    ethertype: Option<FieldDesc>,
    reason: Option<FieldDesc>,
    ret: Option<FieldDesc>,
    comm: Option<FieldDesc>,
    count: Option<FieldDesc>,
    ip: Vec<Option<FieldDesc>>,
    func: Option<FuncFields>,
}

/// Field positions of a function kind.
#[derive(Clone)]
struct FuncFields {
    exit: bool,
    func: Option<FieldDesc>,
    caller: Option<FieldDesc>,
    skb: Option<FieldDesc>,
    parent: Option<FieldDesc>,
}

const IP_FIELDS: [&str; 14] = [
    "version",
    "tos",
    "ttl",
    "protocol",
    "tot_len",
    "ip_id",
    "frag_off",
    "saddr",
    "daddr",
    "sport",
    "dport",
    "tcp_flags",
    "seq",
    "ack",
];

/// The IP and transport header fields of an Ethernet frame, when its bytes hold
/// the IP header and the transport ports (TCP: through the flags).
pub fn ip_of_frame(f: &[u8]) -> Option<IpFields> {
    let be16 = |b: &[u8], at: usize| Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let be32 = |b: &[u8], at: usize| Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let mut et = be16(f, 12)?;
    let mut l3 = 14;
    if et == 0x8100 {
        et = be16(f, 16)?;
        l3 = 18;
    }
    let ip = f.get(l3..)?;
    let (mut fields, l4) = match et {
        0x0800 if ip.first()? >> 4 == 4 => {
            let ihl = ((ip[0] & 0x0f) as usize) * 4;
            let a = |at: usize| -> Option<IpAddr> {
                let o: [u8; 4] = ip.get(at..at + 4)?.try_into().ok()?;
                Some(IpAddr::from(o))
            };
            (
                IpFields {
                    version: 4,
                    tos: *ip.get(1)?,
                    ttl: *ip.get(8)?,
                    protocol: *ip.get(9)?,
                    tot_len: be16(ip, 2)? as u32,
                    ip_id: be16(ip, 4)?,
                    frag_off: be16(ip, 6)?,
                    saddr: a(12)?,
                    daddr: a(16)?,
                    sport: 0,
                    dport: 0,
                    tcp_flags: 0,
                    seq: 0,
                    ack: 0,
                },
                ihl,
            )
        }
        0x86dd if ip.first()? >> 4 == 6 => {
            let a = |at: usize| -> Option<IpAddr> {
                let o: [u8; 16] = ip.get(at..at + 16)?.try_into().ok()?;
                Some(IpAddr::from(o))
            };
            (
                IpFields {
                    version: 6,
                    tos: ((be16(ip, 0)? >> 4) & 0xff) as u8,
                    ttl: *ip.get(7)?,
                    protocol: *ip.get(6)?,
                    tot_len: be16(ip, 4)? as u32 + 40,
                    ip_id: 0,
                    frag_off: 0,
                    saddr: a(8)?,
                    daddr: a(24)?,
                    sport: 0,
                    dport: 0,
                    tcp_flags: 0,
                    seq: 0,
                    ack: 0,
                },
                40,
            )
        }
        _ => return None,
    };
    // Later IPv4 fragments carry no transport header.
    if fields.frag_off & 0x1fff == 0 {
        let t = ip.get(l4..)?;
        match fields.protocol {
            6 => {
                fields.sport = be16(t, 0)?;
                fields.dport = be16(t, 2)?;
                fields.seq = be32(t, 4)?;
                fields.ack = be32(t, 8)?;
                fields.tcp_flags = *t.get(13)?;
            }
            17 => {
                fields.sport = be16(t, 0)?;
                fields.dport = be16(t, 2)?;
            }
            _ => {}
        }
    }
    Some(fields)
}

/// The `netns` field of a SOCK record.
fn d_netns(h: &Header, b: &[u8]) -> Option<u64> {
    let d = h.catalog.get(kind::SOCK)?.field("netns")?;
    decode_field(b, d)?.as_u64().filter(|&n| n != 0)
}

fn num(bytes: &[u8], f: &Option<FieldDesc>) -> Option<u64> {
    decode_field(bytes, f.as_ref()?)?.as_u64()
}

/// How far apart in time the parts of one packet may be, and how many packets may
/// be open at once: what bounds the memory of a reader that streams the trace.
///
/// A packet is open from its first record until no record of it came for `ns`
/// nanoseconds of trace time; then it is finished (GSO segments assigned, fields
/// from frame bytes taken) and handed on. When more than `packets` are open, the
/// oldest half is finished early. A record of a packet finished already (its
/// parts further apart than the window) starts a packet of its own and is counted
/// in [`WindowStats::split`]: said, never silently merged or dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub ns: i64,
    pub packets: usize,
}

impl Window {
    /// 2 s of trace time, 262,144 open packets (a reader peaks near 300 MB).
    pub const DEFAULT: Window = Window {
        ns: 2_000_000_000,
        packets: 1 << 18,
    };
    /// The whole trace at once (nothing finished before the end).
    pub const WHOLE: Window = Window {
        ns: i64::MAX,
        packets: usize::MAX,
    };

    /// One line naming the window, for messages.
    pub fn describe(&self) -> String {
        if *self == Window::WHOLE {
            return "the whole trace".into();
        }
        format!(
            "{} s of trace time or {} open packets",
            self.ns as f64 / 1e9,
            self.packets
        )
    }
}

/// What the window did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WindowStats {
    /// Packets handed on.
    pub packets: u64,
    /// Records of a packet finished already (its parts further apart than the
    /// window), each the start of a packet of its own.
    pub split: u64,
    /// Packets finished early because too many were open (not warned about by
    /// itself: a part of one that comes later is a `split`; a GSO segment of one
    /// that appears later keeps no derived fields, its frames say so).
    pub forced: u64,
    /// The most packets open at once.
    pub peak_open: usize,
}

impl WindowStats {
    /// Warning lines when the window cut anything, naming it.
    pub fn warnings(&self, w: &Window) -> Vec<String> {
        let mut out = Vec::new();
        if self.split > 0 {
            out.push(format!(
                "{} packet part(s) came after their packet was finished (parts further apart than the window, {}): each is shown as a packet of its own",
                self.split,
                w.describe()
            ));
        }
        out
    }
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

/// What was last known of a packet handed on: to tell a late part of it from a
/// new packet that reuses its id.
#[derive(Clone, Copy)]
struct Tomb {
    /// Last device hop: kind and length.
    last_dev: Option<(u16, u32)>,
}

/// Builds packets from records, the one model `magnet match`, `magnet pcap` and
/// `magnet packets` share: skb reuse, GSO segments and frame bytes handled once.
/// Feed records with [`Assembler::push`]; finished packets come out of
/// [`Assembler::pop`] in order of their first sighting; [`Assembler::finish`] at
/// the end. The context (owners, calls, flows) stays in [`Assembler::k`].
pub struct Assembler {
    /// Everything but the packets.
    pub k: Kernel,
    pub stats: WindowStats,
    window: Window,
    fields: Vec<Option<Fields>>,
    header: Header,
    drop_names: std::collections::BTreeMap<String, String>,
    frame_desc: Option<(FieldDesc, FieldDesc, FieldDesc, FieldDesc, usize)>,
    open: Vec<KPacket>,
    by_id: HashMap<u64, usize>,
    last_ts_by_cpu: HashMap<u16, i64>,
    newest: i64,
    oldest_open: i64,
    tombs: HashMap<u64, Tomb>,
    tomb_q: VecDeque<(i64, u64)>,
    ready: VecDeque<KPacket>,
    hl_counts: HashMap<FlowKey, HashMap<u32, u64>>,
    /// Function entries not yet returned, by (task, function).
    calls: HashMap<(u64, u64), Vec<i64>>,
    /// Time in the function by (task, function, entry time).
    returned: HashMap<(u64, u64, i64), u64>,
    /// Function events of an skb without a packet id yet, by skb address.
    pending: HashMap<u64, Vec<FuncStep>>,
    /// Keep application calls in the context (pcap, match need them).
    keep_calls: bool,
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
}

impl Assembler {
    pub fn new(header: &Header, window: Window, keep_calls: bool) -> Assembler {
        let header = header.clone();
        let max = header
            .catalog
            .kinds
            .iter()
            .map(|d| d.id as usize)
            .max()
            .unwrap_or(0);
        let mut fields: Vec<Option<Fields>> = vec![None; max + 1];
        let mut k = Kernel::default();
        for d in &header.catalog.kinds {
            k.kind_names.insert(d.id, d.name.clone());
            k.kind_layers.insert(d.id, d.layer.clone());
            let f = |n: &str| d.field(n).cloned();
            fields[d.id as usize] = Some(Fields {
                cookie: f("cookie"),
                pkt_id: f("pkt_id"),
                ifindex: f("ifindex"),
                len: f("len").or_else(|| f("tot_len")),
                ethertype: f("ethertype"),
                reason: f("reason"),
                ret: f("ret"),
                comm: f("comm"),
                count: f("count"),
                ip: if d.layer == "ip" {
                    IP_FIELDS.iter().map(|n| f(n)).collect()
                } else {
                    Vec::new()
                },
                func: if d.layer == "func" || d.name == "func_exit" {
                    Some(FuncFields {
                        exit: d.name == "func_exit",
                        func: f("func"),
                        caller: f("caller"),
                        skb: f("skb"),
                        parent: f("parent"),
                    })
                } else {
                    None
                },
            });
        }
        let drop_names = header
            .enums
            .get("skb_drop_reason")
            .cloned()
            .unwrap_or_default();
        // record --snaplen: frame records (pkt_id, ifindex, caplen, dev_kind, then
        // the bytes after the catalog's size).
        let frame_desc = header.catalog.get(kind::FRAME).and_then(|d| {
            let f = |n: &str| d.field(n).cloned();
            Some((
                f("pkt_id")?,
                f("ifindex")?,
                f("caplen")?,
                f("dev_kind")?,
                d.size as usize,
            ))
        });
        k.header = Some(header.clone());
        Assembler {
            k,
            stats: WindowStats::default(),
            window,
            fields,
            header,
            drop_names,
            frame_desc,
            open: Vec::new(),
            by_id: HashMap::new(),
            last_ts_by_cpu: HashMap::new(),
            newest: i64::MIN,
            oldest_open: i64::MAX,
            tombs: HashMap::new(),
            tomb_q: VecDeque::new(),
            ready: VecDeque::new(),
            hl_counts: HashMap::new(),
            calls: HashMap::new(),
            returned: HashMap::new(),
            pending: HashMap::new(),
            keep_calls,
        }
    }

    pub fn window(&self) -> Window {
        self.window
    }

    /// The latest record time seen (wall clock).
    pub fn newest(&self) -> i64 {
        self.newest
    }

    /// Packets open now.
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// A reader error: damage it can step over goes to `warnings`; anything else
    /// is returned.
    pub fn error(&mut self, e: magnet_trace::TraceError) -> Result<(), magnet_trace::TraceError> {
        if e.is_recoverable() || matches!(e, magnet_trace::TraceError::Truncated { .. }) {
            // The end of what there is (Truncated): the totals the reader checks at
            // the end may still follow.
            self.k.warnings.push(e.to_string());
            Ok(())
        } else {
            Err(e)
        }
    }

    /// The next finished packet, in order of first sighting.
    pub fn pop(&mut self) -> Option<KPacket> {
        self.ready.pop_front()
    }

    /// The context without the packets.
    pub fn into_context(self) -> Kernel {
        self.k
    }

    /// Finishes every open packet (the end of the trace).
    pub fn finish(&mut self) {
        self.flush(i64::MAX, usize::MAX);
        let w = self.stats.warnings(&self.window);
        self.k.warnings.extend(w);
    }

    /// Adds one record.
    pub fn push(&mut self, r: &RecordRef<'_>) {
        let k = &mut self.k;
        let b = r.bytes;
        let kd = r.kind();
        let ts = self.header.clock.to_realtime(r.ts_ns()) as i64;
        if kd == kind::FRAME {
            if let Some((fid, fif, fcap, fkind, at)) = &self.frame_desc {
                let n = |d: &FieldDesc| num(b, &Some(d.clone())).unwrap_or(0);
                let (id, ifindex, cap, dk) = (n(fid), n(fif) as u32, n(fcap) as usize, n(fkind));
                if b.len() < at + cap {
                    k.warnings.push(format!(
                        "frame record of packet {id:#x}: {} bytes, its caplen says {}",
                        b.len(),
                        at + cap
                    ));
                } else if let Some(&i) = self.by_id.get(&id) {
                    self.open[i].frames.push(Frame {
                        ts_ns: ts,
                        kind: dk as u16,
                        ifindex,
                        cpu: r.cpu(),
                        bytes: b[*at..at + cap].to_vec(),
                    });
                }
            }
            return;
        }
        let Some(Some(f)) = self.fields.get(kd as usize) else {
            return;
        };
        let cookie = num(b, &f.cookie).unwrap_or(0);
        match kd {
            kind::LOST => {
                let from = self.last_ts_by_cpu.get(&r.cpu()).copied().unwrap_or(ts);
                k.lost.push(LostRegion {
                    from_ns: from.min(ts),
                    to_ns: ts,
                    count: num(b, &f.count).unwrap_or(0),
                });
                return;
            }
            kind::SOCK if cookie != 0 => {
                if let Some(ns) = d_netns(&self.header, b) {
                    k.sock_netns.insert(cookie, ns);
                }
            }
            kind::APP_SEND | kind::APP_RECV if cookie != 0 => {
                if let Some(Value::Str(comm)) = f.comm.as_ref().and_then(|d| decode_field(b, d)) {
                    k.owners
                        .entry(cookie)
                        .or_insert(Owner { pid: r.pid(), comm });
                }
                if self.keep_calls {
                    let calls = if kd == kind::APP_SEND {
                        &mut k.sends
                    } else {
                        &mut k.recvs
                    };
                    let list = calls.entry(cookie).or_default();
                    let at = list.partition_point(|c| c.ts_ns <= ts);
                    list.insert(
                        at,
                        AppCall {
                            ts_ns: ts,
                            send: kd == kind::APP_SEND,
                            ret: f
                                .ret
                                .as_ref()
                                .and_then(|d| decode_field(b, d))
                                .and_then(|v| v.as_i64())
                                .unwrap_or(0),
                            pid: r.pid(),
                            tid: r.tid(),
                        },
                    );
                }
            }
            _ => {}
        }
        self.last_ts_by_cpu.insert(r.cpu(), ts);
        if ts > self.newest {
            self.newest = ts;
        }
        let id = num(b, &f.pkt_id).unwrap_or(0);
        // Function events (record --funcs): their task, entry and return.
        let mut func_step = None;
        let mut skb = 0;
        if let Some(ff) = &f.func {
            // The kernel runs one function call on one task (the idle task: per CPU).
            let task = match r.tid() {
                0 => (1 << 63) | u64::from(r.cpu()),
                t => u64::from(t),
            };
            let func = num(b, &ff.func).unwrap_or(0);
            if ff.exit {
                if let Some(entry) = self.calls.get_mut(&(task, func)).and_then(Vec::pop) {
                    self.returned
                        .insert((task, func, entry), ts.saturating_sub(entry) as u64);
                }
                return;
            }
            self.calls.entry((task, func)).or_default().push(ts);
            skb = num(b, &ff.skb).unwrap_or(0);
            let parent = num(b, &ff.parent).unwrap_or(0);
            // A clone (TCP's transmit copy) takes its parent's earlier function
            // events: the parent never gets a packet id of its own.
            if parent != 0 && parent != skb && skb != 0 {
                if let Some(mut early) = self.pending.remove(&parent) {
                    let mine = self.pending.entry(skb).or_default();
                    early.append(mine);
                    early.sort_by_key(|s| s.ts_ns);
                    *mine = early;
                }
            }
            let step = FuncStep {
                ts_ns: ts,
                cpu: r.cpu(),
                kind: kd,
                func,
                caller: num(b, &ff.caller),
                in_ns: None,
                task,
            };
            if id == 0 {
                if skb != 0 {
                    self.pending.entry(skb).or_default().push(step);
                }
                return;
            }
            func_step = Some(step);
        }
        if id == 0 {
            return;
        }
        // An id whose skb was reused without the recorder noticing. A packet is
        // born at LOCAL_OUT; after a driver took it (transmit) the next device
        // event is a receive (the veth peer), and after a receive the next is a
        // transmit (forwarded) or LOCAL_IN. Anything else, with another length,
        // starts a new packet.
        let len = num(b, &f.len).unwrap_or(0) as u32;
        let new_ip = if f.ip.is_empty() {
            None
        } else {
            ip_fields(b, &f.ip)
        };
        // Lengths without the link header: a transmit's includes it.
        let net_len = |kind: u16, len: u32| {
            if kind == kind::DEV_START_XMIT {
                len.saturating_sub(14)
            } else {
                len
            }
        };
        // The trace misses a hop now and then (a receive the filters did not
        // attribute): only a length that changed says the skb is another one.
        let other = |(kind, l): (u16, u32)| len != 0 && l != 0 && net_len(kind, l) != len;
        let reused = self.by_id.get(&id).is_some_and(|&i| {
            // IP fields that disagree with the packet's: another packet.
            if let (Some(a), Some(n)) = (self.open[i].ip, new_ip) {
                if (a.saddr, a.daddr, a.protocol, a.ip_id)
                    != (n.saddr, n.daddr, n.protocol, n.ip_id)
                {
                    return true;
                }
            }
            let h = &self.open[i].hops;
            let last_dev = h
                .iter()
                .rev()
                .find(|h| matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX))
                .map(|h| (h.kind, h.len));
            match kd {
                // Only hops before it: records reach the trace out of time order
                // now and then (a nested program's record is sent alone, ahead of
                // its CPU's batch), and a packet's own transmit arriving before its
                // LOCAL_OUT must not make that LOCAL_OUT another packet.
                kind::IP_LOCAL_OUT => h.iter().any(|h| {
                    h.ts_ns < ts
                        && matches!(
                            h.kind,
                            kind::IP_LOCAL_OUT
                                | kind::IP_LOCAL_IN
                                | kind::DEV_START_XMIT
                                | kind::DEV_RX
                        )
                }),
                kind::IP_LOCAL_IN => {
                    last_dev.is_some_and(|h| h.0 == kind::DEV_START_XMIT && other(h))
                }
                kind::DEV_RX => last_dev.is_some_and(|h| h.0 == kind::DEV_RX && other(h)),
                _ => false,
            }
        });
        // A part of a packet handed on already: counted, and a packet of its own.
        if !self.by_id.contains_key(&id) {
            if let Some(t) = self.tombs.remove(&id) {
                let new = match kd {
                    kind::IP_LOCAL_OUT => true,
                    kind::IP_LOCAL_IN => t
                        .last_dev
                        .is_some_and(|h| h.0 == kind::DEV_START_XMIT && other(h)),
                    kind::DEV_RX => t.last_dev.is_some_and(|h| h.0 == kind::DEV_RX && other(h)),
                    _ => false,
                };
                if !new {
                    self.stats.split += 1;
                }
            }
        }
        let mut carried = None;
        let mut carried_frame = None;
        if reused {
            let old = self.by_id.remove(&id).expect("reused ids are known");
            // The receive just before a LOCAL_IN on the same device belongs to
            // the new packet.
            let hops = &mut self.open[old].hops;
            if kd == kind::IP_LOCAL_IN
                && hops.len() > 1
                && hops.last().is_some_and(|h| {
                    h.kind == kind::DEV_RX && h.ifindex == num(b, &f.ifindex).unwrap_or(0) as u32
                })
            {
                carried = hops.pop();
                let old = &mut self.open[old];
                carried_frame = carried.and_then(|h| {
                    let at = old.frames.iter().position(|f| {
                        (f.ts_ns, f.kind, f.ifindex) == (h.ts_ns, h.kind, h.ifindex)
                    })?;
                    Some(old.frames.remove(at))
                });
            }
        }
        let open = &mut self.open;
        let i = *self.by_id.entry(id).or_insert_with(|| {
            open.push(KPacket {
                id,
                hops: Vec::with_capacity(4),
                ip: None,
                ethertype: 0,
                drop: None,
                gso_segments: 0,
                gso_parent: None,
                inherited: 0,
                frames: Vec::new(),
                funcs: Vec::new(),
            });
            open.len() - 1
        });
        self.oldest_open = self.oldest_open.min(ts);
        let p = &mut self.open[i];
        p.hops.extend(carried);
        p.frames.extend(carried_frame);
        // The skb's function events from before it had an id come first.
        if skb != 0 {
            if let Some(early) = self.pending.remove(&skb) {
                let first = p.hops.iter().map(|h| h.ts_ns).min().unwrap_or(i64::MAX);
                p.funcs
                    .extend(early.into_iter().filter(|s| s.ts_ns <= first));
            }
        }
        p.funcs.extend(func_step);
        p.hops.push(Hop {
            ts_ns: ts,
            kind: kd,
            ifindex: num(b, &f.ifindex).unwrap_or(0) as u32,
            len,
            cookie,
            tid: r.tid(),
            cpu: r.cpu(),
            other_netns: r.flags() & magnet_trace::events::FLAG_OTHER_NETNS != 0,
        });
        if let Some(et) = num(b, &f.ethertype).filter(|&e| e != 0) {
            p.ethertype = et as u16;
        }
        if kd == kind::DROP {
            let reason = num(b, &f.reason).unwrap_or(0);
            p.drop = Some(
                self.drop_names
                    .get(&reason.to_string())
                    .cloned()
                    .unwrap_or_else(|| format!("reason {reason}")),
            );
        }
        if p.ip.is_none() {
            p.ip = new_ip;
        }
        self.stats.peak_open = self.stats.peak_open.max(self.open.len());
        // Finish what the window has left behind: packets whose first sighting is
        // two windows old (so one window of records after them has been read),
        // in steps of a window; or the oldest half when too many are open.
        if self.open.len() > self.window.packets {
            let n = (self.window.packets / 2).max(1);
            let before = self.stats.packets;
            self.flush(i64::MAX, n);
            self.stats.forced += self.stats.packets - before;
        } else if self.window.ns != i64::MAX
            && self.newest.saturating_sub(self.oldest_open) > self.window.ns.saturating_mul(2)
        {
            let cut = self.newest - self.window.ns;
            self.flush(cut, usize::MAX);
        }
    }

    /// Finishes the open packets first seen before `cut`, at most `most` of them.
    fn flush(&mut self, cut: i64, most: usize) {
        let mut open = std::mem::take(&mut self.open);
        for p in &mut open {
            let own = p.inherited.min(p.hops.len());
            p.hops[own..].sort_by_key(|h| h.ts_ns);
        }
        open.sort_by_key(|p| p.first_ts());
        let n = open.partition_point(|p| p.first_ts() < cut).min(most);
        // TCP header lengths learnt from the packets finished now.
        for p in &open[..n] {
            count_header_len(&mut self.hl_counts, p, &mut self.k.tcp_header_len);
        }
        assign_gso_segments(&mut open, &self.k.tcp_header_len, n);
        let rest = open.split_off(n);
        self.open = rest;
        self.by_id.clear();
        for (i, p) in self.open.iter().enumerate() {
            self.by_id.insert(p.id, i);
        }
        self.oldest_open = self.open.first().map_or(i64::MAX, |p| p.first_ts());
        let k = &mut self.k;
        for mut p in open {
            // record --snaplen: a packet the IP layer did not see (or whose fields
            // were derived, a GSO segment) takes its header fields from its frame.
            if p.ip.is_none() || p.gso_parent.is_some() {
                if let Some(ip) = p.frames.iter().find_map(|f| ip_of_frame(&f.bytes)) {
                    p.ip = Some(ip);
                    if p.ethertype == 0 {
                        p.ethertype = if ip.version == 6 { 0x86dd } else { 0x0800 };
                    }
                }
            }
            if let Some(ip) = p.ip {
                let key = (ip.saddr, ip.sport, ip.daddr, ip.dport);
                if let Some(c) = p
                    .hops
                    .iter()
                    .find(|h| is_send_side(h.kind) && h.cookie != 0)
                {
                    learn(&mut k.senders, &k.owners, key, c.cookie);
                }
                if let Some(c) =
                    p.hops.iter().rev().find(|h| {
                        matches!(h.kind, kind::TCP_RCV | kind::IP_LOCAL_IN) && h.cookie != 0
                    })
                {
                    learn(&mut k.receivers, &k.owners, key, c.cookie);
                }
            }
            for s in &mut p.funcs {
                s.in_ns = self.returned.remove(&(s.task, s.func, s.ts_ns));
            }
            p.funcs.sort_by_key(|s| s.ts_ns);
            if self.window.ns != i64::MAX && !self.by_id.contains_key(&p.id) {
                let last = p.hops.last().map_or(0, |h| h.ts_ns);
                let last_dev = p
                    .hops
                    .iter()
                    .rev()
                    .find(|h| matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX))
                    .map(|h| (h.kind, h.len));
                self.tombs.insert(p.id, Tomb { last_dev });
                self.tomb_q.push_back((last, p.id));
            }
            self.stats.packets += 1;
            self.ready.push_back(p);
        }
        if self.window.ns != i64::MAX {
            // Forget what is older than two windows: tombstones, unreturned function
            // entries, returns and early function events nobody claimed, calls.
            let old = self.newest.saturating_sub(self.window.ns.saturating_mul(2));
            while self.tomb_q.front().is_some_and(|&(t, _)| t < old) {
                let (_, id) = self.tomb_q.pop_front().expect("front");
                self.tombs.remove(&id);
            }
            if cut == i64::MAX || self.returned.len() + self.pending.len() + self.calls.len() > 4096
            {
                self.returned.retain(|&(_, _, t), _| t >= old);
                self.pending
                    .retain(|_, v| v.last().is_some_and(|s| s.ts_ns >= old));
                self.calls.retain(|_, v| {
                    v.retain(|&t| t >= old);
                    !v.is_empty()
                });
            }
        }
    }
}

/// Counts `p` towards its connection's header length (header-only TCP packets)
/// and updates the connection's most common one in `out`.
fn count_header_len(
    counts: &mut HashMap<FlowKey, HashMap<u32, u64>>,
    p: &KPacket,
    out: &mut HashMap<FlowKey, u32>,
) {
    let Some(ip) =
        p.ip.filter(|ip| ip.protocol == 6 && ip.tcp_flags & 0x06 == 0)
    else {
        return;
    };
    let h = ip
        .tot_len
        .saturating_sub(if ip.version == 6 { 40 } else { 20 });
    if !(20..=60).contains(&h) {
        return;
    }
    for key in [
        (ip.saddr, ip.sport, ip.daddr, ip.dport),
        (ip.daddr, ip.dport, ip.saddr, ip.sport),
    ] {
        let c = counts.entry(key).or_default();
        *c.entry(h).or_default() += 1;
        if let Some((&best, _)) = c.iter().max_by_key(|&(h, n)| (*n, std::cmp::Reverse(*h))) {
            out.insert(key, best);
        }
    }
}

/// GSO: TCP packets larger than the device's MTU leave LOCAL_OUT whole and are cut
/// into segments just before the driver; each segment is a new skb, so the device
/// layer sees packet ids the IP layer never saw. A segment (a packet whose first
/// sighting is a transmit with a socket and no IP fields) takes its parent's fields:
/// identification + k, sequence number + the payload of the segments before it,
/// PSH/FIN on the last only, and the parent's hops before its own.
///
/// Which parent: segments are made and sent in one go right after the parent's
/// LOCAL_OUT on the same CPU, so their ids follow the parent's (ids are per-CPU
/// counters). Each parent takes the segments whose ids follow its own, as many as
/// its payload needs. Segments left over (the parent waited in a qdisc and was cut
/// later, on dequeue) go, run by run, to the oldest earlier parent of their socket
/// that found none, unless a later parent of that socket went out with its own
/// segments in between (then the waiting parent's segments are missing from the
/// trace). A parent that has segments takes no more, so one missing event cannot
/// shift every later packet's fields.
///
/// The TCP header length (not recorded) is the most common length of the
/// connection's header-only packets (pure ACKs and FINs; a RST has no options).
///
/// A segment received where the IP layer is recorded (loopback, or a veth peer in
/// the recorder's namespace) has real fields from its LOCAL_IN. It is still its
/// parent's segment: it joins when its identification is the parent's + k and its
/// sequence number lies in the parent's, and keeps its own fields. Left out, the
/// parent would keep the first segment's footprint and take that segment's frame
/// whenever its LOCAL_OUT lay nearer the frame's time than the segment's device
/// hops (about 2 % of the frames of an iperf3 run over loopback).
fn assign_gso_segments(packets: &mut [KPacket], thl: &HashMap<FlowKey, u32>, commit: usize) {
    let ihl_of = |ip: &IpFields| -> i64 {
        if ip.version == 6 {
            40
        } else {
            20
        }
    };
    let header_len = |ip: &IpFields| -> i64 {
        ihl_of(ip)
            + thl
                .get(&(ip.saddr, ip.sport, ip.daddr, ip.dport))
                .copied()
                .unwrap_or(20) as i64
    };

    // Segments: first seen on the transmit side below the IP layer, with a
    // socket (IP fields, if any, come from a later hop: their receive).
    let mut seg_by_id: HashMap<u64, usize> = HashMap::new();
    for (i, p) in packets.iter().enumerate() {
        let Some(first) = p.hops.first() else {
            continue;
        };
        if matches!(
            first.kind,
            kind::DEV_QUEUE | kind::DEV_START_XMIT | kind::QDISC_ENQ
        ) && first.cookie != 0
            && p.gso_parent.is_none()
            && matches!(p.ethertype, 0x0800 | 0x86dd)
        {
            seg_by_id.insert(p.id, i);
        }
    }
    if seg_by_id.is_empty() {
        return;
    }
    // The payload a segment carries (its device length includes the 14-byte
    // Ethernet header), or None when it carries none.
    let seg_payload = |p: &KPacket, hl: i64| -> Option<(u32, i64)> {
        let tot = match p.ip {
            Some(ip) => ip.tot_len,
            None => p.hops.iter().find(|h| h.len > 0)?.len.saturating_sub(14),
        };
        let pl = tot as i64 - hl;
        (pl > 0).then_some((tot, pl))
    };
    struct Parent {
        idx: usize,
        first_ts: i64,
        remaining: i64,
        next_seq: u32,
        k: u32,
        last_ts: i64,
    }
    // (segment, parent, fields)
    let mut assigned: Vec<(usize, usize, IpFields)> = Vec::new();
    let mut claimed = vec![false; packets.len()];
    // A segment with fields of its own (its receive was recorded) belongs to the
    // parent only if they say so: same connection and acknowledgement, IPv4
    // identification the parent's + k, sequence number inside the parent's.
    let fits = |par: &Parent, pip: &IpFields, own: &IpFields| -> bool {
        (
            own.saddr,
            own.daddr,
            own.protocol,
            own.sport,
            own.dport,
            own.ack,
        ) == (
            pip.saddr,
            pip.daddr,
            pip.protocol,
            pip.sport,
            pip.dport,
            pip.ack,
        ) && (pip.version == 6 || own.ip_id == pip.ip_id.wrapping_add(par.k as u16))
            && own.seq.wrapping_sub(pip.seq) < pip.tot_len
    };
    // Such a segment keeps its fields and tells where the parent's payload stands
    // without the header length: its end is the parent's when seq + tot_len
    // (header lengths equal) reaches the parent's seq + tot_len.
    let take_own = |par: &mut Parent, pip: &IpFields, own: &IpFields, payload: i64| -> IpFields {
        par.k += 1;
        par.next_seq = own.seq.wrapping_add(payload as u32);
        let end = pip.seq.wrapping_add(pip.tot_len);
        par.remaining = end.wrapping_sub(own.seq.wrapping_add(own.tot_len)) as i32 as i64;
        *own
    };
    let take = |par: &mut Parent, pip: &IpFields, seg_tot: u32, payload: i64| -> IpFields {
        let last = par.remaining - payload <= 0;
        let ip = IpFields {
            tot_len: seg_tot,
            ip_id: pip.ip_id.wrapping_add(par.k as u16),
            seq: par.next_seq,
            tcp_flags: if last {
                pip.tcp_flags
            } else {
                pip.tcp_flags & !0x09
            },
            ..*pip
        };
        par.k += 1;
        par.next_seq = par.next_seq.wrapping_add(payload as u32);
        par.remaining -= payload;
        ip
    };
    // Pass 1: each parent follows its id chain.
    let mut waiting: HashMap<u64, Vec<Parent>> = HashMap::new();
    // First times of the parents that found their chain, per socket (ascending).
    let mut chained: HashMap<u64, Vec<i64>> = HashMap::new();
    for (i, p) in packets.iter().enumerate() {
        let Some(pip) = p.ip.filter(|ip| ip.protocol == 6) else {
            continue;
        };
        let out = p.hops.iter().any(|h| h.kind == kind::IP_LOCAL_OUT);
        let xmit = p.hops.iter().any(|h| h.kind == kind::DEV_START_XMIT);
        let cookie = p.sender_cookie();
        if !out || xmit || cookie == 0 {
            continue;
        }
        let hl = header_len(&pip);
        let payload = pip.tot_len as i64 - hl;
        if payload <= 0 {
            continue;
        }
        let mut par = Parent {
            idx: i,
            first_ts: p.first_ts(),
            remaining: payload,
            next_seq: pip.seq,
            k: 0,
            last_ts: p.hops.last().map_or(0, |h| h.ts_ns),
        };
        let mut id = p.id;
        while par.remaining > 0 {
            id = id.wrapping_add(1);
            let Some(&s) = seg_by_id.get(&id) else { break };
            let seg = &packets[s];
            if claimed[s] || seg.hops[0].cookie != cookie || seg.first_ts() < p.first_ts() {
                break;
            }
            let Some((tot, pl)) = seg_payload(seg, hl) else {
                break;
            };
            let ip = match seg.ip {
                Some(own) if fits(&par, &pip, &own) => take_own(&mut par, &pip, &own, pl),
                Some(_) => break,
                None => take(&mut par, &pip, tot, pl),
            };
            claimed[s] = true;
            assigned.push((s, i, ip));
        }
        if par.k == 0 {
            waiting.entry(cookie).or_default().push(par);
        } else {
            chained.entry(cookie).or_default().push(p.first_ts());
        }
    }
    // Pass 2: runs of consecutive ids nobody claimed, to the latest earlier parent
    // of their socket that has no segments.
    let mut left: Vec<usize> = seg_by_id
        .values()
        .copied()
        .filter(|&s| !claimed[s])
        .collect();
    left.sort_by_key(|&s| packets[s].id);
    let mut prev_id: Option<u64> = None;
    let mut cur: Option<(u64, usize)> = None; // (cookie, index in waiting[cookie])
    for s in left {
        let seg = &packets[s];
        let cookie = seg.hops[0].cookie;
        let continues = prev_id.is_some_and(|p| p.wrapping_add(1) == seg.id)
            && cur.is_some_and(|(c, _)| c == cookie);
        prev_id = Some(seg.id);
        let Some(list) = waiting.get_mut(&cookie) else {
            cur = None;
            continue;
        };
        let ts = seg.first_ts();
        // A waiting parent can still be cut at `ts` if no later parent of its
        // socket went out whole with its segments before then.
        let times = chained.get(&cookie).map_or(&[][..], |v| &v[..]);
        let open = |par: &Parent| {
            par.k == 0 && par.last_ts <= ts && {
                let after = times.partition_point(|&t| t <= par.first_ts);
                times.get(after).is_none_or(|&t| t > ts)
            }
        };
        let packets = &packets;
        let pick = match (seg.ip, cur) {
            // Fields of its own say whose segment it is (the oldest waiting
            // parent may be a packet a qdisc dropped). The latest parents
            // first: a qdisc cuts a packet soon after its LOCAL_OUT, and a
            // bounded look keeps this linear in the trace.
            (Some(own), _) => {
                let hi = list.partition_point(|par| par.first_ts <= ts);
                (hi.saturating_sub(256)..hi).rev().find(|&n| {
                    let par = &list[n];
                    par.remaining > 0
                        && par.last_ts <= ts
                        && packets[par.idx].ip.is_some_and(|pip| fits(par, &pip, &own))
                })
            }
            (None, Some((_, j))) if continues && list[j].remaining > 0 => Some(j),
            // The run goes on past its parent: the next waiting one after it.
            (None, Some((_, j))) if continues => (j + 1..list.len()).find(|&n| open(&list[n])),
            (None, _) => list.iter().position(open),
        };
        let Some(j) = pick else {
            cur = None;
            continue;
        };
        let par = &mut list[j];
        let Some(pip) = packets[par.idx].ip else {
            continue;
        };
        let Some((tot, pl)) = seg_payload(seg, header_len(&pip)) else {
            cur = None;
            continue;
        };
        let ip = match seg.ip {
            Some(own) if fits(par, &pip, &own) => take_own(par, &pip, &own, pl),
            Some(_) => {
                cur = None;
                continue;
            }
            None => take(par, &pip, tot, pl),
        };
        cur = Some((cookie, j));
        let pidx = par.idx;
        assigned.push((s, pidx, ip));
    }
    // Only the parents finished now: the others run again with more of their
    // segments in the window.
    for (s, pidx, ip) in assigned.into_iter().filter(|&(_, p, _)| p < commit) {
        let parent_id = packets[pidx].id;
        packets[pidx].gso_segments += 1;
        let parent_hops: Vec<Hop> = packets[pidx].hops.clone();
        let seg = &mut packets[s];
        seg.ip = Some(ip);
        seg.gso_parent = Some(parent_id);
        seg.inherited = parent_hops.len();
        seg.hops.splice(0..0, parent_hops);
    }
}

impl Kernel {
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

/// Remembers `cookie` for a flow direction; a socket whose process is known (it made
/// calls) wins over one that made none (a listener, a request socket).
fn learn(map: &mut HashMap<FlowKey, u64>, owners: &HashMap<u64, Owner>, key: FlowKey, cookie: u64) {
    let e = map.entry(key).or_insert(cookie);
    if !owners.contains_key(e) && owners.contains_key(&cookie) {
        *e = cookie;
    }
}

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

fn ip_fields(b: &[u8], f: &[Option<FieldDesc>]) -> Option<IpFields> {
    let n = |i: usize| num(b, &f[i]);
    let a = |i: usize| match f[i].as_ref().and_then(|d| decode_field(b, d)) {
        Some(Value::Addr(a)) => Some(a),
        _ => None,
    };
    Some(IpFields {
        version: n(0)? as u8,
        tos: n(1)? as u8,
        ttl: n(2)? as u8,
        protocol: n(3)? as u8,
        tot_len: n(4)? as u32,
        ip_id: n(5)? as u16,
        frag_off: n(6)? as u16,
        saddr: a(7)?,
        daddr: a(8)?,
        sport: n(9)? as u16,
        dport: n(10)? as u16,
        tcp_flags: n(11)? as u8,
        seq: n(12)? as u32,
        ack: n(13)? as u32,
    })
}
