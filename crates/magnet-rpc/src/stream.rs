//! One direction of a TCP connection: segments put back in order (with a bounded
//! out-of-order store), then cut into ONC-RPC records by their record marks
//! (RFC 5531 §11), fragments joined.
//!
//! A stream whose start was not captured, or that lost bytes for good, is
//! *desynchronised*: it scans forward for the next place that looks like a record mark
//! followed by an RPC header, and counts the bytes it passed over.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use crate::net::{TcpInfo, TCP_SYN};
use crate::rpc::{looks_like_rpc, HEADER_PEEK};
use crate::Counters;

/// Bounds for one stream.
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    /// Out-of-order bytes held while waiting for a missing segment; past this the hole
    /// is declared lost.
    pub max_ooo_bytes: usize,
    /// How long (capture time) a hole may stay open before it is declared lost.
    pub gap_timeout_ns: i64,
    /// Largest RPC record accepted (all fragments together).
    pub max_record: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_ooo_bytes: 4 << 20,
            gap_timeout_ns: 2_000_000_000,
            max_record: 8 << 20,
        }
    }
}

#[derive(Default)]
pub struct Stream {
    next: Option<u32>,
    synced: bool,
    /// Set when the stream began with a SYN and its first record was not RPC.
    pub not_rpc: bool,
    first_record_pending: bool,
    /// Bytes skipped and resyncs before the first record was found: counted
    /// once one is (damage), dropped if the connection is not RPC at all.
    unproven: (u64, u64),
    /// In-order bytes not yet consumed.
    buf: Vec<u8>,
    /// Fragments of the current record.
    rec: Vec<u8>,
    rec_dropping: bool,
    /// Out-of-order segments by stream position (see `pos`): a segment arriving is
    /// placed in O(log n) and the next in-order one found in O(log n), so reassembly
    /// stays linear however the segments were shuffled.
    ooo: BTreeMap<i64, Vec<u8>>,
    /// Stream position of `next` (bytes since the stream was first seen, unwrapped).
    pos: i64,
    ooo_bytes: usize,
    ooo_since: i64,
    /// Highest sequence number the peer acknowledged: bytes below it that we never saw
    /// were lost by the capture, not by the network, and will not come again.
    peer_acked: Option<u32>,
    pub last_ts: i64,
    /// Time of this stream's entry in the decoder's idle queue.
    pub(crate) queued_at: i64,
}

fn rel(a: u32, b: u32) -> i64 {
    a.wrapping_sub(b) as i32 as i64
}

impl Stream {
    /// A stream first seen at `ts`.
    pub fn new(ts: i64) -> Self {
        Stream {
            last_ts: ts,
            queued_at: ts,
            ..Default::default()
        }
    }

    /// Bytes held by this stream.
    pub fn held(&self) -> usize {
        self.buf.capacity() + self.rec.capacity() + self.ooo_bytes
    }

    /// Feeds one segment; complete records go to `out`.
    pub fn segment(
        &mut self,
        ts: i64,
        tcp: TcpInfo,
        data: &[u8],
        lim: &StreamLimits,
        c: &mut Counters,
        out: &mut dyn FnMut(&[u8]),
    ) {
        self.last_ts = ts;
        if tcp.flags & TCP_SYN != 0 {
            // A new connection (or a SYN retransmitted): start clean.
            let fresh = Stream {
                next: Some(tcp.seq.wrapping_add(1)),
                synced: true,
                first_record_pending: true,
                last_ts: ts,
                queued_at: self.queued_at,
                ..Default::default()
            };
            *self = fresh;
            return;
        }
        if self.not_rpc || data.is_empty() {
            return;
        }
        let next = match self.next {
            Some(n) => n,
            None => {
                // Capture began mid-stream.
                self.next = Some(tcp.seq);
                self.synced = false;
                tcp.seq
            }
        };
        let r = rel(tcp.seq, next);
        let end_rel = r + data.len() as i64;
        if end_rel <= 0 {
            c.tcp_retransmitted += 1;
        } else if r <= 0 {
            let skip = (-r) as usize;
            self.in_order(&data[skip..], lim, c, out);
            self.drain_ooo(lim, c, out);
        } else {
            c.tcp_out_of_order += 1;
            if self.ooo.is_empty() {
                self.ooo_since = ts;
            }
            let at = self.pos + r;
            match self.ooo.get_mut(&at) {
                Some(d) if d.len() >= data.len() => {}
                Some(d) => {
                    self.ooo_bytes += data.len() - d.len();
                    d.clear();
                    d.extend_from_slice(data);
                }
                None => {
                    self.ooo_bytes += data.len();
                    self.ooo.insert(at, data.to_vec());
                }
            }
        }
        let acked_past = match (self.peer_acked, self.next) {
            (Some(a), Some(n)) => rel(a, n) > 0,
            _ => false,
        };
        if !self.ooo.is_empty()
            && (acked_past
                || self.ooo_bytes > lim.max_ooo_bytes
                || ts - self.ooo_since > lim.gap_timeout_ns)
        {
            self.skip_gap(lim, c, out);
        }
    }

    /// The peer acknowledged everything below `ack`. If we hold data beyond a hole that
    /// the peer has acknowledged, the hole was lost by the capture: skip it now.
    pub fn ack(
        &mut self,
        ack: u32,
        lim: &StreamLimits,
        c: &mut Counters,
        out: &mut dyn FnMut(&[u8]),
    ) {
        let Some(n) = self.next else { return };
        if self.peer_acked.is_none_or(|a| rel(ack, a) > 0) {
            self.peer_acked = Some(ack);
        }
        if rel(ack, n) > 0 && !self.ooo.is_empty() {
            self.skip_gap(lim, c, out);
        }
    }

    /// Gives up on every hole: used at the end of a capture and when bounds are hit.
    pub fn flush(&mut self, lim: &StreamLimits, c: &mut Counters, out: &mut dyn FnMut(&[u8])) {
        while !self.ooo.is_empty() {
            self.skip_gap(lim, c, out);
        }
    }

    fn skip_gap(&mut self, lim: &StreamLimits, c: &mut Counters, out: &mut dyn FnMut(&[u8])) {
        let Some(next) = self.next else { return };
        let Some((&at, _)) = self.ooo.first_key_value() else {
            return;
        };
        let first = at - self.pos;
        if first > 0 {
            c.tcp_gap_bytes += first as u64;
            self.next = Some(next.wrapping_add(first as u32));
            self.pos = at;
            self.desync(c);
        }
        self.drain_ooo(lim, c, out);
    }

    fn desync(&mut self, c: &mut Counters) {
        if self.synced {
            c.tcp_resyncs += 1;
        }
        self.synced = false;
        c.tcp_skipped_bytes += self.buf.len() as u64;
        self.buf.clear();
        self.rec.clear();
        self.rec_dropping = false;
        self.first_record_pending = false;
        c.tcp_skipped_bytes += self.unproven.0;
        c.tcp_resyncs += self.unproven.1;
        self.unproven = (0, 0);
    }

    fn drain_ooo(&mut self, lim: &StreamLimits, c: &mut Counters, out: &mut dyn FnMut(&[u8])) {
        while let Some(entry) = self.ooo.first_entry() {
            let r = *entry.key() - self.pos;
            if r > 0 {
                return;
            }
            let d = entry.remove();
            self.ooo_bytes -= d.len();
            if r + d.len() as i64 > 0 {
                self.in_order(&d[(-r) as usize..], lim, c, out);
            }
        }
    }

    fn in_order(
        &mut self,
        data: &[u8],
        lim: &StreamLimits,
        c: &mut Counters,
        out: &mut dyn FnMut(&[u8]),
    ) {
        self.next = self.next.map(|n| n.wrapping_add(data.len() as u32));
        self.pos += data.len() as i64;
        if self.buf.is_empty() {
            let used = self.records(data, 0, lim, c, out);
            if !self.not_rpc {
                self.buf.extend_from_slice(&data[used..]);
            }
        } else {
            let mut buf = std::mem::take(&mut self.buf);
            let seg = buf.len();
            buf.extend_from_slice(data);
            let used = self.records(&buf, seg, lim, c, out);
            buf.drain(..used);
            if self.buf.is_empty() && !self.not_rpc {
                self.buf = buf;
            }
        }
        shrink(&mut self.buf);
    }

    /// Counts `n` bytes passed over; before the first record they are held
    /// back (`unproven`) until the connection shows it speaks RPC.
    fn skipped(&mut self, c: &mut Counters, n: u64) {
        if self.first_record_pending {
            self.unproven.0 += n;
        } else {
            c.tcp_skipped_bytes += n;
        }
    }

    /// Gives the connection up as not RPC; returns `used`.
    fn not_rpc(&mut self, c: &mut Counters, used: usize) -> usize {
        self.not_rpc = true;
        c.not_rpc += 1;
        self.buf = Vec::new();
        used
    }

    /// Consumes whole fragments from `d` (whose bytes from `seg` on came in the
    /// segment just read); returns how many bytes were used.
    fn records(
        &mut self,
        d: &[u8],
        seg: usize,
        lim: &StreamLimits,
        c: &mut Counters,
        out: &mut dyn FnMut(&[u8]),
    ) -> usize {
        let mut p = 0;
        // The mark of the record emitted last, when it was one fragment that
        // began in `d`: a mark after it that does not look right says its length
        // was damaged (one flipped bit), and the records it swallowed lie inside it.
        let mut prev: Option<usize> = None;
        loop {
            if !self.synced {
                match self.find_sync(d, p, lim, c) {
                    ControlFlow::Continue(q) => p = q,
                    ControlFlow::Break(used) => return used,
                }
            }
            let rest = &d[p..];
            if rest.len() < 4 {
                return p;
            }
            let mark = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
            let last = mark & 0x8000_0000 != 0;
            let len = (mark & 0x7fff_ffff) as usize;
            if !self.rec.is_empty() && !self.rec_dropping {
                // A continuation fragment that begins like an RPC message is the
                // next record: the fragment before it lost its last-fragment bit.
                let need = len.min(HEADER_PEEK);
                let have = (rest.len() - 4).min(need);
                if len >= 24 && len <= lim.max_record && looks_like_rpc(&rest[4..4 + have]) {
                    c.tcp_resyncs += 1;
                    out(&self.rec);
                    self.rec.clear();
                    shrink(&mut self.rec);
                }
            }
            let starting = self.rec.is_empty() && !self.rec_dropping;
            if starting {
                match self.start_record(d, p, len, lim, c, &mut prev) {
                    Start::Take => {}
                    Start::Wait => return p,
                    Start::Retry(q) => {
                        p = q;
                        continue;
                    }
                    Start::Done(used) => return used,
                }
            }
            // A record that began before the segment just read: when that segment
            // begins with a record of its own, the length was damaged (one flipped
            // bit would otherwise hold back, and lose, every record up to the
            // length it claims). The bytes before that segment go out as the
            // record; counted as a resync. (Checked once per segment: a record's
            // payload that happens to begin a segment with a mark and an RPC
            // header would be cut there.)
            if starting
                && seg > p + 4
                && seg < d.len().min(p + 4 + len)
                && record_starts(&d[seg..], lim)
            {
                c.tcp_resyncs += 1;
                out(&d[p + 4..seg]);
                prev = None;
                p = seg;
                continue;
            }
            if rest.len() < 4 + len {
                return p;
            }
            let frag = &rest[4..4 + len];
            if self.rec_dropping || self.rec.len() + len > lim.max_record {
                if !self.rec_dropping {
                    c.records_too_large += 1;
                }
                self.rec.clear();
                self.rec_dropping = !last;
            } else if last && self.rec.is_empty() {
                out(frag);
                prev = Some(p);
                p += 4 + len;
                continue;
            } else {
                self.rec.extend_from_slice(frag);
                if last {
                    out(&self.rec);
                    self.rec.clear();
                    shrink(&mut self.rec);
                }
            }
            prev = None;
            p += 4 + len;
        }
    }

    /// Out of sync: skips to the next place a record may begin, `p` moved
    /// there; or breaks with the bytes used (the connection does not speak
    /// RPC, or no record begins in what is at hand: a tail long enough to
    /// hold one's start is kept).
    fn find_sync(
        &mut self,
        d: &[u8],
        p: usize,
        lim: &StreamLimits,
        c: &mut Counters,
    ) -> ControlFlow<usize, usize> {
        if self.first_record_pending && self.pos > NOT_RPC_AFTER {
            return ControlFlow::Break(self.not_rpc(c, d.len()));
        }
        match find_record(&d[p..], lim.max_record) {
            Some(k) => {
                self.skipped(c, k as u64);
                self.synced = true;
                ControlFlow::Continue(p + k)
            }
            None => {
                // Keep a tail long enough to hold the start of a record.
                let keep = (d.len() - p).min(3 + HEADER_PEEK);
                let skip = d.len() - p - keep;
                self.skipped(c, skip as u64);
                ControlFlow::Break(p + skip)
            }
        }
    }

    /// A record starts at `p` with a mark of length `len`: whether its
    /// header looks like RPC decides whether it is taken, waited on (more
    /// bytes needed), or stepped over (`p` moved on: a byte, or back into
    /// the record before, whose damaged length swallowed records).
    /// `prev`: the mark of the record emitted last (see [`Self::records`]).
    fn start_record(
        &mut self,
        d: &[u8],
        p: usize,
        len: usize,
        lim: &StreamLimits,
        c: &mut Counters,
        prev: &mut Option<usize>,
    ) -> Start {
        let rest = &d[p..];
        // A header that looks right in the bytes at hand is taken at once
        // (waiting for more would hold a call back past its reply when a
        // damaged length claims more than the record has); one that does
        // not yet may need more bytes.
        let need = len.min(HEADER_PEEK);
        let have = (rest.len() - 4).min(need);
        // Whether the header looks right; `None`: not known until more
        // bytes come (a garbage mark is told at once, not after the
        // records it would hold back).
        let verdict = if len > lim.max_record {
            Some(false)
        } else if looks_like_rpc(&rest[4..4 + have]) {
            Some(true)
        } else if have < need {
            header_verdict(&rest[4..4 + have])
        } else {
            Some(false)
        };
        let rpc = verdict == Some(true);
        if !rpc {
            // The record before ends where no record begins: look for the
            // records its (damaged) length swallowed, inside it. Counted as
            // a resync; the damaged record itself went out with what
            // followed it.
            if let Some(s) = prev.take() {
                let from = s + 4 + 24;
                let found = d
                    .get(from..)
                    .and_then(|t| find_record(t, lim.max_record))
                    .map(|k| from + k)
                    .filter(|&q| q < p);
                if let Some(q) = found {
                    c.tcp_resyncs += 1;
                    return Start::Retry(q);
                }
            }
        }
        if verdict.is_none() {
            return Start::Wait;
        }
        if !rpc {
            if self.first_record_pending && self.pos > NOT_RPC_AFTER {
                // Seen from its SYN, and no RPC record in its first
                // 64 KiB: the connection does not speak RPC. (Sooner,
                // a first record that does not look right may be
                // damage: a flipped bit must not cost the connection.)
                return Start::Done(self.not_rpc(c, d.len()));
            }
            if self.first_record_pending {
                self.unproven.1 += 1;
            } else {
                c.tcp_resyncs += 1;
            }
            self.synced = false;
            self.skipped(c, 1);
            return Start::Retry(p + 1);
        }
        if self.first_record_pending {
            // The bytes before the first record were damage after all.
            self.first_record_pending = false;
            c.tcp_skipped_bytes += self.unproven.0;
            c.tcp_resyncs += self.unproven.1;
            self.unproven = (0, 0);
        }
        Start::Take
    }
}

/// What [`Stream::start_record`] makes of a record's start.
enum Start {
    /// It is a record: read it.
    Take,
    /// Not known until more bytes come: use the bytes before it.
    Wait,
    /// Not a record: go on from this offset.
    Retry(usize),
    /// The connection does not speak RPC: these bytes were used.
    Done(usize),
}

/// Buffers larger than this are given back once mostly empty, so that an idle
/// connection does not keep the largest record it ever carried (a replicated
/// kernel-client capture once peaked at 272 MB that way).
const KEEP: usize = 64 << 10;

/// A connection seen from its SYN is judged not RPC when its first this many
/// bytes hold no record that looks like RPC.
const NOT_RPC_AFTER: i64 = 64 << 10;

fn shrink(v: &mut Vec<u8>) {
    if v.capacity() > KEEP && v.len() <= v.capacity() / 4 {
        if v.is_empty() {
            *v = Vec::new();
        } else {
            v.shrink_to(v.len().max(KEEP / 4));
        }
    }
}

/// [`looks_like_rpc`] on the first bytes of a header: `Some(false)` when a word
/// there already rules it out, `None` when the words it needs are not all there.
fn header_verdict(b: &[u8]) -> Option<bool> {
    let w = |i: usize| -> Option<u32> {
        b.get(i * 4..i * 4 + 4)
            .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    };
    // (word, whether its value may be there)
    type Check = (usize, fn(u32) -> bool);
    let checks: Vec<Check> = match w(1)? {
        0 => vec![
            (2, |v| v == 2),
            (3, |v| v != 0),
            (4, |v| (1..=64).contains(&v)),
            (5, |v| v < 4096),
            (6, |v| matches!(v, 0..=6 | 390003..=390005)),
            (7, |v| v <= 400 && v % 4 == 0),
        ],
        1 => match w(2)? {
            0 => {
                if !matches!(w(3)?, 0..=6) {
                    return Some(false);
                }
                let vlen = w(4)?;
                if vlen > 400 {
                    return Some(false);
                }
                return Some(matches!(w(5 + (vlen as usize).div_ceil(4))?, 0..=5));
            }
            1 => vec![(3, |v| v <= 1)],
            _ => return Some(false),
        },
        _ => return Some(false),
    };
    let mut missing = false;
    for (i, ok) in checks {
        match w(i) {
            Some(v) if !ok(v) => return Some(false),
            Some(_) => {}
            None => missing = true,
        }
    }
    if missing {
        None
    } else {
        Some(true)
    }
}

/// Whether `d` begins with a record mark of a sane length and an RPC call or
/// reply header (as far as `d` holds it; at least the message type).
fn record_starts(d: &[u8], lim: &StreamLimits) -> bool {
    if d.len() < 4 + 12 {
        return false;
    }
    let mark = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
    let len = (mark & 0x7fff_ffff) as usize;
    let have = (d.len() - 4).min(len.min(HEADER_PEEK));
    (24..=lim.max_record).contains(&len) && looks_like_rpc(&d[4..4 + have])
}

/// Finds the first offset in `d` that looks like the start of an RPC record: a record
/// mark with a sane length followed by a plausible call or reply header, and, when the
/// record ends inside `d`, followed by another plausible mark.
pub fn find_record(d: &[u8], max_record: usize) -> Option<usize> {
    if d.len() < 4 + 24 {
        return None;
    }
    let mut p = 0;
    while p + 4 + 24 <= d.len() {
        // Fast reject: the message type word (mark + xid) must be 0 or 1.
        let mt = &d[p + 8..p + 12];
        if mt[0] == 0 && mt[1] == 0 && mt[2] == 0 && mt[3] <= 1 {
            let mark = u32::from_be_bytes([d[p], d[p + 1], d[p + 2], d[p + 3]]);
            let len = (mark & 0x7fff_ffff) as usize;
            let need = len.min(HEADER_PEEK);
            let hdr = &d[p + 4..(p + 4 + need).min(d.len())];
            if (24..=max_record).contains(&len) && hdr.len() == need && looks_like_rpc(hdr) {
                let after = p + 4 + len;
                let follow_ok = if after + 12 <= d.len() {
                    let m2 =
                        u32::from_be_bytes([d[after], d[after + 1], d[after + 2], d[after + 3]]);
                    let l2 = (m2 & 0x7fff_ffff) as usize;
                    (24..=max_record).contains(&l2)
                        && d[after + 8..after + 11] == [0, 0, 0]
                        && d[after + 11] <= 1
                } else {
                    true
                };
                if follow_ok {
                    return Some(p);
                }
            }
        }
        p += 1;
    }
    None
}
