//! Records into packets: each record with a packet id is a sighting of that
//! packet; an id whose skb was reused, and a late part of a packet handed on
//! already, start packets of their own.

use std::collections::{BTreeMap, HashMap, VecDeque};

use magnet_trace::catalog::kind;
use magnet_trace::{Header, RecordRef};

use super::decode::{d_netns, Fields, FrameFields, FuncEvent, RecordFields};
use super::{
    AppCall, FlowKey, Frame, FuncStep, Hop, KPacket, Kernel, LostRegion, Owner, Window, WindowStats,
};

/// What was last known of a packet handed on: to tell a late part of it from a
/// new packet that reuses its id.
#[derive(Clone, Copy)]
pub(super) struct Tomb {
    /// Last device hop: kind and length.
    pub(super) last_dev: Option<(u16, u32)>,
}

/// Builds packets from records, the one model `magnet match`, `magnet pcap` and
/// `magnet packets` share: skb reuse, GSO segments and frame bytes handled once.
/// Feed records with [`Assembler::push`]; finished packets come out of
/// [`Assembler::pop`] in order of their first sighting; [`Assembler::finish`] at
/// the end. The context (owners, calls, flows) stays in [`Assembler::k`].
pub struct Assembler {
    /// Everything but the packets.
    pub k: Kernel,
    pub stats: WindowStats,
    pub(super) window: Window,
    fields: Vec<Option<Fields>>,
    header: Header,
    drop_names: BTreeMap<String, String>,
    frame_fields: Option<FrameFields>,
    pub(super) open: Vec<KPacket>,
    pub(super) by_id: HashMap<u64, usize>,
    last_ts_by_cpu: HashMap<u16, i64>,
    pub(super) newest: i64,
    pub(super) oldest_open: i64,
    pub(super) tombs: HashMap<u64, Tomb>,
    pub(super) tomb_q: VecDeque<(i64, u64)>,
    pub(super) ready: VecDeque<KPacket>,
    pub(super) hl_counts: HashMap<FlowKey, HashMap<u32, u64>>,
    /// Function entries not yet returned, by (task, function).
    pub(super) calls: HashMap<(u64, u64), Vec<i64>>,
    /// Time in the function by (task, function, entry time).
    pub(super) returned: HashMap<(u64, u64, i64), u64>,
    /// Function events of an skb without a packet id yet, by skb address.
    pub(super) pending: HashMap<u64, Vec<FuncStep>>,
    /// Keep application calls in the context (pcap, match need them).
    keep_calls: bool,
}

impl Assembler {
    pub fn new(header: &Header, window: Window, keep_calls: bool) -> Assembler {
        let header = header.clone();
        let max = header
            .catalog
            .kinds
            .iter()
            .map(|d| d.id as usize)
            .max()
            .unwrap_or(0);
        let mut fields: Vec<Option<Fields>> = vec![None; max + 1];
        let mut k = Kernel::default();
        for d in &header.catalog.kinds {
            k.kind_names.insert(d.id, d.name.clone());
            k.kind_layers.insert(d.id, d.layer.clone());
            fields[d.id as usize] = Some(Fields::of(d));
        }
        let drop_names = header
            .enums
            .get("skb_drop_reason")
            .cloned()
            .unwrap_or_default();
        let frame_fields = FrameFields::of(&header);
        k.header = Some(header.clone());
        Assembler {
            k,
            stats: WindowStats::default(),
            window,
            fields,
            header,
            drop_names,
            frame_fields,
            open: Vec::new(),
            by_id: HashMap::new(),
            last_ts_by_cpu: HashMap::new(),
            newest: i64::MIN,
            oldest_open: i64::MAX,
            tombs: HashMap::new(),
            tomb_q: VecDeque::new(),
            ready: VecDeque::new(),
            hl_counts: HashMap::new(),
            calls: HashMap::new(),
            returned: HashMap::new(),
            pending: HashMap::new(),
            keep_calls,
        }
    }

    pub fn window(&self) -> Window {
        self.window
    }

    /// The latest record time seen (wall clock).
    pub fn newest(&self) -> i64 {
        self.newest
    }

    /// Packets open now.
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// A reader error: damage it can step over goes to `warnings`; anything else
    /// is returned.
    pub fn error(&mut self, e: magnet_trace::TraceError) -> Result<(), magnet_trace::TraceError> {
        if e.is_recoverable() || matches!(e, magnet_trace::TraceError::Truncated { .. }) {
            // The end of what there is (Truncated): the totals the reader checks at
            // the end may still follow.
            self.k.warnings.push(e.to_string());
            Ok(())
        } else {
            Err(e)
        }
    }

    /// The next finished packet, in order of first sighting.
    pub fn pop(&mut self) -> Option<KPacket> {
        self.ready.pop_front()
    }

    /// The context without the packets.
    pub fn into_context(self) -> Kernel {
        self.k
    }

    /// Finishes every open packet (the end of the trace).
    pub fn finish(&mut self) {
        self.flush(i64::MAX, usize::MAX);
        let w = self.stats.warnings(&self.window);
        self.k.warnings.extend(w);
    }

    /// Adds one record.
    pub fn push(&mut self, r: &RecordRef<'_>) {
        let ts = self.header.clock.to_realtime(r.ts_ns()) as i64;
        if r.kind() == kind::FRAME {
            self.add_frame_bytes(r, ts);
            return;
        }
        let Some(Some(f)) = self.fields.get(r.kind() as usize) else {
            return;
        };
        let rec = f.read(r);
        if r.kind() == kind::LOST {
            let from = self.last_ts_by_cpu.get(&r.cpu()).copied().unwrap_or(ts);
            self.k.lost.push(LostRegion {
                from_ns: from.min(ts),
                to_ns: ts,
                count: rec.count,
            });
            return;
        }
        self.add_socket_facts(r, &rec, ts);
        self.last_ts_by_cpu.insert(r.cpu(), ts);
        self.newest = self.newest.max(ts);
        let (step, skb) = match &rec.func {
            Some(fe) => match self.add_func_event(r, fe, ts, rec.pkt_id) {
                Some(step) => (Some(step), fe.skb),
                // A return, or an entry of an skb without a packet id yet.
                None => return,
            },
            None => (None, 0),
        };
        if rec.pkt_id == 0 {
            return;
        }
        self.add_sighting(r, &rec, ts, step, skb);
        self.keep_to_window();
    }

    /// A FRAME record (`record --snaplen`): the bytes of a device hop of an open
    /// packet.
    fn add_frame_bytes(&mut self, r: &RecordRef<'_>, ts: i64) {
        let Some(ff) = &self.frame_fields else {
            return;
        };
        let b = r.bytes;
        let f = ff.read(b);
        let at = ff.at;
        if b.len() < at + f.caplen {
            self.k.warnings.push(format!(
                "frame record of packet {:#x}: {} bytes, its caplen says {}",
                f.pkt_id,
                b.len(),
                at + f.caplen
            ));
        } else if let Some(&i) = self.by_id.get(&f.pkt_id) {
            self.open[i].frames.push(Frame {
                ts_ns: ts,
                kind: f.dev_kind,
                ifindex: f.ifindex,
                cpu: r.cpu(),
                bytes: b[at..at + f.caplen].to_vec(),
            });
        }
    }

    /// What a record says of its socket: its network namespace (SOCK), its owner
    /// and its application calls (APP_SEND, APP_RECV).
    fn add_socket_facts(&mut self, r: &RecordRef<'_>, rec: &RecordFields, ts: i64) {
        let (kd, cookie, k) = (r.kind(), rec.cookie, &mut self.k);
        if cookie == 0 {
            return;
        }
        match kd {
            kind::SOCK => {
                if let Some(ns) = d_netns(&self.header, r.bytes) {
                    k.sock_netns.insert(cookie, ns);
                }
            }
            kind::APP_SEND | kind::APP_RECV => {
                if let Some(comm) = &rec.comm {
                    k.owners.entry(cookie).or_insert_with(|| Owner {
                        pid: r.pid(),
                        comm: comm.clone(),
                    });
                }
                if !self.keep_calls {
                    return;
                }
                let calls = if kd == kind::APP_SEND {
                    &mut k.sends
                } else {
                    &mut k.recvs
                };
                let list = calls.entry(cookie).or_default();
                let at = list.partition_point(|c| c.ts_ns <= ts);
                list.insert(
                    at,
                    AppCall {
                        ts_ns: ts,
                        send: kd == kind::APP_SEND,
                        ret: rec.ret,
                        pid: r.pid(),
                        tid: r.tid(),
                    },
                );
            }
            _ => {}
        }
    }

    /// A function event (`record --funcs`): a return times its entry; an entry
    /// is the packet's step, or (no packet id yet) waits with its skb's.
    /// `None` when nothing more is to be done with the record.
    fn add_func_event(
        &mut self,
        r: &RecordRef<'_>,
        fe: &FuncEvent,
        ts: i64,
        id: u64,
    ) -> Option<FuncStep> {
        // The kernel runs one function call on one task (the idle task: per CPU).
        let task = match r.tid() {
            0 => (1 << 63) | u64::from(r.cpu()),
            t => u64::from(t),
        };
        let func = fe.func;
        if fe.exit {
            if let Some(entry) = self.calls.get_mut(&(task, func)).and_then(Vec::pop) {
                self.returned
                    .insert((task, func, entry), ts.saturating_sub(entry) as u64);
            }
            return None;
        }
        self.calls.entry((task, func)).or_default().push(ts);
        let (skb, parent) = (fe.skb, fe.parent);
        // A clone (TCP's transmit copy) takes its parent's earlier function
        // events: the parent never gets a packet id of its own.
        if parent != 0 && parent != skb && skb != 0 {
            if let Some(mut early) = self.pending.remove(&parent) {
                let mine = self.pending.entry(skb).or_default();
                early.append(mine);
                early.sort_by_key(|s| s.ts_ns);
                *mine = early;
            }
        }
        let step = FuncStep {
            ts_ns: ts,
            cpu: r.cpu(),
            kind: r.kind(),
            func,
            caller: fe.caller,
            in_ns: None,
            task,
        };
        if id == 0 {
            if skb != 0 {
                self.pending.entry(skb).or_default().push(step);
            }
            return None;
        }
        Some(step)
    }

    /// Adds a sighting of packet `rec.pkt_id` (its function step `step`, of skb
    /// `skb`), to a packet of its own when the id's skb was reused.
    fn add_sighting(
        &mut self,
        r: &RecordRef<'_>,
        rec: &RecordFields,
        ts: i64,
        step: Option<FuncStep>,
        skb: u64,
    ) {
        let (kd, id) = (r.kind(), rec.pkt_id);
        let reused = self.is_reused(kd, rec, ts);
        if !self.by_id.contains_key(&id) {
            self.count_late_part(kd, rec);
        }
        let (carried, carried_frame) = if reused {
            self.retire(kd, rec)
        } else {
            (None, None)
        };
        let i = self.open_packet(id);
        self.oldest_open = self.oldest_open.min(ts);
        let p = &mut self.open[i];
        p.hops.extend(carried);
        p.frames.extend(carried_frame);
        // The skb's function events from before it had an id come first.
        if skb != 0 {
            if let Some(early) = self.pending.remove(&skb) {
                let first = p.hops.iter().map(|h| h.ts_ns).min().unwrap_or(i64::MAX);
                p.funcs
                    .extend(early.into_iter().filter(|s| s.ts_ns <= first));
            }
        }
        p.funcs.extend(step);
        p.hops.push(Hop {
            ts_ns: ts,
            kind: kd,
            ifindex: rec.ifindex,
            len: rec.len,
            cookie: rec.cookie,
            tid: r.tid(),
            cpu: r.cpu(),
            other_netns: r.flags() & magnet_trace::events::FLAG_OTHER_NETNS != 0,
            no_link_header: super::without_link_header(rec.link_type),
        });
        if let Some(et) = rec.ethertype {
            p.ethertype = et as u16;
        }
        if kd == kind::DROP {
            let reason = rec.reason;
            p.drop = Some(
                self.drop_names
                    .get(&reason.to_string())
                    .cloned()
                    .unwrap_or_else(|| format!("reason {reason}")),
            );
        }
        if p.ip.is_none() {
            p.ip = rec.ip;
        }
    }

    /// An id whose skb was reused without the recorder noticing. A packet is
    /// born at LOCAL_OUT; after a driver took it (transmit) the next device
    /// event is a receive (the veth peer), and after a receive the next is a
    /// transmit (forwarded) or LOCAL_IN. Anything else, with another length,
    /// starts a new packet.
    fn is_reused(&self, kd: u16, rec: &RecordFields, ts: i64) -> bool {
        let Some(&i) = self.by_id.get(&rec.pkt_id) else {
            return false;
        };
        // IP fields that disagree with the packet's: another packet.
        if let (Some(a), Some(n)) = (self.open[i].ip, rec.ip) {
            if (a.saddr, a.daddr, a.protocol, a.ip_id) != (n.saddr, n.daddr, n.protocol, n.ip_id) {
                return true;
            }
        }
        let h = &self.open[i].hops;
        match kd {
            // Only hops before it: records reach the trace out of time order
            // now and then (a nested program's record is sent alone, ahead of
            // its CPU's batch), and a packet's own transmit arriving before its
            // LOCAL_OUT must not make that LOCAL_OUT another packet.
            kind::IP_LOCAL_OUT => h.iter().any(|h| {
                h.ts_ns < ts
                    && matches!(
                        h.kind,
                        kind::IP_LOCAL_OUT
                            | kind::IP_LOCAL_IN
                            | kind::DEV_START_XMIT
                            | kind::DEV_RX
                    )
            }),
            _ => follows_another_skb(kd, last_dev(h), rec.len),
        }
    }

    /// A part of a packet handed on already: counted, and a packet of its own.
    fn count_late_part(&mut self, kd: u16, rec: &RecordFields) {
        if let Some(t) = self.tombs.remove(&rec.pkt_id) {
            let new = kd == kind::IP_LOCAL_OUT || follows_another_skb(kd, t.last_dev, rec.len);
            if !new {
                self.stats.split += 1;
            }
        }
    }

    /// Lets the open packet of a reused id go on without its id (the next
    /// sighting starts the new packet). The receive just before a LOCAL_IN on
    /// the same device belongs to the new packet: returned, with its frame.
    fn retire(&mut self, kd: u16, rec: &RecordFields) -> (Option<Hop>, Option<Frame>) {
        let old = self
            .by_id
            .remove(&rec.pkt_id)
            .expect("reused ids are known");
        let old = &mut self.open[old];
        let hops = &mut old.hops;
        if !(kd == kind::IP_LOCAL_IN
            && hops.len() > 1
            && hops
                .last()
                .is_some_and(|h| h.kind == kind::DEV_RX && h.ifindex == rec.ifindex))
        {
            return (None, None);
        }
        let carried = hops.pop();
        let frame = carried.and_then(|h| {
            let at = old
                .frames
                .iter()
                .position(|f| (f.ts_ns, f.kind, f.ifindex) == (h.ts_ns, h.kind, h.ifindex))?;
            Some(old.frames.remove(at))
        });
        (carried, frame)
    }

    /// The index of id's open packet, opened now if there is none.
    fn open_packet(&mut self, id: u64) -> usize {
        let open = &mut self.open;
        *self.by_id.entry(id).or_insert_with(|| {
            open.push(KPacket {
                id,
                hops: Vec::with_capacity(4),
                ip: None,
                ethertype: 0,
                drop: None,
                gso_segments: 0,
                gso_parent: None,
                inherited: 0,
                frames: Vec::new(),
                funcs: Vec::new(),
            });
            open.len() - 1
        })
    }

    /// Finishes what the window has left behind: packets whose first sighting is
    /// two windows old (so one window of records after them has been read), in
    /// steps of a window; or the oldest half when too many are open.
    fn keep_to_window(&mut self) {
        self.stats.peak_open = self.stats.peak_open.max(self.open.len());
        if self.open.len() > self.window.packets {
            let n = (self.window.packets / 2).max(1);
            let before = self.stats.packets;
            self.flush(i64::MAX, n);
            self.stats.forced += self.stats.packets - before;
        } else if self.window.ns != i64::MAX
            && self.newest.saturating_sub(self.oldest_open) > self.window.ns.saturating_mul(2)
        {
            let cut = self.newest - self.window.ns;
            self.flush(cut, usize::MAX);
        }
    }
}

/// The last device hop among `hops`: its kind and length.
pub(super) fn last_dev(hops: &[Hop]) -> Option<(u16, u32)> {
    hops.iter()
        .rev()
        .find(|h| matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX))
        .map(|h| (h.kind, h.len))
}

/// A sighting of kind `kd` and length `len` that cannot follow the packet's last
/// device hop `last_dev`: a LOCAL_IN after a transmit, or a receive after a
/// receive, of another length. (The trace misses a hop now and then, a receive
/// the filters did not attribute: only a length that changed says the skb is
/// another one.)
fn follows_another_skb(kd: u16, last_dev: Option<(u16, u32)>, len: u32) -> bool {
    // Lengths without the link header: a transmit's includes it.
    let net_len = |kind: u16, len: u32| {
        if kind == kind::DEV_START_XMIT {
            len.saturating_sub(14)
        } else {
            len
        }
    };
    let other = |(kind, l): (u16, u32)| len != 0 && l != 0 && net_len(kind, l) != len;
    match kd {
        kind::IP_LOCAL_IN => last_dev.is_some_and(|h| h.0 == kind::DEV_START_XMIT && other(h)),
        kind::DEV_RX => last_dev.is_some_and(|h| h.0 == kind::DEV_RX && other(h)),
        _ => false,
    }
}
