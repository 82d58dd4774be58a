//! The streaming analyzer: takes records in time order, dispatches each kind to
//! the connection it belongs to, and keeps per-packet state bounded.
//!
//! One file per kind of record: `sockets` (a socket's identity, app and TCP
//! records), `packets` (IP and device records, per-packet state and its
//! sweep); this file holds the state they share, the dispatch and the summary.

mod packets;
mod reuseport;
mod sockets;
mod tunnels;

use std::collections::{HashSet, VecDeque};

use magnet_trace::{kind, Footer, Header, KindIndex, Record, RecordRef};

use crate::connections::{Conn, RowNames};
use crate::fields::{Layouts, View, F};
use crate::flows::{FlowKey, Flows, Orphan};
use crate::latency::SendWait;
use crate::model::{Analysis, Connection, LostRegion, TraceSummary, Unattributed};
use crate::sched::{SchedAcc, SwitchedIn, SwitchedOut};
use crate::{secs, Map, Options};
use reuseport::SharedPorts;

/// Age after which per-packet state (pending dev_rx, packets waiting for their
/// device hand-over) is given up on.
const PKT_TTL_NS: u64 = 2_000_000_000;
/// Most IP packets kept waiting for their socket to be announced.
const ORPHAN_CAP: usize = 4096;

/// A frame received from the driver, waiting for an IP or TCP event of the
/// same packet id to tell its socket.
#[derive(Clone, Copy)]
struct PendingRx {
    ts: u64,
    len: u64,
    claimed: bool,
    /// A traced socket handed this frame (same id and length) to a driver: if
    /// nobody claims it, it is the peer's reception of our frame (`peer_rx`).
    peer: bool,
    /// The recorder named a listener that shares its port: the frame is left
    /// for its IP event (a SYN waits for the listener the kernel chose), and
    /// counted to this listener if none claims it.
    held: Option<u64>,
}

/// A frame a known socket handed to a driver: its id and length.
#[derive(Clone, Copy)]
struct SentFrame {
    ts: u64,
    len: u64,
}

/// An outgoing packet seen at IP, for device events that carry no socket.
struct OutPacket {
    cookie: u64,
    ts: u64,
}

/// Record flag (events.h `MG_F_OTHER_NETNS`): a packet event seen in a
/// network namespace other than its socket's.
const FLAG_OTHER_NETNS: u32 = 2;

/// Streaming analysis of one trace. Feed records in time order with
/// [`Analyzer::push`], then call [`Analyzer::finish`].
pub struct Analyzer {
    opts: Options,
    /// Taken out while a record is dispatched (it borrows the record).
    layouts: Option<Layouts>,
    header: Header,
    origin: u64,
    conns: Map<u64, Conn>,
    flows: Flows,
    pkt_out: Map<u64, OutPacket>,
    dev_rx: Map<u64, PendingRx>,
    sent_frames: Map<u64, SentFrame>,
    /// Outer packets of a tunnel that carries a traced socket's (tunnels.rs):
    /// their ids, until their frames are seen, and the tunnels' ends.
    tunnel_pkts: Map<u64, u64>,
    tunnel_ends: HashSet<tunnels::TunnelEnd>,
    /// Per socket whose packets a tunnel carried: the device the tunnel's
    /// outer packets left on.
    tunnel_devs: Map<u64, u64>,
    orphans: VecDeque<Orphan>,
    /// Flows whose SYN came in with no socket known (a listener not in the
    /// trace), until their socket is announced.
    passive: Map<FlowKey, u64>,
    shared: SharedPorts,
    send_wait: SendWait,
    sched: SchedAcc,
    lost: Vec<LostRegion>,
    /// Last record time per CPU.
    cpu_last: Vec<Option<u64>>,
    records: u64,
    by_kind: Vec<u64>,
    unattributed: Unattributed,
    last_ts: u64,
    next_sweep: u64,
}

impl Analyzer {
    pub fn new(header: &Header, opts: Options) -> Analyzer {
        let origin = header.clock.monotonic_ns;
        Analyzer {
            layouts: Some(Layouts::new(&header.catalog)),
            header: header.clone(),
            origin,
            conns: Map::default(),
            flows: Flows::default(),
            pkt_out: Map::default(),
            dev_rx: Map::default(),
            sent_frames: Map::default(),
            tunnel_pkts: Map::default(),
            tunnel_ends: HashSet::new(),
            tunnel_devs: Map::default(),
            orphans: VecDeque::new(),
            passive: Map::default(),
            shared: SharedPorts::default(),
            send_wait: Map::default(),
            sched: SchedAcc::new(origin, opts.sched_bin_ns, opts.series_cap.min(4000)),
            lost: Vec::new(),
            cpu_last: Vec::new(),
            records: 0,
            by_kind: vec![0; 1 << 16],
            unattributed: Unattributed::default(),
            last_ts: 0,
            next_sweep: 0,
            opts,
        }
    }

    fn series(&self) -> Option<usize> {
        self.opts.series.then_some(self.opts.series_cap)
    }

    fn conn(&mut self, cookie: u64, ts: u64) -> &mut Conn {
        let series = self.series();
        let c = self
            .conns
            .entry(cookie)
            .or_insert_with(|| Conn::new(cookie, ts, series));
        c.first = c.first.min(ts);
        c.last = c.last.max(ts);
        c
    }

    /// The network namespace of socket `cookie`, as its SOCK record gave it.
    fn netns_of(&self, cookie: u64) -> Option<u64> {
        self.conns.get(&cookie).and_then(|c| c.netns)
    }

    /// Adds one record. Records should come in time order.
    pub fn push(&mut self, rec: &Record) {
        self.push_ref(rec.view())
    }

    /// [`Analyzer::push`] for a borrowed record.
    pub fn push_ref(&mut self, rec: RecordRef) {
        let ts = rec.ts_ns();
        let k = rec.kind();
        self.records += 1;
        self.by_kind[k as usize] += 1;
        self.last_ts = self.last_ts.max(ts);
        let cpu = rec.cpu() as u32;
        if ts >= self.next_sweep {
            self.sweep(ts);
            self.next_sweep = ts.saturating_add(PKT_TTL_NS / 4);
        }
        let layouts = self.layouts.take().expect("put back after every record");
        let v = layouts.view(k, rec.bytes);
        self.dispatch(k, ts, cpu, rec, &v);
        self.layouts = Some(layouts);
        let c = cpu as usize;
        if c >= self.cpu_last.len() {
            self.cpu_last.resize(c + 1, None);
        }
        self.cpu_last[c] = Some(ts);
    }

    fn dispatch(&mut self, k: u16, ts: u64, cpu: u32, rec: RecordRef, v: &View) {
        match k {
            kind::LOST => self.lost(ts, cpu, v),
            kind::SOCK => self.sock(ts, v),
            kind::APP_SEND | kind::APP_RECV => self.app(k, ts, rec, v),
            kind::TCP_STATE => self.tcp_state(ts, v),
            kind::TCP_RCV
            | kind::TCP_SENDMSG
            | kind::TCP_RETRANS
            | kind::TCP_RST_SENT
            | kind::TCP_RST_RCVD => self.tcp(k, ts, rec, v),
            kind::IP_LOCAL_OUT => self.ip_out(ts, v),
            kind::IP_PRE_ROUTING | kind::IP_LOCAL_IN => self.ip_in(k, ts, v),
            // A frame the recorder saw in a namespace other than its socket's
            // (forwarded by a router namespace) is not the socket's own
            // transmission.
            kind::DEV_START_XMIT if rec.flags() & FLAG_OTHER_NETNS != 0 => {
                self.unattributed.dev_tx += 1
            }
            kind::DEV_START_XMIT => self.dev_tx(ts, v),
            kind::DEV_RX => self.dev_rx(ts, v),
            kind::SCHED_SWITCH => self.sched.switch(
                ts,
                cpu,
                SwitchedOut {
                    tid: v.u32(F::PrevTid).unwrap_or(0),
                    tgid: v.u32(F::PrevTgid).unwrap_or(0),
                    state: v.i(F::PrevState).unwrap_or(-1),
                },
                SwitchedIn {
                    tid: v.u32(F::NextTid).unwrap_or(0),
                    tgid: v.u32(F::NextTgid).unwrap_or(0),
                    comm: v.comm(F::NextComm),
                },
            ),
            kind::SCHED_WAKEUP => {
                if let (Some(tid), Some(tgid)) = (v.u32(F::TaskTid), v.u32(F::TaskTgid)) {
                    self.sched.wakeup(ts, tid, tgid);
                }
            }
            _ => {}
        }
    }

    fn lost(&mut self, ts: u64, cpu: u32, v: &View) {
        let lost_cpu = v.u(F::LostCpu).unwrap_or(cpu as u64) as u32;
        let from = self
            .cpu_last
            .get(lost_cpu as usize)
            .copied()
            .flatten()
            .unwrap_or(self.origin);
        self.lost.push(LostRegion {
            cpu: lost_cpu,
            count: v.u(F::Count).unwrap_or(0),
            from_s: secs(from, self.origin),
            to_s: secs(ts, self.origin),
        });
    }

    /// The analysis of everything pushed so far. Its duration is the
    /// recording's span up to the last record.
    pub fn finish(self) -> Analysis {
        self.finish_with(None)
    }

    /// The analysis of a whole trace, whose END block (when it has one) gives
    /// the recording's stop time: the one duration every command shows.
    pub fn finish_with(mut self, footer: Option<&Footer>) -> Analysis {
        let end = self.last_ts;
        self.unattributed.ip += self.orphans.len() as u64;
        for h in self.shared.drain() {
            self.count_held(h);
        }
        for p in std::mem::take(&mut self.dev_rx).into_values() {
            self.unclaimed(&p);
        }
        for (_, w) in self.send_wait.drain() {
            for s in w.sends {
                if let Some(c) = self.conns.get_mut(&s.cookie) {
                    c.send.unmatched += 1;
                }
            }
        }
        let origin = self.origin;
        let series = self.opts.series;
        let index = KindIndex::new(&self.header.catalog);
        let names = RowNames::new(&index);
        let mut traced: HashSet<u32> = HashSet::new();
        let lost = &self.lost;
        let mut conns: Vec<Connection> = self
            .conns
            .into_values()
            .map(|c| {
                traced.extend(c.pids.iter().copied());
                c.finish(origin, series, &names, lost)
            })
            .collect();
        conns.sort_by_key(|c| c.cookie);
        let mut records_by_layer = std::collections::BTreeMap::new();
        for (k, &n) in self.by_kind.iter().enumerate().filter(|(_, n)| **n > 0) {
            let layer = index
                .get(k as u16)
                .map_or("unknown".to_string(), |d| d.layer.clone());
            *records_by_layer.entry(layer).or_default() += n;
        }
        let span = if self.records > 0 || footer.is_some() {
            magnet_trace::recording_span_ns(&self.header, footer, end)
        } else {
            0
        };
        Analysis {
            trace: TraceSummary {
                host: self.header.host.clone(),
                kernel: self.header.kernel.clone(),
                cpus: self.header.cpus,
                start_mono_ns: origin,
                start_realtime_ns: self.header.clock.realtime_ns,
                duration_s: span as f64 / 1e9,
                records: self.records,
                records_by_layer,
                lost_events: magnet_trace::lost_total(self.lost.iter().map(|l| l.count)),
                lost: self.lost,
                damage: Vec::new(),
                complete: false,
                unattributed: self.unattributed,
            },
            connections: conns,
            sched: self.sched.finish(end, &traced, series),
        }
    }
}
