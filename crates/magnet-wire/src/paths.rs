//! `magnet packets`: each packet of the model ([`crate::kernel`]) as the path it
//! took, with the time between its steps and in the kernel (first to last), and
//! its footprint — the IP header fields that tie a kernel record to the same
//! packet on the wire (IPv4 source, destination, identification, protocol; IPv6
//! source, destination, next header) plus the ports, TCP flags and sequence
//! numbers.
//!
//! The packets are the model's: a reused packet id is two packets, a GSO segment
//! has its parent's fields (identification and sequence number advanced), so
//! `magnet packets`, `magnet match` and `magnet pcap` agree on which packet is
//! which. A segment's path shows its own steps (its parent's are the parent's).
//!
//! Function events, where a trace has them, are layer `func` kinds whose `func`
//! field names the function through a header enum table; they are steps like any
//! other and are also counted on their own; those of an skb from before it had a
//! packet id come first.

use std::net::IpAddr;

use magnet_trace::catalog::kind;
use magnet_trace::Header;
use serde::{Serialize, Serializer};

use crate::kernel::{IpFields, KPacket};

impl IpFields {
    pub fn is_tcp(&self) -> bool {
        self.protocol == 6
    }
    /// TCP flags as tcpdump writes them (`S`, `S.`, `.`, `P.`, `F.`, `R`).
    pub fn flags_text(&self) -> String {
        let f = self.tcp_flags;
        let mut s = String::new();
        for (bit, c) in [(0x02, 'S'), (0x01, 'F'), (0x04, 'R'), (0x08, 'P')] {
            if f & bit != 0 {
                s.push(c);
            }
        }
        if f & 0x10 != 0 {
            s.push('.');
        }
        s
    }
}

/// The footprint as `packets --json` writes it (docs/json.md).
#[derive(Serialize)]
struct FootprintJson {
    version: u8,
    saddr: IpAddr,
    daddr: IpAddr,
    ip_id: u16,
    protocol: u8,
    sport: u16,
    dport: u16,
    tcp_flags: u8,
    seq: u32,
    ack: u32,
}

fn footprint_json(ip: &IpFields) -> FootprintJson {
    FootprintJson {
        version: ip.version,
        saddr: ip.saddr,
        daddr: ip.daddr,
        ip_id: if ip.version == 4 { ip.ip_id } else { 0 },
        protocol: ip.protocol,
        sport: ip.sport,
        dport: ip.dport,
        tcp_flags: ip.tcp_flags,
        seq: ip.seq,
        ack: ip.ack,
    }
}

fn ser_fp<S: Serializer>(v: &Option<IpFields>, s: S) -> Result<S::Ok, S::Error> {
    v.as_ref().map(footprint_json).serialize(s)
}

fn ser_fp1<S: Serializer>(v: &IpFields, s: S) -> Result<S::Ok, S::Error> {
    footprint_json(v).serialize(s)
}

/// One event on a packet's path.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// Trace time (the recorder's monotonic clock).
    pub ts_ns: u64,
    /// Nanoseconds since the previous step of the same packet (0 for the first).
    pub delta_ns: u64,
    pub kind: String,
    pub layer: String,
    pub cpu: u16,
    /// The function's name for function events; the interface index for
    /// device events; empty otherwise.
    pub what: String,
    /// Time in the function, entry to return (function events of a trace
    /// recorded with `--func-exits` whose return was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_ns: Option<u64>,
}

/// A packet and the path it took.
#[derive(Clone, Debug, Serialize)]
pub struct PacketPath {
    pub pkt_id: u64,
    #[serde(serialize_with = "ser_fp")]
    pub footprint: Option<IpFields>,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Time in the kernel: last event minus first.
    pub kernel_ns: u64,
    /// Function events among the steps.
    pub functions: usize,
    pub steps: Vec<Step>,
    /// A GSO segment: its parent's packet id (its footprint was derived).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso_parent: Option<u64>,
}

/// Which packets to keep (all conditions must hold; `None` = any).
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub pkt: Option<u64>,
    pub src: Option<IpAddr>,
    pub dst: Option<IpAddr>,
    pub ip_id: Option<u16>,
    pub protocol: Option<u8>,
    /// Either port.
    pub port: Option<u16>,
}

impl Filter {
    fn footprint_filters(&self) -> bool {
        self.src.is_some()
            || self.dst.is_some()
            || self.ip_id.is_some()
            || self.protocol.is_some()
            || self.port.is_some()
    }

    pub fn keeps(&self, p: &PacketPath) -> bool {
        if self.pkt.is_some_and(|id| id != p.pkt_id) {
            return false;
        }
        if !self.footprint_filters() {
            return true;
        }
        let Some(f) = &p.footprint else {
            return false;
        };
        self.src.is_none_or(|a| a == f.saddr)
            && self.dst.is_none_or(|a| a == f.daddr)
            && self.ip_id.is_none_or(|i| i == f.ip_id)
            && self.protocol.is_none_or(|x| x == f.protocol)
            && self.port.is_none_or(|x| x == f.sport || x == f.dport)
    }
}

/// Header tables written by `record --funcs`: function address -> name, and
/// function address -> the next symbol's address.
const FUNC_TABLE: &str = "kfunc";
const FUNC_END_TABLE: &str = "kfunc_end";

/// Turns the model's packets into paths: names from the trace's header.
pub struct Paths {
    /// Kernel functions named in the trace: (start, end, name), by start.
    funcs: Vec<(u64, u64, String)>,
    /// By kind id: name, layer, whether it has an ifindex field.
    kinds: Vec<Option<(String, String, bool)>>,
    realtime: i128,
    monotonic: i128,
}

impl Paths {
    pub fn new(header: &Header) -> Self {
        let mut funcs: Vec<(u64, u64, String)> = Vec::new();
        if let Some(names) = header.enums.get(FUNC_TABLE) {
            let ends = header.enums.get(FUNC_END_TABLE);
            for (a, name) in names {
                let (Ok(start), Some(end)) = (
                    a.parse::<u64>(),
                    ends.and_then(|e| e.get(a))
                        .and_then(|e| e.parse::<u64>().ok()),
                ) else {
                    continue;
                };
                funcs.push((start, end, name.clone()));
            }
            funcs.sort();
        }
        let max = header
            .catalog
            .kinds
            .iter()
            .map(|d| d.id as usize)
            .max()
            .unwrap_or(0);
        let mut kinds = vec![None; max + 1];
        for d in &header.catalog.kinds {
            kinds[d.id as usize] = Some((
                d.name.clone(),
                d.layer.clone(),
                d.field("ifindex").is_some(),
            ));
        }
        Paths {
            funcs,
            kinds,
            realtime: header.clock.realtime_ns as i128,
            monotonic: header.clock.monotonic_ns as i128,
        }
    }

    /// The named function an address is in (a caller's return address).
    fn func_at(&self, addr: u64) -> Option<&str> {
        let i = self.funcs.partition_point(|(s, _, _)| *s <= addr);
        let (start, end, name) = self.funcs.get(i.checked_sub(1)?)?;
        (addr >= *start && addr < *end).then_some(name.as_str())
    }

    /// A function event: its function and caller by name.
    fn func_what(&self, f: u64, caller: Option<u64>) -> String {
        let name = self
            .func_at(f)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{f:#x}"));
        match caller {
            Some(c) => match self.func_at(c) {
                Some(cn) => format!("{name} <- {cn}"),
                None => format!("{name} <- {c:#x}"),
            },
            None => name,
        }
    }

    /// Trace time of a wall-clock time.
    fn mono(&self, wall: i64) -> u64 {
        (wall as i128 - self.realtime + self.monotonic).max(0) as u64
    }

    fn kind(&self, id: u16) -> (String, String, bool) {
        self.kinds
            .get(id as usize)
            .cloned()
            .flatten()
            .unwrap_or_else(|| (format!("kind{id}"), String::new(), false))
    }

    /// The path of one packet of the model.
    pub fn path(&self, p: &KPacket) -> PacketPath {
        let mut steps: Vec<Step> = Vec::with_capacity(p.hops.len() + p.frames.len());
        let step = |ts: i64, kd: u16, cpu: u16, what: String, in_ns: Option<u64>| {
            let (kind, layer, _) = self.kind(kd);
            Step {
                ts_ns: self.mono(ts),
                delta_ns: 0,
                kind,
                layer,
                cpu,
                what,
                in_ns,
            }
        };
        for h in &p.hops[p.inherited.min(p.hops.len())..] {
            let (_, layer, has_if) = self.kind(h.kind);
            if layer == "func" {
                continue; // from `funcs`, with their names
            }
            let what = if has_if {
                format!("if{}", h.ifindex)
            } else {
                String::new()
            };
            steps.push(step(h.ts_ns, h.kind, h.cpu, what, None));
        }
        for f in &p.frames {
            steps.push(step(
                f.ts_ns,
                kind::FRAME,
                f.cpu,
                format!("if{}", f.ifindex),
                None,
            ));
        }
        for s in &p.funcs {
            steps.push(step(
                s.ts_ns,
                s.kind,
                s.cpu,
                self.func_what(s.func, s.caller),
                s.in_ns,
            ));
        }
        steps.sort_by_key(|s| s.ts_ns);
        for i in 1..steps.len() {
            steps[i].delta_ns = steps[i].ts_ns.saturating_sub(steps[i - 1].ts_ns);
        }
        let first = steps.first().map_or(0, |s| s.ts_ns);
        let last = steps.last().map_or(0, |s| s.ts_ns);
        PacketPath {
            pkt_id: p.id,
            footprint: p.ip.filter(|ip| ip.version != 0),
            first_ns: first,
            last_ns: last,
            kernel_ns: last - first,
            functions: p.funcs.len(),
            steps,
            gso_parent: p.gso_parent,
        }
    }
}

/// One row of the thesis's Table 6-6.
#[derive(Clone, Debug, Serialize)]
pub struct HandshakeRow {
    /// `SYN`, `SYN-ACK` or `ACK`.
    pub role: &'static str,
    pub pkt_id: u64,
    #[serde(serialize_with = "ser_fp1")]
    pub footprint: IpFields,
    pub entry_ns: u64,
    pub exit_ns: u64,
    pub kernel_ns: u64,
    pub events: usize,
    pub functions: usize,
}

/// TCP three-way handshakes among packets in time order (`ip` gives each one's
/// fields, `ts` its time): the indices of a SYN, the SYN-ACK that acknowledges it
/// and the client's first pure ACK of the SYN-ACK, matched by addresses, ports and
/// sequence numbers. The one rule `magnet packets --handshake` and `magnet match`
/// use.
pub fn find_handshakes<T>(
    items: &[T],
    ip: impl Fn(&T) -> Option<IpFields>,
    ts: impl Fn(&T) -> i64,
) -> Vec<[usize; 3]> {
    let tcp: Vec<(usize, IpFields, i64)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, t)| Some((i, ip(t).filter(|f| f.is_tcp())?, ts(t))))
        .collect();
    let mut out = Vec::new();
    for (n, &(si, s, _)) in tcp.iter().enumerate() {
        if s.tcp_flags & 0x12 != 0x02 {
            continue;
        }
        let reply = tcp[n + 1..].iter().find(|(_, f, _)| {
            f.tcp_flags & 0x12 == 0x12
                && f.saddr == s.daddr
                && f.daddr == s.saddr
                && f.sport == s.dport
                && f.dport == s.sport
                && f.ack == s.seq.wrapping_add(1)
        });
        let Some(&(ai, a, at)) = reply else { continue };
        let ack = tcp.iter().find(|(_, f, t)| {
            *t >= at
                && f.tcp_flags & 0x1f == 0x10
                && f.saddr == s.saddr
                && f.daddr == s.daddr
                && f.sport == s.sport
                && f.dport == s.dport
                && f.seq == s.seq.wrapping_add(1)
                && f.ack == a.seq.wrapping_add(1)
        });
        let Some(&(ki, _, _)) = ack else { continue };
        out.push([si, ai, ki]);
    }
    out
}

/// What a streaming reader keeps for [`handshakes`]: SYNs, SYN-ACKs, and the pure
/// ACKs that answer a SYN-ACK kept before them (packets come in order of first
/// sighting). Memory is three packets per connection opened (and one per SYN
/// unanswered), not the trace's.
#[derive(Debug, Default)]
pub struct HandshakeFilter {
    /// (source, port, destination, port, seq, ack) of the ACK each SYN-ACK wants.
    want: std::collections::HashSet<(IpAddr, u16, IpAddr, u16, u32, u32)>,
}

impl HandshakeFilter {
    pub fn keeps(&mut self, p: &PacketPath) -> bool {
        let Some(f) = p.footprint.filter(|f| f.is_tcp()) else {
            return false;
        };
        if f.tcp_flags & 0x02 != 0 {
            if f.tcp_flags & 0x12 == 0x12 {
                self.want.insert((
                    f.daddr,
                    f.dport,
                    f.saddr,
                    f.sport,
                    f.ack,
                    f.seq.wrapping_add(1),
                ));
            }
            return true;
        }
        f.tcp_flags & 0x1f == 0x10
            && self
                .want
                .contains(&(f.saddr, f.sport, f.daddr, f.dport, f.seq, f.ack))
    }
}

/// [`find_handshakes`] over paths, as Table 6-6 rows.
pub fn handshakes(paths: &[PacketPath]) -> Vec<[HandshakeRow; 3]> {
    let row = |role, p: &PacketPath| HandshakeRow {
        role,
        pkt_id: p.pkt_id,
        footprint: p.footprint.expect("handshake packets have footprints"),
        entry_ns: p.first_ns,
        exit_ns: p.last_ns,
        kernel_ns: p.kernel_ns,
        events: p.steps.len(),
        functions: p.functions,
    };
    find_handshakes(paths, |p| p.footprint, |p| p.first_ns as i64)
        .into_iter()
        .map(|[s, a, k]| {
            [
                row("SYN", &paths[s]),
                row("SYN-ACK", &paths[a]),
                row("ACK", &paths[k]),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn pkt(
        id: u64,
        t: u64,
        src: [u8; 4],
        sp: u16,
        dst: [u8; 4],
        dp: u16,
        flags: u8,
        seq: u32,
        ack: u32,
    ) -> PacketPath {
        PacketPath {
            pkt_id: id,
            footprint: Some(IpFields {
                version: 4,
                tos: 0,
                ttl: 64,
                protocol: 6,
                tot_len: 52,
                ip_id: id as u16,
                frag_off: 0,
                saddr: IpAddr::from(src),
                daddr: IpAddr::from(dst),
                sport: sp,
                dport: dp,
                tcp_flags: flags,
                seq,
                ack,
            }),
            first_ns: t,
            last_ns: t + 10,
            kernel_ns: 10,
            functions: 0,
            steps: Vec::new(),
            gso_parent: None,
        }
    }

    #[test]
    fn handshakes_are_matched_by_sequence_numbers() {
        let c = [10, 0, 0, 1];
        let s = [10, 0, 0, 2];
        let paths = vec![
            pkt(1, 100, c, 5000, s, 80, 0x02, 1000, 0), // SYN, connection A
            pkt(2, 110, c, 5001, s, 80, 0x02, 7000, 0), // SYN, connection B
            pkt(3, 120, s, 80, c, 5001, 0x12, 9000, 7001), // SYN-ACK of B
            pkt(4, 130, c, 5000, s, 80, 0x02, 1000, 0), // SYN of A again (retransmitted)
            pkt(5, 140, s, 80, c, 5000, 0x12, 3000, 1001), // SYN-ACK of A
            pkt(6, 150, c, 5001, s, 80, 0x10, 7001, 9001), // ACK of B
            pkt(7, 160, c, 5000, s, 80, 0x18, 1001, 3001), // data of A (PSH): not the ACK
            pkt(8, 170, c, 5000, s, 80, 0x10, 1001, 3001), // ACK of A
        ];
        let hs = handshakes(&paths);
        let ids: Vec<[u64; 3]> = hs.iter().map(|h| h.each_ref().map(|r| r.pkt_id)).collect();
        // A's first SYN and its retransmission both pair with A's SYN-ACK.
        assert_eq!(ids, [[1, 5, 8], [2, 3, 6], [4, 5, 8]]);
        // What a streaming reader keeps is enough: the data packet is not kept and
        // the answer is the same.
        let mut keep = HandshakeFilter::default();
        let kept: Vec<PacketPath> = paths.into_iter().filter(|p| keep.keeps(p)).collect();
        // The data packet goes; so would an ACK that answers no SYN-ACK.
        assert_eq!(kept.len(), 7);
        let again: Vec<[u64; 3]> = handshakes(&kept)
            .iter()
            .map(|h| h.each_ref().map(|r| r.pkt_id))
            .collect();
        assert_eq!(again, ids);
    }

    #[test]
    fn filters() {
        let p = pkt(7, 0, [1, 1, 1, 1], 10, [2, 2, 2, 2], 20, 0x10, 0, 0);
        let f = |f: Filter| f.keeps(&p);
        assert!(f(Filter::default()));
        assert!(f(Filter {
            pkt: Some(7),
            ..Default::default()
        }));
        assert!(!f(Filter {
            pkt: Some(8),
            ..Default::default()
        }));
        assert!(f(Filter {
            port: Some(20),
            ip_id: Some(7),
            ..Default::default()
        }));
        assert!(!f(Filter {
            src: Some(IpAddr::from([2, 2, 2, 2])),
            ..Default::default()
        }));
        let mut nofp = p.clone();
        nofp.footprint = None;
        assert!(!Filter {
            protocol: Some(6),
            ..Default::default()
        }
        .keeps(&nofp));
        assert!(Filter::default().keeps(&nofp));
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;
    use crate::kernel::{Assembler, Window};
    use magnet_trace::emit::{synthetic_trace, Emitter};
    use magnet_trace::{kind, TraceReader};

    /// A parent skb's entry (no packet id) joins the packet its clone becomes,
    /// and each return gives its entry the time inside; a return with no
    /// recorded entry on its task is ignored.
    #[test]
    fn clone_joins_parent_and_returns_time_each_function() {
        let e = Emitter::builtin();
        let enter = |ts, func, skb, parent, id| {
            e.record(kind::FUNC, ts)
                .tid(5)
                .set("func", func)
                .set("skb", skb)
                .set("parent", parent)
                .set("pkt_id", id)
                .into_bytes()
        };
        let ret = |ts, tid, func| {
            e.record(kind::FUNC_EXIT, ts)
                .tid(tid)
                .set("func", func)
                .into_bytes()
        };
        let recs = vec![
            enter(100, 0x10, 0x100, 0, 0),     // __tcp_transmit_skb(parent)
            enter(200, 0x20, 0x200, 0x100, 0), // ip_queue_xmit(clone), no id yet
            enter(300, 0x30, 0x200, 0x100, 7), // ip_output(clone), packet 7
            ret(350, 6, 0x30),                 // another task: not this call's
            ret(400, 5, 0x30),
            ret(550, 5, 0x20),
            ret(700, 5, 0x10),
        ];
        let bytes = synthetic_trace(1_000, recs, Some(&magnet_trace::Footer::default()));
        for window in [Window::WHOLE, Window::DEFAULT] {
            let mut r = TraceReader::new(&bytes[..]).unwrap();
            let header = r.header().clone();
            let mut a = Assembler::new(&header, window, false);
            while let Some(Ok(rec)) = r.next_record() {
                a.push(&rec.view());
            }
            a.finish();
            let paths = Paths::new(&header);
            let out: Vec<PacketPath> = std::iter::from_fn(|| a.pop())
                .map(|p| paths.path(&p))
                .collect();
            assert_eq!(out.len(), 1);
            let p = &out[0];
            assert_eq!((p.pkt_id, p.functions), (7, 3));
            let got: Vec<(u64, Option<u64>)> = p.steps.iter().map(|s| (s.ts_ns, s.in_ns)).collect();
            assert_eq!(got, [(100, Some(600)), (200, Some(350)), (300, Some(100))]);
        }
    }
}
