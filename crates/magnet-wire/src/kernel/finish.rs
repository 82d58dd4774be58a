//! What is done to packets when the window lets them go: their GSO segments
//! assigned, header fields from frame bytes, the flows' sockets learnt, function
//! times, and a tombstone to tell a late part of one from a new packet.

use std::collections::HashMap;

use magnet_trace::catalog::kind;

use super::assemble::{last_dev, Tomb};
use super::gso::assign_gso_segments;
use super::{ip_of_frame, is_send_side, Assembler, FlowKey, KPacket, Owner};

impl Assembler {
    /// Finishes the open packets first seen before `cut`, at most `most` of them.
    pub(super) fn flush(&mut self, cut: i64, most: usize) {
        for p in self.take_finished(cut, most) {
            self.hand_on(p);
        }
        if self.window.ns != i64::MAX {
            self.forget_old(cut);
        }
    }

    /// Takes the open packets first seen before `cut` (at most `most`), their
    /// GSO segments assigned; the rest stay open.
    fn take_finished(&mut self, cut: i64, most: usize) -> Vec<KPacket> {
        let mut open = std::mem::take(&mut self.open);
        for p in &mut open {
            let own = p.inherited.min(p.hops.len());
            p.hops[own..].sort_by_key(|h| h.ts_ns);
        }
        open.sort_by_key(|p| p.first_ts());
        let n = open.partition_point(|p| p.first_ts() < cut).min(most);
        // TCP header lengths learnt from the packets finished now.
        for p in &open[..n] {
            count_header_len(&mut self.hl_counts, p, &mut self.k.tcp_header_len);
        }
        assign_gso_segments(&mut open, &self.k.tcp_header_len, n);
        let rest = open.split_off(n);
        self.open = rest;
        self.by_id.clear();
        for (i, p) in self.open.iter().enumerate() {
            self.by_id.insert(p.id, i);
        }
        self.oldest_open = self.open.first().map_or(i64::MAX, |p| p.first_ts());
        open
    }

    /// Completes a finished packet and hands it on.
    fn hand_on(&mut self, mut p: KPacket) {
        let k = &mut self.k;
        // record --snaplen: a packet the IP layer did not see (or whose fields
        // were derived, a GSO segment) takes its header fields from its frame.
        if p.ip.is_none() || p.gso_parent.is_some() {
            if let Some(ip) = p.frames.iter().find_map(|f| ip_of_frame(&f.bytes)) {
                p.ip = Some(ip);
                if p.ethertype == 0 {
                    p.ethertype = if ip.version == 6 { 0x86dd } else { 0x0800 };
                }
            }
        }
        if let Some(ip) = p.ip {
            let key = (ip.saddr, ip.sport, ip.daddr, ip.dport);
            if let Some(c) = p
                .hops
                .iter()
                .find(|h| is_send_side(h.kind) && h.cookie != 0)
            {
                learn(&mut k.senders, &k.owners, key, c.cookie);
            }
            if let Some(c) = p
                .hops
                .iter()
                .rev()
                .find(|h| matches!(h.kind, kind::TCP_RCV | kind::IP_LOCAL_IN) && h.cookie != 0)
            {
                learn(&mut k.receivers, &k.owners, key, c.cookie);
            }
        }
        for s in &mut p.funcs {
            s.in_ns = self.returned.remove(&(s.task, s.func, s.ts_ns));
        }
        p.funcs.sort_by_key(|s| s.ts_ns);
        if self.window.ns != i64::MAX && !self.by_id.contains_key(&p.id) {
            let last = p.hops.last().map_or(0, |h| h.ts_ns);
            self.tombs.insert(
                p.id,
                Tomb {
                    last_dev: last_dev(&p.hops),
                },
            );
            self.tomb_q.push_back((last, p.id));
        }
        self.stats.packets += 1;
        self.ready.push_back(p);
    }

    /// Forgets what is older than two windows: tombstones, and (at the end, or
    /// when they pile up) unreturned function entries, returns and early
    /// function events nobody claimed.
    fn forget_old(&mut self, cut: i64) {
        let old = self.newest.saturating_sub(self.window.ns.saturating_mul(2));
        while self.tomb_q.front().is_some_and(|&(t, _)| t < old) {
            let (_, id) = self.tomb_q.pop_front().expect("front");
            self.tombs.remove(&id);
        }
        if cut == i64::MAX || self.returned.len() + self.pending.len() + self.calls.len() > 4096 {
            self.returned.retain(|&(_, _, t), _| t >= old);
            self.pending
                .retain(|_, v| v.last().is_some_and(|s| s.ts_ns >= old));
            self.calls.retain(|_, v| {
                v.retain(|&t| t >= old);
                !v.is_empty()
            });
        }
    }
}

/// Counts `p` towards its connection's header length (header-only TCP packets)
/// and updates the connection's most common one in `out`.
fn count_header_len(
    counts: &mut HashMap<FlowKey, HashMap<u32, u64>>,
    p: &KPacket,
    out: &mut HashMap<FlowKey, u32>,
) {
    let Some(ip) =
        p.ip.filter(|ip| ip.protocol == 6 && ip.tcp_flags & 0x06 == 0)
    else {
        return;
    };
    let h = ip
        .tot_len
        .saturating_sub(if ip.version == 6 { 40 } else { 20 });
    if !(20..=60).contains(&h) {
        return;
    }
    for key in [
        (ip.saddr, ip.sport, ip.daddr, ip.dport),
        (ip.daddr, ip.dport, ip.saddr, ip.sport),
    ] {
        let c = counts.entry(key).or_default();
        *c.entry(h).or_default() += 1;
        if let Some((&best, _)) = c.iter().max_by_key(|&(h, n)| (*n, std::cmp::Reverse(*h))) {
            out.insert(key, best);
        }
    }
}

/// Remembers `cookie` for a flow direction; a socket whose process is known (it made
/// calls) wins over one that made none (a listener, a request socket).
fn learn(map: &mut HashMap<FlowKey, u64>, owners: &HashMap<u64, Owner>, key: FlowKey, cookie: u64) {
    let e = map.entry(key).or_insert(cookie);
    if !owners.contains_key(e) && owners.contains_key(&cookie) {
        *e = cookie;
    }
}
