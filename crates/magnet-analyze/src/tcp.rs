//! TCP: segments from sequence numbers, and the state snapshots (`--tcp-state`)
//! summarised over a connection's life.

use crate::dist::Dist;
use crate::fields::{View, F};
use crate::model::TcpSample;
use crate::series::Decimator;

pub(crate) const TCP_FIN: u64 = 0x01;
pub(crate) const TCP_SYN: u64 = 0x02;
pub(crate) const TCP_RST: u64 = 0x04;
pub(crate) const TCP_ACK: u64 = 0x10;
pub(crate) const TCP_PSH: u64 = 0x08;

/// A sequence number, when it was seen, and the length of its packet (headers
/// included: IP length at IP, TCP length in `tcp_rcv`; 0 when unknown).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SeqMark {
    pub seq: u32,
    pub ts: u64,
    pub len: u64,
    /// The packet's TCP flags.
    pub flags: u64,
}

/// Header lengths a segment's packet can have (20 B TCP alone … 60 B IPv6 + 80
/// B of TCP options).
const HDR_RANGE: std::ops::RangeInclusive<u64> = 20..=140;

/// The most TCP options can add to a header: a gap past the last segment's
/// end (at the learnt header length) no longer than this may be a header
/// longer or shorter than the learnt one (SACK blocks), not missing data.
const MAX_OPTIONS: u64 = 40;

/// Holes kept per direction; past this the oldest is forgotten (what fills
/// it later counts as a retransmission, as before holes were kept).
const MAX_HOLES: usize = 64;

/// `a` comes before `b` in sequence space.
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// The longest packet an IP header's length field can describe: IPv6's
/// 65,535 B payload after its 40 B header (IPv4's total is shorter).
const IP_MAX_LEN: u64 = 65_535 + 40;

/// The header-length class of a packet `len` bytes long: 1 when no IP
/// header can give its length (a BIG TCP packet; on IPv6 a jumbogram, with
/// its hop-by-hop option), 0 otherwise.
fn big(len: u64) -> usize {
    usize::from(len > IP_MAX_LEN)
}

/// A segment whose payload is now known: when it was seen and its bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Segment {
    pub ts: u64,
    pub bytes: u64,
}

/// TCP payload per segment from sequence numbers: a segment's payload is known
/// when the next new sequence number is seen.
///
/// Bytes are counted once: a sequence number below the highest seen is a
/// retransmission, unless it fills a hole: when a segment starts past the
/// last one's end (by more than options can make of a header), the bytes
/// between have not been seen here, and the segments that bring them later
/// are new data at this point, sized by their own length. Two CPUs' backlogs
/// reorder a stream over veth (a sender that moves between CPUs); before,
/// the last segment took the hole's bytes and its fillers counted as
/// retransmissions (18 of 456 segments of one iperf3 stream). After a FIN
/// nothing but the FIN's own size is left to learn (a direction carries no
/// data after its FIN, only retransmissions of earlier data, ACKs and the FIN
/// again), and segments that fill holes below it.
///
/// A sequence number inside the last segment (past its start, before its end)
/// is a retransmission too: a tail-loss probe sends the last MSS of the last
/// (GSO) packet again, a zero-window probe carries snd_una − 1. The last
/// segment's end is its packet length less the header length, which the
/// tracker learns from its data segments (packet length − distance to the
/// next sequence number; the majority value, so a lost record or a probe does
/// not move it). A segment that starts inside the last one and reaches past
/// its end carries new data: a probe never does (a tail-loss probe ends where
/// the last segment ends, a zero-window probe or keepalive carries at most one
/// old byte).
///
/// Packets longer than an IP header can say (over 65,575 B: IPv4 or IPv6 BIG
/// TCP) learn their header length apart: an IPv6 jumbogram carries an 8-byte
/// hop-by-hop jumbo option the others lack (80 B of headers against 72 on
/// IPv6 loopback with timestamps), and one length for both sized each such
/// packet 8 B long, so its successor looked like a probe inside it.
#[derive(Clone, Debug, Default)]
pub(crate) struct SegTrack {
    /// The highest segment whose end is not known yet.
    last: Option<SeqMark>,
    /// The header length learnt so far and its majority-vote weight, for
    /// packets an IP header can size ([0]) and for longer ones ([1]).
    hdr: [u64; 2],
    hdr_votes: [u32; 2],
    pub retrans: u64,
    /// Sequence ranges [start, end) skipped below the last segment and not
    /// seen since, in sequence order.
    holes: Vec<(u32, u32)>,
    /// The latest segment filled (part of) a hole.
    filled: bool,
    /// Bytes of holes forgotten (past MAX_HOLES) before anything filled them.
    forgotten: u64,
    /// A FIN segment (which may carry the last data) waiting for a
    /// snapshot's next sequence number or the peer's acknowledgment to tell
    /// where it ended.
    fin: Option<SeqMark>,
    /// The direction's FIN was seen: the stream's end.
    closed: bool,
}

impl SegTrack {
    /// One vote for header length `h` of a packet `len` bytes long
    /// (Boyer-Moore majority, one per length class).
    fn vote_hdr(&mut self, len: u64, h: u64) {
        let c = big(len);
        let (hdr, votes) = (&mut self.hdr[c], &mut self.hdr_votes[c]);
        if *votes == 0 {
            *hdr = h;
            *votes = 1;
        } else if *hdr == h {
            *votes = votes.saturating_add(1);
        } else {
            *votes -= 1;
        }
    }

    /// The payload of a packet of length `len` at the header length learnt
    /// for its length class (the other class's until its own has one).
    fn payload(&self, len: u64) -> Option<u64> {
        let c = big(len);
        let c = if self.hdr_votes[c] > 0 { c } else { 1 - c };
        let hdr = self.hdr[c];
        (self.hdr_votes[c] > 0 && len > hdr).then(|| len - hdr)
    }

    /// The payload of a packet of length `len` once a header length is
    /// learnt for it: 0 for a packet no longer than its header.
    fn known_payload(&self, len: u64) -> Option<u64> {
        let c = big(len);
        let c = if self.hdr_votes[c] > 0 { c } else { 1 - c };
        (self.hdr_votes[c] > 0).then(|| len.saturating_sub(self.hdr[c]))
    }

    /// The bytes of hole the segment at `seq` of a packet `len` bytes long
    /// brings (each byte once: those leave the holes), if any.
    fn fill(&mut self, seq: u32, len: u64) -> Option<u64> {
        if self.holes.is_empty() {
            return None;
        }
        let end = seq.wrapping_add(self.payload(len)? as u32);
        let mut bytes = 0;
        let mut i = 0;
        while i < self.holes.len() {
            let (hs, he) = self.holes[i];
            let s = if seq_before(seq, hs) { hs } else { seq };
            let e = if seq_before(end, he) { end } else { he };
            if !seq_before(s, e) {
                i += 1;
                continue;
            }
            bytes += u64::from(e.wrapping_sub(s));
            // What is left of the hole either side of the segment.
            let rest: Vec<(u32, u32)> = [(hs, s), (e, he)]
                .into_iter()
                .filter(|&(a, b)| seq_before(a, b))
                .collect();
            let kept = rest.len();
            self.holes.splice(i..=i, rest);
            i += kept;
        }
        (bytes > 0).then_some(bytes)
    }

    /// The bytes of the holes nothing filled (forgotten ones included).
    pub fn unfilled_bytes(&self) -> u64 {
        self.forgotten
            + self
                .holes
                .iter()
                .map(|&(s, e)| u64::from(e.wrapping_sub(s)))
                .sum::<u64>()
    }

    /// Whether the latest segment filled a hole: new data below the highest
    /// seen (its arrival belongs among the earlier ones).
    pub fn filled(&self) -> bool {
        self.filled
    }

    /// A segment at `seq` seen at `ts`, its packet `len` bytes long (headers
    /// included; 0 when unknown): returns the previous one when this one tells
    /// where it ended, or this one when it fills a hole.
    pub fn segment(&mut self, seq: u32, ts: u64, flags: u64, len: u64) -> Option<Segment> {
        self.filled = false;
        if flags & TCP_SYN != 0 {
            return None;
        }
        if flags & TCP_RST == 0 {
            if let Some(bytes) = self.fill(seq, len) {
                self.filled = true;
                return Some(Segment { ts, bytes });
            }
        }
        if self.closed {
            // After the FIN only data sent again (below the FIN, or the tail
            // of the FIN segment itself: a sequence number after its start
            // does not tell where it ended), ACKs and the FIN again.
            if self
                .fin
                .is_some_and(|f| (seq.wrapping_sub(f.seq) as i32) < 0)
            {
                self.retrans += 1;
            }
            return None;
        }
        if flags & TCP_RST != 0 {
            // A reset carries the next sequence number (snd_nxt): it ends the
            // last data segment, which no other segment follows.
            let last = self.last.take()?;
            self.closed = true;
            let d = seq.wrapping_sub(last.seq) as i32;
            return (d > 0).then_some(Segment {
                ts: last.ts,
                bytes: d as u64,
            });
        }
        let mut out = None;
        let mark = SeqMark {
            seq,
            ts,
            len,
            flags,
        };
        match self.last {
            None => self.last = Some(mark),
            Some(last) => {
                let d = seq.wrapping_sub(last.seq) as i32;
                // Where this segment ends, past the last one's start.
                let ends = (d > 0).then(|| d as u64 + self.payload(len).unwrap_or(0));
                let inside = |p: u64| ends.is_some_and(|e| (d as u64) < p && e <= p);
                if self.payload(last.len).is_some_and(inside) {
                    // Inside the last segment and not past its end: a probe
                    // or its tail sent again.
                    self.retrans += 1;
                    return None;
                } else if d > 0 {
                    let d = d as u64;
                    if last.len > d && HDR_RANGE.contains(&(last.len - d)) {
                        self.vote_hdr(last.len, last.len - d);
                    }
                    // Past the last segment's end: the bytes between are a hole.
                    let bytes = match self.known_payload(last.len) {
                        Some(p) if d > p + MAX_OPTIONS => {
                            if self.holes.len() == MAX_HOLES {
                                let (s, e) = self.holes.remove(0);
                                self.forgotten += u64::from(e.wrapping_sub(s));
                            }
                            self.holes.push((last.seq.wrapping_add(p as u32), seq));
                            p
                        }
                        _ => d,
                    };
                    out = (bytes > 0).then_some(Segment { ts: last.ts, bytes });
                    self.last = Some(mark);
                } else if d == 0 {
                    // A later packet at the same sequence: the data after a pure
                    // ACK, or a retransmission. The last one that was at least
                    // as long is what carried it (a shorter one is a probe).
                    if len >= last.len {
                        self.last = Some(mark);
                    }
                } else {
                    self.retrans += 1;
                }
            }
        }
        if flags & TCP_FIN != 0 && self.last.is_some_and(|l| l.seq == seq) {
            self.fin = self.last.take();
            self.closed = true;
        }
        out
    }

    /// At the end of the trace, with the next sequence number of the latest
    /// snapshot (snd_nxt or rcv_nxt, less one if it counts a FIN nobody saw):
    /// the last data segment, which no other segment (a reset going the other
    /// way, the recording's end) followed.
    pub fn close(&mut self, nxt: u32) -> Option<Segment> {
        let last = self.last.take()?;
        let d = nxt.wrapping_sub(last.seq) as i32;
        (1..=1 << 20).contains(&d).then_some(Segment {
            ts: last.ts,
            bytes: d as u64,
        })
    }

    /// At the end of the trace without a snapshot: the last data segment,
    /// which no other segment followed (the receiver closed with data unread
    /// and reset, the recording ended), ends at its packet length less the
    /// learnt header length. `ack`: the highest acknowledgment of this
    /// direction's data, which must cover that much (a packet seen at IP may
    /// not have reached the socket); `None` for segments the socket itself
    /// processed (`tcp_probe`), whose last must then carry PSH (the end of a
    /// send: an ACK after the data, whose options may make it longer than the
    /// learnt header, never does) or more than options can add (40 B). The acknowledgment alone is not the end: it
    /// counts a FIN that no event showed.
    pub fn close_at_length(&mut self, ack: Option<u32>) -> Option<Segment> {
        let last = self.last?;
        let p = self.payload(last.len)?;
        match ack {
            Some(ack) => {
                let d = ack.wrapping_sub(last.seq) as i32;
                if d < 0 || (d as u64) < p {
                    return None;
                }
            }
            // TCP options take at most 40 B: more than that past the learnt
            // header is data even without PSH (a segment cut by the window).
            None if last.flags & TCP_PSH == 0 && p <= 40 => return None,
            None => {}
        }
        self.last = None;
        Some(Segment {
            ts: last.ts,
            bytes: p,
        })
    }

    /// With the sequence number after a FIN (snd_nxt/rcv_nxt of a later
    /// snapshot, or the acknowledgment of the FIN): the data the FIN segment
    /// carried, if any.
    pub fn fin_end(&mut self, nxt: u32) -> Option<Segment> {
        let fin = self.fin?;
        let d = nxt.wrapping_sub(fin.seq) as i32;
        if !(1..=1 << 20).contains(&d) {
            return None;
        }
        self.fin = None;
        (d > 1).then_some(Segment {
            ts: fin.ts,
            bytes: d as u64 - 1,
        })
    }
}

/// The TCP snapshot a record carries (with `--tcp-state`).
pub(crate) struct Snap {
    pub sndbuf: u32,
    pub inflight: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub srtt_us: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub retrans_out: u32,
    pub write_seq: u32,
    pub copied_seq: u32,
    pub snd_nxt: u32,
    pub rcv_nxt: u32,
    pub state: u8,
}

impl Snap {
    pub fn read(v: &View) -> Option<Snap> {
        let write_seq = v.u32(F::WriteSeq)?;
        let snd_una = v.u32(F::SndUna)?;
        let snd_nxt = v.u32(F::SndNxt)?;
        Some(Snap {
            sndbuf: write_seq.wrapping_sub(snd_una),
            inflight: snd_nxt.wrapping_sub(snd_una),
            cwnd: v.u32(F::SndCwnd)?,
            ssthresh: v.u32(F::SndSsthresh)?,
            srtt_us: v.u32(F::SrttUs)?,
            snd_wnd: v.u32(F::SndWnd)?,
            rcv_wnd: v.u32(F::RcvWnd)?,
            retrans_out: v.u32(F::RetransOut)?,
            write_seq,
            copied_seq: v.u32(F::CopiedSeq)?,
            snd_nxt,
            rcv_nxt: v.u32(F::RcvNxt)?,
            state: v.u(F::State)? as u8,
        })
    }

    /// TCP states in which the sequence numbers of a snapshot are meaningful:
    /// ESTABLISHED, FIN_WAIT1, FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING.
    pub fn synchronized(&self) -> bool {
        matches!(self.state, 1 | 4 | 5 | 8 | 9 | 11)
    }
}

/// A time-weighted sum: the value held since `since`.
#[derive(Clone, Copy, Debug)]
struct Held {
    since: u64,
    value: u32,
}

/// Linux's EBUSY (asm-generic/errno-base.h).
const EBUSY: i32 = 16;

/// The snapshots of one connection, summarised.
#[derive(Clone, Debug)]
pub(crate) struct TcpAcc {
    pub samples: u64,
    retrans_segs: Option<u64>,
    pub retrans_skbs: u64,
    bytes_retrans: u64,
    pub retrans_failed: u64,
    pub retrans_busy: u64,
    sndbuf_now: Option<Held>,
    sndbuf_area: f64,
    span: u64,
    sndbuf_max: u64,
    inflight_max: u64,
    cwnd_min: u64,
    cwnd_max: u64,
    ssthresh_last: u64,
    srtt: Dist,
    snd_wnd_max: u64,
    rcv_wnd_max: u64,
    retrans_out_max: u64,
    pub series: Option<Decimator<TcpSample>>,
}

impl TcpAcc {
    pub fn new(series: Option<usize>) -> TcpAcc {
        TcpAcc {
            samples: 0,
            retrans_segs: Some(0),
            retrans_skbs: 0,
            bytes_retrans: 0,
            retrans_failed: 0,
            retrans_busy: 0,
            sndbuf_now: None,
            sndbuf_area: 0.0,
            span: 0,
            sndbuf_max: 0,
            inflight_max: 0,
            cwnd_min: u64::MAX,
            cwnd_max: 0,
            ssthresh_last: 0,
            srtt: Dist::default(),
            snd_wnd_max: 0,
            rcv_wnd_max: 0,
            retrans_out_max: 0,
            series: series.map(Decimator::new),
        }
    }

    /// One tcp_retransmit_skb: an skb of `len` bytes holding `segs` segments
    /// (`None`: a trace from before the record carried the count), sent
    /// unless `err` is nonzero. -EBUSY is not a failure: the original was
    /// still queued on this host and the kernel put the try off (it counts
    /// it nowhere, not in TCPRetransFail).
    pub fn retransmit(&mut self, segs: Option<u32>, len: u32, err: i32) {
        if err == -EBUSY {
            self.retrans_busy += 1;
            return;
        }
        if err != 0 {
            // Segments, as TCPRetransFail adds them.
            self.retrans_failed += u64::from(segs.unwrap_or(1).max(1));
            return;
        }
        self.retrans_skbs += 1;
        self.bytes_retrans += u64::from(len);
        self.retrans_segs = match (self.retrans_segs, segs) {
            (Some(n), Some(s)) => Some(n + u64::from(s.max(1))),
            _ => None,
        };
    }

    /// One synchronized snapshot at `ts` (`t_s` seconds into the trace).
    pub fn sample(&mut self, ts: u64, t_s: f64, s: &Snap) {
        self.samples += 1;
        if let Some(h) = self.sndbuf_now {
            let dt = ts.saturating_sub(h.since);
            self.sndbuf_area += h.value as f64 * dt as f64;
            self.span = self.span.saturating_add(dt);
        }
        self.sndbuf_now = Some(Held {
            since: ts,
            value: s.sndbuf,
        });
        self.sndbuf_max = self.sndbuf_max.max(s.sndbuf as u64);
        self.inflight_max = self.inflight_max.max(s.inflight as u64);
        self.cwnd_min = self.cwnd_min.min(s.cwnd as u64);
        self.cwnd_max = self.cwnd_max.max(s.cwnd as u64);
        self.ssthresh_last = s.ssthresh as u64;
        if s.srtt_us > 0 {
            self.srtt.add(s.srtt_us as u64);
        }
        self.snd_wnd_max = self.snd_wnd_max.max(s.snd_wnd as u64);
        self.rcv_wnd_max = self.rcv_wnd_max.max(s.rcv_wnd as u64);
        self.retrans_out_max = self.retrans_out_max.max(s.retrans_out as u64);
        if let Some(d) = &mut self.series {
            d.push(TcpSample {
                t_s,
                sndbuf: s.sndbuf,
                inflight: s.inflight,
                cwnd: s.cwnd,
                ssthresh: s.ssthresh,
                srtt_us: s.srtt_us,
                snd_wnd: s.snd_wnd,
                rcv_wnd: s.rcv_wnd,
                retrans_out: s.retrans_out,
            });
        }
    }

    pub fn summary(&self) -> crate::model::TcpSummary {
        crate::model::TcpSummary {
            samples: self.samples,
            retrans_segs: self.retrans_segs,
            retrans_skbs: self.retrans_skbs,
            bytes_retrans: self.bytes_retrans,
            retrans_failed: self.retrans_failed,
            retrans_busy: self.retrans_busy,
            sndbuf_max: self.sndbuf_max,
            sndbuf_mean: if self.span > 0 {
                self.sndbuf_area / self.span as f64
            } else {
                self.sndbuf_now.map_or(0.0, |h| h.value as f64)
            },
            inflight_max: self.inflight_max,
            cwnd_min: if self.cwnd_min == u64::MAX {
                0
            } else {
                self.cwnd_min
            },
            cwnd_max: self.cwnd_max,
            ssthresh_last: self.ssthresh_last,
            srtt_us: self.srtt.stats(),
            snd_wnd_max: self.snd_wnd_max,
            rcv_wnd_max: self.rcv_wnd_max,
            retrans_out_max: self.retrans_out_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACK: u64 = 0x10;

    /// iperf3's receiver closes with data unread and resets: its last data
    /// segment has no successor, no FIN and no snapshot; its own ACK covers it
    /// (a matrix cell: 752 B of 524,325 missing from `tcp in`).
    #[test]
    fn the_last_segment_before_a_reset_ends_at_its_length() {
        let mut t = SegTrack::default();
        let hdr = 52;
        let mut out = 0;
        for (seq, len) in [(1u32, 1000u64), (1001, 1000), (2001, 752)] {
            out += t
                .segment(seq, 0, ACK | TCP_PSH, len + hdr)
                .map(|s| s.bytes)
                .unwrap_or(0);
        }
        assert_eq!(out, 2000, "two segments ended by their successors");
        // An acknowledgment short of the segment's end does not end it.
        assert!(t.close_at_length(Some(2001 + 700)).is_none());
        // One that counts a FIN nobody saw still ends it at its length.
        assert_eq!(
            t.close_at_length(Some(2001 + 753)).map(|s| s.bytes),
            Some(752)
        );
        assert!(t.close_at_length(None).is_none(), "counted once");
    }

    /// An ACK after the data, longer than the data's header by its SACK
    /// option, is no data (ss -K and kill -9 cells: +12 B).
    #[test]
    fn an_ack_with_options_is_not_a_last_segment() {
        let mut t = SegTrack::default();
        assert!(t.segment(1, 0, ACK | TCP_PSH, 32 + 86).is_none());
        assert_eq!(t.segment(87, 0, ACK, 32).map(|s| s.bytes), Some(86));
        assert!(t.segment(87, 0, ACK, 32 + 12).is_none());
        assert!(t.close_at_length(None).is_none());
        assert!(t.close_at_length(Some(87)).is_none());
    }

    /// A last segment without PSH (cut by the window before the reset) that
    /// is longer than TCP options can be is data (an iperf3 -P 4 cell: 856 B).
    #[test]
    fn a_last_segment_without_psh_counts_past_the_options_length() {
        let mut t = SegTrack::default();
        assert!(t.segment(1, 0, ACK | TCP_PSH, 32 + 1448).is_none());
        assert_eq!(
            t.segment(1449, 0, ACK, 32 + 856).map(|s| s.bytes),
            Some(1448)
        );
        assert_eq!(t.close_at_length(None).map(|s| s.bytes), Some(856));
    }

    /// IPv6 BIG TCP on loopback (oracle_lo_bulk_v6): packets up to 65,575 B
    /// have 72 B of headers, jumbograms 80 (their hop-by-hop option). The
    /// FIN segment after an 87,840-byte jumbogram starts 87,760 B after it:
    /// new data reaching past that packet's end, not a probe inside it.
    #[test]
    fn a_jumbogram_learns_its_own_header_length() {
        let mut t = SegTrack::default();
        let mut out = 0;
        let mut seq = 1u32;
        // 65,536 B jumbograms (80 B of headers), then 65,464 B segments in
        // 65,536-byte packets (72 B), the majority.
        for (pay, len) in [
            (65536u64, 65616u64),
            (65536, 65616),
            (65464, 65536),
            (65464, 65536),
        ]
        .into_iter()
        .chain(std::iter::repeat_n((65464, 65536), 4))
        {
            out += t.segment(seq, 0, ACK, len).map_or(0, |s| s.bytes);
            seq += pay as u32;
        }
        out += t
            .segment(seq, 0, ACK | TCP_PSH, 87840)
            .map_or(0, |s| s.bytes);
        let fin = seq + 87760;
        out += t
            .segment(fin, 0, ACK | TCP_PSH | TCP_FIN, 44104)
            .map_or(0, |s| s.bytes);
        // The ACK of the peer's FIN, one past ours, ends nothing.
        assert!(t.segment(fin + 44033, 0, ACK, 72).is_none());
        out += t.fin_end(fin + 44033).map_or(0, |s| s.bytes);
        assert_eq!(out, 2 * 65536 + 6 * 65464 + 87760 + 44032);
        assert_eq!(t.retrans, 0);
    }

    /// Retransmissions count segments and skbs; a failed one (err) neither;
    /// one record without the segment count (an older trace) makes the
    /// segment total unknown, not a guess.
    #[test]
    fn retransmissions_count_segments_skbs_and_failures_apart() {
        let mut t = TcpAcc::new(None);
        t.retransmit(Some(15), 15 * 1448, 0);
        t.retransmit(Some(0), 1448, 0);
        t.retransmit(Some(3), 3 * 1448, -113);
        t.retransmit(Some(1), 1448, -16);
        t.retransmit(Some(1), 1448, -16);
        let s = t.summary();
        assert_eq!(
            (
                s.retrans_segs,
                s.retrans_skbs,
                s.bytes_retrans,
                s.retrans_failed,
                s.retrans_busy
            ),
            (Some(16), 2, 16 * 1448, 3, 2)
        );
        assert!(s
            .retrans_text()
            .ends_with("retrans_failed 3, retrans_busy 2 (put off: the original still queued)"));
        t.retransmit(None, 1448, 0);
        assert_eq!(t.summary().retrans_segs, None);
    }

    /// Feeds segments of `pay` bytes each (32 B of headers), numbered from 0
    /// (segment i starts at 1 + i × pay), in the given order; returns the
    /// units (bytes each) and the tracker.
    fn feed(order: &[u32], pay: u32) -> (Vec<u64>, SegTrack) {
        let mut t = SegTrack::default();
        let mut units = Vec::new();
        for &i in order {
            let seq = 1 + i * pay;
            if let Some(s) = t.segment(seq, u64::from(i), ACK, 32 + u64::from(pay)) {
                units.push(s.bytes);
            }
        }
        (units, t)
    }

    /// Reordered on the way (two CPUs' backlogs over veth): segment 10
    /// arrives before 5…9, which then come between 11…13. Every segment is
    /// one unit of its own length, none a retransmission; before holes were
    /// kept, segment 4 took the hole's bytes (7 × 1448) and 5…9 counted as
    /// retransmissions.
    #[test]
    fn reordered_segments_fill_their_hole() {
        let (mut units, mut t) = feed(&[0, 1, 2, 3, 4, 10, 5, 11, 6, 12, 7, 8, 9, 13], 1448);
        assert_eq!(t.retrans, 0);
        assert_eq!(t.unfilled_bytes(), 0);
        // The same segment sent again is a retransmission.
        assert!(t.segment(1 + 6 * 1448, 0, ACK, 32 + 1448).is_none());
        assert_eq!(t.retrans, 1);
        assert!(!t.filled());
        // 13, the last, ends at its length.
        units.extend(t.close_at_length(None).map(|s| s.bytes));
        assert_eq!(units, vec![1448; 14]);
    }

    /// A segment never seen (its record lost) leaves a hole nothing fills:
    /// its bytes are the stream's, in no unit.
    #[test]
    fn a_hole_nothing_fills_keeps_its_bytes() {
        let (units, t) = feed(&[0, 1, 3, 4], 1000);
        assert_eq!(units, vec![1000, 1000, 1000]);
        assert_eq!(t.unfilled_bytes(), 1000);
        assert_eq!(t.retrans, 0);
    }

    /// Part of a hole: a segment cut differently the second time (a
    /// retransmission after a loss before this point) brings only the bytes
    /// not seen; the rest of the hole stays open.
    #[test]
    fn a_segment_brings_only_the_bytes_of_a_hole() {
        let (mut units, mut t) = feed(&[0, 1, 4], 1000);
        // 2001..4001 missing; a 500-byte segment at 2501.
        let s = t.segment(2501, 9, ACK, 32 + 500).expect("fills");
        units.push(s.bytes);
        assert!(t.filled());
        assert_eq!(t.unfilled_bytes(), 1500);
        // One overlapping the hole's start and the bytes just filled.
        let s = t.segment(2001, 9, ACK, 32 + 1000).expect("fills");
        assert_eq!(s.bytes, 500);
        assert_eq!(t.unfilled_bytes(), 1000);
        assert_eq!(units, vec![1000, 1000, 500]);
    }

    /// A gap no longer than options can add is a header shorter than the
    /// learnt one (this segment without the SACK blocks the others carried),
    /// not a hole: the segment is sized by the distance, as before.
    #[test]
    fn a_gap_within_the_options_length_is_no_hole() {
        let mut t = SegTrack::default();
        let mut units = Vec::new();
        // Headers of 44 B (timestamps and one SACK block), then one of 32.
        for (seq, len) in [
            (1u32, 44 + 1448u64),
            (1449, 44 + 1448),
            (2897, 32 + 1448),
            (4345, 44 + 1448),
        ] {
            if let Some(s) = t.segment(seq, 0, ACK, len) {
                units.push(s.bytes);
            }
        }
        assert_eq!(units, vec![1448, 1448, 1448]);
        assert_eq!(t.unfilled_bytes(), 0);
    }

    /// A segment below the last one (a retransmission) is no new data and
    /// no overflow, whatever its length.
    #[test]
    fn a_segment_below_the_last_is_a_retransmission() {
        let mut t = SegTrack::default();
        assert!(t.segment(1001, 0, ACK, 32 + 1000).is_none());
        assert_eq!(
            t.segment(2001, 0, ACK, 32 + 1000).map(|s| s.bytes),
            Some(1000)
        );
        assert!(t.segment(1001, 0, ACK, 32 + 1000).is_none());
        assert!(t.segment(1, 0, ACK, u32::MAX as u64).is_none());
        assert_eq!(t.retrans, 2);
    }

    /// Without a learnt header length the end stays unknown.
    #[test]
    fn a_lone_segment_is_not_sized_by_an_acknowledgment() {
        let mut t = SegTrack::default();
        assert!(t.segment(1, 0, ACK, 300).is_none());
        assert!(t.close_at_length(Some(249)).is_none());
        assert!(t.close_at_length(None).is_none());
    }
}
