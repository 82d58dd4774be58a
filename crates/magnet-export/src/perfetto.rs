//! Perfetto: the trace as Chrome Trace Event Format JSON, which ui.perfetto.dev
//! (and chrome://tracing) opens. The mapping (docs/export.md has the long form):
//!
//! - every connection (socket cookie) is a "process" named by its 5-tuple, with
//!   one "thread" track per layer (app, tcp, ip, qdisc, dev, drop, socket) in
//!   stack order; each event is an instant on its layer's track, carrying all
//!   its fields as args;
//! - events with no socket (cookie 0) go to one "no socket" process, per layer;
//! - TCP snapshots (`--tcp-state`) become counters of the connection: cwnd,
//!   ssthresh, srtt, windows, packets in flight, retransmits, unacknowledged bytes;
//! - each CPU is a "process" with one track of complete slices: a slice per
//!   `sched_switch` to a task other than idle, from that switch to the next one
//!   on the CPU (the last one ends at the trace's last event); wake-ups, forks
//!   and exits are instants on the CPU's track;
//! - LOST records are global instant markers.
//!
//! Timestamps are microseconds since the recording started, with ns precision.
//! Process and thread ids are synthetic and unique (Perfetto keys threads by
//! tid): CPU c is process c+1; "no socket" is process 70000; connection n (in
//! order of first sighting) is 70000+n; a track's tid is its pid × 16 + layer.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use magnet_trace::{kind, Catalog, ClockMap, Event, KindIndex, RecordRef, Value};
use serde_json::{json, Map, Value as Json};

/// Track numbers of the layers inside a connection, in stack order.
const LAYER_TRACKS: &[(&str, u32, &str)] = &[
    ("app", 1, "app (send/recv calls)"),
    ("tcp", 2, "tcp"),
    ("ip", 3, "ip (netfilter)"),
    ("qdisc", 4, "qdisc"),
    ("dev", 5, "dev"),
    ("drop", 6, "drop"),
    ("meta", 7, "socket"),
];
const OTHER_TRACK: u32 = 8;
const NO_SOCKET_PID: u32 = 70_000;

/// The TCP snapshot fields shown as counters.
const COUNTERS: &[&str] = &[
    "snd_cwnd",
    "snd_ssthresh",
    "srtt_us",
    "snd_wnd",
    "rcv_wnd",
    "packets_out",
    "retrans_out",
    "wmem_queued",
];

/// What the Perfetto export wrote, for tests and the CLI's summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfettoStats {
    /// Instant events on connection and "no socket" layer tracks.
    pub packet_instants: u64,
    /// Complete slices on CPU tracks (one per sched_switch to a non-idle task).
    pub cpu_slices: u64,
    /// Instants on CPU tracks (wake-up, fork, exit).
    pub cpu_instants: u64,
    /// Counter events (one per record carrying a TCP snapshot).
    pub counter_events: u64,
    /// Global LOST markers.
    pub lost_markers: u64,
    /// Connections (socket cookies) given a process.
    pub connections: u64,
}

struct Conn {
    pid: u32,
    cookie: u64,
    tuple: Option<String>,
    /// Whether `tuple` has both ports.
    whole_tuple: bool,
    tracks: u16,
}

struct Running {
    start: u64,
    name: String,
    args: Json,
}

pub struct Perfetto<'c, W: Write> {
    out: W,
    index: KindIndex<'c>,
    start_ns: u64,
    events: u64,
    conns: HashMap<u64, Conn>,
    no_socket_tracks: u16,
    running: BTreeMap<u16, Running>,
    /// CPUs that have a track (a sched event or a LOST marker on them).
    cpus: BTreeSet<u16>,
    last_ts: u64,
    stats: PerfettoStats,
}

impl<'c, W: Write> Perfetto<'c, W> {
    pub fn new(mut out: W, catalog: &'c Catalog, clock: ClockMap) -> std::io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        Ok(Perfetto {
            out,
            index: KindIndex::new(catalog),
            start_ns: clock.monotonic_ns,
            events: 0,
            conns: HashMap::new(),
            no_socket_tracks: 0,
            running: BTreeMap::new(),
            cpus: BTreeSet::new(),
            last_ts: 0,
            stats: PerfettoStats::default(),
        })
    }

    /// Microseconds since the start, exact to the nanosecond, as a JSON number.
    fn ts(&self, ts_ns: u64) -> Json {
        let rel = ts_ns as i128 - self.start_ns as i128;
        let text = format!(
            "{}{}.{:03}",
            if rel < 0 { "-" } else { "" },
            rel.unsigned_abs() / 1000,
            rel.unsigned_abs() % 1000
        );
        // A decimal with three places always parses as a JSON number.
        serde_json::from_str(&text).unwrap_or(Json::Null)
    }

    fn emit(&mut self, ev: Json) -> std::io::Result<()> {
        if self.events > 0 {
            self.out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.out, &ev)?;
        self.events += 1;
        Ok(())
    }

    fn conn_pid(&mut self, cookie: u64) -> u32 {
        let next = NO_SOCKET_PID + 1 + self.conns.len() as u32;
        self.conns
            .entry(cookie)
            .or_insert_with(|| Conn {
                pid: next,
                cookie,
                tuple: None,
                whole_tuple: false,
                tracks: 0,
            })
            .pid
    }

    pub fn record(&mut self, rec: &RecordRef<'_>) -> std::io::Result<()> {
        let ts = rec.ts_ns();
        self.last_ts = self.last_ts.max(ts);
        let Some(desc) = self.index.get(rec.kind()) else {
            // A kind this catalog lacks: kept as an instant without a socket.
            let name = format!("kind {}", rec.kind());
            return self.layer_instant(None, OTHER_TRACK, ts, name, Map::new());
        };
        let ev = Event {
            bytes: rec.bytes,
            desc,
        };
        let mut args = Map::new();
        for (name, v) in ev.fields() {
            args.insert(name.to_string(), json_value(&v));
        }
        match rec.kind() {
            kind::LOST => {
                let count = ev.u64("count").unwrap_or(0);
                let cpu = ev
                    .u64("lost_cpu")
                    .map_or(rec.cpu(), |c| c.min(u16::MAX as u64) as u16);
                self.cpus.insert(cpu);
                let pid = cpu as u32 + 1;
                let e = json!({
                    "name": format!("LOST {count} events"), "ph": "i", "s": "g",
                    "ts": self.ts(ts), "pid": pid, "tid": pid * 16, "args": args,
                });
                self.stats.lost_markers += 1;
                return self.emit(e);
            }
            kind::SCHED_SWITCH => return self.switch(rec, &ev, args),
            _ => {}
        }
        if desc.layer == "sched" {
            let cpu = rec.cpu();
            self.cpus.insert(cpu);
            let pid = cpu as u32 + 1;
            let e = json!({
                "name": desc.name, "ph": "i", "s": "t", "ts": self.ts(ts),
                "pid": pid, "tid": pid * 16, "args": args,
            });
            self.stats.cpu_instants += 1;
            return self.emit(e);
        }
        let track = LAYER_TRACKS
            .iter()
            .find(|(l, _, _)| *l == desc.layer)
            .map_or(OTHER_TRACK, |t| t.1);
        let cookie = ev.u64("cookie").filter(|&c| c != 0);
        if rec.kind() == kind::SOCK || rec.kind() == kind::TCP_STATE {
            if let Some(c) = cookie {
                self.conn_pid(c);
                // The SOCK record may come before the socket is bound or
                // connected (port 0); a later state change has the whole tuple.
                let whole = ev.u64("sport").is_some_and(|p| p != 0)
                    && ev.u64("dport").is_some_and(|p| p != 0);
                if let Some(conn) = self.conns.get_mut(&c) {
                    if conn.tuple.is_none() || (whole && !conn.whole_tuple) {
                        conn.tuple = Some(tuple_name(&ev));
                        conn.whole_tuple = whole;
                    }
                }
            }
        }
        if let (Some(c), Some(_)) = (cookie, ev.get("snd_cwnd")) {
            let pid = self.conn_pid(c);
            let mut vals = Map::new();
            for name in COUNTERS {
                if let Some(v) = ev.u64(name) {
                    vals.insert(name.to_string(), v.into());
                }
            }
            if let (Some(w), Some(u)) = (ev.u64("write_seq"), ev.u64("snd_una")) {
                vals.insert(
                    "unacked_bytes".into(),
                    ((w as u32).wrapping_sub(u as u32) as u64).into(),
                );
            }
            let e = json!({"name": "tcp", "ph": "C", "ts": self.ts(ts), "pid": pid, "tid": pid * 16 + 2, "args": vals});
            self.stats.counter_events += 1;
            self.emit(e)?;
        }
        self.layer_instant(cookie, track, ts, desc.name.clone(), args)
    }

    fn layer_instant(
        &mut self,
        cookie: Option<u64>,
        track: u32,
        ts: u64,
        name: String,
        args: Map<String, Json>,
    ) -> std::io::Result<()> {
        let pid = match cookie {
            Some(c) => {
                let pid = self.conn_pid(c);
                if let Some(conn) = self.conns.get_mut(&c) {
                    conn.tracks |= 1 << track;
                }
                pid
            }
            None => {
                self.no_socket_tracks |= 1 << track;
                NO_SOCKET_PID
            }
        };
        let e = json!({
            "name": name, "ph": "i", "s": "t", "ts": self.ts(ts),
            "pid": pid, "tid": pid * 16 + track, "args": args,
        });
        self.stats.packet_instants += 1;
        self.emit(e)
    }

    fn switch(
        &mut self,
        rec: &RecordRef<'_>,
        ev: &Event<'_>,
        args: Map<String, Json>,
    ) -> std::io::Result<()> {
        let ts = rec.ts_ns();
        let cpu = rec.cpu();
        self.cpus.insert(cpu);
        if let Some(r) = self.running.remove(&cpu) {
            self.end_slice(cpu, r, ts)?;
        }
        let next_tid = ev.u64("next_tid").unwrap_or(0);
        if next_tid != 0 {
            let comm = match ev.get("next_comm") {
                // A name people read in the UI: escaped as on a terminal.
                Some(Value::Str(s)) if !s.is_empty() => {
                    format!("{} {next_tid}", magnet_common::text::escape(&s))
                }
                _ => format!("tid {next_tid}"),
            };
            self.running.insert(
                cpu,
                Running {
                    start: ts,
                    name: comm,
                    args: Json::Object(args),
                },
            );
        }
        Ok(())
    }

    fn end_slice(&mut self, cpu: u16, r: Running, end: u64) -> std::io::Result<()> {
        let pid = cpu as u32 + 1;
        let dur_ns = end.saturating_sub(r.start);
        let dur: Json = serde_json::from_str(&format!("{}.{:03}", dur_ns / 1000, dur_ns % 1000))
            .unwrap_or(Json::Null);
        let e = json!({
            "name": r.name, "ph": "X", "ts": self.ts(r.start), "dur": dur,
            "pid": pid, "tid": pid * 16, "args": r.args,
        });
        self.stats.cpu_slices += 1;
        self.emit(e)
    }

    /// Closes the slices still running, writes the track names, and ends the JSON.
    pub fn finish(mut self, metadata: Json) -> std::io::Result<(W, PerfettoStats)> {
        let last = self.last_ts;
        for (cpu, r) in std::mem::take(&mut self.running) {
            self.end_slice(cpu, r, last)?;
        }
        for cpu in self.cpus.clone() {
            let pid = cpu as u32 + 1;
            self.meta(
                "process_name",
                pid,
                None,
                json!({"name": format!("CPU {cpu}")}),
            )?;
            self.meta("process_sort_index", pid, None, json!({"sort_index": pid}))?;
            self.meta(
                "thread_name",
                pid,
                Some(pid * 16),
                json!({"name": "running task"}),
            )?;
        }
        if self.no_socket_tracks != 0 {
            self.meta(
                "process_name",
                NO_SOCKET_PID,
                None,
                json!({"name": "no socket"}),
            )?;
            self.meta(
                "process_sort_index",
                NO_SOCKET_PID,
                None,
                json!({"sort_index": NO_SOCKET_PID}),
            )?;
            self.track_names(NO_SOCKET_PID, self.no_socket_tracks)?;
        }
        let mut conns: Vec<(u32, u64, Option<String>, u16)> = self
            .conns
            .values()
            .map(|c| (c.pid, c.cookie, c.tuple.clone(), c.tracks))
            .collect();
        conns.sort_unstable_by_key(|c| c.0);
        self.stats.connections = conns.len() as u64;
        for (pid, cookie, tuple, tracks) in conns {
            let name = match tuple {
                Some(t) => format!("{t} (cookie {cookie})"),
                None => format!("cookie {cookie}"),
            };
            self.meta("process_name", pid, None, json!({"name": name}))?;
            self.meta(
                "process_labels",
                pid,
                None,
                json!({"labels": format!("cookie={cookie}")}),
            )?;
            self.meta("process_sort_index", pid, None, json!({"sort_index": pid}))?;
            self.track_names(pid, tracks)?;
        }
        self.out.write_all(b"\n],\"metadata\":")?;
        serde_json::to_writer(&mut self.out, &metadata)?;
        self.out.write_all(b"}\n")?;
        self.out.flush()?;
        Ok((self.out, self.stats))
    }

    fn track_names(&mut self, pid: u32, tracks: u16) -> std::io::Result<()> {
        for t in 1..=OTHER_TRACK {
            if tracks & (1 << t) == 0 {
                continue;
            }
            let name = LAYER_TRACKS
                .iter()
                .find(|l| l.1 == t)
                .map_or("other", |l| l.2);
            self.meta(
                "thread_name",
                pid,
                Some(pid * 16 + t),
                json!({"name": name}),
            )?;
            self.meta(
                "thread_sort_index",
                pid,
                Some(pid * 16 + t),
                json!({"sort_index": t}),
            )?;
        }
        Ok(())
    }

    fn meta(&mut self, what: &str, pid: u32, tid: Option<u32>, args: Json) -> std::io::Result<()> {
        let e = json!({"name": what, "ph": "M", "pid": pid, "tid": tid.unwrap_or(pid * 16), "args": args});
        self.emit(e)
    }
}

/// `tcp 10.0.0.1:5000 -> 10.0.0.2:80` from a SOCK record.
fn tuple_name(ev: &Event<'_>) -> String {
    let proto = match ev.u64("protocol") {
        Some(6) => "tcp".to_string(),
        Some(17) => "udp".to_string(),
        Some(p) => format!("proto {p}"),
        None => "?".to_string(),
    };
    let a = |f: &str| ev.get(f).map_or("?".to_string(), |v| v.to_string());
    let p = |f: &str| ev.u64(f).map_or("?".to_string(), |v| v.to_string());
    let host = |addr: String, port: String| {
        if addr.contains(':') {
            format!("[{addr}]:{port}")
        } else {
            format!("{addr}:{port}")
        }
    };
    format!(
        "{proto} {} -> {}",
        host(a("saddr"), p("sport")),
        host(a("daddr"), p("dport"))
    )
}

/// A field value as JSON the way `parse --json` writes it.
fn json_value(v: &Value) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}
