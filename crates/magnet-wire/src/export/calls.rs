//! The application calls whose bytes a frame carries (`app=` in its comment).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::synth::synth_tcp_len;
use crate::kernel::{AppCall, FlowKey, Hop, IpFields, KPacket, Kernel};

/// Sequence number and payload length of a TCP frame: the header length from the
/// frame's bytes when they hold the TCP header, else the connection's.
fn tcp_payload(k: &Kernel, ip: &IpFields, bytes: Option<&[u8]>, link: bool) -> Option<(u32, u32)> {
    if ip.protocol != 6 || ip.frag_off & 0x3fff != 0 {
        return None;
    }
    let ihl = if ip.version == 6 { 40 } else { 20 };
    let from_bytes = bytes.and_then(|b| {
        let l3 = if link { 14 } else { 0 };
        let ihl = if ip.version == 6 {
            40
        } else {
            ((*b.get(l3)? & 0x0f) as usize) * 4
        };
        let doff = (*b.get(l3 + ihl + 12)? >> 4) as u32 * 4;
        Some(ihl as u32 + doff)
    });
    let hl = from_bytes.unwrap_or_else(|| ihl + synth_tcp_len(k, ip));
    Some((ip.seq, ip.tot_len.saturating_sub(hl)))
}

/// Where each TCP flow direction's byte stream starts (its SYN's sequence number),
/// and the stream offset reached so far (to unwrap 32-bit sequence numbers).
#[derive(Default)]
pub(super) struct Streams {
    isn: HashMap<FlowKey, u32>,
    last: HashMap<FlowKey, u64>,
    /// Each socket's send (false) and receive (true) calls' cumulative ends
    /// (past the calls forgotten already: see [`Kernel::calls_dropped`]).
    ends: HashMap<(u64, bool), (usize, Vec<u64>)>,
}

impl Streams {
    /// Learns the stream start of a SYN.
    pub(super) fn learn(&mut self, p: &KPacket) {
        if let Some(ip) =
            p.ip.filter(|ip| ip.protocol == 6 && ip.tcp_flags & 0x02 != 0)
        {
            self.isn
                .entry((ip.saddr, ip.sport, ip.daddr, ip.dport))
                .or_insert(ip.seq);
        }
    }

    /// The stream offsets `[from, to)` of a frame's payload.
    fn range(&mut self, ip: &IpFields, seq: u32, len: u32) -> Option<(u64, u64)> {
        let key = (ip.saddr, ip.sport, ip.daddr, ip.dport);
        let isn = *self.isn.get(&key)?;
        let off32 = seq.wrapping_sub(isn.wrapping_add(1));
        let last = self.last.entry(key).or_insert(0);
        let delta = off32.wrapping_sub(*last as u32) as i32 as i64;
        let off = (*last as i64 + delta).max(0) as u64;
        *last = (*last).max(off);
        Some((off, off + len as u64))
    }

    /// The calls of socket `cookie` (receives when `recv`) whose bytes overlap
    /// `[from, to)`: (number from 0, call). `None` when the calls that held
    /// `from` were forgotten (further back than the window).
    fn calls<'k>(
        &mut self,
        k: &'k Kernel,
        cookie: u64,
        recv: bool,
        (from, to): (u64, u64),
    ) -> Option<Vec<(usize, &'k AppCall)>> {
        let Some(calls) = (if recv { &k.recvs } else { &k.sends }).get(&cookie) else {
            return Some(Vec::new());
        };
        let (base, base_bytes) = k
            .calls_dropped
            .get(&(cookie, recv))
            .copied()
            .unwrap_or((0, 0));
        // Kept in step with the calls: those forgotten since leave, new ones come.
        let (at, ends) = self
            .ends
            .entry((cookie, recv))
            .or_insert((base, Vec::new()));
        ends.drain(..(base - *at).min(ends.len()));
        *at = base;
        let mut sum = ends.last().copied().unwrap_or(base_bytes);
        for c in &calls[ends.len().min(calls.len())..] {
            sum += c.ret.max(0) as u64;
            ends.push(sum);
        }
        let mut out = Vec::new();
        let mut i = ends.partition_point(|&e| e <= from);
        while i < calls.len() && ends[i] - (calls[i].ret.max(0) as u64) < to {
            if calls[i].ret > 0 {
                out.push((base + i, &calls[i]));
            }
            i += 1;
        }
        if from < base_bytes && base > 0 {
            return None;
        }
        Some(out)
    }
}

/// Appends ` app=…` naming the calls whose bytes the frame carries: the sender's
/// sends and the receiver's receives (a loopback frame: both). Nothing for a frame
/// without payload.
#[allow(clippy::too_many_arguments)]
pub(super) fn app_calls(
    k: &Kernel,
    p: &KPacket,
    h: &Hop,
    frame: Option<&[u8]>,
    link: bool,
    sender: Option<u64>,
    receiver: Option<u64>,
    streams: &mut Streams,
    comment: &mut String,
) -> bool {
    let mut whole = true;
    let Some(ip) = p.ip else { return true };
    let mut names: Vec<String> = Vec::new();
    let mut push = |recv: bool, i: usize, c: &AppCall| {
        names.push(format!(
            "{}#{}({})",
            if recv { "recv" } else { "send" },
            i + 1,
            c.ret
        ));
    };
    match ip.protocol {
        6 => {
            let Some((seq, len)) = tcp_payload(k, &ip, frame, link) else {
                return true;
            };
            if len == 0 {
                return true;
            }
            if let Some(range) = streams.range(&ip, seq, len) {
                for (recv, cookie) in [(false, sender), (true, receiver)] {
                    let Some(cookie) = cookie.filter(|&c| c != 0) else {
                        continue;
                    };
                    match streams.calls(k, cookie, recv, range) {
                        Some(calls) => {
                            for (i, c) in calls {
                                push(recv, i, c);
                            }
                        }
                        None => whole = false,
                    }
                }
            } else {
                nearest(k, p, h, sender, receiver, &mut push);
            }
        }
        17 => {
            let hl = if ip.version == 6 { 48 } else { 28 };
            if ip.tot_len > hl {
                nearest(k, p, h, sender, receiver, &mut push);
            }
        }
        _ => {}
    }
    if !names.is_empty() {
        let _ = write!(comment, " app={}", names.join(","));
    }
    whole
}

/// The one call nearest a frame whose stream position is not known.
fn nearest(
    k: &Kernel,
    p: &KPacket,
    h: &Hop,
    sender: Option<u64>,
    receiver: Option<u64>,
    push: &mut impl FnMut(bool, usize, &AppCall),
) {
    let tid = p.hops.first().map_or(0, |h| h.tid);
    for (recv, cookie) in [(false, sender), (true, receiver)] {
        let Some(cookie) = cookie.filter(|&c| c != 0) else {
            continue;
        };
        let anchor = if recv { h.ts_ns } else { p.first_ts() };
        if let Some(c) = k.call_for(cookie, anchor, !recv, tid) {
            let calls = if recv { &k.recvs } else { &k.sends };
            let i = calls[&cookie]
                .iter()
                .position(|x| std::ptr::eq(x, c))
                .unwrap_or(0);
            let base = k.calls_dropped.get(&(cookie, recv)).map_or(0, |d| d.0);
            push(recv, base + i, c);
        }
    }
}
