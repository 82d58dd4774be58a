//! `magnet match` with bounded memory: the trace and the capture are both read as
//! streams, packets through the packet model's window ([`Assembler`]), and merged in
//! time. The same rules as [`crate::matching::associate`] (which holds the whole
//! trace and capture, and stays as the reference the tests compare with), in passes:
//!
//! 1. **Clock.** The capture is read once for a sample of its IP frames (all of
//!    them up to [`Options::sample_frames`]; past that every 2nd, then every 4th …,
//!    so the sample spans the whole capture), then the trace once: each packet whose
//!    footprint one of those frames has is counted, and the first kept (its device
//!    hops and hop times). Frames whose footprint names exactly one packet of the
//!    whole trace give the offset, drift and the capture's interface as before. On a
//!    capture of up to `sample_frames` IP frames this is exactly the whole-trace
//!    estimate. The flows of the trace are collected in the same pass.
//! 2. **Matching.** Both are read again side by side: before a frame at corrected
//!    time `t` is matched, every packet first seen by `t + tolerance` has been read
//!    into a pool indexed by footprint; packets whose last hop is more than the
//!    tolerance behind the newest frame leave it (in order of first sighting). A
//!    pool holding [`Options::pool_packets`] lets its oldest go when that one is
//!    behind the frame, else reads no further ahead until the frames move on
//!    (counted in [`Stats::forced`]: more packets than that within ±tolerance).
//!    A frame takes, among
//!    the pooled packets with its footprint, the unused one whose hop is nearest (as
//!    before: a frame's packet is never further than the tolerance from it once the
//!    offset is known). Frames are handed to the [`Sink`] as they are matched.
//!    Packets leaving the pool unmatched that crossed an interface are written to an
//!    unlinked temporary file (a few dozen bytes each); after the last frame the
//!    capture's interfaces are known and that file is read back for the kernel side
//!    (unmatched packets on those interfaces, in order of first sighting, and the
//!    summary's counts).
//!
//! Memory: the packet model's window, the pool, the clock sample (at most
//! `sample_frames` footprints), and what grows with flows and sockets (the trace's
//! flows, owners, LOST regions) — not with packets or frames.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use magnet_pcap::CaptureReader;
use magnet_trace::catalog::kind;
use magnet_trace::{TraceError, TraceReader};

use crate::footprint::{parse_frame, Footprint, Frame};
use crate::kernel::{Assembler, Hop, IpFields, KPacket, Kernel, Window};
use crate::matching::{
    calibrate, flow, handshake_row, ip_unmatched, nearest_hop, pct, short, CalPacket, Calib,
    FrameMatch, HandshakeRow, Summary, ARP_WINDOW_NS,
};
use crate::{Error, Result};

/// The bounds of a streamed match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The packet model's window.
    pub window: Window,
    /// How far (ns, trace clock) a frame may be from its packet's hop.
    pub tolerance_ns: i64,
    /// The most packets the pool holds.
    pub pool_packets: usize,
    /// The most frames the clock estimate samples.
    pub sample_frames: usize,
    /// The most SYNs waiting for their handshake (Table 6-6).
    pub syn_pending: usize,
}

impl Options {
    /// 2 s / 262,144 packets for the model, ±0.5 s and 262,144 packets for the
    /// pool, 131,072 sampled frames.
    pub const DEFAULT: Options = Options {
        window: Window::DEFAULT,
        tolerance_ns: 500_000_000,
        pool_packets: 1 << 18,
        sample_frames: 1 << 17,
        syn_pending: 4096,
    };
}

/// Where the trace and the capture come from: each pass reads them again.
pub trait Inputs {
    type Trace: Read;
    type Capture: Read;
    /// The trace's name, for errors.
    fn trace_name(&self) -> String;
    /// The trace, from its start.
    fn trace(&mut self) -> Result<TraceReader<Self::Trace>>;
    /// The capture, from its start.
    fn capture(&mut self) -> Result<CaptureReader<Self::Capture>>;
}

/// A kernel packet on the capture's interfaces that no frame matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelUnmatched {
    pub id: u64,
    pub first_ts: i64,
    pub reason: String,
    pub hops: Vec<Hop>,
}

/// What the caller does with the results as they come.
pub trait Sink {
    /// The clock is known (offset, drift, samples; the capture's interfaces are
    /// not yet), before the first frame.
    fn clock(&mut self, s: &Summary) -> std::io::Result<()>;
    /// One frame, in capture order, with its packet when it matched one.
    fn frame(&mut self, k: &Kernel, m: &FrameMatch, p: Option<&KPacket>) -> std::io::Result<()>;
    /// One unmatched kernel packet, in order of first sighting, after every frame.
    fn kernel(&mut self, k: &Kernel, u: &KernelUnmatched) -> std::io::Result<()>;
}

/// What the bounds did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// IP frames the clock estimate sampled, and one in how many.
    pub sampled: u64,
    pub sample_step: u64,
    /// The most packets pooled at once.
    pub pool_peak: usize,
    /// Packets that left the pool because it was full while still within the
    /// tolerance of the newest frame (behind it).
    pub forced: u64,
}

/// The result of a streamed match.
#[derive(Debug, Default)]
pub struct Outcome {
    pub summary: Summary,
    pub handshake: Option<[HandshakeRow; 3]>,
    /// Damage the trace reader stepped over, and the window's notes (matching pass).
    pub warnings: Vec<String>,
    /// The trace reader met damage.
    pub damaged: bool,
    /// The capture ended in an error (the frames before it were matched).
    pub capture_cut: Option<String>,
    /// Frames of a link type magnet does not decode, and the first such type.
    pub undecoded: u64,
    pub undecoded_link: Option<u32>,
    pub stats: Stats,
}

fn out_err(e: std::io::Error) -> Error {
    Error::Io {
        path: "output".into(),
        source: e,
    }
}

/// Packets out of a trace, through the packet model's window.
struct Packets<R: Read> {
    rd: TraceReader<R>,
    asm: Assembler,
    done: bool,
    name: String,
}

impl<R: Read> Packets<R> {
    fn new(rd: TraceReader<R>, window: Window, name: String) -> Self {
        let asm = Assembler::new(rd.header(), window, false);
        Packets {
            rd,
            asm,
            done: false,
            name,
        }
    }

    fn next(&mut self) -> Result<Option<KPacket>> {
        loop {
            if let Some(p) = self.asm.pop() {
                return Ok(Some(p));
            }
            if self.done {
                return Ok(None);
            }
            match self.rd.next_record_ref() {
                Some(Ok(r)) => self.asm.push(&r),
                Some(Err(e)) => self.asm.error(e).map_err(|e| self.err(e))?,
                None => {
                    self.asm.finish();
                    self.done = true;
                }
            }
        }
    }

    fn err(&self, source: TraceError) -> Error {
        Error::Trace {
            path: self.name.clone(),
            source,
        }
    }
}

/// The frames of a capture, until its end or its first error.
fn next_frame<R: Read>(
    c: &mut CaptureReader<R>,
    cut: &mut Option<String>,
) -> Option<(u64, i64, Frame)> {
    if cut.is_some() {
        return None;
    }
    match c.next_packet()? {
        Ok(p) => Some((p.number, p.ts_ns, parse_frame(p.linktype, p.data))),
        Err(e) => {
            *cut = Some(e.to_string());
            None
        }
    }
}

/// What pass 1 keeps of the first packet with a sampled footprint.
#[derive(Default)]
struct Seen {
    count: u32,
    first: CalPacket,
}

/// Pass 1: the clock, and the trace's flows.
fn clock<I: Inputs>(inp: &mut I, o: &Options) -> Result<(Calib, HashSet<Footprint>, Stats)> {
    let mut cap = inp.capture()?;
    let mut cut = None;
    let mut step = 1u64;
    let mut n = 0u64;
    let mut sample: Vec<(u64, i64, Footprint)> = Vec::new();
    while let Some((_, ts, f)) = next_frame(&mut cap, &mut cut) {
        let Frame::Ip { fp, .. } = f else { continue };
        if n % step == 0 {
            sample.push((n, ts, fp));
            if sample.len() > o.sample_frames.max(1) {
                step *= 2;
                sample.retain(|s| s.0 % step == 0);
            }
        }
        n += 1;
    }
    drop(cap);
    let mut seen: HashMap<Footprint, Seen> =
        sample.iter().map(|s| (s.2, Seen::default())).collect();
    let mut flows = HashSet::new();
    let mut pk = Packets::new(inp.trace()?, o.window, inp.trace_name());
    while let Some(p) = pk.next()? {
        // A GSO packet is on the wire as its segments.
        let Some(ip) = p.ip.filter(|_| p.gso_segments == 0) else {
            continue;
        };
        let fp = Footprint::from_kernel(&ip);
        flows.insert(flow(&fp));
        if let Some(s) = seen.get_mut(&fp) {
            s.count += 1;
            if s.count == 1 {
                s.first = CalPacket::of(&p);
            }
        }
    }
    let unique: Vec<(i64, &CalPacket)> = sample
        .iter()
        .filter_map(|(_, ts, fp)| {
            let s = seen.get(fp)?;
            (s.count == 1).then_some((*ts, &s.first))
        })
        .collect();
    let stats = Stats {
        sampled: sample.len() as u64,
        sample_step: step,
        ..Default::default()
    };
    Ok((calibrate(&unique), flows, stats))
}

/// A packet in the pool.
struct Pooled {
    p: KPacket,
    fp: Option<Footprint>,
    used: bool,
    last_ts: i64,
}

fn pooled(mut p: KPacket) -> Pooled {
    // Frame bytes and function events are not shown by match.
    p.frames = Vec::new();
    p.funcs = Vec::new();
    let fp = match p.ip {
        Some(_) if p.gso_segments > 0 => None,
        Some(ip) => Some(Footprint::from_kernel(&ip)),
        None => None,
    };
    let last_ts = p.hops.iter().map(|h| h.ts_ns).max().unwrap_or(0);
    Pooled {
        p,
        fp,
        used: false,
        last_ts,
    }
}

/// Packets around the frames being matched, by order of first sighting.
struct Pool {
    /// `slots[i]` is packet number `base + i`.
    slots: VecDeque<Pooled>,
    base: u64,
    index: HashMap<Footprint, VecDeque<u64>>,
    arp: VecDeque<u64>,
}

impl Pool {
    fn get(&self, n: u64) -> &Pooled {
        &self.slots[(n - self.base) as usize]
    }

    fn add(&mut self, q: Pooled) {
        let n = self.base + self.slots.len() as u64;
        if let Some(fp) = q.fp {
            self.index.entry(fp).or_default().push_back(n);
        } else if q.p.ip.is_none() && q.p.ethertype == 0x0806 {
            self.arp.push_back(n);
        }
        self.slots.push_back(q);
    }

    fn pop(&mut self) -> Option<Pooled> {
        let s = self.slots.pop_front()?;
        let n = self.base;
        self.base += 1;
        if let Some(fp) = s.fp {
            if let Some(v) = self.index.get_mut(&fp) {
                if v.front() == Some(&n) {
                    v.pop_front();
                }
                if v.is_empty() {
                    self.index.remove(&fp);
                }
            }
        }
        if self.arp.front() == Some(&n) {
            self.arp.pop_front();
        }
        Some(s)
    }
}

/// The first TCP handshake among the matched frames, in capture order (the rule of
/// [`crate::paths::find_handshakes`], streamed: the SYN-ACK and the ACK are looked
/// for after the SYN, in capture order).
struct Handshakes {
    /// In capture order; `None` once given up.
    syns: Vec<Option<Syn>>,
    /// SYN index by the SYN's (source, port, destination, port).
    by_flow: HashMap<(std::net::IpAddr, u16, std::net::IpAddr, u16), Vec<usize>>,
    /// The first SYN whose handshake completed.
    done: Option<usize>,
    waiting: usize,
    most: usize,
}

struct Syn {
    ip: IpFields,
    row: HandshakeRow,
    reply: Option<(IpFields, i64, HandshakeRow)>,
    ack: Option<HandshakeRow>,
}

impl Handshakes {
    fn new(most: usize) -> Self {
        Handshakes {
            syns: Vec::new(),
            by_flow: HashMap::new(),
            done: None,
            waiting: 0,
            most,
        }
    }

    fn see(&mut self, ip: IpFields, ts: i64, row: impl Fn(&'static str) -> Option<HandshakeRow>) {
        if !ip.is_tcp() {
            return;
        }
        let f = ip;
        if f.tcp_flags & 0x12 == 0x12 {
            // A SYN-ACK answers the first waiting SYN of the reverse flow.
            if let Some(v) = self.by_flow.get(&(f.daddr, f.dport, f.saddr, f.sport)) {
                for &i in v {
                    let Some(s) = self.syns[i].as_mut() else {
                        continue;
                    };
                    if s.reply.is_none() && f.ack == s.ip.seq.wrapping_add(1) {
                        if let Some(r) = row("SYN-ACK") {
                            s.reply = Some((f, ts, r));
                        }
                    }
                }
            }
        } else if f.tcp_flags & 0x1f == 0x10 {
            if let Some(v) = self.by_flow.get(&(f.saddr, f.sport, f.daddr, f.dport)) {
                for &i in v {
                    let Some(s) = self.syns[i].as_mut() else {
                        continue;
                    };
                    let Some((a, at, _)) = &s.reply else { continue };
                    if s.ack.is_none()
                        && ts >= *at
                        && f.seq == s.ip.seq.wrapping_add(1)
                        && f.ack == a.seq.wrapping_add(1)
                    {
                        s.ack = row("ACK");
                        if s.ack.is_some() && self.done.is_none_or(|d| i < d) {
                            self.done = Some(i);
                        }
                    }
                }
            }
        } else if f.tcp_flags & 0x12 == 0x02 && self.done.is_none() {
            if self.waiting >= self.most {
                // Give up the oldest SYN still waiting.
                if let Some(old) = self.syns.iter_mut().find(|s| s.is_some()) {
                    *old = None;
                    self.waiting -= 1;
                }
            }
            if let Some(r) = row("SYN") {
                let i = self.syns.len();
                self.syns.push(Some(Syn {
                    ip: f,
                    row: r,
                    reply: None,
                    ack: None,
                }));
                self.by_flow
                    .entry((f.saddr, f.sport, f.daddr, f.dport))
                    .or_default()
                    .push(i);
                self.waiting += 1;
            }
        }
    }

    fn first(mut self) -> Option<[HandshakeRow; 3]> {
        let s = self.syns.get_mut(self.done?)?.take()?;
        Some([s.row, s.reply?.2, s.ack?])
    }
}

/// The kernel side of a packet that left the pool.
struct Leaving {
    id: u64,
    first_ts: i64,
    drop: Option<String>,
    ethertype: u16,
    has_ip: bool,
    /// Each interface it crossed at the device layer (first sighting there, in hop
    /// order) with the LOST region's count at that sighting.
    dev: Vec<(u32, Option<u64>)>,
    hops: Vec<Hop>,
}

fn put_u64(w: &mut impl Write, v: u64) -> std::io::Result<()> {
    w.write_all(&v.to_le_bytes())
}

fn get<const N: usize>(r: &mut impl Read) -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

impl Leaving {
    fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        put_u64(w, self.id)?;
        put_u64(w, self.first_ts as u64)?;
        let d = self.drop.as_deref().unwrap_or("");
        put_u64(w, d.len() as u64 | (u64::from(self.drop.is_some()) << 63))?;
        w.write_all(d.as_bytes())?;
        w.write_all(&self.ethertype.to_le_bytes())?;
        w.write_all(&[u8::from(self.has_ip)])?;
        put_u64(w, self.dev.len() as u64)?;
        for &(ifx, lost) in &self.dev {
            w.write_all(&ifx.to_le_bytes())?;
            put_u64(w, lost.unwrap_or(u64::MAX))?;
        }
        put_u64(w, self.hops.len() as u64)?;
        for h in &self.hops {
            put_u64(w, h.ts_ns as u64)?;
            w.write_all(&h.kind.to_le_bytes())?;
            w.write_all(&h.ifindex.to_le_bytes())?;
            w.write_all(&h.len.to_le_bytes())?;
            put_u64(w, h.cookie)?;
            w.write_all(&h.tid.to_le_bytes())?;
            w.write_all(&h.cpu.to_le_bytes())?;
            w.write_all(&[u8::from(h.other_netns)])?;
        }
        Ok(())
    }

    fn read(r: &mut impl Read) -> std::io::Result<Leaving> {
        let u = |r: &mut dyn Read| -> std::io::Result<u64> {
            let mut b = [0u8; 8];
            r.read_exact(&mut b)?;
            Ok(u64::from_le_bytes(b))
        };
        let id = u(r)?;
        let first_ts = u(r)? as i64;
        let dl = u(r)?;
        let mut d = vec![0u8; (dl & !(1 << 63)) as usize];
        r.read_exact(&mut d)?;
        let drop = (dl >> 63 == 1).then(|| String::from_utf8_lossy(&d).into_owned());
        let ethertype = u16::from_le_bytes(get(r)?);
        let has_ip = get::<1>(r)?[0] == 1;
        let nd = u(r)?;
        let mut dev = Vec::new();
        for _ in 0..nd {
            let ifx = u32::from_le_bytes(get(r)?);
            let l = u(r)?;
            dev.push((ifx, (l != u64::MAX).then_some(l)));
        }
        let nh = u(r)?;
        let mut hops = Vec::new();
        for _ in 0..nh {
            hops.push(Hop {
                ts_ns: u(r)? as i64,
                kind: u16::from_le_bytes(get(r)?),
                ifindex: u32::from_le_bytes(get(r)?),
                len: u32::from_le_bytes(get(r)?),
                cookie: u(r)?,
                tid: u32::from_le_bytes(get(r)?),
                cpu: u16::from_le_bytes(get(r)?),
                other_netns: u8::from_le_bytes(get(r)?) != 0,
            });
        }
        Ok(Leaving {
            id,
            first_ts,
            drop,
            ethertype,
            has_ip,
            dev,
            hops,
        })
    }
}

/// An unlinked temporary file.
fn scratch() -> Result<std::fs::File> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        ".magnet-match-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
    let _ = std::fs::remove_file(&path);
    Ok(f)
}

/// The kernel side, as packets leave the pool: matched ones counted by the
/// interfaces they crossed, unmatched ones written down until the capture's
/// interfaces are known.
struct KernelSide {
    matched_on: HashMap<Vec<u32>, u64>,
    spill: BufWriter<std::fs::File>,
    spilled: u64,
}

fn tmp_err(source: std::io::Error) -> Error {
    Error::Io {
        path: "temporary file".into(),
        source,
    }
}

impl KernelSide {
    fn leave(&mut self, q: Pooled, k: &Kernel) -> Result<()> {
        let p = &q.p;
        let mut dev: Vec<(u32, Option<u64>)> = Vec::new();
        for h in &p.hops {
            if matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
                && !dev.iter().any(|d| d.0 == h.ifindex)
            {
                dev.push((h.ifindex, k.lost_at(h.ts_ns).map(|l| l.count)));
            }
        }
        if !dev.iter().any(|d| d.0 != 0) {
            return Ok(());
        }
        if q.used {
            let mut ifs: Vec<u32> = dev.iter().map(|d| d.0).collect();
            ifs.sort_unstable();
            *self.matched_on.entry(ifs).or_default() += 1;
            return Ok(());
        }
        Leaving {
            id: p.id,
            first_ts: p.first_ts(),
            drop: p.drop.clone(),
            ethertype: p.ethertype,
            has_ip: p.ip.is_some(),
            dev,
            hops: p.hops.clone(),
        }
        .write(&mut self.spill)
        .map_err(tmp_err)?;
        self.spilled += 1;
        Ok(())
    }
}

/// Matches a capture with a trace, both streamed (see the module's notes).
pub fn associate_streamed<I: Inputs>(
    inp: &mut I,
    o: &Options,
    sink: &mut dyn Sink,
) -> Result<Outcome> {
    let (cal, flows, mut stats) = clock(inp, o)?;
    let mut s = Summary {
        offset_ns: cal.offset,
        drift_ppm: cal.drift_ppm(),
        offset_samples: cal.samples,
        ..Default::default()
    };
    sink.clock(&s).map_err(out_err)?;

    let mut pk = Packets::new(inp.trace()?, o.window, inp.trace_name());
    let mut cap = inp.capture()?;
    let mut cut = None;
    let mut pool = Pool {
        slots: VecDeque::new(),
        base: 0,
        index: HashMap::new(),
        arp: VecDeque::new(),
    };
    // The next packet, read but not pooled yet.
    let mut next: Option<KPacket> = pk.next()?;
    let mut horizon = i64::MIN;
    let mut at_if: HashMap<u32, u64> = HashMap::new();
    let mut side = KernelSide {
        matched_on: HashMap::new(),
        spill: BufWriter::new(scratch()?),
        spilled: 0,
    };
    let mut hs = Handshakes::new(o.syn_pending);
    let mut out = Outcome::default();
    let tol = o.tolerance_ns;

    loop {
        let frame = next_frame(&mut cap, &mut cut);
        // Read the trace up to the frame's time and the tolerance (all of it after
        // the last frame).
        let Some(t) = frame.as_ref().map(|f| cal.corr(f.1)) else {
            // After the last frame: the rest of the trace, packet by packet.
            while let Some(q) = pool.pop() {
                side.leave(q, &pk.asm.k)?;
            }
            while let Some(p) = next.take() {
                side.leave(pooled(p), &pk.asm.k)?;
                next = pk.next()?;
            }
            break;
        };
        horizon = horizon.max(t);
        let behind = horizon.saturating_sub(tol);
        let until = t.saturating_add(tol);
        // Packets behind the newest frame by more than the tolerance leave.
        while pool.slots.front().is_some_and(|q| q.last_ts < behind) {
            let gone = pool.pop().expect("front exists");
            side.leave(gone, &pk.asm.k)?;
        }
        // Read ahead to the frame's time and the tolerance. A full pool lets its
        // oldest packet go when that one is behind the frame, else reads no
        // further for now.
        while next.as_ref().is_some_and(|p| p.first_ts() <= until) {
            if pool.slots.len() >= o.pool_packets.max(1) {
                if pool.slots.front().is_some_and(|q| q.last_ts < t) {
                    stats.forced += 1;
                    let gone = pool.pop().expect("front exists");
                    side.leave(gone, &pk.asm.k)?;
                } else {
                    break;
                }
            }
            pool.add(pooled(next.take().expect("checked")));
            stats.pool_peak = stats.pool_peak.max(pool.slots.len());
            next = pk.next()?;
        }
        let Some((n, ts, f)) = frame else { break };
        let mut m = FrameMatch::new(n, ts, f);
        s.frames += 1;
        let k = &pk.asm.k;
        let cand: Option<u64> = match f {
            Frame::Ip { fp, .. } => {
                s.count_ip(&fp);
                let best = pool.index.get(&fp).and_then(|c| {
                    c.iter()
                        .filter_map(|&i| {
                            let q = pool.get(i);
                            Some((q.used, (cal.ref_hop(&q.p, t)?.1 - t).abs(), i))
                        })
                        .min()
                });
                if best.is_none() {
                    m.reason = Some(ip_unmatched(k, &flows, &fp, t));
                }
                best.map(|(_, _, i)| i)
            }
            Frame::Arp => {
                s.arp_frames += 1;
                let best = pool
                    .arp
                    .iter()
                    .filter(|&&i| {
                        let q = pool.get(i);
                        !q.used
                            && q.p.first_ts() >= t - ARP_WINDOW_NS
                            && q.p.first_ts() <= t + ARP_WINDOW_NS
                    })
                    .min_by_key(|&&i| {
                        nearest_hop(&pool.get(i).p, t).map_or(i64::MAX, |h| (h.1 - t).abs())
                    })
                    .copied();
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
                out.undecoded += 1;
                out.undecoded_link.get_or_insert(lt);
                m.reason = Some(format!("link type {lt} not decoded"));
                None
            }
        };
        let matched: Option<&KPacket> = match cand {
            Some(i) => {
                let slot = (i - pool.base) as usize;
                pool.slots[slot].used = true;
                Some(&pool.slots[slot].p)
            }
            None => None,
        };
        s.tally(
            &mut m,
            cand.map(|i| i as usize).zip(matched),
            &cal,
            t,
            &mut at_if,
        );
        if let Some(p) = matched {
            if let Some(ip) = p.ip {
                hs.see(ip, ts, |name| handshake_row(k, name, n, ts, p, cal.offset));
            }
        }
        sink.frame(k, &m, matched).map_err(out_err)?;
    }
    drop(cap);
    out.capture_cut = cut;
    let ifs = s.close_frames(&at_if);
    for (on, c) in &side.matched_on {
        if on.iter().any(|i| ifs.contains(i)) {
            s.kernel_packets += c;
            s.kernel_matched += c;
        }
    }
    let k = &pk.asm.k;
    let mut file = side
        .spill
        .into_inner()
        .map_err(|e| tmp_err(e.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(tmp_err)?;
    let mut rd = BufReader::new(file);
    for _ in 0..side.spilled {
        let l = Leaving::read(&mut rd).map_err(tmp_err)?;
        let Some(&(_, lost)) = l.dev.iter().find(|d| ifs.contains(&d.0)) else {
            continue;
        };
        s.kernel_packets += 1;
        let why = if let Some(d) = &l.drop {
            format!("dropped: {d}")
        } else if let Some(c) = lost {
            format!("lost: inside a LOST region ({c} events)")
        } else if !l.has_ip {
            format!("no footprint (ethertype {:#06x})", l.ethertype)
        } else {
            "not in the capture (capture filter, snap/drop in the capture, or outside its time span)".into()
        };
        *s.kernel_unmatched.entry(short(&why)).or_default() += 1;
        sink.kernel(
            k,
            &KernelUnmatched {
                id: l.id,
                first_ts: l.first_ts,
                reason: why,
                hops: l.hops,
            },
        )
        .map_err(out_err)?;
    }
    s.kernel_matched_pct = pct(s.kernel_matched, s.kernel_packets);
    s.capture_ifindexes = ifs;
    out.summary = s;
    out.handshake = hs.first();
    out.damaged = pk.rd.damage() > 0;
    out.warnings = pk.asm.k.warnings.clone();
    out.stats = stats;
    Ok(out)
}
