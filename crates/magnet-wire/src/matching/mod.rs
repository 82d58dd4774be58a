//! Packet association: each frame of a capture taken anywhere, tied to the kernel's
//! record of the same packet (the thesis's KBL ↔ PBL association, chapter 5.3).
//!
//! 1. Footprints ([`crate::footprint`]) index the trace's packets.
//! 2. Frames whose footprint names exactly one kernel packet give the clock offset:
//!    the median of (frame time − the packet's nearest hop), refined once with the hop
//!    nearest to the first estimate (that hop is where the capture sits); drift is the
//!    least-squares slope of those differences over time, in parts per million.
//! 3. Every frame then takes, among the packets with its footprint, the one whose hop
//!    is nearest to the frame's corrected time (time only breaks ties). ARP frames,
//!    which have no footprint, take the nearest ARP packet within 1 ms.
//! 4. What stays unmatched says why: no footprint, inside a LOST region, flow traced
//!    but not this packet, not traced at all; and on the trace side, for packets that
//!    crossed the interfaces the capture sits on: dropped (with the kernel's reason),
//!    lost, or not in the capture.
//!
//! Step 2 is `clock`; step 3's rule is `pick_packet`'s, shared with the streamed
//! matcher ([`crate::match_stream`]) over `Candidates`.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::footprint::{parse_frame, Footprint, Frame};
use magnet_trace::catalog::kind;

use crate::kernel::{KPacket, Kernel};

mod clock;

pub(crate) use clock::{calibrate, CalPacket, Calib};

/// How far (ns, after the offset) an ARP frame may be from the kernel's ARP packet.
pub const ARP_WINDOW_NS: i64 = 1_000_000;

/// One captured frame as matching saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameMatch {
    /// 1-based frame number in the capture.
    pub frame: u64,
    pub ts_ns: i64,
    #[serde(skip)]
    pub kind: Frame,
    /// Index into `Kernel::packets`.
    #[serde(skip)]
    pub packet: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pkt_id: Option<u64>,
    /// Frame time minus offset minus the matched packet's nearest hop time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual_ns: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl FrameMatch {
    /// Frame `frame` (1-based) at capture time `ts_ns`, not matched yet.
    pub(crate) fn new(frame: u64, ts_ns: i64, kind: Frame) -> FrameMatch {
        FrameMatch {
            frame,
            ts_ns,
            kind,
            packet: None,
            pkt_id: None,
            residual_ns: None,
            reason: None,
        }
    }
}

/// Totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub frames: u64,
    pub matched: u64,
    pub matched_pct: f64,
    pub ipv4_frames: u64,
    pub ipv4_matched: u64,
    pub ipv4_matched_pct: f64,
    pub ipv6_frames: u64,
    pub ipv6_matched: u64,
    pub arp_frames: u64,
    pub arp_matched: u64,
    pub unmatched: BTreeMap<String, u64>,
    /// Capture time minus trace time (ns), and its drift.
    pub offset_ns: i64,
    pub drift_ppm: f64,
    /// Frames with a unique footprint the offset was estimated from.
    pub offset_samples: u64,
    /// Interfaces (ifindex) the capture appears to sit on.
    pub capture_ifindexes: Vec<u32>,
    /// Kernel packets that crossed those interfaces, and how many of them matched.
    pub kernel_packets: u64,
    pub kernel_matched: u64,
    pub kernel_matched_pct: f64,
    pub kernel_unmatched: BTreeMap<String, u64>,
}

/// The result of associating a capture with a trace.
#[derive(Debug, Clone, Default)]
pub struct Association {
    pub frames: Vec<FrameMatch>,
    pub summary: Summary,
    /// Kernel packets on the capture's interfaces that no frame matched, with why.
    pub kernel_unmatched: Vec<(usize, String)>,
}

/// The hop of `p` nearest to `t`.
pub(crate) fn nearest_hop(p: &KPacket, t: i64) -> Option<(usize, i64)> {
    p.hops
        .iter()
        .enumerate()
        .map(|(i, h)| (i, h.ts_ns))
        .min_by_key(|&(_, ts)| (ts - t).abs())
}

impl Summary {
    /// A summary with the clock `cal` and nothing counted yet.
    pub(crate) fn of_clock(cal: &Calib) -> Summary {
        Summary {
            offset_ns: cal.offset,
            drift_ppm: cal.drift_ppm(),
            offset_samples: cal.samples,
            ..Default::default()
        }
    }

    /// Counts a kernel packet that matched no frame, by `why`'s category.
    pub(crate) fn count_kernel_unmatched(&mut self, why: &str) {
        *self.kernel_unmatched.entry(short(why)).or_default() += 1;
    }

    /// After the kernel side: its percentage, and the capture's interfaces.
    pub(crate) fn close_kernel(&mut self, ifs: Vec<u32>) {
        self.kernel_matched_pct = pct(self.kernel_matched, self.kernel_packets);
        self.capture_ifindexes = ifs;
    }

    /// Counts an IP frame by family.
    pub(crate) fn count_ip(&mut self, fp: &Footprint) {
        if fp.src.is_ipv4() {
            self.ipv4_frames += 1;
        } else {
            self.ipv6_frames += 1;
        }
    }

    /// Shapes frame `m`'s report at trace time `t` (the frame's time after the
    /// clock) and counts it: matched to packet `i` (its index in the trace's
    /// packets) — residual to its reference hop, whose interface `at_if` counts
    /// — or unmatched for `m.reason`.
    pub(crate) fn tally(
        &mut self,
        m: &mut FrameMatch,
        matched: Option<(usize, &KPacket)>,
        cal: &Calib,
        t: i64,
        at_if: &mut HashMap<u32, u64>,
    ) {
        let Some((i, p)) = matched else {
            if let Some(r) = &m.reason {
                *self.unmatched.entry(short(r)).or_default() += 1;
            }
            return;
        };
        m.packet = Some(i);
        m.pkt_id = Some(p.id);
        if let Some((hi, h)) = cal.ref_hop(p, t) {
            m.residual_ns = Some(t - h);
            *at_if.entry(p.hops[hi].ifindex).or_default() += 1;
        }
        self.matched += 1;
        match m.kind {
            Frame::Ip { fp, .. } if fp.src.is_ipv4() => self.ipv4_matched += 1,
            Frame::Ip { .. } => self.ipv6_matched += 1,
            Frame::Arp => self.arp_matched += 1,
            Frame::Other(_) | Frame::Link(_) => {}
        }
    }

    /// After the last frame: the percentages, and the capture's interfaces (where at
    /// least a tenth of the matches had their reference hop), sorted.
    pub(crate) fn close_frames(&mut self, at_if: &HashMap<u32, u64>) -> Vec<u32> {
        self.matched_pct = pct(self.matched, self.frames);
        self.ipv4_matched_pct = pct(self.ipv4_matched, self.ipv4_frames);
        let total: u64 = at_if.values().sum();
        let mut ifs: Vec<u32> = at_if
            .iter()
            .filter(|&(&i, &c)| i != 0 && c * 10 >= total)
            .map(|(&i, _)| i)
            .collect();
        ifs.sort_unstable();
        ifs
    }
}

/// Why an IP frame at trace time `t` has no kernel packet: inside a LOST region, a
/// traced flow (one of `flows`) without this packet, or a flow not traced.
pub(crate) fn ip_unmatched(
    k: &Kernel,
    flows: &HashSet<Footprint>,
    fp: &Footprint,
    t: i64,
) -> String {
    if let Some(l) = k.lost_at(t) {
        format!("lost: inside a LOST region ({} events)", l.count)
    } else if flows.contains(&flow(fp)) {
        "flow traced, packet not: no kernel packet has this footprint (segmented by GSO/TSO, or not recorded)".into()
    } else {
        "not traced: no traced socket has this flow (filters, or another namespace)".into()
    }
}

pub(crate) fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        (a as f64 * 100_000.0 / b as f64).round() / 1000.0
    }
}

/// Associates `frames` (number, capture time in ns, link type, bytes) with `k`.
pub fn associate(k: &Kernel, captured: Vec<(u64, i64, u32, Vec<u8>)>) -> Association {
    let frames: Vec<(u64, i64, Frame)> = captured
        .into_iter()
        .map(|(n, ts, lt, d)| (n, ts, parse_frame(lt, &d)))
        .collect();
    associate_parsed(k, frames)
}

/// [`associate`] on frames already parsed.
pub fn associate_parsed(k: &Kernel, frames: Vec<(u64, i64, Frame)>) -> Association {
    let mut trace = TraceIndex::of(k);
    let cal = trace.calibrate(&frames);
    let mut s = Summary::of_clock(&cal);
    let mut out = Vec::with_capacity(frames.len());
    let mut at_if: HashMap<u32, u64> = HashMap::new();
    for (n, ts, f) in frames {
        let t = cal.corr(ts);
        let mut m = FrameMatch::new(n, ts, f);
        let cand = pick_packet(&trace, k, &trace.flows, &cal, &mut s, &mut m, t);
        if let Some(i) = cand {
            trace.used[i] = true;
        }
        s.tally(
            &mut m,
            cand.map(|i| (i, &k.packets[i])),
            &cal,
            t,
            &mut at_if,
        );
        out.push(m);
    }
    let ifs = s.close_frames(&at_if);
    let kernel_unmatched = trace.unmatched_on(&ifs, &mut s);
    s.close_kernel(ifs);
    Association {
        frames: out,
        summary: s,
        kernel_unmatched,
    }
}

/// The whole trace's packets indexed for matching, and which are taken.
struct TraceIndex<'k> {
    k: &'k Kernel,
    /// One packet per footprint in the common case; the rare repeats (SYN-ACKs
    /// with identification 0, retransmissions) in a second map.
    index: HashMap<Footprint, usize>,
    repeats: HashMap<Footprint, Vec<usize>>,
    flows: HashSet<Footprint>,
    /// ARP packets, in order of first sighting.
    arp: Vec<usize>,
    used: Vec<bool>,
}

impl<'k> TraceIndex<'k> {
    fn of(k: &'k Kernel) -> TraceIndex<'k> {
        let mut index: HashMap<Footprint, usize> = HashMap::with_capacity(k.packets.len());
        let mut repeats: HashMap<Footprint, Vec<usize>> = HashMap::new();
        let mut flows: HashSet<Footprint> = HashSet::new();
        let mut arp: Vec<usize> = Vec::new();
        for (i, p) in k.packets.iter().enumerate() {
            match p.ip {
                // A GSO packet is on the wire as its segments, which carry its fields.
                Some(_) if p.gso_segments > 0 => {}
                Some(ip) => {
                    let fp = Footprint::from_kernel(&ip);
                    match index.entry(fp) {
                        std::collections::hash_map::Entry::Vacant(v) => {
                            v.insert(i);
                        }
                        std::collections::hash_map::Entry::Occupied(o) => {
                            repeats.entry(fp).or_insert_with(|| vec![*o.get()]).push(i);
                        }
                    }
                    flows.insert(flow(&fp));
                }
                None if p.ethertype == 0x0806 => arp.push(i),
                None => {}
            }
        }
        TraceIndex {
            k,
            index,
            repeats,
            flows,
            arp,
            used: vec![false; k.packets.len()],
        }
    }

    fn candidates(&self, fp: &Footprint) -> &[usize] {
        match self.repeats.get(fp) {
            Some(v) => v,
            None => self.index.get(fp).map(std::slice::from_ref).unwrap_or(&[]),
        }
    }

    /// The clock, from the frames whose footprint names one packet.
    fn calibrate(&self, frames: &[(u64, i64, Frame)]) -> Calib {
        let unique_packet = |f: &Frame| match f {
            Frame::Ip { fp, .. } => match self.candidates(fp) {
                [one] => Some(*one),
                _ => None,
            },
            _ => None,
        };
        let cal_packets: HashMap<usize, CalPacket> = frames
            .iter()
            .filter_map(|(_, _, f)| unique_packet(f))
            .map(|one| (one, CalPacket::of(&self.k.packets[one])))
            .collect();
        let unique: Vec<(i64, &CalPacket)> = frames
            .iter()
            .filter_map(|(_, ts, f)| Some((*ts, &cal_packets[&unique_packet(f)?])))
            .collect();
        calibrate(&unique)
    }

    /// The packets that crossed interfaces `ifs` (the capture's), counted in
    /// `s`; those no frame took, with why.
    fn unmatched_on(&self, ifs: &[u32], s: &mut Summary) -> Vec<(usize, String)> {
        let k = self.k;
        let mut unmatched = Vec::new();
        for (i, p) in k.packets.iter().enumerate() {
            let Some(h) = p.hops.iter().find(|h| {
                ifs.contains(&h.ifindex) && matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
            }) else {
                continue;
            };
            s.kernel_packets += 1;
            if self.used[i] {
                s.kernel_matched += 1;
                continue;
            }
            let lost = k.lost_at(h.ts_ns).map(|l| l.count);
            let why = kernel_unmatched_reason(p.drop.as_deref(), lost, p.ip.is_some(), p.ethertype);
            s.count_kernel_unmatched(&why);
            unmatched.push((i, why));
        }
        unmatched
    }
}

impl Candidates for TraceIndex<'_> {
    type Id = usize;
    fn packet(&self, i: usize) -> &KPacket {
        &self.k.packets[i]
    }
    fn used(&self, i: usize) -> bool {
        self.used[i]
    }
    fn with_footprint(&self, fp: &Footprint) -> impl Iterator<Item = usize> + '_ {
        self.candidates(fp).iter().copied()
    }
    fn arp_between(&self, lo: i64, hi: i64) -> impl Iterator<Item = usize> + '_ {
        let packets = &self.k.packets;
        let from = self.arp.partition_point(|&i| packets[i].first_ts() < lo);
        self.arp[from..]
            .iter()
            .copied()
            .take_while(move |&i| packets[i].first_ts() <= hi)
    }
}

/// The packets a frame may be matched to: the whole trace's
/// ([`associate_parsed`]) or the streamed pool's.
pub(crate) trait Candidates {
    /// A packet's number (its index in the trace, or in the stream).
    type Id: Copy + Ord;
    fn packet(&self, i: Self::Id) -> &KPacket;
    /// Taken by a frame already.
    fn used(&self, i: Self::Id) -> bool;
    /// The packets with footprint `fp`.
    fn with_footprint(&self, fp: &Footprint) -> impl Iterator<Item = Self::Id> + '_;
    /// The ARP packets first seen from `lo` to `hi` (inclusive), in order of
    /// first sighting.
    fn arp_between(&self, lo: i64, hi: i64) -> impl Iterator<Item = Self::Id> + '_;
}

/// Counts frame `m` (at trace time `t`) in `s` and picks its packet among `c`:
/// of those with its footprint, the one whose reference hop is nearest, unused
/// ones first; an ARP frame, the unused ARP packet nearest within
/// [`ARP_WINDOW_NS`]. An unmatched frame gets its reason (`flows`: the trace's).
pub(crate) fn pick_packet<C: Candidates>(
    c: &C,
    k: &Kernel,
    flows: &HashSet<Footprint>,
    cal: &Calib,
    s: &mut Summary,
    m: &mut FrameMatch,
    t: i64,
) -> Option<C::Id> {
    s.frames += 1;
    match m.kind {
        Frame::Ip { fp, .. } => {
            s.count_ip(&fp);
            let best = c
                .with_footprint(&fp)
                .filter_map(|i| Some((c.used(i), (cal.ref_hop(c.packet(i), t)?.1 - t).abs(), i)))
                .min();
            if best.is_none() {
                m.reason = Some(ip_unmatched(k, flows, &fp, t));
            }
            best.map(|(_, _, i)| i)
        }
        Frame::Arp => {
            s.arp_frames += 1;
            let best = c
                .arp_between(t - ARP_WINDOW_NS, t + ARP_WINDOW_NS)
                .filter(|&i| !c.used(i))
                .min_by_key(|&i| nearest_hop(c.packet(i), t).map_or(i64::MAX, |h| (h.1 - t).abs()));
            if best.is_none() {
                m.reason = Some("ARP: no kernel ARP packet within 1 ms (ARP has no socket: traced only with --all)".into());
            }
            best
        }
        Frame::Other(et) => {
            m.reason = Some(format!("no footprint (ethertype {et:#06x})"));
            None
        }
        Frame::Link(lt) => {
            m.reason = Some(format!("link type {lt} not decoded"));
            None
        }
    }
}

/// Why a kernel packet on the capture's interfaces matched no frame: dropped
/// (`drop`: the kernel's reason), inside a LOST region (`lost`: its count, at
/// the packet's first sighting there), no footprint, or not in the capture.
pub(crate) fn kernel_unmatched_reason(
    drop: Option<&str>,
    lost: Option<u64>,
    has_ip: bool,
    ethertype: u16,
) -> String {
    if let Some(d) = drop {
        format!("dropped: {d}")
    } else if let Some(c) = lost {
        format!("lost: inside a LOST region ({c} events)")
    } else if !has_ip {
        format!("no footprint (ethertype {ethertype:#06x})")
    } else {
        "not in the capture (capture filter, snap/drop in the capture, or outside its time span)"
            .into()
    }
}

/// The reason's category (text before the first colon).
pub(crate) fn short(r: &str) -> String {
    r.split(':').next().unwrap_or(r).trim().to_string()
}

pub(crate) fn flow(fp: &Footprint) -> Footprint {
    Footprint {
        ip_id: 0,
        seq: 0,
        ack: 0,
        ..*fp
    }
}

/// One column of the thesis's Table 6-6: a handshake packet in the capture and in
/// the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandshakeRow {
    /// `SYN`, `SYN-ACK` or `ACK`.
    pub packet: &'static str,
    pub frame: u64,
    pub pkt_id: u64,
    /// Capture time of the frame (the capture's clock).
    pub arrival_ns: i64,
    /// First and last kernel event of the packet, on the capture's clock (offset
    /// applied).
    pub entry_ns: i64,
    pub exit_ns: i64,
    /// Events of the `func` layer on the packet (recorded with function probes), and
    /// all its events.
    pub functions: usize,
    pub events: usize,
    pub cost_ns: i64,
}

/// One row of Table 6-6: frame `frame` (capture time `arrival_ns`) matched to `p`.
pub(crate) fn handshake_row(
    k: &Kernel,
    name: &'static str,
    frame: u64,
    arrival_ns: i64,
    p: &KPacket,
    offset_ns: i64,
) -> Option<HandshakeRow> {
    let entry = p.hops.first()?.ts_ns + offset_ns;
    let exit = p.hops.last()?.ts_ns + offset_ns;
    let functions = p
        .hops
        .iter()
        .filter(|h| k.kind_layers.get(&h.kind).is_some_and(|l| l == "func"))
        .count();
    Some(HandshakeRow {
        packet: name,
        frame,
        pkt_id: p.id,
        arrival_ns,
        entry_ns: entry,
        exit_ns: exit,
        functions,
        events: p.hops.len(),
        cost_ns: exit - entry,
    })
}

/// The thesis's Table 6-6 for the first TCP handshake whose three packets matched:
/// for SYN, SYN-ACK and ACK, the arrival in the capture, entry and exit times in the
/// kernel, the functions (and events) that handled it, and the time between.
pub fn handshake(k: &Kernel, a: &Association) -> Option<[HandshakeRow; 3]> {
    let row = |name: &'static str, m: &FrameMatch| -> Option<HandshakeRow> {
        handshake_row(
            k,
            name,
            m.frame,
            m.ts_ns,
            &k.packets[m.packet?],
            a.summary.offset_ns,
        )
    };
    // The one rule `magnet packets --handshake` uses, on the kernel's fields of
    // the matched frames, in capture order.
    let [s, sa, ack] = *crate::paths::find_handshakes(
        &a.frames,
        |m| m.packet.and_then(|i| k.packets[i].ip),
        |m| m.ts_ns,
    )
    .first()?;
    Some([
        row("SYN", &a.frames[s])?,
        row("SYN-ACK", &a.frames[sa])?,
        row("ACK", &a.frames[ack])?,
    ])
}
