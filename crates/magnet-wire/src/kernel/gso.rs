//! GSO segments and the packet they were cut from.

use std::collections::HashMap;

use magnet_trace::catalog::kind;

use super::{FlowKey, Hop, IpFields, KPacket};

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
pub(super) fn assign_gso_segments(
    packets: &mut [KPacket],
    thl: &HashMap<FlowKey, u32>,
    commit: usize,
) {
    let segments = segments_by_id(packets);
    if segments.is_empty() {
        return;
    }
    let mut g = Gso {
        packets,
        thl,
        claimed: vec![false; packets.len()],
        segments,
        assigned: Vec::new(),
        waiting: HashMap::new(),
        chained: HashMap::new(),
    };
    for i in 0..packets.len() {
        g.follow_chain(i);
    }
    g.place_left_over();
    let assigned = g.assigned;
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

/// Segments by id: packets first seen on the transmit side below the IP layer,
/// with a socket (IP fields, if any, come from a later hop: their receive).
fn segments_by_id(packets: &[KPacket]) -> HashMap<u64, usize> {
    let mut seg_by_id = HashMap::new();
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
    seg_by_id
}

/// The IP and TCP header length of a packet of `ip`'s connection.
fn header_len(thl: &HashMap<FlowKey, u32>, ip: &IpFields) -> i64 {
    let ihl = if ip.version == 6 { 40 } else { 20 };
    ihl + thl
        .get(&(ip.saddr, ip.sport, ip.daddr, ip.dport))
        .copied()
        .unwrap_or(20) as i64
}

/// The total length and the payload of a segment (its device length includes
/// the 14-byte Ethernet header), or None when it carries none.
fn seg_payload(p: &KPacket, hl: i64) -> Option<(u32, i64)> {
    let tot = match p.ip {
        Some(ip) => ip.tot_len,
        None => p.hops.iter().find(|h| h.len > 0)?.len.saturating_sub(14),
    };
    let pl = tot as i64 - hl;
    (pl > 0).then_some((tot, pl))
}

/// A packet whose segments are being looked for.
struct Parent {
    idx: usize,
    first_ts: i64,
    /// Payload not yet in a segment.
    remaining: i64,
    next_seq: u32,
    /// Segments taken.
    k: u32,
    last_ts: i64,
}

impl Parent {
    /// A segment with fields of its own (its receive was recorded) belongs to
    /// the parent (fields `pip`) only if they say so: same connection and
    /// acknowledgement, IPv4 identification the parent's + k, sequence number
    /// inside the parent's.
    fn fits(&self, pip: &IpFields, own: &IpFields) -> bool {
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
        ) && (pip.version == 6 || own.ip_id == pip.ip_id.wrapping_add(self.k as u16))
            && own.seq.wrapping_sub(pip.seq) < pip.tot_len
    }

    /// Takes a segment with fields of its own: it keeps them, and tells where
    /// the parent's payload stands without the header length: its end is the
    /// parent's when seq + tot_len (header lengths equal) reaches the parent's
    /// seq + tot_len.
    fn take_own(&mut self, pip: &IpFields, own: &IpFields, payload: i64) -> IpFields {
        self.k += 1;
        self.next_seq = own.seq.wrapping_add(payload as u32);
        let end = pip.seq.wrapping_add(pip.tot_len);
        self.remaining = end.wrapping_sub(own.seq.wrapping_add(own.tot_len)) as i32 as i64;
        *own
    }

    /// Takes a segment without fields: its fields derived from the parent's.
    fn take(&mut self, pip: &IpFields, seg_tot: u32, payload: i64) -> IpFields {
        let last = self.remaining - payload <= 0;
        let ip = IpFields {
            tot_len: seg_tot,
            ip_id: pip.ip_id.wrapping_add(self.k as u16),
            seq: self.next_seq,
            tcp_flags: if last {
                pip.tcp_flags
            } else {
                pip.tcp_flags & !0x09
            },
            ..*pip
        };
        self.k += 1;
        self.next_seq = self.next_seq.wrapping_add(payload as u32);
        self.remaining -= payload;
        ip
    }

    /// Takes segment `seg` (payload `pl`, total length `tot`): its fields, or
    /// None when it has fields of its own that are not this parent's.
    fn take_segment(
        &mut self,
        pip: &IpFields,
        seg: &KPacket,
        tot: u32,
        pl: i64,
    ) -> Option<IpFields> {
        match seg.ip {
            Some(own) if self.fits(pip, &own) => Some(self.take_own(pip, &own, pl)),
            Some(_) => None,
            None => Some(self.take(pip, tot, pl)),
        }
    }
}

/// The state the two passes share.
struct Gso<'a> {
    packets: &'a [KPacket],
    thl: &'a HashMap<FlowKey, u32>,
    segments: HashMap<u64, usize>,
    claimed: Vec<bool>,
    /// (segment, parent, the segment's fields)
    assigned: Vec<(usize, usize, IpFields)>,
    /// Parents that found no segment following their id, per socket.
    waiting: HashMap<u64, Vec<Parent>>,
    /// First times of the parents that found their chain, per socket (ascending).
    chained: HashMap<u64, Vec<i64>>,
}

impl Gso<'_> {
    /// Pass 1: packet `i`, if it is a parent (TCP with payload, out through
    /// LOCAL_OUT with a socket, never seen by a driver itself), takes the
    /// segments whose ids follow its own.
    fn follow_chain(&mut self, i: usize) {
        let p = &self.packets[i];
        let Some(pip) = p.ip.filter(|ip| ip.protocol == 6) else {
            return;
        };
        let out = p.hops.iter().any(|h| h.kind == kind::IP_LOCAL_OUT);
        let xmit = p.hops.iter().any(|h| h.kind == kind::DEV_START_XMIT);
        let cookie = p.sender_cookie();
        if !out || xmit || cookie == 0 {
            return;
        }
        let hl = header_len(self.thl, &pip);
        let payload = pip.tot_len as i64 - hl;
        if payload <= 0 {
            return;
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
            let Some(&s) = self.segments.get(&id) else {
                break;
            };
            let seg = &self.packets[s];
            if self.claimed[s] || seg.hops[0].cookie != cookie || seg.first_ts() < p.first_ts() {
                break;
            }
            let Some((tot, pl)) = seg_payload(seg, hl) else {
                break;
            };
            let Some(ip) = par.take_segment(&pip, seg, tot, pl) else {
                break;
            };
            self.claimed[s] = true;
            self.assigned.push((s, i, ip));
        }
        if par.k == 0 {
            self.waiting.entry(cookie).or_default().push(par);
        } else {
            self.chained.entry(cookie).or_default().push(p.first_ts());
        }
    }

    /// Pass 2: runs of consecutive ids nobody claimed, to the latest earlier
    /// parent of their socket that has no segments.
    fn place_left_over(&mut self) {
        let mut left: Vec<usize> = self
            .segments
            .values()
            .copied()
            .filter(|&s| !self.claimed[s])
            .collect();
        left.sort_by_key(|&s| self.packets[s].id);
        let mut prev_id: Option<u64> = None;
        let mut cur: Option<(u64, usize)> = None; // (cookie, index in waiting[cookie])
        for s in left {
            let seg = &self.packets[s];
            let cookie = seg.hops[0].cookie;
            let continues = prev_id.is_some_and(|p| p.wrapping_add(1) == seg.id)
                && cur.is_some_and(|(c, _)| c == cookie);
            prev_id = Some(seg.id);
            let run = cur.filter(|_| continues).map(|(_, j)| j);
            cur = self.place(s, cookie, run, cur);
        }
    }

    /// Gives left-over segment `s` of socket `cookie` to a waiting parent (the
    /// run's, `run`, when it continues one); the run it is in now (`cur` when
    /// its parent has no fields).
    fn place(
        &mut self,
        s: usize,
        cookie: u64,
        run: Option<usize>,
        cur: Option<(u64, usize)>,
    ) -> Option<(u64, usize)> {
        let packets = self.packets;
        let seg = &packets[s];
        let list = self.waiting.get_mut(&cookie)?;
        let times = self.chained.get(&cookie).map_or(&[][..], |v| &v[..]);
        let j = pick_waiting(list, packets, times, seg, run)?;
        let par = &mut list[j];
        let Some(pip) = packets[par.idx].ip else {
            return cur;
        };
        let (tot, pl) = seg_payload(seg, header_len(self.thl, &pip))?;
        let ip = par.take_segment(&pip, seg, tot, pl)?;
        self.assigned.push((s, par.idx, ip));
        Some((cookie, j))
    }
}

/// Which of its socket's waiting parents (`list`) takes left-over segment
/// `seg`: the one whose run it continues (`run`), else the next one that can
/// still be cut at the segment's time. `times`: the first times of the
/// socket's parents that went out whole with their segments.
fn pick_waiting(
    list: &[Parent],
    packets: &[KPacket],
    times: &[i64],
    seg: &KPacket,
    run: Option<usize>,
) -> Option<usize> {
    let ts = seg.first_ts();
    // A waiting parent can still be cut at `ts` if no later parent of its
    // socket went out whole with its segments before then.
    let open = |par: &Parent| {
        par.k == 0 && par.last_ts <= ts && {
            let after = times.partition_point(|&t| t <= par.first_ts);
            times.get(after).is_none_or(|&t| t > ts)
        }
    };
    match (seg.ip, run) {
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
                    && packets[par.idx].ip.is_some_and(|pip| par.fits(&pip, &own))
            })
        }
        (None, Some(j)) if list[j].remaining > 0 => Some(j),
        // The run goes on past its parent: the next waiting one after it.
        (None, Some(j)) => (j + 1..list.len()).find(|&n| open(&list[n])),
        (None, None) => list.iter().position(open),
    }
}
