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

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::footprint::{parse_frame, Footprint, Frame};
use magnet_trace::catalog::kind;

use crate::kernel::{KPacket, Kernel};

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

pub(crate) fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    let m = v.len() / 2;
    Some(*v.select_nth_unstable(m).1)
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

/// A kernel packet as the clock estimate sees it: its device hops (the first on
/// each interface, in hop order) and the times of all its hops.
#[derive(Debug, Clone, Default)]
pub(crate) struct CalPacket {
    dev: Vec<(u32, i64)>,
    hops: Vec<i64>,
}

impl CalPacket {
    pub(crate) fn of(p: &KPacket) -> CalPacket {
        let mut dev: Vec<(u32, i64)> = Vec::new();
        for h in &p.hops {
            if matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
                && !dev.iter().any(|d| d.0 == h.ifindex)
            {
                dev.push((h.ifindex, h.ts_ns));
            }
        }
        CalPacket {
            dev,
            hops: p.hops.iter().map(|h| h.ts_ns).collect(),
        }
    }
}

/// The clock between a capture and a trace, and where the capture sits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Calib {
    pub(crate) offset: i64,
    /// ns per ns.
    pub(crate) drift: f64,
    t_mid: i64,
    pub(crate) capture_if: Option<u32>,
    pub(crate) samples: u64,
}

impl Calib {
    /// Trace time of a capture time.
    pub(crate) fn corr(&self, ts: i64) -> i64 {
        let o = self.offset as f64 + self.drift * (ts - self.offset - self.t_mid) as f64;
        ts - o.round() as i64
    }

    pub(crate) fn drift_ppm(&self) -> f64 {
        (self.drift * 1e6 * 1000.0).round() / 1000.0
    }

    /// The hop a frame is compared with: the packet's on the capture's interface,
    /// else its nearest.
    pub(crate) fn ref_hop(&self, p: &KPacket, t: i64) -> Option<(usize, i64)> {
        p.hops
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                Some(h.ifindex) == self.capture_if
                    && matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
            })
            .map(|(i, h)| (i, h.ts_ns))
            .min_by_key(|&(_, ts)| (ts - t).abs())
            .or_else(|| nearest_hop(p, t))
    }
}

/// The clock offset and drift from the frames whose footprint names one kernel
/// packet (capture time, that packet), in capture order.
pub(crate) fn calibrate(unique: &[(i64, &CalPacket)]) -> Calib {
    // Where the capture sits: the interface whose device hops keep the steadiest
    // distance to the frames (smallest mean absolute deviation among interfaces
    // that a quarter of the unique matches crossed). Its median is the offset.
    let mut per_if: HashMap<u32, Vec<(i64, i64)>> = HashMap::new();
    for &(ts, p) in unique {
        for &(ifx, h) in &p.dev {
            per_if.entry(ifx).or_default().push((h, ts - h));
        }
    }
    let mut best: Option<(i64, usize, u32)> = None; // (deviation, MAX - count, ifindex)
    for (&ifx, v) in &per_if {
        if v.len() * 4 < unique.len() {
            continue;
        }
        let mut d: Vec<i64> = v.iter().map(|s| s.1).collect();
        let med = median(&mut d).unwrap_or(0);
        // Mean absolute deviation from the median: robust enough, and it still
        // tells apart two interfaces a few hundred nanoseconds apart.
        let mad = v
            .iter()
            .map(|s| (s.1 - med).unsigned_abs() as u128)
            .sum::<u128>()
            / v.len() as u128;
        let key = (mad as i64, usize::MAX - v.len(), ifx);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    let capture_if = best.map(|b| b.2);
    let samples: Vec<(i64, i64)> = match capture_if {
        Some(ifx) => per_if.remove(&ifx).unwrap_or_default(),
        // No device hops: each packet's hop nearest to a first estimate.
        None => {
            let mut d0: Vec<i64> = unique
                .iter()
                .filter_map(|&(ts, p)| Some(ts - *p.hops.first()?))
                .collect();
            let first = median(&mut d0).unwrap_or(0);
            unique
                .iter()
                .filter_map(|&(ts, p)| {
                    let t = ts - first;
                    let h = *p.hops.iter().min_by_key(|&&h| (h - t).abs())?;
                    Some((h, ts - h))
                })
                .collect()
        }
    };
    let mut d1: Vec<i64> = samples.iter().map(|s| s.1).collect();
    let offset = median(&mut d1).unwrap_or(0);
    // Drift only when the samples span a second or more: over less, the jitter
    // between hops and capture (microseconds) would swamp it.
    let lo = samples.iter().map(|s| s.0).min().unwrap_or(0);
    let hi = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let drift = if hi - lo >= 1_000_000_000 {
        slope(&samples)
    } else {
        0.0
    };
    let t_mid = samples.get(samples.len() / 2).map_or(0, |s| s.0);
    Calib {
        offset,
        drift,
        t_mid,
        capture_if,
        samples: samples.len() as u64,
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
    // One packet per footprint in the common case; the rare repeats (SYN-ACKs with
    // identification 0, retransmissions) in a second map.
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
    let candidates = |fp: &Footprint| -> &[usize] {
        match repeats.get(fp) {
            Some(v) => v,
            None => index.get(fp).map(std::slice::from_ref).unwrap_or(&[]),
        }
    };
    // Offset from unique footprints.
    let cal_packets: HashMap<usize, CalPacket> = frames
        .iter()
        .filter_map(|(_, _, f)| match f {
            Frame::Ip { fp, .. } => match candidates(fp) {
                [one] => Some((*one, CalPacket::of(&k.packets[*one]))),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let unique: Vec<(i64, &CalPacket)> = frames
        .iter()
        .filter_map(|(_, ts, f)| match f {
            Frame::Ip { fp, .. } => match candidates(fp) {
                [one] => Some((*ts, &cal_packets[one])),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let cal = calibrate(&unique);
    let offset = cal.offset;
    let corr = |ts: i64| cal.corr(ts);
    let ref_hop = |p: &KPacket, t: i64| cal.ref_hop(p, t);

    let mut used = vec![false; k.packets.len()];
    let mut out = Vec::with_capacity(frames.len());
    let mut s = Summary {
        offset_ns: offset,
        drift_ppm: cal.drift_ppm(),
        offset_samples: cal.samples,
        ..Default::default()
    };
    let mut at_if: HashMap<u32, u64> = HashMap::new();
    for (n, ts, f) in frames {
        let t = corr(ts);
        let mut m = FrameMatch::new(n, ts, f);
        s.frames += 1;
        let cand: Option<usize> = match f {
            Frame::Ip { fp, .. } => {
                s.count_ip(&fp);
                let c = candidates(&fp);
                let best = c
                    .iter()
                    .filter_map(|&i| Some((used[i], (ref_hop(&k.packets[i], t)?.1 - t).abs(), i)))
                    .min();
                if best.is_none() {
                    m.reason = Some(ip_unmatched(k, &flows, &fp, t));
                }
                best.map(|(_, _, i)| i)
            }
            Frame::Arp => {
                s.arp_frames += 1;
                let lo = arp.partition_point(|&i| k.packets[i].first_ts() < t - ARP_WINDOW_NS);
                let best = arp[lo..]
                    .iter()
                    .take_while(|&&i| k.packets[i].first_ts() <= t + ARP_WINDOW_NS)
                    .filter(|&&i| !used[i])
                    .min_by_key(|&&i| {
                        nearest_hop(&k.packets[i], t).map_or(i64::MAX, |h| (h.1 - t).abs())
                    });
                if best.is_none() {
                    m.reason = Some("ARP: no kernel ARP packet within 1 ms (ARP has no socket: traced only with --all)".into());
                }
                best.copied()
            }
            Frame::Other(et) => {
                m.reason = Some(format!("no footprint (ethertype {et:#06x})"));
                None
            }
            Frame::Link(lt) => {
                m.reason = Some(format!("link type {lt} not decoded"));
                None
            }
        };
        if let Some(i) = cand {
            used[i] = true;
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
    let mut kernel_unmatched = Vec::new();
    for (i, p) in k.packets.iter().enumerate() {
        let Some(h) = p.hops.iter().find(|h| {
            ifs.contains(&h.ifindex) && matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
        }) else {
            continue;
        };
        s.kernel_packets += 1;
        if used[i] {
            s.kernel_matched += 1;
            continue;
        }
        let why = if let Some(d) = &p.drop {
            format!("dropped: {d}")
        } else if let Some(l) = k.lost_at(h.ts_ns) {
            format!("lost: inside a LOST region ({} events)", l.count)
        } else if p.ip.is_none() {
            format!("no footprint (ethertype {:#06x})", p.ethertype)
        } else {
            "not in the capture (capture filter, snap/drop in the capture, or outside its time span)".into()
        };
        *s.kernel_unmatched.entry(short(&why)).or_default() += 1;
        kernel_unmatched.push((i, why));
    }
    s.kernel_matched_pct = pct(s.kernel_matched, s.kernel_packets);
    s.capture_ifindexes = ifs;
    Association {
        frames: out,
        summary: s,
        kernel_unmatched,
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

/// Least-squares slope of y over x (ns per ns); 0 with fewer than two distinct x.
fn slope(pts: &[(i64, i64)]) -> f64 {
    if pts.len() < 2 {
        return 0.0;
    }
    let x0 = pts[0].0;
    let y0 = pts[0].1;
    let n = pts.len() as f64;
    let (mut sx, mut sy, mut sxx, mut sxy) = (0f64, 0f64, 0f64, 0f64);
    for &(x, y) in pts {
        let x = (x - x0) as f64;
        let y = (y - y0) as f64;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let den = n * sxx - sx * sx;
    if den.abs() < 1e-9 {
        0.0
    } else {
        (n * sxy - sx * sy) / den
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
