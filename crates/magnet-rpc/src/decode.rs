//! From frames to transactions: flows, RPC messages, and call/reply pairing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The flow and call tables: keyed by every packet, so hashed with foldhash (per-process
/// random seed) rather than SipHash, which took 12 % of `magnet rpc`'s time.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use std::net::{IpAddr, SocketAddr};

use crate::net::{FragLimits, NetDecoder};
use crate::progs::{self, Args};
use crate::rpc::{self, Cred, Message, ReplyStat};
use crate::stream::{Stream, StreamLimits};
use crate::{Counters, Outcome, Transaction, Transport};

/// Every bound the decoder keeps.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub stream: StreamLimits,
    pub frag: FragLimits,
    /// Calls waiting for replies; past this the oldest is reported unanswered.
    pub max_pending: usize,
    /// A call with no reply after this long (capture time) is reported unanswered.
    pub reply_timeout_ns: i64,
    /// TCP stream directions tracked at once; past this the idlest is dropped.
    pub max_streams: usize,
    /// A stream direction idle this long is forgotten.
    pub stream_idle_ns: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            stream: StreamLimits::default(),
            frag: FragLimits::default(),
            max_pending: 1 << 18,
            reply_timeout_ns: 60_000_000_000,
            max_streams: 1 << 14,
            stream_idle_ns: 300_000_000_000,
        }
    }
}

#[derive(Hash, PartialEq, Eq, PartialOrd, Ord, Clone, Copy, Debug)]
struct FlowKey {
    src: IpAddr,
    sport: u16,
    dst: IpAddr,
    dport: u16,
}

#[derive(Hash, PartialEq, Eq, Clone, Copy, Debug)]
struct CallKey {
    client: SocketAddr,
    server: SocketAddr,
    xid: u32,
    transport: Transport,
}

struct Pending {
    ts: i64,
    prog: u32,
    vers: u32,
    proc_: u32,
    cred: Cred,
    args: Args,
    retransmits: u32,
}

/// The whole decoding pipeline after the capture reader. Feed it frames with
/// [`Decoder::packet`]; call [`Decoder::finish`] at the end to flush held data and
/// report unanswered calls.
pub struct Decoder {
    lim: Limits,
    net: NetDecoder,
    streams: HashMap<FlowKey, Stream>,
    /// Streams by the time they were last queued, oldest first: eviction pops the
    /// oldest entry and, when the stream was used since, queues it again at its
    /// current time (each use costs at most one re-queue, so eviction is O(log n)
    /// amortised instead of a scan of the whole table).
    idle: BinaryHeap<Reverse<(i64, FlowKey)>>,
    pending: HashMap<CallKey, Pending>,
    order: VecDeque<(i64, CallKey)>,
    counters: Counters,
    now: i64,
    last_sweep: i64,
}

impl Decoder {
    pub fn new(lim: Limits) -> Self {
        Decoder {
            lim,
            net: NetDecoder::new(lim.frag),
            streams: HashMap::default(),
            idle: BinaryHeap::new(),
            pending: HashMap::default(),
            order: VecDeque::new(),
            counters: Counters::default(),
            now: i64::MIN,
            last_sweep: i64::MIN,
        }
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Calls currently waiting for a reply.
    pub fn pending_calls(&self) -> usize {
        self.pending.len()
    }

    /// Decodes one captured frame.
    pub fn packet(
        &mut self,
        ts_ns: i64,
        linktype: u32,
        frame: &[u8],
        out: &mut dyn FnMut(Transaction),
    ) {
        self.counters.packets += 1;
        self.counters.bytes += frame.len() as u64;
        self.now = self.now.max(ts_ns);
        if self.now > self.last_sweep.saturating_add(1_000_000_000) {
            self.last_sweep = self.now;
            self.sweep(out);
        }
        let Some(dg) = self.net.decode(ts_ns, linktype, frame, &mut self.counters) else {
            return;
        };
        match dg.tcp {
            None => {
                let src = SocketAddr::new(dg.src, dg.sport);
                let dst = SocketAddr::new(dg.dst, dg.dport);
                if rpc::looks_like_rpc(&dg.payload) {
                    self.message(ts_ns, Transport::Udp, src, dst, &dg.payload, out);
                } else {
                    self.counters.not_rpc += 1;
                }
            }
            Some(tcp) => {
                let key = FlowKey {
                    src: dg.src,
                    sport: dg.sport,
                    dst: dg.dst,
                    dport: dg.dport,
                };
                if !self.streams.contains_key(&key) {
                    if self.streams.len() >= self.lim.max_streams {
                        self.evict_stream();
                    }
                    self.queue_new(ts_ns, key);
                }
                let src = SocketAddr::new(dg.src, dg.sport);
                let dst = SocketAddr::new(dg.dst, dg.dport);
                let Decoder {
                    lim,
                    counters,
                    pending,
                    order,
                    streams,
                    ..
                } = self;
                let st = streams.entry(key).or_insert_with(|| Stream::new(ts_ns));
                let mut c2 = Counters::default();
                let mut pair = Pairing {
                    lim,
                    pending,
                    order,
                    c: counters,
                };
                // Records are handled as they come off the stream, in order.
                st.segment(ts_ns, tcp, &dg.payload, &lim.stream, &mut c2, &mut |rec| {
                    pair.message(ts_ns, Transport::Tcp, src, dst, rec, out)
                });
                if tcp.flags & crate::net::TCP_ACK != 0 {
                    let rkey = FlowKey {
                        src: key.dst,
                        sport: key.dport,
                        dst: key.src,
                        dport: key.sport,
                    };
                    if let Some(rev) = streams.get_mut(&rkey) {
                        rev.ack(tcp.ack, &lim.stream, &mut c2, &mut |rec| {
                            pair.message(ts_ns, Transport::Tcp, dst, src, rec, out)
                        });
                    }
                }
                add_counters(&mut self.counters, &c2);
            }
        }
    }

    /// Queues a stream about to be created; drops queue entries of forgotten streams
    /// when they outnumber the live ones.
    fn queue_new(&mut self, ts: i64, key: FlowKey) {
        if self.idle.len() > 2 * self.streams.len() + 1024 {
            let streams = &self.streams;
            self.idle = self
                .idle
                .drain()
                .filter(|Reverse((t, k))| streams.get(k).is_some_and(|s| s.queued_at == *t))
                .collect();
        }
        self.idle.push(Reverse((ts, key)));
    }

    /// Drops the stream idle longest.
    fn evict_stream(&mut self) {
        while let Some(Reverse((t, k))) = self.idle.pop() {
            let Some(s) = self.streams.get_mut(&k) else {
                continue; // forgotten already
            };
            if s.queued_at != t {
                continue; // a stale entry: the stream was queued again since
            }
            if s.last_ts > t {
                // Used since it was queued: queue it again at its last use.
                s.queued_at = s.last_ts;
                self.idle.push(Reverse((s.last_ts, k)));
                continue;
            }
            self.streams.remove(&k);
            self.counters.streams_evicted += 1;
            return;
        }
    }

    fn message(
        &mut self,
        ts: i64,
        t: Transport,
        src: SocketAddr,
        dst: SocketAddr,
        msg: &[u8],
        out: &mut dyn FnMut(Transaction),
    ) {
        let Decoder {
            lim,
            counters,
            pending,
            order,
            ..
        } = self;
        Pairing {
            lim,
            pending,
            order,
            c: counters,
        }
        .message(ts, t, src, dst, msg, out)
    }

    fn sweep(&mut self, out: &mut dyn FnMut(Transaction)) {
        let now = self.now;
        let idle = self.lim.stream_idle_ns;
        self.streams.retain(|_, s| now - s.last_ts <= idle);
        let Decoder {
            lim,
            counters,
            pending,
            order,
            ..
        } = self;
        let mut p = Pairing {
            lim,
            pending,
            order,
            c: counters,
        };
        p.expire(now - lim.reply_timeout_ns, out);
    }

    /// Ends the capture: skips remaining holes in every stream (decoding what follows
    /// them) and reports every call still waiting as unanswered.
    pub fn finish(&mut self, out: &mut dyn FnMut(Transaction)) {
        self.net.finish(&mut self.counters);
        let mut streams = std::mem::take(&mut self.streams);
        let mut keys: Vec<FlowKey> = streams.keys().copied().collect();
        keys.sort_by_key(|k| streams[k].last_ts);
        for k in keys {
            let st = streams.get_mut(&k).unwrap();
            let ts = st.last_ts;
            let src = SocketAddr::new(k.src, k.sport);
            let dst = SocketAddr::new(k.dst, k.dport);
            let Decoder {
                lim,
                counters,
                pending,
                order,
                ..
            } = self;
            let mut pair = Pairing {
                lim,
                pending,
                order,
                c: counters,
            };
            let mut c2 = Counters::default();
            st.flush(&lim.stream, &mut c2, &mut |rec| {
                pair.message(ts, Transport::Tcp, src, dst, rec, out)
            });
            add_counters(&mut self.counters, &c2);
        }
        let Decoder {
            lim,
            counters,
            pending,
            order,
            ..
        } = self;
        Pairing {
            lim,
            pending,
            order,
            c: counters,
        }
        .expire(i64::MAX, out);
    }
}

fn add_counters(a: &mut Counters, b: &Counters) {
    a.tcp_retransmitted += b.tcp_retransmitted;
    a.tcp_out_of_order += b.tcp_out_of_order;
    a.tcp_gap_bytes += b.tcp_gap_bytes;
    a.tcp_skipped_bytes += b.tcp_skipped_bytes;
    a.tcp_resyncs += b.tcp_resyncs;
    a.records_too_large += b.records_too_large;
    a.not_rpc += b.not_rpc;
}

/// The pending-call table and what it needs, borrowed apart from the streams.
struct Pairing<'a> {
    lim: &'a Limits,
    pending: &'a mut HashMap<CallKey, Pending>,
    order: &'a mut VecDeque<(i64, CallKey)>,
    c: &'a mut Counters,
}

impl Pairing<'_> {
    fn message(
        &mut self,
        ts: i64,
        transport: Transport,
        src: SocketAddr,
        dst: SocketAddr,
        msg: &[u8],
        out: &mut dyn FnMut(Transaction),
    ) {
        let m = match rpc::parse(msg) {
            Ok(m) => m,
            Err(_) => {
                self.c.rpc_malformed += 1;
                return;
            }
        };
        match m {
            Message::Call(h) => {
                self.c.rpc_calls += 1;
                let key = CallKey {
                    client: src,
                    server: dst,
                    xid: h.xid,
                    transport,
                };
                if let Some(p) = self.pending.get_mut(&key) {
                    p.retransmits += 1;
                    self.c.rpc_retransmitted_calls += 1;
                    return;
                }
                let args = if h.args_visible {
                    progs::decode_args(h.prog, h.vers, h.proc_, &msg[h.args_at..])
                } else {
                    Args::Hidden
                };
                if self.pending.len() >= self.lim.max_pending {
                    self.evict_one(out);
                }
                self.pending.insert(
                    key,
                    Pending {
                        ts,
                        prog: h.prog,
                        vers: h.vers,
                        proc_: h.proc_,
                        cred: h.cred,
                        args,
                        retransmits: 0,
                    },
                );
                self.order.push_back((ts, key));
            }
            Message::Reply(h) => {
                self.c.rpc_replies += 1;
                let key = CallKey {
                    client: dst,
                    server: src,
                    xid: h.xid,
                    transport,
                };
                let Some(p) = self.pending.remove(&key) else {
                    self.c.rpc_orphan_replies += 1;
                    return;
                };
                let res = if h.stat != ReplyStat::Success {
                    None
                } else if h.gss_verf && matches!(p.cred, Cred::Gss { service: 2 | 3, .. }) {
                    Some(progs::Res::Hidden)
                } else {
                    Some(progs::decode_res(
                        p.prog,
                        p.vers,
                        p.proc_,
                        &msg[h.results_at..],
                    ))
                };
                self.c.transactions += 1;
                out(Transaction {
                    outcome: Outcome::Complete,
                    call_ts_ns: p.ts,
                    reply_ts_ns: Some(ts),
                    transport,
                    client: dst,
                    server: src,
                    xid: h.xid,
                    prog: p.prog,
                    vers: p.vers,
                    proc_: p.proc_,
                    command: progs::command_name(p.prog, p.vers, p.proc_).into_owned(),
                    cred: p.cred,
                    retransmits: p.retransmits,
                    args: p.args,
                    reply_stat: Some(h.stat),
                    res,
                });
            }
        }
    }

    fn no_reply(&mut self, key: CallKey, p: Pending, out: &mut dyn FnMut(Transaction)) {
        self.c.rpc_no_reply += 1;
        out(Transaction {
            outcome: Outcome::NoReply,
            call_ts_ns: p.ts,
            reply_ts_ns: None,
            transport: key.transport,
            client: key.client,
            server: key.server,
            xid: key.xid,
            prog: p.prog,
            vers: p.vers,
            proc_: p.proc_,
            command: progs::command_name(p.prog, p.vers, p.proc_).into_owned(),
            cred: p.cred,
            retransmits: p.retransmits,
            args: p.args,
            reply_stat: None,
            res: None,
        });
    }

    /// Reports calls made before `before` as unanswered.
    fn expire(&mut self, before: i64, out: &mut dyn FnMut(Transaction)) {
        while let Some(&(ts, key)) = self.order.front() {
            if ts > before && self.order.len() <= 2 * self.lim.max_pending.max(1) {
                break;
            }
            self.order.pop_front();
            if self.pending.get(&key).is_some_and(|p| p.ts == ts) {
                let p = self.pending.remove(&key).unwrap();
                self.no_reply(key, p, out);
            }
        }
        if before == i64::MAX {
            // Anything left (cannot happen unless the order queue was trimmed).
            let rest: Vec<CallKey> = self.pending.keys().copied().collect();
            for k in rest {
                let p = self.pending.remove(&k).unwrap();
                self.no_reply(k, p, out);
            }
        }
    }

    fn evict_one(&mut self, out: &mut dyn FnMut(Transaction)) {
        while let Some((ts, key)) = self.order.pop_front() {
            if self.pending.get(&key).is_some_and(|p| p.ts == ts) {
                let p = self.pending.remove(&key).unwrap();
                self.c.rpc_pending_evicted += 1;
                self.no_reply(key, p, out);
                return;
            }
        }
    }
}
