//! Each packet's path through a trace: the events that carry its packet id, in
//! time order, with the time between them and the time it spent in the kernel
//! (first to last event), and its footprint — the IP header fields the thesis
//! uses to tie a kernel record to the same packet on the wire (IPv4 source,
//! destination, identification, protocol; IPv6 source, destination, next header)
//! plus the ports, TCP flags and sequence numbers.
//!
//! Function events, where a trace has them, are layer `func` kinds whose
//! `func` field names the function through a header enum table; they are steps
//! like any other and are also counted on their own.

use std::collections::HashMap;
use std::net::IpAddr;

use magnet_trace::{Event, Header, KindIndex, RecordRef};
use serde::Serialize;

/// The IP and transport fields that identify a packet on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Footprint {
    pub version: u8,
    pub saddr: IpAddr,
    pub daddr: IpAddr,
    /// IPv4 identification (0 for IPv6).
    pub ip_id: u16,
    /// IPv4 protocol or IPv6 next header.
    pub protocol: u8,
    pub sport: u16,
    pub dport: u16,
    pub tcp_flags: u8,
    pub seq: u32,
    pub ack: u32,
}

impl Footprint {
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

/// One event on a packet's path.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
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
    /// (task, function) of a function event, to find its return.
    #[serde(skip)]
    call: Option<(u64, u64)>,
}

/// A packet and the path it took.
#[derive(Clone, Debug, Serialize)]
pub struct PacketPath {
    pub pkt_id: u64,
    pub footprint: Option<Footprint>,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Time in the kernel: last event minus first.
    pub kernel_ns: u64,
    /// Function events among the steps.
    pub functions: usize,
    pub steps: Vec<Step>,
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

fn footprint(ev: &Event) -> Option<Footprint> {
    let u = |n: &str| ev.u64(n);
    let addr = |n: &str| match ev.get(n) {
        Some(magnet_trace::Value::Addr(a)) => Some(a),
        _ => None,
    };
    Some(Footprint {
        version: u("version")? as u8,
        saddr: addr("saddr")?,
        daddr: addr("daddr")?,
        ip_id: u("ip_id")? as u16,
        protocol: u("protocol")? as u8,
        sport: u("sport").unwrap_or(0) as u16,
        dport: u("dport").unwrap_or(0) as u16,
        tcp_flags: u("tcp_flags").unwrap_or(0) as u8,
        seq: u("seq").unwrap_or(0) as u32,
        ack: u("ack").unwrap_or(0) as u32,
    })
}

/// Collects packet paths from time-ordered records. Records without a packet
/// id (app, scheduler, socket announcements) are skipped.
pub struct Paths<'h> {
    index: KindIndex<'h>,
    open: HashMap<u64, usize>,
    paths: Vec<PacketPath>,
    /// Kernel functions named in the trace: (start, end, name), by start.
    funcs: Vec<(u64, u64, String)>,
    /// Function events of an skb that has no packet id yet (the sending path
    /// before LOCAL_OUT), by skb address: they join the packet the skb becomes.
    pending: HashMap<u64, Vec<Step>>,
    /// Entries not yet returned, by (task, function): their times, innermost last.
    calls: HashMap<(u64, u64), Vec<u64>>,
    /// Time in the function by (task, function, entry time).
    returned: HashMap<(u64, u64, u64), u64>,
}

/// Header tables written by `record --funcs`: function address -> name, and
/// function address -> the next symbol's address.
const FUNC_TABLE: &str = "kfunc";
const FUNC_END_TABLE: &str = "kfunc_end";

impl<'h> Paths<'h> {
    pub fn new(header: &'h Header) -> Self {
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
        Paths {
            index: KindIndex::new(&header.catalog),
            open: HashMap::new(),
            paths: Vec::new(),
            funcs,
            pending: HashMap::new(),
            calls: HashMap::new(),
            returned: HashMap::new(),
        }
    }

    /// The named function an address is in (a caller's return address).
    fn func_at(&self, addr: u64) -> Option<&str> {
        let i = self.funcs.partition_point(|(s, _, _)| *s <= addr);
        let (start, end, name) = self.funcs.get(i.checked_sub(1)?)?;
        (addr >= *start && addr < *end).then_some(name.as_str())
    }

    /// A function event: its function and caller by name.
    fn func_what(&self, ev: &Event) -> String {
        let f = ev.u64("func").unwrap_or(0);
        let name = self
            .func_at(f)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{f:#x}"));
        match ev.u64("caller") {
            Some(c) => match self.func_at(c) {
                Some(cn) => format!("{name} <- {cn}"),
                None => format!("{name} <- {c:#x}"),
            },
            None => name,
        }
    }

    /// Adds one record (records must come in time order).
    pub fn push(&mut self, rec: &RecordRef<'_>) {
        let Some(desc) = self.index.get(rec.kind()) else {
            return;
        };
        let ev = Event {
            bytes: rec.bytes,
            desc,
        };
        let ts = rec.ts_ns();
        // The kernel runs one function call on one task (the idle task: per CPU).
        let task = match rec.tid() {
            0 => (1 << 63) | u64::from(rec.cpu()),
            t => u64::from(t),
        };
        if desc.name == "func_exit" {
            let f = ev.u64("func").unwrap_or(0);
            if let Some(entry) = self.calls.get_mut(&(task, f)).and_then(Vec::pop) {
                self.returned
                    .insert((task, f, entry), ts.saturating_sub(entry));
            }
            return;
        }
        let is_func = desc.layer == "func";
        let call = is_func.then(|| (task, ev.u64("func").unwrap_or(0)));
        if let Some(c) = call {
            self.calls.entry(c).or_default().push(ts);
        }
        let skb = if is_func {
            ev.u64("skb").unwrap_or(0)
        } else {
            0
        };
        let id = ev.u64("pkt_id").unwrap_or(0);
        // A clone (TCP's transmit copy) takes its parent's earlier function
        // events: the parent never gets a packet id of its own.
        let parent = if is_func {
            ev.u64("parent").unwrap_or(0)
        } else {
            0
        };
        if parent != 0 && parent != skb && skb != 0 {
            if let Some(mut early) = self.pending.remove(&parent) {
                let mine = self.pending.entry(skb).or_default();
                early.append(mine);
                early.sort_by_key(|s| s.ts_ns);
                *mine = early;
            }
        }
        if id == 0 {
            if is_func && skb != 0 {
                let what = self.func_what(&ev);
                self.pending.entry(skb).or_default().push(Step {
                    ts_ns: ts,
                    delta_ns: 0,
                    kind: desc.name.clone(),
                    layer: desc.layer.clone(),
                    cpu: rec.cpu(),
                    what,
                    in_ns: None,
                    call,
                });
            }
            return;
        }
        let what = if is_func {
            self.func_what(&ev)
        } else if let Some(i) = ev.u64("ifindex") {
            format!("if{i}")
        } else {
            String::new()
        };
        let idx = *self.open.entry(id).or_insert_with(|| {
            self.paths.push(PacketPath {
                pkt_id: id,
                footprint: None,
                first_ns: ts,
                last_ns: ts,
                kernel_ns: 0,
                functions: 0,
                steps: Vec::new(),
            });
            self.paths.len() - 1
        });
        // The skb's function events from before it had an id come first.
        if let Some(mut early) = self.pending.remove(&skb).filter(|_| skb != 0) {
            let p = &mut self.paths[idx];
            early.retain(|s| s.ts_ns <= p.first_ns || p.steps.is_empty());
            p.functions += early.len();
            early.append(&mut p.steps);
            p.steps = early;
            p.first_ns = p.steps[0].ts_ns.min(p.first_ns);
            for i in 0..p.steps.len() {
                p.steps[i].delta_ns = if i == 0 {
                    0
                } else {
                    p.steps[i].ts_ns.saturating_sub(p.steps[i - 1].ts_ns)
                };
            }
            p.kernel_ns = p.last_ns - p.first_ns;
        }
        let p = &mut self.paths[idx];
        if p.footprint.is_none()
            && desc.field("ip_id").is_some()
            && ev.u64("version").is_some_and(|v| v != 0)
        {
            p.footprint = footprint(&ev);
        }
        let delta = ts.saturating_sub(p.last_ns);
        p.last_ns = p.last_ns.max(ts);
        p.kernel_ns = p.last_ns - p.first_ns;
        if is_func {
            p.functions += 1;
        }
        p.steps.push(Step {
            ts_ns: ts,
            delta_ns: if p.steps.is_empty() { 0 } else { delta },
            kind: desc.name.clone(),
            layer: desc.layer.clone(),
            cpu: rec.cpu(),
            what,
            in_ns: None,
            call,
        });
    }

    /// The paths, in order of each packet's first event.
    pub fn finish(mut self) -> Vec<PacketPath> {
        for p in &mut self.paths {
            for s in &mut p.steps {
                if let Some((task, f)) = s.call {
                    s.in_ns = self.returned.get(&(task, f, s.ts_ns)).copied();
                }
            }
        }
        self.paths
    }
}

/// One row of the thesis's Table 6-6.
#[derive(Clone, Debug, Serialize)]
pub struct HandshakeRow {
    /// `SYN`, `SYN-ACK` or `ACK`.
    pub role: &'static str,
    pub pkt_id: u64,
    pub footprint: Footprint,
    pub entry_ns: u64,
    pub exit_ns: u64,
    pub kernel_ns: u64,
    pub events: usize,
    pub functions: usize,
}

/// TCP three-way handshakes: a SYN, the SYN-ACK that acknowledges it and the
/// client's first pure ACK of the SYN-ACK, matched by addresses, ports and
/// sequence numbers.
pub fn handshakes(paths: &[PacketPath]) -> Vec<[HandshakeRow; 3]> {
    let tcp: Vec<(&PacketPath, &Footprint)> = paths
        .iter()
        .filter_map(|p| p.footprint.as_ref().filter(|f| f.is_tcp()).map(|f| (p, f)))
        .collect();
    let row = |role, p: &PacketPath, f: &Footprint| HandshakeRow {
        role,
        pkt_id: p.pkt_id,
        footprint: f.clone(),
        entry_ns: p.first_ns,
        exit_ns: p.last_ns,
        kernel_ns: p.kernel_ns,
        events: p.steps.len(),
        functions: p.functions,
    };
    let mut out = Vec::new();
    for (i, &(sp, s)) in tcp.iter().enumerate() {
        if s.tcp_flags & 0x12 != 0x02 {
            continue;
        }
        let reply = tcp[i + 1..].iter().find(|(_, f)| {
            f.tcp_flags & 0x12 == 0x12
                && f.saddr == s.daddr
                && f.daddr == s.saddr
                && f.sport == s.dport
                && f.dport == s.sport
                && f.ack == s.seq.wrapping_add(1)
        });
        let Some(&(ap, a)) = reply else { continue };
        let ack = tcp.iter().find(|(p, f)| {
            p.first_ns >= ap.first_ns
                && f.tcp_flags & 0x1f == 0x10
                && f.saddr == s.saddr
                && f.daddr == s.daddr
                && f.sport == s.sport
                && f.dport == s.dport
                && f.seq == s.seq.wrapping_add(1)
                && f.ack == a.seq.wrapping_add(1)
        });
        let Some(&(kp, k)) = ack else { continue };
        out.push([row("SYN", sp, s), row("SYN-ACK", ap, a), row("ACK", kp, k)]);
    }
    out
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
            footprint: Some(Footprint {
                version: 4,
                saddr: IpAddr::from(src),
                daddr: IpAddr::from(dst),
                ip_id: id as u16,
                protocol: 6,
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
        let mut r = TraceReader::new(&bytes[..]).unwrap();
        let header = r.header().clone();
        let mut paths = Paths::new(&header);
        while let Some(Ok(rec)) = r.next_record() {
            paths.push(&rec.view());
        }
        let out = paths.finish();
        assert_eq!(out.len(), 1);
        let p = &out[0];
        assert_eq!((p.pkt_id, p.functions), (7, 3));
        let got: Vec<(u64, Option<u64>)> = p.steps.iter().map(|s| (s.ts_ns, s.in_ns)).collect();
        assert_eq!(got, [(100, Some(600)), (200, Some(350)), (300, Some(100))]);
    }
}
