//! Latency through the stack, matched by TCP sequence numbers.
//!
//! - **send**: from the call's first byte entering TCP (the first
//!   `tcp_sendmsg_locked` event of the call, whose `write_seq` is that byte's
//!   sequence number) to the moment the packet holding the call's last byte
//!   (`write_seq + bytes returned − 1`) was handed to the driver whole.
//! - **receive**: per wire segment, from its arrival at the device (dev_rx of
//!   the same packet id, else its IP LOCAL_IN, else tcp_probe) to the recv call
//!   that returned its first byte.

use std::collections::VecDeque;

use crate::dist::Dist;
use crate::tcp::{TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN};
use crate::Map;

/// Queued sends/segments per connection awaiting a match.
pub(crate) const QUEUE_CAP: usize = 1 << 16;

/// The first `tcp_sendmsg_locked` event of a send call still in progress.
#[derive(Clone, Copy, Debug)]
struct SendStart {
    write_seq: u32,
    ts: u64,
    tid: u32,
}

/// A returned send whose last byte has not been seen leaving yet.
#[derive(Clone, Copy, Debug)]
struct PendingSend {
    /// Sequence number just after the call's last byte.
    end_seq: u32,
    start_ts: u64,
}

/// The newest data segment seen at IP LOCAL_OUT.
#[derive(Clone, Copy, Debug)]
struct LastSegment {
    seq: u32,
    pkt: u64,
    /// When its packet reached the driver whole.
    at_driver: Option<u64>,
}

/// A TCP packet of one connection at IP LOCAL_OUT.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IpSegment {
    pub seq: u32,
    pub pkt: u64,
    pub flags: u64,
    /// IP total length.
    pub len: u64,
    pub ts: u64,
}

/// A packet TCP handed to IP, on its way to the driver. A GSO packet reaches
/// the driver as several segments with packet ids of their own; it has arrived
/// when its payload has.
#[derive(Clone, Copy, Debug)]
struct QueuedPacket {
    pkt: u64,
    ip_len: u64,
    payload_seen: u64,
}

/// A send waiting for the device event of the packet holding its last byte.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Waiter {
    pub cookie: u64,
    pub start_ts: u64,
}

/// The sends waiting on one packet.
#[derive(Clone, Debug)]
pub(crate) struct Waiters {
    pub since: u64,
    pub sends: Vec<Waiter>,
}

/// Packets holding the last byte of sends, by packet id.
pub(crate) type SendWait = Map<u64, Waiters>;

fn wait_on(waiting: &mut SendWait, pkt: u64, now: u64, w: Waiter) {
    waiting
        .entry(pkt)
        .or_insert_with(|| Waiters {
            since: now,
            sends: Vec::new(),
        })
        .sends
        .push(w);
}

/// The send side of one connection.
#[derive(Debug, Default)]
pub(crate) struct SendPath {
    start: Option<SendStart>,
    pending: VecDeque<PendingSend>,
    last_seg: Option<LastSegment>,
    txq: VecDeque<QueuedPacket>,
    /// Link-layer header bytes (dev length − IP length of a whole packet).
    link_hdr: Option<u64>,
    /// IP + TCP header bytes of a data segment (IP length − payload).
    l34_hdr: Option<u64>,
    /// The previous data segment at IP.
    last_ip: Option<IpSegment>,
    /// Largest payload of a segment frame seen (the MSS in practice).
    seg_payload_max: u64,
    pub latency: Dist,
    pub unmatched: u64,
}

impl SendPath {
    /// A `tcp_sendmsg_locked` event (one per chunk the call copies): the first
    /// one of a call gives the sequence number of its first byte.
    pub fn sendmsg(&mut self, write_seq: u32, ts: u64, tid: u32) {
        if self.start.is_none_or(|s| s.tid != tid) {
            self.start = Some(SendStart { write_seq, ts, tid });
        }
    }

    /// A send call of thread `tid` returned `n` bytes.
    pub fn sent(&mut self, n: u64, tid: u32) {
        let Some(s) = self.start.take() else { return };
        if s.tid != tid {
            return;
        }
        if self.pending.len() >= QUEUE_CAP {
            self.pending.pop_front();
            self.unmatched += 1;
        }
        self.pending.push_back(PendingSend {
            end_seq: s.write_seq.wrapping_add(n as u32),
            start_ts: s.ts,
        });
    }

    /// A TCP packet of this connection at IP LOCAL_OUT.
    pub fn ip_out(&mut self, cookie: u64, s: IpSegment, waiting: &mut SendWait) {
        let IpSegment {
            seq,
            pkt,
            flags,
            len,
            ..
        } = s;
        if flags & (TCP_SYN | TCP_RST) == 0 {
            if let Some(last) = self.last_ip {
                let d = seq.wrapping_sub(last.seq) as i32;
                if d > 0 && (d as u64) < last.len && last.len - d as u64 <= 120 {
                    self.l34_hdr = Some(last.len - d as u64);
                }
            }
            self.last_ip = Some(s);
            // Until two data segments in a row tell it, a pure ACK (the
            // handshake's last one) gives the header length.
            if flags == TCP_ACK && self.l34_hdr.is_none() {
                self.l34_hdr = Some(len);
            }
        }
        if self.txq.len() >= QUEUE_CAP {
            self.txq.pop_front();
        }
        self.txq.push_back(QueuedPacket {
            pkt,
            ip_len: len,
            payload_seen: 0,
        });
        self.out_segment(cookie, s, waiting);
    }

    /// A new outgoing segment at `seq` (first sighting at IP): sends whose last
    /// byte lies before `seq` were carried by the previous segment or earlier.
    fn out_segment(&mut self, cookie: u64, s: IpSegment, waiting: &mut SendWait) {
        let IpSegment {
            seq,
            pkt,
            flags,
            ts,
            ..
        } = s;
        if flags & (TCP_SYN | TCP_RST) != 0 {
            return;
        }
        if let Some(last) = self.last_seg {
            let d = seq.wrapping_sub(last.seq) as i32;
            if d < 0 {
                return; // retransmission of older data
            }
            if d > 0 {
                while let Some(&p) = self.pending.front() {
                    if (seq.wrapping_sub(p.end_seq) as i32) < 0 {
                        break;
                    }
                    self.pending.pop_front();
                    match last.at_driver {
                        Some(t) => self.latency.add(t.saturating_sub(p.start_ts)),
                        None => wait_on(
                            waiting,
                            last.pkt,
                            ts,
                            Waiter {
                                cookie,
                                start_ts: p.start_ts,
                            },
                        ),
                    }
                }
            }
        }
        self.last_seg = Some(LastSegment {
            seq,
            pkt,
            at_driver: None,
        });
        if flags & TCP_FIN != 0 {
            // The FIN comes after all data: what is still pending is in it.
            while let Some(p) = self.pending.pop_front() {
                wait_on(
                    waiting,
                    pkt,
                    ts,
                    Waiter {
                        cookie,
                        start_ts: p.start_ts,
                    },
                );
            }
        }
    }

    /// A frame of `len` bytes (packet id `pkt`) handed to the driver: the packet
    /// (as IP saw it) that has now reached the driver whole, if any.
    pub fn dev_tx(&mut self, pkt: u64, len: u64) -> Option<u64> {
        let mut done = None;
        // A whole packet: same id, and the IP length plus the link header.
        // (Packet ids of freed skbs are sometimes reused by segments; the
        // length tells them apart.)
        let link = self.link_hdr;
        let whole = |q: &QueuedPacket| {
            q.pkt == pkt && len > q.ip_len && link.is_none_or(|l| len == q.ip_len + l)
        };
        if let Some(pos) = self.txq.iter().take(4).position(whole) {
            // Anything queued before it left too.
            self.txq.drain(..pos);
            if let Some(q) = self.txq.pop_front() {
                if len - q.ip_len <= 64 {
                    self.link_hdr = Some(len - q.ip_len);
                }
                done = Some(q.pkt);
            }
        } else if let (Some(l2), Some(l34)) = (self.link_hdr, self.l34_hdr) {
            // A segment of the packet at the head of the queue.
            let payload = len.saturating_sub(l2 + l34);
            let full = self.seg_payload_max.max(payload);
            self.seg_payload_max = full;
            if let Some(head) = self.txq.front_mut() {
                head.payload_seen = head.payload_seen.saturating_add(payload);
                // Only the last segment of a GSO packet is short: if one comes
                // before the packet's payload is complete, a frame went
                // unrecorded, and the packet still ends here.
                if head.payload_seen >= head.ip_len.saturating_sub(l34) || payload < full {
                    done = self.txq.pop_front().map(|q| q.pkt);
                }
            }
        }
        if done.is_none() && self.txq.is_empty() {
            // Nothing queued from IP (no IP layer recorded): the frame is the packet.
            done = Some(pkt);
        }
        done
    }

    /// Packet `pkt` reached the driver whole at `ts`.
    pub fn at_driver(&mut self, pkt: u64, ts: u64) {
        if let Some(ls) = &mut self.last_seg {
            if ls.pkt == pkt && ls.at_driver.is_none() {
                ls.at_driver = Some(ts);
            }
        }
    }

    /// Sends still pending at the end: unmatched when IP gave the segments'
    /// sequence numbers, else not measured at all.
    pub fn finish(&mut self, ip_seen: bool) {
        if ip_seen {
            self.unmatched += self.pending.len() as u64;
        } else {
            self.unmatched = 0;
        }
    }
}

/// A received segment waiting for the recv that returns its first byte.
#[derive(Clone, Copy, Debug)]
struct RxSegment {
    seq: u32,
    arrival: u64,
    /// Carries a FIN (which takes one sequence number, no data).
    fin: bool,
}

/// Where received segments are learnt from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RxSource {
    /// IP LOCAL_IN: one entry per packet as it came off the wire.
    Ip,
    /// tcp_probe: queued segments may have been merged into one.
    Tcp,
}

/// The receive side of one connection.
#[derive(Debug, Default)]
pub(crate) struct RecvPath {
    /// Sequence number of the first byte the app received.
    base: Option<u32>,
    /// Bytes the app received so far.
    received: u32,
    segs: VecDeque<RxSegment>,
    /// LOCAL_IN gave segments: tcp_probe's (possibly merged) ones are not used.
    from_ip: bool,
    pub latency: Dist,
    pub unmatched: u64,
    pub cpu_wait: Dist,
    pub wait_sum: u128,
    pub delay_sum: u128,
}

impl RecvPath {
    /// A snapshot's `copied_seq` (the next byte the app will read) fixes the
    /// sequence number of the app's first byte.
    pub fn copied_seq(&mut self, copied_seq: u32) {
        if self.base.is_none() {
            self.base = Some(copied_seq.wrapping_sub(self.received));
        }
    }

    /// A segment at `seq` that arrived at `arrival`; `filled`: it filled a
    /// hole below the latest (SegTrack::filled), and takes its place among
    /// the earlier ones.
    pub fn segment(&mut self, seq: u32, arrival: u64, flags: u64, source: RxSource, filled: bool) {
        match source {
            RxSource::Ip => self.from_ip = true,
            RxSource::Tcp if self.from_ip => return,
            RxSource::Tcp => {}
        }
        if flags & (TCP_SYN | TCP_RST) != 0 {
            return;
        }
        let fin = flags & TCP_FIN != 0;
        match self.segs.back_mut() {
            Some(b) if b.seq == seq => {
                b.arrival = arrival;
                b.fin |= fin;
            }
            Some(b) if (seq.wrapping_sub(b.seq) as i32) < 0 => {
                if !filled {
                    return;
                }
                let at = self
                    .segs
                    .iter()
                    .rposition(|s| (s.seq.wrapping_sub(seq) as i32) <= 0)
                    .map_or(0, |i| i + 1);
                if at > 0 && self.segs[at - 1].seq == seq {
                    return;
                }
                let mut at = at;
                if self.segs.len() >= QUEUE_CAP {
                    self.segs.pop_front();
                    self.unmatched += 1;
                    at = at.saturating_sub(1);
                }
                self.segs.insert(at, RxSegment { seq, arrival, fin });
            }
            _ => {
                if self.segs.len() >= QUEUE_CAP {
                    self.segs.pop_front();
                    self.unmatched += 1;
                }
                self.segs.push_back(RxSegment { seq, arrival, fin });
            }
        }
    }

    /// A recv returned `n` bytes at `ts`: each segment whose first byte it
    /// returned gets its latency. Returns the oldest such arrival.
    pub fn recv(&mut self, n: u64, ts: u64) -> Option<u64> {
        let start = self.received;
        self.received = self.received.wrapping_add(n as u32);
        let base = self.base?;
        let end = base.wrapping_add(start).wrapping_add(n as u32);
        let mut oldest: Option<u64> = None;
        while let Some(&s) = self.segs.front() {
            if (end.wrapping_sub(s.seq) as i32) <= 0 {
                break;
            }
            self.segs.pop_front();
            self.latency.add(ts.saturating_sub(s.arrival));
            oldest = Some(oldest.map_or(s.arrival, |o| o.min(s.arrival)));
        }
        oldest
    }

    /// The receiving thread waited `wait` ns for a CPU out of `delay` ns since
    /// the oldest segment of a recv arrived.
    pub fn cpu_wait(&mut self, wait: u64, delay: u64) {
        self.cpu_wait.add(wait);
        self.wait_sum = self.wait_sum.saturating_add(wait as u128);
        self.delay_sum = self.delay_sum.saturating_add(delay as u128);
    }

    /// Segments never returned by a recv count as unmatched when they carried
    /// data: the next segment starts beyond them (a FIN's own sequence number
    /// not counted). The last one carried data only if it lies before the byte
    /// after the app's last read — beyond it, it is a FIN or a pure ACK (the
    /// teardown's last ACK, seen at IP) as far as the trace can tell.
    pub fn finish(&mut self) {
        let next = self.base.map(|b| b.wrapping_add(self.received));
        let segs: Vec<RxSegment> = self.segs.drain(..).collect();
        for (i, s) in segs.iter().enumerate() {
            let data = match (segs.get(i + 1), next) {
                (Some(n), _) => n.seq.wrapping_sub(s.seq) as i32 > s.fin as i32,
                (None, Some(next)) => (next.wrapping_sub(s.seq) as i32) > 0,
                (None, None) => !s.fin,
            };
            self.unmatched += data as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Segments that fill a hole below the latest take their place among the
    /// earlier ones: a read matches each of them once, whatever the order
    /// they arrived in; a duplicate below the latest is no segment.
    #[test]
    fn a_filled_hole_is_matched_by_the_read_that_returns_it() {
        let mut r = RecvPath::default();
        r.copied_seq(1);
        for (seq, filled) in [
            (1u32, false),
            (1001, false),
            (4001, false),
            (2001, true),
            (1001, false),
            (3001, true),
            (3001, true),
        ] {
            r.segment(seq, u64::from(seq), 0x10, RxSource::Ip, filled);
        }
        let seqs: Vec<u32> = r.segs.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [1, 1001, 2001, 3001, 4001]);
        r.recv(3000, 10_000);
        assert_eq!(r.latency.count(), 3);
        r.recv(2000, 20_000);
        assert_eq!(r.latency.count(), 5);
        r.finish();
        assert_eq!(r.unmatched, 0);
    }
}
