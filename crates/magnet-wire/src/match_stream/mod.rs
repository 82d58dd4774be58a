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
//!    tolerance behind the newest frame leave it (in order of first sighting). At
//!    most half of [`Options::pool_packets`] is read ahead of the frame; a full
//!    pool lets its oldest go when that one is behind the frame, else reads no
//!    further ahead until the frames move on (an untaken packet let go early is
//!    counted in [`Stats::forced`]: more packets than that within ±tolerance).
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

//!
//! Here: the options, the two passes' inputs and outputs, and pass 2; `clock`:
//! pass 1; `pool`: the packets around the frames; `handshakes`: the first TCP
//! handshake, streamed; `spill`: the kernel side, written down and read back.

use std::collections::{HashMap, HashSet};
use std::io::Read;

use magnet_pcap::CaptureReader;
use magnet_trace::{TraceError, TraceReader};

use crate::footprint::{parse_frame, Footprint, Frame};
use crate::kernel::{Assembler, Hop, KPacket, Kernel, Window};
use crate::matching::{handshake_row, pick_packet, Calib, FrameMatch, HandshakeRow, Summary};
use crate::{Error, Result};

mod clock;
mod handshakes;
mod pool;
mod spill;

use clock::clock;
use handshakes::Handshakes;
use pool::{pooled, Pool};
use spill::KernelSide;

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
    /// Packets no frame had taken that left the pool because it was full while
    /// still within the tolerance of the newest frame (behind it).
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
/// Matches a capture with a trace, both streamed (see the module's notes).
pub fn associate_streamed<I: Inputs>(
    inp: &mut I,
    o: &Options,
    sink: &mut dyn Sink,
) -> Result<Outcome> {
    let (cal, flows, stats) = clock(inp, o)?;
    let s = Summary::of_clock(&cal);
    sink.clock(&s).map_err(out_err)?;
    let mut pk = Packets::new(inp.trace()?, o.window, inp.trace_name());
    let mut cap = inp.capture()?;
    let mut cut = None;
    let next = pk.next()?;
    let mut m = Matching {
        o,
        cal,
        flows,
        pk,
        next,
        pool: Pool::new(),
        horizon: i64::MIN,
        at_if: HashMap::new(),
        side: KernelSide::new()?,
        hs: Handshakes::new(o.syn_pending),
        s,
        stats,
        out: Outcome::default(),
    };
    while let Some((n, ts, f)) = next_frame(&mut cap, &mut cut) {
        let t = cal.corr(ts);
        m.read_to(t)?;
        m.match_frame(n, ts, f, t, sink)?;
    }
    m.read_rest()?;
    drop(cap);
    m.out.capture_cut = cut;
    m.finish(sink)
}

/// Pass 2: the trace read side by side with the capture.
struct Matching<'o, R: Read> {
    o: &'o Options,
    cal: Calib,
    /// The trace's flows (pass 1).
    flows: HashSet<Footprint>,
    pk: Packets<R>,
    /// The next packet, read but not pooled yet.
    next: Option<KPacket>,
    pool: Pool,
    /// The newest frame's trace time.
    horizon: i64,
    /// Matches by the interface of their reference hop.
    at_if: HashMap<u32, u64>,
    side: KernelSide,
    hs: Handshakes,
    s: Summary,
    stats: Stats,
    out: Outcome,
}

impl<R: Read> Matching<'_, R> {
    /// Before a frame at trace time `t`: packets behind the newest frame by
    /// more than the tolerance leave the pool, and the trace is read to the
    /// frame's time and the tolerance. At most half the pool is read ahead of
    /// the frame: the other half keeps the packets just behind it, whose frames
    /// are this one and the next few (a capture stamps a frame up to
    /// microseconds after its packet's last hop, and a receive backlog can put
    /// a frame in the file after later-stamped ones). Before that limit, at
    /// 400,000 packets a second, 0.5 s read ahead filled the pool and every new
    /// packet pushed out the one the current frame was about to take. A full
    /// pool lets its oldest packet go when that one is behind the frame, else
    /// reads no further for now.
    fn read_to(&mut self, t: i64) -> Result<()> {
        let tol = self.o.tolerance_ns;
        self.horizon = self.horizon.max(t);
        let behind = self.horizon.saturating_sub(tol);
        let until = t.saturating_add(tol);
        while self.pool.slots.front().is_some_and(|q| q.last_ts < behind) {
            let gone = self.pool.pop().expect("front exists");
            self.side.leave(gone, &self.pk.asm.k)?;
        }
        let cap = self.o.pool_packets.max(1);
        // The pool is in order of first sighting, nearly that of first_ts (a
        // GSO packet's segments come out together): close enough to count the
        // packets read ahead of the frame for this bound.
        let mut ahead =
            self.pool.slots.len() - self.pool.slots.partition_point(|q| q.p.first_ts() <= t);
        while self.next.as_ref().is_some_and(|p| p.first_ts() <= until) {
            if ahead >= cap.div_ceil(2) {
                break;
            }
            if self.pool.slots.len() >= cap {
                if self.pool.slots.front().is_some_and(|q| q.last_ts < t) {
                    let gone = self.pool.pop().expect("front exists");
                    // Only a packet a frame could take and none did can be a loss.
                    self.stats.forced += u64::from(!gone.used && gone.matchable());
                    self.side.leave(gone, &self.pk.asm.k)?;
                } else {
                    break;
                }
            }
            ahead += usize::from(self.next.as_ref().is_some_and(|p| p.first_ts() > t));
            self.pool.add(pooled(self.next.take().expect("checked")));
            self.stats.pool_peak = self.stats.pool_peak.max(self.pool.slots.len());
            self.next = self.pk.next()?;
        }
        Ok(())
    }

    /// Matches frame `n` (capture time `ts`, trace time `t`) and hands it on.
    fn match_frame(
        &mut self,
        n: u64,
        ts: i64,
        f: Frame,
        t: i64,
        sink: &mut dyn Sink,
    ) -> Result<()> {
        let mut m = FrameMatch::new(n, ts, f);
        let k = &self.pk.asm.k;
        let cand = pick_packet(
            &self.pool,
            k,
            &self.flows,
            &self.cal,
            &mut self.s,
            &mut m,
            t,
        );
        if let Frame::Link(lt) = f {
            self.out.undecoded += 1;
            self.out.undecoded_link.get_or_insert(lt);
        }
        let matched: Option<&KPacket> = match cand {
            Some(i) => {
                let slot = (i - self.pool.base) as usize;
                self.pool.slots[slot].used = true;
                Some(&self.pool.slots[slot].p)
            }
            None => None,
        };
        let (cal, s) = (&self.cal, &mut self.s);
        s.tally(
            &mut m,
            cand.map(|i| i as usize).zip(matched),
            cal,
            t,
            &mut self.at_if,
        );
        if let Some(p) = matched {
            if let Some(ip) = p.ip {
                let offset = cal.offset;
                self.hs
                    .see(ip, ts, |name| handshake_row(k, name, n, ts, p, offset));
            }
        }
        sink.frame(k, &m, matched).map_err(out_err)
    }

    /// After the last frame: the rest of the trace, packet by packet.
    fn read_rest(&mut self) -> Result<()> {
        while let Some(q) = self.pool.pop() {
            self.side.leave(q, &self.pk.asm.k)?;
        }
        while let Some(p) = self.next.take() {
            self.side.leave(pooled(p), &self.pk.asm.k)?;
            self.next = self.pk.next()?;
        }
        Ok(())
    }

    /// The capture's interfaces, the kernel side, and the outcome.
    fn finish(mut self, sink: &mut dyn Sink) -> Result<Outcome> {
        let mut s = self.s;
        let ifs = s.close_frames(&self.at_if);
        self.side.report(&ifs, &self.pk.asm.k, &mut s, sink)?;
        s.close_kernel(ifs);
        self.out.summary = s;
        self.out.handshake = self.hs.first();
        self.out.damaged = self.pk.rd.damage() > 0;
        self.out.warnings = self.pk.asm.k.warnings.clone();
        self.out.stats = self.stats;
        Ok(self.out)
    }
}
